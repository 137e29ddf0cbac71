//! Turning what a case did (its exchanges and the program's output) into turn reports and
//! assertion verdicts. Pure: no I/O.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::Value;

use crate::assert::{self, CallExpectation, CallsSpec, MatchContext, ObservedCall};
use crate::cassette::{Body, Interaction};
use crate::neutral::{Execution, ModelCall, ToolCall, Usage};
use crate::report::{
    AssertionResult, CallExecution, CallReport, ExecutionReport, ResultOrigin, TurnReport,
};
use crate::spec::{CallExpr, Case, Count, Expect, Expr, Order, Turn};
use crate::trajectory::delegations::delegations;
use crate::trajectory::executions::{Executions, Fate};

/// What one turn did at the model boundary.
#[derive(Debug, Default)]
struct TurnTrace {
    calls: Vec<(ToolCall, Option<Value>)>,
    reply: Option<String>,
    usage: Usage,
    latency_ms: u64,
    model_calls: usize,
    /// The tool calls MCP servers executed in the turn.
    executed: Vec<Execution>,
}

/// The answered model calls of a case's exchanges (a response the program could read),
/// with the turn each was made in.
pub fn model_calls(exchanges: &[Interaction]) -> Vec<(usize, ModelCall, u64)> {
    exchanges
        .iter()
        .filter(|it| it.response.body.as_ref().and_then(Body::as_json).is_some())
        .filter_map(|it| Some((it.turn.unwrap_or(0), it.model_call()?, it.latency_ms)))
        .collect()
}

/// How far the program got, beside what it said: what makes a turn's expectations
/// verdicts or not.
#[derive(Debug)]
pub struct Progress<'a> {
    /// The turns (from 0) in which a request missed the cassette.
    pub missed_turns: &'a BTreeSet<usize>,
    /// The turn (from 0) during which the program stopped before its conversation was
    /// over, and why (`the program exited with status 1`).
    pub stopped: Option<(usize, String)>,
    /// Model requests per turn, faulted ones included.
    pub requests: &'a std::collections::BTreeMap<Option<usize>, usize>,
    /// The faults injected, in order.
    pub faults: &'a [crate::fault::Fired],
    /// The program's exit status, when it exited on its own (command apps), and the tail
    /// of its stderr.
    pub exit: Option<(i32, &'a str)>,
}

/// Evaluate a case: one report per turn (with its own assertions), and the case-level
/// assertions over the whole conversation. `mocked` are the tools the spec mocks.
pub fn evaluate(
    case: &Case,
    exchanges: &[Interaction],
    outputs: &[String],
    progress: &Progress,
    mocked: &BTreeSet<String>,
) -> (Vec<TurnReport>, Vec<AssertionResult>) {
    let calls = model_calls(exchanges);
    let executions = Executions::pair(exchanges);
    let schemas = schemas(&calls);
    let origins = origins(exchanges);
    let traces = traces(case.turns.len(), calls, delegations(exchanges), &executions);
    let seen = Seen {
        executions: &executions,
        schemas: &schemas,
        mocked,
        origins: &origins,
        progress,
    };
    let turns: Vec<TurnReport> = (case.turns.iter().zip(&traces).enumerate())
        .map(|(index, (turn, trace))| {
            let output = outputs.get(index).cloned().unwrap_or_default();
            turn_report(index, turn, trace, output, &seen)
        })
        .collect();
    let case_assertions = match &case.expect {
        None => vec![],
        Some(e) => {
            let all_calls: Vec<(ToolCall, Option<Value>)> = traces
                .iter()
                .flat_map(|t| t.calls.iter().cloned())
                .collect();
            let all_executed: Vec<Execution> = (traces.iter())
                .flat_map(|t| t.executed.iter().cloned())
                .collect();
            let output = outputs.concat();
            let did = Did {
                calls: &all_calls,
                executed: &all_executed,
                reply: traces.iter().rev().find_map(|t| t.reply.as_deref()),
                output: &output,
                requests: progress.requests.values().sum(),
                exit: progress.exit,
            };
            check(e, &did, &schemas)
        }
    };
    (turns, case_assertions)
}

