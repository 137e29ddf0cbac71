//! Google Gemini (`POST /{version}/models/{model}:generateContent` and
//! `:streamGenerateContent?alt=sse`, also in the Vertex AI forms): the request flags (a
//! stream is asked for in the URL, not the body), the key scope (the model is in the URL),
//! the near-miss envelope, the neutral model call (`functionCall` / `functionResponse`
//! parts), the conversation (`contents`), tool results rewritten for mocks, and Google's
//! error shape. Streams are assembled and synthesized in [`stream`].
//!
//! The google-genai SDK writes most request keys in camelCase but some in snake_case
//! (`parameters_json_schema`, `function_declarations` in some versions); both are read.
//! Gemini pairs a tool result with its call by name (newer models add an `id`): a result
//! without an id answers the call of the same name at the same position in the model turn
//! before it.

mod schema;
mod stream;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use super::contract::{Dialect, ErrorFault, Spoil, INJECTED};
use super::shared::{
    array, broken_json, cut_object, nth_call, params, rewrite_results, text, AssembleError,
};
use crate::neutral::{Message, ModelCall, ToolCall, ToolDef, ToolResult, Usage};
use crate::sse::SseEvent;

pub(crate) use stream::{assemble, synthesize};

/// The route name, stored in cassettes and in [`ModelCall::route`].
const ROUTE: &str = "gemini.generate";

/// The URL methods of the route.
const GENERATE: &str = ":generateContent";
const STREAM: &str = ":streamGenerateContent";

/// The Gemini dialect.
pub(crate) struct Gemini;

/// Is `path` (without its query) a Gemini generate call? `/{version}/models/{model}:…`,
/// and the Vertex forms `/{version}/publishers/google/models/{model}:…` and
/// `/{version}/projects/{p}/locations/{l}/publishers/google/models/{model}:…`. The `:method`
/// suffix is what tells `/v1/models/{m}:generateContent` from OpenAI's `GET /v1/models`.
pub(crate) fn is_generate_path(path: &str) -> bool {
    model_of(path).is_some()
}

/// The `models/{model}` part of a generate path.
fn model_of(path: &str) -> Option<&str> {
    let path = path.split('?').next().unwrap_or(path);
    let call = path
        .strip_suffix(GENERATE)
        .or_else(|| path.strip_suffix(STREAM))?;
    let at = call.rfind("/models/")?;
    let model = &call[at + 1..];
    (model.len() > "models/".len() && !model["models/".len()..].contains('/')).then_some(model)
}

/// Does the URL ask for the SSE stream (`:streamGenerateContent?alt=sse`)? Without
/// `alt=sse` the stream is one JSON array, which is recorded and served as a whole body.
fn wants_sse(path: &str) -> bool {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    path.ends_with(STREAM) && query.split('&').any(|p| p == "alt=sse")
}

