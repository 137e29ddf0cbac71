//! A realistic run report for the renderers' tests: two spec files; a passing, a failing,
//! a skipped, an erroring and a multi-turn case; tool calls, misses, warnings, a diff,
//! unicode, a `|` and `<` in names, and ANSI escapes in a stderr tail.

use serde_json::json;

use super::{
    AssertionResult, CallExecution, CallReport, CaseReport, CrashReport, ExecutionReport, FuzzKind,
    FuzzReport, FuzzRun, ResultOrigin, RunReport, Status, Summary, TurnReport,
};
use crate::matching::nearmiss::NearMiss;
use crate::neutral::Usage;

fn usage(prompt: u64, completion: u64, cache_read: u64) -> Usage {
    Usage {
        prompt,
        completion,
        cache_read,
        ..Usage::default()
    }
}

fn pass(what: &str) -> AssertionResult {
    AssertionResult {
        passed: true,
        what: what.into(),
        message: String::new(),
        expected: None,
        actual: None,
        path: None,
        nearest: None,
    }
}

fn case(spec: &str, name: &str, status: Status, duration_ms: u64) -> CaseReport {
    CaseReport {
        spec: spec.into(),
        name: name.into(),
        status,
        mode: "replay".into(),
        cassette: format!("cassettes/{}.json", name.replace(' ', "-")),
        containment: Some("contained (network namespace)".into()),
        duration_ms,
        turns: Vec::new(),
        assertions: Vec::new(),
        misses: Vec::new(),
        near_misses: Vec::new(),
        problems: Vec::new(),
        warnings: Vec::new(),
        error: None,
        usage: Usage::default(),
        diff: None,
        fuzz: None,
        crash: None,
    }
}

fn sum_usage(c: &mut CaseReport) {
    for t in &c.turns {
        c.usage += t.usage;
    }
}

const MISS: &str = "cassette miss: POST /v1/chat/completions (openai.chat) has no recording
  nearest recorded request: interaction #3
  envelope:
    tools: recorded [get_weather], now [get_weather, get_time]
  first difference at /messages/3/content:
    - And in Fahrenheit?
    + And in Fahrenheit, please?
  hint: if this change is intended, re-record; if the value is volatile, declare it with --match-ignore or --match-hole";

/// The miss of [`MISS`] beside its nearest recording.
fn near_miss() -> NearMiss {
    let tool = |name: &str| json!({"type": "function", "function": {"name": name, "parameters": {"type": "object"}}});
    let body = |last: &str, tools: Vec<serde_json::Value>| {
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You are a weather assistant."},
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": "18 °C and sunny."},
                {"role": "user", "content": last},
            ],
            "tools": tools,
        })
    };
    let now = body(
        "And in Fahrenheit, please?",
        vec![tool("get_weather"), tool("get_time")],
    );
    let recorded = (3, body("And in Fahrenheit?", vec![tool("get_weather")]));
    NearMiss::of(0, recorded, &now).expect("the two differ")
}

/// A case whose assertions all held, failed only by a problem: a fault that could not
/// fire, beside a warning that fails nothing.
pub(crate) fn failed_by_a_problem() -> CaseReport {
    let mut c = case("specs/faults.yaml", "retries", Status::Passed, 410);
    c.assertions.push(pass("reply: {contains: sunny}"));
    c.problems.push(
        "fault request 1: malformed_tool_args did not fire: the answer has no tool call; the program got the answer as it was".into(),
    );
    c.warnings
        .push("mocked tool `get_time` was never called".into());
    c.conclude();
    c
}

const WEATHER: &str = "specs/weather.yaml";
const BOOKING: &str = "specs/booking.yaml";

pub(crate) fn run() -> RunReport {
    let mut skipped = case(WEATHER, "tokyo <later>", Status::Skipped, 0);
    skipped.mode = "skip".into();
    skipped.warnings.push("skipped: flaky upstream".into());
    let cases = vec![paris(), follow_up(), skipped, book(), cancel()];
    RunReport {
        summary: Summary::of(&cases),
        cases,
        duration_ms: 5231,
        shard: None,
    }
}

