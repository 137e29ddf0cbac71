//! Anthropic Messages wire shapes (`POST /v1/messages`): converts a streamed
//! `message_start` … `message_stop` event sequence to the equivalent non-streamed `message`
//! object and back, reads the request flags, and maps an exchange onto the neutral
//! trajectory (`tool_use` / `tool_result` blocks).
//!
//! Assembling follows what Anthropic's SDKs do with a stream: the message of
//! `message_start`, its content blocks built from `content_block_start` plus their deltas
//! (text appended, `input_json_delta` fragments concatenated and parsed into `input`), then
//! `message_delta`'s stop reason and usage laid over it.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::delta_pieces;
use crate::neutral::{result_text, ModelCall, ToolCall, ToolDef, ToolResult, Usage};
use crate::sse::SseEvent;

/// The route name, stored in cassettes and in [`ModelCall::route`].
const ROUTE: &str = "anthropic.messages";

/// Why a recorded stream could not be assembled into a `message` object.
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
    #[error("failed to assemble the stream: it has no events")]
    Empty,
    #[error("failed to assemble the stream: it has no `message_start` event")]
    NoMessageStart,
    #[error(
        "failed to assemble the stream: it ended after {events} events without \
         `message_stop` (last event: `{last}`)"
    )]
    Incomplete { events: usize, last: String },
    #[error("failed to assemble the stream: the input of content block {block} is not JSON")]
    ToolInput {
        block: u64,
        #[source]
        source: serde_json::Error,
    },
}

/// A content block being streamed: the block of `content_block_start` with its deltas
/// applied, and the `input_json_delta` fragments received so far (`None` when none came,
/// so a block's own `input` stays as it started).
struct BlockParts {
    block: Map<String, Value>,
    json: Option<String>,
}

/// Assemble the streamed events into the equivalent non-streamed `message` object:
/// `message_start`'s message, `content` ordered by block index, `stop_reason`,
/// `stop_sequence` (and any other field) from `message_delta.delta`, and `usage` with the
/// non-null fields of `message_delta.usage` laid over `message_start`'s (recent API versions
/// repeat the input counts there; older ones send only `output_tokens`).
///
/// Deltas: `text_delta` appends to `text`, `thinking_delta` to `thinking`,
/// `signature_delta` sets `signature`, `citations_delta` appends to `citations`, and the
/// `partial_json` of `input_json_delta` (tool_use and server_tool_use blocks) is
/// concatenated, then parsed into `input` — an empty concatenation (a call without
/// arguments) is `{}`. Unknown events and delta types are skipped, and so are `ping` and
/// events without data.
///
/// Fails on an `error` event (e.g. `overloaded_error` mid-stream), and when the stream
/// ended before `message_stop`: a stream that broke off is not passed off as a complete
/// message (the recording then keeps only its events, which replay serves as they were).
pub fn assemble(events: &[SseEvent]) -> Result<Value, AssembleError> {
    let mut message: Option<Map<String, Value>> = None;
    let mut blocks: BTreeMap<u64, BlockParts> = BTreeMap::new();
    let mut delta = Map::new();
    let mut usage = Map::new();
    let mut last: Option<String> = None;
    let mut seen = 0usize;
    let mut stopped = false;
    for (index, event) in events.iter().enumerate() {
        if event.data.trim().is_empty() {
            continue;
        }
        let mut data: Value = serde_json::from_str(&event.data)
            .map_err(|source| AssembleError::NotJson { index, source })?;
        if !data.is_object() {
            return Err(AssembleError::Shape {
                index,
                problem: "expected a JSON object",
            });
        }
        seen += 1;
        let shape = |problem| AssembleError::Shape { index, problem };
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default()
            .to_owned();
        match kind.as_str() {
            "message_start" => match data["message"].take() {
                Value::Object(m) => message = Some(m),
                _ => return Err(shape("`message_start` has no `message` object")),
            },
            "content_block_start" => {
                let block_index = block_index(&data)
                    .ok_or_else(|| shape("a content block event has no integer `index`"))?;
                let Value::Object(block) = data["content_block"].take() else {
                    return Err(shape("`content_block_start` has no `content_block` object"));
                };
                blocks.insert(block_index, BlockParts { block, json: None });
            }
            "content_block_delta" => {
                let block_index = block_index(&data)
                    .ok_or_else(|| shape("a content block event has no integer `index`"))?;
                let parts = blocks.get_mut(&block_index).ok_or_else(|| {
                    shape("a delta arrived for a content block that was not started")
                })?;
                apply_delta(parts, &data["delta"]);
            }
            "message_delta" => {
                if let Value::Object(d) = data["delta"].take() {
                    delta.extend(d);
                }
                if let Value::Object(u) = data["usage"].take() {
                    usage.extend(u.into_iter().filter(|(_, v)| !v.is_null()));
                }
            }
            "message_stop" => {
                stopped = true;
                break;
            }
            "error" => {
                let message = data["error"]["message"]
                    .as_str()
                    .map_or_else(|| data.to_string(), str::to_owned);
                return Err(AssembleError::Upstream { index, message });
            }
            // `ping`, `content_block_stop` and event types added later carry nothing to keep.
            _ => {}
        }
        last = Some(kind);
    }
    let Some(last) = last else {
        return Err(AssembleError::Empty);
    };
    if !stopped {
        return Err(AssembleError::Incomplete { events: seen, last });
    }
    let mut message = message.ok_or(AssembleError::NoMessageStart)?;
    let mut content = Vec::with_capacity(blocks.len());
    for (block_index, BlockParts { mut block, json }) in blocks {
        if let Some(json) = json {
            let input = if json.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&json).map_err(|source| AssembleError::ToolInput {
                    block: block_index,
                    source,
                })?
            };
            block.insert("input".to_owned(), input);
        }
        content.push(Value::Object(block));
    }
    message.insert("content".to_owned(), Value::Array(content));
    message.extend(delta);
    if !usage.is_empty() {
        let entry = message.entry("usage").or_insert_with(|| json!({}));
        if let Some(existing) = entry.as_object_mut() {
            existing.extend(usage);
        }
    }
    Ok(Value::Object(message))
}

