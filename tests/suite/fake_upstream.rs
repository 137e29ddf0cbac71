//! Tests of the fake OpenAI upstream itself (`tests/support/fake_openai.rs`), through a
//! plain hyper client, so a failing proxy test can be trusted to be the proxy's fault.

use crate::support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::HeaderMap;
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
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

    /// The `data:` payloads of a server-sent event stream.
    fn events(&self) -> Vec<String> {
        let text = String::from_utf8(self.frames.concat()).expect("a UTF-8 stream");
        text.split_terminator("\n\n")
            .map(|event| {
                event
                    .strip_prefix("data: ")
                    .expect("every event is one data line")
                    .to_owned()
            })
            .collect()
    }
}

async fn send(fake: &FakeOpenAi, method: Method, path: &str, body: &str) -> Answer {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = Request::builder()
        .method(method)
        .uri(format!("{}{path}", fake.url()))
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-test")
        .body(Full::new(Bytes::from(body.to_owned())))
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

fn weather_tools(extra: &[&str]) -> Value {
    let mut names = vec!["get_weather"];
    names.extend_from_slice(extra);
    names
        .iter()
        .map(|name| json!({"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}))
        .collect()
}

#[tokio::test]
async fn tool_call_then_tool_result_then_reply() {
    let fake = FakeOpenAi::start().await;
    let mut messages = vec![json!({"role": "user", "content": "What's the weather in Paris?"})];
    let ask = json!({"model": "gpt-4o-mini", "messages": messages, "tools": weather_tools(&[])});
    let first = send(
        &fake,
        Method::POST,
        "/v1/chat/completions",
        &ask.to_string(),
    )
    .await;
    assert_eq!(first.status, StatusCode::OK);
    let first = first.json();
    assert_eq!(first["model"], "gpt-4o-mini");
    assert_eq!(first["choices"][0]["finish_reason"], "tool_calls");
    let call = &first["choices"][0]["message"]["tool_calls"][0];
    assert!(call["id"].as_str().unwrap().starts_with("call_"));
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "Paris", "unit": "celsius"}));

    messages.push(first["choices"][0]["message"].clone());
    messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": r#"{"temp_c":18,"sky":"sunny"}"#}));
    let follow_up =
        json!({"model": "gpt-4o-mini", "messages": messages, "tools": weather_tools(&[])});
    let second = send(
        &fake,
        Method::POST,
        "/v1/chat/completions",
        &follow_up.to_string(),
    )
    .await
    .json();
    assert_eq!(
        second["choices"][0]["message"]["content"],
        "It is 18°C and sunny in Paris."
    );
    assert_eq!(second["choices"][0]["finish_reason"], "stop");
    assert!(second["usage"]["total_tokens"].as_u64().unwrap() > 0);
    assert_eq!(second["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

    let log = fake.requests();
    assert_eq!(log.len(), 2);
    assert_eq!(
        (log[0].method.as_str(), log[0].path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(log[0].json.as_ref(), Some(&ask));
    assert_eq!(log[0].header("authorization"), Some("Bearer sk-test"));
}

#[tokio::test]
async fn streamed_parallel_tool_calls_reassemble_to_valid_json() {
    let fake = FakeOpenAi::start().await;
    let ask = json!({
        "model": "gpt-4o-mini", "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "Weather in Paris and Tokyo?"}],
        "tools": weather_tools(&["get_time"]),
    });
    let answer = send(
        &fake,
        Method::POST,
        "/v1/chat/completions",
        &ask.to_string(),
    )
    .await;
    assert_eq!(
        answer.headers["content-type"],
        "text/event-stream; charset=utf-8"
    );
    assert!(
        answer.headers.get("content-length").is_none(),
        "a stream is chunked"
    );
    let events = answer.events();
    // Each event was flushed as its own chunk; hyper never merges two chunks into a frame.
    assert!(answer.frames.len() >= events.len());
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));

    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert!(usage["usage"]["total_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
        "tool_calls"
    );

    // Reassemble the way SDKs do: per `index`, the first fragment names the call.
    let mut calls: Vec<(String, String, usize)> = Vec::new(); // (name, arguments, fragments)
    for delta in chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].as_array())
        .flatten()
    {
        let index = delta["index"].as_u64().unwrap() as usize;
        if let Some(name) = delta["function"]["name"].as_str() {
            assert!(delta["id"].as_str().unwrap().starts_with("call_"));
            assert_eq!(index, calls.len());
            calls.push((name.to_owned(), String::new(), 0));
        }
        let call = &mut calls[index];
        call.1 += delta["function"]["arguments"].as_str().unwrap();
        call.2 += 1;
    }
    let cities: Vec<Value> = calls
        .iter()
        .map(|(name, arguments, fragments)| {
            assert_eq!(name, "get_weather");
            assert!(*fragments > 5, "arguments arrive in many fragments");
            serde_json::from_str::<Value>(arguments).expect("fragments reassemble to JSON")["city"]
                .clone()
        })
        .collect();
    assert_eq!(cities, [json!("Paris"), json!("Tokyo")]);
}

#[tokio::test]
async fn streamed_text_is_spread_over_the_latency() {
    let fake = FakeOpenAi::start().await;
    fake.set_latency(Duration::from_millis(300));
    let ask = json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hello there"}]});
    let started = Instant::now();
    let answer = send(
        &fake,
        Method::POST,
        "/v1/chat/completions",
        &ask.to_string(),
    )
    .await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    let events = answer.events();
    let text: String = events[..events.len() - 1]
        .iter()
        .map(|e| {
            serde_json::from_str::<Value>(e).unwrap()["choices"][0]["delta"]["content"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(text, "You said: hello there");
    assert!(
        events.iter().all(|e| !e.contains("\"usage\"")),
        "no usage unless include_usage"
    );
}

#[tokio::test]
async fn volatile_values_are_fresh_on_every_call() {
    let fake = FakeOpenAi::start().await;
    let ask = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let one = send(&fake, Method::POST, "/v1/chat/completions", &ask).await;
    let two = send(&fake, Method::POST, "/v1/chat/completions", &ask).await;
    assert_ne!(one.headers["x-request-id"], two.headers["x-request-id"]);
    let (one, two) = (one.json(), two.json());
    assert!(one["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_ne!(one["id"], two["id"]);
    assert_ne!(one["system_fingerprint"], two["system_fingerprint"]);
    assert_eq!(one["choices"], two["choices"]);
}

#[tokio::test]
async fn fail_next_answers_model_calls_in_openai_error_shape() {
    let fake = FakeOpenAi::start().await;
    fake.fail_next(429, 2);
    let ask = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    // The model list is not a model call: it does not use up an injected failure.
    assert_eq!(
        send(&fake, Method::GET, "/v1/models", "").await.status,
        StatusCode::OK
    );
    for _ in 0..2 {
        let failed = send(&fake, Method::POST, "/v1/chat/completions", &ask).await;
        assert_eq!(failed.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(failed.headers["retry-after"], "1");
        let error = &failed.json()["error"];
        assert_eq!(
            (&error["type"], &error["code"]),
            (&json!("requests"), &json!("rate_limit_exceeded"))
        );
        assert!(error["message"].is_string() && error["param"].is_null());
    }
    assert_eq!(
        send(&fake, Method::POST, "/v1/chat/completions", &ask)
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(fake.request_count(), 4);
}

#[tokio::test]
async fn gzip_and_embeddings_and_error_paths() {
    let fake = FakeOpenAi::start().await;
    fake.set_gzip(true);
    let ask = json!({"model": "text-embedding-3-small", "input": ["a", "b"], "encoding_format": "base64"});
    let answer = send(&fake, Method::POST, "/v1/embeddings", &ask.to_string()).await;
    assert_eq!(answer.headers["content-encoding"], "gzip");
    let mut plain = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(&answer.frames.concat()[..]),
        &mut plain,
    )
    .unwrap();
    let body: Value = serde_json::from_slice(&plain).unwrap();
    // 8 little-endian f32s are 32 bytes: 44 base64 characters.
    assert_eq!(body["data"][1]["embedding"].as_str().unwrap().len(), 44);

    fake.set_gzip(false);
    let ask = json!({"model": "text-embedding-3-small", "input": "a", "dimensions": 4});
    let floats = send(&fake, Method::POST, "/v1/embeddings", &ask.to_string())
        .await
        .json();
    assert_eq!(floats["data"][0]["embedding"].as_array().unwrap().len(), 4);

    let malformed = send(&fake, Method::POST, "/v1/chat/completions", "{not json").await;
    assert_eq!(malformed.status, StatusCode::BAD_REQUEST);
    assert_eq!(malformed.json()["error"]["type"], "invalid_request_error");
    let unknown = send(&fake, Method::GET, "/v1/nope", "").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(
        unknown.json()["error"]["message"],
        "Invalid URL (GET /v1/nope)"
    );
}

#[tokio::test]
async fn stop_refuses_later_connections() {
    let fake = FakeOpenAi::start().await;
    let addr = fake.url().trim_start_matches("http://").to_owned();
    assert!(tokio::net::TcpStream::connect(&addr).await.is_ok());
    fake.stop().await;
    let refused = tokio::net::TcpStream::connect(&addr)
        .await
        .expect_err("the listener is closed");
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
}
