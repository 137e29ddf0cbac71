//! AWS Bedrock Runtime (`POST /model/{modelId}/…`): Converse and ConverseStream (Bedrock's
//! own message shape: `toolUse` / `toolResult` blocks, the stream as AWS event-stream
//! frames, assembled and synthesized in [`stream`]), and InvokeModel with its response
//! stream, whose bodies are the model's own (Anthropic Messages, read by the Anthropic
//! dialect: [`invoke`]). The model is in the path, so it is in the key; errors are AWS's
//! JSON shape (`__type` and `message`), which botocore raises as a `ClientError`.

mod invoke;
pub(crate) mod signature;
mod stream;

pub(crate) use invoke::Invoke;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use super::contract::{Dialect, ErrorFault, Spoil, INJECTED};
use super::shared::{
    array, broken_json, cut_object, nth_call, params, result_message, rewrite_results, text,
    usage_apart, AssembleError,
};
use crate::neutral::{Message, ModelCall, ToolCall, ToolDef, ToolResult};
use crate::sse::{Framing, SseEvent};

/// The route name of Converse and ConverseStream.
const ROUTE: &str = "bedrock.converse";

/// Bedrock Runtime's operations on a model, by the path's last segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Converse,
    ConverseStream,
    Invoke,
    InvokeStream,
}

/// The operation and model of a Bedrock Runtime path (`/model/{modelId}/converse`, …; the
/// model id as sent, percent-encoded where the SDK encodes it).
pub(crate) fn operation(path: &str) -> Option<(Operation, &str)> {
    let path = path.split('?').next().unwrap_or(path);
    let (model, op) = path.strip_prefix("/model/")?.rsplit_once('/')?;
    let op = match op {
        "converse" => Operation::Converse,
        "converse-stream" => Operation::ConverseStream,
        "invoke" => Operation::Invoke,
        "invoke-with-response-stream" => Operation::InvokeStream,
        _ => return None,
    };
    (!model.is_empty() && !model.contains('/')).then_some((op, model))
}

/// The model of a Bedrock path, for the key.
fn key_scope(path: &str) -> Option<String> {
    operation(path).map(|(_, model)| format!("model {model}"))
}

/// The model id of a Bedrock path, percent-decoded (boto3 sends `v1%3A0`, the Anthropic
/// SDK `v1:0`).
fn path_model(path: &str) -> Option<String> {
    let (_, model) = operation(path)?;
    Some(
        percent_encoding::percent_decode_str(model)
            .decode_utf8_lossy()
            .into_owned(),
    )
}

/// Does the path ask for a stream (the operation says so, not the body)?
fn streams(path: &str) -> bool {
    matches!(
        operation(path),
        Some((Operation::ConverseStream | Operation::InvokeStream, _))
    )
}

/// An error body in AWS's JSON shape.
pub(crate) fn error_body(kind: &str, message: &str) -> Value {
    json!({"__type": kind, "message": message})
}

/// An error fault as Bedrock answers it: its status, exception type and message.
fn fault(fault: ErrorFault) -> (u16, Value) {
    let (status, kind, message) = match fault {
        ErrorFault::RateLimit => (
            429,
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
        ),
        ErrorFault::Overloaded => (
            503,
            "ServiceUnavailableException",
            "Service is temporarily unable to handle the request.",
        ),
        ErrorFault::ServerError(503) => (503, "ServiceUnavailableException", "Service Unavailable"),
        ErrorFault::ServerError(status) => {
            (status, "InternalServerException", "Internal server error")
        }
    };
    (status, error_body(kind, &format!("{message} {INJECTED}")))
}

/// The exception frame Bedrock sends inside a stream when the model fails mid-answer.
fn stream_exception() -> SseEvent {
    SseEvent {
        // botocore matches the member name, camel-cased, not the exception's type name.
        event: Some("exception:modelStreamErrorException".into()),
        id: None,
        data: json!({
            "message": format!("The model stream failed {INJECTED}"),
            "originalStatusCode": 529,
            "originalMessage": "Overloaded",
        })
        .to_string(),
    }
}

/// The Converse dialect (Converse and ConverseStream).
pub(crate) struct Converse;

