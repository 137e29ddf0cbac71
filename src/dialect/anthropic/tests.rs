use super::*;
use crate::neutral::Usage;
use crate::sse::{encode, SseParser};

fn parse_all(wire: &[u8]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    // Byte by byte, so multi-byte characters are split between network reads too.
    let mut events: Vec<SseEvent> = wire.chunks(1).flat_map(|b| parser.push(b)).collect();
    events.extend(parser.finish());
    events
}

/// A stream as Anthropic sends it: `event:` name, then the data with the same `type`.
fn wire(events: &[Value]) -> String {
    events
        .iter()
        .map(|data| {
            format!(
                "event: {}\ndata: {data}\n\n",
                data["type"].as_str().expect("a type")
            )
        })
        .collect()
}

fn input_json(index: u64, partial: &str) -> Value {
    json!({"type": "content_block_delta", "index": index,
           "delta": {"type": "input_json_delta", "partial_json": partial}})
}

fn text_delta(index: u64, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})
}

#[test]
fn assembles_text_and_tool_use_split_at_awkward_points() {
    let mut events = vec![
        json!({"type": "message_start", "message": {
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 472, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 2048,
                      "output_tokens": 2, "service_tier": "standard"}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
    ];
    for piece in ["Let me check ", "Zü", "rich and Genève", "."] {
        events.push(text_delta(0, piece));
    }
    events.push(json!({"type": "content_block_stop", "index": 0}));
    events.push(json!({"type": "content_block_start", "index": 1, "content_block":
        {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather", "input": {}}}));
    // The API opens with an empty fragment, then splits mid-key, between the characters
    // of "Zürich" and inside a `\u00fc` escape.
    for piece in [
        "",
        r#"{"loc"#,
        r#"ation": "Z"#,
        "ü",
        r#"rich", "al"#,
        r#"t": "Z\u00"#,
        r#"fcrich"}"#,
    ] {
        events.push(input_json(1, piece));
    }
    events.push(json!({"type": "content_block_stop", "index": 1}));
    // A call without arguments: one empty fragment.
    events.push(
        json!({"type": "content_block_start", "index": 2, "content_block":
        {"type": "tool_use", "id": "toolu_02", "name": "get_time", "input": {}}}),
    );
    events.push(input_json(2, ""));
    events.push(json!({"type": "content_block_stop", "index": 2}));
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
        "usage": {"input_tokens": 472, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 2048,
                  "output_tokens": 89, "server_tool_use": null}}));
    events.push(json!({"type": "message_stop"}));

    let events = parse_all(wire(&events).as_bytes());
    assert_eq!(events.len(), 22);
    assert_eq!(
        assemble(&events).expect("stream assembles"),
        json!({
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [
                {"type": "text", "text": "Let me check Zürich and Genève."},
                {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather",
                 "input": {"location": "Zürich", "alt": "Zürich"}},
                {"type": "tool_use", "id": "toolu_02", "name": "get_time", "input": {}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": null,
            "usage": {"input_tokens": 472, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 2048,
                      "output_tokens": 89, "service_tier": "standard"},
        })
    );
}

#[test]
fn assembles_thinking_citations_and_an_old_style_message_delta() {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-opus-4-1", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Zü"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "rich?"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}}),
        text_delta(2, "18 °C"),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "citations_delta",
            "citation": {"type": "char_location", "cited_text": "18 °C", "document_index": 0}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "some_future_delta", "x": 1}}),
        json!({"type": "content_block_stop", "index": 2}),
        // Older API versions send only the output count here.
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 30}}),
        json!({"type": "message_stop"}),
    ];
    let events = parse_all(wire(&events).as_bytes());
    assert_eq!(
        assemble(&events).expect("assembles"),
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-1",
            "content": [
                {"type": "thinking", "thinking": "Zürich?", "signature": "EqQBCgIYAhIM"},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy"},
                {"type": "text", "text": "18 °C", "citations": [
                    {"type": "char_location", "cited_text": "18 °C", "document_index": 0}]},
            ],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 30},
        })
    );
}

fn assemble_err(events: &[Value]) -> String {
    let events: Vec<SseEvent> = events
        .iter()
        .map(|d| SseEvent {
            event: None,
            id: None,
            data: d.to_string(),
        })
        .collect();
    assemble(&events).expect_err("must fail").to_string()
}

