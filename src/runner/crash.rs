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
    let problems = kill_problems(&after, crashed, killed);
    let split = crashed.before.min(exchanges.len());
    let (first, second) = exchanges.split_at(split);
    let earlier = Executions::pair(first).all;
    let later = Executions::pair(second).all;
    // Each execution from before the crash that ran again, once, in the order it did.
    let mut repeated: Vec<&Execution> = Vec::new();
    for e in later.iter().map(|e| &e.execution) {
        let again = earlier.iter().any(|b| same(&b.execution, e));
        if again && !repeated.iter().any(|r| same(r, e)) {
            repeated.push(e);
        }
    }
    let ran: BTreeMap<&str, usize> =
        earlier
            .iter()
            .chain(&later)
            .fold(BTreeMap::new(), |mut n, e| {
                *n.entry(e.execution.tool.as_str()).or_default() += 1;
                n
            });
    let mut tools: Vec<&str> = Vec::new();
    for e in &repeated {
        if !tools.contains(&e.tool.as_str()) {
            tools.push(&e.tool);
        }
    }
    let unallowed: Vec<String> = tools
        .into_iter()
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
        // The report's crash lists what ran again.
        expected: None,
        actual: None,
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

/// Why the crash point `after` did not crash the program cleanly: it never came, nothing
/// followed it, or processes survived the kill.
fn kill_problems(after: &str, crashed: &Crashed, killed: Option<&Killed>) -> Vec<String> {
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
    if let Some(k) = killed.filter(|k| !k.survivors.is_empty()) {
        problems.push(format!(
            "crash after {after}: process(es) of the program survived the kill: {}",
            k.survivors.join(", ")
        ));
    }
    problems
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::fault::CrashPoint;
    use crate::proxy::crash::Held;
    use crate::trajectory::tests::Rec;

    /// The one case of a spec with `expect` (YAML, indented for the case).
    fn case(expect: &str) -> Case {
        let src = format!(
            "app: {{command: a}}\ncases:\n  - name: a\n    input: go\n    crash: {{after: {{executed: send_email}}}}\n{expect}"
        );
        let spec = crate::spec::parse(&src, std::path::Path::new("s.yaml")).unwrap();
        spec.cases[0].clone()
    }

    /// A run that executed `get_weather` and `send_email`, then (after `before` of its
    /// exchanges) `restart` again.
    fn run(restart: &[&str]) -> (Vec<Interaction>, usize) {
        let mut r = Rec::weather(1);
        let execute = |r: &mut Rec, tool: &str| {
            let params = json!({"name": tool, "arguments": {"to": "ops@example.com"}});
            r.mcp("mail", "tools/call", params, json!({"content": []}));
        };
        execute(&mut r, "get_weather");
        execute(&mut r, "send_email");
        let before = r.interactions.len();
        for tool in restart {
            execute(&mut r, tool);
        }
        (r.interactions, before)
    }

    fn crashed(before: usize) -> Crashed {
        Crashed {
            passed: true,
            held: Some(Held {
                request: "POST /v1/chat/completions".into(),
                turn: Some(0),
            }),
            before,
        }
    }

    fn judged(expect: &str, restart: &[&str]) -> Verdict {
        let c = case(expect);
        let (exchanges, before) = run(restart);
        let crash = c.crash.clone().unwrap();
        judge(&c, &crash, &crashed(before), None, &exchanges)
    }

    #[test]
    fn a_restart_that_runs_a_tool_again_fails_unless_executed_lists_it_that_often() {
        let v = judged("", &["get_weather", "send_email"]);
        assert!(!v.repeats.passed);
        assert_eq!(
            v.report.repeated,
            [
                r#"get_weather {"to":"ops@example.com"}"#,
                r#"send_email {"to":"ops@example.com"}"#
            ]
        );
        assert!(
            v.repeats
                .message
                .contains("`get_weather` ran 2 times, `send_email` ran 2 times"),
            "{}",
            v.repeats.message
        );
        assert_eq!(v.report.turn, Some(1));
        assert!(v.problems.is_empty());
        // Listed as often as it ran, a repeat is allowed; listed once, it is not.
        let allowed = "    expect:\n      executed: [get_weather, get_weather, send_email]\n";
        let v = judged(allowed, &["get_weather"]);
        assert!(v.repeats.passed, "{}", v.repeats.message);
        assert_eq!(v.report.repeated.len(), 1);
        let v = judged(
            "    expect:\n      executed: [get_weather]\n",
            &["get_weather"],
        );
        assert!(!v.repeats.passed);
    }

    #[test]
    fn a_tool_repeated_with_two_arguments_is_named_once() {
        let mut r = Rec::weather(1);
        let mail = |r: &mut Rec, to: &str| {
            let params = json!({"name": "send_email", "arguments": {"to": to}});
            r.mcp("mail", "tools/call", params, json!({"content": []}));
        };
        for to in ["a@x", "b@x", "a@x", "b@x", "a@x"] {
            mail(&mut r, to);
        }
        let c = case("");
        let v = judge(
            &c,
            c.crash.as_ref().unwrap(),
            &crashed(2),
            None,
            &r.interactions,
        );
        assert_eq!(
            v.report.repeated,
            [r#"send_email {"to":"a@x"}"#, r#"send_email {"to":"b@x"}"#]
        );
        assert!(
            v.repeats
                .message
                .contains(": `send_email` ran 5 times; list"),
            "{}",
            v.repeats.message
        );
    }

    #[test]
    fn a_resumed_run_repeats_nothing() {
        let v = judged("", &[]);
        assert!(v.repeats.passed);
        assert!(v.report.repeated.is_empty());
        assert_eq!(v.report.after, "executed send_email");
        assert_eq!(v.report.held.as_deref(), Some("POST /v1/chat/completions"));
    }

    #[test]
    fn a_process_that_survived_the_kill_fails_the_case() {
        let c = case("");
        let (exchanges, before) = run(&[]);
        let killed = Killed {
            survivors: vec!["4242 (worker)".into()],
            ..Killed::default()
        };
        let crash = c.crash.clone().unwrap();
        let v = judge(&c, &crash, &crashed(before), Some(&killed), &exchanges);
        assert_eq!(
            v.problems,
            ["crash after executed send_email: process(es) of the program survived the kill: 4242 (worker)"]
        );
    }

    #[test]
    fn a_crash_that_never_came_fails_with_why() {
        let c = case("");
        let (exchanges, _) = run(&[]);
        let mut crash = c.crash.clone().unwrap();
        for (passed, want) in [
            (false, "crash after executed send_email: the point never came, so the program was never killed"),
            (true, "crash after executed send_email: the program made no request after it, so it was never killed"),
        ] {
            let none = Crashed { passed, held: None, before: 0 };
            let v = judge(&c, &crash, &none, None, &exchanges);
            assert_eq!(v.problems, [want]);
            assert_eq!((v.report.turn, v.report.held), (None, None));
        }
        crash.after = CrashPoint::Request(9);
        let v = judge(&c, &crash, &Crashed::default(), None, &exchanges);
        assert!(
            v.problems[0].starts_with("crash after request 9: "),
            "{:?}",
            v.problems
        );
    }
}
