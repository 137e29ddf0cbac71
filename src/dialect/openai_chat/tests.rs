use super::*;
use crate::sse::{encode, SseParser};

/// One `data:` event as OpenAI frames it: the fields every chunk repeats, then `rest`.
fn wire_chunk(rest: &str) -> String {
    format!(
        concat!(
            r#"data: {{"id":"chatcmpl-BxQ9","object":"chat.completion.chunk","created":1751234567,"#,
            r#""model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_07871e2ad8","#,
            "{}}}\n\n"
        ),
        rest
    )
}

/// A tool-call delta for `choice 0` carrying only an argument fragment.
fn wire_fragment(call: u64, arguments: &str) -> String {
    let delta = json!({"tool_calls": [{"index": call, "function": {"arguments": arguments}}]});
    // Recent OpenAI chunks carry an `obfuscation` padding field; it must be ignored.
    wire_chunk(&format!(
        r##""choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":null}}],"usage":null,"obfuscation":"x1""##
    ))
}

fn parse_all(wire: &[u8]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    // Byte by byte, so multi-byte characters are split between network reads too.
    let mut events: Vec<SseEvent> = wire.chunks(1).flat_map(|b| parser.push(b)).collect();
    events.extend(parser.finish());
    events
}

fn data_event(data: &str) -> SseEvent {
    SseEvent {
        event: None,
        id: None,
        data: data.to_owned(),
    }
}

#[test]
fn assembles_two_parallel_tool_calls_split_at_awkward_points() {
    let mut wire = String::new();
    wire += &wire_chunk(
        r#""choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_paris","type":"function","function":{"name":"get_weather","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null"#,
    );
    // Mid-key, then between the two characters of "°C".
    for fragment in [
        r#"{"lo"#,
        r#"cation": "Par"#,
        r#"is", "unit": "°"#,
        r#"C"}"#,
    ] {
        wire += &wire_fragment(0, fragment);
    }
    wire += &wire_chunk(
        r#""choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_tokyo","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null"#,
    );
    // Between the characters of "Tōkyō", and in the middle of a JSON `\u00b0` escape.
    for fragment in [
        r#"{"location""#,
        r#": "Tō"#,
        r#"kyō", "un"#,
        r#"it": "\u00"#,
        r#"b0C"}"#,
    ] {
        wire += &wire_fragment(1, fragment);
    }
    wire += &wire_chunk(
        r#""choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null"#,
    );
    wire += &wire_chunk(
        r#""choices":[],"usage":{"prompt_tokens":82,"completion_tokens":48,"total_tokens":130,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}"#,
    );
    wire += "data: [DONE]\n\n";

    let events = parse_all(wire.as_bytes());
    assert_eq!(events.len(), 14);
    let assembled = assemble(&events).expect("stream assembles");
    assert_eq!(
        assembled,
        json!({
            "id": "chatcmpl-BxQ9",
            "object": "chat.completion",
            "created": 1751234567,
            "model": "gpt-4o-2024-08-06",
            "service_tier": "default",
            "system_fingerprint": "fp_07871e2ad8",
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": null,
                    "tool_calls": [
                        {
                            "id": "call_paris",
                            "type": "function",
                            "function": {
                                "name": "get_weather",
                                "arguments": r#"{"location": "Paris", "unit": "°C"}"#,
                            },
                        },
                        {
                            "id": "call_tokyo",
                            "type": "function",
                            "function": {
                                "name": "get_weather",
                                "arguments": r#"{"location": "Tōkyō", "unit": "\u00b0C"}"#,
                            },
                        },
                    ],
                },
                "logprobs": null,
                "finish_reason": "tool_calls",
            }],
            "usage": {
                "prompt_tokens": 82,
                "completion_tokens": 48,
                "total_tokens": 130,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": 0,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
        })
    );
}

