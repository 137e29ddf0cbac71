//! The result of a test run, as data: what each case and turn did and which assertions
//! held. Renderers (console, JSON, Markdown, JUnit, HTML) read only this.

pub mod console;
mod formats;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod merge;
pub mod otlp;
#[cfg(test)]
mod sample;
mod text;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::matching::nearmiss::NearMiss;
use crate::neutral::Usage;
use crate::spec::Shard;

pub use formats::{render, Format};
pub(crate) use text::failure;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    pub cases: Vec<CaseReport>,
    pub summary: Summary,
    pub duration_ms: u64,
    /// The shard this run was (`--shard`), whose other cases are reported skipped.
    pub shard: Option<Shard>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    pub skipped: usize,
    /// Turns of erroring cases that the program never reached, counted apart from cases.
    pub turns_not_reached: usize,
}

impl Summary {
    pub fn of(cases: &[CaseReport]) -> Summary {
        let mut s = Summary::default();
        for c in cases {
            match c.status {
                Status::Passed => s.passed += 1,
                Status::Failed => s.failed += 1,
                Status::Error => s.errors += 1,
                Status::Skipped => s.skipped += 1,
            }
            s.turns_not_reached += c.turns.iter().filter(|t| t.not_reached.is_some()).count();
        }
        s
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Passed,
    /// An assertion failed or a request missed the cassette.
    Failed,
    /// The program crashed or timed out, or the case could not run.
    Error,
    Skipped,
}

impl Status {
    /// `passed`, `failed`, `error`, `skipped`: its name in the JSON report.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Error => "error",
            Status::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseReport {
    /// The spec file the case comes from.
    pub spec: String,
    pub name: String,
    pub status: Status,
    /// `replay`, `record` or `update`: what this case actually did.
    pub mode: String,
    pub cassette: String,
    /// How far its program was contained: `contained (network namespace)`, `intercepted
    /// (…)` or `not contained: REASON`; `null` for a `url:` app or a case that did not
    /// start one. (Absent from reports before 2.9.)
    #[serde(default)]
    pub containment: Option<String>,
    pub duration_ms: u64,
    pub turns: Vec<TurnReport>,
    /// Assertions of the case-level `expect`, over the whole conversation.
    pub assertions: Vec<AssertionResult>,
    /// Near-miss reports of requests that were not in the cassette.
    pub misses: Vec<String>,
    /// The misses that have a nearest recording, each beside it (`miss` is its position
    /// in `misses`). (Absent from reports before 2.9.)
    #[serde(default)]
    pub near_misses: Vec<NearMiss>,
    /// What made the case not test what it says, each failing it: a mock that could not
    /// answer, a fault with nothing to act on, a crash point never reached, nothing to
    /// fuzz. (Absent from reports before 2.7, where they were warnings.)
    #[serde(default)]
    pub problems: Vec<String>,
    /// What the reader should know that does not fail the case.
    pub warnings: Vec<String>,
    /// Why the case could not complete (crash, timeout), with the tail of its stderr.
    pub error: Option<String>,
    /// Token usage summed over every model call of the case.
    pub usage: Usage,
    /// Trajectory diff against the previous cassette, after a re-record.
    pub diff: Option<String>,
    /// The case's fuzz runs (`fuzz:`). (Absent from reports before 2.5.)
    #[serde(default)]
    pub fuzz: Option<FuzzReport>,
    /// The case's crash and restart (`crash:`). (Absent from reports before 2.6.)
    #[serde(default)]
    pub crash: Option<CrashReport>,
}

/// A crash test: where the program was killed and what the restart repeated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashReport {
    /// The point, as the spec writes it: `executed send_email`, `request 2`.
    pub after: String,
    /// The turn (from 1) the program was killed in; `None` when it never was.
    pub turn: Option<usize>,
    /// The request it was killed waiting for: `POST /v1/chat/completions`.
    pub held: Option<String>,
    /// What it had printed on stdout in that turn before it was killed.
    pub output: String,
    /// The tail of its stderr when it was killed.
    pub stderr: String,
    /// Executions at the MCP boundary from before the crash that ran again after it:
    /// `send_email {"body":"…","to":"ops@example.com"}`.
    pub repeated: Vec<String>,
}

/// The fuzz runs of a case: each ran it again with other arguments in the model's call to
/// `tool`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzReport {
    pub tool: String,
    pub seed: u64,
    pub runs: Vec<FuzzRun>,
}

impl FuzzReport {
    pub fn failed(&self) -> impl Iterator<Item = &FuzzRun> {
        self.runs.iter().filter(|r| !r.passed)
    }
}

