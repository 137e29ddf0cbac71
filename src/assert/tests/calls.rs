//! Call sequence checks: the ordering modes (including where greedy matching would be wrong),
//! strict/allow, never, count, and the nearest-candidate diagnostics.

use super::json;
use crate::assert::{
    calls::{Failure, FailureKind},
    check_calls, CallExpectation, CallsSpec, Count, Matcher, ObservedCall, Order,
};

fn call(name: &str, args: &str) -> ObservedCall {
    ObservedCall {
        name: name.to_owned(),
        arguments: json(args),
        schema: None,
    }
}

fn expect(name: &str, args: Option<&str>) -> CallExpectation {
    CallExpectation {
        name: name.to_owned(),
        args: args.map(|a| Matcher::compile(&json(a)).expect("test matcher compiles")),
    }
}

fn spec(calls: Vec<CallExpectation>, order: Order) -> CallsSpec {
    CallsSpec {
        calls,
        order,
        ..CallsSpec::default()
    }
}

fn kinds(failures: &[Failure]) -> Vec<FailureKind> {
    failures.iter().map(|f| f.kind).collect()
}

#[test]
fn subsequence_with_repeated_tools_skips_noise() {
    let spec = spec(
        vec![
            expect("search", Some(r#"{"q": "a"}"#)),
            expect("search", None),
            expect("book", None),
        ],
        Order::Subsequence,
    );
    let observed = [
        call("search", r#"{"q": "b"}"#),
        call("search", r#"{"q": "a"}"#),
        call("log", "{}"),
        call("search", r#"{"q": "c"}"#),
        call("book", r#"{"id": 1}"#),
    ];
    assert_eq!(check_calls(&spec, &observed), []);
}

#[test]
fn subsequence_needs_one_call_per_expectation() {
    let spec = spec(
        vec![expect("search", None), expect("search", None)],
        Order::Subsequence,
    );
    let failures = check_calls(&spec, &[call("search", r#"{"q": "a"}"#)]);
    assert_eq!(kinds(&failures), [FailureKind::Missing]);
    let nearest = failures[0].nearest.as_deref().unwrap_or_default();
    assert!(nearest.contains("taken by expectation #1"), "{nearest}");
}

#[test]
fn subsequence_reports_a_call_made_too_early_as_an_order_failure() {
    let spec = spec(
        vec![expect("plan", None), expect("search", None)],
        Order::Subsequence,
    );
    let failures = check_calls(&spec, &[call("search", "{}"), call("plan", "{}")]);
    assert_eq!(kinds(&failures), [FailureKind::Order]);
    assert!(
        failures[0].message.contains("was call #1, before call #2"),
        "{}",
        failures[0]
    );
}

#[test]
fn unordered_uses_a_maximum_matching_where_greedy_fails() {
    // Greedy would give the Paris call to `exists`, leaving nothing for `Paris`.
    let spec = spec(
        vec![
            expect("w", Some(r#"{"city": {"exists": true}}"#)),
            expect("w", Some(r#"{"city": "Paris"}"#)),
        ],
        Order::Unordered,
    );
    let observed = [
        call("w", r#"{"city": "Paris"}"#),
        call("w", r#"{"city": "London"}"#),
    ];
    assert_eq!(check_calls(&spec, &observed), []);
    // Order does not matter, but each expectation needs its own call.
    let reversed = [observed[1].clone(), observed[0].clone()];
    assert_eq!(check_calls(&spec, &reversed), []);
    let failures = check_calls(&spec, &observed[1..]);
    assert_eq!(kinds(&failures), [FailureKind::Missing]);
    assert_eq!(failures[0].path.as_deref(), Some("city"));
}

#[test]
fn exact_is_one_to_one_in_order_except_allowed_names() {
    let mut spec = spec(
        vec![expect("search", None), expect("book", None)],
        Order::Exact,
    );
    assert_eq!(
        check_calls(&spec, &[call("search", "{}"), call("book", "{}")]),
        []
    );

    let extra = [
        call("search", "{}"),
        call("search", "{}"),
        call("book", "{}"),
    ];
    let failures = check_calls(&spec, &extra);
    assert_eq!(kinds(&failures), [FailureKind::Unexpected]);
    assert!(
        failures[0].message.contains("order: exact"),
        "{}",
        failures[0]
    );

    let swapped = [call("book", "{}"), call("search", "{}")];
    assert_eq!(kinds(&check_calls(&spec, &swapped)), [FailureKind::Order]);

    spec.allow = vec!["log".to_owned()];
    let noisy = [
        call("log", "{}"),
        call("search", "{}"),
        call("log", "{}"),
        call("book", "{}"),
    ];
    assert_eq!(check_calls(&spec, &noisy), []);
}

#[test]
fn strict_fails_unlisted_calls_unless_allowed() {
    let mut spec = spec(vec![expect("search", None)], Order::Subsequence);
    spec.strict = true;
    let observed = [call("log", "{}"), call("search", "{}"), call("book", "{}")];
    let failures = check_calls(&spec, &observed);
    assert_eq!(
        kinds(&failures),
        [FailureKind::Unexpected, FailureKind::Unexpected]
    );

    spec.allow = vec!["log".to_owned()];
    let failures = check_calls(&spec, &observed);
    assert_eq!(kinds(&failures), [FailureKind::Unexpected]);
    assert!(
        failures[0].actual.starts_with("call #3 book"),
        "{}",
        failures[0]
    );

    // A second call to a listed tool is still unlisted: strict counts calls, not names.
    let failures = check_calls(&spec, &[call("search", "{}"), call("search", "{}")]);
    assert_eq!(kinds(&failures), [FailureKind::Unexpected]);
}

#[test]
fn never_forbids_names_and_argument_shapes() {
    let spec = CallsSpec {
        never: vec![
            expect("delete_account", None),
            expect("transfer", Some(r#"{"amount": {"gt": 100}}"#)),
        ],
        ..CallsSpec::default()
    };
    let observed = [
        call("transfer", r#"{"amount": 50}"#),
        call("transfer", r#"{"amount": 500}"#),
        call("delete_account", "{}"),
    ];
    let failures = check_calls(&spec, &observed);
    assert_eq!(
        kinds(&failures),
        [FailureKind::Forbidden, FailureKind::Forbidden]
    );
    assert!(
        failures[0].actual.starts_with("call #2 transfer"),
        "{}",
        failures[0]
    );
    assert_eq!(failures[0].expected, "no call to transfer {amount: > 100}");
}

#[test]
fn count_bounds_the_total() {
    let observed = [call("a", "{}"), call("b", "{}")];
    for (count, ok) in [
        (Count::Exactly(2), true),
        (Count::Exactly(1), false),
        (
            Count::Range {
                min: Some(1),
                max: Some(2),
            },
            true,
        ),
        (
            Count::Range {
                min: Some(3),
                max: None,
            },
            false,
        ),
        (
            Count::Range {
                min: None,
                max: Some(1),
            },
            false,
        ),
        (
            Count::Range {
                min: None,
                max: None,
            },
            true,
        ),
    ] {
        let spec = CallsSpec {
            count: Some(count),
            ..CallsSpec::default()
        };
        assert_eq!(check_calls(&spec, &observed).is_empty(), ok, "{count}");
    }
}

#[test]
fn missing_call_names_the_nearest_candidate_and_the_failing_path() {
    let spec = spec(
        vec![expect(
            "get_weather",
            Some(r#"{"city": "Paris", "units": "c"}"#),
        )],
        Order::Subsequence,
    );
    let observed = [
        call("get_weather", r#"{"city": "London", "units": "f"}"#),
        call("get_weather", r#"{"city": "London", "units": "c"}"#),
    ];
    let failures = check_calls(&spec, &observed);
    let f = &failures[0];
    assert_eq!(f.kind, FailureKind::Missing);
    assert_eq!(
        (f.path.as_deref(), f.expected.as_str(), f.actual.as_str()),
        (Some("city"), r#""Paris""#, r#""London""#)
    );
    // Call #2 fails on one key, call #1 on two: #2 is nearer.
    assert!(
        f.nearest
            .as_deref()
            .is_some_and(|n| n.starts_with("call #2")),
        "{f}"
    );
}

#[test]
fn missing_tool_lists_what_was_called() {
    let spec = spec(vec![expect("get_weather", None)], Order::Subsequence);
    let failures = check_calls(&spec, &[call("search", "{}"), call("book", "{}")]);
    assert_eq!(failures[0].actual, "calls made: search, book");
    assert_eq!(failures[0].nearest, None);
    assert_eq!(check_calls(&spec, &[])[0].actual, "no tool calls were made");
}

#[test]
fn schema_valid_uses_the_observed_calls_schema() {
    let spec = spec(
        vec![expect("w", Some(r#"{"schema_valid": true}"#))],
        Order::Subsequence,
    );
    let schema = json(r#"{"type": "object", "required": ["city"]}"#);
    let valid = ObservedCall {
        schema: Some(schema.clone()),
        ..call("w", r#"{"city": "Paris"}"#)
    };
    let invalid = ObservedCall {
        schema: Some(schema),
        ..call("w", "{}")
    };
    assert_eq!(check_calls(&spec, &[valid]), []);
    assert_eq!(
        kinds(&check_calls(&spec, &[invalid])),
        [FailureKind::Missing]
    );
}

/// Cross-checks the ordering modes against brute force over every small case: expectations
/// from {x{v:1}, x, y} (up to 3) against calls from {x{v:1}, x{v:2}, y} (up to 4).
#[test]
fn ordering_modes_agree_with_brute_force() {
    let expectations = [
        expect("x", Some(r#"{"v": 1}"#)),
        expect("x", None),
        expect("y", None),
    ];
    let calls = [
        call("x", r#"{"v": 1}"#),
        call("x", r#"{"v": 2}"#),
        call("y", "{}"),
    ];
    // fits[e][c]: expectation kind e accepts call kind c.
    let fits = [
        [true, false, false],
        [true, true, false],
        [false, false, true],
    ];
    for exp_seq in sequences(3, 3) {
        for call_seq in sequences(3, 4) {
            let observed: Vec<ObservedCall> = call_seq.iter().map(|&c| calls[c].clone()).collect();
            let ok = |e: &[usize], assignment: &[usize]| {
                e.iter()
                    .zip(assignment)
                    .all(|(&e, &j)| fits[e][call_seq[j]])
            };
            let injections = injections(exp_seq.len(), call_seq.len());
            let subsequence = injections
                .iter()
                .any(|a| a.windows(2).all(|w| w[0] < w[1]) && ok(&exp_seq, a));
            let unordered = injections.iter().any(|a| ok(&exp_seq, a));
            let exact = exp_seq.len() == call_seq.len()
                && ok(&exp_seq, &(0..call_seq.len()).collect::<Vec<_>>());
            // Strict leaves no call unmatched: a subsequence becomes exact, and an unordered
            // match a one-to-one pairing of all the calls.
            let same_len = exp_seq.len() == call_seq.len();
            for (order, strict, want) in [
                (Order::Subsequence, false, subsequence),
                (Order::Subsequence, true, exact),
                (Order::Unordered, false, unordered),
                (Order::Unordered, true, unordered && same_len),
                (Order::Exact, false, exact),
            ] {
                let spec = CallsSpec {
                    strict,
                    ..spec(
                        exp_seq.iter().map(|&e| expectations[e].clone()).collect(),
                        order,
                    )
                };
                let failures = check_calls(&spec, &observed);
                assert_eq!(
                    failures.is_empty(),
                    want,
                    "{order:?} strict={strict} {exp_seq:?} vs {call_seq:?}: {failures:#?}"
                );
            }
        }
    }
}

/// Every sequence over `0..alphabet` of length up to `max_len`.
fn sequences(alphabet: usize, max_len: usize) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    let mut frontier = vec![vec![]];
    for _ in 0..max_len {
        frontier = frontier
            .iter()
            .flat_map(|s: &Vec<usize>| (0..alphabet).map(move |x| [s.as_slice(), &[x]].concat()))
            .collect();
        all.extend(frontier.iter().cloned());
    }
    all
}

/// Every injective map from `k` expectations to `n` calls, as the call index per expectation.
fn injections(k: usize, n: usize) -> Vec<Vec<usize>> {
    sequences(n, k)
        .into_iter()
        .filter(|s| s.len() == k && s.iter().enumerate().all(|(i, x)| !s[..i].contains(x)))
        .collect()
}

/// The wording users read for each kind of failure.
#[test]
fn failure_messages() {
    let spec = CallsSpec {
        calls: vec![
            expect(
                "get_weather",
                Some(r#"{"city": {"contains": "Paris"}, "units": "c"}"#),
            ),
            expect("convert", None),
            expect("book", None),
            expect("search", None),
        ],
        order: Order::Subsequence,
        strict: true,
        allow: vec!["log".to_owned()],
        never: vec![expect("delete_account", None)],
        count: Some(Count::Range {
            min: None,
            max: Some(4),
        }),
        executions: false,
    };
    let observed = [
        call("search", r#"{"q": "hotels"}"#),
        call("get_weather", r#"{"city": "London", "units": "f"}"#),
        call("log", r#"{"msg": "hi"}"#),
        call("book", r#"{"id": 7}"#),
        call("delete_account", r#"{"force": true}"#),
    ];
    let text: Vec<String> = check_calls(&spec, &observed)
        .iter()
        .map(ToString::to_string)
        .collect();
    insta::assert_snapshot!(text.join("\n\n"));
}

/// Over executions at the MCP boundary, the same checks speak of executions.
#[test]
fn execution_failure_messages() {
    let spec = CallsSpec {
        calls: vec![expect("get_weather", None), expect("send_email", None)],
        never: vec![expect("delete_account", None)],
        executions: true,
        ..CallsSpec::default()
    };
    let observed = [
        call("get_weather", r#"{"city": "Oslo"}"#),
        call("delete_account", r#"{}"#),
    ];
    let text: Vec<String> = check_calls(&spec, &observed)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        text,
        [
            "missing execution: send_email (expectation #2): `send_email` was never executed\n  expected: send_email\n  actual:   executed: get_weather, delete_account",
            "forbidden execution #2 `delete_account` (not executed: delete_account)\n  expected: no execution of delete_account\n  actual:   execution #2 delete_account {}",
        ]
    );
}