#[test]
fn assembles_a_content_only_stream() {
    let mut wire = wire_chunk(
        r#""choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]"#,
    );
    for piece in ["It", "'s 18", " °C", " and sunny."] {
        let delta = json!({"content": piece});
        wire += &wire_chunk(&format!(
            r#""choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":null}}]"#
        ));
    }
    wire +=
        &wire_chunk(r#""choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]"#);
    wire += "data: [DONE]\n\n";

    assert_eq!(
        assemble(&parse_all(wire.as_bytes())).expect("stream assembles"),
        json!({
            "id": "chatcmpl-BxQ9",
            "object": "chat.completion",
            "created": 1751234567,
            "model": "gpt-4o-2024-08-06",
            "service_tier": "default",
            "system_fingerprint": "fp_07871e2ad8",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": "It's 18 °C and sunny."},
                "logprobs": null,
                "finish_reason": "stop",
            }],
        })
    );
}

#[test]
fn groups_interleaved_choices_and_tool_calls_by_index() {
    // n=2 with choice 1 arriving first, tool-call fragments interleaved, and a compatible
    // server that repeats id and name on every fragment. No optional head fields.
    let chunk = |choice: Value| {
        data_event(
            &json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]})
                .to_string(),
        )
    };
    let call = |index: u64, id: &str, args: &str| json!({"index": index, "id": id, "type": "function", "function": {"name": format!("f{index}"), "arguments": args}});
    let events = [
        chunk(json!({"index": 1, "delta": {"role": "assistant", "content": "B"}})),
        chunk(
            json!({"index": 0, "delta": {"role": "assistant", "tool_calls": [call(1, "id1", "[")]}}),
        ),
        chunk(
            json!({"index": 0, "delta": {"tool_calls": [call(0, "id0", "{"), call(1, "id1", "1")]}}),
        ),
        chunk(json!({"index": 1, "delta": {"refusal": "no"}, "finish_reason": "stop"})),
        chunk(
            json!({"index": 0, "delta": {"tool_calls": [call(0, "id0", "}"), call(1, "id1", "]")]}}),
        ),
        chunk(json!({"index": 0, "delta": {}, "finish_reason": "tool_calls"})),
    ];
    let tool = |index: u64, args: &str| json!({"id": format!("id{index}"), "type": "function", "function": {"name": format!("f{index}"), "arguments": args}});
    assert_eq!(
        assemble(&events).expect("stream assembles"),
        json!({
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": null, "tool_calls": [tool(0, "{}"), tool(1, "[1]")]},
                    "logprobs": null,
                    "finish_reason": "tool_calls",
                },
                {
                    "index": 1,
                    "message": {"role": "assistant", "content": "B", "refusal": "no"},
                    "logprobs": null,
                    "finish_reason": "stop",
                },
            ],
        })
    );
}

fn text_completion() -> Value {
    json!({
        "id": "chatcmpl-T1",
        "object": "chat.completion",
        "created": 1751234000,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_aa",
        "service_tier": "default",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Paris is at 18 °C.\nSunny."},
                "logprobs": null,
                "finish_reason": "stop",
            },
            {
                "index": 1,
                "message": {"role": "assistant", "content": null, "refusal": "I can't help with that."},
                "logprobs": null,
                "finish_reason": "stop",
            },
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
    })
}

fn tool_completion() -> Value {
    json!({
        "id": "chatcmpl-T2",
        "object": "chat.completion",
        "created": 1751234001,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_bb",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\":\"Europe/Paris\"}"}},
                ],
            },
            "logprobs": null,
            "finish_reason": "tool_calls",
        }],
        "usage": {"prompt_tokens": 50, "completion_tokens": 30, "total_tokens": 80},
    })
}

#[test]
fn synthesize_then_assemble_round_trips_text_and_refusal() {
    let completion = text_completion();
    assert_eq!(
        assemble(&synthesize(&completion, true)).expect("assembles"),
        completion
    );
}

