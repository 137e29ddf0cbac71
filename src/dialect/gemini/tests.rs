use serde_json::json;

use super::*;
use crate::sse::{encode, SseParser};

/// A request of a manual two-tool loop as google-genai sends it, after one model turn.
fn request() -> Value {
    json!({
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Paris, then add 2+3."}]},
            {"role": "model", "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2lnLWE_Pz8-Pj4="},
                {"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}},
                {"functionCall": {"id": "call_9", "name": "add", "args": {"a": 2, "b": 3}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"forecast": "sunny"}}},
                {"functionResponse": {"name": "get_weather", "response": {"forecast": "rain"}}},
                {"functionResponse": {"id": "call_9", "name": "add", "response": {"result": 5}}}
            ]}
        ],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are a helpful agent."}]},
        "tools": [{"functionDeclarations": [
            {"name": "get_weather", "parameters_json_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
            {"name": "add", "parameters": {"type": "OBJECT", "properties": {"a": {"type": "INTEGER"}}}}
        ]}],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {"temperature": 0.0}
    })
}

fn response() -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"text": "Sunny in Paris, "}, {"text": "rain in Lyon; 5."}]},
            "finishReason": "STOP",
            "index": 0
        }],
        "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 9, "thoughtsTokenCount": 3,
                          "cachedContentTokenCount": 8, "totalTokenCount": 52},
        "modelVersion": "models/gemini-2.5-flash",
        "responseId": "AdVRaMmDCYekqtsPrb_-iAw"
    })
}

#[test]
fn extracts_the_neutral_call() {
    let call = extract(&request(), &response());
    assert_eq!(call.route, "gemini.generate");
    assert_eq!(call.model, "gemini-2.5-flash");
    assert_eq!(call.system.as_deref(), Some("You are a helpful agent."));
    let tools: Vec<&str> = call.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["get_weather", "add"]);
    assert_eq!(
        call.tools[0].parameters["properties"]["city"]["type"],
        "string"
    );
    // `parameters` is OpenAPI: read as the JSON Schema it means.
    assert_eq!(
        call.tools[1].parameters,
        json!({"type": "object", "properties": {"a": {"type": "integer"}}})
    );
    assert_eq!(call.message_count, 3);
    assert_eq!(call.tool_results.len(), 3);
    assert_eq!(call.tool_results[2].call_id, "call_9");
    assert_eq!(call.tool_results[1].name.as_deref(), Some("get_weather"));
    assert_eq!(
        call.reply.as_deref(),
        Some("Sunny in Paris, rain in Lyon; 5.")
    );
    assert_eq!(call.usage.prompt, 40);
    assert_eq!(call.usage.completion, 12);
    assert_eq!(call.usage.cache_read, 8);
    assert_eq!(
        call.params.keys().collect::<Vec<_>>(),
        ["generationConfig", "toolConfig"]
    );

    // The model's calls, from a response that asks for tools.
    let ask = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2ln"}]},
        "finishReason": "STOP"}]});
    let call = extract(&request(), &ask);
    assert_eq!(call.tool_calls.len(), 1);
    assert_eq!(call.tool_calls[0].name, "get_weather");
    assert_eq!(call.tool_calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(call.reply, None);
}

#[test]
fn the_json_array_stream_reads_like_the_whole_response() {
    let chunks = json!([
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi "}]}, "index": 0}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "there"}]}, "finishReason": "STOP", "index": 0}],
         "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 2}}
    ]);
    let call = extract(&json!({"contents": []}), &chunks);
    assert_eq!(call.reply.as_deref(), Some("Hi there"));
    assert_eq!(call.usage.prompt, 2);
}

#[test]
fn the_conversation_becomes_neutral_messages() {
    let req = request();
    let items = Gemini.conversation(&req);
    assert_eq!(items.len(), 3);
    assert!(Gemini.is_model_output(&items[1]) && !Gemini.is_model_output(&items[2]));
    let mut out = Vec::new();
    for item in items.iter() {
        Gemini.messages(item, &HashMap::new(), &mut out);
    }
    assert_eq!(
        out[0],
        Message::Text {
            role: "user".into(),
            text: "Weather in Paris, then add 2+3.".into()
        }
    );
    assert_eq!(
        out[1],
        Message::ToolCall {
            name: "get_weather".into(),
            arguments: json!({"city": "Paris"})
        }
    );
    assert_eq!(
        out[6],
        Message::ToolResult {
            call_id: "call_9".into(),
            name: Some("add".into()),
            content: json!({"result": 5})
        }
    );
}

#[test]
fn mocks_pair_results_with_calls_by_id_else_by_name_and_position() {
    let mut req = request();
    let mut seen = Vec::new();
    let n = rewrite_tool_results(&mut req, &|_| None, &mut |call, nth| {
        seen.push((call.name.clone(), call.arguments.clone(), nth));
        match call.name.as_str() {
            "get_weather" => Some(json!({"forecast": format!("mocked {nth}")})),
            _ => Some(json!(7)),
        }
    });
    assert_eq!(n, 3);
    assert_eq!(
        seen,
        [
            ("get_weather".to_owned(), json!({"city": "Paris"}), 0),
            ("get_weather".to_owned(), json!({"city": "Lyon"}), 1),
            ("add".to_owned(), json!({"a": 2, "b": 3}), 0),
        ]
    );
    let results = &req["contents"][2]["parts"];
    assert_eq!(
        results[0]["functionResponse"]["response"],
        json!({"forecast": "mocked 0"})
    );
    assert_eq!(
        results[1]["functionResponse"]["response"],
        json!({"forecast": "mocked 1"})
    );
    // A mock that is not an object is wrapped the way the SDK wraps a function's value.
    assert_eq!(
        results[2]["functionResponse"]["response"],
        json!({"result": "7"})
    );
    assert_eq!(results[2]["functionResponse"]["id"], "call_9");
}