impl Dialect for Gemini {
    fn name(&self) -> &'static str {
        ROUTE
    }

    fn wants_stream(&self, path: &str, _request: &Value) -> bool {
        wants_sse(path)
    }

    fn key_scope(&self, path: &str) -> Option<String> {
        model_of(path).map(str::to_owned)
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
        Cow::Borrowed(array(request, "contents"))
    }

    fn is_model_output(&self, item: &Value) -> bool {
        item["role"] == "model"
    }

    fn messages(&self, content: &Value, _: &HashMap<String, String>, out: &mut Vec<Message>) {
        let role = match content["role"].as_str() {
            Some("model") => "assistant",
            Some(role) => role,
            None => "user",
        };
        for part in array(content, "parts") {
            if let Some(call) = part.get("functionCall") {
                out.push(Message::ToolCall {
                    name: str_of(call, "name"),
                    arguments: call["args"].clone(),
                });
            } else if let Some(result) = part.get("functionResponse") {
                out.push(Message::ToolResult {
                    call_id: str_of(result, "id"),
                    name: Some(str_of(result, "name")),
                    content: result["response"].clone(),
                });
            } else if let Some(t) = part["text"].as_str() {
                if part["thought"] != true {
                    text(role, t, out);
                }
            } else if let Some(kind) = part.as_object().and_then(|o| o.keys().next()) {
                out.push(Message::Other {
                    role: role.to_owned(),
                    item: kind.clone(),
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
        rewrite_tool_results(request, lookup, mock)
    }

    fn fault_error(&self, fault: ErrorFault) -> (u16, Value) {
        let (status, message) = match fault {
            ErrorFault::RateLimit => (429, "Resource has been exhausted (e.g. check quota)."),
            ErrorFault::Overloaded => (503, "The model is overloaded. Please try again later."),
            ErrorFault::ServerError(status) => (status, "An internal error has occurred."),
        };
        let message = format!("{message} {INJECTED}");
        (
            status,
            error_body(status, super::Refusal::Fault.as_str(), &message),
        )
    }

    /// A chunk that is an error object, as Google ends a failing stream.
    fn stream_error(&self) -> SseEvent {
        let (_, body) = self.fault_error(ErrorFault::ServerError(500));
        SseEvent {
            event: None,
            id: None,
            data: body.to_string(),
        }
    }

    fn text_response(&self, _request: &Value, model: &str, text: &str) -> Value {
        json!({
            "candidates": [{
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "STOP",
                "index": 0
            }],
            "usageMetadata": {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0},
            "modelVersion": model,
            "responseId": "agentproxy"
        })
    }

    /// The call is the `nth` `functionCall` part of the first candidate. Gemini does not
    /// send broken arguments: it ends the candidate with `MALFORMED_FUNCTION_CALL`, no
    /// function call and a `finishMessage`. A length stop (`MAX_TOKENS`) keeps the
    /// arguments before the cut and drops the parts after the call.
    fn spoil_tool_call(&self, response: &mut Value, nth: usize, spoil: &Spoil) {
        let candidate = &mut response["candidates"][0];
        let Some(parts) = candidate["content"]["parts"].as_array_mut() else {
            return;
        };
        let Some(at) = nth_call(parts, nth, |p| p.get("functionCall").is_some()) else {
            return;
        };
        let call = &mut parts[at]["functionCall"];
        match spoil {
            Spoil::Malformed => {
                let text = format!("{}({})", str_of(call, "name"), call["args"]);
                parts.retain(|p| p.get("functionCall").is_none());
                candidate["finishReason"] = json!("MALFORMED_FUNCTION_CALL");
                candidate["finishMessage"] = json!(format!(
                    "Malformed function call: {} {INJECTED}",
                    broken_json(&text)
                ));
            }
            Spoil::Arguments(args) => call["args"] = args.clone(),
            Spoil::Name(name) => call["name"] = json!(name),
            Spoil::Length => {
                call["args"] = cut_object(&call["args"]);
                parts.truncate(at + 1);
                candidate["finishReason"] = json!("MAX_TOKENS");
            }
        }
    }
}

/// An error body in Google's shape: the HTTP status, its canonical code name, and the
/// agentproxy error kind as the `ErrorInfo` reason, so `str(error)` in the SDK names it.
pub(crate) fn error_body(status: u16, kind: &str, message: &str) -> Value {
    let code = match status {
        400 | 413 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        501 => "UNIMPLEMENTED",
        502 | 503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    };
    json!({"error": {
        "code": status,
        "message": message,
        "status": code,
        "details": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": kind,
            "domain": "agentproxy"
        }]
    }})
}

fn str_of(v: &Value, field: &str) -> String {
    v[field].as_str().unwrap_or_default().to_owned()
}

/// A field the SDKs write in camelCase or snake_case.
fn either<'a>(v: &'a Value, camel: &str, snake: &str) -> &'a Value {
    match v.get(camel) {
        Some(found) => found,
        None => &v[snake],
    }
}

