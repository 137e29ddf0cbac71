//! Pairing the model's tool calls with the executions at the MCP boundary.

use serde_json::json;

use super::Rec;
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
