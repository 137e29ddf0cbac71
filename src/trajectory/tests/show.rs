//! Snapshots of `show`: a multi-turn recording with tool calls, mocked results, a retried
//! call and a plain-HTTP request.

use serde_json::json;

use super::Rec;
use crate::cassette::Cassette;
use crate::trajectory::show::{self as shown, read};

fn show(cassette: &Cassette) -> String {
    let mut out = Vec::new();
    shown::write_text(cassette, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn json(cassette: &Cassette) -> String {
    let mut out = Vec::new();
    shown::write_json(cassette, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn recording() -> crate::cassette::Cassette {
    let mut r = Rec::weather(1);
    r.turn(0, "What's the weather in Paris and the time in Tokyo?")
        .list_models();
    r.calls(&[
        (
            "get_weather",
            json!({"city": "Paris"}),
            json!({"temp_c": 18, "sky": "sunny"}),
        ),
        ("get_time", json!({"city": "Tokyo"}), json!("09:00")),
    ])
    .rate_limited()
    .reply("It's 18°C and sunny in Paris.\nIn Tokyo it is 09:00.");
    r.turn(1, "And in Lyon?")
        .calls(&[(
            "get_weather",
            json!({"city": "Lyon"}),
            json!({"temp_c": 21, "sky": "cloudy"}),
        )])
        .reply("It's 21°C and cloudy in Lyon.");
    r.cassette()
}

#[test]
fn show_text() {
    insta::assert_snapshot!(show(&recording()));
}

#[test]
fn show_json_form() {
    insta::assert_snapshot!(json(&recording()));
}

/// The JSON written a step at a time is the serde form of the recording read whole, for
/// several turns, for a turn met again after another (0, 1, 0), for one, and for none.
#[test]
fn streamed_json_is_the_whole_reading() {
    let whole = |c: &Cassette| serde_json::to_string_pretty(&read(c)).unwrap() + "\n";
    let mut one = Rec::weather(2);
    one.turn(0, "Hi").reply("Hello.");
    let mut none = recording();
    none.interactions.clear();
    let mut again = recording();
    if let Some(last) = again.interactions.last_mut() {
        last.turn = Some(0);
    }
    assert_eq!(read(&again).turns.len(), 3);
    for c in [recording(), again, one.cassette(), none] {
        assert_eq!(json(&c), whole(&c));
    }
    assert!(json(&recording()).contains("\"turn\": 1"));
}

#[test]
fn each_call_shows_only_what_it_added() {
    let text = show(&recording());
    assert_eq!(
        text.matches("What's the weather in Paris").count(),
        1,
        "{text}"
    );
    assert_eq!(text.matches("system:").count(), 1, "{text}");
    assert_eq!(text.matches("tools:").count(), 1, "{text}");
}

/// Tools from an MCP server: each call says whether the server executed it, and the MCP
/// requests are listed where they happened.
#[test]
fn show_marks_what_mcp_servers_executed() {
    let mut r = Rec::weather(3);
    r.turn(0, "Mail the weather in Paris to ops@example.com")
        .mcp(
            "mail",
            "tools/list",
            json!(null),
            json!({"tools": [{"name": "get_weather"}, {"name": "send_email"}]}),
        );
    r.calls(&[(
        "get_weather",
        json!({"city": "Paris"}),
        json!({"temp_c": 18, "sky": "sunny"}),
    )])
    .mcp(
        "mail",
        "tools/call",
        json!({"name": "get_weather", "arguments": {"city": "Paris"}}),
        json!({"content": [], "structuredContent": {"temp_c": 18}}),
    )
    .calls(&[(
        "send_email",
        json!({"to": "ops@example.com"}),
        json!("sent"),
    )])
    .reply("Mailed.");
    insta::assert_snapshot!(show(&r.cassette()));
}

#[test]
fn show_lists_delegations_to_remote_agents() {
    let mut r = super::Rec::weather(1);
    r.turn(0, "Weather in Paris?").a2a(
        "forecaster",
        "SendMessage",
        json!({"message": {"parts": [{"text": "weather in Paris"}]}}),
        json!({"task": {"id": "t1", "status": {"state": "TASK_STATE_INPUT_REQUIRED",
            "message": {"parts": [{"text": "which unit?"}]}}}}),
    );
    r.a2a(
        "forecaster",
        "GetTask",
        json!({"id": "t1"}),
        json!({"id": "t1"}),
    );
    r.reply("Which unit?");
    let mut out = Vec::new();
    crate::trajectory::show::write_text(&r.cassette(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("  a2a forecaster: \"weather in Paris\" → input-required \"which unit?\""),
        "{text}"
    );
    assert!(text.contains("  a2a forecaster GetTask · "), "{text}");
}
