//! Trajectories as OpenTelemetry traces: an OTLP/HTTP JSON document
//! (`ExportTraceServiceRequest`) following the GenAI semantic conventions, so a test run
//! can be looked at beside production traces (Langfuse, Phoenix, Jaeger, a Collector).
//!
//! One trace per cassette: an `invoke_agent` span over the whole run, a `chat` span per
//! model request, an `execute_tool` span per tool call (from the answer that asked for
//! it to the request that sent its result back), a span per MCP request and per plain HTTP
//! request. A cassette keeps latencies, not clock times: spans are laid end to end from the
//! trace's start. Ids are derived from the trace's name and start, so one export of one
//! cassette always gives the same ids. `docs/reports.md` has the mapping field by field.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{CaseReport, Status};
use crate::cassette::Cassette;
use crate::neutral::{Message, ToolCall, Usage};
use crate::trajectory::show::{self, ShownA2a, ShownCall, ShownStep};

/// One trajectory to export.
pub struct Trace<'a> {
    /// The agent span's name: the case's, or the cassette's path.
    pub name: &'a str,
    pub cassette: &'a Cassette,
    /// When the trajectory started (a test run's start, or the recording's time).
    pub start: SystemTime,
    /// The case this is the run of, under `agentproxy test`.
    pub case: Option<&'a CaseReport>,
}