#[test]
fn synthesize_then_assemble_round_trips_tool_calls() {
    let completion = tool_completion();
    assert_eq!(
        assemble(&synthesize(&completion, true)).expect("assembles"),
        completion
    );
}

#[test]
fn synthesized_chunks_look_like_openai_chunks() {
    let completion = tool_completion();
    let events = synthesize(&completion, true);
    let (done, chunks) = events.split_last().expect("at least [DONE]");
    assert_eq!(done, &data_event("[DONE]"));
    let chunks: Vec<Value> = chunks
        .iter()
        .map(|e| {
            assert_eq!((&e.event, &e.id), (&None, &None));
            serde_json::from_str(&e.data).expect("chunk is JSON")
        })
        .collect();
    // role chunk, two tool calls, finish, usage.
    assert_eq!(chunks.len(), 5);
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["id"], "chatcmpl-T2");
        assert_eq!(chunk["created"], 1751234001);
        assert_eq!(chunk["model"], "gpt-4o-2024-08-06");
        assert_eq!(chunk["system_fingerprint"], "fp_bb");
        assert!(chunk.get("service_tier").is_none());
    }
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    assert_eq!(chunks[3]["choices"][0]["delta"], json!({}));
    assert_eq!(chunks[3]["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(chunks[3]["usage"], Value::Null);
    assert_eq!(chunks[4]["choices"], json!([]));
    assert_eq!(chunks[4]["usage"], completion["usage"]);

    // The whole stream on the wire, for review.
    let wire: Vec<u8> = events.iter().flat_map(|e| encode(e).to_vec()).collect();
    insta::assert_snapshot!(String::from_utf8(wire).expect("UTF-8"));
}

#[test]
fn synthesize_without_usage_sends_no_usage() {
    let events = synthesize(&text_completion(), false);
    assert!(events
        .iter()
        .all(|e| !e.data.contains("usage") && !e.data.contains("\"choices\":[]")));
    let assembled = assemble(&events).expect("assembles");
    assert!(assembled.get("usage").is_none());
    // A stream without a usage chunk: its tokens are unknown, not zero.
    let call = extract(&json!({"model": "m", "messages": []}), &assembled);
    assert_eq!(call.usage, crate::neutral::Usage::UNKNOWN);
}

#[test]
fn reads_the_request_flags() {
    assert!(OpenAiChat.wants_stream("", &json!({"stream": true})));
    assert!(!OpenAiChat.wants_stream("", &json!({"stream": false})));
    assert!(!OpenAiChat.wants_stream("", &json!({"stream": "true"})));
    assert!(!OpenAiChat.wants_stream("", &json!({})));
    assert!(wants_usage(
        &json!({"stream": true, "stream_options": {"include_usage": true}})
    ));
    assert!(!wants_usage(
        &json!({"stream_options": {"include_usage": false}})
    ));
    assert!(!wants_usage(&json!({"stream": true})));
}

fn assemble_err(data: &[&str]) -> String {
    let events: Vec<SseEvent> = data.iter().map(|d| data_event(d)).collect();
    assemble(&events).expect_err("must fail").to_string()
}

#[test]
fn errors_say_which_event_and_what() {
    let ok = r#"{"id":"c","created":1,"model":"m","choices":[]}"#;
    assert_eq!(
        assemble_err(&[ok, ok, "{\"id\": tru", "[DONE]"]),
        "failed to parse stream event 2 as JSON"
    );
    assert_eq!(
        assemble_err(&[ok, "[1, 2]"]),
        "failed to read stream event 1: expected a JSON object"
    );
    assert_eq!(
        assemble_err(&[r#"{"choices":[{"delta":{"content":"x"}}]}"#]),
        "failed to read stream event 0: a choice has no integer `index`"
    );
    assert_eq!(
        assemble_err(&[
            ok,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"x"}]}}]}"#
        ]),
        "failed to read stream event 1: a tool call has no integer `index`"
    );
    assert_eq!(
        assemble_err(&[ok, r#"{"choices":{"index":0}}"#]),
        "failed to read stream event 1: `choices` is not an array"
    );
    assert_eq!(
        assemble_err(&[
            ok,
            r#"{"error":{"message":"The server had an error processing your request.","type":"server_error"}}"#
        ]),
        "failed to assemble the stream: event 1 reports an upstream error: \
         The server had an error processing your request."
    );
    assert_eq!(
        assemble_err(&["[DONE]"]),
        "failed to assemble the stream: it has no chunks"
    );
    assert_eq!(
        assemble_err(&[r#"{"id":"c","created":1,"choices":[]}"#]),
        "failed to assemble the stream: no chunk carries `model`"
    );
}

#[test]
fn json_error_keeps_its_source() {
    let err = assemble(&[data_event("{oops")]).expect_err("not JSON");
    let source = std::error::Error::source(&err).expect("has a source");
    assert!(source.to_string().contains("line 1 column 2"), "{source}");
}

fn agent_request() -> Value {
    json!({
        "model": "gpt-4o-mini", "temperature": 0.2,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris and Lyon?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Lyon\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\": 18, \"at\": \"12:01:07\"}"},
            {"role": "tool", "tool_call_id": "call_2", "content": "{\"temp_c\": 20, \"at\": \"12:01:08\"}"}
        ],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    })
}

#[test]
fn extract_reads_the_neutral_call() {
    let response = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "book", "arguments": "{\"day\": 1}"}}]},
        "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 32}}});
    let call = extract(&agent_request(), &response);
    assert_eq!(call.model, "gpt-4o-mini");
    assert_eq!(call.system.as_deref(), Some("Be brief."));
    assert_eq!(call.message_count, 5);
    assert_eq!(call.tools[0].name, "get_weather");
    assert_eq!(call.tool_results.len(), 2);
    assert_eq!(call.tool_results[1].name.as_deref(), Some("get_weather"));
    assert_eq!(
        call.tool_calls,
        vec![ToolCall {
            id: "call_9".into(),
            name: "book".into(),
            arguments: json!({"day": 1})
        }]
    );
    assert_eq!(
        call.usage,
        Usage {
            prompt: 50,
            completion: 7,
            cache_read: 32,
            ..Usage::default()
        }
    );
    assert_eq!(call.params.get("temperature"), Some(&json!(0.2)));
    assert!(!call.params.contains_key("messages"));
    assert_eq!(call.reply, None);
}

