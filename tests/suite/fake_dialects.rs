//! Tests of the fake upstreams for the Responses API (`tests/support/fake_openai_responses.rs`,
//! served by the fake OpenAI server) and the Anthropic Messages API
//! (`tests/support/fake_anthropic.rs`), through a plain hyper client, so a failing proxy or
//! SDK test can be trusted to be the proxy's fault.

use crate::support;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::HeaderMap;
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use support::fake_anthropic::FakeAnthropic;
use support::fake_openai::FakeOpenAi;

/// An answer with its body frames kept apart, to check how a stream was chunked.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    frames: Vec<Bytes>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.frames.concat()).expect("a JSON body")
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `(event name, data)` of each server-sent event; every event must name itself and
    /// carry its name as the data's `type`, and be its own HTTP chunk.
    fn events(&self) -> Vec<(String, Value)> {
        self.frames
            .iter()
            .map(|frame| {
                let text = std::str::from_utf8(frame).expect("a UTF-8 event");
                let rest = text.strip_suffix("\n\n").expect("one event per chunk");
                let (name, data) = rest
                    .strip_prefix("event: ")
                    .and_then(|r| r.split_once("\ndata: "))
                    .unwrap_or_else(|| panic!("not an `event:` + `data:` event: {text:?}"));
                let data: Value = serde_json::from_str(data).expect("JSON data");
                assert_eq!(data["type"], name, "the event name repeats the type");
                (name.to_owned(), data)
            })
            .collect()
    }
}

async fn send(base: &str, path: &str, headers: &[(&str, &str)], body: &Value) -> Answer {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(format!("{base}{path}"))
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a valid request");
    let response = client.request(request).await.expect("the fake answers");
    let (parts, mut body) = response.into_parts();
    let mut frames = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.expect("a body frame").into_data() {
            frames.push(data);
        }
    }
    Answer {
        status: parts.status,
        headers: parts.headers,
        frames,
    }
}

// ---------------------------------------------------------------------------------------
// Responses API

const OPENAI_AUTH: [(&str, &str); 1] = [("authorization", "Bearer sk-test")];

async fn responses(fake: &FakeOpenAi, body: &Value) -> Answer {
    send(&fake.url(), "/v1/responses", &OPENAI_AUTH, body).await
}

