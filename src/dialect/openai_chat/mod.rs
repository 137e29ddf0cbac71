//! OpenAI chat completions (`POST …/chat/completions`): the request flags, the near-miss
//! envelope, the neutral model call, the conversation (`messages`), tool results rewritten
//! for mocks, and OpenAI's error shape. Streams (`chat.completion.chunk`) are assembled and
//! synthesized in [`stream`].

mod stream;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use super::contract::{Dialect, ErrorFault, Spoil, INJECTED};
use super::shared::{
    arguments, array, azure_deployment, broken_json, content_text, is_system, params, parts,
    result_message, rewrite_results, AssembleError,
};
use crate::neutral::{parse_arguments, Message, ModelCall, ToolCall, ToolDef, ToolResult, Usage};
use crate::sse::SseEvent;

pub(crate) use stream::{assemble, synthesize};

/// The route name, stored in cassettes and in [`ModelCall::route`].
const ROUTE: &str = "openai.chat";

/// The chat completions dialect.
pub(crate) struct OpenAiChat;

impl Dialect for OpenAiChat {
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

    fn synthesize(&self, response: &Value, request: &Value) -> Vec<SseEvent> {
        synthesize(response, wants_usage(request))
    }

    fn extract(&self, request: &Value, response: &Value) -> ModelCall {
        extract(request, response)
    }

    fn envelope(&self, request: &Value) -> Vec<(&'static str, String)> {
        envelope(request)
    }

    fn conversation<'a>(&self, request: &'a Value) -> Cow<'a, [Value]> {
        Cow::Borrowed(array(request, "messages"))
    }

    fn is_model_output(&self, item: &Value) -> bool {
        item["role"] == "assistant"
    }

    fn messages(&self, m: &Value, names: &HashMap<String, String>, out: &mut Vec<Message>) {
        let role = m["role"].as_str().unwrap_or("?");
        if is_system(role) {
            return;
        }
        if role == "tool" {
            out.push(result_message(&m["tool_call_id"], &m["content"], names));
            return;
        }
        parts(role, &m["content"], out);
        for c in array(m, "tool_calls") {
            out.push(Message::ToolCall {
                name: c["function"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                arguments: arguments(&c["function"]["arguments"]),
            });
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
        fault_error(fault)
    }

    /// A chunk whose body is an error object: the SDKs raise on it.
    fn stream_error(&self) -> SseEvent {
        let (_, body) = fault_error(ErrorFault::ServerError(500));
        SseEvent {
            event: None,
            id: None,
            data: body.to_string(),
        }
    }

    fn text_response(&self, _request: &Value, model: &str, text: &str) -> Value {
        json!({
            "id": "chatcmpl-agentproxy",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": null},
                "logprobs": null,
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        })
    }

    /// The call is `choices[0].message.tool_calls[nth]`; a length stop ends the choice with
    /// `finish_reason: "length"`.
    fn spoil_tool_call(&self, response: &mut Value, nth: usize, spoil: &Spoil) {
        let choice = &mut response["choices"][0];
        let Some(calls) = choice["message"]["tool_calls"].as_array_mut() else {
            return;
        };
        let Some(call) = calls.get_mut(nth) else {
            return;
        };
        spoil_function(&mut call["function"], spoil);
        if *spoil == Spoil::Length {
            calls.truncate(nth + 1);
            choice["finish_reason"] = json!("length");
        }
    }
}

/// Spoil a `{name, arguments}` function call whose arguments are JSON text (chat and
/// Responses alike).
pub(crate) fn spoil_function(function: &mut Value, spoil: &Spoil) {
    match spoil {
        Spoil::Malformed | Spoil::Length => {
            let text = function["arguments"].as_str().unwrap_or("{}");
            function["arguments"] = json!(broken_json(text));
        }
        Spoil::Arguments(args) => function["arguments"] = json!(args.to_string()),
        Spoil::Name(name) => function["name"] = json!(name),
    }
}

/// An error fault as OpenAI answers it (the Responses API alike): `429` with
/// `rate_limit_exceeded`, `503` when overloaded, a `server_error` otherwise.
pub(crate) fn fault_error(fault: ErrorFault) -> (u16, Value) {
    let (status, message, kind, code) = match fault {
        ErrorFault::RateLimit => (
            429,
            "Rate limit reached for requests",
            "requests",
            json!("rate_limit_exceeded"),
        ),
        ErrorFault::Overloaded => (
            503,
            "The engine is currently overloaded, please try again later",
            "server_error",
            Value::Null,
        ),
        ErrorFault::ServerError(status) => (
            status,
            "The server had an error while processing your request",
            "server_error",
            Value::Null,
        ),
    };
    let message = format!("{message} {INJECTED}");
    (
        status,
        json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
    )
}

/// An error body in OpenAI's shape (the Responses API uses the same).
pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": kind}})
}

