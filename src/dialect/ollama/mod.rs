//! Ollama's native chat API (`POST /api/chat`): the request flags (a stream unless
//! `"stream": false`), the near-miss envelope, the neutral model call, the conversation
//! (`messages`), tool results rewritten for mocks, and Ollama's error shape
//! (`{"error": "…"}`). Streams are newline-delimited JSON chunks, assembled and
//! synthesized in [`stream`]. The completion API (`POST /api/generate`) is [`generate`];
//! the rest of `/api/…` (embed, tags, show) is plain HTTP.
//!
//! Ollama's tool calls carry object arguments and usually no id (the Python client drops
//! the one newer servers send), and a result (`role: tool`) names its tool at best. So a
//! result answers a call by position: the k-th `tool` message after an assistant message
//! answers that message's k-th call.

mod generate;
mod stream;

pub(crate) use generate::Generate;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use super::contract::{Dialect, ErrorFault, Spoil, INJECTED};
use super::shared::{
    arguments, array, broken_json, content_text, cut_object, is_system, params, rewrite_results,
    text, AssembleError,
};
use crate::neutral::{Message, ModelCall, ToolCall, ToolDef, ToolResult, Usage};
use crate::sse::{Framing, SseEvent};

/// The route name, stored in cassettes and in [`ModelCall::route`].
const ROUTE: &str = "ollama.chat";

/// The Ollama chat dialect.
pub(crate) struct Ollama;