/// A harness's test (`agentproxy serve`) as the one turn of a case: what the model was
/// asked and said, its tool calls beside their results (a mock's marked as such), with no
/// expectation of its own (the test asserts in its own code). `requests` reached the
/// proxy; `missed`: one of them missed the cassette.
pub fn harness_turn(
    exchanges: &[Interaction],
    requests: usize,
    missed: bool,
    mocked: &BTreeSet<String>,
) -> TurnReport {
    let calls = model_calls(exchanges);
    let executions = Executions::pair(exchanges);
    let schemas = schemas(&calls);
    let origins = origins(exchanges);
    let trace = traces(1, calls, delegations(exchanges), &executions)
        .pop()
        .unwrap_or_default();
    let missed_turns = match missed {
        true => BTreeSet::from([0]),
        false => BTreeSet::new(),
    };
    let requests = std::collections::BTreeMap::from([(None, requests)]);
    let progress = Progress {
        missed_turns: &missed_turns,
        stopped: None,
        requests: &requests,
        faults: &[],
        exit: None,
    };
    let seen = Seen {
        executions: &executions,
        schemas: &schemas,
        mocked,
        origins: &origins,
        progress: &progress,
    };
    let turn = Turn {
        at: Default::default(),
        input: None,
        expect: None,
        faults: vec![],
    };
    turn_report(0, &turn, &trace, String::new(), &seen)
}

/// Check an `expect:` block against a harness's test (`agentproxy serve`) as one scope:
/// its `exchanges`, and the `requests` that reached the proxy. `exit` and `output` are
/// about a program the runner starts: the caller refuses them.
pub fn check_exchanges(
    e: &Expect,
    exchanges: &[Interaction],
    requests: usize,
) -> Vec<AssertionResult> {
    let calls = model_calls(exchanges);
    let executions = Executions::pair(exchanges);
    let schemas = schemas(&calls);
    let trace = traces(1, calls, delegations(exchanges), &executions)
        .pop()
        .unwrap_or_default();
    let did = Did {
        calls: &trace.calls,
        executed: &trace.executed,
        reply: trace.reply.as_deref(),
        output: "",
        requests,
        exit: None,
    };
    check(e, &did, &schemas)
}

/// The parameters schema of each tool the model was offered, by name.
fn schemas(calls: &[(usize, ModelCall, u64)]) -> HashMap<String, Value> {
    (calls.iter())
        .flat_map(|(_, c, _)| c.tools.iter())
        .map(|t| (t.name.clone(), t.parameters.clone()))
        .collect()
}

/// The tool calls whose results did not come from the program's own tool, by call id:
/// those a mock wrote, and those of calls a fault spoiled on the way to the program.
fn origins(exchanges: &[Interaction]) -> HashMap<String, ResultOrigin> {
    let mut out = HashMap::new();
    for it in exchanges {
        for id in &it.mocked {
            out.insert(id.clone(), ResultOrigin::Mocked);
        }
        let spoiled = (it.spoiled.as_ref())
            .and_then(|s| Some(it.model_call()?.tool_calls.get(s.call)?.id.clone()));
        if let Some(id) = spoiled {
            out.insert(id, ResultOrigin::Faulted);
        }
    }
    let mocked = delegations(exchanges).into_iter().filter(|d| d.mocked);
    out.extend(mocked.map(|d| (d.call.id, ResultOrigin::Mocked)));
    out
}

/// What every turn's report reads beside its own trace.
struct Seen<'a> {
    executions: &'a Executions,
    /// Each tool's parameters schema, as the requests declared it.
    schemas: &'a HashMap<String, Value>,
    mocked: &'a BTreeSet<String>,
    /// Where results came from, when not from the program's tool (see [`origins`]).
    origins: &'a HashMap<String, ResultOrigin>,
    progress: &'a Progress<'a>,
}

