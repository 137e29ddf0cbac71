//! OpenAI chat completions wire shapes: converts a streamed `chat.completion.chunk` sequence
//! to the equivalent non-streamed `chat.completion` object and back, and reads the request
//! flags that choose between them.
//!
//! This is what lets replay serve a stream to a client whose recording was not one, and the
//! assembled message to a client that did not ask for a stream (see PRODUCT.md, Streaming).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::neutral::{
    parse_arguments, result_text, ModelCall, ToolCall, ToolDef, ToolResult, Usage,
};
use crate::sse::SseEvent;

/// The data of the event that ends a chat completions stream; it is not JSON.
const DONE: &str = "[DONE]";

/// Top-level fields every chunk repeats, copied once into the assembled object.
const REQUIRED_HEAD: [&str; 3] = ["id", "created", "model"];
/// Top-level fields that are copied when the upstream sends them.
const OPTIONAL_HEAD: [&str; 2] = ["system_fingerprint", "service_tier"];

/// Why a recorded stream could not be assembled into a `chat.completion` object.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    #[error("failed to parse stream event {index} as JSON")]
    NotJson {
        index: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("failed to read stream event {index}: {problem}")]
    Shape { index: usize, problem: &'static str },
    #[error("failed to assemble the stream: event {index} reports an upstream error: {message}")]
    Upstream { index: usize, message: String },
    #[error("failed to assemble the stream: it has no chunks")]
    Empty,
    #[error("failed to assemble the stream: no chunk carries `{field}`")]
    MissingField { field: &'static str },
}

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
        return Err(AssembleError::Empty);
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

/// Is this request body asking for a stream? (`"stream": true`)
pub fn wants_stream(body: &Value) -> bool {
    body.get("stream") == Some(&Value::Bool(true))
}

/// Does this request ask for a final usage chunk? (`stream_options.include_usage == true`)
pub fn wants_usage(body: &Value) -> bool {
    body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true))
}

/// The envelope of a chat request for near-miss reports: model, message count, roles and
/// tool names, each rendered as one short string.
pub fn envelope(body: &Value) -> Vec<(&'static str, String)> {
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("?"))
        .collect();
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap_or("?"))
        .collect();
    vec![
        ("model", body["model"].to_string()),
        ("message count", messages.len().to_string()),
        ("roles", format!("[{}]", roles.join(", "))),
        ("tools", format!("[{}]", tools.join(", "))),
    ]
}

/// Request fields that are not sampling parameters: the conversation itself and transport.
const NOT_PARAMS: [&str; 5] = ["model", "messages", "tools", "stream", "stream_options"];

