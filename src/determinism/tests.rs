//! Tests of the pure parts of the determinism check.

use serde_json::{json, Value};

use super::compare::compare;
use super::findings::{pointer_string, Fix};
use super::sample::{tool_results_at, Sample, ToolResultAt};
use super::volatile::{volatile_spans, VOLATILE_SPANS};
use crate::dialect::Route;
use crate::neutral::ToolCall;

fn no_lookup(_: &str) -> Option<ToolCall> {
    None
}

fn sample(route: &str, turn: usize, body: Value) -> Sample {
    Sample::new(route, Some(turn), body.clone(), body, &no_lookup)
}

fn chat(system: &str, rest: Vec<Value>) -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": system}),
        json!({"role": "user", "content": "Book it"}),
    ];
    messages.extend(rest);
    json!({"model": "gpt-4o-mini", "messages": messages})
}

#[test]
fn a_timestamp_in_the_system_prompt_gets_a_datetime_hole_in_that_message() {
    let run1 = [sample(
        "openai.chat",
        0,
        chat("You are a clerk. Now: 2026-11-30 20:01:33.123456.", vec![]),
    )];
    let run2 = [sample(
        "openai.chat",
        0,
        chat("You are a clerk. Now: 2026-11-30 20:01:34.009871.", vec![]),
    )];
    let f = compare(&run1, &run2);
    assert_eq!(f.differences.len(), 1);
    let d = &f.differences[0];
    assert_eq!(d.pointer(), "/messages/0/content");
    assert_eq!(d.request_label(), "openai.chat call 1 of turn 1");
    assert_eq!(
        f.fixes,
        vec![Fix::Hole {
            name: "datetime".into(),
            regex: VOLATILE_SPANS[1].1.into(),
            within: Some("/messages/0/content".into()),
        }]
    );
    // The suggested hole, applied, makes the two requests equal.
    let rules = crate::matching::normalize::Rules::compile(&crate::cassette::MatchRules {
        ignore: vec![],
        holes: vec![crate::cassette::format::Hole {
            name: "datetime".into(),
            regex: VOLATILE_SPANS[1].1.into(),
            within: Some("/messages/0/content".into()),
        }],
    })
    .unwrap();
    let n = |s: &Sample| crate::matching::normalize::normalize(&s.raw, &rules);
    assert_eq!(n(&run1[0]), n(&run2[0]));
    insta::assert_snapshot!(f.spec_yaml(), @r"
    match:
      holes:
        - {name: datetime, regex: '\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?', in: '/messages/0/content'}
    ");
}

#[test]
fn a_random_id_in_a_tool_result_gets_a_mock_of_that_tool() {
    let turn = |id: &str| {
        chat(
            "You book flights.",
            vec![
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "create_booking", "arguments": "{\"flight\":\"LX345\"}"}}]}),
                json!({"role": "tool", "tool_call_id": "call_1", "content": format!("{{\"booking\":\"{id}\",\"ok\":true}}")}),
            ],
        )
    };
    let run1 = [
        sample("openai.chat", 0, chat("You book flights.", vec![])),
        sample("openai.chat", 0, turn("bk_8f3a2c")),
    ];
    let run2 = [
        sample("openai.chat", 0, chat("You book flights.", vec![])),
        sample("openai.chat", 0, turn("bk_1d9e07")),
    ];
    assert_eq!(
        run1[1].tool_results,
        vec![ToolResultAt {
            pointer: vec!["messages".into(), "3".into(), "content".into()],
            tool: "create_booking".into(),
            nth: 0
        }]
    );
    let f = compare(&run1, &run2);
    assert_eq!(f.differences.len(), 1);
    assert_eq!(f.differences[0].call, 2);
    assert_eq!(
        f.fixes,
        vec![Fix::Mock {
            tool: "create_booking".into(),
            results: vec![json!({"booking": "bk_8f3a2c", "ok": true})],
        }]
    );
    assert_eq!(
        f.fixes[0].one_line(),
        r#"tools.create_booking: {result: {"booking":"bk_8f3a2c","ok":true}}"#
    );
    assert!(
        f.spec_yaml().contains("tools:\n  create_booking:"),
        "{}",
        f.spec_yaml()
    );
}

