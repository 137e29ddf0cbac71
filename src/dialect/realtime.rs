//! OpenAI's Realtime API over a WebSocket (`GET …/realtime?model=…`), as far as a
//! recording reads it. No I/O.
//!
//! The client sends JSON events in text frames (`session.update`,
//! `conversation.item.create`, `input_audio_buffer.append`, `response.create`, …), each
//! with an `event_id` of its own; the server speaks first (`session.created`) and answers
//! with events, a model turn ending with `response.done`, whose `response` carries the
//! turn's output items and usage. Audio travels base64 in `…audio.delta` events.

use serde_json::{json, Value};

use crate::neutral::{parse_arguments, ModelCall, ToolCall, ToolDef, ToolResult, Usage};

/// The route a Realtime socket's turns are stored under.
pub const ROUTE: &str = "openai.realtime";

/// Is `path` (without its query) a Realtime socket's?
pub fn is_path(path: &str) -> bool {
    path.ends_with("/realtime")
}

/// Does the server event `frame` end a model turn?
pub fn ends_turn(frame: &Value) -> bool {
    frame["type"] == "response.done"
}

/// Does the client event `frame` ask the model for an answer (a model request, which a
/// fault can fail)?
pub fn asks(frame: &Value) -> bool {
    frame["type"] == "response.create"
}

/// The `error` event a fault sends: the Responses API's error object (`type`, `code`,
/// `message`, `param`) under `error`.
pub fn error_event(error: &Value) -> Value {
    json!({"type": "error", "event_id": "event_agentproxy_fault", "error": error})
}

/// A client event as a turn keeps it: without its `event_id`, which is fresh each run.
pub fn normalize_client(frame: &mut Value) {
    if let Some(fields) = frame.as_object_mut() {
        fields.remove("event_id");
    }
}

/// Rewrite the tool result a client event carries (a `conversation.item.create` of a
/// `function_call_output`) where `mock` has one for its call (found through `lookup`: the
/// call is in an earlier turn's answer); how many were replaced.
pub fn rewrite_tool_results(
    frame: &mut Value,
    lookup: &dyn Fn(&str) -> Option<ToolCall>,
    mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
) -> usize {
    if frame["type"] != "conversation.item.create"
        || frame["item"]["type"] != "function_call_output"
    {
        return 0;
    }
    // The item is a Responses input item: its rewrite is theirs.
    let mut request = json!({"input": [frame["item"].take()]});
    let replaced = super::openai_responses::rewrite_tool_results(&mut request, lookup, mock);
    frame["item"] = request["input"][0].take();
    replaced
}

/// A turn's answer in one value: the `response` of its `response.done`, and the audio it
/// sent (decoded bytes of its `response.output_audio.delta` events).
pub fn assemble<'a>(server: impl Iterator<Item = &'a Value>) -> Value {
    let mut response = Value::Null;
    let mut audio = 0usize;
    for frame in server {
        match frame["type"].as_str() {
            Some("response.done") => response = frame["response"].clone(),
            Some("response.output_audio.delta" | "response.audio.delta") => {
                audio += super::shared::base64_len(frame["delta"].as_str().unwrap_or_default());
            }
            _ => {}
        }
    }
    json!({"response": response, "audio_bytes": audio})
}

/// The model call a turn is: its client events (`frames`) and its assembled answer.
pub fn extract(frames: &[Value], answer: &Value, path: &str) -> ModelCall {
    let mut call = ModelCall {
        route: ROUTE.to_owned(),
        model: super::shared::query_value(path, "model").unwrap_or_default(),
        ..ModelCall::default()
    };
    for frame in frames {
        match frame["type"].as_str() {
            Some("session.update") => session(&frame["session"], &mut call),
            Some("conversation.item.create") => {
                call.message_count += 1;
                let item = &frame["item"];
                if item["type"] == "function_call_output" {
                    call.tool_results.push(ToolResult {
                        call_id: item["call_id"].as_str().unwrap_or_default().to_owned(),
                        name: None,
                        content: item["output"].clone(),
                    });
                }
            }
            _ => {}
        }
    }
    let response = &answer["response"];
    let mut text = String::new();
    for item in response["output"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("function_call") => call.tool_calls.push(ToolCall {
                id: item["call_id"].as_str().unwrap_or_default().to_owned(),
                name: item["name"].as_str().unwrap_or_default().to_owned(),
                arguments: parse_arguments(item["arguments"].as_str().unwrap_or_default()),
            }),
            Some("message") => {
                for part in item["content"].as_array().into_iter().flatten() {
                    let said = part["text"].as_str().or(part["transcript"].as_str());
                    text.push_str(said.unwrap_or_default());
                }
            }
            _ => {}
        }
    }
    call.reply = super::shared::spoken_reply(text, answer["audio_bytes"].as_u64().unwrap_or(0));
    let usage = &response["usage"];
    call.usage = match usage.is_object() {
        true => Usage {
            prompt: usage["input_tokens"].as_u64().unwrap_or(0),
            completion: usage["output_tokens"].as_u64().unwrap_or(0),
            cache_read: usage["input_token_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0),
            ..Usage::default()
        },
        false => Usage::UNKNOWN,
    };
    call
}