fn block_index(data: &Value) -> Option<u64> {
    data.get("index").and_then(Value::as_u64)
}

fn apply_delta(parts: &mut BlockParts, delta: &Value) {
    let text = |field: &str| delta[field].as_str().unwrap_or_default();
    match delta["type"].as_str() {
        Some("text_delta") => append(&mut parts.block, "text", text("text")),
        Some("thinking_delta") => append(&mut parts.block, "thinking", text("thinking")),
        Some("signature_delta") => {
            parts
                .block
                .insert("signature".to_owned(), json!(text("signature")));
        }
        Some("citations_delta") => {
            let citations = parts.block.entry("citations").or_insert_with(|| json!([]));
            if let Some(list) = citations.as_array_mut() {
                list.push(delta["citation"].clone());
            }
        }
        Some("input_json_delta") => parts
            .json
            .get_or_insert_with(String::new)
            .push_str(text("partial_json")),
        _ => {}
    }
}

fn append(block: &mut Map<String, Value>, field: &str, piece: &str) {
    match block.get_mut(field) {
        Some(Value::String(s)) => s.push_str(piece),
        _ => {
            block.insert(field.to_owned(), json!(piece));
        }
    }
}

/// One event as Anthropic frames it: `event: kind`, data `{type: kind, ...fields}`.
fn event(kind: &str, fields: Value) -> SseEvent {
    let mut data = match fields {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    data.insert("type".to_owned(), json!(kind));
    SseEvent {
        event: Some(kind.to_owned()),
        id: None,
        data: Value::Object(data).to_string(),
    }
}

/// The reverse of [`assemble`]: a stream synthesized from a `message` object, shaped like
/// what Anthropic sends:
///
/// - `message_start` with the message, its `content` empty, `stop_reason` and
///   `stop_sequence` `null`, and `usage.output_tokens` at most 1 (the API counts the first
///   token there), then a `ping`;
/// - per content block, `content_block_start` with the block emptied, its deltas, and
///   `content_block_stop`: `text` as `text_delta` pieces (and one `citations_delta` per
///   citation), `thinking` as `thinking_delta` pieces and a `signature_delta`,
///   `tool_use` / `server_tool_use` input as compact JSON in `input_json_delta` pieces (a
///   single `""` for an empty input, as the API does); other blocks start whole;
/// - `message_delta` with `stop_reason`, `stop_sequence` and the whole `usage`, and
///   `message_stop`.
///
/// Missing parts of a malformed message become `null` or are left out; this never fails.
pub fn synthesize(message: &Value) -> Vec<SseEvent> {
    let mut start = message.as_object().cloned().unwrap_or_default();
    start.insert("content".to_owned(), json!([]));
    start.insert("stop_reason".to_owned(), Value::Null);
    start.insert("stop_sequence".to_owned(), Value::Null);
    if let Some(output) = start
        .get_mut("usage")
        .and_then(|u| u.get_mut("output_tokens"))
    {
        *output = json!(output.as_u64().unwrap_or(0).min(1));
    }
    let mut events = vec![
        event("message_start", json!({"message": start})),
        event("ping", json!({})),
    ];
    let blocks = message.get("content").and_then(Value::as_array);
    for (index, block) in blocks.into_iter().flatten().enumerate() {
        let delta = |delta: Value| {
            event(
                "content_block_delta",
                json!({"index": index, "delta": delta}),
            )
        };
        let mut empty = block.clone();
        let mut deltas = Vec::new();
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                empty["text"] = json!("");
                for piece in delta_pieces(block["text"].as_str().unwrap_or_default()) {
                    deltas.push(delta(json!({"type": "text_delta", "text": piece})));
                }
                if let Some(citations) = block.get("citations").and_then(Value::as_array) {
                    empty["citations"] = json!([]);
                    for citation in citations {
                        deltas.push(delta(
                            json!({"type": "citations_delta", "citation": citation}),
                        ));
                    }
                }
            }
            Some("thinking") => {
                empty["thinking"] = json!("");
                for piece in delta_pieces(block["thinking"].as_str().unwrap_or_default()) {
                    deltas.push(delta(json!({"type": "thinking_delta", "thinking": piece})));
                }
                if let Some(signature) = block.get("signature") {
                    empty["signature"] = json!("");
                    deltas.push(delta(
                        json!({"type": "signature_delta", "signature": signature}),
                    ));
                }
            }
            Some("tool_use" | "server_tool_use") => {
                empty["input"] = json!({});
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                let input = match input {
                    Value::Object(ref map) if map.is_empty() => String::new(),
                    other => other.to_string(),
                };
                let pieces = delta_pieces(&input);
                for piece in if pieces.is_empty() { vec![""] } else { pieces } {
                    deltas.push(delta(
                        json!({"type": "input_json_delta", "partial_json": piece}),
                    ));
                }
            }
            _ => {}
        }
        events.push(event(
            "content_block_start",
            json!({"index": index, "content_block": empty}),
        ));
        events.extend(deltas);
        events.push(event("content_block_stop", json!({"index": index})));
    }
    events.push(event(
        "message_delta",
        json!({
            "delta": {
                "stop_reason": message.get("stop_reason"),
                "stop_sequence": message.get("stop_sequence"),
            },
            "usage": message.get("usage").cloned().unwrap_or_else(|| json!({})),
        }),
    ));
    events.push(event("message_stop", json!({})));
    events
}

