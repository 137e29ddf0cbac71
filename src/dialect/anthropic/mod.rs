//! Anthropic Messages (`POST /v1/messages`): the request flags, the near-miss envelope,
//! the neutral model call (`tool_use` / `tool_result` blocks), the conversation
//! (`messages`), tool results rewritten for mocks, and Anthropic's error shape. Streams
//! (`message_start` … `message_stop`) are assembled and synthesized in [`stream`].

mod claude_code;
mod stream;

pub(crate) use claude_code::CLAUDE_CODE;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use super::contract::{Dialect, ErrorFault, Spoil, INJECTED};
use super::shared::{
    array, broken_json, cut_object, nth_call, params, parts, result_message, rewrite_results, text,
    usage_apart, AssembleError,
};
use crate::neutral::{Message, ModelCall, ToolCall, ToolDef, ToolResult};
use crate::sse::SseEvent;

pub(crate) use stream::{assemble, synthesize};

/// The route name, stored in cassettes and in [`ModelCall::route`].
const ROUTE: &str = "anthropic.messages";

/// The Anthropic Messages dialect.
pub(crate) struct Anthropic;

/// The model of a Claude-on-Vertex path (`…/publishers/anthropic/models/{model}:rawPredict`
/// or `:streamRawPredict`), which its body does not name.
pub(crate) fn vertex_model(path: &str) -> Option<&str> {
    let path = path.split('?').next().unwrap_or(path);
    let (_, call) = path.rsplit_once("/publishers/anthropic/models/")?;
    let model =
        (call.strip_suffix(":rawPredict")).or_else(|| call.strip_suffix(":streamRawPredict"))?;
    (!model.is_empty() && !model.contains('/')).then_some(model)
}

impl Dialect for Anthropic {
    fn name(&self) -> &'static str {
        ROUTE
    }

    /// On Vertex AI the model is in the path: it is in the key there.
    fn key_scope(&self, path: &str) -> Option<String> {
        vertex_model(path).map(|m| format!("model {m}"))
    }

    fn path_model(&self, path: &str) -> Option<String> {
        vertex_model(path).map(str::to_owned)
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

    fn conversation<'a>(&self, request: &'a Value) -> Cow<'a, [Value]> {
        Cow::Borrowed(array(request, "messages"))
    }

    fn is_model_output(&self, item: &Value) -> bool {
        item["role"] == "assistant"
    }

    fn messages(&self, m: &Value, names: &HashMap<String, String>, out: &mut Vec<Message>) {
        let role = m["role"].as_str().unwrap_or("?");
        let Value::Array(blocks) = &m["content"] else {
            parts(role, &m["content"], out);
            return;
        };
        for b in blocks {
            match b["type"].as_str().unwrap_or_default() {
                "text" => text(role, b["text"].as_str().unwrap_or_default(), out),
                "tool_use" => out.push(Message::ToolCall {
                    name: b["name"].as_str().unwrap_or_default().to_owned(),
                    arguments: b["input"].clone(),
                }),
                "tool_result" => out.push(result_message(&b["tool_use_id"], &b["content"], names)),
                other => out.push(Message::Other {
                    role: role.to_owned(),
                    item: other.to_owned(),
                }),
            }
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
        let (status, kind, message) = match fault {
            ErrorFault::RateLimit => (
                429,
                "rate_limit_error",
                "Number of requests has exceeded your rate limit",
            ),
            ErrorFault::Overloaded => (529, "overloaded_error", "Overloaded"),
            ErrorFault::ServerError(status) => (status, "api_error", "Internal server error"),
        };
        (status, error_body(kind, &format!("{message} {INJECTED}")))
    }

    /// The `error` event Anthropic sends inside a stream (an overload, typically).
    fn stream_error(&self) -> SseEvent {
        let (_, body) = self.fault_error(ErrorFault::Overloaded);
        SseEvent {
            event: Some("error".into()),
            id: None,
            data: body.to_string(),
        }
    }

    fn text_response(&self, _request: &Value, model: &str, text: &str) -> Value {
        json!({
            "id": "msg_agentproxy",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0}
        })
    }

    /// The call is the `nth` `tool_use` block. Its `input` is an object on the wire, so
    /// malformed arguments are a string of broken JSON there (a stream carries that text
    /// as its `input_json_delta`s); a length stop (`stop_reason: "max_tokens"`) keeps the
    /// properties before the cut and drops the blocks after it.
    fn spoil_tool_call(&self, response: &mut Value, nth: usize, spoil: &Spoil) {
        let Some(content) = response["content"].as_array_mut() else {
            return;
        };
        let Some(at) = nth_call(content, nth, |b| block_type(b) == "tool_use") else {
            return;
        };
        let block = &mut content[at];
        match spoil {
            Spoil::Malformed => block["input"] = json!(broken_json(&block["input"].to_string())),
            Spoil::Arguments(args) => block["input"] = args.clone(),
            Spoil::Name(name) => block["name"] = json!(name),
            Spoil::Length => {
                block["input"] = cut_object(&block["input"]);
                content.truncate(at + 1);
                response["stop_reason"] = json!("max_tokens");
            }
        }
    }
}

/// An error body in Anthropic's shape.
pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
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
    let messages = array(body, "messages");
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
    let tools: Vec<&str> = array(body, "tools")
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
///   OpenAI's), `cache_read` is `cache_read_input_tokens` and `cache_creation`
///   `cache_creation_input_tokens`; a response without `usage` gives `Usage::UNKNOWN`.
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
    let tools = array(request, "tools")
        .iter()
        .map(|t| ToolDef {
            name: t["name"].as_str().unwrap_or_default().to_owned(),
            parameters: t["input_schema"].clone(),
            definition: t.clone(),
        })
        .map(std::sync::Arc::new)
        .collect();
    let messages = array(request, "messages");
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
    ModelCall {
        route: ROUTE.into(),
        model: request["model"].as_str().unwrap_or_default().to_owned(),
        system,
        tools,
        message_count: messages.len(),
        tool_results,
        tool_calls,
        reply: (!texts.is_empty()).then(|| texts.concat()),
        usage: usage_apart(
            &response["usage"],
            [
                "input_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
                "output_tokens",
            ],
        ),
        params: params(request, &NOT_PARAMS),
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
    let calls = calls_in_history(messages);
    let results = messages
        .iter_mut()
        .filter_map(|m| m.get_mut("content").and_then(Value::as_array_mut))
        .flatten()
        .filter(|b| block_type(b) == "tool_result")
        .map(|b| (b["tool_use_id"].as_str().unwrap_or_default().to_owned(), b));
    rewrite_results(results, &calls, lookup, mock, |block, text| {
        block["content"] = Value::String(text);
        if let Some(fields) = block.as_object_mut() {
            fields.remove("is_error");
        }
    })
}

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
mod tests;
