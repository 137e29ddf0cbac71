//! Anthropic streams: a `message_start` … `message_stop` event sequence assembled into the
//! equivalent non-streamed `message` object, and one synthesized from it.
//!
//! Assembling follows what Anthropic's SDKs do with a stream: the message of
//! `message_start`, its content blocks built from `content_block_start` plus their deltas
//! (text appended, `input_json_delta` fragments concatenated and parsed into `input`), then
//! `message_delta`'s stop reason and usage laid over it.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::dialect::{delta_pieces, AssembleError};
use crate::sse::SseEvent;

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
        return Err(AssembleError::Empty { what: "events" });
    };
    if !stopped {
        return Err(AssembleError::Incomplete {
            events: seen,
            last,
            terminal: "message_stop",
        });
    }
    let mut message = message.ok_or(AssembleError::MissingEvent {
        event: "message_start",
    })?;
    message.insert("content".to_owned(), Value::Array(content(blocks)?));
    message.extend(delta);
    if !usage.is_empty() {
        let entry = message.entry("usage").or_insert_with(|| json!({}));
        if let Some(existing) = entry.as_object_mut() {
            existing.extend(usage);
        }
    }
    Ok(Value::Object(message))
}

/// The content blocks in index order, a tool call's streamed input parsed.
fn content(blocks: BTreeMap<u64, BlockParts>) -> Result<Vec<Value>, AssembleError> {
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
    Ok(content)
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
///   single `""` for an empty input, as the API does; an input that is a string, such
///   as a fault's broken JSON, streams as that text); other blocks start whole;
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
                    // Arguments that are not JSON (a fault's) stream as their own text.
                    Value::String(text) => text,
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
