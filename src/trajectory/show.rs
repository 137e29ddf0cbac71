//! `agentproxy show`: a recording's trajectory for a human (or, as JSON, for tools).
//!
//! Turn by turn, each model call with only what it added to the conversation (not the
//! whole history again): the system prompt, tools and parameters when they first appear or
//! change, the new user messages and tool results (as the model was told them, mocks
//! included), then the tool calls the model asked for, its reply, token usage and latency.
//! Plain HTTP interactions are listed where they happened.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::executions::Executions;
use super::extract;
use super::render::clean;
use crate::cassette::format::{RecordedBy, Spoiled};
use crate::cassette::{Body, Cassette, Interaction};
use crate::neutral::{result_text, ToolCall, Usage};
use crate::neutral::{Message, ModelCall};

/// A recording, read for showing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shown {
    pub recorder: String,
    pub recorded_at: String,
    /// The spec case that recorded it, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_by: Option<RecordedBy>,
    /// What the cassette's match rules leave out of the match, in a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerated: Option<String>,
    pub turns: Vec<ShownTurn>,
    pub totals: Totals,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShownTurn {
    /// 0-based (the text form numbers turns from 1).
    pub turn: usize,
    pub steps: Vec<ShownStep>,
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
    /// An interaction on any other path, recorded as plain HTTP.
    Http {
        method: String,
        path: String,
        status: u16,
        latency_ms: u64,
    },
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

/// Read a cassette for showing, one step at a time: only the last model call is kept to
/// compare the next with, so a large recording costs little more than its file.
pub fn read(cassette: &Cassette) -> Shown {
    let executions = Executions::pair(&cassette.interactions);
    let mut turns: Vec<ShownTurn> = Vec::new();
    let mut totals = Totals::default();
    let mut previous: Option<ModelCall> = None;
    for (it, s) in extract::Steps::new(&cassette.interactions, None) {
        if turns.last().is_none_or(|t| t.turn != s.turn) {
            turns.push(ShownTurn {
                turn: s.turn,
                steps: Vec::new(),
            });
        }
        let Some(turn) = turns.last_mut() else {
            continue;
        };
        totals.latency_ms += it.latency_ms;
        if it.route == crate::dialect::mcp::ROUTE {
            turn.steps.push(mcp_step(it));
            continue;
        }
        let Some(call) = &s.call else {
            turn.steps.push(ShownStep::Http {
                method: it.request.method.clone(),
                path: it.request.path.clone(),
                status: it.response.status,
                latency_ms: it.latency_ms,
            });
            continue;
        };
        if s.model_call().is_none() {
            totals.failed_calls += 1;
            turn.steps.push(failed_step(it, call));
            continue;
        }
        let prev = previous.as_ref();
        let names = |c: &ModelCall| c.tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        let changed = |f: &dyn Fn(&ModelCall) -> bool| prev.is_none_or(f);
        let number = 1 + turn
            .steps
            .iter()
            .filter(|x| matches!(x, ShownStep::ModelCall(_)))
            .count();
        totals.model_calls += 1;
        totals.tool_calls += call.tool_calls.len();
        totals.usage += call.usage;
        turn.steps.push(ShownStep::ModelCall(Box::new(ShownCall {
            number,
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
                    execution: executions.describe(c),
                })
                .collect(),
            reply: call.reply.clone().filter(|r| !r.is_empty()),
        })));
        previous = s.call;
    }
    Shown {
        recorder: cassette.recorder.clone(),
        recorded_at: cassette.recorded_at.clone(),
        recorded_by: cassette.recorded_by.clone(),
        tolerated: cassette.match_rules.describe(),
        turns,
        totals,
    }
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

/// The trajectory as JSON (the serde form of [`Shown`]), ending with a newline.
pub fn json(shown: &Shown) -> String {
    // Serializing these types cannot fail: every map key is a string.
    let mut s = serde_json::to_string_pretty(shown).unwrap_or_default();
    s.push('\n');
    s
}

/// The trajectory as text, ending with a newline.
pub fn text(shown: &Shown) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "recorded {} by {}",
        clean(&shown.recorded_at),
        clean(&shown.recorder)
    );
    if let Some(by) = &shown.recorded_by {
        let _ = writeln!(out, "recorded by {}", clean(&by.describe()));
    }
    if let Some(t) = &shown.tolerated {
        let _ = writeln!(out, "tolerated: {}", clean(t));
    }
    for t in &shown.turns {
        let _ = writeln!(out, "\nturn {}", t.turn + 1);
        for s in &t.steps {
            match s {
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
                ShownStep::ModelCall(c) => call_text(&mut out, c),
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
                        field(&mut out, "error:", e);
                    }
                }
            }
        }
    }
    let t = &shown.totals;
    let failed = match t.failed_calls {
        0 => String::new(),
        n => format!(" (and {n} failed)"),
    };
    let _ = writeln!(
        out,
        "\ntotal: {} model call{}{failed}, {} tool call{}, {}, {} ms",
        t.model_calls,
        if t.model_calls == 1 { "" } else { "s" },
        t.tool_calls,
        if t.tool_calls == 1 { "" } else { "s" },
        t.usage,
        t.latency_ms
    );
    out
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
