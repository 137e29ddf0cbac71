//! A case's verdict, pure: from what its session did ([`Outcome`]) and what driving the
//! program gave ([`Driven`]), the turn reports with their assertions, the case-level
//! assertions, the crash report, the problems that fail the case and the warnings that do
//! not. The case's status follows from them ([`CaseReport::conclude`]).

use std::collections::BTreeSet;

use super::contain::Level;
use super::crash;
use super::driver::Driven;
use super::evaluate;
use crate::neutral::Usage;
use crate::proxy::{FuzzCall, Outcome};
use crate::report::{AssertionResult, CaseReport, CrashReport, TurnReport};
use crate::spec::{Case, Require};

/// What a run of a case produced, to be judged.
pub(crate) struct Ran<'a> {
    pub case: &'a Case,
    pub outcome: &'a Outcome,
    pub driven: &'a Driven,
    /// Why driving the program stopped before its conversation was over, if it did.
    pub stopped: Option<String>,
    /// The tools the spec mocks, and the mocks that could not answer.
    pub mocked: BTreeSet<String>,
    pub mock_problems: Vec<String>,
    /// A fuzz run's arguments.
    pub fuzz: Option<&'a FuzzCall>,
    /// The containment the spec requires (`egress.require`).
    pub require: Option<Require>,
}

/// The verdict on one run of a case.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    pub turns: Vec<TurnReport>,
    pub assertions: Vec<AssertionResult>,
    pub crash: Option<CrashReport>,
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
    pub usage: Usage,
}

impl Verdict {
    /// Put the verdict into `report`, beside what it holds already (its mode, a stale
    /// cassette's warning), with the run's misses.
    pub(crate) fn fill(self, report: &mut CaseReport, outcome: &Outcome) {
        report.turns = self.turns;
        report.assertions = self.assertions;
        report.crash = self.crash;
        report.usage = self.usage;
        report.misses = outcome.misses.clone();
        report.near_misses = outcome.near_misses.clone();
        report.problems.extend(self.problems);
        report.warnings.extend(self.warnings);
    }
}

/// Judge one run of a case.
pub(crate) fn judge(ran: Ran) -> Verdict {
    let Ran {
        case,
        outcome,
        driven,
        ..
    } = &ran;
    let outputs = &driven.outputs;
    let exit = (driven.exit.as_ref()).map(|(code, stderr)| (*code, stderr.as_str()));
    let progress = evaluate::Progress {
        missed_turns: &outcome.missed_turns,
        // `outputs` holds the turns that completed: the program stopped in the next one.
        stopped: (ran.stopped.as_ref()).map(|why| {
            let first = why.lines().next().unwrap_or_default();
            (outputs.len(), first.to_owned())
        }),
        requests: &outcome.model_requests,
        faults: &outcome.faults.fired,
        exit,
    };
    let (turns, mut assertions) =
        evaluate::evaluate(case, &outcome.exchanges, outputs, &progress, &ran.mocked);
    let mut problems = ran.mock_problems.clone();
    let mut crash_report = None;
    if let (Some(crash), Some(crashed)) = (&case.crash, &outcome.crash) {
        let exchanges = &outcome.exchanges;
        let v = crash::judge(case, crash, crashed, driven.killed.as_ref(), exchanges);
        crash_report = Some(v.report);
        assertions.push(v.repeats);
        problems.extend(v.problems);
    }
    let mut warnings: Vec<String> = unused_mocks(case, outcome, &turns, &ran.mocked)
        .map(|name| format!("mocked tool `{name}` was never called"))
        .collect();
    problems.extend(uncertified(ran.require, driven.level.as_ref()));
    crate::proxy::egress::findings(&outcome.egress, &mut problems, &mut warnings);
    // A replay the program made no request of: whatever it printed, nothing was tested
    // (recording it would have failed the same way).
    if outcome.requests == 0 && !outcome.unused.is_empty() {
        problems.push(format!(
            "the program made no request through the proxy, so none of the cassette's {} recording(s) was served: nothing was tested",
            outcome.unused.len()
        ));
    }
    // Mocks that could not answer and faults that could not fire: the case did not test
    // what it says.
    problems.extend(outcome.mcp.problems.iter().cloned());
    problems.extend(outcome.faults.problems());
    if let (Some(call), false) = (ran.fuzz, outcome.faults.fuzzed) {
        problems.push(format!(
            "fuzz: no answer called `{}`, so the arguments never reached the program",
            call.tool
        ));
    }
    let mut usage = Usage::default();
    for t in &turns {
        usage += t.usage;
    }
    Verdict {
        turns,
        assertions,
        crash: crash_report,
        problems,
        warnings,
        usage,
    }
}

/// Why a run cannot certify what the spec asks (`egress.require`) at the containment it
/// reached (`None`: no program of its own, as a `url:` app).
fn uncertified(require: Option<Require>, level: Option<&Level>) -> Option<String> {
    let require = require?;
    let reached = match (require, level) {
        (Require::Contained, Some(Level::Contained)) => return None,
        (
            Require::Intercepted,
            Some(Level::Contained | Level::Intercepted | Level::NotContained(_)),
        ) => return None,
        (_, Some(level)) => level.to_string(),
        (_, None) => "no program of its own was started, so nothing was contained".to_owned(),
    };
    Some(format!(
        "cannot certify: the spec requires `egress.require: {}`, and this run reached {reached}",
        require.as_str()
    ))
}

/// Mocked tools the program never called, but for those the case forbids outright
/// (`never: [tool]`: the mock is meant for other cases); none after a miss, since the
/// program did not get the answers that would have called them.
fn unused_mocks<'a>(
    case: &'a Case,
    outcome: &'a Outcome,
    turns: &'a [TurnReport],
    mocked: &'a BTreeSet<String>,
) -> impl Iterator<Item = &'a str> {
    let forbidden: BTreeSet<&str> = (case.turns.iter())
        .filter_map(|t| t.expect.as_ref())
        .chain(&case.expect)
        .flat_map(|e| &e.never)
        .filter(|c| c.args.is_none())
        .map(|c| c.tool.as_str())
        .collect();
    let called: BTreeSet<&str> = (turns.iter())
        .flat_map(|t| t.tool_calls.iter().map(|c| c.name.as_str()))
        .chain(outcome.mcp.mocked.iter().map(String::as_str))
        .collect();
    (mocked.iter().map(String::as_str))
        .filter(move |n| !called.contains(n) && !forbidden.contains(n))
        .filter(|_| outcome.misses.is_empty())
}
