//! `--report html`: the run as one HTML file to open from a CI artifact. A summary,
//! then every case, failures first, each with its first cause in a line, what failed in
//! full (near-miss reports, assertions with expected and actual), and its trajectory turn
//! by turn: input, faults and what came next, tool calls with arguments and results
//! (marked when a mock or an MCP server stood behind them), replies, assertions; then
//! crash and fuzz runs and the re-record diff. Filter by status and search by name (the
//! one inline script; `#status=failed&q=paris` in the address does the same).

mod page;
pub mod show;

use std::fmt::Write as _;

use serde_json::Value;

use super::text::{self, count, secs};
use super::{AssertionResult, CallExecution, CaseReport, RunReport, Status, TurnReport};
use crate::matching::nearmiss::NearMiss;
use crate::trajectory::html::side_by_side;
use crate::trajectory::textdiff;

pub use page::{document, esc, esc_cut};

/// Longest value shown whole (a tool result, arguments, output); the rest is counted.
const MAX_VALUE: usize = 4_000;
/// Longest near-miss report or diff shown whole.
const MAX_REPORT: usize = 40_000;

/// The report as an HTML document.
pub fn render(run: &RunReport) -> String {
    let title = format!("agentproxy test: {}", text::summary_line(&run.summary));
    let mut body = String::new();
    header(&mut body, run);
    controls(&mut body, run);
    body.push_str("<main>\n");
    let mut order: Vec<&CaseReport> = run.cases.iter().collect();
    // Failures first, then errors, passes and skips, each in run order.
    order.sort_by_key(|c| match c.status {
        Status::Failed => 0,
        Status::Error => 1,
        Status::Passed => 2,
        Status::Skipped => 3,
    });
    for (n, c) in order.into_iter().enumerate() {
        case(&mut body, n, c);
    }
    body.push_str("<p id=\"empty\" class=\"empty\" hidden>No case matches.</p>\n</main>\n");
    document(&title, &body, true)
}

fn header(out: &mut String, run: &RunReport) {
    let usage = run
        .cases
        .iter()
        .fold(crate::neutral::Usage::default(), |mut u, c| {
            u += c.usage;
            u
        });
    let _ = writeln!(
        out,
        "<header>\n<h1>agentproxy test</h1>\n<div class=\"sub\">{}{}; {}</div>",
        esc(&text::run_line(run)),
        run.shard
            .as_ref()
            .map(|s| format!(" (shard {})", esc(&s.to_string())))
            .unwrap_or_default(),
        esc(&usage.to_string())
    );
    if let Some(line) = text::containment_line(run) {
        let _ = writeln!(out, "<div class=\"sub\">{}</div>", esc(&line));
    }
    out.push_str("<div class=\"counts\">");
    for (n, word) in text::counts(&run.summary) {
        let _ = write!(out, "<span class=\"count\"><b>{n}</b> {}</span>", esc(word));
    }
    out.push_str("</div>\n</header>\n");
}

fn controls(out: &mut String, run: &RunReport) {
    let s = &run.summary;
    out.push_str("<nav aria-label=\"Filter cases\">\n<div role=\"group\" aria-label=\"Status\">");
    for (filter, label, n) in [
        ("all", "All", run.cases.len()),
        ("failed", "Failed", s.failed + s.errors),
        ("passed", "Passed", s.passed),
        ("skipped", "Skipped", s.skipped),
    ] {
        let _ = write!(
            out,
            "<button type=\"button\" data-filter=\"{filter}\" aria-pressed=\"{}\">{label} ({n})</button> ",
            filter == "all"
        );
    }
    out.push_str(
        "</div>\n<input type=\"search\" id=\"search\" placeholder=\"Search cases by name ( / )\" \
         aria-label=\"Search cases by name\">\n<span id=\"shown\" class=\"shown\" aria-live=\"polite\"></span>\n</nav>\n",
    );
}

