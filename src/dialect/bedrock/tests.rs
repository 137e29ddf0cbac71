use std::collections::HashMap;

use serde_json::{json, Value};

use super::*;
use crate::dialect::Route;
use crate::sse::{Framing, SseEvent};

fn request() -> Value {
    json!({
        "system": [{"text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tu1", "name": "get_weather", "input": {"city": "Paris"}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "tu1", "content": [{"text": "18C"}], "status": "success"}}]}
        ],
        "toolConfig": {"tools": [{"toolSpec": {"name": "get_weather", "description": "d", "inputSchema": {"json": {"type": "object"}}}}]},
        "inferenceConfig": {"maxTokens": 100}
    })
}

fn answer() -> Value {
    json!({
        "output": {"message": {"role": "assistant", "content": [
            {"text": "It is 18C in Paris."},
            {"toolUse": {"toolUseId": "tu2", "name": "get_time", "input": {"city": "Paris"}}}
        ]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 30, "outputTokens": 9, "totalTokens": 39, "cacheReadInputTokens": 4},
        "metrics": {"latencyMs": 120}
    })
}

#[test]
fn paths_name_the_operation_and_model_and_the_route() {
    assert_eq!(
        operation("/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream"),
        Some((
            Operation::ConverseStream,
            "anthropic.claude-3-haiku-20240307-v1%3A0"
        ))
    );
    assert_eq!(
        operation("/model/m/invoke?x=1"),
        Some((Operation::Invoke, "m"))
    );
    assert_eq!(operation("/model//converse"), None);
    assert_eq!(operation("/model/a/b/converse"), None);
    assert_eq!(operation("/model/m/other"), None);
    let post = http::Method::POST;
    assert_eq!(
        Route::of(&post, "/model/m/converse"),
        Route::BedrockConverse
    );
    assert_eq!(
        Route::of(&post, "/model/m/invoke-with-response-stream"),
        Route::BedrockInvoke
    );
    assert!(Route::BedrockConverse.wants_stream("/model/m/converse-stream", &json!({})));
    assert!(!Route::BedrockConverse.wants_stream("/model/m/converse", &json!({"stream": true})));
    assert_eq!(Route::BedrockInvoke.framing(), Framing::EventStream);
    assert_eq!(
        Route::BedrockConverse
            .key_scope("/model/m/converse")
            .as_deref(),
        Some("model m")
    );
}

#[test]
fn a_converse_exchange_is_a_neutral_call_with_its_tools_results_and_usage() {
    let call = extract(&request(), &answer());
    assert_eq!(call.route, "bedrock.converse");
    assert_eq!(call.system.as_deref(), Some("Be brief."));
    assert_eq!(call.tools[0].name, "get_weather");
    assert_eq!(call.tools[0].parameters, json!({"type": "object"}));
    assert_eq!(call.message_count, 3);
    assert_eq!(call.tool_results[0].name.as_deref(), Some("get_weather"));
    assert_eq!(call.tool_calls[0].name, "get_time");
    assert_eq!(call.tool_calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(call.reply.as_deref(), Some("It is 18C in Paris."));
    assert_eq!(
        (
            call.usage.prompt,
            call.usage.completion,
            call.usage.cache_read
        ),
        (34, 9, 4)
    );
    assert_eq!(call.params["inferenceConfig"], json!({"maxTokens": 100}));
    let mut out = Vec::new();
    for m in array(&request(), "messages") {
        Converse.messages(m, &HashMap::new(), &mut out);
    }
    assert_eq!(out.len(), 3, "{out:?}");
}

#[test]
fn a_synthesized_stream_assembles_back_to_its_answer_through_the_wire() {
    let events = stream::synthesize(&answer());
    let wire: Vec<u8> = (events.iter())
        .flat_map(|e| Framing::EventStream.encode(e).to_vec())
        .collect();
    let mut parser = Framing::EventStream.parser();
    let read = parser.push(&wire);
    assert_eq!(read, events);
    let back = stream::assemble(&read).unwrap();
    assert_eq!(back["output"], answer()["output"]);
    assert_eq!(back["stopReason"], "tool_use");
    assert_eq!(back["usage"], answer()["usage"]);
}

#[test]
fn an_exception_frame_or_a_missing_stop_is_no_whole_answer() {
    let mut events = stream::synthesize(&answer());
    events.pop();
    events.pop();
    assert!(matches!(
        stream::assemble(&events),
        Err(AssembleError::Incomplete { .. })
    ));
    events.push(stream_exception());
    let err = stream::assemble(&events).unwrap_err().to_string();
    assert!(err.contains("modelStreamErrorException"), "{err}");
}

#[test]
fn invoke_streams_are_anthropic_events_in_chunk_frames() {
    let message = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-3-haiku",
        "content": [{"type": "text", "text": "Hello there"}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 5, "output_tokens": 2}
    });
    let events = Invoke.synthesize(&message, &json!({}));
    assert!(events.iter().all(|e| e.event.as_deref() == Some("chunk")));
    let first: Value = serde_json::from_str(&events[0].data).unwrap();
    assert!(first["bytes"].is_string());
    let back = Invoke.assemble(&events).unwrap();
    assert_eq!(back["content"], message["content"]);
    let call = Invoke.extract(
        &json!({"messages": [{"role": "user", "content": "hi"}]}),
        &back,
    );
    assert_eq!(
        (call.route.as_str(), call.model.as_str()),
        ("bedrock.invoke", "claude-3-haiku")
    );
    let broken = [SseEvent {
        event: Some("chunk".into()),
        id: None,
        data: "{}".into(),
    }];
    assert!(Invoke.assemble(&broken).is_err());
}

#[test]
fn mocks_replace_tool_results_and_faults_speak_aws() {
    let mut req = request();
    let n = Converse.rewrite_tool_results(&mut req, &|_| None, &mut |call, _| {
        (call.name == "get_weather").then(|| json!("mocked"))
    });
    assert_eq!(n, 1);
    let result = &req["messages"][2]["content"][0]["toolResult"];
    assert_eq!(result["content"], json!([{"text": "mocked"}]));
    assert!(result.get("status").is_none());
    let (status, body) = Converse.fault_error(ErrorFault::RateLimit);
    assert_eq!(
        (status, body["__type"].as_str()),
        (429, Some("ThrottlingException"))
    );
    assert_eq!(
        crate::dialect::error_message(&body),
        body["message"].as_str()
    );
    let mut spoiled = answer();
    Converse.spoil_tool_call(&mut spoiled, 0, &Spoil::Name("nope".into()));
    assert_eq!(
        spoiled["output"]["message"]["content"][1]["toolUse"]["name"],
        "nope"
    );
}
