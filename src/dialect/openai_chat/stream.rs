//! Chat completions streams: a `chat.completion.chunk` sequence assembled into the
//! equivalent non-streamed `chat.completion` object, and one synthesized from it.
//!
//! This is what lets replay serve a stream to a client whose recording was not one, and the
//! assembled message to a client that did not ask for a stream (see PRODUCT.md, Streaming).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::dialect::AssembleError;
use crate::sse::SseEvent;

/// The data of the event that ends a chat completions stream; it is not JSON.
const DONE: &str = "[DONE]";

/// Top-level fields every chunk repeats, copied once into the assembled object.
const REQUIRED_HEAD: [&str; 3] = ["id", "created", "model"];
/// Top-level fields that are copied when the upstream sends them.
const OPTIONAL_HEAD: [&str; 2] = ["system_fingerprint", "service_tier"];

/// Assemble the streamed chunks (the `data` of each event; `[DONE]` is skipped) into the
/// equivalent non-streamed `chat.completion` object: `id`, `object`, `created`, `model`,
/// `system_fingerprint` and `service_tier` (when sent), `choices` ordered by index, and
/// `usage` (when a chunk carried it, normally the last one with empty `choices`).
///
/// Each choice is `{index, message: {role, content, refusal?, tool_calls?}, logprobs: null,
/// finish_reason}`. `content` is `null` when no text arrived; tool calls are grouped by their
/// `index` and their argument fragments concatenated in order.
pub fn assemble(events: &[SseEvent]) -> Result<Value, AssembleError> {
    let mut head: BTreeMap<&'static str, Value> = BTreeMap::new();
    let mut choices: BTreeMap<u64, ChoiceParts> = BTreeMap::new();
    let mut usage = None;
    let mut chunks = 0usize;
    for (index, event) in events.iter().enumerate() {
        if event.data.trim() == DONE {
            continue;
        }
        let chunk: Value = serde_json::from_str(&event.data)
            .map_err(|source| AssembleError::NotJson { index, source })?;
        let Value::Object(mut chunk) = chunk else {
            return Err(AssembleError::Shape {
                index,
                problem: "expected a JSON object",
            });
        };
        // OpenAI reports a failure mid-stream as a chunk of the shape of an error response.
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(AssembleError::Upstream { index, message });
        }
        chunks += 1;
        for field in REQUIRED_HEAD.into_iter().chain(OPTIONAL_HEAD) {
            if !head.contains_key(field) {
                if let Some(value) = chunk.remove(field).filter(|v| !v.is_null()) {
                    head.insert(field, value);
                }
            }
        }
        // With `include_usage`, every chunk but the last carries `"usage": null`.
        if let Some(value) = chunk.remove("usage").filter(|v| !v.is_null()) {
            usage = Some(value);
        }
        match chunk.get("choices") {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) => {
                for choice in list {
                    absorb_choice(&mut choices, choice)
                        .map_err(|problem| AssembleError::Shape { index, problem })?;
                }
            }
            Some(_) => {
                return Err(AssembleError::Shape {
                    index,
                    problem: "`choices` is not an array",
                })
            }
        }
    }
    if chunks == 0 {
        return Err(AssembleError::Empty { what: "chunks" });
    }

    let mut completion = Map::new();
    for field in REQUIRED_HEAD {
        let value = head
            .remove(field)
            .ok_or(AssembleError::MissingField { field })?;
        completion.insert(field.to_owned(), value);
    }
    for (field, value) in head {
        completion.insert(field.to_owned(), value);
    }
    completion.insert("object".to_owned(), json!("chat.completion"));
    let choices = choices
        .into_iter()
        .map(|(index, parts)| parts.into_choice(index))
        .collect();
    completion.insert("choices".to_owned(), Value::Array(choices));
    if let Some(usage) = usage {
        completion.insert("usage".to_owned(), usage);
    }
    Ok(Value::Object(completion))
}

/// What the deltas of one choice have added up to so far.
#[derive(Default)]
struct ChoiceParts {
    role: Option<String>,
    content: String,
    refusal: String,
    tool_calls: BTreeMap<u64, ToolCallParts>,
    finish_reason: Option<Value>,
}

#[derive(Default)]
struct ToolCallParts {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
}

/// Adds one streamed choice to its accumulator; the error says what was malformed.
fn absorb_choice(
    choices: &mut BTreeMap<u64, ChoiceParts>,
    choice: &Value,
) -> Result<(), &'static str> {
    let index = choice
        .get("index")
        .and_then(Value::as_u64)
        .ok_or("a choice has no integer `index`")?;
    let parts = choices.entry(index).or_default();
    if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
        parts.finish_reason = Some(reason.clone());
    }
    let Some(delta) = choice.get("delta") else {
        return Ok(());
    };
    if let Some(role) = delta.get("role").and_then(Value::as_str) {
        parts.role = Some(role.to_owned());
    }
    if let Some(text) = delta.get("content").and_then(Value::as_str) {
        parts.content.push_str(text);
    }
    if let Some(text) = delta.get("refusal").and_then(Value::as_str) {
        parts.refusal.push_str(text);
    }
    let calls = match delta.get("tool_calls") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(calls)) => calls,
        Some(_) => return Err("`tool_calls` is not an array"),
    };
    for call in calls {
        // Parallel calls are told apart only by this index; ids and names come once.
        let index = call
            .get("index")
            .and_then(Value::as_u64)
            .ok_or("a tool call has no integer `index`")?;
        let parts = parts.tool_calls.entry(index).or_default();
        // The first id and name win: OpenAI sends them once, but some compatible servers
        // repeat them on every fragment, and only `arguments` is ever split.
        if parts.id.is_none() {
            parts.id = non_empty_str(call.get("id"));
        }
        let function = call.get("function");
        if parts.name.is_none() {
            parts.name = non_empty_str(function.and_then(|f| f.get("name")));
        }
        if let Some(fragment) = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
        {
            parts.arguments.push_str(fragment);
        }
    }
    Ok(())
}