fn case(out: &mut String, n: usize, c: &CaseReport) {
    let status = c.status.as_str();
    // An error is a failure for the filter, and keeps its own word.
    let filters = match c.status {
        Status::Error => "error failed",
        _ => status,
    };
    let calls: usize = c.turns.iter().map(|t| t.tool_calls.len()).sum();
    let _ = writeln!(
        out,
        "<section class=\"case {status}\" id=\"case-{n}\" data-status=\"{filters}\" data-name=\"{}\">\n<details{}>\n<summary><span class=\"badge\">{}</span> <span class=\"name\">{}</span> <span class=\"spec\">{}</span> <span class=\"meta\">{} · {} · {} · {} · {}</span>",
        esc(&text::label(c)),
        if matches!(c.status, Status::Failed | Status::Error) { " open" } else { "" },
        status.to_uppercase(),
        esc(&c.name),
        esc(&c.spec),
        secs(c.duration_ms),
        esc(&c.mode),
        count(c.turns.len(), "turn", "turns"),
        count(calls, "tool call", "tool calls"),
        esc(&c.usage.to_string()),
    );
    // A miss comes first even when the program then died of it: it is the cause.
    let why = match (c.misses.first(), &c.error, c.first_cause()) {
        (Some(miss), ..) => Some(text::cause(&super::Cause::Miss(miss))),
        (None, Some(e), _) => Some(e.lines().next().unwrap_or_default().to_owned()),
        (None, None, cause) => cause.map(|cause| text::cause(&cause)),
    };
    if let Some(why) = why {
        let _ = write!(
            out,
            "<div class=\"cause\">{}</div>",
            esc_cut(&why, MAX_VALUE)
        );
    }
    out.push_str("</summary>\n<div class=\"body\">\n");
    failures(out, c);
    trajectory(out, c);
    crash(out, c);
    fuzz(out, c);
    if let Some(d) = &c.diff {
        out.push_str("<h3>Against the previous recording</h3>\n");
        let _ = writeln!(out, "<pre>{}</pre>", esc_cut(d, MAX_REPORT));
    }
    let _ = writeln!(
        out,
        "<p class=\"sub\">cassette <code>{}</code></p>\n</div>\n</details>\n</section>",
        esc(&c.cassette)
    );
}

/// The request that missed beside its nearest recording (both normalized, as they were
/// compared), the first differing path named and the changed lines marked.
fn near_miss(out: &mut String, n: &NearMiss) {
    let at = if n.path.is_empty() { "/" } else { &n.path };
    let _ = writeln!(
        out,
        "<details class=\"near\" open><summary>Beside the nearest recording: first difference at <code>{}</code></summary>",
        esc(at)
    );
    let (recorded, now) = (clip(&n.recorded), clip(&n.now));
    let diff = textdiff::lines(&textdiff::pretty(&recorded), &textdiff::pretty(&now));
    let title = format!("recorded (interaction #{})", n.interaction);
    side_by_side(out, &diff, (&title, "now (missed)"));
    out.push_str("</details>\n");
}

/// `v` with every string longer than [`MAX_VALUE`] characters cut, its rest counted: a
/// body's line diff stays the size of its structure.
fn clip(v: &Value) -> Value {
    match v {
        Value::String(s) => match s.char_indices().nth(MAX_VALUE) {
            Some((at, _)) => Value::String(format!(
                "{}… ({} more characters)",
                &s[..at],
                s[at..].chars().count()
            )),
            None => v.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(clip).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), clip(v))).collect())
        }
        _ => v.clone(),
    }
}

/// What fails the case, the first cause first (as [`CaseReport::causes`] orders them).
fn failures(out: &mut String, c: &CaseReport) {
    for (k, miss) in c.misses.iter().enumerate() {
        out.push_str("<h3>Cassette miss</h3>\n");
        let _ = writeln!(out, "<pre>{}</pre>", esc_cut(miss, MAX_REPORT));
        if let Some(near) = c.near_misses.iter().find(|n| n.miss == k) {
            near_miss(out, near);
        }
    }
    if let Some(e) = &c.error {
        out.push_str("<h3>Error</h3>\n");
        let _ = writeln!(out, "<pre>{}</pre>", esc_cut(e, MAX_REPORT));
    }
    let failed: Vec<_> = c.failures().collect();
    if !failed.is_empty() {
        out.push_str("<h3>Failed assertions</h3>\n<table>\n<tr><th>where</th><th>assertion</th><th>expected</th><th>actual</th></tr>\n");
        for (turn, a) in failed {
            assertion_row(out, turn, a);
        }
        out.push_str("</table>\n");
    }
    let unjudged = c.unjudged().count();
    if unjudged > 0 {
        let _ = writeln!(
            out,
            "<p class=\"warn\">{} not judged: the program did not get its answers.</p>",
            count(unjudged, "expectation", "expectations")
        );
    }
    for p in &c.problems {
        let _ = writeln!(out, "<p class=\"bad\">problem: {}</p>", esc(p));
    }
    for w in &c.warnings {
        let _ = writeln!(out, "<p class=\"warn\">{}</p>", esc(w));
    }
}

