//! The console's text, pure: a case block, a transcript, the summary, in a [`Style`].

use std::fmt::Write as _;

use anstyle::{AnsiColor, Effects};

use crate::report::text::{self, clean, secs};
use crate::report::{AssertionResult, CaseReport, RunReport, Status, TurnReport};

/// How a block is rendered; resolved once from [`ConsoleOptions`] and the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    pub color: bool,
    pub quiet: bool,
    pub verbose: u8,
}

impl Style {
    /// No colour, default detail: what a CI log gets.
    #[cfg(test)]
    pub fn plain() -> Style {
        Style::default()
    }

    fn paint(&self, paint: anstyle::Style, text: &str) -> String {
        if self.color {
            format!("{paint}{text}{paint:#}")
        } else {
            text.to_owned()
        }
    }
}

fn fg(c: AnsiColor) -> anstyle::Style {
    anstyle::Style::new().fg_color(Some(c.into()))
}

fn bold(c: AnsiColor) -> anstyle::Style {
    fg(c).effects(Effects::BOLD)
}

fn dim() -> anstyle::Style {
    anstyle::Style::new().effects(Effects::DIMMED)
}

const INDENT: &str = "    ";

/// The status word, padded so names line up: `PASS `, `FAIL `, `ERROR`, `SKIP `.
fn status_word(status: Status, style: &Style) -> String {
    let (word, paint) = match status {
        Status::Passed => ("PASS ", bold(AnsiColor::Green)),
        Status::Failed => ("FAIL ", bold(AnsiColor::Red)),
        Status::Error => ("ERROR", bold(AnsiColor::Magenta)),
        Status::Skipped => ("SKIP ", bold(AnsiColor::Yellow)),
    };
    style.paint(paint, word)
}

/// `label: value`, where continuation lines of a multi-line value are indented under the
/// value's first line.
fn field(
    out: &mut String,
    indent: &str,
    label: (&str, anstyle::Style),
    value: &str,
    style: &Style,
) {
    let (label, paint) = label;
    let pad = format!("{indent}{}", " ".repeat(label.chars().count() + 1));
    let value = clean(value);
    let mut lines = value.lines();
    let first = lines.next().unwrap_or_default();
    let _ = writeln!(out, "{indent}{} {first}", style.paint(paint, label));
    for line in lines {
        let _ = writeln!(out, "{pad}{line}");
    }
}

/// A multi-line text under a heading, indented one step.
fn block(out: &mut String, indent: &str, heading: &str, body: &str) {
    let _ = writeln!(out, "{indent}{heading}");
    for line in clean(body).lines() {
        let _ = writeln!(out, "{indent}{INDENT}{line}");
    }
}

/// Assertions in order, `✓ what` or `✗ turn 2: what` and, for a failed one, why and the
/// values. Consecutive failures of one expectation (a `calls` block that failed in three
/// ways) share one heading.
fn assertions<'a>(
    out: &mut String,
    indent: &str,
    items: impl IntoIterator<Item = (String, &'a AssertionResult)>,
    style: &Style,
) {
    let mut last_heading: Option<String> = None;
    for (scope, a) in items {
        let heading = format!("{scope}{}", clean(&a.what));
        if a.passed {
            let _ = writeln!(
                out,
                "{indent}{} {heading}",
                style.paint(fg(AnsiColor::Green), "✓")
            );
            last_heading = None;
            continue;
        }
        if last_heading.as_deref() != Some(heading.as_str()) {
            let _ = writeln!(
                out,
                "{indent}{} {}",
                style.paint(bold(AnsiColor::Red), "✗"),
                style.paint(anstyle::Style::new().effects(Effects::BOLD), &heading)
            );
        }
        failure_detail(out, &format!("{indent}{INDENT}"), a, style);
        last_heading = Some(heading);
    }
}