/// The neutral model call of one chat exchange (`response` is the non-streamed or assembled
/// `chat.completion`; an error body gives a call with no reply and no tool calls).
pub fn extract(request: &Value, response: &Value) -> ModelCall {
    let messages = request["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let system: Vec<String> = messages
        .iter()
        .filter(|m| matches!(m["role"].as_str(), Some("system" | "developer")))
        .map(|m| content_text(&m["content"]))
        .collect();
    let tools = request["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|t| ToolDef {
            name: t["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            parameters: t["function"]["parameters"].clone(),
        })
        .collect();
    let after_last_assistant = messages
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .map_or(0, |i| i + 1);
    let tool_results = messages[after_last_assistant..]
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            let call_id = m["tool_call_id"].as_str().unwrap_or_default().to_owned();
            ToolResult {
                name: call_name(messages, &call_id),
                call_id,
                content: m["content"].clone(),
            }
        })
        .collect();
    let message = &response["choices"][0]["message"];
    let tool_calls = message["tool_calls"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(tool_call)
        .collect();
    let usage = &response["usage"];
    ModelCall {
        route: "openai.chat".into(),
        model: request["model"].as_str().unwrap_or_default().to_owned(),
        system: (!system.is_empty()).then(|| system.join("\n\n")),
        tools,
        message_count: messages.len(),
        tool_results,
        tool_calls,
        reply: message["content"].as_str().map(str::to_owned),
        usage: Usage {
            prompt: usage["prompt_tokens"].as_u64().unwrap_or(0),
            completion: usage["completion_tokens"].as_u64().unwrap_or(0),
            cached: usage["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0),
        },
        params: request
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(k, _)| !NOT_PARAMS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Replace the content of `role: tool` messages by mocks. `mock(call, nth)` gets the call a
/// result answers (looked up in the request's own history, else through `lookup`) and its
/// 0-based occurrence among calls to that tool in the conversation; `Some` replaces the
/// content. Returns how many results were replaced.
pub fn rewrite_tool_results(
    request: &mut Value,
    lookup: &dyn Fn(&str) -> Option<ToolCall>,
    mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
) -> usize {
    let Some(messages) = request.get_mut("messages").and_then(Value::as_array_mut) else {
        return 0;
    };
    let calls_by_id = calls_in_history(messages);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut replaced = 0;
    for m in messages.iter_mut().filter(|m| m["role"] == "tool") {
        let id = m["tool_call_id"].as_str().unwrap_or_default();
        let Some(call) = calls_by_id.get(id).cloned().or_else(|| lookup(id)) else {
            continue;
        };
        let nth = seen.entry(call.name.clone()).or_default();
        if let Some(v) = mock(&call, *nth) {
            m["content"] = Value::String(result_text(&v));
            replaced += 1;
        }
        *nth += 1;
    }
    replaced
}

/// The name of the history's tool call `id`, searched from the end: a result usually
/// answers the last assistant message, so a long history is not walked (nor its
/// arguments parsed) for every request.
fn call_name(messages: &[Value], id: &str) -> Option<String> {
    messages
        .iter()
        .rev()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| {
            m["tool_calls"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
        })
        .find(|c| c["id"] == id)
        .and_then(|c| c["function"]["name"].as_str())
        .map(str::to_owned)
}

fn calls_in_history(messages: &[Value]) -> BTreeMap<String, ToolCall> {
    messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| {
            m["tool_calls"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
        })
        .filter_map(|c| Some((c["id"].as_str()?.to_owned(), tool_call(c))))
        .collect()
}

fn tool_call(c: &Value) -> ToolCall {
    ToolCall {
        id: c["id"].as_str().unwrap_or_default().to_owned(),
        name: c["function"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        arguments: parse_arguments(c["function"]["arguments"].as_str().unwrap_or_default()),
    }
}

/// Message content as text: a string, or the text parts of a content array.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::{encode, SseParser};

    /// One `data:` event as OpenAI frames it: the fields every chunk repeats, then `rest`.
    fn wire_chunk(rest: &str) -> String {
        format!(
            concat!(
                r#"data: {{"id":"chatcmpl-BxQ9","object":"chat.completion.chunk","created":1751234567,"#,
                r#""model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","#,
                "{}}}\n\n"
            ),
            rest
        )
    }

    /// A tool-call delta for `choice 0` carrying only an argument fragment.
    fn wire_fragment(call: u64, arguments: &str) -> String {
        let delta = json!({"tool_calls": [{"index": call, "function": {"arguments": arguments}}]});
        // Recent OpenAI chunks carry an `obfuscation` padding field; it must be ignored.
        wire_chunk(&format!(
            r##""choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":null}}],"usage":null,"obfuscation":"x1""##
        ))
    }

    fn parse_all(wire: &[u8]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        // Byte by byte, so multi-byte characters are split between network reads too.
        let mut events: Vec<SseEvent> = wire.chunks(1).flat_map(|b| parser.push(b)).collect();
        events.extend(parser.finish());
        events
    }

    fn data_event(data: &str) -> SseEvent {
        SseEvent {
            event: None,
            id: None,
            data: data.to_owned(),
        }
    }

    #[test]
    fn assembles_two_parallel_tool_calls_split_at_awkward_points() {
        let mut wire = String::new();
        wire += &wire_chunk(
            r#""choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_paris","type":"function","function":{"name":"get_weather","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null"#,
        );
        // Mid-key, then between the two characters of "°C".
        for fragment in [
            r#"{"lo"#,
            r#"cation": "Par"#,
            r#"is", "unit": "°"#,
            r#"C"}"#,
        ] {
            wire += &wire_fragment(0, fragment);
        }
        wire += &wire_chunk(
            r#""choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_tokyo","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null"#,
        );
        // Between the characters of "Tōkyō", and in the middle of a JSON `\u00b0` escape.
        for fragment in [
            r#"{"location""#,
            r#": "Tō"#,
            r#"kyō", "un"#,
            r#"it": "\u00"#,
            r#"b0C"}"#,
        ] {
            wire += &wire_fragment(1, fragment);
        }
        wire += &wire_chunk(
            r#""choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null"#,
        );
        wire += &wire_chunk(
            r#""choices":[],"usage":{"prompt_tokens":82,"completion_tokens":48,"total_tokens":130,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}"#,
        );
        wire += "data: [DONE]\n\n";

        let events = parse_all(wire.as_bytes());
        assert_eq!(events.len(), 14);
        let assembled = assemble(&events).expect("stream assembles");
        assert_eq!(
            assembled,
            json!({
                "id": "chatcmpl-BxQ9",
                "object": "chat.completion",
                "created": 1751234567,
                "model": "gpt-4o-2024-08-06",
                "service_tier": "default",
                "system_fingerprint": "fp_07871e2ad8",
                "choices": [{
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": null,
                        "tool_calls": [
                            {
                                "id": "call_paris",
                                "type": "function",
                                "function": {
                                    "name": "get_weather",
                                    "arguments": r#"{"location": "Paris", "unit": "°C"}"#,
                                },
                            },
                            {
                                "id": "call_tokyo",
                                "type": "function",
                                "function": {
                                    "name": "get_weather",
                                    "arguments": r#"{"location": "Tōkyō", "unit": "\u00b0C"}"#,
                                },
                            },
                        ],
                    },
                    "logprobs": null,
                    "finish_reason": "tool_calls",
                }],
                "usage": {
                    "prompt_tokens": 82,
                    "completion_tokens": 48,
                    "total_tokens": 130,
                    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                    "completion_tokens_details": {
                        "reasoning_tokens": 0,
                        "audio_tokens": 0,
                        "accepted_prediction_tokens": 0,
                        "rejected_prediction_tokens": 0,
                    },
                },
            })
        );
    }

    #[test]
    fn assembles_a_content_only_stream() {
        let mut wire = wire_chunk(
            r#""choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]"#,
        );
        for piece in ["It", "'s 18", " °C", " and sunny."] {
            let delta = json!({"content": piece});
            wire += &wire_chunk(&format!(
                r#""choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":null}}]"#
            ));
        }
        wire += &wire_chunk(
            r#""choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]"#,
        );
        wire += "data: [DONE]\n\n";

        assert_eq!(
            assemble(&parse_all(wire.as_bytes())).expect("stream assembles"),
            json!({
                "id": "chatcmpl-BxQ9",
                "object": "chat.completion",
                "created": 1751234567,
                "model": "gpt-4o-2024-08-06",
                "service_tier": "default",
                "system_fingerprint": "fp_07871e2ad8",
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": "It's 18 °C and sunny."},
                    "logprobs": null,
                    "finish_reason": "stop",
                }],
            })
        );
    }

    #[test]
    fn groups_interleaved_choices_and_tool_calls_by_index() {
        // n=2 with choice 1 arriving first, tool-call fragments interleaved, and a compatible
        // server that repeats id and name on every fragment. No optional head fields.
        let chunk = |choice: Value| {
            data_event(
                &json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]})
                    .to_string(),
            )
        };
        let call = |index: u64, id: &str, args: &str| json!({"index": index, "id": id, "type": "function", "function": {"name": format!("f{index}"), "arguments": args}});
        let events = [
            chunk(json!({"index": 1, "delta": {"role": "assistant", "content": "B"}})),
            chunk(
                json!({"index": 0, "delta": {"role": "assistant", "tool_calls": [call(1, "id1", "[")]}}),
            ),
            chunk(
                json!({"index": 0, "delta": {"tool_calls": [call(0, "id0", "{"), call(1, "id1", "1")]}}),
            ),
            chunk(json!({"index": 1, "delta": {"refusal": "no"}, "finish_reason": "stop"})),
            chunk(
                json!({"index": 0, "delta": {"tool_calls": [call(0, "id0", "}"), call(1, "id1", "]")]}}),
            ),
            chunk(json!({"index": 0, "delta": {}, "finish_reason": "tool_calls"})),
        ];
        let tool = |index: u64, args: &str| json!({"id": format!("id{index}"), "type": "function", "function": {"name": format!("f{index}"), "arguments": args}});
        assert_eq!(
            assemble(&events).expect("stream assembles"),
            json!({
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": null, "tool_calls": [tool(0, "{}"), tool(1, "[1]")]},
                        "logprobs": null,
                        "finish_reason": "tool_calls",
                    },
                    {
                        "index": 1,
                        "message": {"role": "assistant", "content": "B", "refusal": "no"},
                        "logprobs": null,
                        "finish_reason": "stop",
                    },
                ],
            })
        );
    }

    fn text_completion() -> Value {
        json!({
            "id": "chatcmpl-T1",
            "object": "chat.completion",
            "created": 1751234000,
            "model": "gpt-4o-mini-2024-07-18",
            "system_fingerprint": "fp_aa",
            "service_tier": "default",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Paris is at 18 °C.\nSunny."},
                    "logprobs": null,
                    "finish_reason": "stop",
                },
                {
                    "index": 1,
                    "message": {"role": "assistant", "content": null, "refusal": "I can't help with that."},
                    "logprobs": null,
                    "finish_reason": "stop",
                },
            ],
            "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
        })
    }

    fn tool_completion() -> Value {
        json!({
            "id": "chatcmpl-T2",
            "object": "chat.completion",
            "created": 1751234001,
            "model": "gpt-4o-2024-08-06",
            "system_fingerprint": "fp_bb",
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": null,
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                        {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\":\"Europe/Paris\"}"}},
                    ],
                },
                "logprobs": null,
                "finish_reason": "tool_calls",
            }],
            "usage": {"prompt_tokens": 50, "completion_tokens": 30, "total_tokens": 80},
        })
    }

    #[test]
    fn synthesize_then_assemble_round_trips_text_and_refusal() {
        let completion = text_completion();
        assert_eq!(
            assemble(&synthesize(&completion, true)).expect("assembles"),
            completion
        );
    }

    #[test]
    fn synthesize_then_assemble_round_trips_tool_calls() {
        let completion = tool_completion();
        assert_eq!(
            assemble(&synthesize(&completion, true)).expect("assembles"),
            completion
        );
    }

    #[test]
    fn synthesized_chunks_look_like_openai_chunks() {
        let completion = tool_completion();
        let events = synthesize(&completion, true);
        let (done, chunks) = events.split_last().expect("at least [DONE]");
        assert_eq!(done, &data_event("[DONE]"));
        let chunks: Vec<Value> = chunks
            .iter()
            .map(|e| {
                assert_eq!((&e.event, &e.id), (&None, &None));
                serde_json::from_str(&e.data).expect("chunk is JSON")
            })
            .collect();
        // role chunk, two tool calls, finish, usage.
        assert_eq!(chunks.len(), 5);
        for chunk in &chunks {
            assert_eq!(chunk["object"], "chat.completion.chunk");
            assert_eq!(chunk["id"], "chatcmpl-T2");
            assert_eq!(chunk["created"], 1751234001);
            assert_eq!(chunk["model"], "gpt-4o-2024-08-06");
            assert_eq!(chunk["system_fingerprint"], "fp_bb");
            assert!(chunk.get("service_tier").is_none());
        }
        assert_eq!(
            chunks[0]["choices"][0]["delta"],
            json!({"role": "assistant", "content": ""})
        );
        assert_eq!(chunks[3]["choices"][0]["delta"], json!({}));
        assert_eq!(chunks[3]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(chunks[3]["usage"], Value::Null);
        assert_eq!(chunks[4]["choices"], json!([]));
        assert_eq!(chunks[4]["usage"], completion["usage"]);

        // The whole stream on the wire, for review.
        let wire: Vec<u8> = events.iter().flat_map(|e| encode(e).to_vec()).collect();
        insta::assert_snapshot!(String::from_utf8(wire).expect("UTF-8"));
    }

    #[test]
    fn synthesize_without_usage_sends_no_usage() {
        let events = synthesize(&text_completion(), false);
        assert!(events
            .iter()
            .all(|e| !e.data.contains("usage") && !e.data.contains("\"choices\":[]")));
        let assembled = assemble(&events).expect("assembles");
        assert!(assembled.get("usage").is_none());
    }

    #[test]
    fn reads_the_request_flags() {
        assert!(wants_stream(&json!({"stream": true})));
        assert!(!wants_stream(&json!({"stream": false})));
        assert!(!wants_stream(&json!({"stream": "true"})));
        assert!(!wants_stream(&json!({})));
        assert!(wants_usage(
            &json!({"stream": true, "stream_options": {"include_usage": true}})
        ));
        assert!(!wants_usage(
            &json!({"stream_options": {"include_usage": false}})
        ));
        assert!(!wants_usage(&json!({"stream": true})));
    }

    fn assemble_err(data: &[&str]) -> String {
        let events: Vec<SseEvent> = data.iter().map(|d| data_event(d)).collect();
        assemble(&events).expect_err("must fail").to_string()
    }

    #[test]
    fn errors_say_which_event_and_what() {
        let ok = r#"{"id":"c","created":1,"model":"m","choices":[]}"#;
        assert_eq!(
            assemble_err(&[ok, ok, "{\"id\": tru", "[DONE]"]),
            "failed to parse stream event 2 as JSON"
        );
        assert_eq!(
            assemble_err(&[ok, "[1, 2]"]),
            "failed to read stream event 1: expected a JSON object"
        );
        assert_eq!(
            assemble_err(&[r#"{"choices":[{"delta":{"content":"x"}}]}"#]),
            "failed to read stream event 0: a choice has no integer `index`"
        );
        assert_eq!(
            assemble_err(&[
                ok,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"x"}]}}]}"#
            ]),
            "failed to read stream event 1: a tool call has no integer `index`"
        );
        assert_eq!(
            assemble_err(&[ok, r#"{"choices":{"index":0}}"#]),
            "failed to read stream event 1: `choices` is not an array"
        );
        assert_eq!(
            assemble_err(&[
                ok,
                r#"{"error":{"message":"The server had an error processing your request.","type":"server_error"}}"#
            ]),
            "failed to assemble the stream: event 1 reports an upstream error: \
             The server had an error processing your request."
        );
        assert_eq!(
            assemble_err(&["[DONE]"]),
            "failed to assemble the stream: it has no chunks"
        );
        assert_eq!(
            assemble_err(&[r#"{"id":"c","created":1,"choices":[]}"#]),
            "failed to assemble the stream: no chunk carries `model`"
        );
    }

    #[test]
    fn json_error_keeps_its_source() {
        let err = assemble(&[data_event("{oops")]).expect_err("not JSON");
        let source = std::error::Error::source(&err).expect("has a source");
        assert!(source.to_string().contains("line 1 column 2"), "{source}");
    }

    fn agent_request() -> Value {
        json!({
            "model": "gpt-4o-mini", "temperature": 0.2,
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather in Paris and Lyon?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Lyon\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\": 18, \"at\": \"12:01:07\"}"},
                {"role": "tool", "tool_call_id": "call_2", "content": "{\"temp_c\": 20, \"at\": \"12:01:08\"}"}
            ],
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
        })
    }

    #[test]
    fn extract_reads_the_neutral_call() {
        let response = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "book", "arguments": "{\"day\": 1}"}}]},
            "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 32}}});
        let call = extract(&agent_request(), &response);
        assert_eq!(call.model, "gpt-4o-mini");
        assert_eq!(call.system.as_deref(), Some("Be brief."));
        assert_eq!(call.message_count, 5);
        assert_eq!(call.tools[0].name, "get_weather");
        assert_eq!(call.tool_results.len(), 2);
        assert_eq!(call.tool_results[1].name.as_deref(), Some("get_weather"));
        assert_eq!(
            call.tool_calls,
            vec![ToolCall {
                id: "call_9".into(),
                name: "book".into(),
                arguments: json!({"day": 1})
            }]
        );
        assert_eq!(
            call.usage,
            Usage {
                prompt: 50,
                completion: 7,
                cached: 32
            }
        );
        assert_eq!(call.params.get("temperature"), Some(&json!(0.2)));
        assert!(!call.params.contains_key("messages"));
        assert_eq!(call.reply, None);
    }

    #[test]
    fn rewrite_replaces_tool_results_in_conversation_order() {
        let mut req = agent_request();
        let mut seen = vec![];
        let n = rewrite_tool_results(&mut req, &|_| None, &mut |call, nth| {
            seen.push((call.arguments["city"].as_str().unwrap().to_owned(), nth));
            Some(json!({"temp_c": 10 + nth}))
        });
        assert_eq!(n, 2);
        assert_eq!(seen, vec![("Paris".to_owned(), 0), ("Lyon".to_owned(), 1)]);
        assert_eq!(req["messages"][3]["content"], json!("{\"temp_c\":10}"));
        assert_eq!(req["messages"][4]["content"], json!("{\"temp_c\":11}"));
    }

    #[test]
    fn rewrite_uses_the_session_lookup_for_calls_outside_the_request() {
        let mut req =
            json!({"messages": [{"role": "tool", "tool_call_id": "call_x", "content": "old"}]});
        let lookup = |id: &str| {
            (id == "call_x").then(|| ToolCall {
                id: id.into(),
                name: "clock".into(),
                arguments: json!({}),
            })
        };
        let n = rewrite_tool_results(&mut req, &lookup, &mut |call, _| {
            (call.name == "clock").then(|| json!("09:00"))
        });
        assert_eq!(n, 1);
        assert_eq!(req["messages"][0]["content"], "09:00");
    }
}
