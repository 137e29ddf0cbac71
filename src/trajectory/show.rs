//! `agentproxy show`: a recording's trajectory for a human (or, as JSON, for tools).
//!
//! Turn by turn, each model call with only what it added to the conversation (not the
//! whole history again): the system prompt, tools and parameters when they first appear or
//! change, the new user messages and tool results (as the model was told them, mocks
//! included), then the tool calls the model asked for, its reply, token usage and latency.
//! Plain HTTP interactions are listed where they happened.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;

use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::executions::Executions;
use super::extract;
use super::render::clean;
use crate::cassette::format::{RecordedBy, Spoiled};
use crate::cassette::{Body, Cassette, Interaction};
use crate::neutral::{result_text, ToolCall, Usage};
use crate::neutral::{Message, ModelCall};

/// A recording, read for showing: read whole, its turns are a `Vec<ShownTurn>` and its
/// totals [`Totals`]; [`write_json`] fills both in as it walks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shown<T = Vec<ShownTurn>, U = Totals> {
    pub recorder: String,
    pub recorded_at: String,
    /// The spec case that recorded it, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_by: Option<RecordedBy>,
    /// What the cassette's match rules leave out of the match, in a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerated: Option<String>,
    pub turns: T,
    pub totals: U,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShownTurn<S = Vec<ShownStep>> {
    /// 0-based (the text form numbers turns from 1).
    pub turn: usize,
    pub steps: S,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ShownStep {
    ModelCall(Box<ShownCall>),
    /// A model call the upstream did not answer (a 429 the SDK retried, a 5xx, a stream
    /// cut short): not part of the trajectory, listed where it happened.
    Failed {
        route: String,
        model: String,
        status: u16,
        latency_ms: u64,
        /// The provider's error message, when the body has one.
        error: Option<String>,
    },
    /// A request to an MCP server through `agentproxy mcp`: for `tools/call`, the tool
    /// and the arguments it was executed with.
    Mcp {
        server: String,
        method: String,
        tool: Option<String>,
        arguments: Option<Value>,
        /// The server answered with an error.
        error: bool,
        latency_ms: u64,
    },
    /// A call to a remote agent over A2A.
    A2a(ShownA2a),
    /// An interaction on any other path, recorded as plain HTTP.
    Http {
        method: String,
        path: String,
        status: u16,
        latency_ms: u64,
    },
}

/// A call to a remote agent over A2A: for a delegation (a message sent), the message and
/// what the agent answered (its text, the task's state, or its error).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShownA2a {
    pub agent: String,
    pub method: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub latency_ms: u64,
}

impl ShownA2a {
    /// The call in a line of text: `weather: "weather in Paris" → completed "18C" · 12 ms`.
    fn text(&self) -> String {
        let quoted = |t: &str| format!("\"{}\"", clean(t));
        let asked = match &self.message {
            Some(m) => format!(": {}", quoted(m)),
            None => format!(" {}", clean(&self.method)),
        };
        let answered: Vec<String> = [
            self.error.as_ref().map(|e| format!("error {}", clean(e))),
            (self.state.as_ref()).map(|s| clean(&crate::dialect::a2a::state_word(s))),
            self.reply.as_ref().map(|r| quoted(r)),
        ]
        .into_iter()
        .flatten()
        .collect();
        let answered = match answered.is_empty() {
            true => String::new(),
            false => format!(" → {}", answered.join(" ")),
        };
        format!(
            "{}{asked}{answered} · {} ms",
            clean(&self.agent),
            self.latency_ms
        )
    }
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShownCall {
    /// 1-based among the turn's model calls.
    pub number: usize,
    pub route: String,
    pub model: String,
    pub status: u16,
    pub latency_ms: u64,
    pub usage: Usage,
    /// The system prompt, when it is the first or differs from the previous call's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The offered tools' names, when they are the first or differ from the previous call's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Request parameters (`temperature`, …), when they are the first or changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<BTreeMap<String, Value>>,
    /// What this request added to the conversation.
    pub messages: Vec<Message>,
    /// The ids of the tool calls whose results here a spec's mock wrote.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mocked: Vec<String>,
    /// The tool call of this answer a fault spoiled on its way to the program.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spoiled: Option<Spoiled>,
    /// The tool calls the model asked for.
    pub tool_calls: Vec<ShownToolCall>,
    pub reply: Option<String>,
}

/// A tool call and what the MCP boundary saw of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShownToolCall {
    #[serde(flatten)]
    pub call: ToolCall,
    /// `executed by SERVER` (`… with ARGS` when the server got other arguments) or `not
    /// executed` for a tool an MCP server listed; `None` for a function of the program.
    pub execution: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Answered model calls.
    pub model_calls: usize,
    /// Model calls the upstream did not answer.
    pub failed_calls: usize,
    pub tool_calls: usize,
    pub usage: Usage,
    pub latency_ms: u64,
}

