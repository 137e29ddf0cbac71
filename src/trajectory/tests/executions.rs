//! Pairing the model's tool calls with the executions at the MCP boundary.

use serde_json::{json, Value};

use super::Rec;
use crate::cassette::Body;
use crate::neutral::ToolCall;
use crate::trajectory::executions::{Executions, Fate};

fn call_of(rec: &Rec, model_call: usize) -> ToolCall {
    let calls: Vec<ToolCall> = rec
        .interactions
        .iter()
        .filter_map(|it| it.model_call())
        .flat_map(|c| c.tool_calls)
        .collect();
    calls[model_call].clone()
}

#[test]
fn each_call_is_paired_with_the_execution_after_it() {
    let mut r = Rec::travel(1);
    r.turn(0, "Book me a flight to Zürich").mcp(
        "travel",
        "tools/list",
        json!(null),
        json!({"tools": [{"name": "search_flights"}, {"name": "create_booking"}]}),
    );
    let asked = json!({"to": "ZRH", "date": "2025-06-02"});
    r.calls(&[("search_flights", asked.clone(), json!([]))]);
    // The program changed an argument before executing it.
    let ran = json!({"to": "ZRH", "date": "2025-06-03"});
    r.mcp(
        "travel",
        "tools/call",
        json!({"name": "search_flights", "arguments": ran}),
        json!({"content": []}),
    );
    r.calls(&[(
        "check_visa",
        json!({"country": "CH"}),
        json!({"required": false}),
    )]);
    r.calls(&[(
        "create_booking",
        json!({"flight": "LX345"}),
        json!("booked"),
    )]);
    // Executed after the check_visa call, with other arguments: still the model's call
    // to create_booking that it answers.
    r.mcp(
        "travel",
        "tools/call",
        json!({"name": "create_booking", "arguments": {"flight": "LX999"}}),
        json!({"content": [], "isError": true}),
    );
    r.reply("Booked.");
    let ex = Executions::pair(&r.interactions);
    assert_eq!(ex.all.len(), 2);
    match ex.fate(&call_of(&r, 0)) {
        Fate::Executed(e) => {
            assert_eq!((e.server.as_str(), &e.arguments), ("travel", &ran));
            assert!(!e.is_error);
        }
        other => panic!("{other:?}"),
    }
    // A function of the program: no MCP server listed it.
    assert_eq!(ex.fate(&call_of(&r, 1)), Fate::Function);
    match ex.fate(&call_of(&r, 2)) {
        Fate::Executed(e) => assert!(e.is_error),
        other => panic!("{other:?}"),
    }
    let names: Vec<&str> = ex.in_turn(0).map(|e| e.tool.as_str()).collect();
    assert_eq!(names, ["search_flights", "create_booking"]);
    assert_eq!(ex.in_turn(1).count(), 0);
}

#[test]
fn a_listed_tool_nothing_executed_is_not_executed() {
    let mut r = Rec::travel(2);
    r.turn(0, "Book it").mcp(
        "travel",
        "tools/list",
        json!(null),
        json!({"tools": [{"name": "create_booking"}]}),
    );
    r.calls(&[(
        "create_booking",
        json!({"flight": "LX345"}),
        json!("mocked"),
    )]);
    r.reply("Booked.");
    let ex = Executions::pair(&r.interactions);
    assert_eq!(ex.fate(&call_of(&r, 0)), Fate::NotExecuted);
    assert!(ex.all.is_empty());
}

#[test]
fn an_execution_answers_the_call_of_its_turn_with_its_arguments_first() {
    let mut r = Rec::weather(3);
    r.turn(0, "Weather in Paris and Rome?").mcp(
        "weather",
        "tools/list",
        json!(null),
        json!({"tools": [{"name": "get_weather"}]}),
    );
    r.calls(&[
        ("get_weather", json!({"city": "Paris"}), json!("sunny")),
        ("get_weather", json!({"city": "Rome"}), json!("rain")),
    ]);
    // Rome ran first, then Paris: each answers the call with its own arguments.
    for city in ["Rome", "Paris"] {
        r.mcp(
            "weather",
            "tools/call",
            json!({"name": "get_weather", "arguments": {"city": city}}),
            json!({"content": [{"type": "text", "text": city}]}),
        );
    }
    r.reply("Sunny in Paris, rain in Rome.");
    r.turn(1, "And Oslo?");
    r.calls(&[("get_weather", json!({"city": "Oslo"}), json!("snow"))]);
    // Executed with other arguments than asked: still the call of this turn, not a
    // call of the turn before.
    r.mcp(
        "weather",
        "tools/call",
        json!({"name": "get_weather", "arguments": {"city": "Oslo, NO"}}),
        json!({"content": []}),
    );
    r.reply("Snow.");
    let ex = Executions::pair(&r.interactions);
    for (n, city) in [(0, "Paris"), (1, "Rome"), (2, "Oslo, NO")] {
        match ex.fate(&call_of(&r, n)) {
            Fate::Executed(e) => assert_eq!(e.arguments, json!({"city": city})),
            other => panic!("call {n}: {other:?}"),
        }
    }
}

#[test]
fn calls_without_ids_are_told_apart_by_their_arguments() {
    let mut r = Rec::weather(4);
    r.turn(0, "Weather in Paris and Rome?").mcp(
        "weather",
        "tools/list",
        json!(null),
        json!({"tools": [{"name": "get_weather"}]}),
    );
    r.calls(&[
        ("get_weather", json!({"city": "Paris"}), json!("sunny")),
        ("get_weather", json!({"city": "Rome"}), json!("mocked")),
    ]);
    r.mcp(
        "weather",
        "tools/call",
        json!({"name": "get_weather", "arguments": {"city": "Paris"}}),
        json!({"content": []}),
    );
    r.reply("Sunny.");
    // The model gave its calls no ids, as Gemini may.
    for it in &mut r.interactions {
        if let Some(Body::Json(body)) = &it.response.body {
            let mut v: Value = body.get().clone();
            if let Some(calls) = v.pointer_mut("/choices/0/message/tool_calls") {
                for c in calls.as_array_mut().unwrap() {
                    c["id"] = json!("");
                }
            }
            it.response.body = Some(Body::Json(v.into()));
        }
    }
    let ex = Executions::pair(&r.interactions);
    assert_eq!(call_of(&r, 1).id, "");
    assert!(matches!(ex.fate(&call_of(&r, 0)), Fate::Executed(_)));
    assert_eq!(ex.fate(&call_of(&r, 1)), Fate::NotExecuted);
}

#[test]
fn a_call_the_server_refused_was_not_executed() {
    let mut r = Rec::weather(5);
    r.turn(0, "Weather in Paris?").mcp(
        "weather",
        "tools/list",
        json!(null),
        json!({"tools": [{"name": "get_weather"}]}),
    );
    r.calls(&[("get_weather", json!({"city": "Paris"}), json!("error"))]);
    r.mcp(
        "weather",
        "tools/call",
        json!({"name": "get_weather", "arguments": {"city": "Paris"}}),
        json!(null),
    );
    let Some(Body::Json(body)) = &mut r.interactions.last_mut().unwrap().response.body else {
        panic!("no body");
    };
    *body = json!({"error": {"code": -32602, "message": "Invalid arguments"}}).into();
    r.reply("Sorry.");
    let ex = Executions::pair(&r.interactions);
    assert!(ex.all.is_empty());
    assert_eq!(ex.fate(&call_of(&r, 0)), Fate::NotExecuted);
}