impl Dialect for Converse {
    fn name(&self) -> &'static str {
        ROUTE
    }

    fn wants_stream(&self, path: &str, _request: &Value) -> bool {
        streams(path)
    }

    fn framing(&self) -> Framing {
        Framing::EventStream
    }

    fn key_scope(&self, path: &str) -> Option<String> {
        key_scope(path)
    }

    fn path_model(&self, path: &str) -> Option<String> {
        path_model(path)
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
        let messages = array(request, "messages");
        let roles: Vec<&str> = (messages.iter())
            .map(|m| m["role"].as_str().unwrap_or("?"))
            .collect();
        let blocks: Vec<&str> = (messages.iter().flat_map(|m| array(m, "content")))
            .map(block_kind)
            .collect();
        let tools: Vec<&str> = (tool_specs(request).iter())
            .map(|t| t["toolSpec"]["name"].as_str().unwrap_or("?"))
            .collect();
        vec![
            ("message count", messages.len().to_string()),
            ("roles", format!("[{}]", roles.join(", "))),
            ("blocks", format!("[{}]", blocks.join(", "))),
            ("tools", format!("[{}]", tools.join(", "))),
        ]
    }

    fn conversation<'a>(&self, request: &'a Value) -> Cow<'a, [Value]> {
        Cow::Borrowed(array(request, "messages"))
    }

    fn is_model_output(&self, item: &Value) -> bool {
        item["role"] == "assistant"
    }

    fn messages(&self, m: &Value, names: &HashMap<String, String>, out: &mut Vec<Message>) {
        let role = m["role"].as_str().unwrap_or("?");
        for b in array(m, "content") {
            if let Some(t) = b["text"].as_str() {
                text(role, t, out);
            } else if b["toolUse"].is_object() {
                let call = tool_call(&b["toolUse"]);
                out.push(Message::ToolCall {
                    name: call.name,
                    arguments: call.arguments,
                });
            } else if let Some(result) = b.get("toolResult") {
                out.push(result_message(
                    &result["toolUseId"],
                    &result["content"],
                    names,
                ));
            } else {
                out.push(Message::Other {
                    role: role.to_owned(),
                    item: block_kind(b).to_owned(),
                });
            }
        }
    }

    fn rewrite_tool_results(
        &self,
        request: &mut Value,
        lookup: &dyn Fn(&str) -> Option<ToolCall>,
        mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
    ) -> usize {
        let Some(messages) = request.get_mut("messages").and_then(Value::as_array_mut) else {
            return 0;
        };
        let calls: BTreeMap<String, ToolCall> = (messages.iter())
            .filter(|m| m["role"] == "assistant")
            .flat_map(|m| array(m, "content"))
            .filter(|b| b["toolUse"].is_object())
            .map(|b| tool_call(&b["toolUse"]))
            .map(|c| (c.id.clone(), c))
            .collect();
        let results = (messages.iter_mut())
            .filter_map(|m| m.get_mut("content").and_then(Value::as_array_mut))
            .flatten()
            .filter_map(|b| b.get_mut("toolResult"))
            .map(|r| (r["toolUseId"].as_str().unwrap_or_default().to_owned(), r));
        rewrite_results(results, &calls, lookup, mock, |result, text| {
            result["content"] = json!([{ "text": text }]);
            if let Some(fields) = result.as_object_mut() {
                fields.remove("status");
            }
        })
    }

    fn text_response(&self, _request: &Value, _model: &str, text: &str) -> Value {
        json!({
            "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
            "metrics": {"latencyMs": 0}
        })
    }

    fn fault_error(&self, f: ErrorFault) -> (u16, Value) {
        fault(f)
    }

    fn stream_error(&self) -> SseEvent {
        stream_exception()
    }

    /// The call is the `nth` `toolUse` block of the output message; its `input` is an
    /// object on the wire, so malformed arguments are a string of broken JSON there (a
    /// stream carries that text as its input deltas); a length stop keeps the properties
    /// before the cut and drops the blocks after it.
    fn spoil_tool_call(&self, response: &mut Value, nth: usize, spoil: &Spoil) {
        let Some(content) = response["output"]["message"]["content"].as_array_mut() else {
            return;
        };
        let Some(at) = nth_call(content, nth, |b| b["toolUse"].is_object()) else {
            return;
        };
        let call = &mut content[at]["toolUse"];
        match spoil {
            Spoil::Malformed => call["input"] = json!(broken_json(&call["input"].to_string())),
            Spoil::Arguments(args) => call["input"] = args.clone(),
            Spoil::Name(name) => call["name"] = json!(name),
            Spoil::Length => {
                call["input"] = cut_object(&call["input"]);
                content.truncate(at + 1);
                response["stopReason"] = json!("max_tokens");
            }
        }
    }
}

