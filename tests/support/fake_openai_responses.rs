//! The fake OpenAI upstream's Responses API (`POST /v1/responses`), served by the same
//! server as chat completions (`fake_openai.rs`), as the real API serves both under one
//! base URL.
//!
//! What the model says is the chat fake's script (`fake_openai_model.rs`): the request is
//! read as the equivalent chat conversation, the scripted answer is rewritten as Responses
//! output items. So it calls `get_weather` / `get_time` for a question that names a city,
//! describes `function_call_output`s once they come back, and echoes anything else.
//!
//! Like the real API, and unlike chat completions, the fake keeps state: every response it
//! creates (unless `store: false`) is remembered with the conversation it ends, so a
//! follow-up that names it in `previous_response_id` only sends the new items (typically
//! the `function_call_output`s). It checks what the real API checks there: an unknown
//! `previous_response_id` is a 400 `previous_response_not_found`; a `function_call_output`
//! whose `call_id` is not a call in the conversation is a 400; so is a follow-up that leaves
//! a call of the previous response unanswered. A proxy that served a follow-up the wrong
//! recorded id, or mangled one, fails against this fake.
//!
//! Volatile values are fresh on every call: `resp_…`, `msg_…`, `fc_…` item ids, `call_…`
//! call ids, `created_at`, and in streams the `obfuscation` padding of every delta.
//! A stream is the typed event sequence the real API sends (`response.created`,
//! `response.in_progress`, per item `output_item.added`, its deltas split mid-token,
//! `.done` events, `output_item.done`, then `response.completed`), each event named by an
//! `event:` line and numbered by `sequence_number`, with no `[DONE]`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hyper::StatusCode;
use serde_json::{json, Map, Value};

use super::model::{chat, fragments, random_token, Answer};

/// Responses created so far, by id: the whole conversation each one ends (its context
/// items, its input items, then its output items), for `previous_response_id`.
#[derive(Default)]
pub(super) struct Store {
    conversations: Mutex<HashMap<String, Vec<Value>>>,
}

impl Store {
    fn get(&self, id: &str) -> Option<Vec<Value>> {
        self.lock().get(id).cloned()
    }