fn assertion_row(out: &mut String, turn: Option<usize>, a: &AssertionResult) {
    let place = turn.map_or("case".to_owned(), |n| format!("turn {n}"));
    let mut what = esc(&a.what);
    if !a.message.is_empty() {
        let _ = write!(what, "<br>{}", esc(&a.message));
    }
    if let Some(p) = &a.path {
        let _ = write!(what, "<br><span class=\"sub\">at {}</span>", esc(p));
    }
    if let Some(n) = &a.nearest {
        let _ = write!(what, "<br><span class=\"sub\">nearest: {}</span>", esc(n));
    }
    let cell = |v: &Option<String>| {
        v.as_deref()
            .map(|v| format!("<pre>{}</pre>", esc_cut(v, MAX_VALUE)))
            .unwrap_or_default()
    };
    let _ = writeln!(
        out,
        "<tr><td>{place}</td><td>{what}</td><td>{}</td><td>{}</td></tr>",
        cell(&a.expected),
        cell(&a.actual)
    );
}

fn trajectory(out: &mut String, c: &CaseReport) {
    if c.turns.is_empty() {
        return;
    }
    out.push_str("<h3>Trajectory</h3>\n<ol class=\"timeline\">\n");
    for t in &c.turns {
        turn(out, t);
    }
    out.push_str("</ol>\n");
    if !c.assertions.is_empty() {
        out.push_str("<h3>Case assertions</h3>\n");
        assertions(out, &c.assertions);
    }
}

fn turn(out: &mut String, t: &TurnReport) {
    let _ = writeln!(
        out,
        "<li><div class=\"turn-head\">Turn {} <span class=\"meta\">{} · {} · {}</span></div>",
        t.index,
        esc(&text::model_calls_of(t)),
        secs(t.latency_ms),
        esc(&t.usage.to_string())
    );
    if let Some(why) = &t.not_reached {
        let _ = writeln!(
            out,
            "<div class=\"step warn\">not reached: {}</div>",
            esc(why)
        );
    }
    if let Some(input) = &t.input {
        step(out, "input", &esc_cut(input, MAX_VALUE));
    }
    for f in &t.faults {
        step(
            out,
            "fault",
            &format!("<span class=\"mark\">fault</span> {}", esc(&f.to_string())),
        );
    }
    for call in &t.tool_calls {
        let mut line = format!(
            "<code>{}</code> {}",
            esc(&call.name),
            json_block(&call.arguments)
        );
        match &call.result {
            Some(r) => {
                let _ = write!(
                    line,
                    " <span class=\"label\">result</span> {}",
                    json_block(r)
                );
                if let Some(o) = call.result_origin.filter(|o| text::shown_origin(*o, call)) {
                    let _ = write!(line, " <span class=\"mark\">{}</span>", o.as_str());
                }
            }
            None => line.push_str(" <span class=\"sub\">no result sent back</span>"),
        }
        if let Some(e) = &call.execution {
            let class = if matches!(e, CallExecution::Mocked) {
                "mark"
            } else {
                "sub"
            };
            let _ = write!(
                line,
                " <span class=\"{class}\">{}</span>",
                esc(&text::execution(e))
            );
        }
        step(out, "tool call", &line);
    }
    for e in &t.executions {
        let error = if e.is_error {
            " <span class=\"bad\">error</span>"
        } else {
            ""
        };
        step(
            out,
            "executed",
            &format!(
                "<code>{}</code> by {} {}{error}",
                esc(&e.name),
                esc(&e.server),
                json_block(&e.arguments)
            ),
        );
    }
    match &t.reply {
        Some(r) => step(out, "reply", &esc_cut(r, MAX_VALUE)),
        None => step(out, "reply", "<span class=\"sub\">none</span>"),
    }
    if !t.output.is_empty() && Some(t.output.trim()) != t.reply.as_deref().map(str::trim) {
        let _ = writeln!(
            out,
            "<details class=\"step\"><summary>output</summary><pre>{}</pre></details>",
            esc_cut(&t.output, MAX_VALUE)
        );
    }
    if t.missed {
        out.push_str("<div class=\"step warn\">a request of this turn missed the cassette: its expectations were not judged</div>\n");
    }
    assertions(out, &t.assertions);
    out.push_str("</li>\n");
}