/// Passed, with a tool call and a crash point whose repeat the spec allows.
fn paris() -> CaseReport {
    let mut paris = case(WEATHER, "paris", Status::Passed, 842);
    paris.turns.push(TurnReport {
        index: 1,
        input: Some("What's the weather in Paris?".into()),
        reply: Some("It's 18°C and sunny in Paris ☀️".into()),
        output: "It's 18°C and sunny in Paris ☀️".into(),
        tool_calls: vec![CallReport {
            name: "get_weather".into(),
            arguments: json!({"city": "Paris"}),
            result: Some(json!({"temp_c": 18, "sky": "sunny"})),
            result_origin: Some(ResultOrigin::Real),
            execution: None,
        }],
        executions: Vec::new(),
        assertions: vec![
            pass("calls: get_weather {city: {contains: Paris}}"),
            pass("reply: {contains: \"18\"}"),
        ],
        model_calls: 2,
        requests: 2,
        faults: vec![],
        usage: usage(412, 38, 256),
        latency_ms: 731,
        missed: false,
        not_reached: None,
    });
    sum_usage(&mut paris);
    // Killed once get_weather had run; `executed:` lists it twice, so the repeat passes.
    paris
        .assertions
        .push(pass("crash: no tool executed again after the restart"));
    paris.crash = Some(CrashReport {
        after: "executed get_weather".into(),
        turn: Some(1),
        held: Some("POST /v1/chat/completions".into()),
        output: "tool: get_weather {\"city\": \"Paris\"}\n".into(),
        stderr: String::new(),
        repeated: vec!["get_weather {\"city\":\"Paris\"}".into()],
    });
    paris
}

/// Failed: the second turn missed the cassette; unknown usage in the first.
fn follow_up() -> CaseReport {
    let mut follow = case(WEATHER, "follow-up | °F", Status::Failed, 1570);
    follow.turns.push(TurnReport {
        index: 1,
        input: Some("Weather in Paris?".into()),
        reply: Some("Sunny, 18°C.".into()),
        output: "Sunny, 18°C.".into(),
        tool_calls: vec![CallReport {
            name: "get_weather".into(),
            arguments: json!({"city": "Paris", "units": "metric"}),
            result: Some(json!({"temp_c": 18, "sky": "sunny"})),
            result_origin: Some(ResultOrigin::Real),
            execution: None,
        }],
        executions: Vec::new(),
        assertions: vec![pass("calls: [get_weather]")],
        model_calls: 2,
        requests: 2,
        faults: vec![],
        // One of the two calls streamed without a usage chunk.
        usage: {
            let mut u = usage(398, 21, 0);
            u += Usage::UNKNOWN;
            u
        },
        latency_ms: 655,
        missed: false,
        not_reached: None,
    });
    follow.turns.push(TurnReport {
        index: 2,
        input: Some("And in Fahrenheit?".into()),
        reply: None,
        output: "Error code: 400 - agentproxy_cassette_miss".into(),
        tool_calls: Vec::new(),
        executions: Vec::new(),
        assertions: vec![
            pass("calls: []"),
            AssertionResult {
                passed: false,
                what: "reply: {regex: '6[0-9]'}".into(),
                message: "the turn has no reply: the model call missed the cassette".into(),
                expected: Some("a reply matching /6[0-9]/".into()),
                actual: None,
                path: None,
                nearest: None,
            },
        ],
        model_calls: 0,
        requests: 0,
        faults: vec![],
        usage: Usage::default(),
        latency_ms: 0,
        missed: true,
        not_reached: None,
    });
    follow.assertions.push(AssertionResult {
        passed: false,
        what: "never: [delete_account]".into(),
        message: "`delete_account` was called in turn 1".into(),
        expected: Some("no call to delete_account".into()),
        actual: Some("delete_account {\"user\":\"me\"}".into()),
        path: None,
        nearest: None,
    });
    follow.misses.push(MISS.into());
    follow.near_misses.push(near_miss());
    follow.error = Some(
        "the program exited with status 1\n--- stderr (tail) ---\nTraceback (most recent call last):\n  File \"agent.py\", line 66, in main\nopenai.BadRequestError: Error code: 400 - agentproxy: cassette miss (reported above)".into(),
    );
    sum_usage(&mut follow);
    follow
}

