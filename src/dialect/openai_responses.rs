//! OpenAI Responses API wire shapes (`POST …/responses`): converts a streamed sequence of
//! typed `response.*` events to the equivalent non-streamed `response` object and back,
//! reads the request flags, and maps an exchange onto the neutral trajectory.
//!
//! Unlike chat completions, a Responses stream carries the whole final object in its last
//! event (`response.completed`), so assembling does not rebuild anything from deltas: it
//! takes that object, exactly as the upstream sent it. A stream that never reached a
//! terminal event is not assembled at all (see [`assemble`]).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::delta_pieces;
use crate::neutral::{
    parse_arguments, result_text, ModelCall, ToolCall, ToolDef, ToolResult, Usage,
};
use crate::sse::SseEvent;

/// The route name, stored in cassettes and in [`ModelCall::route`].
const ROUTE: &str = "openai.responses";

/// Why a recorded stream could not be assembled into a `response` object.
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
    #[error(
        "failed to assemble the stream: it ended after {events} events without \
         `response.completed` (last event: `{last}`)"
    )]
    Incomplete { events: usize, last: String },
}

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
        None => Err(AssembleError::Empty),
        Some(last) => Err(AssembleError::Incomplete { events: seen, last }),
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
                    message_part(&mut stream, &at, part);
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
                    summary_part(&mut stream, &at, part);
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

    let terminal = match response.get("status").and_then(Value::as_str) {
        Some("incomplete") => "response.incomplete",
        Some("failed") => "response.failed",
        _ => "response.completed",
    };
    stream.emit(terminal, json!({"response": response}));
    stream.events
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

/// Is this request body asking for a stream? (`"stream": true`)
pub fn wants_stream(body: &Value) -> bool {
    body.get("stream") == Some(&Value::Bool(true))
}

/// The kind of an input or output item: its `type`, or `message` for the short
/// `{role, content}` form the API also accepts.
fn item_kind(item: &Value) -> &str {
    match item.get("type").and_then(Value::as_str) {
        Some(kind) => kind,
        None if item.get("role").is_some() => "message",
        None => "?",
    }
}

/// Did the model produce this item (so it is history the model has seen)? Assistant
/// messages, reasoning, and every kind of call (`function_call`, `web_search_call`, …).
fn is_model_output(item: &Value) -> bool {
    match item_kind(item) {
        "message" => item["role"] == "assistant",
        "reasoning" => true,
        kind => kind.ends_with("_call"),
    }
}

/// The input items of a request; a string input is one user message.
fn input_items(request: &Value) -> Vec<Value> {
    match &request["input"] {
        Value::Array(items) => items.clone(),
        Value::String(text) => vec![json!({"role": "user", "content": text})],
        _ => Vec::new(),
    }
}

/// The envelope of a Responses request for near-miss reports: model, item count, each item
/// as its role (messages) or type (`function_call`, `function_call_output`, `reasoning`, …),
/// and tool names.
pub fn envelope(body: &Value) -> Vec<(&'static str, String)> {
    let items = input_items(body);
    let kinds: Vec<&str> = items
        .iter()
        .map(|item| match item_kind(item) {
            "message" => item["role"].as_str().unwrap_or("?"),
            kind => kind,
        })
        .collect();
    vec![
        ("model", body["model"].to_string()),
        ("item count", items.len().to_string()),
        ("items", format!("[{}]", kinds.join(", "))),
        ("tools", format!("[{}]", tool_names(body).join(", "))),
    ]
}

/// Tool names: a function's `name`, or the `type` of a built-in tool (`web_search`, …).
fn tool_names(body: &Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(tool_name)
        .collect()
}

fn tool_name(tool: &Value) -> &str {
    tool["name"]
        .as_str()
        .or_else(|| tool["type"].as_str())
        .unwrap_or("?")
}

/// Request fields that are not parameters: the conversation (including the pointer to the
/// stored part of it, `previous_response_id` / `conversation`, whose ids change on every
/// re-record) and transport.
const NOT_PARAMS: [&str; 8] = [
    "model",
    "input",
    "instructions",
    "tools",
    "previous_response_id",
    "conversation",
    "stream",
    "stream_options",
];