/// What each of `turns` turns did at the model boundary, from the case's answered model
/// calls: each tool call with the result the model was told for it (wherever in the case
/// it was sent back), and the executions at the MCP boundary.
fn traces(
    turns: usize,
    calls: Vec<(usize, ModelCall, u64)>,
    delegated: Vec<crate::trajectory::delegations::Delegated>,
    executions: &Executions,
) -> Vec<TurnTrace> {
    let results: HashMap<String, Value> = (calls.iter())
        .flat_map(|(_, c, _)| c.tool_results.iter())
        .map(|r| (r.call_id.clone(), r.content.clone()))
        .collect();
    let mut traces: Vec<TurnTrace> = (0..turns).map(|_| TurnTrace::default()).collect();
    for (turn, call, latency) in calls {
        let Some(t) = traces.get_mut(turn) else {
            continue;
        };
        t.model_calls += 1;
        t.usage += call.usage;
        t.latency_ms += latency;
        if call.reply.as_deref().is_some_and(|r| !r.is_empty()) {
            t.reply = call.reply.clone();
        }
        for tc in call.tool_calls {
            let result = results.get(&tc.id).cloned();
            t.calls.push((tc, result));
        }
    }
    for d in delegated {
        if let Some(t) = traces.get_mut(d.turn) {
            let at = d.at.min(t.calls.len());
            t.calls.insert(at, (d.call, Some(d.result)));
        }
    }
    for (index, t) in traces.iter_mut().enumerate() {
        t.executed = executions.in_turn(index).cloned().collect();
    }
    traces
}

/// The report of turn `index` (from 0), its assertions judged.
fn turn_report(
    index: usize,
    turn: &Turn,
    trace: &TurnTrace,
    output: String,
    seen: &Seen,
) -> TurnReport {
    let progress = seen.progress;
    let requests = turn_requests(progress, index);
    let did = Did {
        calls: &trace.calls,
        executed: &trace.executed,
        reply: trace.reply.as_deref(),
        output: &output,
        requests,
        // Only a single-turn case's turn judges the exit (parsing sees to it).
        exit: progress.exit,
    };
    let assertions = (turn.expect.as_ref())
        .map(|e| check(e, &did, seen.schemas))
        .unwrap_or_default();
    let tool_calls = (trace.calls.iter())
        .map(|(c, r)| CallReport {
            name: c.name.clone(),
            arguments: c.arguments.clone(),
            result: r.clone(),
            result_origin: r
                .as_ref()
                .map(|_| (seen.origins.get(&c.id).copied()).unwrap_or(ResultOrigin::Real)),
            execution: execution_of(seen.executions, c, seen.mocked),
        })
        .collect();
    TurnReport {
        index: index + 1,
        input: turn.input.clone(),
        reply: trace.reply.clone(),
        output,
        tool_calls,
        executions: trace.executed.iter().map(execution_report).collect(),
        assertions,
        model_calls: trace.model_calls,
        requests,
        faults: (progress.faults.iter())
            .filter(|f| f.turn.unwrap_or(0) == index)
            .cloned()
            .collect(),
        usage: trace.usage,
        latency_ms: trace.latency_ms,
        missed: progress.missed_turns.contains(&index),
        not_reached: match &progress.stopped {
            Some((during, why)) if index > *during => {
                Some(format!("{why} during turn {}", during + 1))
            }
            _ => None,
        },
    }
}

/// What the MCP boundary saw of a tool call, for its report.
fn execution_of(
    executions: &Executions,
    call: &ToolCall,
    mocked: &BTreeSet<String>,
) -> Option<CallExecution> {
    match executions.fate(call) {
        Fate::Executed(e) => Some(CallExecution::Executed {
            server: e.server.clone(),
            arguments: (e.arguments != call.arguments).then(|| e.arguments.clone()),
        }),
        Fate::NotExecuted if mocked.contains(&call.name) => Some(CallExecution::Mocked),
        Fate::NotExecuted => Some(CallExecution::NotExecuted),
        Fate::Function => None,
    }
}