/// Is this request body asking for a stream? (`"stream": true`)
pub fn wants_stream(body: &Value) -> bool {
    body.get("stream") == Some(&Value::Bool(true))
}

/// The content blocks of a message; string content has none (it can hold no tool use or
/// tool result).
fn blocks_of(message: &Value) -> Vec<&Value> {
    match &message["content"] {
        Value::Array(blocks) => blocks.iter().collect(),
        _ => Vec::new(),
    }
}

fn block_type(block: &Value) -> &str {
    block["type"].as_str().unwrap_or("?")
}

/// The envelope of a Messages request for near-miss reports: model, message count, roles,
/// the content block types of all messages in order (a string content counts as `text`),
/// and tool names.
pub fn envelope(body: &Value) -> Vec<(&'static str, String)> {
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("?"))
        .collect();
    let blocks: Vec<&str> = messages
        .iter()
        .flat_map(|m| match &m["content"] {
            Value::String(_) => vec!["text"],
            Value::Array(blocks) => blocks.iter().map(block_type).collect(),
            _ => vec![],
        })
        .collect();
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("?"))
        .collect();
    vec![
        ("model", body["model"].to_string()),
        ("message count", messages.len().to_string()),
        ("roles", format!("[{}]", roles.join(", "))),
        ("blocks", format!("[{}]", blocks.join(", "))),
        ("tools", format!("[{}]", tools.join(", "))),
    ]
}

/// Request fields that are not parameters: the conversation itself and transport.
const NOT_PARAMS: [&str; 5] = ["model", "system", "messages", "tools", "stream"];

