//! Gemini streams: every `data:` event of `:streamGenerateContent?alt=sse` is a complete
//! `GenerateContentResponse` holding the next parts; there is no `[DONE]`, and the last
//! chunk carries `finishReason` and the final `usageMetadata`. Assembling merges the chunks
//! into the one response a `:generateContent` call returns; synthesizing sends a whole
//! response back as chunks.

use serde_json::{json, Map, Value};

use crate::dialect::AssembleError;
use crate::sse::SseEvent;

/// Assemble a recorded stream into the equivalent `GenerateContentResponse`: the first
/// candidate's parts in order (adjacent text parts of the same kind joined, as the SDK's
/// `response.text` joins them), the last `finishReason`, `usageMetadata`, `modelVersion`
/// and `responseId` sent.
///
/// Fails on an event that is not JSON, on an `{"error": …}` event (the upstream reported a
/// failure mid-stream), and on a stream that ended before any chunk gave a `finishReason`:
/// a stream that broke off is not turned into a complete answer.
pub fn assemble(events: &[SseEvent]) -> Result<Value, AssembleError> {
    let mut chunks = Vec::with_capacity(events.len());
    for (index, event) in events.iter().enumerate() {
        let chunk: Value = serde_json::from_str(&event.data)
            .map_err(|source| AssembleError::NotJson { index, source })?;
        if let Some(error) = chunk.get("error") {
            let message = error["message"]
                .as_str()
                .unwrap_or("an error event")
                .to_owned();
            return Err(AssembleError::Upstream { index, message });
        }
        if !chunk.is_object() {
            return Err(AssembleError::Shape {
                index,
                problem: "a chunk is not a JSON object",
            });
        }
        chunks.push(chunk);
    }
    if chunks.is_empty() {
        return Err(AssembleError::Empty { what: "events" });
    }
    let finished = chunks
        .iter()
        .any(|c| c["candidates"][0].get("finishReason").is_some());
    if !finished {
        return Err(AssembleError::Incomplete {
            events: events.len(),
            last: "data".to_owned(),
            terminal: "finishReason",
        });
    }
    Ok(merge(&chunks))
}

/// Merge stream chunks (SSE events or the elements of the JSON-array form) into one
/// response. Chunks that are not objects are skipped.
pub(super) fn merge(chunks: &[Value]) -> Value {
    let mut out = Map::new();
    let mut candidate = Map::new();
    let mut parts: Vec<Value> = Vec::new();
    let mut role = None;
    for chunk in chunks.iter().filter_map(Value::as_object) {
        for (k, v) in chunk {
            if k != "candidates" {
                out.insert(k.clone(), v.clone());
            }
        }
        let Some(c) = chunk
            .get("candidates")
            .and_then(|c| c.get(0))
            .and_then(Value::as_object)
        else {
            continue;
        };
        for (k, v) in c {
            if k != "content" {
                candidate.insert(k.clone(), v.clone());
            }
        }
        if let Some(r) = c.get("content").and_then(|c| c.get("role")) {
            role = Some(r.clone());
        }
        for part in c
            .get("content")
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            push_part(&mut parts, part);
        }
    }
    if !parts.is_empty() || role.is_some() {
        let mut content = Map::new();
        content.insert("parts".to_owned(), Value::Array(parts));
        content.insert(
            "role".to_owned(),
            role.unwrap_or_else(|| Value::String("model".to_owned())),
        );
        candidate.insert("content".to_owned(), Value::Object(content));
    }
    if !candidate.is_empty() {
        candidate.entry("index").or_insert(json!(0));
        out.insert(
            "candidates".to_owned(),
            Value::Array(vec![Value::Object(candidate)]),
        );
    }
    Value::Object(out)
}

/// Append a streamed part: a plain text part continues the text part before it when both
/// are thoughts or both are not; a part with a `thoughtSignature` keeps it on the joined
/// part. Every other part (function calls, data) stays as sent.
fn push_part(parts: &mut Vec<Value>, part: &Value) {
    let only_text = part.as_object().is_some_and(|o| {
        o.keys()
            .all(|k| matches!(k.as_str(), "text" | "thought" | "thoughtSignature"))
    });
    if let (true, Some(piece), Some(last)) = (only_text, part["text"].as_str(), parts.last_mut()) {
        let joinable = last["text"].is_string()
            && last.get("thoughtSignature").is_none()
            && last["thought"] == part["thought"]
            && last.as_object().is_some_and(|o| {
                o.keys()
                    .all(|k| matches!(k.as_str(), "text" | "thought" | "thoughtSignature"))
            });
        if joinable {
            let joined = format!("{}{piece}", last["text"].as_str().unwrap_or_default());
            last["text"] = Value::String(joined);
            if let Some(signature) = part.get("thoughtSignature") {
                last["thoughtSignature"] = signature.clone();
            }
            return;
        }
    }
    parts.push(part.clone());
}

/// A stream for a whole response: one chunk per part, each carrying the response's
/// `modelVersion` and `responseId`; the last also carries `finishReason` and
/// `usageMetadata` (and any other candidate or top-level field). Parts are sent whole, not
/// split into deltas: Gemini clients often echo the streamed parts back as the next turn's
/// history, and whole parts keep that history the same as the non-streamed one.
pub fn synthesize(response: &Value) -> Vec<SseEvent> {
    let candidate = &response["candidates"][0];
    let parts = candidate["content"]["parts"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let role = candidate["content"]["role"].as_str().unwrap_or("model");
    let head = |chunk: &mut Map<String, Value>| {
        for field in ["modelVersion", "responseId"] {
            if let Some(v) = response.get(field) {
                chunk.insert(field.to_owned(), v.clone());
            }
        }
    };
    let mut events = Vec::with_capacity(parts.len() + 1);
    let (body, last) = match parts.split_last() {
        Some((last, body)) => (body, Some(last)),
        None => (parts, None),
    };
    for part in body {
        let mut chunk = Map::new();
        chunk.insert(
            "candidates".to_owned(),
            json!([{"content": {"role": role, "parts": [part]}, "index": 0}]),
        );
        head(&mut chunk);
        events.push(event(chunk));
    }
    // The last chunk is the response itself with only the last part.
    let mut final_chunk = response.as_object().cloned().unwrap_or_default();
    if let Some(Value::Array(candidates)) = final_chunk.get_mut("candidates") {
        if let Some(first) = candidates.first_mut().and_then(Value::as_object_mut) {
            let parts: Vec<&Value> = last.into_iter().collect();
            first.insert("content".to_owned(), json!({"role": role, "parts": parts}));
        }
    }
    events.push(event(final_chunk));
    events
}

fn event(chunk: Map<String, Value>) -> SseEvent {
    SseEvent {
        event: None,
        id: None,
        data: Value::Object(chunk).to_string(),
    }
}