/// The declared functions of a request's tools.
fn declarations(request: &Value) -> impl Iterator<Item = &Value> {
    array(request, "tools").iter().flat_map(|tool| {
        either(tool, "functionDeclarations", "function_declarations")
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    })
}

/// The parts of a content.
fn parts(content: &Value) -> &[Value] {
    array(content, "parts")
}

/// The envelope of a Gemini request for near-miss reports: content count, roles, the kind
/// of every part in order (`text`, `functionCall:NAME`, `functionResponse:NAME`, …) and the
/// declared functions. The model is in the URL, which the miss report names.
pub fn envelope(body: &Value) -> Vec<(&'static str, String)> {
    let contents = array(body, "contents");
    let roles: Vec<&str> = contents
        .iter()
        .map(|c| c["role"].as_str().unwrap_or("?"))
        .collect();
    let kinds: Vec<String> = contents
        .iter()
        .flat_map(parts)
        .map(|p| {
            for kind in ["functionCall", "functionResponse"] {
                if let Some(f) = p.get(kind) {
                    return format!("{kind}:{}", f["name"].as_str().unwrap_or("?"));
                }
            }
            match p
                .as_object()
                .and_then(|o| o.keys().find(|k| *k != "thoughtSignature"))
            {
                Some(k) => k.clone(),
                None => "?".to_owned(),
            }
        })
        .collect();
    let tools: Vec<&str> = declarations(body)
        .map(|d| d["name"].as_str().unwrap_or("?"))
        .collect();
    vec![
        ("content count", contents.len().to_string()),
        ("roles", format!("[{}]", roles.join(", "))),
        ("parts", format!("[{}]", kinds.join(", "))),
        ("functions", format!("[{}]", tools.join(", "))),
    ]
}

/// Request fields that are not parameters: the conversation and the tools.
const NOT_PARAMS: [&str; 5] = [
    "contents",
    "systemInstruction",
    "system_instruction",
    "tools",
    "model",
];

/// The neutral model call of one Gemini exchange (`response` is the non-streamed or
/// assembled `GenerateContentResponse`, or the JSON array of a stream asked for without
/// `alt=sse`).
///
/// - `model`: the response's `modelVersion` (the request names its model only in the URL).
/// - `system`: the text parts of `systemInstruction`, joined by blank lines.
/// - `tools`: every `functionDeclarations` entry, its schema from `parameters` (Gemini's
///   OpenAPI `Schema`, read as the JSON Schema it means: see [`schema`]) or
///   `parametersJsonSchema`.
/// - `tool_results`: the `functionResponse` parts after the last `model` content.
/// - `tool_calls`: the first candidate's `functionCall` parts; the id is the call's `id`,
///   or empty when the model gave none.
/// - `reply`: the first candidate's text parts (thoughts excluded), concatenated.
/// - `usage`: `promptTokenCount`, `candidatesTokenCount + thoughtsTokenCount`,
///   `cachedContentTokenCount`.
pub fn extract(request: &Value, response: &Value) -> ModelCall {
    let whole;
    let response = if response.is_array() {
        whole = stream::merge(response.as_array().map(Vec::as_slice).unwrap_or_default());
        &whole
    } else {
        response
    };
    let system: Vec<&str> = parts(either(request, "systemInstruction", "system_instruction"))
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    let tools = declarations(request)
        .map(|d| ToolDef {
            name: str_of(d, "name"),
            parameters: match d.get("parameters") {
                Some(openapi) => schema::json_schema(openapi),
                None => (either(d, "parametersJsonSchema", "parameters_json_schema")).clone(),
            },
            definition: d.clone(),
        })
        .map(std::sync::Arc::new)
        .collect();
    let contents = array(request, "contents");
    let after_model = contents
        .iter()
        .rposition(|c| c["role"] == "model")
        .map_or(0, |i| i + 1);
    let tool_results = contents[after_model..]
        .iter()
        .flat_map(parts)
        .filter_map(|p| p.get("functionResponse"))
        .map(|r| ToolResult {
            call_id: str_of(r, "id"),
            name: Some(str_of(r, "name")),
            content: r["response"].clone(),
        })
        .collect();
    let answer = parts(&response["candidates"][0]["content"]);
    let tool_calls = answer
        .iter()
        .filter_map(|p| p.get("functionCall"))
        .map(tool_call)
        .collect();
    let texts: Vec<&str> = answer
        .iter()
        .filter(|p| p["thought"] != true)
        .filter_map(|p| p["text"].as_str())
        .collect();
    let usage = &response["usageMetadata"];
    let count = |field: &str| usage[field].as_u64().unwrap_or(0);
    let model = response["modelVersion"].as_str().unwrap_or_default();
    ModelCall {
        route: ROUTE.into(),
        model: model.strip_prefix("models/").unwrap_or(model).to_owned(),
        system: (!system.is_empty()).then(|| system.join("\n\n")),
        tools,
        message_count: contents.len(),
        tool_results,
        tool_calls,
        reply: (!texts.is_empty()).then(|| texts.concat()),
        usage: match usage {
            Value::Object(_) => Usage {
                prompt: count("promptTokenCount"),
                completion: count("candidatesTokenCount") + count("thoughtsTokenCount"),
                cache_read: count("cachedContentTokenCount"),
                ..Usage::default()
            },
            _ => Usage::UNKNOWN,
        },
        params: params(request, &NOT_PARAMS),
    }
}