/// The neutral model call of one Responses exchange (`response` is the non-streamed or
/// assembled `response` object; an error body gives a call with no reply and no calls).
///
/// - `system`: `instructions`, then the text of `system` / `developer` input messages.
/// - `tool_results`: the `function_call_output` items after the last item the model
///   produced (with `previous_response_id` the input usually holds only new items). Their
///   `name` comes from a `function_call` item in the same request, if there is one.
/// - `tool_calls`: the response's `function_call` items; a call's `id` is its `call_id`
///   (what `function_call_output` refers to), not the item id `fc_…`.
/// - `reply`: the text of all `output_text` parts, concatenated like the SDKs'
///   `output_text`; `None` when there is none.
/// - `usage`: `input_tokens` (cached ones included), `output_tokens`,
///   `input_tokens_details.cached_tokens`.
pub fn extract(request: &Value, response: &Value) -> ModelCall {
    let items = input_items(request);
    let mut system = Vec::new();
    match &request["instructions"] {
        Value::String(text) => system.push(text.clone()),
        Value::Array(parts) => system.extend(parts.iter().map(|p| content_text(&p["content"]))),
        _ => {}
    }
    system.extend(
        items
            .iter()
            .filter(|i| {
                item_kind(i) == "message"
                    && matches!(i["role"].as_str(), Some("system" | "developer"))
            })
            .map(|i| content_text(&i["content"])),
    );
    let tools = request["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|t| ToolDef {
            name: tool_name(t).to_owned(),
            parameters: t["parameters"].clone(),
        })
        .collect();
    let calls_by_id = calls_in(&items);
    let after_model_output = items.iter().rposition(is_model_output).map_or(0, |i| i + 1);
    let tool_results = items[after_model_output..]
        .iter()
        .filter(|i| item_kind(i) == "function_call_output")
        .map(|i| {
            let call_id = i["call_id"].as_str().unwrap_or_default().to_owned();
            ToolResult {
                name: calls_by_id.get(&call_id).map(|c| c.name.clone()),
                call_id,
                content: i["output"].clone(),
            }
        })
        .collect();
    let output = response["output"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let tool_calls = output
        .iter()
        .filter(|i| item_kind(i) == "function_call")
        .map(tool_call)
        .collect();
    let texts: Vec<&str> = output
        .iter()
        .filter(|i| item_kind(i) == "message")
        .flat_map(|i| {
            i["content"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
        })
        .filter(|part| part["type"] == "output_text")
        .filter_map(|part| part["text"].as_str())
        .collect();
    let usage = &response["usage"];
    ModelCall {
        route: ROUTE.into(),
        model: request["model"].as_str().unwrap_or_default().to_owned(),
        system: (!system.is_empty()).then(|| system.join("\n\n")),
        tools,
        message_count: items.len(),
        tool_results,
        tool_calls,
        reply: (!texts.is_empty()).then(|| texts.concat()),
        usage: Usage {
            prompt: usage["input_tokens"].as_u64().unwrap_or(0),
            completion: usage["output_tokens"].as_u64().unwrap_or(0),
            cached: usage["input_tokens_details"]["cached_tokens"]
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

/// Replace the `output` of `function_call_output` items by mocks. `mock(call, nth)` gets the
/// call a result answers and its 0-based occurrence among calls to that tool in the
/// request; `Some` replaces the output with a string. The call is looked up among the
/// request's `function_call` items first, else through `lookup` — the usual case with
/// `previous_response_id`, where the call lives only in the stored response the id points
/// to, which the proxy saw earlier in the session. Returns how many outputs were replaced.
pub fn rewrite_tool_results(
    request: &mut Value,
    lookup: &dyn Fn(&str) -> Option<ToolCall>,
    mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
) -> usize {
    let Some(items) = request.get_mut("input").and_then(Value::as_array_mut) else {
        return 0;
    };
    let calls_by_id = calls_in(items);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut replaced = 0;
    for item in items
        .iter_mut()
        .filter(|i| item_kind(i) == "function_call_output")
    {
        let id = item["call_id"].as_str().unwrap_or_default();
        let Some(call) = calls_by_id.get(id).cloned().or_else(|| lookup(id)) else {
            continue;
        };
        let nth = seen.entry(call.name.clone()).or_default();
        if let Some(v) = mock(&call, *nth) {
            item["output"] = Value::String(result_text(&v));
            replaced += 1;
        }
        *nth += 1;
    }
    replaced
}

/// The `function_call` items among `items`, by `call_id`.
fn calls_in(items: &[Value]) -> BTreeMap<String, ToolCall> {
    items
        .iter()
        .filter(|i| item_kind(i) == "function_call")
        .filter_map(|i| Some((i["call_id"].as_str()?.to_owned(), tool_call(i))))
        .collect()
}

fn tool_call(item: &Value) -> ToolCall {
    ToolCall {
        id: item["call_id"].as_str().unwrap_or_default().to_owned(),
        name: item["name"].as_str().unwrap_or_default().to_owned(),
        arguments: parse_arguments(item["arguments"].as_str().unwrap_or_default()),
    }
}

/// Message content as text: a string, or the `text` of its parts joined by newlines.
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

    /// One event as OpenAI frames it: `event:` name and the data, with `type` first.
    fn wire_event(data: &str) -> String {
        let kind: Value = serde_json::from_str(data).expect("test data is JSON");
        format!(
            "event: {}\ndata: {data}\n\n",
            kind["type"].as_str().expect("a type")
        )
    }

    fn parse_all(wire: &[u8]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        // Byte by byte, so multi-byte characters are split between network reads too.
        let mut events: Vec<SseEvent> = wire.chunks(1).flat_map(|b| parser.push(b)).collect();
        events.extend(parser.finish());
        events
    }

    /// What an SDK rebuilds from the deltas (as openai-python's `ResponseStreamState`
    /// does): items from `output_item.added`, parts from `content_part.added`, text,
    /// refusal, summary and argument deltas appended, annotations added; then each item's
    /// `status` from its `output_item.done`. Checks that every event names itself.
    fn accumulate(events: &[SseEvent]) -> Vec<Value> {
        let mut output: Vec<Value> = Vec::new();
        for e in events {
            let data: Value = serde_json::from_str(&e.data).expect("event is JSON");
            assert_eq!(
                e.event.as_deref(),
                data["type"].as_str(),
                "event name is the type"
            );
            let index = |field: &str| data[field].as_u64().map(|i| i as usize);
            let item = index("output_index");
            let append = |target: &mut Value, piece: &Value| {
                let mut s = target.as_str().expect("appending to a string").to_owned();
                s.push_str(piece.as_str().expect("a string delta"));
                *target = json!(s);
            };
            match data["type"].as_str().expect("a type") {
                "response.output_item.added" => output.push(data["item"].clone()),
                "response.content_part.added" => output[item.unwrap()]["content"]
                    .as_array_mut()
                    .expect("content")
                    .push(data["part"].clone()),
                "response.output_text.delta" => append(
                    &mut output[item.unwrap()]["content"][index("content_index").unwrap()]["text"],
                    &data["delta"],
                ),
                "response.refusal.delta" => append(
                    &mut output[item.unwrap()]["content"][index("content_index").unwrap()]
                        ["refusal"],
                    &data["delta"],
                ),
                "response.output_text.annotation.added" => output[item.unwrap()]["content"]
                    [index("content_index").unwrap()]["annotations"]
                    .as_array_mut()
                    .expect("annotations")
                    .push(data["annotation"].clone()),
                "response.function_call_arguments.delta" => {
                    append(&mut output[item.unwrap()]["arguments"], &data["delta"])
                }
                "response.reasoning_summary_part.added" => output[item.unwrap()]["summary"]
                    .as_array_mut()
                    .expect("summary")
                    .push(data["part"].clone()),
                "response.reasoning_summary_text.delta" => append(
                    &mut output[item.unwrap()]["summary"][index("summary_index").unwrap()]["text"],
                    &data["delta"],
                ),
                "response.output_item.done" => {
                    if let Some(status) = data["item"].get("status") {
                        output[item.unwrap()]["status"] = status.clone();
                    }
                }
                _ => {}
            }
        }
        output
    }

    /// The response object as the API returns it, with `status`, `output` and `usage`.
    fn response(status: &str, output: Value, usage: Value) -> Value {
        json!({
            "id": "resp_68b2f0c1a9d4819aa1e2",
            "object": "response",
            "created_at": 1756567890,
            "status": status,
            "background": false,
            "error": null,
            "incomplete_details": null,
            "instructions": "You are a travel agent. Be brief.",
            "max_output_tokens": null,
            "model": "gpt-4.1-2025-04-14",
            "output": output,
            "parallel_tool_calls": true,
            "previous_response_id": null,
            "reasoning": {"effort": null, "summary": null},
            "store": true,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [{"type": "function", "name": "get_weather", "description": "Current weather",
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                       "strict": true}],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage,
            "user": null,
            "metadata": {},
        })
    }

    fn usage() -> Value {
        json!({
            "input_tokens": 312,
            "input_tokens_details": {"cached_tokens": 256},
            "output_tokens": 41,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 353,
        })
    }

    fn message_item(text: &str) -> Value {
        json!({
            "id": "msg_68b2f0c2b1",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        })
    }

    fn call_item(id: &str, call_id: &str, arguments: &str) -> Value {
        json!({
            "id": id,
            "type": "function_call",
            "status": "completed",
            "call_id": call_id,
            "name": "get_weather",
            "arguments": arguments,
        })
    }

    /// A realistic stream: a short message, then two function calls whose arguments are
    /// split mid-key, between the characters of "Zürich" and inside a `\u00fc` escape.
    fn realistic_wire() -> (String, Value) {
        let text = "Checking both cities.";
        let args_1 = r#"{"city":"Zürich"}"#;
        let args_2 = r#"{"city":"Z\u00fcrich, CH"}"#;
        let output = json!([
            message_item(text),
            call_item("fc_68b2f0c3a1", "call_Zr1", args_1),
            call_item("fc_68b2f0c3b2", "call_Zr2", args_2),
        ]);
        let done = response("completed", output.clone(), usage());
        let start = response("in_progress", json!([]), Value::Null);
        let mut seq = 0;
        let mut wire = String::new();
        let mut ev = |rest: Value| {
            let mut data = rest.as_object().expect("object").clone();
            data.insert("sequence_number".into(), json!(seq));
            seq += 1;
            wire += &wire_event(&Value::Object(data).to_string());
        };
        ev(json!({"type": "response.created", "response": start}));
        ev(json!({"type": "response.in_progress", "response": start}));
        let msg = "msg_68b2f0c2b1";
        ev(
            json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": msg, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
        );
        ev(
            json!({"type": "response.content_part.added", "item_id": msg, "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}}),
        );
        for piece in ["Check", "ing both", " cities", "."] {
            // Recent streams pad deltas with a random `obfuscation` field.
            ev(
                json!({"type": "response.output_text.delta", "item_id": msg, "output_index": 0, "content_index": 0,
                "delta": piece, "logprobs": [], "obfuscation": "q7Zr"}),
            );
        }
        ev(
            json!({"type": "response.output_text.done", "item_id": msg, "output_index": 0, "content_index": 0,
            "text": text, "logprobs": []}),
        );
        ev(
            json!({"type": "response.content_part.done", "item_id": msg, "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": text, "annotations": [], "logprobs": []}}),
        );
        ev(
            json!({"type": "response.output_item.done", "output_index": 0, "item": message_item(text)}),
        );
        let calls = [
            (
                "fc_68b2f0c3a1",
                "call_Zr1",
                args_1,
                vec![r#"{"ci"#, r#"ty":"Z"#, "ü", r#"ri"#, r#"ch"}"#],
            ),
            (
                "fc_68b2f0c3b2",
                "call_Zr2",
                args_2,
                vec![r#"{"city":"Z\u"#, "00", r#"fcrich, "#, r#"CH"}"#],
            ),
        ];
        for (n, (id, call_id, args, pieces)) in calls.into_iter().enumerate() {
            let output_index = n + 1;
            ev(
                json!({"type": "response.output_item.added", "output_index": output_index,
                "item": {"id": id, "type": "function_call", "status": "in_progress", "arguments": "",
                         "call_id": call_id, "name": "get_weather"}}),
            );
            for piece in pieces {
                ev(
                    json!({"type": "response.function_call_arguments.delta", "item_id": id,
                    "output_index": output_index, "delta": piece, "obfuscation": "a1"}),
                );
            }
            ev(
                json!({"type": "response.function_call_arguments.done", "item_id": id,
                "output_index": output_index, "arguments": args}),
            );
            ev(
                json!({"type": "response.output_item.done", "output_index": output_index,
                "item": call_item(id, call_id, args)}),
            );
        }
        ev(json!({"type": "response.completed", "response": done}));
        (wire, done)
    }

    #[test]
    fn assembles_the_completed_response_of_a_realistic_stream() {
        let (wire, done) = realistic_wire();
        let events = parse_all(wire.as_bytes());
        assert_eq!(events.len(), 27);
        let assembled = assemble(&events).expect("stream assembles");
        assert_eq!(assembled, done);
        assert_eq!(
            assembled["output"][1]["arguments"],
            json!("{\"city\":\"Zürich\"}")
        );
        assert_eq!(
            assembled["output"][2]["arguments"],
            json!(r#"{"city":"Z\u00fcrich, CH"}"#)
        );
        // The deltas of the fixture add up to the same items (checks the fixture and the
        // accumulator the synthesis tests rely on).
        assert_eq!(Value::Array(accumulate(&events)), done["output"]);
    }

    #[test]
    fn an_incomplete_response_assembles_with_its_status() {
        let mut cut = response("incomplete", json!([message_item("Zürich is")]), usage());
        cut["incomplete_details"] = json!({"reason": "max_output_tokens"});
        cut["output"][0]["status"] = json!("incomplete");
        let events = synthesize(&cut);
        let last = events.last().expect("events");
        assert_eq!(last.event.as_deref(), Some("response.incomplete"));
        assert_eq!(assemble(&events).expect("assembles"), cut);
    }

    #[test]
    fn a_trailing_done_and_events_after_the_terminal_one_are_ignored() {
        let done = response("completed", json!([]), usage());
        let mut events = synthesize(&done);
        events.push(SseEvent {
            event: None,
            id: None,
            data: "[DONE]".into(),
        });
        assert_eq!(assemble(&events).expect("assembles"), done);
        events.insert(
            events.len() - 1,
            SseEvent {
                event: None,
                id: None,
                data: "{\"type\":\"x\"}".into(),
            },
        );
        assert_eq!(assemble(&events).expect("assembles"), done);
    }

    fn assemble_err(data: &[&str]) -> String {
        let events: Vec<SseEvent> = data
            .iter()
            .map(|d| SseEvent {
                event: None,
                id: None,
                data: (*d).to_owned(),
            })
            .collect();
        assemble(&events).expect_err("must fail").to_string()
    }

    #[test]
    fn errors_say_which_event_and_what() {
        let created =
            r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1"}}"#;
        let delta = r#"{"type":"response.output_text.delta","sequence_number":1,"delta":"Zü"}"#;
        assert_eq!(
            assemble_err(&[created, "{\"type\": tru"]),
            "failed to parse stream event 1 as JSON"
        );
        assert_eq!(
            assemble_err(&[created, "[1]"]),
            "failed to read stream event 1: expected a JSON object"
        );
        assert_eq!(
            assemble_err(&[created, delta]),
            "failed to assemble the stream: it ended after 2 events without `response.completed` \
             (last event: `response.output_text.delta`)"
        );
        assert_eq!(
            assemble_err(&[created, r#"{"type":"response.completed","response":null}"#]),
            "failed to read stream event 1: the terminal event's `response` is not an object"
        );
        assert_eq!(
            assemble_err(&[
                created,
                r#"{"type":"response.failed","sequence_number":1,"response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"The model failed to generate a response."}}}"#
            ]),
            "failed to assemble the stream: event 1 reports an upstream error: \
             The model failed to generate a response."
        );
        assert_eq!(
            assemble_err(&[
                r#"{"type":"error","sequence_number":0,"code":"rate_limit_exceeded","message":"Slow down.","param":null}"#
            ]),
            "failed to assemble the stream: event 0 reports an upstream error: Slow down."
        );
        assert_eq!(
            assemble_err(&[
                r#"{"type":"error","error":{"type":"server_error","message":"Nested."}}"#
            ]),
            "failed to assemble the stream: event 0 reports an upstream error: Nested."
        );
        assert_eq!(
            assemble_err(&[]),
            "failed to assemble the stream: it has no events"
        );
        assert_eq!(
            assemble_err(&["[DONE]"]),
            "failed to assemble the stream: it has no events"
        );
    }

    #[test]
    fn events_missing_their_fields_are_errors_not_panics() {
        assert_eq!(
            assemble_err(&[r#"{"type":"response.failed"}"#]),
            "failed to assemble the stream: event 0 reports an upstream error: the response failed"
        );
        assert_eq!(
            assemble_err(&[r#"{"type":"error"}"#]),
            "failed to assemble the stream: event 0 reports an upstream error: {\"type\":\"error\"}"
        );
        assert_eq!(
            assemble_err(&[r#"{"type":"response.completed"}"#]),
            "failed to read stream event 0: the terminal event's `response` is not an object"
        );
    }

    #[test]
    fn the_event_name_stands_in_for_a_missing_type() {
        let done = response("completed", json!([]), usage());
        let events = [SseEvent {
            event: Some("response.completed".into()),
            id: None,
            data: json!({"response": done}).to_string(),
        }];
        assert_eq!(assemble(&events).expect("assembles"), done);
    }

    fn text_response() -> Value {
        let mut message = message_item("Zürich: 18 °C, sunny.\nGenève: 21 °C.");
        message["content"][0]["annotations"] = json!([
            {"type": "url_citation", "start_index": 0, "end_index": 6, "url": "https://meteo.example/zh", "title": "Zürich"}
        ]);
        message["content"]
            .as_array_mut()
            .expect("content")
            .push(json!({"type": "refusal", "refusal": "I won't book flights."}));
        response("completed", json!([message]), usage())
    }

    fn tool_response() -> Value {
        let reasoning = json!({
            "id": "rs_68b2f0c0", "type": "reasoning", "encrypted_content": null,
            "summary": [{"type": "summary_text", "text": "**Weather lookup** Two cities, two calls."}],
        });
        let search = json!({"id": "ws_68b2f0c1", "type": "web_search_call", "status": "completed",
                            "action": {"type": "search", "query": "weather Zürich"}});
        response(
            "completed",
            json!([
                reasoning,
                search,
                call_item("fc_1", "call_1", r#"{"city":"Zürich","unit":"celsius"}"#),
                call_item("fc_2", "call_2", "{}"),
            ]),
            usage(),
        )
    }

    #[test]
    fn synthesize_then_assemble_round_trips_text_and_refusal() {
        let r = text_response();
        let events = synthesize(&r);
        assert_eq!(assemble(&events).expect("assembles"), r);
        assert_eq!(Value::Array(accumulate(&events)), r["output"]);
    }

    #[test]
    fn synthesize_then_assemble_round_trips_tool_calls_and_reasoning() {
        let r = tool_response();
        let events = synthesize(&r);
        assert_eq!(assemble(&events).expect("assembles"), r);
        assert_eq!(Value::Array(accumulate(&events)), r["output"]);
    }

    #[test]
    fn synthesized_events_look_like_openai_events() {
        let r = tool_response();
        let events = synthesize(&r);
        let data: Vec<Value> = events
            .iter()
            .map(|e| serde_json::from_str(&e.data).expect("JSON"))
            .collect();
        for (n, (e, d)) in events.iter().zip(&data).enumerate() {
            assert_eq!(e.id, None);
            assert_eq!(e.event.as_deref(), d["type"].as_str());
            assert_eq!(d["sequence_number"], json!(n));
        }
        assert!(events.iter().all(|e| e.data != "[DONE]"));
        for snapshot in &data[..2] {
            assert_eq!(snapshot["response"]["status"], "in_progress");
            assert_eq!(snapshot["response"]["output"], json!([]));
            assert_eq!(snapshot["response"]["usage"], Value::Null);
            assert_eq!(snapshot["response"]["id"], r["id"]);
        }
        assert_eq!(data[0]["type"], "response.created");
        assert_eq!(data[1]["type"], "response.in_progress");
        let added: Vec<&Value> = data
            .iter()
            .filter(|d| d["type"] == "response.output_item.added")
            .map(|d| &d["item"])
            .collect();
        assert_eq!(added.len(), 4);
        assert_eq!(added[2]["arguments"], "");
        assert_eq!(added[2]["status"], "in_progress");
        assert_eq!(added[0]["summary"], json!([]));
        let arg_deltas: Vec<&str> = data
            .iter()
            .filter(|d| {
                d["type"] == "response.function_call_arguments.delta" && d["item_id"] == "fc_1"
            })
            .map(|d| d["delta"].as_str().expect("string"))
            .collect();
        assert!(
            arg_deltas.len() > 1,
            "arguments are streamed in pieces: {arg_deltas:?}"
        );
        let wire: Vec<u8> = events.iter().flat_map(|e| encode(e).to_vec()).collect();
        insta::assert_snapshot!(String::from_utf8(wire).expect("UTF-8"));
    }

    #[test]
    fn a_failed_response_synthesizes_a_failed_stream() {
        let mut failed = response("failed", json!([]), Value::Null);
        failed["error"] = json!({"code": "server_error", "message": "boom"});
        let events = synthesize(&failed);
        assert_eq!(
            events.last().and_then(|e| e.event.as_deref()),
            Some("response.failed")
        );
        assert!(assemble(&events)
            .expect_err("failed")
            .to_string()
            .ends_with("boom"));
    }

    #[test]
    fn reads_the_request_flags() {
        assert!(wants_stream(&json!({"stream": true})));
        assert!(!wants_stream(&json!({"stream": false})));
        assert!(!wants_stream(&json!({"stream": "true"})));
        assert!(!wants_stream(&json!({})));
    }

    fn agent_request() -> Value {
        json!({
            "model": "gpt-4.1", "include": [], "temperature": 0.2, "tool_choice": "auto", "stream": true,
            "instructions": "You are a travel agent.",
            "input": [
                {"role": "developer", "content": [{"type": "input_text", "text": "Use metric units."}]},
                {"role": "user", "content": "Weather in Zürich and Genève?"},
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
                 "arguments": "{\"city\":\"Zürich\"}", "status": "completed"},
                {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "get_weather",
                 "arguments": "{\"city\":\"Genève\"}", "status": "completed"},
                {"type": "function_call_output", "call_id": "call_1", "output": "{\"temp_c\": 18, \"at\": \"12:01:07\"}"},
                {"type": "function_call_output", "call_id": "call_2", "output": "{\"temp_c\": 21, \"at\": \"12:01:08\"}"}
            ],
            "tools": [
                {"type": "function", "name": "get_weather", "description": "Current weather",
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true},
                {"type": "web_search_preview"}
            ]
        })
    }

    #[test]
    fn extract_reads_the_neutral_call() {
        let resp = response(
            "completed",
            json!([
                call_item("fc_3", "call_3", "{\"city\": \"Bern\"}"),
                message_item("Zürich 18 °C, "),
                {"type": "message", "role": "assistant", "id": "msg_2", "status": "completed",
                 "content": [{"type": "output_text", "text": "Genève 21 °C.", "annotations": []}]},
            ]),
            usage(),
        );
        let call = extract(&agent_request(), &resp);
        assert_eq!(call.route, "openai.responses");
        assert_eq!(call.model, "gpt-4.1");
        assert_eq!(
            call.system.as_deref(),
            Some("You are a travel agent.\n\nUse metric units.")
        );
        assert_eq!(call.message_count, 7);
        assert_eq!(
            call.tools
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>(),
            ["get_weather", "web_search_preview"]
        );
        assert_eq!(
            call.tools[0].parameters["properties"]["city"]["type"],
            "string"
        );
        assert_eq!(
            call.tool_results,
            vec![
                ToolResult {
                    call_id: "call_1".into(),
                    name: Some("get_weather".into()),
                    content: json!("{\"temp_c\": 18, \"at\": \"12:01:07\"}")
                },
                ToolResult {
                    call_id: "call_2".into(),
                    name: Some("get_weather".into()),
                    content: json!("{\"temp_c\": 21, \"at\": \"12:01:08\"}")
                },
            ]
        );
        assert_eq!(
            call.tool_calls,
            vec![ToolCall {
                id: "call_3".into(),
                name: "get_weather".into(),
                arguments: json!({"city": "Bern"})
            }]
        );
        assert_eq!(call.reply.as_deref(), Some("Zürich 18 °C, Genève 21 °C."));
        assert_eq!(
            call.usage,
            Usage {
                prompt: 312,
                completion: 41,
                cached: 256
            }
        );
        assert_eq!(
            call.params.keys().map(String::as_str).collect::<Vec<_>>(),
            ["include", "temperature", "tool_choice"]
        );
    }

    #[test]
    fn extract_with_previous_response_id_and_string_input() {
        // A follow-up that points at the stored response: only the new outputs are sent.
        let req = json!({"model": "gpt-4.1", "previous_response_id": "resp_1", "input": [
            {"type": "function_call_output", "call_id": "call_1", "output": "18"}]});
        let call = extract(&req, &json!({"error": {"message": "nope"}}));
        assert_eq!(call.tool_results.len(), 1);
        assert_eq!(call.tool_results[0].name, None);
        assert!(call.params.is_empty(), "{:?}", call.params);
        assert_eq!((call.reply, call.tool_calls.len()), (None, 0));

        let req = json!({"model": "gpt-4.1-mini", "input": "Weather in Zürich?"});
        let call = extract(
            &req,
            &response("completed", json!([message_item("Sunny.")]), usage()),
        );
        assert_eq!((call.message_count, call.system), (1, None));
        assert_eq!(call.reply.as_deref(), Some("Sunny."));
        assert!(call.tool_results.is_empty());
    }

    #[test]
    fn tool_results_before_the_last_model_output_are_history() {
        let mut req = agent_request();
        let input = req["input"].as_array_mut().expect("input");
        input.push(call_item("fc_9", "call_9", "{}"));
        input.push(json!({"type": "function_call_output", "call_id": "call_9", "output": "new"}));
        let call = extract(&req, &json!({}));
        assert_eq!(call.tool_results.len(), 1);
        assert_eq!(call.tool_results[0].content, "new");
    }

    #[test]
    fn envelope_lists_items_by_role_or_type() {
        assert_eq!(
            envelope(&agent_request()),
            vec![
                ("model", "\"gpt-4.1\"".to_owned()),
                ("item count", "7".to_owned()),
                (
                    "items",
                    "[developer, user, reasoning, function_call, function_call, function_call_output, function_call_output]"
                        .to_owned()
                ),
                ("tools", "[get_weather, web_search_preview]".to_owned()),
            ]
        );
        let short = envelope(&json!({"model": "m", "input": "hi"}));
        assert_eq!(short[1].1, "1");
        assert_eq!(short[2].1, "[user]");
    }

    #[test]
    fn rewrite_replaces_outputs_in_conversation_order() {
        let mut req = agent_request();
        let mut seen = vec![];
        let n = rewrite_tool_results(&mut req, &|_| None, &mut |call, nth| {
            seen.push((
                call.id.clone(),
                call.arguments["city"].as_str().expect("city").to_owned(),
                nth,
            ));
            Some(json!({"temp_c": 10 + nth}))
        });
        assert_eq!(n, 2);
        assert_eq!(
            seen,
            vec![
                ("call_1".to_owned(), "Zürich".to_owned(), 0),
                ("call_2".to_owned(), "Genève".to_owned(), 1)
            ]
        );
        assert_eq!(req["input"][5]["output"], json!("{\"temp_c\":10}"));
        assert_eq!(req["input"][6]["output"], json!("{\"temp_c\":11}"));
        assert_eq!(req["input"][5]["call_id"], "call_1");
    }

    #[test]
    fn rewrite_uses_the_session_lookup_across_previous_response_id() {
        let mut req = json!({"model": "gpt-4.1", "previous_response_id": "resp_1", "input": [
            {"type": "function_call_output", "call_id": "call_a", "output": "09:00:07"},
            {"type": "function_call_output", "call_id": "call_b", "output": "09:00:08"},
            {"type": "function_call_output", "call_id": "call_unknown", "output": "kept"}]});
        let lookup = |id: &str| {
            matches!(id, "call_a" | "call_b").then(|| ToolCall {
                id: id.into(),
                name: "clock".into(),
                arguments: json!({}),
            })
        };
        let n = rewrite_tool_results(&mut req, &lookup, &mut |call, nth| {
            (call.name == "clock").then(|| json!(["09:00", "09:05"][nth]))
        });
        assert_eq!(n, 2);
        assert_eq!(req["input"][0]["output"], "09:00");
        assert_eq!(req["input"][1]["output"], "09:05");
        assert_eq!(req["input"][2]["output"], "kept");

        let mut text = json!({"input": "just text"});
        assert_eq!(
            rewrite_tool_results(&mut text, &lookup, &mut |_, _| Some(json!(1))),
            0
        );
        assert_eq!(text, json!({"input": "just text"}));
    }
}