fn execution_report(e: &Execution) -> ExecutionReport {
    ExecutionReport {
        server: e.server.clone(),
        name: e.tool.clone(),
        arguments: e.arguments.clone(),
        is_error: e.is_error,
    }
}

/// What a turn (or the whole case) did, as an `expect:` block judges it.
struct Did<'a> {
    calls: &'a [(ToolCall, Option<Value>)],
    executed: &'a [Execution],
    reply: Option<&'a str>,
    output: &'a str,
    /// Model requests made, faulted ones included.
    requests: usize,
    exit: Option<(i32, &'a str)>,
}

/// The model requests of turn `index` (from 0); requests outside any turn count in the
/// first.
fn turn_requests(progress: &Progress, index: usize) -> usize {
    let of = |t| progress.requests.get(&t).copied().unwrap_or(0);
    of(Some(index)) + if index == 0 { of(None) } else { 0 }
}

/// Check one `expect:` block.
fn check(e: &Expect, did: &Did, schemas: &HashMap<String, Value>) -> Vec<AssertionResult> {
    let mut out = vec![];
    let asserts_calls = e.calls.is_some() || !e.never.is_empty() || e.count.is_some() || e.strict;
    if asserts_calls {
        let observed: Vec<ObservedCall> = did
            .calls
            .iter()
            .map(|(c, _)| observed(&c.name, &c.arguments, schemas))
            .collect();
        out.extend(judge_calls(calls_spec(e), &observed));
    }
    // `never:` forbids executing a tool as much as calling it; `executed:` and
    // `not_executed:` are about executions only.
    let never_executed = !e.never.is_empty() && !did.executed.is_empty();
    if e.executed.is_some() || !e.not_executed.is_empty() || never_executed {
        let observed: Vec<ObservedCall> = did
            .executed
            .iter()
            .map(|x| observed(&x.tool, &x.arguments, schemas))
            .collect();
        out.extend(judge_calls(executions_spec(e), &observed));
    }
    if let Some(c) = e.requests {
        out.push(check_count("requests", "model request(s)", c, did.requests));
    }
    if let Some(want) = e.exit {
        let what = format!("exit {want}");
        out.push(match did.exit {
            Some((code, _)) if code == want => passed(what),
            Some((code, stderr)) => AssertionResult {
                // What the program said last on stderr: why it exited (a traceback's end).
                actual: Some(stderr.trim_end().to_owned()).filter(|t| !t.is_empty()),
                ..failed(
                    &what,
                    format!("the program exited with status {code}, not {want}"),
                )
            },
            None => failed(&what, "the program did not exit on its own".into()),
        });
    }
    if let Some(expr) = &e.reply {
        out.push(check_text("reply", expr, did.reply));
    }
    if let Some(expr) = &e.output {
        out.push(check_text("output", expr, Some(did.output.trim_end())));
    }
    out
}

fn observed(name: &str, arguments: &Value, schemas: &HashMap<String, Value>) -> ObservedCall {
    ObservedCall {
        name: name.to_owned(),
        arguments: arguments.clone(),
        schema: schemas.get(name).cloned(),
    }
}

/// The verdicts of a calls assertion over `observed`: one passed, or one per failure.
fn judge_calls(
    (spec, what): (CallsSpec, String),
    observed: &[ObservedCall],
) -> Vec<AssertionResult> {
    let failures = assert::check_calls(&spec, observed);
    if failures.is_empty() {
        return vec![passed(what)];
    }
    failures
        .into_iter()
        .map(|f| AssertionResult {
            passed: false,
            what: what.clone(),
            message: f.message,
            expected: Some(f.expected),
            actual: Some(f.actual),
            path: f.path,
            nearest: f.nearest,
        })
        .collect()
}

/// The expectations of `list`, their matchers compiled when the spec was loaded.
fn expectations<'a>(list: impl IntoIterator<Item = &'a CallExpr>) -> Vec<CallExpectation> {
    (list.into_iter())
        .map(|c| CallExpectation {
            name: c.tool.clone(),
            args: c.args.as_ref().map(|a| a.matcher.clone()),
        })
        .collect()
}