#[test]
fn errors_say_which_event_and_what() {
    let start = json!({"type": "message_start", "message": {"id": "msg_1", "content": []}});
    let stop = json!({"type": "message_stop"});
    let raw = |data: &str| SseEvent {
        event: None,
        id: None,
        data: data.to_owned(),
    };
    assert_eq!(
        assemble(&[raw(&start.to_string()), raw("{\"type\": tru")])
            .expect_err("bad")
            .to_string(),
        "failed to parse stream event 1 as JSON"
    );
    assert_eq!(
        assemble_err(&[start.clone(), json!("text")]),
        "failed to read stream event 1: expected a JSON object"
    );
    assert_eq!(
        assemble_err(&[
            start.clone(),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        ]),
        "failed to assemble the stream: event 1 reports an upstream error: Overloaded"
    );
    assert_eq!(
        assemble_err(&[
            start.clone(),
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
            text_delta(0, "Zü")
        ]),
        "failed to assemble the stream: it ended after 3 events without `message_stop` \
         (last event: `content_block_delta`)"
    );
    assert_eq!(
        assemble_err(&[json!({"type": "ping"}), stop.clone()]),
        "failed to assemble the stream: it has no `message_start` event"
    );
    assert_eq!(
        assemble_err(&[start.clone(), text_delta(3, "x"), stop.clone()]),
        "failed to read stream event 1: a delta arrived for a content block that was not started"
    );
    assert_eq!(
        assemble_err(&[
            start.clone(),
            json!({"type": "content_block_start", "content_block": {}}),
            stop.clone()
        ]),
        "failed to read stream event 1: a content block event has no integer `index`"
    );
    assert_eq!(
        assemble_err(&[
            start.clone(),
            json!({"type": "message_start", "message": null})
        ]),
        "failed to read stream event 1: `message_start` has no `message` object"
    );
    let tool = json!({"type": "content_block_start", "index": 4,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}});
    let err = assemble(
        &[
            start.clone(),
            tool,
            input_json(4, r#"{"city": "Zü"#),
            stop.clone(),
        ]
        .iter()
        .map(|d| raw(&d.to_string()))
        .collect::<Vec<_>>(),
    )
    .expect_err("cut JSON");
    assert_eq!(
        err.to_string(),
        "failed to assemble the stream: the input of content block 4 is not JSON"
    );
    assert!(std::error::Error::source(&err).is_some());
    assert_eq!(
        assemble(&[]).expect_err("empty").to_string(),
        "failed to assemble the stream: it has no events"
    );
    // A named event without data (a bare keep-alive) is skipped.
    let bare = SseEvent {
        event: Some("ping".into()),
        id: None,
        data: String::new(),
    };
    assert_eq!(
        assemble(&[bare]).expect_err("empty").to_string(),
        "failed to assemble the stream: it has no events"
    );
}

#[test]
fn events_missing_their_fields_are_errors_not_panics() {
    let start = json!({"type": "message_start", "message": {"id": "msg_1", "content": []}});
    let block = json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}});
    let stop = json!({"type": "message_stop"});
    assert_eq!(
        assemble_err(&[json!({"type": "error"})]),
        "failed to assemble the stream: event 0 reports an upstream error: {\"type\":\"error\"}"
    );
    assert_eq!(
        assemble_err(&[json!({"type": "message_start"})]),
        "failed to read stream event 0: `message_start` has no `message` object"
    );
    assert_eq!(
        assemble_err(&[
            start.clone(),
            json!({"type": "content_block_start", "index": 0}),
            stop.clone()
        ]),
        "failed to read stream event 1: `content_block_start` has no `content_block` object"
    );
    // A delta without `delta`, and a message_delta without either part, change nothing.
    let events: Vec<SseEvent> = [
        start,
        block,
        json!({"type": "content_block_delta", "index": 0}),
        json!({"type": "message_delta"}),
        stop,
    ]
    .iter()
    .map(|d| SseEvent {
        event: None,
        id: None,
        data: d.to_string(),
    })
    .collect();
    assert_eq!(
        assemble(&events).expect("assembles"),
        json!({"id": "msg_1", "content": [{"type": "text", "text": ""}]})
    );
}

fn text_message() -> Value {
    json!({
        "id": "msg_01Text", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": "Zürich: 18 °C, sunny.\nGenève: 21 °C."}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 25, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                  "output_tokens": 17, "service_tier": "standard"},
    })
}

