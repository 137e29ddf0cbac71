use serde_json::{json, Value};

use super::*;
use crate::sse::Framing;

/// A stream as Ollama's server sends one (captured from `ollama` 0.6 against a server
/// speaking its wire format): thinking, content pieces, then the final chunk.
const STREAM: &str = r#"{"model":"llama3.2","created_at":"2026-12-05T06:00:00.1Z","message":{"role":"assistant","content":"","thinking":"The user "},"done":false}
{"model":"llama3.2","created_at":"2026-12-05T06:00:00.2Z","message":{"role":"assistant","content":"","thinking":"wants weather."},"done":false}
{"model":"llama3.2","created_at":"2026-12-05T06:00:00.3Z","message":{"role":"assistant","content":"It is "},"done":false}
{"model":"llama3.2","created_at":"2026-12-05T06:00:00.4Z","message":{"role":"assistant","content":"sunny."},"done":false}
{"model":"llama3.2","created_at":"2026-12-05T06:00:00.5Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":912000000,"prompt_eval_count":31,"eval_count":7}
"#;

fn events(wire: &str) -> Vec<SseEvent> {
    let mut parser = Framing::Ndjson.parser();
    let mut events = parser.push(wire.as_bytes());
    events.extend(parser.finish());
    events
}

fn tool_answer() -> Value {
    json!({
        "model": "llama3.2",
        "created_at": "2026-12-05T06:00:01Z",
        "message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}},
            {"function": {"name": "get_time", "arguments": {"city": "Paris"}}}
        ]},
        "done": true, "done_reason": "stop", "prompt_eval_count": 40, "eval_count": 12
    })
}

#[test]
fn a_stream_assembles_into_its_last_chunk_with_everything_gathered() {
    let whole = stream::assemble(&events(STREAM)).unwrap();
    assert_eq!(whole["message"]["content"], "It is sunny.");
    assert_eq!(whole["message"]["thinking"], "The user wants weather.");
    assert_eq!(whole["done_reason"], "stop");
    assert_eq!(whole["eval_count"], 7);
    let call = extract(&json!({"model": "llama3.2", "messages": []}), &whole);
    assert_eq!(call.reply.as_deref(), Some("It is sunny."));
    assert_eq!((call.usage.prompt, call.usage.completion), (31, 7));
}

#[test]
fn a_synthesized_stream_assembles_back_into_the_response() {
    for response in [
        tool_answer(),
        stream::assemble(&events(STREAM)).unwrap(),
        Ollama.text_response(&Value::Null, "m", "héllo wörld, a longer reply"),
    ] {
        let synthesized = stream::synthesize(&response);
        assert!(synthesized.len() >= 2);
        let wire: String = synthesized
            .iter()
            .map(|e| String::from_utf8(Framing::Ndjson.encode(e).to_vec()).unwrap())
            .collect();
        assert_eq!(
            stream::assemble(&events(&wire)).unwrap(),
            response,
            "{wire}"
        );
    }
}

#[test]
fn a_broken_stream_says_why() {
    let cut: String = STREAM.lines().take(3).map(|l| format!("{l}\n")).collect();
    let e = stream::assemble(&events(&cut)).unwrap_err().to_string();
    assert!(e.contains("without `done: true`"), "{e}");
    let failed = format!(
        "{}\n{{\"error\":\"model ran out of memory\"}}\n",
        STREAM.lines().next().unwrap()
    );
    let e = stream::assemble(&events(&failed)).unwrap_err().to_string();
    assert!(e.contains("model ran out of memory"), "{e}");
    assert!(stream::assemble(&[]).is_err());
}

/// A conversation as Semantic Kernel sends it: the results name no tool and no call.
fn conversation() -> Value {
    json!({
        "model": "llama3.2",
        "options": {"temperature": 0},
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Weather and time in Paris?"},
            {"role": "assistant", "tool_calls": [
                {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
                {"function": {"name": "get_time", "arguments": {"city": "Paris"}}}
            ]},
            {"role": "tool", "content": "18 degrees, sunny"},
            {"role": "tool", "content": "14:05", "tool_name": "get_time"}
        ],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    })
}