/// One fuzz run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzRun {
    /// From 1, in the order the runs ran.
    pub index: usize,
    pub kind: FuzzKind,
    /// How invalid arguments break the schema.
    pub violation: Option<crate::fuzz::Way>,
    /// The arguments the program got in the call.
    pub arguments: Value,
    pub passed: bool,
    /// Why the run failed, one line each: failed assertions, misses, problems, the error.
    pub failures: Vec<String>,
    /// What the program printed on stdout in the run, every turn's output in order.
    #[serde(default)]
    pub output: String,
}

/// Where a fuzz run's arguments come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FuzzKind {
    /// `arguments:` of the spec.
    Given,
    /// Generated to satisfy the schema.
    Valid,
    /// Generated to break the schema one way.
    Invalid,
}

impl FuzzKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FuzzKind::Given => "given",
            FuzzKind::Valid => "valid",
            FuzzKind::Invalid => "invalid",
        }
    }
}

impl FuzzRun {
    /// `run 3 (invalid: missing_required)`.
    pub fn title(&self) -> String {
        match self.violation {
            Some(way) => format!("run {} ({}: {way})", self.index, self.kind.as_str()),
            None => format!("run {} ({})", self.index, self.kind.as_str()),
        }
    }
}

/// One thing that fails a case (see [`CaseReport::causes`]).
#[derive(Debug, Clone, Copy)]
pub enum Cause<'a> {
    /// A request missed the cassette: its near-miss report.
    Miss(&'a str),
    /// A failed assertion that is a verdict, with its turn (from 1; `None`: the whole
    /// conversation).
    Assertion(Option<usize>, &'a AssertionResult),
    /// The case did not test what it says.
    Problem(&'a str),
    /// This many fuzz runs failed.
    Fuzz(usize),
}

impl Cause<'_> {
    /// A short name of its kind, for JUnit's failure `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            Cause::Miss(_) => "cassette_miss",
            Cause::Assertion(..) => "assertion",
            Cause::Problem(_) => "problem",
            Cause::Fuzz(_) => "fuzz",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnReport {
    /// The turn's number, from 1.
    pub index: usize,
    /// `None` for a case without `input` (the program runs with stdin closed).
    pub input: Option<String>,
    /// The last assistant message the model produced in this turn.
    pub reply: Option<String>,
    /// What the program printed (or answered, for `url:` apps) in this turn.
    pub output: String,
    pub tool_calls: Vec<CallReport>,
    /// The tool calls MCP servers executed in this turn (`tools/call` through `agentproxy
    /// mcp`), whether or not the model asked for them. (Absent from reports before 2.2.)
    #[serde(default)]
    pub executions: Vec<ExecutionReport>,
    pub assertions: Vec<AssertionResult>,
    pub model_calls: usize,
    /// Model requests the program made in the turn, faulted ones and retries included
    /// (`model_calls` counts the answered ones). (Absent from reports before 2.3.)
    #[serde(default)]
    pub requests: usize,
    /// The faults injected in the turn, in order. (Absent from reports before 2.3.)
    #[serde(default)]
    pub faults: Vec<crate::fault::Fired>,
    pub usage: Usage,
    /// Summed recorded latency of the turn's model calls.
    pub latency_ms: u64,
    /// A request of this turn missed the cassette: the program did not get its answers, so
    /// the turn's expectations could not be judged (they are kept, and not counted).
    pub missed: bool,
    /// Why the program never got to this turn (`the program exited with status 1 during
    /// turn 2`): its expectations are skipped.
    pub not_reached: Option<String>,
}

impl TurnReport {
    /// Whether the turn's assertions are verdicts: the program got its answers and reached
    /// the turn.
    pub fn judged(&self) -> bool {
        !self.missed && self.not_reached.is_none()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallReport {
    pub name: String,
    pub arguments: Value,
    /// The result the model was told, when the program sent it back (mocked or real).
    pub result: Option<Value>,
    /// Where that result came from. (Absent from reports before 2.8.)
    #[serde(default)]
    pub result_origin: Option<ResultOrigin>,
    /// What the MCP boundary saw of the call; `None` for a tool no MCP server listed (a
    /// function of the program). (Absent from reports before 2.2.)
    #[serde(default)]
    pub execution: Option<CallExecution>,
}

/// Where the result of a tool call came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultOrigin {
    /// The program sent back what its tool returned.
    Real,
    /// A spec's mock wrote it (`tools:`).
    Mocked,
    /// A fault spoiled the call on its way to the program: the result is the program's
    /// answer to the spoiled call.
    Faulted,
}

impl ResultOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            ResultOrigin::Real => "real",
            ResultOrigin::Mocked => "mocked",
            ResultOrigin::Faulted => "faulted",
        }
    }
}

/// What happened to a tool call of an MCP tool at the MCP boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CallExecution {
    /// The server executed it; `arguments` are those it was called with when they differ
    /// from the model's (`None` when the same).
    Executed {
        server: String,
        arguments: Option<Value>,
    },
    /// A spec mock answered it; the server never saw it.
    Mocked,
    /// Nothing executed it at the MCP boundary.
    NotExecuted,
}

