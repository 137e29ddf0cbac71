//! `--report markdown`: the run as GitHub-flavoured Markdown, ready to paste as a
//! pull-request comment.
//!
//! A headline with the counts, a table of every case (status, turns, tool calls, tokens,
//! time), then a section per case that did not pass (failed assertions with expected,
//! actual, path and nearest; miss reports and error text in fenced blocks), then a
//! collapsed `<details>` per case with its transcript. Everything that came from the
//! program, the model or a cassette is escaped: a `|` cannot break the table, a `<tag>`
//! cannot become HTML, a backtick cannot close a code span.

use std::fmt::Write as _;

use super::text::{self, clean, secs};
use super::{AssertionResult, CaseReport, RunReport, Status, TurnReport};

/// Longest argument or tool result shown, in characters: a PR comment has a size limit.
const MAX_VALUE: usize = 1000;

fn icon(status: Status) -> &'static str {
    match status {
        Status::Passed => "✅",
        Status::Failed => "❌",
        Status::Error => "💥",
        Status::Skipped => "⏭️",
    }
}

/// Plain text as inline Markdown: Markdown punctuation backslash-escaped, HTML
/// characters as entities, newlines as spaces. Safe in a paragraph and in a table cell.
fn inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in clean(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' | '\t' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Text for inside an HTML element (`<summary>`), where Markdown is not parsed.
fn html(s: &str) -> String {
    clean(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\n', " ")
}

/// The longest run of `c` in `s`.
fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut cur) = (0, 0);
    for x in s.chars() {
        cur = if x == c { cur + 1 } else { 0 };
        best = best.max(cur);
    }
    best
}