/// The steps of a recording as `show` shows them, one at a time, each with its turn: only
/// the last model call is kept to compare the next with, so showing a recording of any
/// size holds little more than its cassette. [`Walk::totals`] counts what was walked.
pub struct Walk<'a> {
    steps: extract::Steps<'a, 'static>,
    executions: Executions,
    previous: Option<ModelCall>,
    /// The turn of the last step, and how many model calls it had so far.
    turn: Option<(usize, usize)>,
    pub totals: Totals,
}

impl<'a> Walk<'a> {
    pub fn new(cassette: &'a Cassette) -> Walk<'a> {
        Walk {
            steps: extract::Steps::new(&cassette.interactions, None),
            executions: Executions::pair(&cassette.interactions),
            previous: None,
            turn: None,
            totals: Totals::default(),
        }
    }
}

impl Iterator for Walk<'_> {
    /// The turn and the step.
    type Item = (usize, ShownStep);

    fn next(&mut self) -> Option<(usize, ShownStep)> {
        let (it, s) = self.steps.next()?;
        let calls = match self.turn {
            Some((turn, calls)) if turn == s.turn => calls,
            _ => 0,
        };
        self.turn = Some((s.turn, calls));
        self.totals.latency_ms += it.latency_ms;
        if it.route == crate::dialect::mcp::ROUTE {
            return Some((s.turn, mcp_step(it)));
        }
        if it.route == crate::dialect::a2a::ROUTE {
            return Some((s.turn, a2a_step(it)));
        }
        let Some(call) = &s.call else {
            let step = ShownStep::Http {
                method: it.request.method.clone(),
                path: it.request.path.clone(),
                status: it.response.status,
                latency_ms: it.latency_ms,
            };
            return Some((s.turn, step));
        };
        if s.model_call().is_none() {
            self.totals.failed_calls += 1;
            return Some((s.turn, failed_step(it, call)));
        }
        let prev = self.previous.as_ref();
        let names = |c: &ModelCall| c.tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        let changed = |f: &dyn Fn(&ModelCall) -> bool| prev.is_none_or(f);
        self.turn = Some((s.turn, calls + 1));
        self.totals.model_calls += 1;
        self.totals.tool_calls += call.tool_calls.len();
        self.totals.usage += call.usage;
        let shown = ShownCall {
            number: calls + 1,
            route: call.route.clone(),
            model: call.model.clone(),
            status: it.response.status,
            latency_ms: it.latency_ms,
            usage: call.usage,
            system: call
                .system
                .clone()
                .filter(|_| changed(&|p| p.system != call.system)),
            tools: Some(names(call)).filter(|n| !n.is_empty() && changed(&|p| names(p) != *n)),
            params: Some(call.params.clone())
                .filter(|p| !p.is_empty() && changed(&|q| q.params != *p)),
            messages: s.new,
            mocked: it.mocked.clone(),
            spoiled: it.spoiled.clone(),
            tool_calls: call
                .tool_calls
                .iter()
                .map(|c| ShownToolCall {
                    call: c.clone(),
                    execution: self.executions.describe(c),
                })
                .collect(),
            reply: call.reply.clone().filter(|r| !r.is_empty()),
        };
        self.previous = s.call;
        Some((s.turn, ShownStep::ModelCall(Box::new(shown))))
    }
}

/// `cassette`'s heading with `turns` and `totals`.
fn shown<T, U>(cassette: &Cassette, turns: T, totals: U) -> Shown<T, U> {
    Shown {
        recorder: cassette.recorder.clone(),
        recorded_at: cassette.recorded_at.clone(),
        recorded_by: cassette.recorded_by.clone(),
        tolerated: cassette.match_rules.describe(),
        turns,
        totals,
    }
}

/// A cassette read whole for showing (the HTML page needs it all before it begins: its
/// totals come first; [`write_text`], [`write_json`] and the OTLP export take a step at a
/// time from a [`Walk`]).
pub fn read(cassette: &Cassette) -> Shown {
    let mut walk = Walk::new(cassette);
    let mut turns: Vec<ShownTurn> = Vec::new();
    for (turn, step) in &mut walk {
        match turns.last_mut() {
            Some(t) if t.turn == turn => t.steps.push(step),
            _ => turns.push(ShownTurn {
                turn,
                steps: vec![step],
            }),
        }
    }
    shown(cassette, turns, walk.totals)
}

