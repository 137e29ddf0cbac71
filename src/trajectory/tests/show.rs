//! Snapshots of `show`: a multi-turn recording with tool calls, mocked results, a retried
//! call and a plain-HTTP request.

use serde_json::json;

use super::Rec;
use crate::trajectory::{show, show_json};

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
    insta::assert_snapshot!(show_json(&recording()));
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