/// What a `session.update` says: the instructions and the tools.
fn session(session: &Value, call: &mut ModelCall) {
    if let Some(instructions) = session["instructions"].as_str() {
        call.system = Some(instructions.to_owned());
    }
    if let Some(tools) = session["tools"].as_array() {
        call.tools = (tools.iter())
            .filter(|t| t["type"] == "function")
            .map(|t| {
                std::sync::Arc::new(ToolDef {
                    name: t["name"].as_str().unwrap_or_default().to_owned(),
                    parameters: t["parameters"].clone(),
                    definition: t.clone(),
                })
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_reads_its_session_items_and_answer() {
        let frames = [
            json!({"type": "session.update", "session": {"instructions": "Be brief.",
                   "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]}}),
            json!({"type": "conversation.item.create", "item": {"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": "Paris?"}]}}),
            json!({"type": "conversation.item.create", "item": {"type": "function_call_output",
                   "call_id": "c1", "output": "{\"temp_c\": 21}"}}),
            json!({"type": "response.create"}),
        ];
        let server = [
            json!({"type": "response.output_audio.delta", "delta": "AAECAw=="}),
            json!({"type": "response.done", "response": {"output": [
                {"type": "function_call", "call_id": "c2", "name": "get_time", "arguments": "{\"city\":\"Paris\"}"},
                {"type": "message", "content": [{"type": "output_audio", "transcript": "It is warm."}]}],
                "usage": {"input_tokens": 10, "output_tokens": 4, "input_token_details": {"cached_tokens": 2}}}}),
        ];
        let answer = assemble(server.iter());
        assert_eq!(answer["audio_bytes"], 4);
        let call = extract(&frames, &answer, "/v1/realtime?model=gpt-realtime");
        assert_eq!(call.model, "gpt-realtime");
        assert_eq!(call.system.as_deref(), Some("Be brief."));
        assert_eq!(call.tools[0].name, "get_weather");
        assert_eq!(call.message_count, 2);
        assert_eq!(call.tool_results[0].call_id, "c1");
        assert_eq!(call.tool_calls[0].arguments, json!({"city": "Paris"}));
        assert_eq!(call.reply.as_deref(), Some("It is warm."));
        assert_eq!(
            (
                call.usage.prompt,
                call.usage.completion,
                call.usage.cache_read
            ),
            (10, 4, 2)
        );
    }

    #[test]
    fn a_function_call_output_is_mocked() {
        let call = ToolCall {
            id: "c1".into(),
            name: "get_weather".into(),
            arguments: json!({}),
        };
        let lookup = |id: &str| (id == "c1").then(|| call.clone());
        let mut mock =
            |c: &ToolCall, _: usize| (c.name == "get_weather").then(|| json!({"temp_c": 5}));
        let mut frame = json!({"type": "conversation.item.create", "event_id": "e",
            "item": {"type": "function_call_output", "call_id": "c1", "output": "real"}});
        assert_eq!(rewrite_tool_results(&mut frame, &lookup, &mut mock), 1);
        assert_eq!(frame["item"]["output"], "{\"temp_c\":5}");
        assert_eq!(frame["event_id"], "e");
        let mut other = json!({"type": "response.create"});
        assert_eq!(rewrite_tool_results(&mut other, &lookup, &mut mock), 0);
    }

    #[test]
    fn audio_without_a_transcript_is_shown_by_its_size() {
        let server = [
            json!({"type": "response.output_audio.delta", "delta": "AAAA"}),
            json!({"type": "response.done", "response": {"output": []}}),
        ];
        let call = extract(&[], &assemble(server.iter()), "/v1/realtime");
        assert_eq!(call.reply.as_deref(), Some("audio, 3 bytes"));
    }

    #[test]
    fn a_client_event_loses_its_id_and_a_turn_ends_with_response_done() {
        let mut frame = json!({"type": "response.create", "event_id": "evt_1"});
        normalize_client(&mut frame);
        assert_eq!(frame, json!({"type": "response.create"}));
        assert!(ends_turn(&json!({"type": "response.done"})));
        assert!(!ends_turn(&json!({"type": "response.output_text.done"})));
        assert!(is_path("/v1/realtime") && !is_path("/v1/responses"));
    }
}
