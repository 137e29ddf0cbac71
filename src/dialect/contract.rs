//! What a dialect is: the trait every wire format implements, and the values it is given
//! (a spoil of a tool call, an error fault). The dialects name it here, and `mod.rs`'s
//! route table dispatches to them, so neither names the other back.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value;

use super::shared::AssembleError;
use crate::neutral::{Message, ModelCall, ToolCall};
use crate::sse::{Framing, SseEvent};

/// What one wire format knows. Each dialect is a unit struct implementing this; [`Route`]
/// picks it. Bodies are parsed JSON; a field of the wrong shape is read as absent, never a
/// panic (requests come from programs, responses from upstreams).
pub(crate) trait Dialect: Sync {
    /// The route name stored in cassettes, hashed into keys and shown in reports.
    fn name(&self) -> &'static str;

    /// Does this request (`path` with its query, and body) ask for a server-sent-event
    /// stream? Most dialects say so in the body.
    fn wants_stream(&self, _path: &str, request: &Value) -> bool {
        request.get("stream") == Some(&Value::Bool(true))
    }

    /// How this dialect's streams are framed: server-sent events by default.
    fn framing(&self) -> Framing {
        Framing::Sse
    }

    /// What of the request's path belongs in its key besides the route: the model, for a
    /// dialect that names it in the URL. `None` (the path prefix does not matter) by default.
    fn key_scope(&self, _path: &str) -> Option<String> {
        None
    }

    /// The model a request's path names, for a dialect whose body does not (Bedrock's).
    fn path_model(&self, _path: &str) -> Option<String> {
        None
    }

    /// The whole response a recorded stream amounts to.
    fn assemble(&self, events: &[SseEvent]) -> Result<Value, AssembleError>;

    /// A stream for a whole response, shaped by what `request` asked for.
    fn synthesize(&self, response: &Value, request: &Value) -> Vec<SseEvent>;

    /// The neutral model call of an exchange (`response` is whole: non-streamed or
    /// assembled; an error body gives a call with no reply and no tool calls).
    fn extract(&self, request: &Value, response: &Value) -> ModelCall;

    /// Labelled summaries of what shapes a conversation (model, message count, roles,
    /// tool names), for the near-miss report.
    fn envelope(&self, request: &Value) -> Vec<(&'static str, String)>;

    /// The conversation items a request carries, history included.
    fn conversation<'a>(&self, request: &'a Value) -> Cow<'a, [Value]>;

    /// Did the model produce this conversation item (history the model has seen)?
    fn is_model_output(&self, item: &Value) -> bool;

    /// The neutral messages of one conversation item, appended to `out`. `names` maps
    /// tool call ids to tool names, to name results. System and developer messages are
    /// left out: the system prompt is read from the model call itself.
    fn messages(&self, item: &Value, names: &HashMap<String, String>, out: &mut Vec<Message>);

    /// Replace tool results in a request by mocks. `mock(call, nth)` gets the call a
    /// result answers (found in the request's own history, else through `lookup`, the
    /// session's `call id -> call` map) and its 0-based occurrence among calls to that
    /// tool; `Some` replaces the result. Returns how many results were replaced.
    fn rewrite_tool_results(
        &self,
        request: &mut Value,
        lookup: &dyn Fn(&str) -> Option<ToolCall>,
        mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
    ) -> usize;

    /// A minimal valid response of this dialect whose reply is `text`, for `model`.
    fn text_response(&self, request: &Value, model: &str, text: &str) -> Value;

    /// The answer of an error fault ([`ErrorFault`]) as this provider gives it: its status
    /// and body.
    fn fault_error(&self, fault: ErrorFault) -> (u16, Value);

    /// An error event inside a `200` stream, as this dialect's server sends one.
    fn stream_error(&self) -> SseEvent;

    /// Spoil the `nth` tool call (0-based, in [`Dialect::extract`]'s order) of a whole
    /// response, as `spoil` says, in the shape this provider would send it.
    fn spoil_tool_call(&self, response: &mut Value, nth: usize, spoil: &Spoil);
}

/// How a tool-call fault spoils the call it hits.
#[derive(Debug, Clone, PartialEq)]
pub enum Spoil {
    /// Its arguments are not JSON (cut short).
    Malformed,
    /// These arguments in place of its own.
    Arguments(Value),
    /// This tool name in place of its own.
    Name(String),
    /// The answer stops on the length limit in the middle of it: the call's arguments are
    /// cut short, nothing after it is kept.
    Length,
}

/// A fault answered with an error status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorFault {
    RateLimit,
    /// A 5xx with this status.
    ServerError(u16),
    Overloaded,
}

/// What every injected error says, so a reader of the program's log knows where it came
/// from.
pub const INJECTED: &str = "(injected by agentproxy)";