/// Why an assertion failed and the values it compared, one row each.
fn failure_detail(out: &mut String, inner: &str, a: &AssertionResult, style: &Style) {
    if !a.message.is_empty() {
        for line in clean(&a.message).lines() {
            let _ = writeln!(out, "{inner}{line}");
        }
    }
    let rows = [
        ("expected:", a.expected.as_deref(), fg(AnsiColor::Green)),
        ("actual:  ", a.actual.as_deref(), fg(AnsiColor::Red)),
        ("path:    ", a.path.as_deref(), anstyle::Style::new()),
        ("nearest: ", a.nearest.as_deref(), anstyle::Style::new()),
    ];
    for (label, value, paint) in rows {
        if let Some(v) = value {
            let pad = format!("{inner}{}", " ".repeat(label.len() + 1));
            let v = clean(v);
            let mut lines = v.lines();
            let first = lines.next().unwrap_or_default();
            let _ = writeln!(
                out,
                "{inner}{} {}",
                style.paint(dim(), label),
                style.paint(paint, first)
            );
            for line in lines {
                let _ = writeln!(out, "{pad}{}", style.paint(paint, line));
            }
        }
    }
}

/// `turn 2: ` for a turn's assertion, `case: ` for a case-level one.
fn scope(turn: Option<usize>) -> String {
    match turn {
        Some(n) => format!("turn {n}: "),
        None => "case: ".to_owned(),
    }
}

/// `turn 1 (2 model calls, 0.73s, 412 prompt (256 cache read) / 38 completion tokens)`.
fn turn_heading(t: &TurnReport) -> String {
    format!(
        "turn {} ({}, {}, {})",
        t.index,
        text::model_calls_of(t),
        secs(t.latency_ms),
        t.usage
    )
}

/// The turns of a case as a transcript: input, tool calls, reply (and at `verbose >= 2`
/// tool results and output), with every assertion of the turn.
fn turns_section(out: &mut String, case: &CaseReport, style: &Style) {
    let inner = format!("{INDENT}{INDENT}");
    for t in &case.turns {
        let _ = writeln!(
            out,
            "{INDENT}{}",
            style.paint(
                anstyle::Style::new().effects(Effects::BOLD),
                &turn_heading(t)
            )
        );
        if let Some(input) = &t.input {
            field(out, &inner, ("input: ", dim()), input, style);
        }
        if !t.faults.is_empty() {
            let faults = text::faults(&t.faults);
            field(
                out,
                &inner,
                ("faults:", fg(AnsiColor::Yellow)),
                &faults,
                style,
            );
        }
        for call in &t.tool_calls {
            let args = text::truncate(&text::compact(&call.arguments), 300).into_owned();
            let line = format!(
                "{} {args}",
                style.paint(fg(AnsiColor::Cyan), &clean(&call.name))
            );
            let _ = writeln!(out, "{inner}{} {line}", style.paint(dim(), "call:  "));
            if let Some(e) = &call.execution {
                let e = clean(&text::execution(e));
                let _ = writeln!(
                    out,
                    "{inner}        {}",
                    style.paint(dim(), &format!("⇢ {e}"))
                );
            }
            if style.verbose >= 2 {
                if let Some(result) = &call.result {
                    let r = text::truncate(&text::compact(result), 300).into_owned();
                    let _ = writeln!(
                        out,
                        "{inner}        {} {}",
                        style.paint(dim(), "→"),
                        clean(&r)
                    );
                }
            }
        }
        match &t.reply {
            Some(reply) => field(out, &inner, ("reply: ", dim()), reply, style),
            None => {
                let _ = writeln!(
                    out,
                    "{inner}{} {}",
                    style.paint(dim(), "reply: "),
                    style.paint(dim(), "(none)")
                );
            }
        }
        let shows_output =
            style.verbose >= 2 || Some(t.output.trim()) != t.reply.as_deref().map(str::trim);
        if shows_output && !t.output.is_empty() {
            field(out, &inner, ("output:", dim()), &t.output, style);
        }
        if t.missed {
            let _ = writeln!(
                out,
                "{inner}{}",
                style.paint(
                    dim(),
                    "not judged: a request of this turn missed the cassette"
                )
            );
        }
        if let Some(why) = &t.not_reached {
            let _ = writeln!(
                out,
                "{inner}{}",
                style.paint(
                    fg(AnsiColor::Yellow),
                    &format!("not reached: {}", clean(why))
                )
            );
        }
        assertions(
            out,
            &inner,
            t.assertions.iter().map(|a| (String::new(), a)),
            style,
        );
    }
}