/// The executions assertion of `e`: `executed` in order, nothing else when it is `[]`,
/// none of `not_executed` and `never`.
fn executions_spec(e: &Expect) -> (CallsSpec, String) {
    let spec = CallsSpec {
        calls: expectations(e.executed.iter().flatten()),
        order: assert::Order::Subsequence,
        strict: e.executed.as_ref().is_some_and(Vec::is_empty),
        allow: Vec::new(),
        never: expectations(e.not_executed.iter().chain(&e.never)),
        count: None,
        executions: true,
    };
    let list = |l: &[CallExpectation]| {
        let l: Vec<String> = l.iter().map(|c| c.to_string()).collect();
        l.join(", ")
    };
    let mut parts = vec![];
    if e.executed.is_some() {
        parts.push(format!("executed [{}]", list(&spec.calls)));
    }
    if !spec.never.is_empty() {
        parts.push(format!("not executed [{}]", list(&spec.never)));
    }
    (spec, parts.join("; "))
}

fn calls_spec(e: &Expect) -> (CallsSpec, String) {
    let calls = e.calls.as_deref().unwrap_or_default();
    let to_usize = |n: Option<u64>| n.map(|v| usize::try_from(v).unwrap_or(usize::MAX));
    let spec = CallsSpec {
        calls: expectations(calls),
        order: match e.order {
            Order::Subsequence => assert::Order::Subsequence,
            Order::Exact => assert::Order::Exact,
            Order::Unordered => assert::Order::Unordered,
        },
        // `calls: []` means no tool at all.
        strict: e.strict || e.calls.as_ref().is_some_and(Vec::is_empty),
        allow: e.allow.clone(),
        never: expectations(&e.never),
        count: e.count.map(|c| match (c.min, c.max) {
            (Some(a), Some(b)) if a == b => assert::Count::Exactly(to_usize(Some(a)).unwrap_or(0)),
            (min, max) => assert::Count::Range {
                min: to_usize(min),
                max: to_usize(max),
            },
        }),
        executions: false,
    };
    let what = describe_calls(&spec);
    (spec, what)
}

fn describe_calls(spec: &CallsSpec) -> String {
    let mut parts = vec![];
    if !spec.calls.is_empty() || spec.strict {
        let list: Vec<String> = spec.calls.iter().map(|c| c.to_string()).collect();
        parts.push(format!("calls [{}]", list.join(", ")));
    }
    if !spec.never.is_empty() {
        let list: Vec<String> = spec.never.iter().map(|c| c.to_string()).collect();
        parts.push(format!("never [{}]", list.join(", ")));
    }
    if let Some(c) = &spec.count {
        parts.push(format!("count {c}"));
    }
    parts.join("; ")
}

/// `requests: 3` or `requests: {min, max}` against what was made.
fn check_count(key: &str, noun: &str, want: Count, made: usize) -> AssertionResult {
    let made_u = u64::try_from(made).unwrap_or(u64::MAX);
    let bounds = match (want.min, want.max) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(b)) => format!("{a} to {b}"),
        (Some(a), None) => format!("at least {a}"),
        (None, Some(b)) => format!("at most {b}"),
        (None, None) => "any number of".to_owned(),
    };
    let what = format!("{key} {bounds}");
    let fits = want.min.is_none_or(|m| made_u >= m) && want.max.is_none_or(|m| made_u <= m);
    if fits {
        return passed(what);
    }
    AssertionResult {
        message: format!("expected {bounds} {noun}, the program made {made}"),
        expected: Some(bounds),
        actual: Some(made.to_string()),
        ..failed(&what, String::new())
    }
}

