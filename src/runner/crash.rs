//! A crash test's verdict, from what the session did: where the program was killed, and
//! which tools an MCP server executed before the crash and again after it. A repeat fails
//! the case unless the case's `executed:` lists the tool as many times as it ran. Pure.

use std::collections::BTreeMap;

use super::driver::Killed;
use crate::cassette::Interaction;
use crate::neutral::Execution;
use crate::proxy::Crashed;
use crate::report::{AssertionResult, CrashReport};
use crate::spec::{Case, Crash};
use crate::trajectory::executions::Executions;

/// What a crash test found: its report, the problems that make it untested (the point
/// never passed, or nothing was held), and the verdict on repeated executions.
#[derive(Debug)]
pub struct Verdict {
    pub report: CrashReport,
    pub problems: Vec<String>,
    pub repeats: AssertionResult,
}

/// Judge the crash of `case`. `exchanges` are the case's, in arrival order; the first
/// `crashed.before` of them came before the crash.
pub fn judge(
    case: &Case,
    crash: &Crash,
    crashed: &Crashed,
    killed: Option<&Killed>,
    exchanges: &[Interaction],
) -> Verdict {
    let after = crash.after.to_string();
    let mut problems = Vec::new();
    match (&crashed.held, crashed.passed) {
        (Some(_), _) => {}
        (None, false) => problems.push(format!(
            "crash after {after}: the point never came, so the program was never killed"
        )),
        (None, true) => problems.push(format!(
            "crash after {after}: the program made no request after it, so it was never killed"
        )),
    }
    let split = crashed.before.min(exchanges.len());
    let (first, second) = exchanges.split_at(split);
    let earlier = Executions::pair(first).all;
    let later = Executions::pair(second).all;
    let mut repeated: Vec<&Execution> = later
        .iter()
        .map(|e| &e.execution)
        .filter(|e| earlier.iter().any(|b| same(&b.execution, e)))
        .collect();
    repeated.dedup_by(|a, b| same(a, b));
    let ran: BTreeMap<&str, usize> =
        earlier
            .iter()
            .chain(&later)
            .fold(BTreeMap::new(), |mut n, e| {
                *n.entry(e.execution.tool.as_str()).or_default() += 1;
                n
            });
    let unallowed: Vec<String> = repeated
        .iter()
        .map(|e| e.tool.as_str())
        .filter(|tool| ran[tool] > listed(case, tool))
        .map(|tool| format!("`{tool}` ran {} times", ran[tool]))
        .collect();
    let names: Vec<String> = repeated.iter().map(|e| describe(e)).collect();
    let repeats = AssertionResult {
        passed: unallowed.is_empty(),
        what: "crash: no tool executed again after the restart".into(),
        message: if unallowed.is_empty() {
            String::new()
        } else {
            format!(
                "the restart executed again what had run before the crash: {}; list a tool under `executed:` as often as it may run to allow it",
                unallowed.join(", ")
            )
        },
        expected: None,
        actual: (!names.is_empty()).then(|| names.join("; ")),
        path: None,
        nearest: None,
    };
    let report = CrashReport {
        after,
        turn: crashed.held.as_ref().map(|h| h.turn.unwrap_or(0) + 1),
        held: crashed.held.as_ref().map(|h| h.request.clone()),
        output: killed.map(|k| k.output.clone()).unwrap_or_default(),
        stderr: killed.map(|k| k.stderr.clone()).unwrap_or_default(),
        repeated: names,
    };
    Verdict {
        report,
        problems,
        repeats,
    }
}

/// The same tool on the same server with the same arguments.
fn same(a: &Execution, b: &Execution) -> bool {
    a.server == b.server && a.tool == b.tool && a.arguments == b.arguments
}

/// `send_email {"to":"ops@example.com"}`.
fn describe(e: &Execution) -> String {
    format!("{} {}", e.tool, e.arguments)
}

/// How many times the case's `executed:` lists (its own and its turns') name `tool`.
fn listed(case: &Case, tool: &str) -> usize {
    let expects = case.turns.iter().filter_map(|t| t.expect.as_ref());
    expects
        .chain(&case.expect)
        .flat_map(|e| e.executed.iter().flatten())
        .filter(|c| c.tool == tool)
        .count()
}
