//! `agentproxy show CASSETTE --format html`: a recording's trajectory as one page, turn by
//! turn as `show` prints it: each model call with what it added to the conversation
//! (collapsed), the tool calls it asked for with what the MCP boundary saw and the marks of
//! a spec's mocks and faults, its reply; failed calls, MCP and plain HTTP requests where
//! they happened; the totals. A result a mock wrote is shown open, under the tool call it
//! answers (it reached the model in the next request, whose additions are folded), since
//! it is what the test decided. No script: the page only shows.

use std::fmt::Write as _;

use super::{document, esc, esc_cut, json_block, step, MAX_VALUE};
use crate::neutral::{result_text, Message};
use crate::trajectory::show::{Shown, ShownA2a, ShownCall, ShownStep};

/// The page of `shown`, titled with the cassette's `name`.
pub fn render(name: &str, shown: &Shown) -> String {
    let mut body = format!(
        "<header>\n<h1>{}</h1>\n<div class=\"sub\">recorded {} by {}</div>\n",
        esc(name),
        esc(&shown.recorded_at),
        esc(&shown.recorder)
    );
    if let Some(by) = &shown.recorded_by {
        let _ = writeln!(
            body,
            "<div class=\"sub\">recorded by {}</div>",
            esc(&by.describe())
        );
    }
    if let Some(t) = &shown.tolerated {
        let _ = writeln!(body, "<div class=\"sub\">tolerated: {}</div>", esc(t));
    }
    let t = &shown.totals;
    let _ = writeln!(
        body,
        "<div class=\"counts\"><span class=\"count\"><b>{}</b> model calls</span><span class=\"count\"><b>{}</b> failed</span><span class=\"count\"><b>{}</b> tool calls</span><span class=\"count\">{}</span><span class=\"count\">{} ms</span></div>\n</header>\n<main>",
        t.model_calls,
        t.failed_calls,
        t.tool_calls,
        esc(&t.usage.to_string()),
        t.latency_ms
    );
    body.push_str("<ol class=\"timeline\">\n");
    for turn in &shown.turns {
        let _ = writeln!(
            body,
            "<li><div class=\"turn-head\">Turn {}</div>",
            turn.turn + 1
        );
        for s in &turn.steps {
            shown_step(&mut body, s);
        }
        body.push_str("</li>\n");
    }
    body.push_str("</ol>\n</main>\n");
    document(&format!("agentproxy show: {name}"), &body, false)
}