/// Everything under a case's header line, in the detail its style asks for: the cause
/// first (cassette misses), then the failed expectations that are verdicts, a line for
/// those that could not be judged, the turns never reached, problems, warnings, the error and the
/// trajectory diff. Verbose puts each turn's transcript, every assertion included, after
/// the misses.
/// A case's turns, whole-conversation assertions and totals (`-v`).
fn verbose_body(out: &mut String, case: &CaseReport, style: &Style) {
    turns_section(out, case, style);
    if !case.assertions.is_empty() {
        let _ = writeln!(
            out,
            "{INDENT}{}",
            style.paint(
                anstyle::Style::new().effects(Effects::BOLD),
                "whole conversation"
            )
        );
        assertions(
            out,
            &format!("{INDENT}{INDENT}"),
            case.assertions.iter().map(|a| (String::new(), a)),
            style,
        );
    }
    if !case.turns.is_empty() {
        let total = format!(
            "total: {}, {}, {}; cassette {}",
            text::count(text::model_calls(case), "model call", "model calls"),
            text::count(text::tool_calls(case), "tool call", "tool calls"),
            case.usage,
            clean(&case.cassette)
        );
        let _ = writeln!(out, "{INDENT}{}", style.paint(dim(), &total));
    }
}

/// A case's failed assertions, what was not judged and why, and what it never reached.
fn terse_body(out: &mut String, case: &CaseReport, style: &Style) {
    assertions(
        out,
        INDENT,
        case.failures().map(|(turn, a)| (scope(turn), a)),
        style,
    );
    let unjudged = case.unjudged().count();
    if unjudged > 0 {
        let why = if case.misses.is_empty() {
            "the program did not finish its conversation"
        } else {
            "the program did not get its answers"
        };
        let line = format!(
            "{} not judged: {why} (-v shows them)",
            text::count(unjudged, "expectation", "expectations")
        );
        let _ = writeln!(out, "{INDENT}{}", style.paint(dim(), &line));
    }
    not_reached(out, case, style);
}

fn case_body(out: &mut String, case: &CaseReport, style: &Style) {
    for miss in &case.misses {
        block(
            out,
            INDENT,
            &style.paint(bold(AnsiColor::Red), "miss:"),
            miss,
        );
    }
    match style.verbose > 0 {
        true => verbose_body(out, case, style),
        false => terse_body(out, case, style),
    }
    let notes = [
        ("problem:", AnsiColor::Red, &case.problems),
        ("warning:", AnsiColor::Yellow, &case.warnings),
    ];
    for (label, color, lines) in notes {
        for line in lines {
            let label = style.paint(bold(color), label);
            let _ = writeln!(out, "{INDENT}{label} {}", clean(line));
        }
    }
    if let Some(e) = &case.error {
        let e = if case.misses.is_empty() || style.verbose > 0 {
            e.clone()
        } else {
            short_tail(e)
        };
        field(out, INDENT, ("error:", bold(AnsiColor::Magenta)), &e, style);
    }
    if let Some(d) = &case.diff {
        block(
            out,
            INDENT,
            &style.paint(bold(AnsiColor::Cyan), "trajectory changed:"),
            d,
        );
    }
    if let Some(f) = &case.fuzz {
        fuzz_section(out, f, style);
    }
    if let Some(c) = &case.crash {
        crash_section(out, c, style);
    }
}