fn frames(events: &[SseEvent]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut out: Vec<SseEvent> = events
        .iter()
        .flat_map(|e| parser.push(&encode(e)))
        .collect();
    out.extend(parser.finish());
    out
}

#[test]
fn a_synthesized_stream_assembles_back_and_keeps_parts_whole() {
    let ask = json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "Checking."},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2lnLWE+Pz8/Pj4="}
        ]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 4, "totalTokenCount": 9},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "r1"
    });
    let events = synthesize(&ask);
    assert_eq!(events.len(), 2, "one chunk per part");
    for e in &events {
        assert!(e.event.is_none() && e.id.is_none());
        let wire = String::from_utf8(encode(e).to_vec()).unwrap();
        assert!(
            wire.starts_with("data: {")
                && wire.ends_with("}\n\n")
                && wire.matches('\n').count() == 2
        );
        let chunk: Value = serde_json::from_str(&e.data).unwrap();
        assert_eq!(chunk["responseId"], "r1");
    }
    let first: Value = serde_json::from_str(&events[0].data).unwrap();
    assert!(first["candidates"][0].get("finishReason").is_none());
    assert_eq!(assemble(&frames(&events)).unwrap(), ask);
    assert_eq!(Gemini.synthesize(&json!({}), &json!({})).len(), 1);
}

#[test]
fn assembling_joins_text_and_refuses_broken_streams() {
    let chunk = |parts: Value, finish: Option<&str>| {
        let mut c = json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
                           "modelVersion": "gemini-2.5-flash", "responseId": "r"});
        if let Some(f) = finish {
            c["candidates"][0]["finishReason"] = json!(f);
            c["usageMetadata"] = json!({"promptTokenCount": 3, "candidatesTokenCount": 3});
        }
        SseEvent {
            event: None,
            id: None,
            data: c.to_string(),
        }
    };
    let events = vec![
        chunk(json!([{"text": "Hel"}]), None),
        chunk(json!([{"text": "lo"}]), None),
        chunk(
            json!([{"text": "!", "thoughtSignature": "c2ln"}]),
            Some("STOP"),
        ),
    ];
    let whole = assemble(&events).unwrap();
    assert_eq!(
        whole["candidates"][0]["content"]["parts"],
        json!([{"text": "Hello!", "thoughtSignature": "c2ln"}])
    );
    assert_eq!(whole["candidates"][0]["finishReason"], "STOP");
    assert_eq!(whole["usageMetadata"]["promptTokenCount"], 3);

    let cut = assemble(&events[..2]).unwrap_err().to_string();
    assert!(cut.contains("without `finishReason`"), "{cut}");
    let error = SseEvent {
        event: None,
        id: None,
        data: json!({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}})
            .to_string(),
    };
    let failed = assemble(&[events[0].clone(), error])
        .unwrap_err()
        .to_string();
    assert!(failed.contains("overloaded"), "{failed}");
    assert!(assemble(&[]).is_err());
}

#[test]
fn envelope_names_contents_roles_parts_and_functions() {
    let env = envelope(&request());
    assert_eq!(env[0], ("content count", "3".to_owned()));
    assert_eq!(env[1], ("roles", "[user, model, user]".to_owned()));
    assert!(
        env[2].1.starts_with("[text, functionCall:get_weather,"),
        "{:?}",
        env[2]
    );
    assert_eq!(env[3], ("functions", "[get_weather, add]".to_owned()));
}

#[test]
fn paths() {
    assert_eq!(
        model_of("/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
        Some("models/gemini-2.5-flash")
    );
    assert_eq!(model_of("/v1/models/a/b:generateContent"), None);
    assert!(wants_sse(
        "/v1/models/g:streamGenerateContent?key=x&alt=sse"
    ));
    assert!(!wants_sse("/v1/models/g:generateContent?alt=sse"));
}

#[test]
fn an_openapi_declaration_can_be_broken_and_fuzzed_as_json_schema() {
    let request = json!({
        "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
        "tools": [{"functionDeclarations": [{"name": "get_weather", "parameters": {
            "type": "OBJECT",
            "properties": {"city": {"type": "STRING"}, "unit": {"type": "STRING", "enum": ["C", "F"]}},
            "required": ["city"]
        }}]}]
    });
    let call = extract(&request, &response());
    let schema = &call.tools[0].parameters;
    let validator = jsonschema::validator_for(schema).unwrap();
    let args = json!({"city": "Paris", "unit": "C"});
    assert!(validator.is_valid(&args));
    let (way, broken) = crate::fuzz::near_miss(schema, &args, None).unwrap();
    assert_eq!(way, crate::fuzz::Way::MissingRequired);
    assert!(!validator.is_valid(&broken), "{broken}");
    let runs = crate::fuzz::runs(schema, 3, 3, 1).unwrap();
    assert_eq!(runs.len(), 6);
}
