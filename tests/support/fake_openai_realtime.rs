//! The fake OpenAI upstream's Realtime API (`GET /v1/realtime?model=…` upgraded), the GA
//! event shapes: `session.created` first; `session.update` → `session.updated`;
//! `conversation.item.create` → `conversation.item.added` and `.done` (an id given where
//! the client gave none); `response.create` → the answer of the Responses fake's model
//! over the conversation so far (its tools are the session's), as `response.created`,
//! each output item's events (a function call's argument deltas; a message's text deltas,
//! or with audio output, audio deltas of random bytes and their transcript), then
//! `response.done` with the output and usage. Every event has a fresh `event_id`, every
//! item and response a fresh id, as the real API's.

use serde_json::{json, Map, Value};

use super::model::{base64_encode, fragments, random_token, Answer};
use super::responses::{self, Store};

/// One socket's state: the session and the conversation so far.
pub(super) struct Realtime {
    session: Map<String, Value>,
    conversation: Vec<Value>,
}

fn event(kind: &str, fields: Value) -> String {
    let mut e = json!({"type": kind, "event_id": format!("event_{}", random_token(20))});
    if let (Some(e), Value::Object(fields)) = (e.as_object_mut(), fields) {
        e.extend(fields);
    }
    e.to_string()
}

impl Realtime {
    /// A new socket for `model`, and the event the server opens it with.
    pub(super) fn open(model: &str) -> (Realtime, String) {
        let session = json!({"type": "realtime", "object": "realtime.session",
            "id": format!("sess_{}", random_token(16)), "model": model,
            "output_modalities": ["audio"], "instructions": "", "tools": [], "tool_choice": "auto"});
        let Value::Object(session) = session else {
            unreachable!()
        };
        let created = event("session.created", json!({"session": session}));
        let rt = Realtime {
            session,
            conversation: Vec::new(),
        };
        (rt, created)
    }

    /// The events that answer the client event `frame`.
    pub(super) fn answer(&mut self, store: &Store, frame: &Value) -> Vec<String> {
        match frame["type"].as_str() {
            Some("session.update") => {
                if let Value::Object(update) = &frame["session"] {
                    self.session.extend(update.clone());
                }
                vec![event("session.updated", json!({"session": self.session}))]
            }
            Some("conversation.item.create") => {
                let mut item = frame["item"].clone();
                if item.get("id").is_none() {
                    item["id"] = json!(format!("item_{}", random_token(20)));
                }
                item["status"] = json!("completed");
                let previous = self.conversation.last().map(|i| i["id"].clone());
                self.conversation.push(item.clone());
                let fields = json!({"previous_item_id": previous, "item": item});
                vec![
                    event("conversation.item.added", fields.clone()),
                    event("conversation.item.done", fields),
                ]
            }
            Some("response.create") => self.respond(store),
            other => vec![event(
                "error",
                json!({"error": {"type": "invalid_request_error",
                "code": "invalid_value", "message": format!("Invalid event type: {other:?}")}}),
            )],
        }
    }

    /// A response over the conversation so far.
    fn respond(&mut self, store: &Store) -> Vec<String> {
        let request = json!({"model": self.session["model"], "instructions": self.session["instructions"],
            "input": self.conversation, "tools": self.session["tools"], "store": false});
        let answer = responses::create(store, &request);
        let Answer::Json { body, status, .. } = answer else {
            return vec![event(
                "error",
                json!({"error": {"type": "server_error", "message": "no answer"}}),
            )];
        };
        if !status.is_success() {
            return vec![event("error", json!({"error": body["error"]}))];
        }
        let audio = self.session["output_modalities"]
            .as_array()
            .is_some_and(|m| m.iter().any(|x| x == "audio"));
        let id = format!("resp_{}", random_token(20));
        let mut out = vec![event(
            "response.created",
            json!({"response": {"id": id, "object": "realtime.response", "status": "in_progress", "output": []}}),
        )];
        let mut output = Vec::new();
        for (index, item) in body["output"].as_array().into_iter().flatten().enumerate() {
            let item = self.item_events(&id, index, item, audio, &mut out);
            self.conversation.push(item.clone());
            output.push(item);
        }
        let usage = json!({"total_tokens": 30, "input_tokens": 20, "output_tokens": 10,
            "input_token_details": {"cached_tokens": 0}});
        out.push(event(
            "response.done",
            json!({"response": {"id": id, "object": "realtime.response",
            "status": "completed", "output": output, "usage": usage}}),
        ));
        out
    }