    fn put(&self, id: String, conversation: Vec<Value>) {
        self.lock().insert(id, conversation);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Value>>> {
        self.conversations
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn invalid(message: &str, param: &str, code: Option<&str>) -> Answer {
    Answer::error(
        StatusCode::BAD_REQUEST,
        message,
        "invalid_request_error",
        Some(param),
        code,
    )
}

/// `POST /v1/responses`.
pub(super) fn create(store: &Store, request: &Value) -> Answer {
    let Some(model) = request.get("model").and_then(Value::as_str) else {
        return invalid(
            "Missing required parameter: 'model'.",
            "model",
            Some("missing_required_parameter"),
        );
    };
    let input = match &request["input"] {
        Value::String(text) => vec![json!({"role": "user", "content": text})],
        Value::Array(items) => items.clone(),
        Value::Null => {
            return invalid(
                "Missing required parameter: 'input'.",
                "input",
                Some("missing_required_parameter"),
            )
        }
        _ => {
            return invalid(
                "Invalid type for 'input': expected a string or an array of input items.",
                "input",
                Some("invalid_type"),
            )
        }
    };
    let previous = request["previous_response_id"].as_str();
    let mut conversation = match previous {
        None => Vec::new(),
        Some(id) => match store.get(id) {
            Some(items) => items,
            None => {
                return invalid(
                    &format!("Previous response with id '{id}' not found."),
                    "previous_response_id",
                    Some("previous_response_not_found"),
                )
            }
        },
    };
    if let Some(problem) = unanswered_or_unknown_calls(&conversation, &input) {
        return invalid(&problem, "input", None);
    }
    conversation.extend(input);
    let (output, usage) = match request["generate"] == false {
        // A warm-up (the WebSocket mode's `"generate": false`): the input is kept for a
        // follow-up's `previous_response_id`, and nothing is generated.
        true => (
            Vec::new(),
            json!({"prompt_tokens": 0, "completion_tokens": 0}),
        ),
        false => match generate(request, model, &conversation) {
            Ok(generated) => generated,
            Err(answer) => return answer,
        },
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let id = format!("resp_{}", random_token(48));
    let response = response_object(&id, now, request, &output, &usage);
    if request["store"] != false {
        conversation.extend(output.iter().cloned());
        store.put(id, conversation);
    }
    if request["stream"] == true {
        Answer::Stream(stream_events(&response))
    } else {
        Answer::Json {
            status: StatusCode::OK,
            body: response,
            headers: Vec::new(),
        }
    }
}

/// The model's output items for `conversation` and their usage, or the chat fake's error.
fn generate(
    request: &Value,
    model: &str,
    conversation: &[Value],
) -> Result<(Vec<Value>, Value), Answer> {
    if let Some(output) = code_mode(conversation) {
        return Ok((
            vec![output],
            json!({"prompt_tokens": 9, "completion_tokens": 9}),
        ));
    }
    let mut chat_request = json!({
        "model": model,
        "messages": chat_messages(request, conversation),
        "tools": chat_tools(request),
    });
    for passed in ["tool_choice", "parallel_tool_calls"] {
        if let Some(value) = request.get(passed) {
            chat_request[passed] = value.clone();
        }
    }
    let answer = chat(&chat_request);
    let Answer::Json {
        status: StatusCode::OK,
        body: completion,
        ..
    } = answer
    else {
        // The chat fake's own validation failed: already an error in OpenAI's shape.
        return Err(answer);
    };
    let output = output_items(&completion["choices"][0]["message"]);
    Ok((output, completion["usage"].clone()))
}

/// The real API refuses a `function_call_output` that answers no call of the conversation,
/// and a follow-up that leaves a call of the conversation without an output.
fn unanswered_or_unknown_calls(context: &[Value], input: &[Value]) -> Option<String> {
    let calls = |items: &[Value]| -> Vec<String> {
        items
            .iter()
            .filter(|i| i["type"] == "function_call")
            .filter_map(|i| i["call_id"].as_str().map(str::to_owned))
            .collect()
    };
    let outputs = |items: &[Value]| -> Vec<String> {
        items
            .iter()
            .filter(|i| i["type"] == "function_call_output")
            .filter_map(|i| i["call_id"].as_str().map(str::to_owned))
            .collect()
    };
    let known: Vec<String> = calls(context).into_iter().chain(calls(input)).collect();
    if let Some(id) = outputs(input).into_iter().find(|id| !known.contains(id)) {
        return Some(format!(
            "No tool call found for function call output with call_id {id}."
        ));
    }
    let answered: Vec<String> = outputs(context).into_iter().chain(outputs(input)).collect();
    calls(context)
        .into_iter()
        .find(|id| !answered.contains(id))
        .map(|id| format!("No tool output found for function call {id}."))
}

/// The conversation as chat messages, for the chat script: `instructions` as the system
/// message, message items by role (`developer` as `system`), a `function_call` as an
/// assistant tool call, a `function_call_output` as a `tool` message. Other items
/// (reasoning, built-in tool calls) say nothing the script reads.
fn chat_messages(request: &Value, conversation: &[Value]) -> Vec<Value> {
    let mut messages = Vec::new();
    if let Some(instructions) = request["instructions"].as_str() {
        messages.push(json!({"role": "system", "content": instructions}));
    }
    for item in conversation {
        let kind = item["type"]
            .as_str()
            .unwrap_or(if item.get("role").is_some() {
                "message"
            } else {
                ""
            });
        match kind {
            "message" => {
                let role = match item["role"].as_str() {
                    Some("developer") => "system",
                    Some(role) => role,
                    None => continue,
                };
                messages.push(json!({"role": role, "content": item["content"]}));
            }
            "function_call" => messages.push(json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [{"id": item["call_id"], "type": "function",
                                "function": {"name": item["name"], "arguments": item["arguments"]}}],
            })),
            "function_call_output" => messages.push(json!({
                "role": "tool",
                "tool_call_id": item["call_id"],
                "content": item["output"],
            })),
            _ => {}
        }
    }
    messages
}

/// Codex CLI's code mode: a request that declares the custom tool `exec` (JavaScript that
/// calls Codex's tools) among the tools of an input item of the conversation. Asked to
/// "Run `CMD`", the model
/// runs it through `exec_command` and hands the result back whole (`text(r)`); given the
/// result, it says the last line the command printed.
fn code_mode(conversation: &[Value]) -> Option<Value> {
    let nested = conversation
        .iter()
        .filter_map(|i| i["tools"].as_array())
        .flatten();
    let mut tools = nested.filter_map(|t| t["tools"].as_array()).flatten();
    if !tools.any(|t| t["type"] == "custom" && t["name"] == "exec") {
        return None;
    }
    let last = conversation.last()?;
    if last["type"] == "custom_tool_call_output" {
        // The script's report, then what `text(r)` appended: the command's result as JSON.
        let parts = last["output"].as_array().into_iter().flatten();
        let result = (parts.filter_map(|p| p["text"].as_str()))
            .find_map(|t| serde_json::from_str::<Value>(t).ok())?;
        let printed = result["output"].as_str().unwrap_or_default();
        let text = format!(
            "The command printed: {}",
            printed.lines().last().unwrap_or_default()
        );
        return Some(json!({
            "id": format!("msg_{}", random_token(48)), "type": "message", "status": "completed",
            "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}],
            "role": "assistant",
        }));
    }
    let asked = (last["content"].as_array().into_iter().flatten())
        .filter_map(|p| p["text"].as_str())
        .find_map(|t| {
            t.strip_prefix("Run `")?
                .split_once('`')
                .map(|(cmd, _)| cmd.to_owned())
        })?;
    let input = format!(
        "const r = await tools.exec_command({{cmd: {}}});\ntext(r);",
        Value::from(asked)
    );
    Some(json!({
        "id": format!("ctc_{}", random_token(48)), "type": "custom_tool_call",
        "status": "completed", "call_id": format!("call_{}", random_token(24)),
        "name": "exec", "input": input,
    }))
}

/// Responses function tools (`{type, name, parameters}`) in the chat shape
/// (`{type, function: {name, parameters}}`); built-in tools are left out.
fn chat_tools(request: &Value) -> Value {
    let tools = request["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    tools
        .iter()
        .filter(|t| t["type"] == "function")
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t["name"], "description": t["description"], "parameters": t["parameters"]}})
        })
        .collect()
}

