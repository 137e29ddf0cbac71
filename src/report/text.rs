//! Small text helpers shared by the renderers: durations, token counts, compact JSON,
//! the summary counts. Pure functions, so every renderer says the same thing the same way.

use std::borrow::Cow;

use serde_json::Value;

use super::{
    AssertionResult, CaseReport, Cause, CrashReport, FuzzReport, FuzzRun, RunReport, Summary,
};

/// What the MCP boundary saw of a call, as a few words: `executed by mail`, `executed by
/// mail with {"to":"x"}` (when the server got other arguments than the model gave),
/// `mocked, not executed`, `not executed`.
pub(crate) fn execution(e: &super::CallExecution) -> String {
    match e {
        super::CallExecution::Executed {
            server,
            arguments: None,
        } => format!("executed by {server}"),
        super::CallExecution::Executed {
            server,
            arguments: Some(args),
        } => format!(
            "executed by {server} with {}",
            truncate(&compact(args), 300)
        ),
        super::CallExecution::Mocked => "mocked, not executed".into(),
        super::CallExecution::NotExecuted => "not executed".into(),
    }
}

/// Whether a result's origin is worth a mark beside it: not for the program's own tool,
/// and not when the MCP boundary already says a mock answered.
pub(crate) fn shown_origin(o: super::ResultOrigin, call: &super::CallReport) -> bool {
    o != super::ResultOrigin::Real && call.execution != Some(super::CallExecution::Mocked)
}

/// A duration in seconds with two decimals: `2.41s`. One form everywhere, so a case time
/// in the console, the Markdown table and the summary line compare at a glance.
pub(crate) fn secs(ms: u64) -> String {
    format!("{}.{:02}s", ms / 1000, (ms % 1000) / 10)
}

/// JSON on one line, as a tool call's arguments are shown next to its name.
pub(crate) fn compact(v: &Value) -> String {
    // Serializing a `Value` cannot fail: its map keys are always strings.
    serde_json::to_string(v).unwrap_or_default()
}

/// At most `max` characters, with `…` when cut. Long tool results must not bury a report.
pub(crate) fn truncate(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => Cow::Borrowed(s),
        Some((at, _)) => Cow::Owned(format!("{}…", &s[..at])),
    }
}

/// Text that came from the program, the model or a cassette, made safe to print (one
/// definition for every renderer: the trajectory's).
pub(crate) use crate::trajectory::render::clean;

/// `spec::name`, the way pytest names a test: unique across spec files.
pub(crate) fn label(case: &CaseReport) -> String {
    format!("{}::{}", case.spec, case.name)
}

/// `n thing` / `n things`.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A turn's model calls, `2 model calls`, and its requests when the program made more than
/// were answered (faults, retries): `1 model call of 3 requests`.
pub(crate) fn model_calls_of(t: &super::TurnReport) -> String {
    let calls = count(t.model_calls, "model call", "model calls");
    if t.requests > t.model_calls {
        format!("{calls} of {}", count(t.requests, "request", "requests"))
    } else {
        calls
    }
}

/// The faults injected in a turn: `request 1: rate_limit (429), request 2: disconnect (no
/// answer)`.
pub(crate) fn faults(fired: &[crate::fault::Fired]) -> String {
    let each: Vec<String> = fired.iter().map(ToString::to_string).collect();
    each.join(", ")
}

/// The counts of the closing line: `3 passed, 1 failed`, then `, 1 error` / `, 2 errors`
/// only when there are errors, `, 1 skipped` only when cases were skipped, and
/// `, 2 turns not reached` only when a program stopped before its last turn.
///
/// With no errors the line is exactly `N passed, N failed[, N skipped]`, the plain form CI
/// log readers look for alone on a line. Errors are not folded into `failed` (they exit 3,
/// not 1), so a run with errors carries its count rather than hide it.
pub(crate) fn counts(s: &Summary) -> Vec<(usize, &'static str)> {
    let mut parts = vec![(s.passed, "passed"), (s.failed, "failed")];
    if s.errors > 0 {
        parts.push((s.errors, if s.errors == 1 { "error" } else { "errors" }));
    }
    if s.skipped > 0 {
        parts.push((s.skipped, "skipped"));
    }
    if s.turns_not_reached > 0 {
        let word = if s.turns_not_reached == 1 {
            "turn not reached"
        } else {
            "turns not reached"
        };
        parts.push((s.turns_not_reached, word));
    }
    parts
}