fn tool_message() -> Value {
    json!({
        "id": "msg_01Tool", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": [
            {"type": "thinking", "thinking": "Two cities: two calls.", "signature": "EqQBCgIYAhIM"},
            {"type": "text", "text": "I'll check both.", "citations": [
                {"type": "char_location", "cited_text": "both", "document_index": 0, "start_char_index": 0, "end_char_index": 4}]},
            {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Zürich", "unit": "celsius", "days": [1, 2]}},
            {"type": "tool_use", "id": "toolu_01B", "name": "get_time", "input": {}},
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 410, "cache_creation_input_tokens": 120, "cache_read_input_tokens": 2048, "output_tokens": 96},
    })
}

#[test]
fn synthesize_then_assemble_round_trips_text() {
    let m = text_message();
    assert_eq!(assemble(&synthesize(&m)).expect("assembles"), m);
}

#[test]
fn synthesize_then_assemble_round_trips_tool_use_thinking_and_citations() {
    let m = tool_message();
    assert_eq!(assemble(&synthesize(&m)).expect("assembles"), m);
}

#[test]
fn synthesized_events_look_like_anthropic_events() {
    let m = tool_message();
    let events = synthesize(&m);
    let data: Vec<Value> = events
        .iter()
        .map(|e| {
            let d: Value = serde_json::from_str(&e.data).expect("JSON");
            assert_eq!(e.event.as_deref(), d["type"].as_str());
            assert_eq!(e.id, None);
            d
        })
        .collect();
    let kinds: Vec<&str> = data
        .iter()
        .map(|d| d["type"].as_str().expect("type"))
        .collect();
    assert_eq!(
        &kinds[..3],
        ["message_start", "ping", "content_block_start"]
    );
    assert_eq!(&kinds[kinds.len() - 2..], ["message_delta", "message_stop"]);
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == "content_block_start")
            .count(),
        4
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "content_block_stop").count(),
        4
    );
    let start = &data[0]["message"];
    assert_eq!(start["content"], json!([]));
    assert_eq!(start["stop_reason"], Value::Null);
    assert_eq!(start["usage"]["output_tokens"], 1);
    assert_eq!(start["usage"]["cache_read_input_tokens"], 2048);
    let tool_start = data
        .iter()
        .find(|d| d["content_block"]["id"] == "toolu_01A")
        .expect("tool_use start");
    assert_eq!(tool_start["content_block"]["input"], json!({}));
    let fragments: Vec<&str> = data
        .iter()
        .filter(|d| d["delta"]["type"] == "input_json_delta")
        .map(|d| d["delta"]["partial_json"].as_str().expect("string"))
        .collect();
    assert!(
        fragments.len() > 2,
        "input is streamed in pieces: {fragments:?}"
    );
    assert_eq!(
        fragments.last(),
        Some(&""),
        "an empty input is one empty fragment"
    );
    let wire: Vec<u8> = events.iter().flat_map(|e| encode(e).to_vec()).collect();
    insta::assert_snapshot!(String::from_utf8(wire).expect("UTF-8"));
}

#[test]
fn reads_the_request_flags() {
    assert!(Anthropic.wants_stream("", &json!({"stream": true})));
    assert!(!Anthropic.wants_stream("", &json!({"stream": false})));
    assert!(!Anthropic.wants_stream("", &json!({})));
}

fn agent_request() -> Value {
    json!({
        "model": "claude-sonnet-4-5", "max_tokens": 1024, "temperature": 0.2,
        "system": [{"type": "text", "text": "You are a travel agent."},
                   {"type": "text", "text": "Use metric units.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "Weather in Zürich and Genève?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Zürich"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Genève"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"temp_c\": 18, \"at\": \"12:01:07\"}"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
                 "content": [{"type": "text", "text": "timeout at 12:01:08"}]}]}
        ],
        "tools": [{"name": "get_weather", "description": "Current weather",
                   "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "stream": true
    })
}