#[test]
fn rewrite_replaces_tool_results_in_conversation_order() {
    let mut req = agent_request();
    let mut seen = vec![];
    let n = rewrite_tool_results(&mut req, &|_| None, &mut |call, nth| {
        seen.push((call.arguments["city"].as_str().unwrap().to_owned(), nth));
        Some(json!({"temp_c": 10 + nth}))
    });
    assert_eq!(n, 2);
    assert_eq!(seen, vec![("Paris".to_owned(), 0), ("Lyon".to_owned(), 1)]);
    assert_eq!(req["messages"][3]["content"], json!("{\"temp_c\":10}"));
    assert_eq!(req["messages"][4]["content"], json!("{\"temp_c\":11}"));
}

#[test]
fn rewrite_uses_the_session_lookup_for_calls_outside_the_request() {
    let mut req =
        json!({"messages": [{"role": "tool", "tool_call_id": "call_x", "content": "old"}]});
    let lookup = |id: &str| {
        (id == "call_x").then(|| ToolCall {
            id: id.into(),
            name: "clock".into(),
            arguments: json!({}),
        })
    };
    let n = rewrite_tool_results(&mut req, &lookup, &mut |call, _| {
        (call.name == "clock").then(|| json!("09:00"))
    });
    assert_eq!(n, 1);
    assert_eq!(req["messages"][0]["content"], "09:00");
}