fn shown_step(out: &mut String, s: &ShownStep) {
    match s {
        ShownStep::ModelCall(c) => call(out, c),
        ShownStep::Failed {
            route,
            model,
            status,
            latency_ms,
            error,
        } => {
            let error = error
                .as_deref()
                .map(|e| format!(": {}", esc(e)))
                .unwrap_or_default();
            step(
                out,
                "failed",
                &format!(
                    "<span class=\"bad\">{} · {} · HTTP {status}</span> · {latency_ms} ms{error}",
                    esc(route),
                    esc(model)
                ),
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
            let mut line = format!("{} <code>{}</code>", esc(server), esc(method));
            if let Some(t) = tool {
                let _ = write!(line, " <code>{}</code>", esc(t));
            }
            if let Some(a) = arguments {
                let _ = write!(line, " {}", json_block(a));
            }
            if *error {
                line.push_str(" <span class=\"bad\">error</span>");
            }
            let _ = write!(line, " · {latency_ms} ms");
            step(out, "MCP", &line);
        }
        ShownStep::A2a(a) => step(out, "A2A", &a2a_line(a)),
        ShownStep::Http {
            method,
            path,
            status,
            latency_ms,
        } => step(
            out,
            "HTTP",
            &format!(
                "<code>{} {}</code> → {status} · {latency_ms} ms",
                esc(method),
                esc(path)
            ),
        ),
    }
}

/// A call to a remote agent: the agent, the method, the message and the answer.
fn a2a_line(a: &ShownA2a) -> String {
    let mut line = format!("{} <code>{}</code>", esc(&a.agent), esc(&a.method));
    if let Some(m) = &a.message {
        let _ = write!(line, ": {}", esc_cut(m, MAX_VALUE));
    }
    if let Some(s) = &a.state {
        let _ = write!(line, " → <code>{}</code>", esc(s));
    }
    if let Some(r) = &a.reply {
        let _ = write!(line, " {}", esc_cut(r, MAX_VALUE));
    }
    if let Some(e) = &a.error {
        let _ = write!(line, " <span class=\"bad\">error {}</span>", esc(e));
    }
    let _ = write!(line, " · {} ms", a.latency_ms);
    line
}

/// What a request added to the conversation, as steps (mocked results left out: they
/// are shown beside their calls).
fn added(c: &ShownCall) -> String {
    let mut added = String::new();
    if let Some(s) = &c.system {
        step(&mut added, "system", &esc_cut(s, MAX_VALUE));
    }
    if let Some(t) = &c.tools {
        step(&mut added, "tools", &esc(&t.join(", ")));
    }
    if let Some(p) = &c.params {
        let list: Vec<String> = p.iter().map(|(k, v)| format!("{k}={v}")).collect();
        step(&mut added, "params", &esc(&list.join(" ")));
    }
    for m in &c.messages {
        match m {
            Message::Text { role, text } => step(&mut added, role, &esc_cut(text, MAX_VALUE)),
            Message::ToolCall { name, arguments } => step(
                &mut added,
                "assistant",
                &format!("→ <code>{}</code> {}", esc(name), json_block(arguments)),
            ),
            // Shown above, beside its call.
            Message::ToolResult { call_id, .. } if c.mocked.contains(call_id) => {}
            Message::ToolResult { name, content, .. } => {
                let text = serde_json::Value::String(result_text(content));
                let name = name.as_deref().unwrap_or("tool");
                step(&mut added, &format!("← {name}"), &json_block(&text));
            }
            Message::Other { role, item } => step(&mut added, role, &format!("[{}]", esc(item))),
        }
    }
    added
}

fn call(out: &mut String, c: &ShownCall) {
    // The mocked results this request carries, beside the calls they answer (just above).
    for m in &c.messages {
        if let Message::ToolResult {
            call_id,
            name,
            content,
        } = m
        {
            if c.mocked.contains(call_id) {
                let text = serde_json::Value::String(result_text(content));
                step(
                    out,
                    &format!("← {}", name.as_deref().unwrap_or("tool")),
                    &format!("<span class=\"mark\">mocked</span> {}", json_block(&text)),
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "<div class=\"step\"><span class=\"label\">model call {}</span> {} · {} · {} ms · {}</div>",
        c.number,
        esc(&c.route),
        esc(&c.model),
        c.latency_ms,
        esc(&c.usage.to_string())
    );
    let added = added(c);
    if !added.is_empty() {
        let _ = writeln!(
            out,
            "<details class=\"step\"><summary>what this request added ({})</summary>\n{added}</details>",
            crate::report::text::count(c.messages.len(), "message", "messages")
        );
    }
    for (n, tc) in c.tool_calls.iter().enumerate() {
        let mut line = format!(
            "<code>{}</code> {}",
            esc(&tc.call.name),
            json_block(&tc.call.arguments)
        );
        if let Some(e) = &tc.execution {
            let _ = write!(line, " <span class=\"sub\">⇢ {}</span>", esc(e));
        }
        if let Some(s) = c.spoiled.as_ref().filter(|s| s.call == n) {
            let _ = write!(
                line,
                " <span class=\"mark\">the program got this call spoiled by {}</span>",
                esc(&s.fault)
            );
        }
        step(out, "→ tool call", &line);
    }
    if let Some(r) = &c.reply {
        step(out, "reply", &esc_cut(r, MAX_VALUE));
    }
}