#[test]
fn extract_reads_the_neutral_call() {
    let call = extract(&agent_request(), &tool_message());
    assert_eq!(call.route, "anthropic.messages");
    assert_eq!(call.model, "claude-sonnet-4-5");
    assert_eq!(
        call.system.as_deref(),
        Some("You are a travel agent.\n\nUse metric units.")
    );
    assert_eq!(call.message_count, 3);
    assert_eq!(call.tools[0].name, "get_weather");
    assert_eq!(
        call.tools[0].parameters["properties"]["city"]["type"],
        "string"
    );
    assert_eq!(
        call.tool_results,
        vec![
            ToolResult {
                call_id: "toolu_1".into(),
                name: Some("get_weather".into()),
                content: json!("{\"temp_c\": 18, \"at\": \"12:01:07\"}")
            },
            ToolResult {
                call_id: "toolu_2".into(),
                name: Some("get_weather".into()),
                content: json!([{"type": "text", "text": "timeout at 12:01:08"}])
            },
        ]
    );
    assert_eq!(
        call.tool_calls,
        vec![
            ToolCall {
                id: "toolu_01A".into(),
                name: "get_weather".into(),
                arguments: json!({"city": "Zürich", "unit": "celsius", "days": [1, 2]})
            },
            ToolCall {
                id: "toolu_01B".into(),
                name: "get_time".into(),
                arguments: json!({})
            },
        ]
    );
    assert_eq!(call.reply.as_deref(), Some("I'll check both."));
    // Anthropic's input_tokens excludes the cache; the neutral prompt count includes it.
    assert_eq!(
        call.usage,
        Usage {
            prompt: 410 + 120 + 2048,
            completion: 96,
            cache_read: 2048,
            cache_creation: 120,
            calls_without_usage: 0
        }
    );
    assert_eq!(
        call.params.keys().map(String::as_str).collect::<Vec<_>>(),
        ["max_tokens", "temperature"]
    );
}

#[test]
fn extract_a_first_turn_and_an_error() {
    let req = json!({"model": "claude-haiku-4-5", "max_tokens": 64, "system": "Be brief.",
                     "messages": [{"role": "user", "content": "Hi"}]});
    let call = extract(&req, &text_message());
    assert_eq!(call.system.as_deref(), Some("Be brief."));
    assert!(call.tool_results.is_empty() && call.tool_calls.is_empty());
    assert_eq!(
        call.reply.as_deref(),
        Some("Zürich: 18 °C, sunny.\nGenève: 21 °C.")
    );
    let call = extract(
        &req,
        &json!({"type": "error", "error": {"type": "overloaded_error", "message": "x"}}),
    );
    assert_eq!((call.reply, call.usage), (None, Usage::UNKNOWN));
    let call = extract(
        &json!({"messages": [{"role": "user", "content": "x"}]}),
        &json!({}),
    );
    assert_eq!(call.system, None);
}

#[test]
fn envelope_lists_roles_blocks_and_tools() {
    assert_eq!(
        envelope(&agent_request()),
        vec![
            ("model", "\"claude-sonnet-4-5\"".to_owned()),
            ("message count", "3".to_owned()),
            ("roles", "[user, assistant, user]".to_owned()),
            (
                "blocks",
                "[text, text, tool_use, tool_use, tool_result, tool_result]".to_owned()
            ),
            ("tools", "[get_weather]".to_owned()),
        ]
    );
}

#[test]
fn rewrite_replaces_tool_results_in_conversation_order() {
    let mut req = agent_request();
    let mut seen = vec![];
    let n = rewrite_tool_results(&mut req, &|_| None, &mut |call, nth| {
        seen.push((
            call.arguments["city"].as_str().expect("city").to_owned(),
            nth,
        ));
        Some(json!({"temp_c": 10 + nth}))
    });
    assert_eq!(n, 2);
    assert_eq!(
        seen,
        vec![("Zürich".to_owned(), 0), ("Genève".to_owned(), 1)]
    );
    assert_eq!(
        req["messages"][2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"temp_c\":10}"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "{\"temp_c\":11}"},
        ])
    );
}

#[test]
fn rewrite_uses_the_session_lookup_and_leaves_unmocked_results() {
    let mut req = json!({"messages": [
        {"role": "user", "content": "What time is it?"},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_x", "content": "09:00:07"},
            {"type": "tool_result", "tool_use_id": "toolu_y", "content": "kept", "is_error": true},
            {"type": "text", "text": "Thanks"}]}]});
    let lookup = |id: &str| {
        (id == "toolu_x").then(|| ToolCall {
            id: id.into(),
            name: "clock".into(),
            arguments: json!({}),
        })
    };
    let n = rewrite_tool_results(&mut req, &lookup, &mut |call, _| {
        (call.name == "clock").then(|| json!("09:00"))
    });
    assert_eq!(n, 1);
    assert_eq!(req["messages"][1]["content"][0]["content"], "09:00");
    assert_eq!(
        req["messages"][1]["content"][1],
        json!({"type": "tool_result", "tool_use_id": "toolu_y", "content": "kept", "is_error": true})
    );
    assert_eq!(req["messages"][0]["content"], "What time is it?");
}