fn non_empty_str(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

impl ChoiceParts {
    fn into_choice(self, index: u64) -> Value {
        let mut message = Map::new();
        message.insert(
            "role".to_owned(),
            json!(self.role.as_deref().unwrap_or("assistant")),
        );
        // Streams open with `"content": ""` even when the model only calls tools, where the
        // non-streamed form says `null`; so no text at all means `null`.
        let content = if self.content.is_empty() {
            Value::Null
        } else {
            Value::String(self.content)
        };
        message.insert("content".to_owned(), content);
        if !self.refusal.is_empty() {
            message.insert("refusal".to_owned(), Value::String(self.refusal));
        }
        if !self.tool_calls.is_empty() {
            let calls = self
                .tool_calls
                .into_values()
                .map(|call| {
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    })
                })
                .collect();
            message.insert("tool_calls".to_owned(), Value::Array(calls));
        }
        json!({
            "index": index,
            "message": message,
            "logprobs": null,
            "finish_reason": self.finish_reason,
        })
    }
}

/// The reverse of [`assemble`]: a stream synthesized from a `chat.completion` object, shaped
/// like what OpenAI sends. Per choice: a chunk with `{role, content: ""}`, the content in one
/// chunk, the refusal in one chunk, one chunk per tool call with its id, name and full
/// arguments, and a chunk with the `finish_reason` and an empty delta. Then, if
/// `include_usage`, a chunk with `choices: []` and the usage; then the `[DONE]` event.
///
/// Every chunk has `object: "chat.completion.chunk"` and the completion's `id`, `created`,
/// `model`, and `system_fingerprint` / `service_tier` when it has them. Missing parts of a
/// malformed completion become `null` or are left out; this never fails.
pub fn synthesize(completion: &Value, include_usage: bool) -> Vec<SseEvent> {
    let mut head = Map::new();
    for field in REQUIRED_HEAD {
        let value = completion.get(field).cloned().unwrap_or(Value::Null);
        head.insert(field.to_owned(), value);
    }
    for field in OPTIONAL_HEAD {
        if let Some(value) = completion.get(field) {
            head.insert(field.to_owned(), value.clone());
        }
    }
    head.insert("object".to_owned(), json!("chat.completion.chunk"));
    if include_usage {
        // OpenAI puts `"usage": null` on every chunk but the last when usage was asked for.
        head.insert("usage".to_owned(), Value::Null);
    }

    let mut events = Vec::new();
    let choices = completion.get("choices").and_then(Value::as_array);
    for (position, choice) in choices.into_iter().flatten().enumerate() {
        let index = choice
            .get("index")
            .cloned()
            .unwrap_or_else(|| json!(position));
        let delta_chunk = |delta: Value, finish_reason: Value| {
            let choice = json!({
                "index": index,
                "delta": delta,
                "logprobs": null,
                "finish_reason": finish_reason,
            });
            chunk_event(&head, json!([choice]))
        };
        let message = choice.get("message").unwrap_or(&Value::Null);
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("assistant");
        events.push(delta_chunk(
            json!({"role": role, "content": ""}),
            Value::Null,
        ));
        if let Some(text) = non_empty_str(message.get("content")) {
            events.push(delta_chunk(json!({"content": text}), Value::Null));
        }
        if let Some(text) = non_empty_str(message.get("refusal")) {
            events.push(delta_chunk(json!({"refusal": text}), Value::Null));
        }
        let calls = message.get("tool_calls").and_then(Value::as_array);
        for (call_index, call) in calls.into_iter().flatten().enumerate() {
            let function = call.get("function");
            let delta = json!({"tool_calls": [{
                "index": call_index,
                "id": call.get("id"),
                "type": "function",
                "function": {
                    "name": function.and_then(|f| f.get("name")),
                    "arguments": function.and_then(|f| f.get("arguments")),
                },
            }]});
            events.push(delta_chunk(delta, Value::Null));
        }
        let finish_reason = choice.get("finish_reason").cloned().unwrap_or(Value::Null);
        events.push(delta_chunk(json!({}), finish_reason));
    }
    if include_usage {
        let mut last = head;
        let usage = completion.get("usage").cloned().unwrap_or(Value::Null);
        last.insert("usage".to_owned(), usage);
        events.push(chunk_event(&last, json!([])));
    }
    events.push(SseEvent {
        event: None,
        id: None,
        data: DONE.to_owned(),
    });
    events
}

fn chunk_event(head: &Map<String, Value>, choices: Value) -> SseEvent {
    let mut chunk = head.clone();
    chunk.insert("choices".to_owned(), choices);
    SseEvent {
        event: None,
        id: None,
        data: Value::Object(chunk).to_string(),
    }
}