/// An MCP message the stand-in relayed, with the tool execution it was, if one.
fn mcp_step(it: &Interaction) -> ShownStep {
    let done = it.execution();
    let body = it.response.body.as_ref().and_then(Body::as_json);
    ShownStep::Mcp {
        server: it.request.path.clone(),
        method: it.request.method.clone(),
        tool: done.as_ref().map(|e| e.tool.clone()),
        error: done.as_ref().map_or_else(
            || body.is_some_and(|b| b.get("error").is_some()),
            |e| e.is_error,
        ),
        arguments: done.map(|e| e.arguments),
        latency_ms: it.latency_ms,
    }
}

/// A call to a remote agent, with the delegation it was, if one.
fn a2a_step(it: &Interaction) -> ShownStep {
    let answer = it.response.body.as_ref().and_then(Body::as_json);
    let reply = answer.map(crate::dialect::a2a::reply);
    let delegation = it.delegation();
    ShownStep::A2a(ShownA2a {
        agent: it.request.path.clone(),
        method: it.request.method.clone(),
        message: delegation.as_ref().map(|d| d.message.clone()),
        state: reply.as_ref().and_then(|r| r.state.clone()),
        error: reply.as_ref().and_then(|r| r.error.clone()),
        reply: (delegation.map(|d| d.reply.text)).filter(|t| !t.is_empty()),
        latency_ms: it.latency_ms,
    })
}

/// A model call the API refused, with the message it gave.
fn failed_step(it: &Interaction, call: &ModelCall) -> ShownStep {
    let body = it.response.body.as_ref().and_then(Body::as_json);
    ShownStep::Failed {
        route: call.route.clone(),
        model: call.model.clone(),
        status: it.response.status,
        latency_ms: it.latency_ms,
        error: body
            .and_then(crate::dialect::error_message)
            .map(str::to_owned),
    }
}

/// Write the trajectory as JSON (the serde form of [`Shown`]), ending with a newline, a
/// step at a time as [`Walk`] reads them.
pub fn write_json(cassette: &Cassette, mut out: impl io::Write) -> io::Result<()> {
    let stream = RefCell::new(Stream {
        walk: Walk::new(cassette),
        next: None,
    });
    let doc = shown(cassette, Turns(&stream), Counted(&stream));
    serde_json::to_writer_pretty(&mut out, &doc)?;
    out.write_all(b"\n")
}

/// A walk serialized as it goes: the step looked at to see whether its turn goes on.
struct Stream<'a> {
    walk: Walk<'a>,
    next: Option<(usize, ShownStep)>,
}

impl Stream<'_> {
    /// The turn of the next step.
    fn next_turn(&mut self) -> Option<usize> {
        if self.next.is_none() {
            self.next = self.walk.next();
        }
        self.next.as_ref().map(|(turn, _)| *turn)
    }

    /// The next step, if it belongs to `turn`.
    fn next_in(&mut self, turn: usize) -> Option<ShownStep> {
        if self.next_turn()? != turn {
            return None;
        }
        self.next.take().map(|(_, step)| step)
    }
}

/// The turns of a [`Stream`], serialized as they are walked.
struct Turns<'s, 'a>(&'s RefCell<Stream<'a>>);

/// The steps of one turn of a [`Stream`].
struct TurnSteps<'s, 'a> {
    turn: usize,
    stream: &'s RefCell<Stream<'a>>,
}

/// The totals of a [`Stream`], serialized after its turns: [`Shown`] declares `totals`
/// after `turns`, and serde writes fields in that order.
struct Counted<'s, 'a>(&'s RefCell<Stream<'a>>);

impl Serialize for Turns<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        loop {
            let next = self.0.borrow_mut().next_turn();
            let Some(turn) = next else { break };
            let steps = TurnSteps {
                turn,
                stream: self.0,
            };
            seq.serialize_element(&ShownTurn { turn, steps })?;
        }
        seq.end()
    }
}

impl Serialize for TurnSteps<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        loop {
            let next = self.stream.borrow_mut().next_in(self.turn);
            let Some(step) = next else { break };
            seq.serialize_element(&step)?;
        }
        seq.end()
    }
}

impl Serialize for Counted<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut stream = self.0.borrow_mut();
        debug_assert!(stream.next_turn().is_none(), "totals before the last turn");
        stream.walk.totals.serialize(serializer)
    }
}

