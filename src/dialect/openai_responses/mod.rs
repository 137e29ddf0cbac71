//! The OpenAI Responses API (`POST …/responses`): the request flags, the near-miss
//! envelope, the neutral model call, the conversation (`input` items), tool results
//! rewritten for mocks; errors are OpenAI's shape. Streams of typed `response.*` events are
//! assembled and synthesized in [`stream`].

mod codex;
mod stream;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use super::contract::{Dialect, ErrorFault, Spoil, INJECTED};
use super::openai_chat::spoil_function;
use super::shared::{
    arguments, array, azure_deployment, content_text, is_system, nth_call, params, parts,
    result_message, rewrite_results, AssembleError,
};
use crate::neutral::{parse_arguments, Message, ModelCall, ToolCall, ToolDef, ToolResult, Usage};
use crate::sse::SseEvent;

pub(crate) use codex::CODEX;
pub(crate) use stream::{assemble, synthesize};

/// The route name, stored in cassettes and in [`ModelCall::route`].
const ROUTE: &str = "openai.responses";

/// The Responses dialect.
pub(crate) struct OpenAiResponses;

impl Dialect for OpenAiResponses {
    fn name(&self) -> &'static str {
        ROUTE
    }

    /// Azure OpenAI names the deployment in the path, not the body.
    fn key_scope(&self, path: &str) -> Option<String> {
        azure_deployment(path)
    }

    fn assemble(&self, events: &[SseEvent]) -> Result<Value, AssembleError> {
        assemble(events)
    }

    fn synthesize(&self, response: &Value, _request: &Value) -> Vec<SseEvent> {
        synthesize(response)
    }

    fn extract(&self, request: &Value, response: &Value) -> ModelCall {
        extract(request, response)
    }

    fn envelope(&self, request: &Value) -> Vec<(&'static str, String)> {
        envelope(request)
    }

    /// The `input` items; a bare string input is one user message.
    fn conversation<'a>(&self, request: &'a Value) -> Cow<'a, [Value]> {
        match &request["input"] {
            Value::Array(items) => Cow::Borrowed(items.as_slice()),
            Value::String(text) => Cow::Owned(vec![json!({"role": "user", "content": text})]),
            _ => Cow::Borrowed(&[]),
        }
    }

    fn is_model_output(&self, item: &Value) -> bool {
        is_model_output(item)
    }

    fn messages(&self, i: &Value, names: &HashMap<String, String>, out: &mut Vec<Message>) {
        match i["type"].as_str() {
            Some("message") | None if i.get("role").is_some() => {
                let role = i["role"].as_str().unwrap_or("?");
                if !is_system(role) {
                    parts(role, &i["content"], out);
                }
            }
            Some("function_call") => out.push(Message::ToolCall {
                name: i["name"].as_str().unwrap_or_default().to_owned(),
                arguments: arguments(&i["arguments"]),
            }),
            Some("function_call_output") => {
                out.push(result_message(&i["call_id"], &i["output"], names))
            }
            other => out.push(Message::Other {
                role: i["role"].as_str().unwrap_or("item").to_owned(),
                item: other.unwrap_or("?").to_owned(),
            }),
        }
    }

    fn rewrite_tool_results(
        &self,
        request: &mut Value,
        lookup: &dyn Fn(&str) -> Option<ToolCall>,
        mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
    ) -> usize {
        rewrite_tool_results(request, lookup, mock)
    }

    fn fault_error(&self, fault: ErrorFault) -> (u16, Value) {
        super::openai_chat::fault_error(fault)
    }

    /// The `error` event the Responses API sends when a stream fails.
    fn stream_error(&self) -> SseEvent {
        let data = json!({"type": "error", "code": "server_error",
            "message": format!("The server had an error while processing your request {INJECTED}"),
            "param": null, "sequence_number": 0});
        SseEvent {
            event: Some("error".into()),
            id: None,
            data: data.to_string(),
        }
    }

    fn text_response(&self, request: &Value, model: &str, text: &str) -> Value {
        json!({
            "id": "resp_agentproxy",
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "error": null,
            "incomplete_details": null,
            "instructions": request.get("instructions").cloned().unwrap_or(Value::Null),
            "metadata": {},
            "model": model,
            "output": [{
                "id": "msg_agentproxy",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]
            }],
            "parallel_tool_calls": true,
            "temperature": null,
            "tool_choice": "auto",
            "tools": [],
            "top_p": null,
            "usage": {
                "input_tokens": 0,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 0,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 0
            }
        })
    }

    /// The call is the `nth` `function_call` item of `output`; a length stop leaves the
    /// response `incomplete` for `max_output_tokens`, the call `incomplete`, and drops the
    /// items after it.
    fn spoil_tool_call(&self, response: &mut Value, nth: usize, spoil: &Spoil) {
        let Some(output) = response["output"].as_array_mut() else {
            return;
        };
        let Some(at) = nth_call(output, nth, |i| item_kind(i) == "function_call") else {
            return;
        };
        spoil_function(&mut output[at], spoil);
        if *spoil == Spoil::Length {
            output.truncate(at + 1);
            output[at]["status"] = json!("incomplete");
            response["status"] = json!("incomplete");
            response["incomplete_details"] = json!({"reason": "max_output_tokens"});
        }
    }
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
fn input_items(request: &Value) -> Cow<'_, [Value]> {
    OpenAiResponses.conversation(request)
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
    array(body, "tools").iter().map(tool_name).collect()
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
    let tools = array(request, "tools")
        .iter()
        .map(|t| ToolDef {
            name: tool_name(t).to_owned(),
            parameters: t["parameters"].clone(),
            definition: t.clone(),
        })
        .map(std::sync::Arc::new)
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
    let output = array(response, "output");
    let tool_calls = output
        .iter()
        .filter(|i| item_kind(i) == "function_call")
        .map(tool_call)
        .collect();
    let texts: Vec<&str> = output
        .iter()
        .filter(|i| item_kind(i) == "message")
        .flat_map(|i| array(i, "content"))
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
        usage: match usage {
            Value::Object(_) => Usage {
                prompt: usage["input_tokens"].as_u64().unwrap_or(0),
                completion: usage["output_tokens"].as_u64().unwrap_or(0),
                cache_read: usage["input_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0),
                ..Usage::default()
            },
            _ => Usage::UNKNOWN,
        },
        params: params(request, &NOT_PARAMS),
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
    let calls = calls_in(items);
    let results = items
        .iter_mut()
        .filter(|i| item_kind(i) == "function_call_output")
        .map(|i| (i["call_id"].as_str().unwrap_or_default().to_owned(), i));
    rewrite_results(results, &calls, lookup, mock, |i, text| {
        i["output"] = Value::String(text)
    })
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

#[cfg(test)]
mod tests;
