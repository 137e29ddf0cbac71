use std::collections::HashMap;

use serde_json::json;

use serde_json::Value;

use super::shared::DELTA_CHARS;
use super::*;
use crate::neutral::Message;

#[test]
fn routes() {
    assert_eq!(
        Route::of(&http::Method::POST, "/v1/chat/completions"),
        Route::OpenAiChat
    );
    assert_eq!(
        Route::of(&http::Method::POST, "/api/v1/chat/completions?x=1"),
        Route::OpenAiChat
    );
    assert_eq!(
        Route::of(&http::Method::GET, "/v1/chat/completions"),
        Route::Http
    );
    assert_eq!(Route::of(&http::Method::GET, "/v1/models"), Route::Http);

    let post = |path| Route::of(&http::Method::POST, path);
    assert_eq!(post("/v1/responses"), Route::OpenAiResponses);
    assert_eq!(
        post("/openai/v1/responses?api-version=preview"),
        Route::OpenAiResponses
    );
    assert_eq!(Route::of(&http::Method::GET, "/v1/responses"), Route::Http);
    assert_eq!(
        Route::of(&http::Method::GET, "/v1/responses/resp_1"),
        Route::Http
    );
    assert_eq!(
        Route::of(&http::Method::DELETE, "/v1/responses/resp_1"),
        Route::Http
    );
    assert_eq!(post("/v1/responses/resp_1/cancel"), Route::Http);
    assert_eq!(post("/v1/responses/input_tokens"), Route::Http);
    assert_eq!(
        Route::of(&http::Method::GET, "/v1/responses/resp_1/input_items"),
        Route::Http
    );

    assert_eq!(post("/v1/messages"), Route::AnthropicMessages);
    assert_eq!(post("/v1/messages?beta=true"), Route::AnthropicMessages);
    assert_eq!(post("/v1/messages/count_tokens"), Route::Http);
    assert_eq!(post("/v1/messages/batches"), Route::Http);
    assert_eq!(Route::of(&http::Method::GET, "/v1/messages"), Route::Http);
    // OpenAI Assistants: same last segment, a different API.
    assert_eq!(post("/v1/threads/thread_1/messages"), Route::Http);

    for path in [
        "/v1/models/gemini-2.5-flash:generateContent",
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        "/v1alpha/models/gemini-3-pro:generateContent",
        "/v1beta1/publishers/google/models/gemini-2.5-flash:generateContent",
        "/v1/projects/p/locations/us-central1/publishers/google/models/g:streamGenerateContent",
    ] {
        assert_eq!(post(path), Route::GeminiGenerate, "{path}");
    }
    // OpenAI's model list, and Gemini's other methods, are plain HTTP.
    assert_eq!(Route::of(&http::Method::GET, "/v1/models"), Route::Http);
    assert_eq!(post("/v1/models"), Route::Http);
    assert_eq!(post("/v1beta/models/g:countTokens"), Route::Http);
    assert_eq!(post("/v1beta/models/:generateContent"), Route::Http);
    assert_eq!(
        Route::GeminiGenerate.key_scope("/v1beta/models/gemini-2.5-flash:generateContent?key=k"),
        Some("models/gemini-2.5-flash".to_owned())
    );
    assert_eq!(Route::OpenAiChat.key_scope("/v1/chat/completions"), None);
}

#[test]
fn azure_paths_are_the_openai_dialects_with_the_deployment_in_the_key() {
    let post = |p| Route::of(&http::Method::POST, p);
    let chat = "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21";
    assert_eq!(post(chat), Route::OpenAiChat);
    assert_eq!(post("/openai/v1/chat/completions"), Route::OpenAiChat);
    assert_eq!(
        post("/openai/responses?api-version=2025-04-01-preview"),
        Route::OpenAiResponses
    );
    assert_eq!(post("/openai/v1/responses"), Route::OpenAiResponses);
    assert_eq!(
        post("/openai/deployments/e/embeddings?api-version=1"),
        Route::Http
    );
    // The deployment is part of the match; the api-version is not.
    let scope = Route::OpenAiChat.key_scope(chat);
    assert_eq!(scope.as_deref(), Some("deployment gpt-4o-prod"));
    assert_eq!(
        Route::OpenAiChat
            .key_scope("/openai/deployments/gpt-4o-prod/chat/completions?api-version=2025-01-01"),
        scope
    );
    assert_eq!(
        Route::OpenAiChat.key_scope("/openai/v1/chat/completions"),
        None
    );
    assert_eq!(
        Route::OpenAiResponses.key_scope("/openai/deployments//responses"),
        None
    );
}

