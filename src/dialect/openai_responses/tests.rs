use super::*;
use crate::sse::{encode, SseParser};

/// One event as OpenAI frames it: `event:` name and the data, with `type` first.
fn wire_event(data: &str) -> String {
    let kind: Value = serde_json::from_str(data).expect("test data is JSON");
    format!(
        "event: {}\ndata: {data}\n\n",
        kind["type"].as_str().expect("a type")
    )
}

fn parse_all(wire: &[u8]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    // Byte by byte, so multi-byte characters are split between network reads too.
    let mut events: Vec<SseEvent> = wire.chunks(1).flat_map(|b| parser.push(b)).collect();
    events.extend(parser.finish());
    events
}

/// What an SDK rebuilds from the deltas (as openai-python's `ResponseStreamState`
/// does): items from `output_item.added`, parts from `content_part.added`, text,
/// refusal, summary and argument deltas appended, annotations added; then each item's
/// `status` from its `output_item.done`. Checks that every event names itself.
fn accumulate(events: &[SseEvent]) -> Vec<Value> {
    let mut output: Vec<Value> = Vec::new();
    for e in events {
        let data: Value = serde_json::from_str(&e.data).expect("event is JSON");
        assert_eq!(
            e.event.as_deref(),
            data["type"].as_str(),
            "event name is the type"
        );
        let index = |field: &str| data[field].as_u64().map(|i| i as usize);
        let item = index("output_index");
        let append = |target: &mut Value, piece: &Value| {
            let mut s = target.as_str().expect("appending to a string").to_owned();
            s.push_str(piece.as_str().expect("a string delta"));
            *target = json!(s);
        };
        match data["type"].as_str().expect("a type") {
            "response.output_item.added" => output.push(data["item"].clone()),
            "response.content_part.added" => output[item.unwrap()]["content"]
                .as_array_mut()
                .expect("content")
                .push(data["part"].clone()),
            "response.output_text.delta" => append(
                &mut output[item.unwrap()]["content"][index("content_index").unwrap()]["text"],
                &data["delta"],
            ),
            "response.refusal.delta" => append(
                &mut output[item.unwrap()]["content"][index("content_index").unwrap()]["refusal"],
                &data["delta"],
            ),
            "response.output_text.annotation.added" => output[item.unwrap()]["content"]
                [index("content_index").unwrap()]["annotations"]
                .as_array_mut()
                .expect("annotations")
                .push(data["annotation"].clone()),
            "response.function_call_arguments.delta" => {
                append(&mut output[item.unwrap()]["arguments"], &data["delta"])
            }
            "response.reasoning_summary_part.added" => output[item.unwrap()]["summary"]
                .as_array_mut()
                .expect("summary")
                .push(data["part"].clone()),
            "response.reasoning_summary_text.delta" => append(
                &mut output[item.unwrap()]["summary"][index("summary_index").unwrap()]["text"],
                &data["delta"],
            ),
            "response.output_item.done" => {
                if let Some(status) = data["item"].get("status") {
                    output[item.unwrap()]["status"] = status.clone();
                }
            }
            _ => {}
        }
    }
    output
}

/// The response object as the API returns it, with `status`, `output` and `usage`.
fn response(status: &str, output: Value, usage: Value) -> Value {
    json!({
        "id": "resp_68b2f0c1a9d4819aa1e2",
        "object": "response",
        "created_at": 1756567890,
        "status": status,
        "background": false,
        "error": null,
        "incomplete_details": null,
        "instructions": "You are a travel agent. Be brief.",
        "max_output_tokens": null,
        "model": "gpt-4.1-2025-04-14",
        "output": output,
        "parallel_tool_calls": true,
        "previous_response_id": null,
        "reasoning": {"effort": null, "summary": null},
        "store": true,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [{"type": "function", "name": "get_weather", "description": "Current weather",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                   "strict": true}],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": null,
        "metadata": {},
    })
}

fn usage() -> Value {
    json!({
        "input_tokens": 312,
        "input_tokens_details": {"cached_tokens": 256},
        "output_tokens": 41,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 353,
    })
}