/// Failed while recording: MCP execution, a mock, a trajectory diff and a fuzz run.
fn book() -> CaseReport {
    let mut book = case(BOOKING, "book flight", Status::Failed, 2204);
    book.mode = "record".into();
    book.turns.push(TurnReport {
        index: 1,
        input: Some("Book me a flight to Zürich for Zoë and me, tomorrow".into()),
        reply: Some("I checked the visa rules.\nShall I book it?".into()),
        output: "I checked the visa rules.\nShall I book it?\n".into(),
        tool_calls: vec![
            CallReport {
                name: "search_flights".into(),
                arguments: json!({"to": "ZRH", "date": "2025-06-02"}),
                result: Some(json!([{"id": "LX345", "price": 212.5}])),
                result_origin: Some(ResultOrigin::Real),
                execution: Some(CallExecution::Executed {
                    server: "travel".into(),
                    arguments: None,
                }),
            },
            CallReport {
                name: "check_visa".into(),
                arguments: json!({"country": "CH", "passengers": [{"name": "Zoe"}, {"name": "me"}]}),
                result: Some(json!({"required": false})),
                result_origin: Some(ResultOrigin::Mocked),
                execution: Some(CallExecution::Mocked),
            },
        ],
        executions: vec![ExecutionReport {
            server: "travel".into(),
            name: "search_flights".into(),
            arguments: json!({"to": "ZRH", "date": "2025-06-02"}),
            is_error: false,
        }],
        assertions: vec![
            pass("calls: search_flights {to: ZRH}"),
            AssertionResult {
                passed: false,
                what: "calls: create_booking {passengers.0.name: Zoë}".into(),
                message: "create_booking was not called".into(),
                expected: Some("create_booking {\"passengers\":[{\"name\":\"Zoë\"}]}".into()),
                actual: Some("search_flights, check_visa".into()),
                path: Some("passengers.0.name".into()),
                nearest: Some("check_visa {\"passengers\":[{\"name\":\"Zoe\"}]} (name: \"Zoe\" ≠ \"Zoë\")".into()),
            },
            AssertionResult {
                passed: false,
                what: "calls: create_booking {passengers.0.name: Zoë}".into(),
                message: "expected exactly 3 tool calls, got 2".into(),
                expected: Some("exactly 3 tool calls".into()),
                actual: Some("2".into()),
                path: None,
                nearest: None,
            },
        ],
        model_calls: 3,
        requests: 3,
        faults: vec![],
        usage: Usage {
            cache_creation: 512,
            ..usage(1830, 164, 1024)
        },
        latency_ms: 2011,
        missed: false,
        not_reached: None,
    });
    book.diff = Some(
        "now also calls `check_visa` before `create_booking`\n  - create_booking {\"flight\":\"LX345\"}\n  + check_visa {\"country\":\"CH\"}"
            .into(),
    );
    sum_usage(&mut book);
    book.fuzz = Some(FuzzReport {
        tool: "create_booking".into(),
        seed: 1,
        runs: vec![
            FuzzRun {
                index: 1,
                kind: FuzzKind::Valid,
                violation: None,
                arguments: json!({"flight": "LX3", "seats": 1}),
                passed: true,
                failures: vec![],
                output: "booked LX3, 1 seat\n".into(),
            },
            FuzzRun {
                index: 2,
                kind: FuzzKind::Invalid,
                violation: Some(crate::fuzz::Way::WrongType),
                arguments: json!({"flight": "LX3", "seats": "0"}),
                passed: false,
                failures: vec![
                    "the program exited with status 1".into(),
                    "TypeError: '<' not supported between instances of 'str' and 'int'".into(),
                ],
                output: String::new(),
            },
        ],
    });
    book
}

/// An error: the program died in turn 1, so turns 2 and 3 were not reached.
fn cancel() -> CaseReport {
    let mut crash = case(BOOKING, "cancel", Status::Error, 312);
    crash.turns.push(TurnReport {
        index: 1,
        input: Some("Cancel booking LX345".into()),
        reply: None,
        output: String::new(),
        tool_calls: Vec::new(),
        executions: Vec::new(),
        assertions: Vec::new(),
        model_calls: 0,
        requests: 0,
        faults: vec![],
        usage: Usage::default(),
        latency_ms: 0,
        missed: false,
        not_reached: None,
    });
    for index in [2, 3] {
        crash.turns.push(TurnReport {
            index,
            input: Some("Yes, cancel it".into()),
            reply: None,
            output: String::new(),
            tool_calls: Vec::new(),
            executions: Vec::new(),
            assertions: vec![AssertionResult {
                passed: false,
                what: "reply: {contains: cancelled}".into(),
                message: "the turn has no reply".into(),
                expected: Some("contains \"cancelled\"".into()),
                actual: None,
                path: None,
                nearest: None,
            }],
            model_calls: 0,
            requests: 0,
            faults: vec![],
            usage: Usage::default(),
            latency_ms: 0,
            missed: false,
            not_reached: Some("the program exited with status 1 during turn 1".into()),
        });
    }
    crash.error = Some(
        "the program exited with status 1 before replying\nstderr (last 3 lines):\n  File \"app.py\", line 42, in cancel\n    booking = BOOKINGS[ref]\n\u{1b}[31mKeyError\u{1b}[0m: 'LX345'"
            .into(),
    );
    crash
}