/// The scripted chat answer as Responses output items: one `function_call` per tool call
/// (the chat call id becomes its `call_id`, with a fresh `fc_…` item id), or one assistant
/// `message` with an `output_text` part.
fn output_items(message: &Value) -> Vec<Value> {
    match message["tool_calls"].as_array() {
        Some(calls) if !calls.is_empty() => calls
            .iter()
            .map(|call| {
                json!({
                    "id": format!("fc_{}", random_token(48)),
                    "type": "function_call",
                    "status": "completed",
                    "arguments": call["function"]["arguments"],
                    "call_id": call["id"],
                    "name": call["function"]["name"],
                })
            })
            .collect(),
        _ => vec![json!({
            "id": format!("msg_{}", random_token(48)),
            "type": "message",
            "status": "completed",
            "content": [{"type": "output_text", "annotations": [], "logprobs": [],
                         "text": message["content"].as_str().unwrap_or_default()}],
            "role": "assistant",
        })],
    }
}

/// The `response` object, with the fields the real API returns for a completed response.
fn response_object(id: &str, now: u64, request: &Value, output: &[Value], usage: &Value) -> Value {
    let input_tokens = usage["prompt_tokens"].as_u64().unwrap_or(0);
    let output_tokens = usage["completion_tokens"].as_u64().unwrap_or(0);
    let tools: Vec<Value> = request["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|tool| {
            let mut tool = tool.clone();
            if let Some(fields) = tool.as_object_mut() {
                fields.entry("description").or_insert(Value::Null);
                if fields.get("type") == Some(&json!("function")) {
                    fields.entry("strict").or_insert(json!(true));
                }
            }
            tool
        })
        .collect();
    let or = |field: &str, default: Value| match request.get(field) {
        Some(value) if !value.is_null() => value.clone(),
        _ => default,
    };
    json!({
        "id": id,
        "object": "response",
        "created_at": now,
        "status": "completed",
        "background": false,
        "billing": {"payer": "developer"},
        "completed_at": now,
        "error": null,
        "incomplete_details": null,
        "instructions": or("instructions", Value::Null),
        "max_output_tokens": or("max_output_tokens", Value::Null),
        "max_tool_calls": null,
        "model": request["model"],
        "output": output,
        "parallel_tool_calls": or("parallel_tool_calls", json!(true)),
        "previous_response_id": or("previous_response_id", Value::Null),
        "prompt_cache_key": null,
        "prompt_cache_retention": null,
        "reasoning": {"effort": null, "summary": null},
        "safety_identifier": null,
        "service_tier": "default",
        "store": or("store", json!(true)),
        "temperature": or("temperature", json!(1.0)),
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": or("tool_choice", json!("auto")),
        "tools": tools,
        "top_logprobs": 0,
        "top_p": or("top_p", json!(1.0)),
        "truncation": "disabled",
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
        "user": null,
        "metadata": or("metadata", json!({})),
    })
}