#[test]
fn tool_results_are_found_in_every_dialect() {
    let anthropic = json!({"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "09:00"}]}]});
    let at = tool_results_at(Route::AnthropicMessages, &anthropic, &no_lookup);
    assert_eq!(
        pointer_string(&at[0].pointer),
        "/messages/2/content/0/content"
    );
    assert_eq!(at[0].tool, "get_time");
    // Responses chains: the call is known from an earlier response only.
    let responses = json!({"previous_response_id": "resp_1", "input": [{"type": "function_call_output", "call_id": "call_9", "output": "x"}]});
    let lookup = |id: &str| {
        (id == "call_9").then(|| ToolCall {
            id: id.into(),
            name: "lookup".into(),
            arguments: json!({}),
        })
    };
    let at = tool_results_at(Route::OpenAiResponses, &responses, &lookup);
    assert_eq!(
        (pointer_string(&at[0].pointer).as_str(), at[0].tool.as_str()),
        ("/input/0/output", "lookup")
    );
    assert!(tool_results_at(Route::Http, &responses, &lookup).is_empty());
}

#[test]
fn a_uuid_gets_a_uuid_hole_and_one_hole_covers_every_place() {
    let body = |id: &str| json!({"model": "m", "messages": [{"role": "user", "content": format!("session {id}: hello")}], "metadata": {"trace": format!("t-{id}")}});
    let run1 = [sample(
        "openai.chat",
        0,
        body("3f2b9c1e-8a4d-4e2f-9b1a-0c5d7e6f8a9b"),
    )];
    let run2 = [sample(
        "openai.chat",
        0,
        body("a1b2c3d4-e5f6-4789-8abc-def012345678"),
    )];
    let f = compare(&run1, &run2);
    assert_eq!(f.differences.len(), 2);
    // Two places of different shapes: one hole, without `in:`.
    assert_eq!(
        f.fixes,
        vec![Fix::Hole {
            name: "uuid".into(),
            regex: VOLATILE_SPANS[0].1.into(),
            within: None
        }]
    );
    assert!(f.differences.iter().all(|d| d.fix == Some(0)));
}

#[test]
fn volatile_spans_pick_the_narrowest_kind_that_explains_the_change() {
    let kind = |a: &str, b: &str| {
        volatile_spans(a, b).map(|ks| ks.iter().map(|k| VOLATILE_SPANS[*k].0).collect::<Vec<_>>())
    };
    assert_eq!(
        kind("today is 2026-11-30.", "today is 2026-12-01."),
        Some(vec!["date"])
    );
    assert_eq!(kind("at 09:00:01", "at 09:00:07"), Some(vec!["time"]));
    assert_eq!(
        kind("ts=1764532893.1", "ts=1764532894.7"),
        Some(vec!["number"])
    );
    assert_eq!(
        kind("req a8f3c2d1e4b5", "req 07b1e9ff23c4"),
        Some(vec!["hex"])
    );
    // A number inside an id is not a number: the id's letters differ too.
    assert_eq!(kind("id ab12x", "id cd34x"), None);
    // Date and time changed in separate places: both holes.
    assert_eq!(
        kind("on 2026-11-30, at 23:59", "on 2026-12-01, at 00:00"),
        Some(vec!["date", "time"])
    );
    assert_eq!(kind("Paris", "Lyon"), None);
}

#[test]
fn other_changes_get_ignore_pointers_with_stars_where_indices_vary() {
    let body = |n: u64, names: [&str; 2]| {
        json!({"seed": n, "messages": [
        {"role": "user", "name": names[0], "content": "a"},
        {"role": "user", "name": names[1], "content": "b"}]})
    };
    let run1 = [sample("openai.chat", 0, body(1, ["x", "y"]))];
    let run2 = [sample("openai.chat", 0, body(2, ["p", "q"]))];
    let f = compare(&run1, &run2);
    assert_eq!(
        f.fixes,
        vec![
            Fix::Ignore {
                pointer: "/messages/*/name".into()
            },
            Fix::Ignore {
                pointer: "/seed".into()
            },
        ]
    );
    insta::assert_snapshot!(f.spec_yaml(), @r"
    match:
      ignore:
        - '/messages/*/name'
        - '/seed'
    ");
}

#[test]
fn requests_one_run_made_and_the_other_did_not_are_differences_without_a_fix() {
    let run1 = [
        sample("openai.chat", 0, json!({"a": 1})),
        sample("openai.chat", 1, json!({"a": 1})),
    ];
    let run2 = [
        sample("openai.chat", 0, json!({"a": 1})),
        sample("http", 0, json!({})),
    ];
    let f = compare(&run1, &run2);
    assert_eq!(f.differences.len(), 2);
    assert!(f
        .differences
        .iter()
        .all(|d| d.fix.is_none() && d.pointer.is_empty()));
    assert!(f.differences[0].second.is_none() && f.differences[1].first.is_none());
    assert!(f.fixes.is_empty());
    assert!(compare(&run1, &run1).is_stable());
}
