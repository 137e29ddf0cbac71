//! Responses streams: the typed `response.*` event sequence taken back to the non-streamed
//! `response` object, and one synthesized from it.
//!
//! Unlike chat completions, a Responses stream carries the whole final object in its last
//! event (`response.completed`), so assembling does not rebuild anything from deltas: it
//! takes that object, exactly as the upstream sent it. A stream that never reached a
//! terminal event is not assembled at all (see [`assemble`]).

use serde_json::{json, Map, Value};

use crate::dialect::{delta_pieces, AssembleError};
use crate::sse::SseEvent;

/// Take the final `response` object out of a recorded stream: the `response` of its
/// `response.completed` event, or of `response.incomplete` (a response cut short by
/// `max_output_tokens` or a content filter, which a non-streaming request receives as a
/// `200` with `status: "incomplete"`). Events after it are ignored; a trailing `[DONE]`
/// that some compatible servers add is skipped.
///
/// Fails when an `error` or `response.failed` event reports an upstream failure (a
/// non-streaming request would have received an error, not a response), and when the
/// stream ended before any terminal event — a stream that broke off. Nothing is rebuilt
/// from the deltas in that case on purpose: the result would claim a complete answer the
/// model never gave, and replay would serve it to non-streaming clients as a success. The
/// recording then keeps only its events, which replay serves as they were.
pub fn assemble(events: &[SseEvent]) -> Result<Value, AssembleError> {
    let mut last = None;
    let mut seen = 0usize;
    for (index, event) in events.iter().enumerate() {
        if event.data.trim() == "[DONE]" {
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
        // The type is in the data; the `event:` name repeats it and is the fallback.
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default()
            .to_owned();
        match kind.as_str() {
            "response.completed" | "response.incomplete" => {
                return match data["response"].take() {
                    response @ Value::Object(_) => Ok(response),
                    _ => Err(AssembleError::Shape {
                        index,
                        problem: "the terminal event's `response` is not an object",
                    }),
                };
            }
            "response.failed" => {
                let message = error_message(&data["response"]["error"])
                    .unwrap_or_else(|| "the response failed".to_owned());
                return Err(AssembleError::Upstream { index, message });
            }
            "error" => {
                // `{type: "error", code, message, param}`; some servers nest it in `error`.
                let message = error_message(&data)
                    .or_else(|| error_message(&data["error"]))
                    .unwrap_or_else(|| data.to_string());
                return Err(AssembleError::Upstream { index, message });
            }
            _ => last = Some(kind),
        }
    }
    match last {
        None => Err(AssembleError::Empty { what: "events" }),
        Some(last) => Err(AssembleError::Incomplete {
            events: seen,
            last,
            terminal: "response.completed",
        }),
    }
}

fn error_message(error: &Value) -> Option<String> {
    error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Numbers the events of a synthesized stream as they are written.
struct Stream {
    events: Vec<SseEvent>,
}

impl Stream {
    /// One event: `event: kind`, data `{type: kind, sequence_number, ...fields}`.
    fn emit(&mut self, kind: &str, fields: Value) {
        let mut data = match fields {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        data.insert("type".to_owned(), json!(kind));
        data.insert("sequence_number".to_owned(), json!(self.events.len()));
        self.events.push(SseEvent {
            event: Some(kind.to_owned()),
            id: None,
            data: Value::Object(data).to_string(),
        });
    }
}

/// The reverse of [`assemble`]: a stream synthesized from a `response` object, shaped like
/// what OpenAI sends, with `sequence_number`s from 0:
///
/// - `response.created` and `response.in_progress`, each with a snapshot of the response
///   (`status: "in_progress"`, no output, `usage` etc. `null`);
/// - per output item, `response.output_item.added` (the item with its text emptied and
///   `status: "in_progress"`), its deltas, then `response.output_item.done` with the item:
///   - messages: per content part `response.content_part.added`, then for `output_text`
///     the text as `response.output_text.delta` pieces, one
///     `response.output_text.annotation.added` per annotation and
///     `response.output_text.done`; for `refusal` the `response.refusal.delta` / `.done`
///     pair; then `response.content_part.done`;
///   - function calls: the arguments as `response.function_call_arguments.delta` pieces
///     and `response.function_call_arguments.done`;
///   - reasoning: per summary part `response.reasoning_summary_part.added`, its text as
///     `response.reasoning_summary_text.delta` pieces, `.text.done`, `.part.done`;
///   - other items (built-in tool calls) have no deltas;
/// - `response.completed` with the response as given (`response.incomplete` or
///   `response.failed` when that is its `status`).
///
/// Missing parts of a malformed response are left out; this never fails.
pub fn synthesize(response: &Value) -> Vec<SseEvent> {
    let mut snapshot = response.as_object().cloned().unwrap_or_default();
    snapshot.insert("status".to_owned(), json!("in_progress"));
    snapshot.insert("output".to_owned(), json!([]));
    for field in ["usage", "completed_at", "incomplete_details", "error"] {
        if let Some(value) = snapshot.get_mut(field) {
            *value = Value::Null;
        }
    }
    let snapshot = Value::Object(snapshot);
    let mut stream = Stream { events: Vec::new() };
    stream.emit("response.created", json!({"response": snapshot}));
    stream.emit("response.in_progress", json!({"response": snapshot}));

    let output = response.get("output").and_then(Value::as_array);
    for (output_index, item) in output.into_iter().flatten().enumerate() {
        output_item(&mut stream, output_index, item);
    }

    let terminal = match response.get("status").and_then(Value::as_str) {
        Some("incomplete") => "response.incomplete",
        Some("failed") => "response.failed",
        _ => "response.completed",
    };
    stream.emit(terminal, json!({"response": response}));
    stream.events
}

/// One output item's events: `added` (as it starts: in progress, empty), its parts'
/// deltas, `done` (as recorded).
fn output_item(stream: &mut Stream, output_index: usize, item: &Value) {
    let item_id = item.get("id").cloned().unwrap_or(Value::Null);
    let mut added = item.clone();
    if let Some(fields) = added.as_object_mut() {
        if fields.contains_key("status") {
            fields.insert("status".to_owned(), json!("in_progress"));
        }
    }
    match item.get("type").and_then(Value::as_str) {
        Some("message") => {
            added["content"] = json!([]);
            stream.emit(
                "response.output_item.added",
                json!({"output_index": output_index, "item": added}),
            );
            let parts = item.get("content").and_then(Value::as_array);
            for (content_index, part) in parts.into_iter().flatten().enumerate() {
                let at = json!({
                    "item_id": item_id,
                    "output_index": output_index,
                    "content_index": content_index,
                });
                message_part(stream, &at, part);
            }
        }
        Some("function_call") => {
            added["arguments"] = json!("");
            stream.emit(
                "response.output_item.added",
                json!({"output_index": output_index, "item": added}),
            );
            let arguments = item
                .get("arguments")
                .and_then(Value::as_str)
                .unwrap_or_default();
            for piece in delta_pieces(arguments) {
                stream.emit(
                    "response.function_call_arguments.delta",
                    json!({"item_id": item_id, "output_index": output_index, "delta": piece}),
                );
            }
            stream.emit(
                "response.function_call_arguments.done",
                json!({
                    "item_id": item_id,
                    "output_index": output_index,
                    "name": item.get("name"),
                    "arguments": arguments,
                }),
            );
        }
        Some("reasoning") => {
            if added.get("summary").is_some() {
                added["summary"] = json!([]);
            }
            stream.emit(
                "response.output_item.added",
                json!({"output_index": output_index, "item": added}),
            );
            let summary = item.get("summary").and_then(Value::as_array);
            for (summary_index, part) in summary.into_iter().flatten().enumerate() {
                let at = json!({
                    "item_id": item_id,
                    "output_index": output_index,
                    "summary_index": summary_index,
                });
                summary_part(stream, &at, part);
            }
        }
        _ => stream.emit(
            "response.output_item.added",
            json!({"output_index": output_index, "item": added}),
        ),
    }
    stream.emit(
        "response.output_item.done",
        json!({"output_index": output_index, "item": item}),
    );
}

/// `at` plus `fields`, for events that all carry the same position fields.
fn with(at: &Value, fields: Value) -> Value {
    let mut out = at.clone();
    if let (Some(out), Value::Object(fields)) = (out.as_object_mut(), fields) {
        out.extend(fields);
    }
    out
}

/// The events of one content part of a message item.
fn message_part(stream: &mut Stream, at: &Value, part: &Value) {
    match part.get("type").and_then(Value::as_str) {
        Some("output_text") => {
            let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
            let mut empty = part.clone();
            empty["text"] = json!("");
            for list in ["annotations", "logprobs"] {
                if empty.get(list).is_some() {
                    empty[list] = json!([]);
                }
            }
            stream.emit(
                "response.content_part.added",
                with(at, json!({"part": empty})),
            );
            for piece in delta_pieces(text) {
                stream.emit(
                    "response.output_text.delta",
                    with(at, json!({"delta": piece, "logprobs": []})),
                );
            }
            let annotations = part.get("annotations").and_then(Value::as_array);
            for (annotation_index, annotation) in annotations.into_iter().flatten().enumerate() {
                stream.emit(
                    "response.output_text.annotation.added",
                    with(
                        at,
                        json!({"annotation_index": annotation_index, "annotation": annotation}),
                    ),
                );
            }
            stream.emit(
                "response.output_text.done",
                with(at, json!({"text": text, "logprobs": []})),
            );
        }
        Some("refusal") => {
            let refusal = part
                .get("refusal")
                .and_then(Value::as_str)
                .unwrap_or_default();
            stream.emit(
                "response.content_part.added",
                with(at, json!({"part": {"type": "refusal", "refusal": ""}})),
            );
            for piece in delta_pieces(refusal) {
                stream.emit("response.refusal.delta", with(at, json!({"delta": piece})));
            }
            stream.emit(
                "response.refusal.done",
                with(at, json!({"refusal": refusal})),
            );
        }
        _ => stream.emit(
            "response.content_part.added",
            with(at, json!({"part": part})),
        ),
    }
    stream.emit(
        "response.content_part.done",
        with(at, json!({"part": part})),
    );
}

/// The events of one summary part of a reasoning item.
fn summary_part(stream: &mut Stream, at: &Value, part: &Value) {
    let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
    let mut empty = part.clone();
    if empty.get("text").is_some() {
        empty["text"] = json!("");
    }
    stream.emit(
        "response.reasoning_summary_part.added",
        with(at, json!({"part": empty})),
    );
    for piece in delta_pieces(text) {
        stream.emit(
            "response.reasoning_summary_text.delta",
            with(at, json!({"delta": piece})),
        );
    }
    stream.emit(
        "response.reasoning_summary_text.done",
        with(at, json!({"text": text})),
    );
    stream.emit(
        "response.reasoning_summary_part.done",
        with(at, json!({"part": part})),
    );
}