fn responses_tools() -> Value {
    json!([
        {"type": "function", "name": "get_weather", "description": "Weather in a city.",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
        {"type": "function", "name": "get_time",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
    ])
}

fn function_calls(response: &Value) -> Vec<Value> {
    response["output"]
        .as_array()
        .expect("output items")
        .iter()
        .filter(|i| i["type"] == "function_call")
        .cloned()
        .collect()
}

#[tokio::test]
async fn responses_call_a_tool_then_describe_its_output_through_previous_response_id() {
    let fake = FakeOpenAi::start().await;
    let ask = json!({"model": "gpt-4o-mini", "instructions": "Be brief.",
                     "input": "What's the weather in Paris?", "tools": responses_tools()});
    let first = responses(&fake, &ask).await;
    assert_eq!(first.status, StatusCode::OK);
    let first = first.json();
    assert_eq!(first["object"], "response");
    assert_eq!(first["status"], "completed");
    assert_eq!(first["instructions"], "Be brief.");
    assert_eq!(
        first["tools"][0]["strict"], true,
        "tools are echoed, normalised"
    );
    assert!(first["id"].as_str().unwrap().starts_with("resp_"));
    let calls = function_calls(&first);
    assert_eq!(calls.len(), 1, "{first:#}");
    let call = &calls[0];
    assert_eq!(call["name"], "get_weather");
    assert_eq!(call["status"], "completed");
    assert!(call["id"].as_str().unwrap().starts_with("fc_"));
    assert!(call["call_id"].as_str().unwrap().starts_with("call_"));
    let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Paris", "unit": "celsius"}));
    assert!(first["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        first["usage"]["total_tokens"].as_u64(),
        Some(
            first["usage"]["input_tokens"].as_u64().unwrap()
                + first["usage"]["output_tokens"].as_u64().unwrap()
        )
    );

    // The same question again: same content, fresh ids.
    let again = responses(&fake, &ask).await.json();
    let again_call = &function_calls(&again)[0];
    assert_ne!(again["id"], first["id"]);
    assert_ne!(again_call["id"], call["id"]);
    assert_ne!(again_call["call_id"], call["call_id"]);
    assert_eq!(again_call["arguments"], call["arguments"]);

    let follow_up = json!({
        "model": "gpt-4o-mini", "previous_response_id": first["id"], "tools": responses_tools(),
        "input": [{"type": "function_call_output", "call_id": call["call_id"],
                   "output": r#"{"city": "Paris", "temp_c": 18, "sky": "sunny"}"#}],
    });
    let reply = responses(&fake, &follow_up).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json());
    let reply = reply.json();
    assert_eq!(reply["previous_response_id"], first["id"]);
    let message = &reply["output"][0];
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert!(message["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(
        message["content"][0],
        json!({"type": "output_text", "annotations": [], "logprobs": [],
               "text": "It is 18°C and sunny in Paris."})
    );

    // The whole history in `input` instead of previous_response_id, as the Agents SDK
    // sends it: function_call items echoed with their id and status.
    let manual = json!({
        "model": "gpt-4o-mini", "tools": responses_tools(),
        "input": [{"role": "user", "content": "What's the weather in Paris?"}, call,
                  {"type": "function_call_output", "call_id": call["call_id"],
                   "output": r#"{"temp_c": 18, "sky": "sunny"}"#}],
    });
    let manual = responses(&fake, &manual).await.json();
    assert_eq!(
        manual["output"][0]["content"][0]["text"],
        "It is 18°C and sunny in Paris."
    );
    assert_eq!(fake.request_count(), 4);
    assert!(fake
        .requests()
        .iter()
        .all(|r| r.path == "/v1/responses" && r.method == "POST"));
    fake.stop().await;
}

#[tokio::test]
async fn responses_without_tools_echo_and_string_input_is_a_user_message() {
    let fake = FakeOpenAi::start().await;
    let answer = responses(
        &fake,
        &json!({"model": "gpt-4o-mini", "input": "Hello there"}),
    )
    .await;
    let body = answer.json();
    assert_eq!(
        body["output"][0]["content"][0]["text"],
        "You said: Hello there"
    );
    assert!(answer.header("x-request-id").is_some());
    fake.stop().await;
}

#[tokio::test]
async fn responses_stream_is_the_typed_event_sequence() {
    let fake = FakeOpenAi::start().await;
    let ask = json!({"model": "gpt-4o-mini", "stream": true, "tools": responses_tools(),
                     "input": "What's the weather in Paris and the time in Tokyo?"});
    let answer = responses(&fake, &ask).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer
        .header("content-type")
        .unwrap()
        .starts_with("text/event-stream"));
    assert!(
        answer.header("content-length").is_none(),
        "streams are chunked"
    );
    let events = answer.events();
    for (i, (_, data)) in events.iter().enumerate() {
        assert_eq!(data["sequence_number"], i, "sequence numbers count from 0");
    }
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..2], ["response.created", "response.in_progress"]);
    assert_eq!(names.last(), Some(&"response.completed"));
    assert_eq!(events[0].1["response"]["status"], "in_progress");
    assert_eq!(events[0].1["response"]["output"], json!([]));

    let completed = &events.last().unwrap().1["response"];
    let calls = function_calls(completed);
    assert_eq!(calls.len(), 2, "two parallel calls: {completed:#}");
    assert_eq!(calls[0]["name"], "get_weather");
    assert_eq!(calls[1]["name"], "get_time");
    for (index, call) in calls.iter().enumerate() {
        let of_item = |name: &str| -> Vec<&Value> {
            events
                .iter()
                .filter(|(n, d)| n == name && d["output_index"] == index)
                .map(|(_, d)| d)
                .collect()
        };
        let added = of_item("response.output_item.added");
        assert_eq!(added.len(), 1);
        assert_eq!(added[0]["item"]["arguments"], "");
        assert_eq!(added[0]["item"]["status"], "in_progress");
        assert_eq!(added[0]["item"]["call_id"], call["call_id"]);
        let deltas = of_item("response.function_call_arguments.delta");
        assert!(deltas.len() >= 3, "arguments split across events");
        assert!(deltas.iter().all(|d| d["item_id"] == call["id"]));
        assert!(deltas.iter().all(|d| d["obfuscation"].is_string()));
        let joined: String = deltas
            .iter()
            .map(|d| d["delta"].as_str().unwrap())
            .collect();
        assert_eq!(joined, call["arguments"].as_str().unwrap());
        assert_eq!(
            of_item("response.function_call_arguments.done")[0]["arguments"],
            call["arguments"]
        );
        assert_eq!(of_item("response.output_item.done")[0]["item"], *call);
    }
    assert!(completed["usage"]["output_tokens"].as_u64().unwrap() > 0);
    let text = String::from_utf8(answer.frames.concat()).unwrap();
    assert!(
        !text.contains("[DONE]"),
        "the Responses API sends no [DONE]"
    );

    // A streamed reply: text deltas rebuild the text of the completed message.
    let follow_up = json!({
        "model": "gpt-4o-mini", "stream": true, "previous_response_id": completed["id"],
        "input": calls.iter().map(|c| json!({"type": "function_call_output", "call_id": c["call_id"],
            "output": if c["name"] == "get_weather" { r#"{"temp_c": 18, "sky": "sunny"}"# } else { r#"{"time": "09:00"}"# }}))
            .collect::<Vec<_>>(),
    });
    let events = responses(&fake, &follow_up).await.events();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names[2..5],
        [
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta"
        ]
    );
    let deltas: String = events
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    let completed = &events.last().unwrap().1["response"];
    assert_eq!(
        deltas,
        "It is 18°C and sunny in Paris. It is 09:00 in Tokyo."
    );
    assert_eq!(completed["output"][0]["content"][0]["text"], deltas);
    fake.stop().await;
}

#[tokio::test]
async fn responses_errors_are_in_openai_shape() {
    let fake = FakeOpenAi::start().await;
    let unknown = responses(
        &fake,
        &json!({"model": "gpt-4o-mini", "previous_response_id": "resp_nope", "input": "hi"}),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    let error = &unknown.json()["error"];
    assert_eq!(error["type"], "invalid_request_error");
    assert_eq!(error["code"], "previous_response_not_found");
    assert_eq!(error["param"], "previous_response_id");
    assert_eq!(
        error["message"],
        "Previous response with id 'resp_nope' not found."
    );

    // A follow-up that answers a call nobody made, or leaves a call unanswered.
    let first = responses(
        &fake,
        &json!({"model": "gpt-4o-mini", "input": "Weather in Paris?", "tools": responses_tools()}),
    )
    .await
    .json();
    let wrong_id = json!({"model": "gpt-4o-mini", "previous_response_id": first["id"],
        "input": [{"type": "function_call_output", "call_id": "call_wrong", "output": "x"}]});
    let answer = responses(&fake, &wrong_id).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("call_wrong"));
    let unanswered = json!({"model": "gpt-4o-mini", "previous_response_id": first["id"],
                            "input": "never mind"});
    let answer = responses(&fake, &unanswered).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.json()["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("No tool output found for function call call_"));

    let missing = responses(&fake, &json!({"input": "hi"})).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(missing.json()["error"]["param"], "model");

    // `store: false`: nothing to continue from.
    let unstored = responses(
        &fake,
        &json!({"model": "gpt-4o-mini", "input": "hi", "store": false}),
    )
    .await
    .json();
    let answer = responses(
        &fake,
        &json!({"model": "gpt-4o-mini", "input": "again", "previous_response_id": unstored["id"]}),
    )
    .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);

    fake.fail_next(429, 1);
    let limited = responses(&fake, &json!({"model": "gpt-4o-mini", "input": "hi"})).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(limited.header("retry-after"), Some("1"));
    assert_eq!(limited.json()["error"]["code"], "rate_limit_exceeded");
    let ok = responses(&fake, &json!({"model": "gpt-4o-mini", "input": "hi"})).await;
    assert_eq!(ok.status, StatusCode::OK);
    fake.stop().await;
}

// ---------------------------------------------------------------------------------------
// Anthropic Messages API

const ANTHROPIC_HEADERS: [(&str, &str); 2] = [
    ("x-api-key", "sk-ant-test"),
    ("anthropic-version", "2023-06-01"),
];

async fn messages(fake: &FakeAnthropic, body: &Value) -> Answer {
    send(&fake.url(), "/v1/messages", &ANTHROPIC_HEADERS, body).await
}

fn anthropic_tools() -> Value {
    json!([
        {"name": "get_weather", "description": "Weather in a city.",
         "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
        {"name": "get_time", "description": "Local time in a city.",
         "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
    ])
}

fn tool_uses(message: &Value) -> Vec<Value> {
    message["content"]
        .as_array()
        .expect("content blocks")
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .cloned()
        .collect()
}

#[tokio::test]
async fn anthropic_calls_a_tool_then_describes_its_result() {
    let fake = FakeAnthropic::start().await;
    let question = json!({"role": "user", "content": "What's the weather in Paris?"});
    let ask = json!({"model": "claude-sonnet-5", "max_tokens": 1024, "system": "Be brief.",
                     "messages": [question], "tools": anthropic_tools()});
    let answer = messages(&fake, &ask).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.header("request-id").unwrap().starts_with("req_"));
    let first = answer.json();
    assert_eq!(first["type"], "message");
    assert_eq!(first["role"], "assistant");
    assert_eq!(first["stop_reason"], "tool_use");
    assert!(first["id"].as_str().unwrap().starts_with("msg_01"));
    assert_eq!(
        first["content"][0]["type"], "text",
        "a sentence before the call"
    );
    let uses = tool_uses(&first);
    assert_eq!(uses.len(), 1);
    assert_eq!(uses[0]["name"], "get_weather");
    assert_eq!(
        uses[0]["input"],
        json!({"city": "Paris", "unit": "celsius"})
    );
    assert!(uses[0]["id"].as_str().unwrap().starts_with("toolu_01"));
    assert!(first["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert!(first["usage"]["output_tokens"].as_u64().unwrap() > 0);

    let again = messages(&fake, &ask).await.json();
    assert_ne!(again["id"], first["id"], "fresh ids on every call");
    assert_ne!(tool_uses(&again)[0]["id"], uses[0]["id"]);

    let follow_up = json!({
        "model": "claude-sonnet-5", "max_tokens": 1024, "tools": anthropic_tools(),
        "messages": [question, {"role": "assistant", "content": first["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0]["id"],
                "content": r#"{"city": "Paris", "temp_c": 18, "sky": "sunny"}"#}]}],
    });
    let reply = messages(&fake, &follow_up).await.json();
    assert_eq!(reply["stop_reason"], "end_turn");
    assert_eq!(
        reply["content"],
        json!([{"type": "text", "text": "It is 18°C and sunny in Paris."}])
    );

    // Tool result content as text blocks works too.
    let mut blocks = follow_up.clone();
    blocks["messages"][2]["content"][0]["content"] =
        json!([{"type": "text", "text": r#"{"temp_c": 18, "sky": "sunny"}"#}]);
    let reply = messages(&fake, &blocks).await.json();
    assert_eq!(
        reply["content"][0]["text"],
        "It is 18°C and sunny in Paris."
    );
    assert_eq!(fake.request_count(), 4);
    let logged = &fake.requests()[0];
    assert_eq!(logged.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(logged.json.as_ref(), Some(&ask));
    fake.stop().await;
}

#[tokio::test]
async fn anthropic_stream_is_the_real_event_sequence() {
    let fake = FakeAnthropic::start().await;
    let ask = json!({"model": "claude-sonnet-5", "max_tokens": 1024, "stream": true,
                     "tools": anthropic_tools(),
                     "messages": [{"role": "user", "content": "What's the weather in Paris and Tokyo?"}]});
    let answer = messages(&fake, &ask).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer
        .header("content-type")
        .unwrap()
        .starts_with("text/event-stream"));
    let events = answer.events();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names[..4],
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta"
        ]
    );
    assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);
    let start = &events[0].1["message"];
    assert_eq!(start["content"], json!([]));
    assert_eq!(start["stop_reason"], Value::Null);

    // Rebuild the message the way the SDKs do, and check the tool input fragments.
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial: Vec<Vec<String>> = Vec::new();
    for (name, data) in &events {
        match name.as_str() {
            "content_block_start" => {
                assert_eq!(data["index"], blocks.len());
                blocks.push(data["content_block"].clone());
                partial.push(Vec::new());
            }
            "content_block_delta" => {
                let i = data["index"].as_u64().unwrap() as usize;
                match data["delta"]["type"].as_str().unwrap() {
                    "text_delta" => {
                        let text = blocks[i]["text"].as_str().unwrap().to_owned();
                        blocks[i]["text"] = json!(text + data["delta"]["text"].as_str().unwrap());
                    }
                    "input_json_delta" => {
                        partial[i].push(data["delta"]["partial_json"].as_str().unwrap().to_owned())
                    }
                    other => panic!("unexpected delta {other}"),
                }
            }
            _ => {}
        }
    }
    let tool_blocks: Vec<usize> = (0..blocks.len())
        .filter(|i| blocks[*i]["type"] == "tool_use")
        .collect();
    assert_eq!(tool_blocks.len(), 2, "two parallel calls");
    for i in tool_blocks {
        assert_eq!(blocks[i]["input"], json!({}), "input starts empty");
        let fragments = &partial[i];
        assert_eq!(
            fragments[0], "",
            "the first fragment is empty, as Claude's is"
        );
        assert!(fragments.len() >= 4, "the input is split: {fragments:?}");
        assert!(
            fragments
                .iter()
                .any(|f| f.contains('"') && !f.starts_with('"') && !f.ends_with('"')),
            "some fragment splits a key or value: {fragments:?}"
        );
        let input: Value = serde_json::from_str(&fragments.concat()).unwrap();
        assert_eq!(input["unit"], "celsius");
    }
    let delta = &events[events.len() - 2].1;
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert!(delta["usage"]["output_tokens"].as_u64().unwrap() > 1);
    fake.stop().await;
}

#[tokio::test]
async fn anthropic_errors_are_in_anthropic_shape() {
    let fake = FakeAnthropic::start().await;
    let ask = json!({"model": "claude-sonnet-5", "max_tokens": 64,
                     "messages": [{"role": "user", "content": "Hi"}]});
    let url = fake.url();

    let no_key = send(
        &url,
        "/v1/messages",
        &[("anthropic-version", "2023-06-01")],
        &ask,
    )
    .await;
    assert_eq!(no_key.status, StatusCode::UNAUTHORIZED);
    let body = no_key.json();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "authentication_error");
    assert_eq!(body["request_id"], no_key.header("request-id").unwrap());

    let bearer = send(
        &url,
        "/v1/messages",
        &[
            ("authorization", "Bearer sk-ant-test"),
            ("anthropic-version", "2023-06-01"),
        ],
        &ask,
    )
    .await;
    assert_eq!(
        bearer.status,
        StatusCode::OK,
        "recent SDKs send a bearer token"
    );

    let no_version = send(&url, "/v1/messages", &[("x-api-key", "k")], &ask).await;
    assert_eq!(no_version.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        no_version.json()["error"]["message"],
        "anthropic-version: header is required"
    );

    let no_max = messages(
        &fake,
        &json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(no_max.status, StatusCode::BAD_REQUEST);
    assert_eq!(no_max.json()["error"]["type"], "invalid_request_error");

    let unknown = send(&url, "/v1/complete", &ANTHROPIC_HEADERS, &ask).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.json()["error"]["type"], "not_found_error");

    // A tool_result for a tool_use that was not made.
    let orphan = json!({"model": "m", "max_tokens": 64, "messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01a", "name": "get_weather", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01a", "content": "x"},
                                     {"type": "tool_result", "tool_use_id": "toolu_01b", "content": "y"}]}]});
    let answer = messages(&fake, &orphan).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let message = answer.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("unexpected `tool_use_id`") && message.contains("toolu_01b"),
        "{message}"
    );
    // A tool_use left without its tool_result.
    let mut unanswered = orphan.clone();
    unanswered["messages"][2]["content"] = json!("Never mind.");
    let answer = messages(&fake, &unanswered).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let message = answer.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("without `tool_result`") && message.contains("toolu_01a"),
        "{message}"
    );

    fake.fail_next(529, 1);
    let overloaded = messages(&fake, &ask).await;
    assert_eq!(overloaded.status.as_u16(), 529);
    assert_eq!(overloaded.json()["error"]["type"], "overloaded_error");
    fake.fail_next(429, 1);
    let limited = messages(&fake, &ask).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(limited.header("retry-after"), Some("1"));
    assert_eq!(limited.json()["error"]["type"], "rate_limit_error");
    assert_eq!(messages(&fake, &ask).await.status, StatusCode::OK);

    // Overloaded mid-stream: HTTP 200, an `error` event, no message_stop.
    fake.overload_next_streams(1);
    let mut stream = ask.clone();
    stream["stream"] = json!(true);
    let broken = messages(&fake, &stream).await;
    assert_eq!(broken.status, StatusCode::OK);
    let events = broken.events();
    let (last, data) = events.last().unwrap();
    assert_eq!(last, "error");
    assert_eq!(data["error"]["type"], "overloaded_error");
    assert!(events.iter().all(|(n, _)| n != "message_stop"));
    let whole = messages(&fake, &stream).await.events();
    assert_eq!(
        whole.last().unwrap().0,
        "message_stop",
        "only the next stream breaks"
    );
    fake.stop().await;
}

#[tokio::test]
async fn a_stopped_anthropic_fake_refuses_connections() {
    let fake = FakeAnthropic::start().await;
    let url = fake.url();
    fake.stop().await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = Request::builder()
        .method(Method::POST)
        .uri(format!("{url}/v1/messages"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert!(client.request(request).await.is_err());
}