/// Does this request ask for a final usage chunk? (`stream_options.include_usage == true`)
pub fn wants_usage(body: &Value) -> bool {
    body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true))
}

/// The envelope of a chat request for near-miss reports: model, message count, roles and
/// tool names, each rendered as one short string.
pub fn envelope(body: &Value) -> Vec<(&'static str, String)> {
    let messages = array(body, "messages");
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("?"))
        .collect();
    let tools: Vec<&str> = array(body, "tools")
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
    let messages = array(request, "messages");
    let system: Vec<String> = messages
        .iter()
        .filter(|m| matches!(m["role"].as_str(), Some("system" | "developer")))
        .map(|m| content_text(&m["content"]))
        .collect();
    let tools = array(request, "tools")
        .iter()
        .map(|t| ToolDef {
            name: t["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            parameters: t["function"]["parameters"].clone(),
            definition: t.clone(),
        })
        .map(std::sync::Arc::new)
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
    let tool_calls = array(message, "tool_calls").iter().map(tool_call).collect();
    let usage = &response["usage"];
    ModelCall {
        route: ROUTE.into(),
        model: request["model"].as_str().unwrap_or_default().to_owned(),
        system: (!system.is_empty()).then(|| system.join("\n\n")),
        tools,
        message_count: messages.len(),
        tool_results,
        tool_calls,
        reply: message["content"].as_str().map(str::to_owned),
        usage: match usage {
            Value::Object(_) => Usage {
                prompt: usage["prompt_tokens"].as_u64().unwrap_or(0),
                completion: usage["completion_tokens"].as_u64().unwrap_or(0),
                cache_read: usage["prompt_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0),
                ..Usage::default()
            },
            _ => Usage::UNKNOWN,
        },
        params: params(request, &NOT_PARAMS),
    }
}

/// Replace the content of `role: tool` messages by mocks (see
/// [`Dialect::rewrite_tool_results`]).
pub fn rewrite_tool_results(
    request: &mut Value,
    lookup: &dyn Fn(&str) -> Option<ToolCall>,
    mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
) -> usize {
    let Some(messages) = request.get_mut("messages").and_then(Value::as_array_mut) else {
        return 0;
    };
    let calls = calls_in_history(messages);
    let results = messages
        .iter_mut()
        .filter(|m| m["role"] == "tool")
        .map(|m| (m["tool_call_id"].as_str().unwrap_or_default().to_owned(), m));
    rewrite_results(results, &calls, lookup, mock, |m, text| {
        m["content"] = Value::String(text)
    })
}

/// The name of the history's tool call `id`, searched from the end: a result usually
/// answers the last assistant message, so a long history is not walked (nor its
/// arguments parsed) for every request.
fn call_name(messages: &[Value], id: &str) -> Option<String> {
    messages
        .iter()
        .rev()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| array(m, "tool_calls"))
        .find(|c| c["id"] == id)
        .and_then(|c| c["function"]["name"].as_str())
        .map(str::to_owned)
}

fn calls_in_history(messages: &[Value]) -> BTreeMap<String, ToolCall> {
    messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| array(m, "tool_calls"))
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

#[cfg(test)]
mod tests;