/// [`counts`] joined: `3 passed, 1 failed, 1 error`.
pub(crate) fn summary_line(s: &Summary) -> String {
    counts(s)
        .iter()
        .map(|(n, w)| format!("{n} {w}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `ran 5 cases from 2 specs in 5.23s`: the line above the summary line.
pub(crate) fn run_line(report: &RunReport) -> String {
    let specs = spec_order(&report.cases).len();
    format!(
        "ran {} from {} in {}",
        count(report.cases.len(), "case", "cases"),
        count(specs, "spec", "specs"),
        secs(report.duration_ms)
    )
}

/// How far the run's programs were contained: `egress: LEVEL`, with each level's count
/// when they differ; `None` when no case started a program through the proxy.
pub(crate) fn containment_line(report: &RunReport) -> Option<String> {
    let mut levels: Vec<(&str, usize)> = Vec::new();
    for l in report.cases.iter().filter_map(|c| c.containment.as_deref()) {
        match levels.iter_mut().find(|(x, _)| *x == l) {
            Some((_, n)) => *n += 1,
            None => levels.push((l, 1)),
        }
    }
    match levels.as_slice() {
        [] => None,
        [(one, _)] => Some(format!("egress: {one}")),
        many => Some(format!(
            "egress: {}",
            many.iter()
                .map(|(l, n)| format!("{l} ({})", count(*n, "case", "cases")))
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}

/// The spec files of a run in order of first appearance.
pub(crate) fn spec_order(cases: &[CaseReport]) -> Vec<&str> {
    let mut specs: Vec<&str> = Vec::new();
    for c in cases {
        if !specs.contains(&c.spec.as_str()) {
            specs.push(&c.spec);
        }
    }
    specs
}

/// The cause in one line: the first line of a miss report, `turn 2: reply: {regex:
/// '6[0-9]'}: the turn has no reply` (`case: ` for the whole conversation), the
/// problem, `2 fuzz runs failed`.
/// An assertion's failure in full: what was asserted and why it failed, then its
/// expected and actual values, path and nearest call, one labelled line each.
pub(crate) fn failure(a: &AssertionResult) -> String {
    let mut out = match a.message.is_empty() {
        true => a.what.clone(),
        false => format!("{}: {}", a.what, a.message),
    };
    out.push('\n');
    out.push_str(&details(a));
    out.trim_end().to_owned()
}

/// An assertion's expected and actual values, path and nearest call: a line each, those
/// it has, indented.
pub(crate) fn details(a: &AssertionResult) -> String {
    let mut out = String::new();
    for (label, value) in a.labelled() {
        if let Some(v) = value {
            out.push_str(&format!("    {label}: {}\n", v.replace('\n', "\n      ")));
        }
    }
    out
}

pub(crate) fn cause(cause: &Cause) -> String {
    match cause {
        Cause::Miss(report) => report.lines().next().unwrap_or_default().to_owned(),
        Cause::Assertion(turn, a) => {
            let scope = match turn {
                Some(n) => format!("turn {n}: "),
                None => "case: ".to_owned(),
            };
            match a.message.is_empty() {
                true => format!("{scope}{}", a.what),
                false => format!("{scope}{}: {}", a.what, a.message),
            }
        }
        Cause::Problem(p) => (*p).to_owned(),
        Cause::Fuzz(n) => format!("{} failed", count(*n, "fuzz run", "fuzz runs")),
    }
}

/// Why a case did not pass, in a few words: `2 assertions failed, 1 cassette miss`, `1
/// problem: fault request 2: …` (the first problem named), or the first line of its
/// error. Empty for a passing case.
pub(crate) fn reason(case: &CaseReport) -> String {
    if let Some(e) = &case.error {
        return e.lines().next().unwrap_or_default().to_owned();
    }
    let mut parts = Vec::new();
    let failed = case.failures().count();
    if failed > 0 {
        parts.push(format!(
            "{} failed",
            count(failed, "assertion", "assertions")
        ));
    }
    if !case.misses.is_empty() {
        parts.push(count(case.misses.len(), "cassette miss", "cassette misses"));
    }
    let unjudged = case.unjudged().count();
    if unjudged > 0 {
        parts.push(format!(
            "{} not judged",
            count(unjudged, "expectation", "expectations")
        ));
    }
    if let Some(first) = case.problems.first() {
        let n = count(case.problems.len(), "problem", "problems");
        parts.push(format!("{n}: {first}"));
    }
    let fuzz_failed = case.fuzz.as_ref().map_or(0, |f| f.failed().count());
    if fuzz_failed > 0 {
        parts.push(format!(
            "{} failed",
            count(fuzz_failed, "fuzz run", "fuzz runs")
        ));
    }
    parts.join(", ")
}

/// `fuzz send_email: 32 runs (seed 1), 2 failed`.
pub(crate) fn fuzz_summary(f: &FuzzReport) -> String {
    let failed = f.failed().count();
    let verdict = if failed == 0 {
        "all passed".to_owned()
    } else {
        format!("{failed} failed")
    };
    format!(
        "fuzz {}: {} (seed {}), {verdict}",
        f.tool,
        count(f.runs.len(), "run", "runs"),
        f.seed
    )
}

/// `crash after executed send_email: killed in turn 1 waiting for POST /v1/chat/completions,
/// then started again`, or `…: never killed`.
pub(crate) fn crash_summary(c: &CrashReport) -> String {
    match (&c.held, c.turn) {
        (Some(held), Some(turn)) => format!(
            "crash after {}: killed in turn {turn} waiting for {held}, then started again",
            c.after
        ),
        _ => format!("crash after {}: never killed", c.after),
    }
}

/// The `fuzz:` that runs the case with exactly a run's arguments, for a spec: JSON is YAML.
pub(crate) fn fuzz_keep(tool: &str, run: &FuzzRun) -> String {
    let plain = !tool.is_empty()
        && (tool.chars()).all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let tool = if plain {
        tool.to_owned()
    } else {
        Value::String(tool.to_owned()).to_string()
    };
    format!("fuzz: {{tool: {tool}, arguments: [{}]}}", run.arguments)
}

/// Model calls over every turn of the case.
pub(crate) fn model_calls(case: &CaseReport) -> usize {
    case.turns.iter().map(|t| t.model_calls).sum()
}

/// Tool calls over every turn of the case.
pub(crate) fn tool_calls(case: &CaseReport) -> usize {
    case.turns.iter().map(|t| t.tool_calls.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secs_has_two_decimals() {
        assert_eq!(secs(0), "0.00s");
        assert_eq!(secs(7), "0.00s");
        assert_eq!(secs(2414), "2.41s");
        assert_eq!(secs(61_050), "61.05s");
    }

    #[test]
    fn truncate_counts_characters_not_bytes() {
        assert_eq!(truncate("héllo", 10), "héllo");
        assert_eq!(truncate("héllo wörld", 5), "héllo…");
    }

    #[test]
    fn summary_line_starts_with_passed_and_failed() {
        let s = Summary {
            passed: 3,
            failed: 1,
            errors: 0,
            skipped: 0,
            turns_not_reached: 0,
        };
        assert_eq!(summary_line(&s), "3 passed, 1 failed");
        let s = Summary {
            passed: 3,
            failed: 0,
            errors: 0,
            skipped: 2,
            turns_not_reached: 0,
        };
        assert_eq!(summary_line(&s), "3 passed, 0 failed, 2 skipped");
        let s = Summary {
            passed: 0,
            failed: 1,
            errors: 2,
            skipped: 1,
            turns_not_reached: 0,
        };
        assert_eq!(summary_line(&s), "0 passed, 1 failed, 2 errors, 1 skipped");
        let s = Summary {
            passed: 0,
            failed: 0,
            errors: 1,
            skipped: 0,
            turns_not_reached: 0,
        };
        assert_eq!(summary_line(&s), "0 passed, 0 failed, 1 error");
        let s = Summary {
            errors: 1,
            turns_not_reached: 2,
            ..Summary::default()
        };
        assert_eq!(
            summary_line(&s),
            "0 passed, 0 failed, 1 error, 2 turns not reached"
        );
    }
}
