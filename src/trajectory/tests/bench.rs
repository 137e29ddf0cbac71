//! The timing of a diff of two 500-interaction recordings. Printed, never asserted:
//! `cargo test --release --lib trajectory::tests::bench -- --ignored --nocapture`.

use std::time::Instant;

use serde_json::json;

use super::Rec;
use crate::trajectory::{diff_cassettes, render_markdown, render_text, Asserted};

/// 50 turns of 10 model calls each (9 tool calls and a reply). With `one_conversation`
/// the history grows across all of it, as a long agent session's does (the worst case:
/// each request resends everything before it); otherwise each turn is a conversation of
/// its own. `changed` alters one argument in turn 20 and the system prompt.
fn long_session(salt: u64, changed: bool, one_conversation: bool) -> crate::cassette::Cassette {
    let mut r = Rec::weather(salt);
    if changed {
        r.system.push_str("\nPrefer metric units.");
    }
    for t in 0..50 {
        if !one_conversation {
            r.new_conversation();
        }
        r.turn(
            t,
            &format!("Compare the weather in city {t} with nine others."),
        );
        for k in 0..9 {
            let unit = if changed && t == 20 && k == 4 {
                "fahrenheit"
            } else {
                "celsius"
            };
            r.calls(&[(
                "get_weather",
                json!({"city": format!("city-{t}-{k}"), "unit": unit, "detail": {"hourly": true, "days": k}}),
                json!({"temp_c": 10 + k, "sky": "cloudy", "hourly": [1, 2, 3]}),
            )]);
        }
        r.reply(&format!("City {t} is the warmest of the ten."));
    }
    r.cassette()
}

#[test]
#[ignore = "a timing, run by hand with --release --nocapture"]
fn diff_of_two_500_interaction_recordings() {
    for one_conversation in [false, true] {
        let (old, new) = (
            long_session(1, false, one_conversation),
            long_session(2, true, one_conversation),
        );
        assert_eq!(old.interactions.len(), 500);
        let file = serde_json::to_vec_pretty(&new).expect("serializes");
        if let Some(dir) = std::env::var_os("AGENTPROXY_BENCH_DIR") {
            let dir = std::path::Path::new(&dir);
            let name = if one_conversation {
                "one-conversation"
            } else {
                "fifty-conversations"
            };
            crate::cassette::store::save(&dir.join(format!("{name}-old.json")), &old)
                .expect("saved");
            crate::cassette::store::save(&dir.join(format!("{name}-new.json")), &new)
                .expect("saved");
        }
        let started = Instant::now();
        let _ =
            crate::cassette::store::parse(std::path::Path::new("new.json"), &file).expect("parses");
        let load = started.elapsed();
        let all = Asserted::everything();
        let _warm = diff_cassettes(&old, &new, &all);
        let runs = 5;
        let started = Instant::now();
        let mut d = None;
        for _ in 0..runs {
            d = Some(diff_cassettes(&old, &new, &all));
        }
        let per_run = started.elapsed() / runs;
        let d = d.expect("ran");
        let text = render_text(&d);
        let _ = render_markdown(&d);
        println!(
            "{}: two cassettes of 500 interactions, {:.1} MB each: {per_run:.1?} per diff \
             (loading one file: {load:.1?})",
            if one_conversation {
                "one conversation"
            } else {
                "50 conversations"
            },
            file.len() as f64 / 1e6,
        );
        assert_eq!((d.asserted, d.incidental), (1, 1), "{text}");
    }
}