/// The crash: where the program was killed, what it had printed by then (verbose), and
/// what the restart executed again.
fn crash_section(out: &mut String, c: &crate::report::CrashReport, style: &Style) {
    let color = if c.held.is_none() || !c.repeated.is_empty() {
        bold(AnsiColor::Yellow)
    } else {
        dim()
    };
    let _ = writeln!(
        out,
        "{INDENT}{}",
        style.paint(color, &text::crash_summary(c))
    );
    let inner = format!("{INDENT}{INDENT}");
    if style.verbose > 0 && !c.output.is_empty() {
        let _ = writeln!(out, "{inner}it had printed:");
        for line in c.output.lines() {
            let _ = writeln!(out, "{inner}  {}", clean(line));
        }
    }
    for r in &c.repeated {
        let _ = writeln!(out, "{inner}executed again: {}", clean(r));
    }
}

/// The fuzz runs: a summary line, then each failed run (every run, verbose) with its
/// arguments, why it failed and the `fuzz:` that keeps it as a regression run.
fn fuzz_section(out: &mut String, f: &crate::report::FuzzReport, style: &Style) {
    let failed = f.failed().next().is_some();
    let color = if failed { bold(AnsiColor::Red) } else { dim() };
    let _ = writeln!(
        out,
        "{INDENT}{}",
        style.paint(color, &text::fuzz_summary(f))
    );
    let inner = format!("{INDENT}{INDENT}");
    for run in f.runs.iter().filter(|r| !r.passed || style.verbose > 0) {
        let verdict = if run.passed { "passed" } else { "FAILED" };
        let _ = writeln!(
            out,
            "{INDENT}  {} {verdict}: {}",
            run.title(),
            clean(&run.arguments.to_string())
        );
        for why in &run.failures {
            let _ = writeln!(out, "{inner}{}", clean(why));
        }
        if style.verbose > 0 && !run.output.is_empty() {
            field(out, &inner, ("output:", dim()), &run.output, style);
        }
        if !run.passed {
            let keep = format!("keep it: {}", text::fuzz_keep(&f.tool, run));
            let _ = writeln!(out, "{inner}{}", style.paint(dim(), &clean(&keep)));
        }
    }
}

/// A program error caused by a cassette miss, with its stderr tail cut to where the
/// program reported the miss (`… agentproxy: cassette miss (reported above)`): the
/// traceback above that line is how the SDK got there, which the miss already says.
fn short_tail(error: &str) -> String {
    let lines: Vec<&str> = error.lines().collect();
    let tail = lines.iter().position(|l| l.starts_with("--- stderr"));
    let mark = lines
        .iter()
        .rposition(|l| l.ends_with("agentproxy: cassette miss (reported above)"));
    let (Some(tail), Some(mark)) = (tail, mark) else {
        return error.to_owned();
    };
    if mark <= tail + 1 {
        return error.to_owned();
    }
    let mut out: Vec<String> = lines[..=tail].iter().map(|l| (*l).to_owned()).collect();
    out.push(format!("… {} lines (-v shows them)", mark - tail - 1));
    out.extend(lines[mark..].iter().map(|l| (*l).to_owned()));
    out.join("\n")
}

/// `turns 2-3 not reached: the program exited with status 1 during turn 1`, one line per
/// run of turns with the same reason.
fn not_reached(out: &mut String, case: &CaseReport, style: &Style) {
    let mut runs: Vec<(usize, usize, &str)> = Vec::new();
    for t in &case.turns {
        let Some(why) = t.not_reached.as_deref() else {
            continue;
        };
        match runs.last_mut() {
            Some((_, last, w)) if *w == why && *last + 1 == t.index => *last = t.index,
            _ => runs.push((t.index, t.index, why)),
        }
    }
    for (first, last, why) in runs {
        let turns = if first == last {
            format!("turn {first}")
        } else {
            format!("turns {first}-{last}")
        };
        let _ = writeln!(
            out,
            "{INDENT}{} {}",
            style.paint(bold(AnsiColor::Yellow), &format!("{turns} not reached:")),
            clean(why)
        );
    }
}