impl Dialect for Ollama {
    fn name(&self) -> &'static str {
        ROUTE
    }

    fn wants_stream(&self, _path: &str, request: &Value) -> bool {
        streams(request)
    }

    fn framing(&self) -> Framing {
        Framing::Ndjson
    }

    fn assemble(&self, events: &[SseEvent]) -> Result<Value, AssembleError> {
        stream::assemble(events)
    }

    fn synthesize(&self, response: &Value, _request: &Value) -> Vec<SseEvent> {
        stream::synthesize(response)
    }

    fn extract(&self, request: &Value, response: &Value) -> ModelCall {
        extract(request, response)
    }

    fn envelope(&self, request: &Value) -> Vec<(&'static str, String)> {
        super::openai_chat::envelope(request)
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
            let call_id = m["tool_call_id"].as_str().unwrap_or_default().to_owned();
            out.push(Message::ToolResult {
                name: (m["tool_name"].as_str().map(str::to_owned))
                    .or_else(|| names.get(&call_id).cloned()),
                call_id,
                content: m["content"].clone(),
            });
            return;
        }
        text(role, &content_text(&m["content"]), out);
        for c in array(m, "tool_calls") {
            out.push(Message::ToolCall {
                name: name_of(c),
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

    fn text_response(&self, _request: &Value, model: &str, text: &str) -> Value {
        json!({
            "model": model,
            "created_at": "1970-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": text},
            "done": true,
            "done_reason": "stop",
        })
    }

    fn fault_error(&self, fault: ErrorFault) -> (u16, Value) {
        fault_error(fault)
    }

    fn stream_error(&self) -> SseEvent {
        stream_error()
    }

    /// The call is `message.tool_calls[nth]`, its arguments an object; a length stop ends
    /// the answer with `done_reason: "length"`.
    fn spoil_tool_call(&self, response: &mut Value, nth: usize, spoil: &Spoil) {
        let calls = (response.get_mut("message"))
            .and_then(|m| m.get_mut("tool_calls"))
            .and_then(Value::as_array_mut);
        let Some(calls) = calls else {
            return;
        };
        let Some(function) = calls.get_mut(nth).map(|c| &mut c["function"]) else {
            return;
        };
        match spoil {
            Spoil::Malformed => {
                let text = function["arguments"].to_string();
                function["arguments"] = json!(broken_json(&text));
            }
            Spoil::Length => function["arguments"] = cut_object(&function["arguments"]),
            Spoil::Arguments(args) => function["arguments"] = args.clone(),
            Spoil::Name(name) => function["name"] = json!(name),
        }
        if *spoil == Spoil::Length {
            calls.truncate(nth + 1);
            response["done_reason"] = json!("length");
        }
    }
}

/// Ollama streams unless told not to (`"stream": false`).
fn streams(request: &Value) -> bool {
    request.get("stream") != Some(&Value::Bool(false))
}

/// An error fault as Ollama's server answers one.
fn fault_error(fault: ErrorFault) -> (u16, Value) {
    let (status, message) = match fault {
        ErrorFault::RateLimit => (429, "too many requests"),
        ErrorFault::Overloaded => (503, "server busy, please try again"),
        ErrorFault::ServerError(status) => (status, "an internal server error occurred"),
    };
    (status, error_body(&format!("{message} {INJECTED}")))
}

/// A line whose object is an error: Ollama's server ends a broken stream with one, and the
/// clients raise on it.
fn stream_error() -> SseEvent {
    SseEvent {
        event: None,
        id: None,
        data: error_body(&format!(
            "an error was encountered while running the model {INJECTED}"
        ))
        .to_string(),
    }
}

/// An error as Ollama's server answers one: `{"error": "…"}`.
pub fn error_body(message: &str) -> Value {
    json!({ "error": message })
}

/// Request fields that are not options of the call: the conversation and transport.
const NOT_PARAMS: [&str; 4] = ["model", "messages", "tools", "stream"];

/// The neutral model call of one chat exchange (`response` is whole: non-streamed or
/// assembled; an error body gives a call with no reply and no tool calls).
pub fn extract(request: &Value, response: &Value) -> ModelCall {
    let messages = array(request, "messages");
    let system: Vec<String> = messages
        .iter()
        .filter(|m| is_system(m["role"].as_str().unwrap_or_default()))
        .map(|m| content_text(&m["content"]))
        .collect();
    let tools = array(request, "tools")
        .iter()
        .map(|t| ToolDef {
            name: name_of(t),
            parameters: t["function"]["parameters"].clone(),
            definition: t.clone(),
        })
        .map(std::sync::Arc::new)
        .collect();
    let last_assistant = messages.iter().rposition(|m| m["role"] == "assistant");
    let calls = last_assistant.map_or(&[][..], |a| array(&messages[a], "tool_calls"));
    let tool_results = messages[last_assistant.map_or(0, |a| a + 1)..]
        .iter()
        .filter(|m| m["role"] == "tool")
        .enumerate()
        .map(|(k, m)| ToolResult {
            call_id: pairing_key(last_assistant.unwrap_or(0), k),
            name: (m["tool_name"].as_str().map(str::to_owned))
                .or_else(|| calls.get(k).map(name_of)),
            content: m["content"].clone(),
        })
        .collect();
    let message = &response["message"];
    let tool_calls: Vec<ToolCall> = array(message, "tool_calls")
        .iter()
        .enumerate()
        .map(|(k, c)| tool_call(c, messages.len(), k))
        .collect();
    let reply = (message["content"].as_str())
        .filter(|t| !t.is_empty() || tool_calls.is_empty())
        .map(str::to_owned);
    let count = |field: &str| response[field].as_u64();
    let usage = match (count("prompt_eval_count"), count("eval_count")) {
        (None, None) => Usage::UNKNOWN,
        (prompt, completion) => Usage {
            prompt: prompt.unwrap_or(0),
            completion: completion.unwrap_or(0),
            ..Usage::default()
        },
    };
    ModelCall {
        route: ROUTE.into(),
        model: request["model"].as_str().unwrap_or_default().to_owned(),
        system: (!system.is_empty()).then(|| system.join("\n\n")),
        tools,
        message_count: messages.len(),
        tool_results,
        tool_calls,
        reply,
        usage,
        params: params(request, &NOT_PARAMS),
    }
}

/// Replace the content of `role: tool` messages by mocks (see
/// [`Dialect::rewrite_tool_results`]), each paired with its call by position.
pub fn rewrite_tool_results(
    request: &mut Value,
    lookup: &dyn Fn(&str) -> Option<ToolCall>,
    mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
) -> usize {
    let Some(messages) = request.get_mut("messages").and_then(Value::as_array_mut) else {
        return 0;
    };
    let mut calls: BTreeMap<String, ToolCall> = BTreeMap::new();
    let mut results: Vec<(String, &mut Value)> = Vec::new();
    let (mut assistant, mut k) = (0, 0);
    for (i, m) in messages.iter_mut().enumerate() {
        if m["role"] == "assistant" {
            (assistant, k) = (i, 0);
            for (n, c) in array(m, "tool_calls").iter().enumerate() {
                calls.insert(pairing_key(i, n), tool_call(c, i, n));
            }
        } else if m["role"] == "tool" {
            results.push((pairing_key(assistant, k), m));
            k += 1;
        }
    }
    rewrite_results(results.into_iter(), &calls, lookup, mock, |m, text| {
        m["content"] = Value::String(text)
    })
}

/// How a call and its result find each other: the assistant message's index in the
/// conversation and the call's position in it (`4#0`).
fn pairing_key(assistant: usize, nth: usize) -> String {
    format!("{assistant}#{nth}")
}

/// A tool call of the assistant message that is (or, for a response, will be) the
/// conversation's `at`-th message. Its id is its place, whether or not Ollama sent one:
/// results are paired by place.
fn tool_call(c: &Value, at: usize, nth: usize) -> ToolCall {
    ToolCall {
        id: pairing_key(at, nth),
        name: name_of(c),
        arguments: arguments(&c["function"]["arguments"]),
    }
}

/// The `function.name` of a tool call or definition.
fn name_of(v: &Value) -> String {
    v["function"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests;