    /// The events of one output item; the item as the conversation keeps it.
    fn item_events(
        &self,
        response: &str,
        index: usize,
        item: &Value,
        audio: bool,
        out: &mut Vec<String>,
    ) -> Value {
        let id = format!("item_{}", random_token(20));
        let at = json!({"response_id": response, "item_id": id, "output_index": index});
        let with = |fields: Value| {
            let mut v = at.clone();
            if let (Some(v), Value::Object(f)) = (v.as_object_mut(), fields) {
                v.extend(f);
            }
            v
        };
        let done = if item["type"] == "function_call" {
            let call_id = format!("call_{}", random_token(16));
            let arguments = item["arguments"].as_str().unwrap_or_default();
            let done = json!({"id": id, "type": "function_call", "status": "completed",
                "name": item["name"], "call_id": call_id, "arguments": arguments});
            let mut added = done.clone();
            added["status"] = json!("in_progress");
            added["arguments"] = json!("");
            out.push(event(
                "response.output_item.added",
                json!({"response_id": response, "output_index": index, "item": added}),
            ));
            for piece in fragments(arguments) {
                out.push(event(
                    "response.function_call_arguments.delta",
                    with(json!({"call_id": call_id, "delta": piece})),
                ));
            }
            out.push(event(
                "response.function_call_arguments.done",
                with(json!({"call_id": call_id, "name": item["name"], "arguments": arguments})),
            ));
            done
        } else {
            let text = item["content"][0]["text"].as_str().unwrap_or_default();
            let part = match audio {
                true => json!({"type": "output_audio", "transcript": text}),
                false => json!({"type": "output_text", "text": text}),
            };
            let done = json!({"id": id, "type": "message", "role": "assistant", "status": "completed", "content": [part]});
            let mut added = done.clone();
            added["status"] = json!("in_progress");
            added["content"] = json!([]);
            out.push(event(
                "response.output_item.added",
                json!({"response_id": response, "output_index": index, "item": added}),
            ));
            out.push(event(
                "response.content_part.added",
                with(json!({"content_index": 0, "part": part})),
            ));
            for piece in fragments(text) {
                if audio {
                    let b64 = base64_encode(random_token(12).as_bytes());
                    out.push(event(
                        "response.output_audio.delta",
                        with(json!({"content_index": 0, "delta": b64})),
                    ));
                    out.push(event(
                        "response.output_audio_transcript.delta",
                        with(json!({"content_index": 0, "delta": piece})),
                    ));
                } else {
                    out.push(event(
                        "response.output_text.delta",
                        with(json!({"content_index": 0, "delta": piece})),
                    ));
                }
            }
            if audio {
                out.push(event(
                    "response.output_audio.done",
                    with(json!({"content_index": 0})),
                ));
                out.push(event(
                    "response.output_audio_transcript.done",
                    with(json!({"content_index": 0, "transcript": text})),
                ));
            } else {
                out.push(event(
                    "response.output_text.done",
                    with(json!({"content_index": 0, "text": text})),
                ));
            }
            out.push(event(
                "response.content_part.done",
                with(json!({"content_index": 0, "part": part})),
            ));
            done
        };
        out.push(event(
            "response.output_item.done",
            json!({"response_id": response, "output_index": index, "item": done}),
        ));
        let previous = self.conversation.last().map(|i| i["id"].clone());
        out.push(event(
            "conversation.item.done",
            json!({"previous_item_id": previous, "item": done}),
        ));
        done
    }
}