#[test]
fn results_answer_the_calls_before_them_by_place() {
    let request = conversation();
    let call = extract(&request, &tool_answer());
    assert_eq!(call.system.as_deref(), Some("You are helpful."));
    assert_eq!(call.tools[0].name, "get_weather");
    assert_eq!(call.params["options"], json!({"temperature": 0}));
    let results: Vec<(&str, Option<&str>)> = (call.tool_results.iter())
        .map(|r| (r.call_id.as_str(), r.name.as_deref()))
        .collect();
    assert_eq!(
        results,
        [("2#0", Some("get_weather")), ("2#1", Some("get_time"))]
    );
    // The answer's calls are named by the place the program will put them: message 5.
    let ids: Vec<&str> = call.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["5#0", "5#1"]);
    assert_eq!(
        call.tool_calls[0].arguments,
        json!({"city": "Paris", "unit": "celsius"})
    );
    assert_eq!(call.reply, None, "an answer of tool calls has no reply");
}

#[test]
fn mocks_replace_results_by_place_and_count_calls_per_tool() {
    let mut request = conversation();
    let mut seen = Vec::new();
    let replaced = rewrite_tool_results(&mut request, &|_| None, &mut |call, nth| {
        seen.push((call.name.clone(), nth));
        (call.name == "get_weather").then(|| json!({"temp_c": 30}))
    });
    assert_eq!(replaced, 1);
    assert_eq!(
        seen,
        [("get_weather".to_owned(), 0), ("get_time".to_owned(), 0)]
    );
    assert_eq!(request["messages"][3]["content"], r#"{"temp_c":30}"#);
    assert_eq!(request["messages"][4]["content"], "14:05");
}

#[test]
fn the_history_reads_as_neutral_messages() {
    let mut out = Vec::new();
    for m in array(&conversation(), "messages") {
        Ollama.messages(m, &HashMap::new(), &mut out);
    }
    let kinds: Vec<String> = out
        .iter()
        .map(|m| match m {
            Message::Text { role, .. } => role.clone(),
            Message::ToolCall { name, .. } => format!("call {name}"),
            Message::ToolResult { name, .. } => format!("result {name:?}"),
            Message::Other { .. } => "other".to_owned(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "user",
            "call get_weather",
            "call get_time",
            "result None",
            "result Some(\"get_time\")"
        ]
    );
}

#[test]
fn a_request_streams_unless_it_says_not_to() {
    assert!(Ollama.wants_stream("/api/chat", &json!({"model": "m"})));
    assert!(Ollama.wants_stream("/api/chat", &json!({"stream": true})));
    assert!(!Ollama.wants_stream("/api/chat", &json!({"stream": false})));
}

#[test]
fn faults_come_in_ollamas_shape() {
    let (status, body) = Ollama.fault_error(ErrorFault::RateLimit);
    assert_eq!(status, 429);
    assert!(body["error"].as_str().unwrap().ends_with(INJECTED));
    let e: Value = serde_json::from_str(&Ollama.stream_error().data).unwrap();
    assert!(e["error"].is_string());

    let mut r = tool_answer();
    Ollama.spoil_tool_call(&mut r, 0, &Spoil::Malformed);
    let args = r["message"]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap();
    assert!(serde_json::from_str::<Value>(args).is_err(), "{args}");

    let mut r = tool_answer();
    Ollama.spoil_tool_call(&mut r, 0, &Spoil::Length);
    assert_eq!(r["done_reason"], "length");
    assert_eq!(r["message"]["tool_calls"].as_array().unwrap().len(), 1);
    assert_eq!(
        r["message"]["tool_calls"][0]["function"]["arguments"],
        json!({"city": "Paris"})
    );

    let mut r = tool_answer();
    Ollama.spoil_tool_call(&mut r, 1, &Spoil::Name("get_tme".into()));
    assert_eq!(r["message"]["tool_calls"][1]["function"]["name"], "get_tme");
}