/// A line of a timeline: `label` (text) then `html` (markup, its values escaped).
fn step(out: &mut String, label: &str, html: &str) {
    let _ = writeln!(
        out,
        "<div class=\"step\"><span class=\"label\">{}</span> {html}</div>",
        esc(label)
    );
}

/// A JSON value (a string as its text: a tool result is usually JSON in a string): one
/// line when short, else collapsed under its first characters.
fn json_block(v: &Value) -> String {
    if let Value::String(s) = v {
        if s.chars().count() <= 120 && !s.contains('\n') {
            return format!("<code>{}</code>", esc(s));
        }
        return format!(
            "<details><summary><code>{}</code></summary><pre>{}</pre></details>",
            esc(&text::truncate(s.lines().next().unwrap_or_default(), 100)),
            esc_cut(s, MAX_VALUE)
        );
    }
    let line = text::compact(v);
    if line.chars().count() <= 120 {
        return format!("<code>{}</code>", esc(&line));
    }
    let pretty = serde_json::to_string_pretty(v).unwrap_or(line);
    format!(
        "<details><summary><code>{}</code></summary><pre>{}</pre></details>",
        esc(&text::truncate(&text::compact(v), 100)),
        esc_cut(&pretty, MAX_VALUE)
    )
}

fn assertions(out: &mut String, list: &[AssertionResult]) {
    if list.is_empty() {
        return;
    }
    out.push_str("<ul>\n");
    for a in list {
        let (class, sign) = if a.passed {
            ("ok", "✓")
        } else {
            ("bad", "✗")
        };
        let _ = writeln!(
            out,
            "<li><span class=\"{class}\">{sign}</span> <code>{}</code></li>",
            esc(&a.what)
        );
    }
    out.push_str("</ul>\n");
}

fn crash(out: &mut String, c: &CaseReport) {
    let Some(k) = &c.crash else { return };
    out.push_str("<h3>Crash and restart</h3>\n");
    let killed = match (k.turn, &k.held) {
        (Some(turn), Some(held)) => format!("killed in turn {turn}, waiting for {}", esc(held)),
        (Some(turn), None) => format!("killed in turn {turn}"),
        _ => "never killed: the point was not reached".to_owned(),
    };
    step(out, "after", &esc(&k.after));
    step(out, "crash", &killed);
    if !k.output.is_empty() {
        step(
            out,
            "printed",
            &format!("<pre>{}</pre>", esc_cut(&k.output, MAX_VALUE)),
        );
    }
    for r in &k.repeated {
        step(
            out,
            "ran again",
            &format!("<span class=\"bad\">{}</span>", esc(r)),
        );
    }
}

fn fuzz(out: &mut String, c: &CaseReport) {
    let Some(f) = &c.fuzz else { return };
    let _ = writeln!(
        out,
        "<h3>{}</h3>\n<table>\n<tr><th>run</th><th>arguments</th><th>result</th></tr>",
        esc(&text::fuzz_summary(f))
    );
    for r in &f.runs {
        let result = if r.passed {
            "<span class=\"ok\">passed</span>".to_owned()
        } else {
            let why: Vec<String> = r.failures.iter().map(|w| esc(w)).collect();
            format!("<span class=\"bad\">failed</span><br>{}", why.join("<br>"))
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{result}</td></tr>",
            esc(&r.title()),
            json_block(&r.arguments)
        );
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests;