/// A `tools/call` an MCP server executed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionReport {
    pub server: String,
    pub name: String,
    pub arguments: Value,
    /// The server answered with an error (JSON-RPC, or a result marked `isError`).
    pub is_error: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AssertionResult {
    pub passed: bool,
    /// What was asserted, e.g. `calls: get_weather {city: {contains: Paris}}`.
    pub what: String,
    /// Why it failed (empty when it passed).
    pub message: String,
    pub expected: Option<String>,
    pub actual: Option<String>,
    /// JSON path of the failing value, e.g. `passengers.0.name`.
    pub path: Option<String>,
    /// The nearest candidate call, when a call was missing.
    pub nearest: Option<String>,
}

impl AssertionResult {
    /// Its labelled values, in the order reports show them.
    pub fn labelled(&self) -> [(&'static str, &Option<String>); 4] {
        [
            ("expected", &self.expected),
            ("actual", &self.actual),
            ("path", &self.path),
            ("nearest", &self.nearest),
        ]
    }
}

impl CaseReport {
    /// A passing report with nothing in it yet; the cassette path is shown normalized
    /// (`examples/x/../../cassettes/a.json` as `cassettes/a.json`).
    pub fn new(spec: &std::path::Path, name: &str, mode: &str, cassette: &std::path::Path) -> Self {
        CaseReport {
            spec: spec.display().to_string(),
            name: name.to_owned(),
            status: Status::Passed,
            mode: mode.to_owned(),
            cassette: path_clean::clean(cassette).display().to_string(),
            containment: None,
            duration_ms: 0,
            turns: vec![],
            assertions: vec![],
            misses: vec![],
            near_misses: vec![],
            problems: vec![],
            warnings: vec![],
            error: None,
            usage: Usage::default(),
            diff: None,
            fuzz: None,
            crash: None,
        }
    }

    /// Mark the case skipped, for `reason` (`skip:` of the spec, may be empty).
    pub fn skip(&mut self, reason: &str) {
        self.status = Status::Skipped;
        self.warnings.push(if reason.is_empty() {
            "skipped".into()
        } else {
            format!("skipped: {reason}")
        });
    }

    /// Every failed assertion of the case that is a verdict, turn ones first; the
    /// case-level ones only when every turn was judged (see [`TurnReport::judged`]).
    pub fn failures(&self) -> impl Iterator<Item = (Option<usize>, &AssertionResult)> {
        let whole = self.turns.iter().all(TurnReport::judged);
        self.turns
            .iter()
            .filter(|t| t.judged())
            .flat_map(|t| t.assertions.iter().map(move |a| (Some(t.index), a)))
            .chain(
                self.assertions
                    .iter()
                    .filter(move |_| whole)
                    .map(|a| (None, a)),
            )
            .filter(|(_, a)| !a.passed)
    }

    /// What fails the case, the first cause first: requests that missed the cassette (the
    /// program did not get its answers), failed assertions that are verdicts, problems,
    /// failed fuzz runs. Empty for a case that passes (or could not run: see `error`).
    pub fn causes(&self) -> impl Iterator<Item = Cause<'_>> {
        let fuzz = self.fuzz.as_ref().map_or(0, |f| f.failed().count());
        (self.misses.iter().map(|m| Cause::Miss(m)))
            .chain(self.failures().map(|(turn, a)| Cause::Assertion(turn, a)))
            .chain(self.problems.iter().map(|p| Cause::Problem(p)))
            .chain((fuzz > 0).then_some(Cause::Fuzz(fuzz)))
    }

    /// What a renderer names in one line as why the case failed.
    pub fn first_cause(&self) -> Option<Cause<'_>> {
        self.causes().next()
    }

    /// The case's status from what it holds: failed when anything fails it, unless it
    /// errored or was skipped. The one place a case that ran is judged failed.
    pub fn conclude(&mut self) {
        if self.status == Status::Passed && self.first_cause().is_some() {
            self.status = Status::Failed;
        }
    }

    /// The failed assertions that are not verdicts, because a request of their turn missed
    /// the cassette (or, for case-level ones, of any turn): the ones a console collapses.
    pub fn unjudged(&self) -> impl Iterator<Item = (Option<usize>, &AssertionResult)> {
        let whole = self.turns.iter().all(TurnReport::judged);
        self.turns
            .iter()
            .filter(|t| t.missed)
            .flat_map(|t| t.assertions.iter().map(move |a| (Some(t.index), a)))
            .chain(
                self.assertions
                    .iter()
                    .filter(move |_| !whole)
                    .map(|a| (None, a)),
            )
            .filter(|(_, a)| !a.passed)
    }
}
