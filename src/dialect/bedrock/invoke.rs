//! InvokeModel and InvokeModelWithResponseStream: the body is the model's own request
//! (Anthropic Messages with `anthropic_version: bedrock-2023-05-31` and no `model`, the
//! model being in the path), the answer the model's own response; the stream is
//! event-stream frames named `chunk`, each carrying one of the model's stream events as
//! base64 in `{"bytes": …}`. Everything but the framing is the Anthropic dialect's.

use std::borrow::Cow;
use std::collections::HashMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Value};

use super::super::anthropic::{self, Anthropic};
use super::super::contract::{Dialect, ErrorFault, Spoil};
use super::super::shared::AssembleError;
use crate::neutral::{Message, ModelCall, ToolCall};
use crate::sse::{Framing, SseEvent};

const ROUTE: &str = "bedrock.invoke";

/// The InvokeModel dialect.
pub(crate) struct Invoke;

/// The model's stream events carried by `chunk` frames, each named by its `type`.
fn unwrap(events: &[SseEvent]) -> Result<Vec<SseEvent>, AssembleError> {
    let mut inner = Vec::with_capacity(events.len());
    for (index, event) in events.iter().enumerate() {
        let kind = event.event.as_deref().unwrap_or_default();
        if kind != "chunk" {
            let data: Value = serde_json::from_str(&event.data).unwrap_or(Value::Null);
            let message = data["message"].as_str().unwrap_or(&event.data);
            return Err(AssembleError::Upstream {
                index,
                message: format!("{kind} {message}"),
            });
        }
        let data: Value = serde_json::from_str(&event.data)
            .map_err(|source| AssembleError::NotJson { index, source })?;
        let bytes = (data["bytes"].as_str())
            .and_then(|b| STANDARD.decode(b).ok())
            .ok_or(AssembleError::Shape {
                index,
                problem: "a `chunk` has no base64 `bytes`",
            })?;
        let data = String::from_utf8_lossy(&bytes).into_owned();
        let kind = (serde_json::from_str::<Value>(&data).ok())
            .and_then(|v| v["type"].as_str().map(str::to_owned));
        inner.push(SseEvent {
            event: kind,
            id: None,
            data,
        });
    }
    Ok(inner)
}

/// A model stream event as a `chunk` frame.
fn wrap(event: &SseEvent) -> SseEvent {
    SseEvent {
        event: Some("chunk".to_owned()),
        id: None,
        data: json!({"bytes": STANDARD.encode(&event.data)}).to_string(),
    }
}

impl Dialect for Invoke {
    fn name(&self) -> &'static str {
        ROUTE
    }

    fn wants_stream(&self, path: &str, _request: &Value) -> bool {
        super::streams(path)
    }

    fn framing(&self) -> Framing {
        Framing::EventStream
    }

    fn key_scope(&self, path: &str) -> Option<String> {
        super::key_scope(path)
    }

    fn path_model(&self, path: &str) -> Option<String> {
        super::path_model(path)
    }

    fn assemble(&self, events: &[SseEvent]) -> Result<Value, AssembleError> {
        anthropic::assemble(&unwrap(events)?)
    }

    fn synthesize(&self, response: &Value, _request: &Value) -> Vec<SseEvent> {
        anthropic::synthesize(response).iter().map(wrap).collect()
    }

    /// Anthropic's call, named by this route, the model read from the response.
    fn extract(&self, request: &Value, response: &Value) -> ModelCall {
        let mut call = anthropic::extract(request, response);
        call.route = ROUTE.into();
        if call.model.is_empty() {
            call.model = response["model"].as_str().unwrap_or_default().to_owned();
        }
        call
    }

    fn envelope(&self, request: &Value) -> Vec<(&'static str, String)> {
        let mut envelope = Anthropic.envelope(request);
        envelope.retain(|(label, _)| *label != "model");
        envelope
    }

    fn conversation<'a>(&self, request: &'a Value) -> Cow<'a, [Value]> {
        Anthropic.conversation(request)
    }

    fn is_model_output(&self, item: &Value) -> bool {
        Anthropic.is_model_output(item)
    }

    fn messages(&self, item: &Value, names: &HashMap<String, String>, out: &mut Vec<Message>) {
        Anthropic.messages(item, names, out);
    }

    fn rewrite_tool_results(
        &self,
        request: &mut Value,
        lookup: &dyn Fn(&str) -> Option<ToolCall>,
        mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
    ) -> usize {
        Anthropic.rewrite_tool_results(request, lookup, mock)
    }

    fn text_response(&self, request: &Value, model: &str, text: &str) -> Value {
        Anthropic.text_response(request, model, text)
    }

    fn fault_error(&self, fault: ErrorFault) -> (u16, Value) {
        super::fault(fault)
    }

    fn stream_error(&self) -> SseEvent {
        super::stream_exception()
    }

    fn spoil_tool_call(&self, response: &mut Value, nth: usize, spoil: &Spoil) {
        Anthropic.spoil_tool_call(response, nth, spoil);
    }
}