#[test]
fn route_names_round_trip() {
    for route in MODEL_ROUTES.into_iter().chain([Route::Http]) {
        assert_eq!(Route::from_name(route.name()), route);
        assert_eq!(route.envelope(&json!({})).is_some(), route != Route::Http);
        assert_eq!(route.requires_json(), route != Route::Http);
    }
    assert_eq!(Route::OpenAiResponses.name(), "openai.responses");
    assert_eq!(Route::AnthropicMessages.name(), "anthropic.messages");
    assert_eq!(Route::GeminiGenerate.name(), "gemini.generate");
    assert_eq!(Route::from_name("anthropic.completions"), Route::Http);
}

#[test]
fn dispatch_reaches_each_dialect() {
    let stream = json!({"stream": true});
    for route in [
        Route::OpenAiChat,
        Route::OpenAiResponses,
        Route::AnthropicMessages,
    ] {
        assert!(route.wants_stream("/v1/x", &stream), "{route:?}");
        assert!(!route.wants_stream("/v1/x", &json!({})), "{route:?}");
        assert_eq!(
            route.extract(&json!({}), &json!({})).map(|c| c.route),
            Some(route.name().to_owned())
        );
    }
    assert!(!Route::Http.wants_stream("", &stream));
    // Gemini asks for a stream in the URL, never in the body.
    let gemini = Route::GeminiGenerate;
    assert!(gemini.wants_stream("/v1/models/g:streamGenerateContent?alt=sse", &json!({})));
    assert!(!gemini.wants_stream("/v1/models/g:streamGenerateContent", &json!({})));
    assert!(!gemini.wants_stream("/v1/models/g:generateContent", &stream));
    assert_eq!(Route::Http.extract(&json!({}), &json!({})), None);

    let response =
        json!({"id": "resp_1", "object": "response", "status": "completed", "output": []});
    let events = Route::OpenAiResponses
        .synthesize(&response, &stream)
        .expect("a stream");
    assert_eq!(
        Route::OpenAiResponses
            .assemble(&events)
            .and_then(Result::ok),
        Some(response)
    );
    let message = json!({"id": "msg_1", "type": "message", "role": "assistant", "content": [],
        "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}});
    let events = Route::AnthropicMessages
        .synthesize(&message, &stream)
        .expect("a stream");
    assert_eq!(
        Route::AnthropicMessages
            .assemble(&events)
            .and_then(Result::ok),
        Some(message)
    );
    assert!(Route::Http.assemble(&events).is_none());

    let mut req = json!({"messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}]});
    let n = Route::AnthropicMessages
        .rewrite_tool_results(&mut req, &|_| None, &mut |_, _| Some(json!("y")));
    assert_eq!(n, 1);
    let mut req =
        json!({"input": [{"type": "function_call_output", "call_id": "call_1", "output": "x"}]});
    let lookup = |id: &str| {
        Some(ToolCall {
            id: id.into(),
            name: "f".into(),
            arguments: json!({}),
        })
    };
    let n = Route::OpenAiResponses
        .rewrite_tool_results(&mut req, &lookup, &mut |_, _| Some(json!("y")));
    assert_eq!(n, 1);
    assert_eq!(
        Route::Http.rewrite_tool_results(&mut req, &lookup, &mut |_, _| Some(json!("y"))),
        0
    );
}

#[test]
fn odd_shapes_never_panic() {
    let odd = [
        json!(null),
        json!("text"),
        json!([1, 2]),
        json!({"input": 3, "messages": "x", "tools": {}, "output": [null, 1, "s"], "content": [null, 2]}),
        json!({"input": [null, 1, {"type": 2}], "messages": [null, {"content": [null, 1]}]}),
        json!({"output": [{"type": "message", "content": [{"type": "output_text"}]}, {"type": "function_call"}],
               "content": [{"type": "tool_use"}, {"type": "text"}, {"type": "thinking"}]}),
    ];
    let odd: Vec<Value> = odd
        .into_iter()
        .chain([
            json!({"contents": [null, {"parts": [null, 1, {"functionCall": 2}, {"functionResponse": "x"}]}],
                   "tools": [{"functionDeclarations": [null, 3]}], "systemInstruction": "s"}),
            json!({"candidates": [null, "x"], "usageMetadata": []}),
            json!({"candidates": [{"content": {"parts": [{"text": 1}, {"functionCall": null}]}}]}),
        ])
        .collect();
    for route in MODEL_ROUTES {
        for a in &odd {
            let _ = route.envelope(a);
            let events = route.synthesize(a, a).expect("a stream");
            let _ = route.assemble(&events);
            for b in &odd {
                let _ = route.extract(a, b);
                let mut req = a.clone();
                let lookup = |_: &str| None;
                route.rewrite_tool_results(&mut req, &lookup, &mut |_, _| Some(json!(1)));
            }
        }
    }
}

#[test]
fn delta_pieces_split_like_tokens_and_never_inside_a_character() {
    assert_eq!(
        delta_pieces("It's 18 °C in Zürich."),
        vec!["It's", " 18", " °C", " in", " Zürich."]
    );
    assert_eq!(
        delta_pieces("  two  spaces "),
        vec!["  two", "  spaces", " "]
    );
    assert_eq!(
        delta_pieces(r#"{"city":"Zürich","unit":"°C"}"#),
        vec![r#"{"city":"Zür"#, r#"ich","unit":"#, r#""°C"}"#]
    );
    assert_eq!(delta_pieces(""), Vec::<&str>::new());
    for text in ["Grüße aus Köln 🌤🌤🌤🌤🌤🌤🌤🌤🌤🌤🌤🌤🌤🌤", "a\nb\nc", "x"]
    {
        assert_eq!(delta_pieces(text).concat(), text);
        assert!(delta_pieces(text)
            .iter()
            .all(|p| !p.is_empty() && p.chars().count() <= DELTA_CHARS));
    }
}

#[test]
fn credentials_leave_the_path() {
    assert_eq!(
        without_credentials("/v1beta/models/g:streamGenerateContent?alt=sse&key=AIzaSyX"),
        "/v1beta/models/g:streamGenerateContent?alt=sse"
    );
    assert_eq!(without_credentials("/v1/x?KEY=1&api_key=2"), "/v1/x");
    assert_eq!(without_credentials("/v1/x?keys=1"), "/v1/x?keys=1");
    assert_eq!(without_credentials("/v1/x"), "/v1/x");
    // Presigned URLs: what signs them goes, what describes them stays.
    assert_eq!(
        without_credentials("https://b.s3.test/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20261206%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261206T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Security-Token=FwoGZX&X-Amz-Signature=abc123"),
        "https://b.s3.test/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261206T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
    );
    assert_eq!(
        without_credentials("/c/b?sv=2024-11-04&se=2026-12-07&sp=r&sig=AbC%3D"),
        "/c/b?sv=2024-11-04&se=2026-12-07&sp=r"
    );
    assert_eq!(
        without_credentials("/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=sa%40p.test&X-Goog-Signature=0a1b"),
        "/o?X-Goog-Algorithm=GOOG4-RSA-SHA256"
    );
    assert_eq!(
        without_credentials("/cb?code=4%2F0Ab&state=x"),
        "/cb?state=x"
    );
}

#[test]
fn providers() {
    let h = http::HeaderMap::new();
    assert_eq!(provider_of("/v1/messages", &h), Provider::Anthropic);
    assert_eq!(provider_of("/v1/chat/completions", &h), Provider::OpenAi);
    assert_eq!(
        provider_of("/v1/messages?beta=true", &h),
        Provider::Anthropic
    );
    assert_eq!(
        provider_of("/v1/messages/count_tokens", &h),
        Provider::Anthropic
    );
    assert_eq!(
        provider_of("/v1/messages/batches/msgbatch_1", &h),
        Provider::Anthropic
    );
    assert_eq!(provider_of("/v1/responses", &h), Provider::OpenAi);
    assert_eq!(
        provider_of("/v1/models/g:generateContent", &h),
        Provider::Gemini
    );
    assert_eq!(provider_of("/v1beta/cachedContents", &h), Provider::Gemini);
    assert_eq!(provider_of("/v1/models", &h), Provider::OpenAi);
    assert!(is_api_path("/v1beta/models/g:generateContent") && is_api_path("/v1/x"));
    assert!(!is_api_path("/v1x") && !is_api_path("/v2/x") && !is_api_path("/"));
    assert_eq!(
        provider_of("/v1/threads/thread_1/messages", &h),
        Provider::OpenAi
    );
    assert_eq!(provider_of("/v1/messagesx", &h), Provider::OpenAi);
    let mut h = http::HeaderMap::new();
    h.insert("anthropic-version", "2023-06-01".parse().unwrap());
    assert_eq!(provider_of("/v1/models", &h), Provider::Anthropic);
}

#[test]
fn error_shapes() {
    let e = error_body(Provider::Gemini, 429, Refusal::Fault, "m");
    assert_eq!(e["error"]["code"], 429);
    assert_eq!(e["error"]["status"], "RESOURCE_EXHAUSTED");
    assert_eq!(e["error"]["details"][0]["reason"], "agentproxy_fault");
    let e = error_body(Provider::OpenAi, 400, Refusal::CassetteMiss, "m");
    assert_eq!(e["error"]["type"], "agentproxy_cassette_miss");
    let e = error_body(Provider::Anthropic, 400, Refusal::CassetteMiss, "m");
    assert_eq!(e["type"], "error");
    assert_eq!(e["error"]["message"], "m");
}

#[test]
fn every_dialect_becomes_neutral_messages() {
    let names = HashMap::new();
    let anthropic = vec![json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18"},
        {"type": "text", "text": "thanks"},
        {"type": "image", "source": {}}]})];
    assert_eq!(
        Route::AnthropicMessages.messages(&anthropic, &names),
        vec![
            Message::ToolResult {
                call_id: "toolu_1".into(),
                name: None,
                content: json!("18")
            },
            Message::Text {
                role: "user".into(),
                text: "thanks".into()
            },
            Message::Other {
                role: "user".into(),
                item: "image".into()
            },
        ]
    );
    let request = json!({"input": [
        {"type": "function_call", "name": "f", "arguments": "{\"a\":1}", "call_id": "c"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"},
        {"role": "developer", "content": "rules"},
        {"role": "user", "content": [{"type": "input_text", "text": "go"}]}]});
    let responses = Route::OpenAiResponses.conversation(&request);
    assert_eq!(
        Route::OpenAiResponses.messages(&responses, &names),
        vec![
            Message::ToolCall {
                name: "f".into(),
                arguments: json!({"a": 1})
            },
            Message::ToolResult {
                call_id: "c".into(),
                name: None,
                content: json!("ok")
            },
            Message::Text {
                role: "user".into(),
                text: "go".into()
            },
        ]
    );
    assert_eq!(
        Route::OpenAiResponses
            .conversation(&json!({"input": "hi"}))
            .len(),
        1
    );
    let chat = vec![
        json!({"role": "system", "content": "s"}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "18"}),
    ];
    let names = HashMap::from([("call_1".to_owned(), "get_weather".to_owned())]);
    assert_eq!(
        Route::OpenAiChat.messages(&chat, &names),
        vec![Message::ToolResult {
            call_id: "call_1".into(),
            name: Some("get_weather".into()),
            content: json!("18")
        }]
    );
    assert!(Route::Http.messages(&chat, &names).is_empty());
}

#[test]
fn dot_segments_are_found_plain_or_encoded() {
    for p in [
        "/v1/../../x",
        "/v1/./chat/completions",
        "/v1/%2e%2e/x",
        "/v1/%2E./x",
        "/v1/.%2e",
    ] {
        assert!(has_dot_segment(p), "{p}");
    }
    for p in [
        "/v1/chat/completions",
        "/v1/models/gemini-2.5-flash:generateContent",
        "/v1/files/a..b",
        "/v1/x?next=../y",
    ] {
        assert!(!has_dot_segment(p), "{p}");
    }
}

/// The error faults as each provider's SDK sees them: the status its retry logic and
/// exception classes key on, and the body it reads the message from.
#[test]
fn error_faults_in_each_providers_shape() {
    let shape = |route: Route, fault| route.fault_error(fault).unwrap();
    for route in [Route::OpenAiChat, Route::OpenAiResponses] {
        assert_eq!(
            shape(route, ErrorFault::RateLimit),
            (
                429,
                json!({"error": {"message": "Rate limit reached for requests (injected by agentproxy)",
                                 "type": "requests", "param": null, "code": "rate_limit_exceeded"}})
            )
        );
        assert_eq!(
            shape(route, ErrorFault::Overloaded),
            (
                503,
                json!({"error": {"message": "The engine is currently overloaded, please try again later (injected by agentproxy)",
                                 "type": "server_error", "param": null, "code": null}})
            )
        );
        let (status, body) = shape(route, ErrorFault::ServerError(502));
        assert_eq!(
            (status, &body["error"]["type"]),
            (502, &json!("server_error"))
        );
    }
    let anthropic = |fault| shape(Route::AnthropicMessages, fault);
    assert_eq!(
        anthropic(ErrorFault::Overloaded),
        (
            529,
            json!({"type": "error", "error": {"type": "overloaded_error",
                                              "message": "Overloaded (injected by agentproxy)"}})
        )
    );
    assert_eq!(
        anthropic(ErrorFault::RateLimit).1["error"]["type"],
        "rate_limit_error"
    );
    assert_eq!(
        anthropic(ErrorFault::ServerError(500)).1["error"]["type"],
        "api_error"
    );
    let gemini = |fault| shape(Route::GeminiGenerate, fault);
    let (status, body) = gemini(ErrorFault::Overloaded);
    assert_eq!(status, 503);
    assert_eq!(
        (&body["error"]["code"], &body["error"]["status"]),
        (&json!(503), &json!("UNAVAILABLE"))
    );
    assert_eq!(
        body["error"]["message"],
        "The model is overloaded. Please try again later. (injected by agentproxy)"
    );
    assert_eq!(
        gemini(ErrorFault::RateLimit).1["error"]["status"],
        "RESOURCE_EXHAUSTED"
    );
    assert_eq!(
        gemini(ErrorFault::ServerError(500)).1["error"]["status"],
        "INTERNAL"
    );
    assert_eq!(Route::Http.fault_error(ErrorFault::RateLimit), None);
}

/// The error event inside a stream, encoded as each SDK reads it: OpenAI chat and Gemini
/// chunks whose body is an error object, the Responses API's and Anthropic's `error` events.
#[test]
fn stream_errors_in_each_dialects_shape() {
    let encoded = |route: Route| {
        String::from_utf8(crate::sse::encode(&route.stream_error().unwrap()).to_vec()).unwrap()
    };
    assert_eq!(
        encoded(Route::OpenAiChat),
        "data: {\"error\":{\"code\":null,\"message\":\"The server had an error while processing your request (injected by agentproxy)\",\"param\":null,\"type\":\"server_error\"}}\n\n"
    );
    assert_eq!(
        encoded(Route::OpenAiResponses),
        "event: error\ndata: {\"code\":\"server_error\",\"message\":\"The server had an error while processing your request (injected by agentproxy)\",\"param\":null,\"sequence_number\":0,\"type\":\"error\"}\n\n"
    );
    assert_eq!(
        encoded(Route::AnthropicMessages),
        "event: error\ndata: {\"error\":{\"message\":\"Overloaded (injected by agentproxy)\",\"type\":\"overloaded_error\"},\"type\":\"error\"}\n\n"
    );
    let gemini = encoded(Route::GeminiGenerate);
    assert!(
        gemini.starts_with("data: {\"error\":{\"code\":500,"),
        "{gemini}"
    );
    assert!(gemini.contains("\"status\":\"INTERNAL\""), "{gemini}");
    assert_eq!(Route::Http.stream_error(), None);
}

/// One answer per dialect: a text, then calls to `get_weather` and `get_time`.
fn two_calls(route: Route) -> Value {
    match route {
        Route::OpenAiChat => json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"unit\":\"celsius\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": "{\"city\":\"Tokyo\"}"}}]}}]}),
        Route::OpenAiResponses => json!({"status": "completed", "output": [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Paris\",\"unit\":\"celsius\"}", "status": "completed"},
            {"type": "function_call", "call_id": "c2", "name": "get_time", "arguments": "{\"city\":\"Tokyo\"}", "status": "completed"}]}),
        Route::AnthropicMessages | Route::BedrockInvoke => {
            json!({"type": "message", "role": "assistant", "stop_reason": "tool_use", "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris", "unit": "celsius"}},
            {"type": "tool_use", "id": "c2", "name": "get_time", "input": {"city": "Tokyo"}}]})
        }
        Route::GeminiGenerate => {
            json!({"candidates": [{"finishReason": "STOP", "content": {"role": "model", "parts": [
            {"text": "Checking."},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris", "unit": "celsius"}}},
            {"functionCall": {"name": "get_time", "args": {"city": "Tokyo"}}}]}}]})
        }
        Route::OllamaChat => json!({"done": true, "done_reason": "stop",
            "message": {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}},
                {"function": {"name": "get_time", "arguments": {"city": "Tokyo"}}}]}}),
        Route::BedrockConverse => {
            json!({"stopReason": "tool_use", "output": {"message": {"role": "assistant", "content": [
            {"text": "Checking."},
            {"toolUse": {"toolUseId": "c1", "name": "get_weather", "input": {"city": "Paris", "unit": "celsius"}}},
            {"toolUse": {"toolUseId": "c2", "name": "get_time", "input": {"city": "Tokyo"}}}]}}})
        }
        // No tools in Ollama's completion API.
        Route::OllamaGenerate | Route::Http => Value::Null,
    }
}