/// The whole block of one finished case, ending with a newline.
///
/// First line: `PASS  specs/weather.yaml::paris (0.84s, replay)` (`FAIL `, `ERROR`,
/// `SKIP ` likewise). Quiet: that line only, with the reason appended for a case that did
/// not pass (`: 2 assertions failed, 1 cassette miss`). Otherwise the failed assertions
/// (turn, what, message, expected, actual, path, nearest), miss reports, warnings, error
/// text and trajectory diff follow, indented; verbose adds each turn's transcript.
pub fn case_block(case: &CaseReport, style: &Style) -> String {
    let mut out = String::new();
    let meta = format!("({}, {})", secs(case.duration_ms), clean(&case.mode));
    let _ = write!(
        out,
        "{} {} {}",
        status_word(case.status, style),
        clean(&text::label(case)),
        style.paint(dim(), &meta)
    );
    if style.quiet {
        let reason = text::reason(case);
        if case.status != Status::Passed && !reason.is_empty() {
            let _ = write!(out, ": {}", clean(&reason));
        }
        out.push('\n');
        return out;
    }
    out.push('\n');
    case_body(&mut out, case, style);
    out
}

/// The turns of a case as plain text, tool results and output included: the transcript
/// JUnit puts in `<system-out>`.
pub(crate) fn transcript(case: &CaseReport) -> String {
    let mut out = String::new();
    turns_section(
        &mut out,
        case,
        &Style {
            color: false,
            quiet: false,
            verbose: 2,
        },
    );
    // Without the console's indent under a case header: it stands alone there.
    out.lines()
        .map(|l| format!("{}\n", l.strip_prefix(INDENT).unwrap_or(l)))
        .collect()
}

/// The end of a run. Not quiet: the labels of the cases that did not pass (so a long log
/// need not be scrolled), a blank line. Then always two lines:
///
/// ```text
/// ran 5 cases from 2 specs in 5.23s
/// 1 passed, 2 failed, 1 error, 1 skipped
/// ```
///
/// The last line starts with `N passed, N failed`; `, N error(s)` and `, N skipped` follow
/// only when non-zero, so a run without errors or skips ends in exactly `N passed, N failed`.
pub fn summary_block(report: &RunReport, style: &Style) -> String {
    let mut out = String::new();
    if !style.quiet {
        let bad: Vec<&CaseReport> = report
            .cases
            .iter()
            .filter(|c| matches!(c.status, Status::Failed | Status::Error))
            .collect();
        if !bad.is_empty() {
            let _ = writeln!(
                out,
                "\n{}",
                style.paint(anstyle::Style::new().effects(Effects::BOLD), "failures:")
            );
            for c in bad {
                let what = if c.status == Status::Error {
                    " (error)"
                } else {
                    ""
                };
                let _ = writeln!(out, "{INDENT}{}{what}", clean(&text::label(c)));
            }
        }
        out.push('\n');
    }
    // How far the programs were contained ends the run line.
    let egress = text::containment_line(report).map(|l| format!("; {l}"));
    let _ = writeln!(
        out,
        "{}{}",
        text::run_line(report),
        egress.unwrap_or_default()
    );
    let parts: Vec<String> = text::counts(&report.summary)
        .into_iter()
        .map(|(n, word)| {
            let paint = match word {
                "passed" => bold(AnsiColor::Green),
                "skipped" => bold(AnsiColor::Yellow),
                _ => bold(AnsiColor::Red),
            };
            let s = format!("{n} {word}");
            if n > 0 {
                style.paint(paint, &s)
            } else {
                s
            }
        })
        .collect();
    let _ = writeln!(out, "{}", parts.join(", "));
    out
}