fn message_item(text: &str) -> Value {
    json!({
        "id": "msg_68b2f0c2b1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    })
}

fn call_item(id: &str, call_id: &str, arguments: &str) -> Value {
    json!({
        "id": id,
        "type": "function_call",
        "status": "completed",
        "call_id": call_id,
        "name": "get_weather",
        "arguments": arguments,
    })
}

/// A realistic stream: a short message, then two function calls whose arguments are
/// split mid-key, between the characters of "Zürich" and inside a `\u00fc` escape.
fn realistic_wire() -> (String, Value) {
    let text = "Checking both cities.";
    let args_1 = r#"{"city":"Zürich"}"#;
    let args_2 = r#"{"city":"Z\u00fcrich, CH"}"#;
    let output = json!([
        message_item(text),
        call_item("fc_68b2f0c3a1", "call_Zr1", args_1),
        call_item("fc_68b2f0c3b2", "call_Zr2", args_2),
    ]);
    let done = response("completed", output.clone(), usage());
    let start = response("in_progress", json!([]), Value::Null);
    let mut seq = 0;
    let mut wire = String::new();
    let mut ev = |rest: Value| {
        let mut data = rest.as_object().expect("object").clone();
        data.insert("sequence_number".into(), json!(seq));
        seq += 1;
        wire += &wire_event(&Value::Object(data).to_string());
    };
    ev(json!({"type": "response.created", "response": start}));
    ev(json!({"type": "response.in_progress", "response": start}));
    let msg = "msg_68b2f0c2b1";
    ev(
        json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"id": msg, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
    );
    ev(
        json!({"type": "response.content_part.added", "item_id": msg, "output_index": 0, "content_index": 0,
        "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}}),
    );
    for piece in ["Check", "ing both", " cities", "."] {
        // Recent streams pad deltas with a random `obfuscation` field.
        ev(
            json!({"type": "response.output_text.delta", "item_id": msg, "output_index": 0, "content_index": 0,
            "delta": piece, "logprobs": [], "obfuscation": "q7Zr"}),
        );
    }
    ev(
        json!({"type": "response.output_text.done", "item_id": msg, "output_index": 0, "content_index": 0,
        "text": text, "logprobs": []}),
    );
    ev(
        json!({"type": "response.content_part.done", "item_id": msg, "output_index": 0, "content_index": 0,
        "part": {"type": "output_text", "text": text, "annotations": [], "logprobs": []}}),
    );
    ev(json!({"type": "response.output_item.done", "output_index": 0, "item": message_item(text)}));
    let calls = [
        (
            "fc_68b2f0c3a1",
            "call_Zr1",
            args_1,
            vec![r#"{"ci"#, r#"ty":"Z"#, "ü", r#"ri"#, r#"ch"}"#],
        ),
        (
            "fc_68b2f0c3b2",
            "call_Zr2",
            args_2,
            vec![r#"{"city":"Z\u"#, "00", r#"fcrich, "#, r#"CH"}"#],
        ),
    ];
    for (n, (id, call_id, args, pieces)) in calls.into_iter().enumerate() {
        let output_index = n + 1;
        ev(
            json!({"type": "response.output_item.added", "output_index": output_index,
            "item": {"id": id, "type": "function_call", "status": "in_progress", "arguments": "",
                     "call_id": call_id, "name": "get_weather"}}),
        );
        for piece in pieces {
            ev(
                json!({"type": "response.function_call_arguments.delta", "item_id": id,
                "output_index": output_index, "delta": piece, "obfuscation": "a1"}),
            );
        }
        ev(
            json!({"type": "response.function_call_arguments.done", "item_id": id,
            "output_index": output_index, "arguments": args}),
        );
        ev(
            json!({"type": "response.output_item.done", "output_index": output_index,
            "item": call_item(id, call_id, args)}),
        );
    }
    ev(json!({"type": "response.completed", "response": done}));
    (wire, done)
}

#[test]
fn assembles_the_completed_response_of_a_realistic_stream() {
    let (wire, done) = realistic_wire();
    let events = parse_all(wire.as_bytes());
    assert_eq!(events.len(), 27);
    let assembled = assemble(&events).expect("stream assembles");
    assert_eq!(assembled, done);
    assert_eq!(
        assembled["output"][1]["arguments"],
        json!("{\"city\":\"Zürich\"}")
    );
    assert_eq!(
        assembled["output"][2]["arguments"],
        json!(r#"{"city":"Z\u00fcrich, CH"}"#)
    );
    // The deltas of the fixture add up to the same items (checks the fixture and the
    // accumulator the synthesis tests rely on).
    assert_eq!(Value::Array(accumulate(&events)), done["output"]);
}

#[test]
fn an_incomplete_response_assembles_with_its_status() {
    let mut cut = response("incomplete", json!([message_item("Zürich is")]), usage());
    cut["incomplete_details"] = json!({"reason": "max_output_tokens"});
    cut["output"][0]["status"] = json!("incomplete");
    let events = synthesize(&cut);
    let last = events.last().expect("events");
    assert_eq!(last.event.as_deref(), Some("response.incomplete"));
    assert_eq!(assemble(&events).expect("assembles"), cut);
}

#[test]
fn a_trailing_done_and_events_after_the_terminal_one_are_ignored() {
    let done = response("completed", json!([]), usage());
    let mut events = synthesize(&done);
    events.push(SseEvent {
        event: None,
        id: None,
        data: "[DONE]".into(),
    });
    assert_eq!(assemble(&events).expect("assembles"), done);
    events.insert(
        events.len() - 1,
        SseEvent {
            event: None,
            id: None,
            data: "{\"type\":\"x\"}".into(),
        },
    );
    assert_eq!(assemble(&events).expect("assembles"), done);
}

fn assemble_err(data: &[&str]) -> String {
    let events: Vec<SseEvent> = data
        .iter()
        .map(|d| SseEvent {
            event: None,
            id: None,
            data: (*d).to_owned(),
        })
        .collect();
    assemble(&events).expect_err("must fail").to_string()
}

#[test]
fn errors_say_which_event_and_what() {
    let created = r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1"}}"#;
    let delta = r#"{"type":"response.output_text.delta","sequence_number":1,"delta":"Zü"}"#;
    assert_eq!(
        assemble_err(&[created, "{\"type\": tru"]),
        "failed to parse stream event 1 as JSON"
    );
    assert_eq!(
        assemble_err(&[created, "[1]"]),
        "failed to read stream event 1: expected a JSON object"
    );
    assert_eq!(
        assemble_err(&[created, delta]),
        "failed to assemble the stream: it ended after 2 events without `response.completed` \
         (last event: `response.output_text.delta`)"
    );
    assert_eq!(
        assemble_err(&[created, r#"{"type":"response.completed","response":null}"#]),
        "failed to read stream event 1: the terminal event's `response` is not an object"
    );
    assert_eq!(
        assemble_err(&[
            created,
            r#"{"type":"response.failed","sequence_number":1,"response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"The model failed to generate a response."}}}"#
        ]),
        "failed to assemble the stream: event 1 reports an upstream error: \
         The model failed to generate a response."
    );
    assert_eq!(
        assemble_err(&[
            r#"{"type":"error","sequence_number":0,"code":"rate_limit_exceeded","message":"Slow down.","param":null}"#
        ]),
        "failed to assemble the stream: event 0 reports an upstream error: Slow down."
    );
    assert_eq!(
        assemble_err(&[r#"{"type":"error","error":{"type":"server_error","message":"Nested."}}"#]),
        "failed to assemble the stream: event 0 reports an upstream error: Nested."
    );
    assert_eq!(
        assemble_err(&[]),
        "failed to assemble the stream: it has no events"
    );
    assert_eq!(
        assemble_err(&["[DONE]"]),
        "failed to assemble the stream: it has no events"
    );
}

#[test]
fn events_missing_their_fields_are_errors_not_panics() {
    assert_eq!(
        assemble_err(&[r#"{"type":"response.failed"}"#]),
        "failed to assemble the stream: event 0 reports an upstream error: the response failed"
    );
    assert_eq!(
        assemble_err(&[r#"{"type":"error"}"#]),
        "failed to assemble the stream: event 0 reports an upstream error: {\"type\":\"error\"}"
    );
    assert_eq!(
        assemble_err(&[r#"{"type":"response.completed"}"#]),
        "failed to read stream event 0: the terminal event's `response` is not an object"
    );
}

#[test]
fn the_event_name_stands_in_for_a_missing_type() {
    let done = response("completed", json!([]), usage());
    let events = [SseEvent {
        event: Some("response.completed".into()),
        id: None,
        data: json!({"response": done}).to_string(),
    }];
    assert_eq!(assemble(&events).expect("assembles"), done);
}

fn text_response() -> Value {
    let mut message = message_item("Zürich: 18 °C, sunny.\nGenève: 21 °C.");
    message["content"][0]["annotations"] = json!([
        {"type": "url_citation", "start_index": 0, "end_index": 6, "url": "https://meteo.example/zh", "title": "Zürich"}
    ]);
    message["content"]
        .as_array_mut()
        .expect("content")
        .push(json!({"type": "refusal", "refusal": "I won't book flights."}));
    response("completed", json!([message]), usage())
}

fn tool_response() -> Value {
    let reasoning = json!({
        "id": "rs_68b2f0c0", "type": "reasoning", "encrypted_content": null,
        "summary": [{"type": "summary_text", "text": "**Weather lookup** Two cities, two calls."}],
    });
    let search = json!({"id": "ws_68b2f0c1", "type": "web_search_call", "status": "completed",
                        "action": {"type": "search", "query": "weather Zürich"}});
    response(
        "completed",
        json!([
            reasoning,
            search,
            call_item("fc_1", "call_1", r#"{"city":"Zürich","unit":"celsius"}"#),
            call_item("fc_2", "call_2", "{}"),
        ]),
        usage(),
    )
}

#[test]
fn synthesize_then_assemble_round_trips_text_and_refusal() {
    let r = text_response();
    let events = synthesize(&r);
    assert_eq!(assemble(&events).expect("assembles"), r);
    assert_eq!(Value::Array(accumulate(&events)), r["output"]);
}

#[test]
fn synthesize_then_assemble_round_trips_tool_calls_and_reasoning() {
    let r = tool_response();
    let events = synthesize(&r);
    assert_eq!(assemble(&events).expect("assembles"), r);
    assert_eq!(Value::Array(accumulate(&events)), r["output"]);
}

#[test]
fn synthesized_events_look_like_openai_events() {
    let r = tool_response();
    let events = synthesize(&r);
    let data: Vec<Value> = events
        .iter()
        .map(|e| serde_json::from_str(&e.data).expect("JSON"))
        .collect();
    for (n, (e, d)) in events.iter().zip(&data).enumerate() {
        assert_eq!(e.id, None);
        assert_eq!(e.event.as_deref(), d["type"].as_str());
        assert_eq!(d["sequence_number"], json!(n));
    }
    assert!(events.iter().all(|e| e.data != "[DONE]"));
    for snapshot in &data[..2] {
        assert_eq!(snapshot["response"]["status"], "in_progress");
        assert_eq!(snapshot["response"]["output"], json!([]));
        assert_eq!(snapshot["response"]["usage"], Value::Null);
        assert_eq!(snapshot["response"]["id"], r["id"]);
    }
    assert_eq!(data[0]["type"], "response.created");
    assert_eq!(data[1]["type"], "response.in_progress");
    let added: Vec<&Value> = data
        .iter()
        .filter(|d| d["type"] == "response.output_item.added")
        .map(|d| &d["item"])
        .collect();
    assert_eq!(added.len(), 4);
    assert_eq!(added[2]["arguments"], "");
    assert_eq!(added[2]["status"], "in_progress");
    assert_eq!(added[0]["summary"], json!([]));
    let arg_deltas: Vec<&str> = data
        .iter()
        .filter(|d| d["type"] == "response.function_call_arguments.delta" && d["item_id"] == "fc_1")
        .map(|d| d["delta"].as_str().expect("string"))
        .collect();
    assert!(
        arg_deltas.len() > 1,
        "arguments are streamed in pieces: {arg_deltas:?}"
    );
    let wire: Vec<u8> = events.iter().flat_map(|e| encode(e).to_vec()).collect();
    insta::assert_snapshot!(String::from_utf8(wire).expect("UTF-8"));
}

#[test]
fn a_failed_response_synthesizes_a_failed_stream() {
    let mut failed = response("failed", json!([]), Value::Null);
    failed["error"] = json!({"code": "server_error", "message": "boom"});
    let events = synthesize(&failed);
    assert_eq!(
        events.last().and_then(|e| e.event.as_deref()),
        Some("response.failed")
    );
    assert!(assemble(&events)
        .expect_err("failed")
        .to_string()
        .ends_with("boom"));
}

#[test]
fn reads_the_request_flags() {
    assert!(OpenAiResponses.wants_stream("", &json!({"stream": true})));
    assert!(!OpenAiResponses.wants_stream("", &json!({"stream": false})));
    assert!(!OpenAiResponses.wants_stream("", &json!({"stream": "true"})));
    assert!(!OpenAiResponses.wants_stream("", &json!({})));
}

fn agent_request() -> Value {
    json!({
        "model": "gpt-4.1", "include": [], "temperature": 0.2, "tool_choice": "auto", "stream": true,
        "instructions": "You are a travel agent.",
        "input": [
            {"role": "developer", "content": [{"type": "input_text", "text": "Use metric units."}]},
            {"role": "user", "content": "Weather in Zürich and Genève?"},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
             "arguments": "{\"city\":\"Zürich\"}", "status": "completed"},
            {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "get_weather",
             "arguments": "{\"city\":\"Genève\"}", "status": "completed"},
            {"type": "function_call_output", "call_id": "call_1", "output": "{\"temp_c\": 18, \"at\": \"12:01:07\"}"},
            {"type": "function_call_output", "call_id": "call_2", "output": "{\"temp_c\": 21, \"at\": \"12:01:08\"}"}
        ],
        "tools": [
            {"type": "function", "name": "get_weather", "description": "Current weather",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true},
            {"type": "web_search_preview"}
        ]
    })
}

#[test]
fn extract_reads_the_neutral_call() {
    let resp = response(
        "completed",
        json!([
            call_item("fc_3", "call_3", "{\"city\": \"Bern\"}"),
            message_item("Zürich 18 °C, "),
            {"type": "message", "role": "assistant", "id": "msg_2", "status": "completed",
             "content": [{"type": "output_text", "text": "Genève 21 °C.", "annotations": []}]},
        ]),
        usage(),
    );
    let call = extract(&agent_request(), &resp);
    assert_eq!(call.route, "openai.responses");
    assert_eq!(call.model, "gpt-4.1");
    assert_eq!(
        call.system.as_deref(),
        Some("You are a travel agent.\n\nUse metric units.")
    );
    assert_eq!(call.message_count, 7);
    assert_eq!(
        call.tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["get_weather", "web_search_preview"]
    );
    assert_eq!(
        call.tools[0].parameters["properties"]["city"]["type"],
        "string"
    );
    assert_eq!(
        call.tool_results,
        vec![
            ToolResult {
                call_id: "call_1".into(),
                name: Some("get_weather".into()),
                content: json!("{\"temp_c\": 18, \"at\": \"12:01:07\"}")
            },
            ToolResult {
                call_id: "call_2".into(),
                name: Some("get_weather".into()),
                content: json!("{\"temp_c\": 21, \"at\": \"12:01:08\"}")
            },
        ]
    );
    assert_eq!(
        call.tool_calls,
        vec![ToolCall {
            id: "call_3".into(),
            name: "get_weather".into(),
            arguments: json!({"city": "Bern"})
        }]
    );
    assert_eq!(call.reply.as_deref(), Some("Zürich 18 °C, Genève 21 °C."));
    assert_eq!(
        call.usage,
        Usage {
            prompt: 312,
            completion: 41,
            cache_read: 256,
            ..Usage::default()
        }
    );
    assert_eq!(
        call.params.keys().map(String::as_str).collect::<Vec<_>>(),
        ["include", "temperature", "tool_choice"]
    );
}

#[test]
fn extract_with_previous_response_id_and_string_input() {
    // A follow-up that points at the stored response: only the new outputs are sent.
    let req = json!({"model": "gpt-4.1", "previous_response_id": "resp_1", "input": [
        {"type": "function_call_output", "call_id": "call_1", "output": "18"}]});
    let call = extract(&req, &json!({"error": {"message": "nope"}}));
    assert_eq!(call.tool_results.len(), 1);
    assert_eq!(call.tool_results[0].name, None);
    assert!(call.params.is_empty(), "{:?}", call.params);
    assert_eq!((call.reply, call.tool_calls.len()), (None, 0));

    let req = json!({"model": "gpt-4.1-mini", "input": "Weather in Zürich?"});
    let call = extract(
        &req,
        &response("completed", json!([message_item("Sunny.")]), usage()),
    );
    assert_eq!((call.message_count, call.system), (1, None));
    assert_eq!(call.reply.as_deref(), Some("Sunny."));
    assert!(call.tool_results.is_empty());
}

#[test]
fn tool_results_before_the_last_model_output_are_history() {
    let mut req = agent_request();
    let input = req["input"].as_array_mut().expect("input");
    input.push(call_item("fc_9", "call_9", "{}"));
    input.push(json!({"type": "function_call_output", "call_id": "call_9", "output": "new"}));
    let call = extract(&req, &json!({}));
    assert_eq!(call.tool_results.len(), 1);
    assert_eq!(call.tool_results[0].content, "new");
}

#[test]
fn envelope_lists_items_by_role_or_type() {
    assert_eq!(
        envelope(&agent_request()),
        vec![
            ("model", "\"gpt-4.1\"".to_owned()),
            ("item count", "7".to_owned()),
            (
                "items",
                "[developer, user, reasoning, function_call, function_call, function_call_output, function_call_output]"
                    .to_owned()
            ),
            ("tools", "[get_weather, web_search_preview]".to_owned()),
        ]
    );
    let short = envelope(&json!({"model": "m", "input": "hi"}));
    assert_eq!(short[1].1, "1");
    assert_eq!(short[2].1, "[user]");
}

#[test]
fn rewrite_replaces_outputs_in_conversation_order() {
    let mut req = agent_request();
    let mut seen = vec![];
    let n = rewrite_tool_results(&mut req, &|_| None, &mut |call, nth| {
        seen.push((
            call.id.clone(),
            call.arguments["city"].as_str().expect("city").to_owned(),
            nth,
        ));
        Some(json!({"temp_c": 10 + nth}))
    });
    assert_eq!(n, 2);
    assert_eq!(
        seen,
        vec![
            ("call_1".to_owned(), "Zürich".to_owned(), 0),
            ("call_2".to_owned(), "Genève".to_owned(), 1)
        ]
    );
    assert_eq!(req["input"][5]["output"], json!("{\"temp_c\":10}"));
    assert_eq!(req["input"][6]["output"], json!("{\"temp_c\":11}"));
    assert_eq!(req["input"][5]["call_id"], "call_1");
}

#[test]
fn rewrite_uses_the_session_lookup_across_previous_response_id() {
    let mut req = json!({"model": "gpt-4.1", "previous_response_id": "resp_1", "input": [
        {"type": "function_call_output", "call_id": "call_a", "output": "09:00:07"},
        {"type": "function_call_output", "call_id": "call_b", "output": "09:00:08"},
        {"type": "function_call_output", "call_id": "call_unknown", "output": "kept"}]});
    let lookup = |id: &str| {
        matches!(id, "call_a" | "call_b").then(|| ToolCall {
            id: id.into(),
            name: "clock".into(),
            arguments: json!({}),
        })
    };
    let n = rewrite_tool_results(&mut req, &lookup, &mut |call, nth| {
        (call.name == "clock").then(|| json!(["09:00", "09:05"][nth]))
    });
    assert_eq!(n, 2);
    assert_eq!(req["input"][0]["output"], "09:00");
    assert_eq!(req["input"][1]["output"], "09:05");
    assert_eq!(req["input"][2]["output"], "kept");

    let mut text = json!({"input": "just text"});
    assert_eq!(
        rewrite_tool_results(&mut text, &lookup, &mut |_, _| Some(json!(1))),
        0
    );
    assert_eq!(text, json!({"input": "just text"}));
}