fn check_text(what: &str, expr: &Expr, actual: Option<&str>) -> AssertionResult {
    let matcher = &expr.matcher;
    let label = format!("{what} {matcher}");
    let value = actual.map(|s| Value::String(s.to_owned()));
    match matcher.check(value.as_ref(), &MatchContext::default()) {
        Ok(()) => passed(label),
        Err(m) => AssertionResult {
            passed: false,
            what: label,
            message: format!("{what} does not match"),
            expected: Some(m.expected),
            actual: Some(m.actual),
            path: (!m.path.is_empty()).then_some(m.path),
            nearest: None,
        },
    }
}

fn passed(what: String) -> AssertionResult {
    AssertionResult {
        passed: true,
        what,
        message: String::new(),
        expected: None,
        actual: None,
        path: None,
        nearest: None,
    }
}

fn failed(what: &str, message: String) -> AssertionResult {
    AssertionResult {
        passed: false,
        what: what.to_owned(),
        message,
        expected: None,
        actual: None,
        path: None,
        nearest: None,
    }
}

/// The program's error text without what repeats a miss report: the SDK's exception
/// quotes the proxy's error body, which is the report the case already shows. The line
/// that quotes it is cut to `… agentproxy: cassette miss (reported above)`, and the
/// report's own lines that follow are dropped.
pub fn without_misses(error: &str, misses: &[String]) -> String {
    const MARK: &str = "agentproxy: cassette miss";
    let repeated: HashSet<&str> = misses
        .iter()
        .flat_map(|m| m.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut out = String::with_capacity(error.len());
    for line in error.lines() {
        if let Some(at) = line.find(MARK) {
            out.push_str(&line[..at]);
            out.push_str(MARK);
            out.push_str(" (reported above)\n");
        } else if !repeated.contains(line.trim()) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.truncate(out.trim_end().len());
    out
}

#[cfg(test)]
mod tests {
    use super::{check_count, without_misses};
    use crate::spec::Count;

    #[test]
    fn requests_are_judged_exactly_or_within_bounds() {
        let exactly = Count {
            min: Some(3),
            max: Some(3),
        };
        assert!(check_count("requests", "model request(s)", exactly, 3).passed);
        let failed = check_count("requests", "model request(s)", exactly, 2);
        assert_eq!(failed.what, "requests 3");
        assert_eq!(
            failed.message,
            "expected 3 model request(s), the program made 2"
        );
        let at_most = Count {
            min: None,
            max: Some(4),
        };
        assert!(check_count("requests", "model request(s)", at_most, 4).passed);
        let over = check_count("requests", "model request(s)", at_most, 5);
        assert_eq!(
            (over.what.as_str(), over.actual.as_deref()),
            ("requests at most 4", Some("5"))
        );
        assert_eq!(
            over.message,
            "expected at most 4 model request(s), the program made 5"
        );
    }

    #[test]
    fn a_stderr_tail_does_not_repeat_the_miss() {
        let miss = "cassette miss: POST /v1/chat/completions (openai.chat) has no recording
  nearest recorded request: interaction #0
  first difference at /messages/0/content:
    - …Use the tools.
    + …Use the tools well.
  hint: if this change is intended, re-record";
        let error = format!(
            "the program exited with status 1
--- stderr (tail) ---
Traceback (most recent call last):
  File \"agent.py\", line 66, in main
openai.BadRequestError: Error code: 400 - agentproxy: {}
",
            miss.replace('\n', "\n  ")
        );
        assert_eq!(
            without_misses(&error, &[miss.to_owned()]),
            "the program exited with status 1
--- stderr (tail) ---
Traceback (most recent call last):
  File \"agent.py\", line 66, in main
openai.BadRequestError: Error code: 400 - agentproxy: cassette miss (reported above)"
        );
        // A one-line JSON error body is cut where the report starts.
        let json = "anthropic.BadRequestError: {'message': 'agentproxy: cassette miss: POST /v1/messages\\n nearest'}";
        assert_eq!(
            without_misses(json, &[miss.to_owned()]),
            "anthropic.BadRequestError: {'message': 'agentproxy: cassette miss (reported above)"
        );
    }
}