fn spoiled(route: Route, nth: usize, how: &Spoil) -> Value {
    let mut response = two_calls(route);
    route.spoil_tool_call(&mut response, nth, how);
    response
}

#[test]
fn tool_calls_spoiled_in_each_providers_shape() {
    let args = json!({"unit": "celsius"});
    for route in MODEL_ROUTES
        .into_iter()
        .filter(|r| *r != Route::OllamaGenerate)
    {
        // What the program reads back: the calls' names and arguments.
        let calls = |response: &Value| {
            let call = route.extract(&json!({}), response).unwrap();
            let calls: Vec<(String, Value)> = call
                .tool_calls
                .into_iter()
                .map(|c| (c.name, c.arguments))
                .collect();
            calls
        };
        let renamed = spoiled(route, 1, &Spoil::Name("get_time_unknown".into()));
        assert_eq!(calls(&renamed)[1].0, "get_time_unknown", "{route:?}");
        assert_eq!(calls(&renamed)[0], calls(&two_calls(route))[0], "{route:?}");
        let broken = spoiled(route, 0, &Spoil::Arguments(args.clone()));
        assert_eq!(
            calls(&broken)[0],
            ("get_weather".into(), args.clone()),
            "{route:?}"
        );
    }

    // Malformed: the arguments text cut short where the wire carries text.
    let chat = spoiled(Route::OpenAiChat, 0, &Spoil::Malformed);
    let text = |v: &Value| v.as_str().unwrap().to_owned();
    let cut = text(&chat["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]);
    assert_eq!(cut, "{\"city\":\"Paris\",");
    assert!(serde_json::from_str::<Value>(&cut).is_err());
    let responses = spoiled(Route::OpenAiResponses, 0, &Spoil::Malformed);
    assert_eq!(text(&responses["output"][1]["arguments"]), cut);
    // Anthropic's input is an object: a string of broken JSON there, streamed as its text.
    let anthropic = spoiled(Route::AnthropicMessages, 0, &Spoil::Malformed);
    let input = text(&anthropic["content"][1]["input"]);
    assert_eq!(input, "{\"city\":\"Paris\",");
    let events = Route::AnthropicMessages
        .synthesize(&anthropic, &json!({"stream": true}))
        .unwrap();
    let streamed: String = events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
        .filter(|d| d["index"] == 1 && d["delta"]["type"] == "input_json_delta")
        .map(|d| text(&d["delta"]["partial_json"]))
        .collect();
    assert_eq!(streamed, input);
    // Gemini sends no broken call: the candidate ends MALFORMED_FUNCTION_CALL without one.
    let gemini = spoiled(Route::GeminiGenerate, 0, &Spoil::Malformed);
    let candidate = &gemini["candidates"][0];
    assert_eq!(candidate["finishReason"], "MALFORMED_FUNCTION_CALL");
    assert_eq!(
        candidate["content"]["parts"],
        json!([{"text": "Checking."}])
    );
    assert!(text(&candidate["finishMessage"]).starts_with("Malformed function call: get_weather("));

    // Length: the call cut short, nothing after it, the provider's length stop.
    let chat = spoiled(Route::OpenAiChat, 0, &Spoil::Length);
    let choice = &chat["choices"][0];
    assert_eq!(choice["finish_reason"], "length");
    assert_eq!(choice["message"]["tool_calls"].as_array().unwrap().len(), 1);
    assert_eq!(
        text(&choice["message"]["tool_calls"][0]["function"]["arguments"]),
        cut
    );
    let responses = spoiled(Route::OpenAiResponses, 0, &Spoil::Length);
    assert_eq!(
        (&responses["status"], &responses["incomplete_details"]),
        (
            &json!("incomplete"),
            &json!({"reason": "max_output_tokens"})
        )
    );
    assert_eq!(responses["output"].as_array().unwrap().len(), 2);
    assert_eq!(responses["output"][1]["status"], "incomplete");
    let anthropic = spoiled(Route::AnthropicMessages, 0, &Spoil::Length);
    assert_eq!(anthropic["stop_reason"], "max_tokens");
    assert_eq!(anthropic["content"].as_array().unwrap().len(), 2);
    assert_eq!(anthropic["content"][1]["input"], json!({"city": "Paris"}));
    let gemini = spoiled(Route::GeminiGenerate, 0, &Spoil::Length);
    assert_eq!(gemini["candidates"][0]["finishReason"], "MAX_TOKENS");
    assert_eq!(
        gemini["candidates"][0]["content"]["parts"][1],
        json!({"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}})
    );
    assert_eq!(
        gemini["candidates"][0]["content"]["parts"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // A call that is not there leaves the answer alone.
    for route in MODEL_ROUTES {
        assert_eq!(
            spoiled(route, 5, &Spoil::Length),
            two_calls(route),
            "{route:?}"
        );
    }
}

#[test]
fn broken_json_never_parses() {
    for text in [
        "{}",
        "{\"a\":1}",
        "[1,2]",
        "7",
        "\"s\"",
        "",
        "  {\"é\":\"ü\"}  ",
    ] {
        let cut = shared::broken_json(text);
        assert!(
            serde_json::from_str::<Value>(&cut).is_err(),
            "{text:?} -> {cut:?}"
        );
    }
}