/// The neutral model call of one Messages exchange (`response` is the non-streamed or
/// assembled `message`; an error body gives a call with no reply and no tool calls).
///
/// - `system`: the `system` string, or the `text` of its blocks joined by blank lines.
/// - `tool_results`: the `tool_result` blocks after the last assistant message, with the
///   `name` of the `tool_use` block they answer when the request holds it.
/// - `tool_calls`: the response's `tool_use` blocks (`server_tool_use` blocks are run by
///   Anthropic, not the program, and are not listed).
/// - `reply`: the response's `text` blocks concatenated (citations split one answer into
///   several blocks); `None` when there is none.
/// - `usage`: `prompt` is `input_tokens + cache_read_input_tokens +
///   cache_creation_input_tokens` (Anthropic's `input_tokens` excludes cached tokens, unlike
///   OpenAI's), `cached` is `cache_read_input_tokens`.
pub fn extract(request: &Value, response: &Value) -> ModelCall {
    let system = match &request["system"] {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => Some(
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n\n"),
        ),
        _ => None,
    };
    let tools = request["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|t| ToolDef {
            name: t["name"].as_str().unwrap_or_default().to_owned(),
            parameters: t["input_schema"].clone(),
        })
        .collect();
    let messages = request["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let after_last_assistant = messages
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .map_or(0, |i| i + 1);
    let tool_results = messages[after_last_assistant..]
        .iter()
        .flat_map(blocks_of)
        .filter(|b| block_type(b) == "tool_result")
        .map(|b| {
            let call_id = b["tool_use_id"].as_str().unwrap_or_default().to_owned();
            ToolResult {
                name: call_name(messages, &call_id),
                call_id,
                content: b["content"].clone(),
            }
        })
        .collect();
    let content = blocks_of(response);
    let tool_calls = content
        .iter()
        .filter(|b| block_type(b) == "tool_use")
        .map(|b| tool_call(b))
        .collect();
    let texts: Vec<&str> = content
        .iter()
        .filter(|b| block_type(b) == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    let usage = &response["usage"];
    let count = |field: &str| usage[field].as_u64().unwrap_or(0);
    ModelCall {
        route: ROUTE.into(),
        model: request["model"].as_str().unwrap_or_default().to_owned(),
        system,
        tools,
        message_count: messages.len(),
        tool_results,
        tool_calls,
        reply: (!texts.is_empty()).then(|| texts.concat()),
        usage: Usage {
            prompt: count("input_tokens")
                + count("cache_read_input_tokens")
                + count("cache_creation_input_tokens"),
            completion: count("output_tokens"),
            cached: count("cache_read_input_tokens"),
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

/// Replace the content of `tool_result` blocks by mocks. `mock(call, nth)` gets the call a
/// result answers (the `tool_use` block of an assistant message in the request, else
/// through `lookup`) and its 0-based occurrence among calls to that tool in the
/// conversation; `Some` replaces the block's `content` with a string and drops its
/// `is_error` flag (the mock is what the tool returned). Returns how many results were
/// replaced.
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
    let blocks = messages
        .iter_mut()
        .filter_map(|m| m.get_mut("content").and_then(Value::as_array_mut))
        .flatten()
        .filter(|b| block_type(b) == "tool_result");
    for block in blocks {
        let id = block["tool_use_id"].as_str().unwrap_or_default();
        let Some(call) = calls_by_id.get(id).cloned().or_else(|| lookup(id)) else {
            continue;
        };
        let nth = seen.entry(call.name.clone()).or_default();
        if let Some(v) = mock(&call, *nth) {
            block["content"] = Value::String(result_text(&v));
            if let Some(fields) = block.as_object_mut() {
                fields.remove("is_error");
            }
            replaced += 1;
        }
        *nth += 1;
    }
    replaced
}

/// The `tool_use` blocks of the assistant messages, by id.
/// The name of the history's `tool_use` block `id`, searched from the end: a result
/// usually answers the last assistant message, so a long history is not walked for
/// every request.
fn call_name(messages: &[Value], id: &str) -> Option<String> {
    messages
        .iter()
        .rev()
        .filter(|m| m["role"] == "assistant")
        .flat_map(blocks_of)
        .find(|b| block_type(b) == "tool_use" && b["id"] == id)
        .and_then(|b| b["name"].as_str())
        .map(str::to_owned)
}

fn calls_in_history(messages: &[Value]) -> BTreeMap<String, ToolCall> {
    messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(blocks_of)
        .filter(|b| block_type(b) == "tool_use")
        .filter_map(|b| Some((b["id"].as_str()?.to_owned(), tool_call(b))))
        .collect()
}

fn tool_call(block: &Value) -> ToolCall {
    ToolCall {
        id: block["id"].as_str().unwrap_or_default().to_owned(),
        name: block["name"].as_str().unwrap_or_default().to_owned(),
        arguments: block["input"].clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::{encode, SseParser};

    fn parse_all(wire: &[u8]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        // Byte by byte, so multi-byte characters are split between network reads too.
        let mut events: Vec<SseEvent> = wire.chunks(1).flat_map(|b| parser.push(b)).collect();
        events.extend(parser.finish());
        events
    }

    /// A stream as Anthropic sends it: `event:` name, then the data with the same `type`.
    fn wire(events: &[Value]) -> String {
        events
            .iter()
            .map(|data| {
                format!(
                    "event: {}\ndata: {data}\n\n",
                    data["type"].as_str().expect("a type")
                )
            })
            .collect()
    }

    fn input_json(index: u64, partial: &str) -> Value {
        json!({"type": "content_block_delta", "index": index,
               "delta": {"type": "input_json_delta", "partial_json": partial}})
    }

    fn text_delta(index: u64, text: &str) -> Value {
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})
    }

    #[test]
    fn assembles_text_and_tool_use_split_at_awkward_points() {
        let mut events = vec![
            json!({"type": "message_start", "message": {
                "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5-20250929", "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 472, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 2048,
                          "output_tokens": 2, "service_tier": "standard"}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "ping"}),
        ];
        for piece in ["Let me check ", "Zü", "rich and Genève", "."] {
            events.push(text_delta(0, piece));
        }
        events.push(json!({"type": "content_block_stop", "index": 0}));
        events.push(json!({"type": "content_block_start", "index": 1, "content_block":
            {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather", "input": {}}}));
        // The API opens with an empty fragment, then splits mid-key, between the characters
        // of "Zürich" and inside a `\u00fc` escape.
        for piece in [
            "",
            r#"{"loc"#,
            r#"ation": "Z"#,
            "ü",
            r#"rich", "al"#,
            r#"t": "Z\u00"#,
            r#"fcrich"}"#,
        ] {
            events.push(input_json(1, piece));
        }
        events.push(json!({"type": "content_block_stop", "index": 1}));
        // A call without arguments: one empty fragment.
        events.push(
            json!({"type": "content_block_start", "index": 2, "content_block":
            {"type": "tool_use", "id": "toolu_02", "name": "get_time", "input": {}}}),
        );
        events.push(input_json(2, ""));
        events.push(json!({"type": "content_block_stop", "index": 2}));
        events.push(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
            "usage": {"input_tokens": 472, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 2048,
                      "output_tokens": 89, "server_tool_use": null}}));
        events.push(json!({"type": "message_stop"}));

        let events = parse_all(wire(&events).as_bytes());
        assert_eq!(events.len(), 22);
        assert_eq!(
            assemble(&events).expect("stream assembles"),
            json!({
                "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [
                    {"type": "text", "text": "Let me check Zürich and Genève."},
                    {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather",
                     "input": {"location": "Zürich", "alt": "Zürich"}},
                    {"type": "tool_use", "id": "toolu_02", "name": "get_time", "input": {}},
                ],
                "stop_reason": "tool_use",
                "stop_sequence": null,
                "usage": {"input_tokens": 472, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 2048,
                          "output_tokens": 89, "service_tier": "standard"},
            })
        );
    }

    #[test]
    fn assembles_thinking_citations_and_an_old_style_message_delta() {
        let events = [
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                "model": "claude-opus-4-1", "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Zü"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "rich?"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}}),
            text_delta(2, "18 °C"),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "citations_delta",
                "citation": {"type": "char_location", "cited_text": "18 °C", "document_index": 0}}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "some_future_delta", "x": 1}}),
            json!({"type": "content_block_stop", "index": 2}),
            // Older API versions send only the output count here.
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 30}}),
            json!({"type": "message_stop"}),
        ];
        let events = parse_all(wire(&events).as_bytes());
        assert_eq!(
            assemble(&events).expect("assembles"),
            json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-1",
                "content": [
                    {"type": "thinking", "thinking": "Zürich?", "signature": "EqQBCgIYAhIM"},
                    {"type": "redacted_thinking", "data": "EmwKAhgBEgy"},
                    {"type": "text", "text": "18 °C", "citations": [
                        {"type": "char_location", "cited_text": "18 °C", "document_index": 0}]},
                ],
                "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 30},
            })
        );
    }

    fn assemble_err(events: &[Value]) -> String {
        let events: Vec<SseEvent> = events
            .iter()
            .map(|d| SseEvent {
                event: None,
                id: None,
                data: d.to_string(),
            })
            .collect();
        assemble(&events).expect_err("must fail").to_string()
    }

    #[test]
    fn errors_say_which_event_and_what() {
        let start = json!({"type": "message_start", "message": {"id": "msg_1", "content": []}});
        let stop = json!({"type": "message_stop"});
        let raw = |data: &str| SseEvent {
            event: None,
            id: None,
            data: data.to_owned(),
        };
        assert_eq!(
            assemble(&[raw(&start.to_string()), raw("{\"type\": tru")])
                .expect_err("bad")
                .to_string(),
            "failed to parse stream event 1 as JSON"
        );
        assert_eq!(
            assemble_err(&[start.clone(), json!("text")]),
            "failed to read stream event 1: expected a JSON object"
        );
        assert_eq!(
            assemble_err(&[
                start.clone(),
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
            ]),
            "failed to assemble the stream: event 1 reports an upstream error: Overloaded"
        );
        assert_eq!(
            assemble_err(&[
                start.clone(),
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
                text_delta(0, "Zü")
            ]),
            "failed to assemble the stream: it ended after 3 events without `message_stop` \
             (last event: `content_block_delta`)"
        );
        assert_eq!(
            assemble_err(&[json!({"type": "ping"}), stop.clone()]),
            "failed to assemble the stream: it has no `message_start` event"
        );
        assert_eq!(
            assemble_err(&[start.clone(), text_delta(3, "x"), stop.clone()]),
            "failed to read stream event 1: a delta arrived for a content block that was not started"
        );
        assert_eq!(
            assemble_err(&[
                start.clone(),
                json!({"type": "content_block_start", "content_block": {}}),
                stop.clone()
            ]),
            "failed to read stream event 1: a content block event has no integer `index`"
        );
        assert_eq!(
            assemble_err(&[
                start.clone(),
                json!({"type": "message_start", "message": null})
            ]),
            "failed to read stream event 1: `message_start` has no `message` object"
        );
        let tool = json!({"type": "content_block_start", "index": 4,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}});
        let err = assemble(
            &[
                start.clone(),
                tool,
                input_json(4, r#"{"city": "Zü"#),
                stop.clone(),
            ]
            .iter()
            .map(|d| raw(&d.to_string()))
            .collect::<Vec<_>>(),
        )
        .expect_err("cut JSON");
        assert_eq!(
            err.to_string(),
            "failed to assemble the stream: the input of content block 4 is not JSON"
        );
        assert!(std::error::Error::source(&err).is_some());
        assert_eq!(
            assemble(&[]).expect_err("empty").to_string(),
            "failed to assemble the stream: it has no events"
        );
        // A named event without data (a bare keep-alive) is skipped.
        let bare = SseEvent {
            event: Some("ping".into()),
            id: None,
            data: String::new(),
        };
        assert_eq!(
            assemble(&[bare]).expect_err("empty").to_string(),
            "failed to assemble the stream: it has no events"
        );
    }

    #[test]
    fn events_missing_their_fields_are_errors_not_panics() {
        let start = json!({"type": "message_start", "message": {"id": "msg_1", "content": []}});
        let block = json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}});
        let stop = json!({"type": "message_stop"});
        assert_eq!(
            assemble_err(&[json!({"type": "error"})]),
            "failed to assemble the stream: event 0 reports an upstream error: {\"type\":\"error\"}"
        );
        assert_eq!(
            assemble_err(&[json!({"type": "message_start"})]),
            "failed to read stream event 0: `message_start` has no `message` object"
        );
        assert_eq!(
            assemble_err(&[
                start.clone(),
                json!({"type": "content_block_start", "index": 0}),
                stop.clone()
            ]),
            "failed to read stream event 1: `content_block_start` has no `content_block` object"
        );
        // A delta without `delta`, and a message_delta without either part, change nothing.
        let events: Vec<SseEvent> = [
            start,
            block,
            json!({"type": "content_block_delta", "index": 0}),
            json!({"type": "message_delta"}),
            stop,
        ]
        .iter()
        .map(|d| SseEvent {
            event: None,
            id: None,
            data: d.to_string(),
        })
        .collect();
        assert_eq!(
            assemble(&events).expect("assembles"),
            json!({"id": "msg_1", "content": [{"type": "text", "text": ""}]})
        );
    }

    fn text_message() -> Value {
        json!({
            "id": "msg_01Text", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "Zürich: 18 °C, sunny.\nGenève: 21 °C."}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 25, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "output_tokens": 17, "service_tier": "standard"},
        })
    }

    fn tool_message() -> Value {
        json!({
            "id": "msg_01Tool", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [
                {"type": "thinking", "thinking": "Two cities: two calls.", "signature": "EqQBCgIYAhIM"},
                {"type": "text", "text": "I'll check both.", "citations": [
                    {"type": "char_location", "cited_text": "both", "document_index": 0, "start_char_index": 0, "end_char_index": 4}]},
                {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Zürich", "unit": "celsius", "days": [1, 2]}},
                {"type": "tool_use", "id": "toolu_01B", "name": "get_time", "input": {}},
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 410, "cache_creation_input_tokens": 120, "cache_read_input_tokens": 2048, "output_tokens": 96},
        })
    }

    #[test]
    fn synthesize_then_assemble_round_trips_text() {
        let m = text_message();
        assert_eq!(assemble(&synthesize(&m)).expect("assembles"), m);
    }

    #[test]
    fn synthesize_then_assemble_round_trips_tool_use_thinking_and_citations() {
        let m = tool_message();
        assert_eq!(assemble(&synthesize(&m)).expect("assembles"), m);
    }

    #[test]
    fn synthesized_events_look_like_anthropic_events() {
        let m = tool_message();
        let events = synthesize(&m);
        let data: Vec<Value> = events
            .iter()
            .map(|e| {
                let d: Value = serde_json::from_str(&e.data).expect("JSON");
                assert_eq!(e.event.as_deref(), d["type"].as_str());
                assert_eq!(e.id, None);
                d
            })
            .collect();
        let kinds: Vec<&str> = data
            .iter()
            .map(|d| d["type"].as_str().expect("type"))
            .collect();
        assert_eq!(
            &kinds[..3],
            ["message_start", "ping", "content_block_start"]
        );
        assert_eq!(&kinds[kinds.len() - 2..], ["message_delta", "message_stop"]);
        assert_eq!(
            kinds
                .iter()
                .filter(|k| **k == "content_block_start")
                .count(),
            4
        );
        assert_eq!(
            kinds.iter().filter(|k| **k == "content_block_stop").count(),
            4
        );
        let start = &data[0]["message"];
        assert_eq!(start["content"], json!([]));
        assert_eq!(start["stop_reason"], Value::Null);
        assert_eq!(start["usage"]["output_tokens"], 1);
        assert_eq!(start["usage"]["cache_read_input_tokens"], 2048);
        let tool_start = data
            .iter()
            .find(|d| d["content_block"]["id"] == "toolu_01A")
            .expect("tool_use start");
        assert_eq!(tool_start["content_block"]["input"], json!({}));
        let fragments: Vec<&str> = data
            .iter()
            .filter(|d| d["delta"]["type"] == "input_json_delta")
            .map(|d| d["delta"]["partial_json"].as_str().expect("string"))
            .collect();
        assert!(
            fragments.len() > 2,
            "input is streamed in pieces: {fragments:?}"
        );
        assert_eq!(
            fragments.last(),
            Some(&""),
            "an empty input is one empty fragment"
        );
        let wire: Vec<u8> = events.iter().flat_map(|e| encode(e).to_vec()).collect();
        insta::assert_snapshot!(String::from_utf8(wire).expect("UTF-8"));
    }

    #[test]
    fn reads_the_request_flags() {
        assert!(wants_stream(&json!({"stream": true})));
        assert!(!wants_stream(&json!({"stream": false})));
        assert!(!wants_stream(&json!({})));
    }

    fn agent_request() -> Value {
        json!({
            "model": "claude-sonnet-4-5", "max_tokens": 1024, "temperature": 0.2,
            "system": [{"type": "text", "text": "You are a travel agent."},
                       {"type": "text", "text": "Use metric units.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "Weather in Zürich and Genève?"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Zürich"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Genève"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"temp_c\": 18, \"at\": \"12:01:07\"}"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
                     "content": [{"type": "text", "text": "timeout at 12:01:08"}]}]}
            ],
            "tools": [{"name": "get_weather", "description": "Current weather",
                       "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
            "stream": true
        })
    }

    #[test]
    fn extract_reads_the_neutral_call() {
        let call = extract(&agent_request(), &tool_message());
        assert_eq!(call.route, "anthropic.messages");
        assert_eq!(call.model, "claude-sonnet-4-5");
        assert_eq!(
            call.system.as_deref(),
            Some("You are a travel agent.\n\nUse metric units.")
        );
        assert_eq!(call.message_count, 3);
        assert_eq!(call.tools[0].name, "get_weather");
        assert_eq!(
            call.tools[0].parameters["properties"]["city"]["type"],
            "string"
        );
        assert_eq!(
            call.tool_results,
            vec![
                ToolResult {
                    call_id: "toolu_1".into(),
                    name: Some("get_weather".into()),
                    content: json!("{\"temp_c\": 18, \"at\": \"12:01:07\"}")
                },
                ToolResult {
                    call_id: "toolu_2".into(),
                    name: Some("get_weather".into()),
                    content: json!([{"type": "text", "text": "timeout at 12:01:08"}])
                },
            ]
        );
        assert_eq!(
            call.tool_calls,
            vec![
                ToolCall {
                    id: "toolu_01A".into(),
                    name: "get_weather".into(),
                    arguments: json!({"city": "Zürich", "unit": "celsius", "days": [1, 2]})
                },
                ToolCall {
                    id: "toolu_01B".into(),
                    name: "get_time".into(),
                    arguments: json!({})
                },
            ]
        );
        assert_eq!(call.reply.as_deref(), Some("I'll check both."));
        // Anthropic's input_tokens excludes the cache; the neutral prompt count includes it.
        assert_eq!(
            call.usage,
            Usage {
                prompt: 410 + 120 + 2048,
                completion: 96,
                cached: 2048
            }
        );
        assert_eq!(
            call.params.keys().map(String::as_str).collect::<Vec<_>>(),
            ["max_tokens", "temperature"]
        );
    }

    #[test]
    fn extract_a_first_turn_and_an_error() {
        let req = json!({"model": "claude-haiku-4-5", "max_tokens": 64, "system": "Be brief.",
                         "messages": [{"role": "user", "content": "Hi"}]});
        let call = extract(&req, &text_message());
        assert_eq!(call.system.as_deref(), Some("Be brief."));
        assert!(call.tool_results.is_empty() && call.tool_calls.is_empty());
        assert_eq!(
            call.reply.as_deref(),
            Some("Zürich: 18 °C, sunny.\nGenève: 21 °C.")
        );
        let call = extract(
            &req,
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "x"}}),
        );
        assert_eq!((call.reply, call.usage), (None, Usage::default()));
        let call = extract(
            &json!({"messages": [{"role": "user", "content": "x"}]}),
            &json!({}),
        );
        assert_eq!(call.system, None);
    }

    #[test]
    fn envelope_lists_roles_blocks_and_tools() {
        assert_eq!(
            envelope(&agent_request()),
            vec![
                ("model", "\"claude-sonnet-4-5\"".to_owned()),
                ("message count", "3".to_owned()),
                ("roles", "[user, assistant, user]".to_owned()),
                (
                    "blocks",
                    "[text, text, tool_use, tool_use, tool_result, tool_result]".to_owned()
                ),
                ("tools", "[get_weather]".to_owned()),
            ]
        );
    }

    #[test]
    fn rewrite_replaces_tool_results_in_conversation_order() {
        let mut req = agent_request();
        let mut seen = vec![];
        let n = rewrite_tool_results(&mut req, &|_| None, &mut |call, nth| {
            seen.push((
                call.arguments["city"].as_str().expect("city").to_owned(),
                nth,
            ));
            Some(json!({"temp_c": 10 + nth}))
        });
        assert_eq!(n, 2);
        assert_eq!(
            seen,
            vec![("Zürich".to_owned(), 0), ("Genève".to_owned(), 1)]
        );
        assert_eq!(
            req["messages"][2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"temp_c\":10}"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "{\"temp_c\":11}"},
            ])
        );
    }

    #[test]
    fn rewrite_uses_the_session_lookup_and_leaves_unmocked_results() {
        let mut req = json!({"messages": [
            {"role": "user", "content": "What time is it?"},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_x", "content": "09:00:07"},
                {"type": "tool_result", "tool_use_id": "toolu_y", "content": "kept", "is_error": true},
                {"type": "text", "text": "Thanks"}]}]});
        let lookup = |id: &str| {
            (id == "toolu_x").then(|| ToolCall {
                id: id.into(),
                name: "clock".into(),
                arguments: json!({}),
            })
        };
        let n = rewrite_tool_results(&mut req, &lookup, &mut |call, _| {
            (call.name == "clock").then(|| json!("09:00"))
        });
        assert_eq!(n, 1);
        assert_eq!(req["messages"][1]["content"][0]["content"], "09:00");
        assert_eq!(
            req["messages"][1]["content"][1],
            json!({"type": "tool_result", "tool_use_id": "toolu_y", "content": "kept", "is_error": true})
        );
        assert_eq!(req["messages"][0]["content"], "What time is it?");
    }
}
