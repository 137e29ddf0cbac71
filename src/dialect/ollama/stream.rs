//! Ollama's chat stream: one JSON object per line. Each chunk carries a piece of
//! `message.content` (or `thinking`), tool calls arrive whole in a chunk of their own, and
//! the last chunk has `done: true`, the `done_reason` and the counts (token usage and
//! durations). A line `{"error": "…"}` ends a stream that failed.

use serde_json::{json, Map, Value};

use super::super::shared::{delta_pieces, AssembleError};
use crate::sse::SseEvent;

/// The whole response a stream amounts to: its last chunk, with the message's content,
/// thinking and tool calls gathered from every chunk.
pub fn assemble(events: &[SseEvent]) -> Result<Value, AssembleError> {
    let (mut content, mut thinking, mut calls) = (String::new(), String::new(), Vec::new());
    let mut chunks = objects(events)?;
    for chunk in &mut chunks {
        if let Some(Value::Object(message)) = chunk.get_mut("message") {
            content.push_str(message["content"].as_str().unwrap_or_default());
            thinking.push_str(
                message
                    .get("thinking")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            );
            if let Some(Value::Array(c)) = message.remove("tool_calls") {
                calls.extend(c);
            }
        }
    }
    let mut whole = done(chunks)?;
    let mut message = match whole.remove("message") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    message.entry("role").or_insert_with(|| json!("assistant"));
    message.insert("content".to_owned(), Value::String(content));
    message.remove("thinking");
    if !thinking.is_empty() {
        message.insert("thinking".to_owned(), Value::String(thinking));
    }
    if !calls.is_empty() {
        message.insert("tool_calls".to_owned(), Value::Array(calls));
    }
    whole.insert("message".to_owned(), Value::Object(message));
    Ok(Value::Object(whole))
}

/// A stream's chunks, each a JSON object; a line `{"error": …}` is the upstream's failure.
pub(super) fn objects(events: &[SseEvent]) -> Result<Vec<Map<String, Value>>, AssembleError> {
    let mut chunks = Vec::with_capacity(events.len());
    for (index, event) in events.iter().enumerate() {
        let chunk: Value = serde_json::from_str(&event.data)
            .map_err(|source| AssembleError::NotJson { index, source })?;
        let Value::Object(chunk) = chunk else {
            return Err(AssembleError::Shape {
                index,
                problem: "expected a JSON object",
            });
        };
        if let Some(error) = chunk.get("error") {
            let message = error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(AssembleError::Upstream { index, message });
        }
        chunks.push(chunk);
    }
    Ok(chunks)
}

/// The last chunk, which ends the stream with `done: true`.
pub(super) fn done(
    mut chunks: Vec<Map<String, Value>>,
) -> Result<Map<String, Value>, AssembleError> {
    let count = chunks.len();
    let last = chunks
        .pop()
        .ok_or(AssembleError::Empty { what: "chunks" })?;
    if last.get("done") != Some(&Value::Bool(true)) {
        return Err(AssembleError::Incomplete {
            events: count,
            last: "chunk".to_owned(),
            terminal: "done: true",
        });
    }
    Ok(last)
}

/// A stream for a whole response, as Ollama's server sends one: the thinking and the
/// content in token-sized pieces, the tool calls whole, then the final chunk with the
/// response's own `done_reason` and counts.
pub fn synthesize(response: &Value) -> Vec<SseEvent> {
    let message = &response["message"];
    let chunk = |message: Value, done: bool| {
        json!({
            "model": response["model"],
            "created_at": response["created_at"],
            "message": message,
            "done": done,
        })
    };
    let piece = |field: &str, text: &str| {
        let mut m = json!({"role": "assistant", "content": ""});
        m[field] = json!(text);
        chunk(m, false)
    };
    let mut chunks: Vec<Value> = Vec::new();
    for field in ["thinking", "content"] {
        let text = message[field].as_str().unwrap_or_default();
        chunks.extend(delta_pieces(text).into_iter().map(|p| piece(field, p)));
    }
    if let Some(calls) = message.get("tool_calls") {
        chunks.push(chunk(
            json!({"role": "assistant", "content": "", "tool_calls": calls}),
            false,
        ));
    }
    let mut last = match response {
        Value::Object(o) => o.clone(),
        _ => Map::new(),
    };
    last.insert(
        "message".to_owned(),
        json!({"role": "assistant", "content": ""}),
    );
    last.insert("done".to_owned(), json!(true));
    chunks.push(Value::Object(last));
    lines(chunks)
}

/// Chunks as the stream's lines: each an event whose data is the chunk's JSON.
pub(super) fn lines(chunks: Vec<Value>) -> Vec<SseEvent> {
    chunks
        .into_iter()
        .map(|c| SseEvent {
            event: None,
            id: None,
            data: c.to_string(),
        })
        .collect()
}