/// What a content block is: the name of its one field (`text`, `toolUse`, `image`, …).
fn block_kind(block: &Value) -> &str {
    (block.as_object())
        .and_then(|o| o.keys().next())
        .map_or("?", String::as_str)
}

fn tool_specs(request: &Value) -> &[Value] {
    array(&request["toolConfig"], "tools")
}

fn tool_call(call: &Value) -> ToolCall {
    ToolCall {
        id: call["toolUseId"].as_str().unwrap_or_default().to_owned(),
        name: call["name"].as_str().unwrap_or_default().to_owned(),
        arguments: call["input"].clone(),
    }
}

/// Request fields that are not parameters: the conversation and the tools.
const NOT_PARAMS: [&str; 3] = ["messages", "system", "toolConfig"];

/// The neutral model call of one Converse exchange (`response` whole or assembled).
///
/// - `system`: the `text` of the `system` blocks joined by blank lines.
/// - `tools`: the `toolSpec`s of `toolConfig.tools` (parameters: `inputSchema.json`).
/// - `tool_results`: the `toolResult` blocks after the last assistant message, named by the
///   `toolUse` they answer when the request holds it.
/// - `tool_calls`, `reply`: the `toolUse` and `text` blocks of `output.message`.
/// - `usage`: `inputTokens` plus the cache's read and write counts as the prompt,
///   `outputTokens` as the completion.
/// - `model`: none (it is in the path, which the key and the miss report carry).
pub fn extract(request: &Value, response: &Value) -> ModelCall {
    let system = request["system"].as_array().map(|blocks| {
        (blocks.iter().filter_map(|b| b["text"].as_str()))
            .collect::<Vec<_>>()
            .join("\n\n")
    });
    let tools = (tool_specs(request).iter())
        .map(|t| &t["toolSpec"])
        .map(|spec| {
            std::sync::Arc::new(ToolDef {
                name: spec["name"].as_str().unwrap_or_default().to_owned(),
                parameters: spec["inputSchema"]["json"].clone(),
                definition: spec.clone(),
            })
        })
        .collect();
    let messages = array(request, "messages");
    let after_last_assistant = (messages.iter())
        .rposition(|m| m["role"] == "assistant")
        .map_or(0, |i| i + 1);
    let names: HashMap<String, String> = (messages.iter().flat_map(|m| array(m, "content")))
        .filter(|b| b["toolUse"].is_object())
        .map(|b| tool_call(&b["toolUse"]))
        .map(|c| (c.id, c.name))
        .collect();
    let tool_results = (messages[after_last_assistant..].iter())
        .flat_map(|m| array(m, "content"))
        .filter_map(|b| b.get("toolResult"))
        .map(|r| {
            let call_id = r["toolUseId"].as_str().unwrap_or_default().to_owned();
            ToolResult {
                name: names.get(&call_id).cloned(),
                call_id,
                content: r["content"].clone(),
            }
        })
        .collect();
    let content = array(&response["output"]["message"], "content");
    let tool_calls = (content.iter())
        .filter(|b| b["toolUse"].is_object())
        .map(|b| tool_call(&b["toolUse"]))
        .collect();
    let texts: Vec<&str> = content.iter().filter_map(|b| b["text"].as_str()).collect();
    ModelCall {
        route: ROUTE.into(),
        model: String::new(),
        system,
        tools,
        message_count: messages.len(),
        tool_results,
        tool_calls,
        reply: (!texts.is_empty()).then(|| texts.concat()),
        usage: usage_apart(
            &response["usage"],
            [
                "inputTokens",
                "cacheReadInputTokens",
                "cacheWriteInputTokens",
                "outputTokens",
            ],
        ),
        params: params(request, &NOT_PARAMS),
    }
}

#[cfg(test)]
mod tests;