/// The export request of `traces`; with `content`, messages, arguments and results are
/// included (`--no-content` leaves them out).
pub fn export(traces: &[Trace<'_>], content: bool) -> Value {
    let spans: Vec<Value> = traces.iter().flat_map(|t| trace(t, content)).collect();
    json!({
        "resourceSpans": [{
            "resource": {"attributes": [
                attr("service.name", "agentproxy"),
                attr("service.version", env!("CARGO_PKG_VERSION")),
            ]},
            "scopeSpans": [{
                "scope": {"name": "agentproxy", "version": env!("CARGO_PKG_VERSION")},
                "spans": spans,
            }],
        }],
    })
}

/// An attribute: a string, an integer (OTLP/JSON writes 64-bit integers as strings) or a
/// boolean.
fn attr(key: &str, value: impl Into<Attr>) -> Value {
    let value = match value.into() {
        Attr::Str(s) => json!({"stringValue": s}),
        Attr::Int(n) => json!({"intValue": n.to_string()}),
        Attr::Bool(b) => json!({"boolValue": b}),
    };
    json!({"key": key, "value": value})
}

enum Attr {
    Str(String),
    Int(u64),
    Bool(bool),
}

impl From<&str> for Attr {
    fn from(s: &str) -> Attr {
        Attr::Str(s.to_owned())
    }
}
impl From<String> for Attr {
    fn from(s: String) -> Attr {
        Attr::Str(s)
    }
}
impl From<u64> for Attr {
    fn from(n: u64) -> Attr {
        Attr::Int(n)
    }
}
impl From<bool> for Attr {
    fn from(b: bool) -> Attr {
        Attr::Bool(b)
    }
}

/// Span kinds of OTLP.
const INTERNAL: u8 = 1;
const CLIENT: u8 = 3;

/// The spans of one trace, being built: ids, and a clock that moves by recorded latency.
struct Builder {
    trace_id: String,
    root_id: String,
    spans: Vec<Value>,
    /// Nanoseconds since the epoch where the next step starts.
    now: u64,
    content: bool,
}

impl Builder {
    fn id(&self, n: usize) -> String {
        hex(&Sha256::digest(format!("{}/{n}", self.trace_id))[..8])
    }

    fn span(
        &mut self,
        name: &str,
        kind: u8,
        (start, end): (u64, u64),
        attributes: Vec<Value>,
        error: Option<String>,
    ) {
        let mut span = json!({
            "traceId": self.trace_id,
            "spanId": self.id(self.spans.len() + 1),
            "parentSpanId": self.root_id,
            "name": name,
            "kind": kind,
            "startTimeUnixNano": start.to_string(),
            "endTimeUnixNano": end.to_string(),
            "attributes": attributes,
        });
        if let Some(message) = error {
            span["status"] = json!({"code": 2, "message": message});
        }
        self.spans.push(span);
    }

    /// The span of the next `latency_ms`, and the clock moved past it.
    fn advance(&mut self, latency_ms: u64) -> (u64, u64) {
        let start = self.now;
        self.now = self
            .now
            .saturating_add(latency_ms.saturating_mul(1_000_000));
        (start, self.now)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn trace(t: &Trace<'_>, content: bool) -> Vec<Value> {
    let start = nanos(t.start);
    let trace_id = hex(&Sha256::digest(format!("{}@{start}", t.name))[..16]);
    let root_id = hex(&Sha256::digest(format!("{trace_id}/0"))[..8]);
    let mut b = Builder {
        trace_id,
        root_id,
        spans: Vec::new(),
        now: start,
        content,
    };
    // Tool calls waiting for the request that sends their result back: when the answer
    // asking for them ended.
    let mut pending: Vec<(ToolCall, u64, Option<String>)> = Vec::new();
    for (_, s) in show::Walk::new(t.cassette) {
        match &s {
            ShownStep::ModelCall(c) => {
                tool_spans(&mut b, &mut pending, Some(c));
                chat(&mut b, c);
                let end = b.now;
                for (n, tc) in c.tool_calls.iter().enumerate() {
                    let spoiled = (c.spoiled.as_ref())
                        .filter(|s| s.call == n)
                        .map(|s| s.fault.clone());
                    pending.push((tc.call.clone(), end, spoiled));
                }
            }
            ShownStep::Failed {
                route,
                model,
                status,
                latency_ms,
                error,
            } => {
                let when = b.advance(*latency_ms);
                let mut attrs = chat_attributes(route, model);
                attrs.push(attr("http.response.status_code", u64::from(*status)));
                attrs.push(attr("error.type", status.to_string()));
                let why = error.clone().unwrap_or_else(|| format!("HTTP {status}"));
                b.span(&format!("chat {model}"), CLIENT, when, attrs, Some(why));
            }
            ShownStep::Mcp {
                server,
                method,
                tool,
                arguments,
                error,
                latency_ms,
            } => mcp_span(
                &mut b,
                (server, method, tool.as_deref()),
                arguments.as_ref(),
                *error,
                *latency_ms,
            ),
            ShownStep::A2a(a) => a2a_span(&mut b, a),
            ShownStep::Http {
                method,
                path,
                status,
                latency_ms,
            } => {
                let when = b.advance(*latency_ms);
                let attrs = vec![
                    attr("http.request.method", method.as_str()),
                    attr("url.path", path.split('?').next().unwrap_or_default()),
                    attr("http.response.status_code", u64::from(*status)),
                ];
                let error = (*status >= 500).then(|| format!("HTTP {status}"));
                b.span(method, CLIENT, when, attrs, error);
            }
        }
    }
    tool_spans(&mut b, &mut pending, None);
    let mut spans = std::mem::take(&mut b.spans);
    spans.insert(0, agent_span(&b, t, start));
    spans
}

/// The span of an MCP request (`tools/call` as `execute_tool`).
fn mcp_span(
    b: &mut Builder,
    (server, method, tool): (&str, &str, Option<&str>),
    arguments: Option<&Value>,
    error: bool,
    latency_ms: u64,
) {
    let when = b.advance(latency_ms);
    let mut attrs = vec![
        attr("mcp.method.name", method),
        attr("agentproxy.mcp.server", server),
    ];
    if let Some(tool) = tool {
        attrs.push(attr("gen_ai.tool.name", tool));
        attrs.push(attr("gen_ai.operation.name", "execute_tool"));
    }
    if let (Some(a), true) = (arguments, b.content) {
        attrs.push(attr("gen_ai.tool.call.arguments", a.to_string()));
    }
    let name = match tool {
        Some(tool) => format!("{method} {tool}"),
        None => method.to_owned(),
    };
    let error = error.then(|| "the MCP server answered with an error".to_owned());
    b.span(&name, CLIENT, when, attrs, error);
}

/// The span of a call to a remote agent over A2A: a delegation as the GenAI conventions'
/// `invoke_agent` of a remote agent (a client span named after it), any other call by its
/// method.
fn a2a_span(b: &mut Builder, a: &ShownA2a) {
    let (agent, method) = (a.agent.as_str(), a.method.as_str());
    let (message, reply) = (a.message.as_deref(), a.reply.as_deref());
    let when = b.advance(a.latency_ms);
    let mut attrs = vec![attr("rpc.method", method), attr("gen_ai.agent.name", agent)];
    let name = match message {
        Some(_) => {
            attrs.push(attr("gen_ai.operation.name", "invoke_agent"));
            format!("invoke_agent {agent}")
        }
        None => format!("{method} {agent}"),
    };
    if b.content {
        if let Some(m) = message {
            attrs.push(attr("gen_ai.input.messages", m));
        }
        if let Some(r) = reply {
            attrs.push(attr("gen_ai.output.messages", r));
        }
    }
    let error = (a.error.as_ref()).map(|e| format!("the agent answered with an error: {e}"));
    b.span(&name, CLIENT, when, attrs, error);
}

/// The `invoke_agent` span over the whole trace.
fn agent_span(b: &Builder, t: &Trace<'_>, start: u64) -> Value {
    let mut attrs = vec![
        attr("gen_ai.operation.name", "invoke_agent"),
        attr("gen_ai.agent.name", t.name),
    ];
    let mut status = None;
    if let Some(c) = t.case {
        attrs.push(attr("agentproxy.spec", c.spec.as_str()));
        attrs.push(attr("agentproxy.case.status", c.status.as_str()));
        attrs.push(attr("agentproxy.cassette", c.cassette.as_str()));
        if matches!(c.status, Status::Failed | Status::Error) {
            let why = match (&c.error, c.first_cause()) {
                (_, Some(cause)) => super::text::cause(&cause),
                (Some(e), None) => e.lines().next().unwrap_or_default().to_owned(),
                (None, None) => "failed".to_owned(),
            };
            status = Some(json!({"code": 2, "message": why}));
        }
    }
    let mut span = json!({
        "traceId": b.trace_id,
        "spanId": b.root_id,
        "name": format!("invoke_agent {}", t.name),
        "kind": INTERNAL,
        "startTimeUnixNano": start.to_string(),
        "endTimeUnixNano": b.now.max(start).to_string(),
        "attributes": attrs,
    });
    if let Some(status) = status {
        span["status"] = status;
    }
    span
}

/// `gen_ai.provider.name` of a route: its dialect's provider (Azure OpenAI's requests
/// take the OpenAI routes, and are named `openai`; Claude and Gemini on Vertex AI take
/// Anthropic's and Gemini's).
fn provider(route: &str) -> &'static str {
    match route.split('.').next().unwrap_or_default() {
        "anthropic" => "anthropic",
        "gemini" => "gcp.gemini",
        "ollama" => "ollama",
        "bedrock" => "aws.bedrock",
        _ => "openai",
    }
}

fn chat_attributes(route: &str, model: &str) -> Vec<Value> {
    vec![
        attr("gen_ai.operation.name", "chat"),
        attr("gen_ai.provider.name", provider(route)),
        attr("gen_ai.request.model", model),
        attr("agentproxy.route", route),
    ]
}

fn usage_attributes(u: &Usage) -> Vec<Value> {
    if u.calls_without_usage > 0 && u.prompt == 0 && u.completion == 0 {
        return Vec::new();
    }
    vec![
        attr("gen_ai.usage.input_tokens", u.prompt),
        attr("gen_ai.usage.output_tokens", u.completion),
        attr("gen_ai.usage.cache_read.input_tokens", u.cache_read),
        attr("gen_ai.usage.cache_creation.input_tokens", u.cache_creation),
    ]
}

fn chat(b: &mut Builder, c: &ShownCall) {
    let when = b.advance(c.latency_ms);
    let mut attrs = chat_attributes(&c.route, &c.model);
    attrs.extend(usage_attributes(&c.usage));
    attrs.push(attr("http.response.status_code", u64::from(c.status)));
    if b.content {
        if let Some(system) = &c.system {
            let parts = json!([{"type": "text", "content": system}]);
            attrs.push(attr("gen_ai.system_instructions", parts.to_string()));
        }
        let input: Vec<Value> = c.messages.iter().map(message).collect();
        attrs.push(attr(
            "gen_ai.input.messages",
            Value::Array(input).to_string(),
        ));
        let mut parts = Vec::new();
        if let Some(r) = &c.reply {
            parts.push(json!({"type": "text", "content": r}));
        }
        for tc in &c.tool_calls {
            parts.push(json!({"type": "tool_call", "id": tc.call.id, "name": tc.call.name, "arguments": tc.call.arguments}));
        }
        let output = json!([{"role": "assistant", "parts": parts}]);
        attrs.push(attr("gen_ai.output.messages", output.to_string()));
    }
    b.span(&format!("chat {}", c.model), CLIENT, when, attrs, None);
}

/// A message of the conversation in the conventions' shape: a role and its parts.
fn message(m: &Message) -> Value {
    match m {
        Message::Text { role, text } => {
            json!({"role": role, "parts": [{"type": "text", "content": text}]})
        }
        Message::ToolCall { name, arguments } => {
            json!({"role": "assistant", "parts": [{"type": "tool_call", "name": name, "arguments": arguments}]})
        }
        Message::ToolResult {
            call_id, content, ..
        } => {
            json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": content}]})
        }
        Message::Other { role, item } => json!({"role": role, "parts": [{"type": item}]}),
    }
}

/// The `execute_tool` spans of the pending calls whose results `next` sends back (all
/// of them, with no result, when the trajectory ended without one).
fn tool_spans(
    b: &mut Builder,
    pending: &mut Vec<(ToolCall, u64, Option<String>)>,
    next: Option<&ShownCall>,
) {
    let results: HashMap<&str, &Value> = next
        .map(|c| c.messages.iter())
        .into_iter()
        .flatten()
        .filter_map(|m| match m {
            Message::ToolResult {
                call_id, content, ..
            } => Some((call_id.as_str(), content)),
            _ => None,
        })
        .collect();
    let now = b.now;
    let mut waiting = Vec::new();
    for (call, asked, spoiled) in pending.drain(..) {
        let result = results.get(call.id.as_str());
        if next.is_some() && result.is_none() {
            waiting.push((call, asked, spoiled));
            continue;
        }
        let mut attrs = vec![
            attr("gen_ai.operation.name", "execute_tool"),
            attr("gen_ai.tool.name", call.name.as_str()),
            attr("gen_ai.tool.call.id", call.id.as_str()),
        ];
        if let Some(next) = next {
            attrs.push(attr(
                "agentproxy.tool.result.mocked",
                next.mocked.contains(&call.id),
            ));
        }
        if let Some(fault) = &spoiled {
            attrs.push(attr("agentproxy.fault", fault.as_str()));
        }
        if b.content {
            attrs.push(attr(
                "gen_ai.tool.call.arguments",
                call.arguments.to_string(),
            ));
            if let Some(r) = result {
                attrs.push(attr(
                    "gen_ai.tool.call.result",
                    crate::neutral::result_text(r),
                ));
            }
        }
        b.span(
            &format!("execute_tool {}", call.name),
            INTERNAL,
            (asked, now.max(asked)),
            attrs,
            None,
        );
    }
    *pending = waiting;
}

#[cfg(test)]
mod tests;
