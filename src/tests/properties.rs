//! Property tests of the parsers that read what others wrote: the SSE parser, the cassette
//! loader, the spec loader, the request normaliser and the stream assemblers. Arbitrary
//! input never panics; where a parser has an invariant (SSE chunk boundaries, canonical
//! keys), it holds.

use std::path::Path;

use proptest::prelude::*;
use serde_json::Value;

use crate::cassette::{store, Body, MatchRules};
use crate::dialect::Route;
use crate::matching::{normalize::Rules, request_key};
use crate::sse::{SseEvent, SseParser};

/// Arbitrary JSON, a few levels deep.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z${}_ ]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// SSE-looking bytes: field lines, blank lines, CR/LF mixes and noise.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        "data: [ -~]{0,20}",
        "event: [a-z_.]{1,12}",
        "id: [0-9]{1,4}",
        ": [ -~]{0,10}",
        "retry: [0-9]{1,4}",
        "[ -~]{0,12}",
    ];
    let ending = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
    prop::collection::vec((line, ending), 0..24).prop_map(|ls| {
        ls.into_iter()
            .flat_map(|(l, e)| format!("{l}{e}").into_bytes())
            .collect()
    })
}

fn parse_in_chunks(bytes: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    let mut at = 0;
    for cut in cuts.into_iter().chain([bytes.len()]) {
        events.extend(parser.push(&bytes[at..cut]));
        at = cut;
    }
    events.extend(parser.finish());
    events
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sse_events_do_not_depend_on_where_the_chunks_were_cut(
        bytes in sse_bytes(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        prop_assert_eq!(parse_in_chunks(&bytes, &cuts), parse_in_chunks(&bytes, &[]));
    }

    #[test]
    fn sse_parser_takes_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut parser = SseParser::new();
        let _ = parser.push(&bytes);
        let _ = parser.finish();
    }

    #[test]
    fn cassette_loader_takes_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = store::parse(Path::new("c.json"), &bytes);
    }

    #[test]
    fn cassette_loader_takes_any_interaction_shape(response in json(), request in json()) {
        let text = serde_json::json!({
            "format": "1.2", "recorder": "p", "recorded_at": "2026-01-01T00:00:00Z",
            "upstreams": {"openai": "http://127.0.0.1:1", "anthropic": "http://127.0.0.1:2"},
            "interactions": [{"route": "openai.chat", "key": "k", "latency_ms": 1,
                "request": request, "response": response}]
        });
        let _ = store::parse(Path::new("c.json"), text.to_string().as_bytes());
    }

    #[test]
    fn spec_loader_takes_any_text(text in "[ -~\n]{0,300}") {
        let _ = crate::spec::parse(&text, Path::new("s.yaml"));
    }

    #[test]
    fn spec_loader_takes_any_yaml_shaped_text(
        lines in prop::collection::vec(
            ("( {0,6})", "(app|cases|name|input|turns|expect|calls|tools|command|match|- )", "(: |:|)", "[ -~]{0,12}"),
            0..16,
        ),
    ) {
        let text: String = lines
            .into_iter()
            .map(|(indent, key, sep, value)| format!("{indent}{key}{sep}{value}\n"))
            .collect();
        let _ = crate::spec::parse(&text, Path::new("s.yaml"));
    }

    #[test]
    fn request_keys_are_canonical_and_never_panic(body in json()) {
        let rules = Rules::compile(&MatchRules {
            ignore: vec!["/user".into(), "/messages/*/name".into()],
            holes: vec![],
        })
        .expect("static rules");
        let b = Body::Json(body.clone().into());
        let key = request_key("openai.chat", "POST", "/v1/chat/completions", Some(&b), &rules);
        // The same value spelled another way (keys reordered, other whitespace) keys alike.
        let respelled: Value = serde_json::from_str(&serde_json::to_string_pretty(&body).unwrap()).unwrap();
        let b2 = Body::Json(respelled.into());
        prop_assert_eq!(key, request_key("openai.chat", "POST", "/v1/chat/completions", Some(&b2), &rules));
    }

    #[test]
    fn stream_assemblers_take_any_events(
        datas in prop::collection::vec(prop_oneof![json().prop_map(|v| v.to_string()), "[ -~]{0,16}"], 0..12),
    ) {
        let events: Vec<SseEvent> = datas
            .into_iter()
            .map(|data| SseEvent { event: None, id: None, data })
            .collect();
        for route in ["openai.chat", "openai.responses", "anthropic.messages", "gemini.generate"] {
            let _ = Route::from_name(route).assemble(&events);
        }
    }
}