/// Write the trajectory as text, ending with a newline, a step at a time as [`Walk`]
/// reads them.
pub fn write_text(cassette: &Cassette, mut out: impl io::Write) -> io::Result<()> {
    let heading = shown(cassette, (), ());
    let mut piece = String::new();
    let _ = writeln!(
        piece,
        "recorded {} by {}",
        clean(&heading.recorded_at),
        clean(&heading.recorder)
    );
    if let Some(by) = &heading.recorded_by {
        let _ = writeln!(piece, "recorded by {}", clean(&by.describe()));
    }
    if let Some(t) = &heading.tolerated {
        let _ = writeln!(piece, "tolerated: {}", clean(t));
    }
    let mut walk = Walk::new(cassette);
    let mut turn = None;
    for (t, step) in &mut walk {
        if turn != Some(t) {
            let _ = writeln!(piece, "\nturn {}", t + 1);
            turn = Some(t);
        }
        step_text(&mut piece, &step);
        out.write_all(piece.as_bytes())?;
        piece.clear();
    }
    let t = &walk.totals;
    let failed = match t.failed_calls {
        0 => String::new(),
        n => format!(" (and {n} failed)"),
    };
    let _ = writeln!(
        piece,
        "\ntotal: {} model call{}{failed}, {} tool call{}, {}, {} ms",
        t.model_calls,
        if t.model_calls == 1 { "" } else { "s" },
        t.tool_calls,
        if t.tool_calls == 1 { "" } else { "s" },
        t.usage,
        t.latency_ms
    );
    out.write_all(piece.as_bytes())
}

fn step_text(out: &mut String, step: &ShownStep) {
    match step {
        ShownStep::Http {
            method,
            path,
            status,
            latency_ms,
        } => {
            let _ = writeln!(
                out,
                "  HTTP {} {} → {status} · {latency_ms} ms",
                clean(method),
                clean(path)
            );
        }
        ShownStep::Mcp {
            server,
            method,
            tool,
            arguments,
            error,
            latency_ms,
        } => {
            let what = match (tool, arguments) {
                (Some(t), Some(a)) => format!("{} {}", clean(t), clean(&a.to_string())),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "  MCP {} {}{}{what}{} · {latency_ms} ms",
                clean(server),
                clean(method),
                if what.is_empty() { "" } else { " " },
                if *error { " → error" } else { "" }
            );
        }
        ShownStep::A2a(a) => {
            let _ = writeln!(out, "  a2a {}", a.text());
        }
        ShownStep::ModelCall(c) => call_text(out, c),
        ShownStep::Failed {
            route,
            model,
            status,
            latency_ms,
            error,
        } => {
            let _ = writeln!(
                out,
                "  failed call · {} · {} · HTTP {status} · {latency_ms} ms",
                clean(route),
                clean(model)
            );
            if let Some(e) = error {
                field(out, "error:", e);
            }
        }
    }
}

/// `label text`, continuation lines aligned under the text.
fn field(out: &mut String, label: &str, text: &str) {
    const INDENT: &str = "    ";
    let pad = " ".repeat(INDENT.len() + label.chars().count() + 1);
    let text = clean(text);
    let mut lines = text.lines();
    let _ = writeln!(out, "{INDENT}{label} {}", lines.next().unwrap_or_default());
    for l in lines {
        let _ = writeln!(out, "{}", format!("{pad}{l}").trim_end());
    }
}

fn call_text(out: &mut String, c: &ShownCall) {
    let _ = writeln!(
        out,
        "  model call {} · {} · {} · {} ms · {}",
        c.number,
        clean(&c.route),
        clean(&c.model),
        c.latency_ms,
        c.usage
    );
    if let Some(s) = &c.system {
        field(out, "system:", s);
    }
    if let Some(t) = &c.tools {
        field(out, "tools:", &t.join(", "));
    }
    if let Some(p) = &c.params {
        let list: Vec<String> = p.iter().map(|(k, v)| format!("{k}={v}")).collect();
        field(out, "params:", &list.join(" "));
    }
    for m in &c.messages {
        match m {
            Message::Text { role, text } => field(out, &format!("{role}:"), text),
            Message::ToolCall { name, arguments } => {
                field(out, "assistant:", &format!("→ {name} {arguments}"))
            }
            Message::ToolResult {
                call_id,
                name,
                content,
            } => {
                let name = name.as_deref().unwrap_or("tool");
                let mocked = if c.mocked.contains(call_id) {
                    " (mocked)"
                } else {
                    ""
                };
                field(out, &format!("← {name}{mocked}:"), &result_text(content))
            }
            Message::Other { role, item } => field(out, &format!("{role}:"), &format!("[{item}]")),
        }
    }
    for (n, tc) in c.tool_calls.iter().enumerate() {
        let mut text = tc.call.arguments.to_string();
        if let Some(e) = &tc.execution {
            text = format!("{text}  ⇢ {e}");
        }
        if let Some(s) = c.spoiled.as_ref().filter(|s| s.call == n) {
            text = format!(
                "{text}  ⚡ the program got this call spoiled by {}",
                s.fault
            );
        }
        field(out, &format!("→ {}", tc.call.name), &text);
    }
    if let Some(r) = &c.reply {
        field(out, "reply:", r);
    }
}