fn tool_call(call: &Value) -> ToolCall {
    ToolCall {
        id: str_of(call, "id"),
        name: str_of(call, "name"),
        arguments: call["args"].clone(),
    }
}

/// How a call and its result find each other: the `id` when there is one, else the model
/// turn, the name and the position among same-named parts (`3:get_weather#1`).
fn pairing_key(turn: usize, part: &Value, nth: &mut BTreeMap<String, usize>) -> String {
    let id = str_of(part, "id");
    let name = str_of(part, "name");
    let n = nth.entry(name.clone()).or_default();
    *n += 1;
    if id.is_empty() {
        format!("{turn}:{name}#{n}")
    } else {
        id
    }
}

/// Replace the `response` of `functionResponse` parts by mocks (see
/// [`Dialect::rewrite_tool_results`]). A mock that is a JSON object becomes the response
/// itself; anything else is wrapped as `{"result": …}`, the SDK's own convention.
pub fn rewrite_tool_results(
    request: &mut Value,
    lookup: &dyn Fn(&str) -> Option<ToolCall>,
    mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
) -> usize {
    let Some(contents) = request.get_mut("contents").and_then(Value::as_array_mut) else {
        return 0;
    };
    // Each model turn's calls, keyed as the results that follow it will look them up.
    let mut calls: BTreeMap<String, ToolCall> = BTreeMap::new();
    let mut results: Vec<(String, &mut Value)> = Vec::new();
    let mut turn = 0;
    for (i, content) in contents.iter_mut().enumerate() {
        let model = content["role"] == "model";
        if model {
            turn = i;
        }
        let mut nth = BTreeMap::new();
        let Some(parts) = content.get_mut("parts").and_then(Value::as_array_mut) else {
            continue;
        };
        for part in parts {
            if model {
                if let Some(call) = part.get("functionCall") {
                    calls.insert(pairing_key(turn, call, &mut nth), tool_call(call));
                }
            } else if let Some(result) = part.get_mut("functionResponse") {
                let key = pairing_key(turn, result, &mut nth);
                results.push((key, result));
            }
        }
    }
    rewrite_results(results.into_iter(), &calls, lookup, mock, |result, text| {
        let value = serde_json::from_str::<Value>(&text)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({"result": text}));
        if let Some(fields) = result.as_object_mut() {
            fields.insert("response".to_owned(), value);
        }
    })
}

#[cfg(test)]
mod tests;