/// Writes numbered, named events.
struct Events {
    wire: Vec<Bytes>,
}

impl Events {
    fn emit(&mut self, kind: &str, fields: Value) {
        let mut data = match fields {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        data.insert("type".into(), json!(kind));
        data.insert("sequence_number".into(), json!(self.wire.len()));
        self.wire.push(Bytes::from(format!(
            "event: {kind}\ndata: {}\n\n",
            Value::Object(data)
        )));
    }
}

/// Random padding the real API adds to every delta event (`stream_options.include_obfuscation`,
/// on by default) so that event sizes do not leak token lengths: volatile, like an id.
fn obfuscation(delta: &str) -> String {
    random_token(16usize.saturating_sub(delta.len()).max(2))
}

/// The events of a streamed response, ending with `response.completed` carrying `response`.
fn stream_events(response: &Value) -> Vec<Bytes> {
    let mut events = Events { wire: Vec::new() };
    let mut snapshot = response.clone();
    snapshot["status"] = json!("in_progress");
    snapshot["output"] = json!([]);
    for field in ["usage", "completed_at"] {
        snapshot[field] = Value::Null;
    }
    events.emit("response.created", json!({"response": snapshot}));
    events.emit("response.in_progress", json!({"response": snapshot}));
    let output = response["output"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (output_index, item) in output.iter().enumerate() {
        let item_id = &item["id"];
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        // A call streams its one text field: a custom tool's `input`, a function's
        // `arguments`.
        let call = match item["type"].as_str() {
            Some("custom_tool_call") => Some(("input", "response.custom_tool_call_input")),
            Some("function_call") => Some(("arguments", "response.function_call_arguments")),
            _ => None,
        };
        if let Some((field, prefix)) = call {
            added[field] = json!("");
            events.emit(
                "response.output_item.added",
                json!({"output_index": output_index, "item": added}),
            );
            let text = item[field].as_str().unwrap_or_default();
            for piece in fragments(text) {
                events.emit(
                    &format!("{prefix}.delta"),
                    json!({"item_id": item_id, "output_index": output_index, "delta": piece,
                           "obfuscation": obfuscation(piece)}),
                );
            }
            let mut done = json!({"item_id": item_id, "output_index": output_index});
            done[field] = json!(text);
            events.emit(&format!("{prefix}.done"), done);
        } else {
            added["content"] = json!([]);
            events.emit(
                "response.output_item.added",
                json!({"output_index": output_index, "item": added}),
            );
            let part = &item["content"][0];
            let text = part["text"].as_str().unwrap_or_default();
            let at = |fields: Value| {
                let mut event =
                    json!({"item_id": item_id, "output_index": output_index, "content_index": 0});
                if let (Some(event), Value::Object(fields)) = (event.as_object_mut(), fields) {
                    event.extend(fields);
                }
                event
            };
            let mut empty = part.clone();
            empty["text"] = json!("");
            events.emit("response.content_part.added", at(json!({"part": empty})));
            for piece in fragments(text) {
                events.emit(
                    "response.output_text.delta",
                    at(json!({"delta": piece, "logprobs": [], "obfuscation": obfuscation(piece)})),
                );
            }
            events.emit(
                "response.output_text.done",
                at(json!({"text": text, "logprobs": []})),
            );
            events.emit("response.content_part.done", at(json!({"part": part})));
        }
        events.emit(
            "response.output_item.done",
            json!({"output_index": output_index, "item": item}),
        );
    }
    events.emit("response.completed", json!({"response": response}));
    events.wire
}