/// A code span that holds any text: the fence is one backtick longer than any run inside.
fn code(s: &str) -> String {
    let s = clean(s).replace('\n', " ");
    let ticks = "`".repeat(longest_run(&s, '`') + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{s}{pad}{ticks}")
}

/// A code span inside a table cell: GFM splits cells on `|` even inside code spans.
fn code_cell(s: &str) -> String {
    code(s).replace('|', "\\|")
}

/// A fenced block, each line prefixed by `indent` (for a block inside a list item).
fn fenced(out: &mut String, indent: &str, lang: &str, body: &str) {
    let body = clean(body);
    let fence = "`".repeat(longest_run(&body, '`').max(2) + 1);
    let _ = writeln!(out, "{indent}{fence}{lang}");
    for line in body.lines() {
        let _ = writeln!(out, "{indent}{line}");
    }
    let _ = writeln!(out, "{indent}{fence}");
}

/// `- **label:** value`, the value as a code span or, when it has several lines, a fenced
/// block under the item.
fn value_item(out: &mut String, indent: &str, label: &str, value: &str, as_code: bool) {
    if value.contains('\n') {
        let _ = writeln!(out, "{indent}- **{label}:**");
        fenced(out, &format!("{indent}  "), "text", value);
    } else if as_code {
        let _ = writeln!(out, "{indent}- **{label}:** {}", code(value));
    } else {
        let _ = writeln!(out, "{indent}- **{label}:** {}", inline(value));
    }
}

/// `412 / 38 / 256 / 0` (prompt / completion / cache read / cache write), `unknown` when no
/// call reported usage, `(1 call without usage)` after the figures when some did not.
fn tokens(u: &crate::neutral::Usage) -> String {
    if u.calls_without_usage > 0 && u.prompt == 0 && u.completion == 0 {
        return "unknown".into();
    }
    let figures = [u.prompt, u.completion, u.cache_read, u.cache_creation]
        .map(|n| n.to_string())
        .join(" / ");
    match u.calls_without_usage {
        0 => figures,
        n => format!(
            "{figures} ({})",
            text::count(n as usize, "call without usage", "calls without usage")
        ),
    }
}

fn headline(out: &mut String, report: &RunReport) {
    let s = &report.summary;
    let mark = if s.failed + s.errors > 0 {
        "❌"
    } else {
        "✅"
    };
    let _ = writeln!(
        out,
        "## {mark} agentproxy test: {}\n",
        text::summary_line(s)
    );
    let mut total = crate::neutral::Usage::default();
    for c in &report.cases {
        total += c.usage;
    }
    let _ = writeln!(
        out,
        "{} ({} tokens: prompt / completion / cache read / cache write).\n",
        inline(&capitalize(&text::run_line(report))),
        tokens(&total)
    );
    if let Some(line) = text::containment_line(report) {
        let _ = writeln!(out, "{}.\n", inline(&capitalize(&line)));
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn table(out: &mut String, report: &RunReport) {
    out.push_str("| | case | spec | status | turns | tool calls | tokens (prompt / completion / cache read / cache write) | time |\n");
    out.push_str("|---|---|---|---|--:|--:|--:|--:|\n");
    for c in &report.cases {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            icon(c.status),
            inline(&c.name),
            code_cell(&c.spec),
            c.status.as_str(),
            c.turns.len(),
            text::tool_calls(c),
            tokens(&c.usage),
            secs(c.duration_ms)
        );
    }
    out.push('\n');
}

fn assertion_item(out: &mut String, scope: &str, a: &AssertionResult) {
    let mut line = format!("- {}{}", scope, code(&a.what));
    if !a.message.is_empty() {
        let _ = write!(line, ": {}", inline(&a.message));
    }
    let _ = writeln!(out, "{line}");
    for (label, value) in a.labelled() {
        if let Some(v) = value {
            value_item(out, "  ", label, v, true);
        }
    }
}

/// The section of a case that did not pass: what went wrong, in full.
fn failure_section(out: &mut String, c: &CaseReport) {
    let _ = writeln!(
        out,
        "### {} {} ({}, {})\n",
        icon(c.status),
        inline(&c.name),
        code(&c.spec),
        c.status.as_str()
    );
    for miss in &c.misses {
        out.push_str("**Cassette miss**\n\n");
        fenced(out, "", "text", miss);
        out.push('\n');
    }
    let failures: Vec<_> = c.failures().collect();
    if !failures.is_empty() {
        for (turn, a) in failures {
            let scope = match turn {
                Some(n) => format!("**turn {n}** "),
                None => "**case** ".to_owned(),
            };
            assertion_item(out, &scope, a);
        }
        out.push('\n');
    }
    let unjudged = c.unjudged().count();
    if unjudged > 0 {
        let _ = writeln!(
            out,
            "_{} not judged: the program did not get its answers._\n",
            text::count(unjudged, "expectation", "expectations")
        );
    }
    for t in &c.turns {
        if let Some(why) = &t.not_reached {
            let _ = writeln!(out, "- **turn {}** not reached: {}", t.index, inline(why));
        }
    }
    if c.turns.iter().any(|t| t.not_reached.is_some()) {
        out.push('\n');
    }
    if let Some(e) = &c.error {
        out.push_str("**Error**\n\n");
        fenced(out, "", "text", e);
        out.push('\n');
    }
    for p in &c.problems {
        let _ = writeln!(out, "> ❌ **problem:** {}\n", inline(p));
    }
    for w in &c.warnings {
        let _ = writeln!(out, "> ⚠️ {}\n", inline(w));
    }
    if let Some(f) = c.fuzz.as_ref().filter(|f| f.failed().next().is_some()) {
        let _ = writeln!(out, "**{}**\n", inline(&capitalize(&text::fuzz_summary(f))));
        for run in f.failed() {
            let _ = writeln!(
                out,
                "- {} {}",
                inline(&run.title()),
                code(&run.arguments.to_string())
            );
            for why in &run.failures {
                let _ = writeln!(out, "  - {}", inline(why));
            }
        }
        out.push_str("\nTo keep a failing run as a regression run, put its `fuzz:` on a case:\n\n");
        let keep: Vec<String> = f.failed().map(|r| text::fuzz_keep(&f.tool, r)).collect();
        fenced(out, "", "yaml", &keep.join("\n"));
        out.push('\n');
    }
}

fn turn_section(out: &mut String, t: &TurnReport) {
    let _ = writeln!(
        out,
        "**Turn {}**: {}, {}, tokens {} (prompt / completion / cache read / cache write)\n",
        t.index,
        text::model_calls_of(t),
        secs(t.latency_ms),
        tokens(&t.usage)
    );
    if let Some(input) = &t.input {
        value_item(out, "", "input", input, false);
    }
    if !t.faults.is_empty() {
        let _ = writeln!(out, "- **faults:** {}", inline(&text::faults(&t.faults)));
    }
    if !t.tool_calls.is_empty() {
        out.push_str("- **tool calls:**\n");
        for call in &t.tool_calls {
            let args = text::truncate(&text::compact(&call.arguments), MAX_VALUE).into_owned();
            let mut line = format!("  - {}", code(&format!("{} {args}", call.name)));
            if let Some(r) = &call.result {
                let r = text::truncate(&text::compact(r), MAX_VALUE).into_owned();
                let _ = write!(line, " → {}", code(&r));
                if let Some(o) = call.result_origin.filter(|o| text::shown_origin(*o, call)) {
                    let _ = write!(line, " _({} result)_", o.as_str());
                }
            }
            if let Some(e) = &call.execution {
                let _ = write!(line, " _({})_", text::execution(e));
            }
            let _ = writeln!(out, "{line}");
        }
    }
    match &t.reply {
        Some(r) => value_item(out, "", "reply", r, false),
        None => out.push_str("- **reply:** _none_\n"),
    }
    if !t.output.is_empty() && Some(t.output.trim()) != t.reply.as_deref().map(str::trim) {
        value_item(out, "", "output", &t.output, false);
    }
    if !t.assertions.is_empty() {
        out.push_str("- **assertions:**\n");
        for a in &t.assertions {
            let _ = writeln!(
                out,
                "  - {} {}",
                if a.passed { "✅" } else { "❌" },
                code(&a.what)
            );
        }
    }
    out.push('\n');
}

fn details(out: &mut String, c: &CaseReport) {
    let _ = writeln!(
        out,
        "<details>\n<summary>{} {} › {}: {}, {}, {}, {}</summary>\n",
        icon(c.status),
        html(&c.spec),
        html(&c.name),
        c.status.as_str(),
        text::count(c.turns.len(), "turn", "turns"),
        text::count(text::tool_calls(c), "tool call", "tool calls"),
        secs(c.duration_ms)
    );
    let _ = writeln!(
        out,
        "Mode {}, cassette {}, tokens {} (prompt / completion / cache read / cache write).\n",
        inline(&c.mode),
        code(&c.cassette),
        tokens(&c.usage)
    );
    for t in &c.turns {
        turn_section(out, t);
    }
    if !c.assertions.is_empty() {
        out.push_str("**Whole conversation**\n\n");
        for a in &c.assertions {
            let _ = writeln!(
                out,
                "- {} {}",
                if a.passed { "✅" } else { "❌" },
                code(&a.what)
            );
        }
        out.push('\n');
    }
    if let Some(crash) = &c.crash {
        let _ = writeln!(
            out,
            "**{}**\n",
            inline(&capitalize(&text::crash_summary(crash)))
        );
        for r in &crash.repeated {
            let _ = writeln!(out, "- executed again: {}", code(r));
        }
        if !crash.repeated.is_empty() {
            out.push('\n');
        }
    }
    if let Some(f) = &c.fuzz {
        let _ = writeln!(out, "**{}**\n", inline(&capitalize(&text::fuzz_summary(f))));
        out.push_str("| Run | Arguments | Result |\n|---|---|---|\n");
        for run in &f.runs {
            let verdict = if run.passed {
                "✅ passed"
            } else {
                "❌ failed"
            };
            let _ = writeln!(
                out,
                "| {} | {} | {verdict} |",
                inline(&run.title()),
                code_cell(&run.arguments.to_string())
            );
        }
        out.push('\n');
    }
    if let Some(d) = &c.diff {
        out.push_str("**Trajectory diff**\n\n");
        fenced(out, "", "text", d);
        out.push('\n');
    }
    out.push_str("</details>\n\n");
}

/// The report as Markdown, ending with a newline.
pub fn render(report: &RunReport) -> String {
    let mut out = String::new();
    headline(&mut out, report);
    table(&mut out, report);
    let bad: Vec<&CaseReport> = report
        .cases
        .iter()
        .filter(|c| matches!(c.status, Status::Failed | Status::Error))
        .collect();
    if !bad.is_empty() {
        out.push_str("## Failures\n\n");
        for c in bad {
            failure_section(&mut out, c);
        }
    }
    out.push_str("## Cases\n\n");
    for c in &report.cases {
        details(&mut out, c);
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample;

    #[test]
    fn markdown_report_snapshot() {
        insta::assert_snapshot!(render(&sample::run()));
    }

    #[test]
    fn table_rows_have_the_same_number_of_cells_despite_pipes() {
        let md = render(&sample::run());
        // The summary table: the first run of table rows.
        let rows: Vec<&str> = (md.lines())
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .filter(|l| l.starts_with("| "))
            .collect();
        assert_eq!(rows.len(), 1 + 5);
        // An unescaped `|` is a cell border; `\|` is text.
        let borders = |l: &str| l.replace("\\|", "").matches('|').count();
        for r in &rows {
            assert_eq!(borders(r), 9, "{r}");
        }
        assert!(md.contains("follow-up \\| °F"));
        assert!(md.contains("tokyo &lt;later&gt;"));
    }

    #[test]
    fn code_spans_and_fences_outgrow_backticks_inside() {
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x`"), "`` `x` ``");
        let mut out = String::new();
        fenced(&mut out, "", "text", "```\nx\n```");
        assert_eq!(out, "````text\n```\nx\n```\n````\n");
    }

    #[test]
    fn details_blocks_are_balanced_and_escapes_stripped() {
        let md = render(&sample::run());
        assert_eq!(md.matches("<details>").count(), 5);
        assert_eq!(md.matches("</details>").count(), 5);
        assert!(!md.contains('\u{1b}'));
        assert!(md.contains("KeyError: 'LX345'"));
    }
}
