//! What the fake OpenAI upstream answers (the HTTP side is in `fake_openai.rs`): a scripted
//! chat model, the model list, embeddings and error bodies, in OpenAI's wire shapes.
//!
//! Content is a pure function of the request; only the volatile values (ids, `created`,
//! `system_fingerprint`) are fresh on every call, as they are from the real API.
//!
//! The chat script, which tests can rely on:
//! - last message `user`, a tool the script knows (`get_weather` or `get_time`) offered and
//!   `tool_choice` not `"none"`: the tool whose keyword (`weather`, `time`) the question
//!   mentions first (else the first such tool in `tools` order) is called with the first
//!   capitalised word that does not start a sentence as `city` (`"Paris"` if none);
//!   `get_weather` also gets `"unit": "celsius"`. With two or more tools offered and two
//!   such words, two parallel calls, one per city (unless `parallel_tool_calls: false`),
//!   pairing the mentioned tools with the cities in order;
//! - last message(s) `tool`: one sentence per result, `It is {temp_c}°C and {sky} in
//!   {city}.` for a weather result, `It is {time} in {city}.` for a time result, `The tool
//!   said: {content}` otherwise; but when `send_email` is offered, the question holds an
//!   address (a word with `@`) and no `send_email` was called yet, the model first calls
//!   `send_email` with `{"to": address, "body": those sentences}`, and a result
//!   `{"sent": true, "to": …}` (also inside an MCP text item) reads `Mailed {to}.`;
//! - anything else: `You said: {last user text}`;
//! - a model whose name ends in `-eager` makes one extra call of the same tool, for London.
//!
//! A tool offered with a prefix (`weather-get_weather`, as Semantic Kernel names a
//! plugin's functions; `mcp__weather__get_weather`, as Claude Code names an MCP server's
//! tools) is the scripted tool it ends with, and is called by its own name.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hyper::StatusCode;
use serde_json::{json, Value};

/// Tools the script knows how to call.
const SCRIPTED_TOOLS: [&str; 2] = ["get_weather", "get_time"];

/// The scripted tool an offered name is: itself, or it behind a prefix (`weather-`,
/// `mcp__weather__`).
fn scripted(name: &str) -> Option<&'static str> {
    SCRIPTED_TOOLS.into_iter().find(|t| {
        name == *t || (name.strip_suffix(t)).is_some_and(|prefix| prefix.ends_with(['-', '_']))
    })
}

/// Sizes (in chars) of successive stream fragments: uneven, so splits land mid-word,
/// mid-key and mid-value, as the real API's do.
const FRAGMENT_SIZES: [usize; 5] = [3, 1, 4, 2, 5];
/// Embedding width when the request does not ask for `dimensions`; small keeps logs short.
const DEFAULT_DIMENSIONS: u64 = 8;
/// The largest `dimensions` the real API accepts.
const MAX_DIMENSIONS: u64 = 3072;

/// What to answer, before it is rendered to HTTP.
pub(super) enum Answer {
    Json {
        status: StatusCode,
        body: Value,
        headers: Vec<(&'static str, String)>,
    },
    Stream(Vec<Bytes>),
}

impl Answer {
    fn ok(body: Value) -> Answer {
        Answer::Json {
            status: StatusCode::OK,
            body,
            headers: Vec::new(),
        }
    }

    /// OpenAI's error shape: `{"error": {"message", "type", "param", "code"}}`.
    pub(super) fn error(
        status: StatusCode,
        message: &str,
        kind: &str,
        param: Option<&str>,
        code: Option<&str>,
    ) -> Answer {
        let body =
            json!({"error": {"message": message, "type": kind, "param": param, "code": code}});
        Answer::Json {
            status,
            body,
            headers: Vec::new(),
        }
    }

    pub(super) fn invalid(message: &str, param: Option<&str>) -> Answer {
        Answer::error(
            StatusCode::BAD_REQUEST,
            message,
            "invalid_request_error",
            param,
            None,
        )
    }
}

/// The error a `fail_next` call asked for, with the message, type and code the real API
/// uses for that status.
pub(super) fn injected_failure(status: StatusCode) -> Answer {
    let (message, kind, code) = match status.as_u16() {
        401 => (
            "Incorrect API key provided.",
            "invalid_request_error",
            Some("invalid_api_key"),
        ),
        429 => (
            "Rate limit reached for requests. Please try again in 1s.",
            "requests",
            Some("rate_limit_exceeded"),
        ),
        500..=599 => (
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        ),
        _ => (
            "The request was rejected (injected by the fake upstream).",
            "invalid_request_error",
            None,
        ),
    };
    let mut answer = Answer::error(status, message, kind, None, code);
    if let (Answer::Json { headers, .. }, StatusCode::TOO_MANY_REQUESTS) = (&mut answer, status) {
        headers.push(("retry-after", "1".to_owned()));
    }
    answer
}

/// What the scripted model decided to say.
enum Reply {
    Text(String),
    /// `(tool name, arguments)` per call, in order.
    Calls(Vec<(String, Value)>),
}

pub(super) fn chat(request: &Value) -> Answer {
    let Some(model) = request.get("model").and_then(Value::as_str) else {
        return Answer::invalid("you must provide a model parameter", Some("model"));
    };
    let Some(messages) = request
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
    else {
        return Answer::invalid("'messages' must be a non-empty array.", Some("messages"));
    };
    let reply = script(request, messages);
    let prompt_tokens = approx_tokens(&request["messages"].to_string())
        + approx_tokens(&request["tools"].to_string());
    let completion_tokens = match &reply {
        Reply::Text(text) => approx_tokens(text),
        Reply::Calls(calls) => calls
            .iter()
            .map(|(name, args)| approx_tokens(name) + approx_tokens(&args.to_string()))
            .sum(),
    };
    let usage = json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0
        }
    });
    let calls: Vec<Value> = match &reply {
        Reply::Text(_) => Vec::new(),
        Reply::Calls(calls) => calls
            .iter()
            .map(|(name, args)| {
                json!({"id": format!("call_{}", random_token(24)), "type": "function",
                       "function": {"name": name, "arguments": args.to_string()}})
            })
            .collect(),
    };
    let envelope = Envelope {
        id: format!("chatcmpl-{}", random_token(29)),
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        model: model.to_owned(),
        fingerprint: format!("fp_{}", random_token(10)),
    };
    if request.get("stream").and_then(Value::as_bool) == Some(true) {
        let include_usage = request
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true);
        return Answer::Stream(envelope.events(&reply, &calls, include_usage.then_some(usage)));
    }
    let message = match &reply {
        Reply::Text(text) => {
            json!({"role": "assistant", "content": text, "refusal": null, "annotations": []})
        }
        Reply::Calls(_) => {
            json!({"role": "assistant", "content": null, "tool_calls": calls, "refusal": null, "annotations": []})
        }
    };
    let mut body = envelope.object("chat.completion");
    body["choices"] = json!([{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(&reply)}]);
    body["usage"] = usage;
    Answer::ok(body)
}

fn finish_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Text(_) => "stop",
        Reply::Calls(_) => "tool_calls",
    }
}

/// The fields every chunk of one completion repeats.
struct Envelope {
    id: String,
    created: u64,
    model: String,
    fingerprint: String,
}

impl Envelope {
    fn object(&self, object: &str) -> Value {
        json!({"id": self.id, "object": object, "created": self.created, "model": self.model,
               "service_tier": "default", "system_fingerprint": self.fingerprint})
    }

    /// The server-sent events of a streamed completion, `data: [DONE]` included.
    fn events(&self, reply: &Reply, calls: &[Value], usage: Option<Value>) -> Vec<Bytes> {
        let chunk = |delta: Value, finish: Option<&str>| {
            let mut chunk = self.object("chat.completion.chunk");
            chunk["choices"] =
                json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]);
            if usage.is_some() {
                // With include_usage the real API sends `"usage": null` on every chunk.
                chunk["usage"] = Value::Null;
            }
            chunk
        };
        let mut chunks = Vec::new();
        match reply {
            Reply::Text(text) => {
                chunks.push(chunk(
                    json!({"role": "assistant", "content": "", "refusal": null}),
                    None,
                ));
                for piece in fragments(text) {
                    chunks.push(chunk(json!({"content": piece}), None));
                }
            }
            Reply::Calls(_) => {
                chunks.push(chunk(
                    json!({"role": "assistant", "content": null, "refusal": null}),
                    None,
                ));
                for (index, call) in calls.iter().enumerate() {
                    let header = json!({"index": index, "id": call["id"], "type": "function",
                                        "function": {"name": call["function"]["name"], "arguments": ""}});
                    chunks.push(chunk(json!({"tool_calls": [header]}), None));
                    for piece in
                        fragments(call["function"]["arguments"].as_str().unwrap_or_default())
                    {
                        let fragment = json!({"index": index, "function": {"arguments": piece}});
                        chunks.push(chunk(json!({"tool_calls": [fragment]}), None));
                    }
                }
            }
        }
        chunks.push(chunk(json!({}), Some(finish_reason(reply))));
        if let Some(usage) = usage {
            let mut last = self.object("chat.completion.chunk");
            last["choices"] = json!([]);
            last["usage"] = usage;
            chunks.push(last);
        }
        let mut events: Vec<Bytes> = chunks
            .iter()
            .map(|c| Bytes::from(format!("data: {c}\n\n")))
            .collect();
        events.push(Bytes::from_static(b"data: [DONE]\n\n"));
        events
    }
}

/// Splits `text` into pieces of uneven char counts (never inside a UTF-8 sequence: a JSON
/// string cannot carry half a character).
pub(super) fn fragments(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    for size in FRAGMENT_SIZES.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let end = rest
            .char_indices()
            .nth(*size)
            .map_or(rest.len(), |(i, _)| i);
        pieces.push(&rest[..end]);
        rest = &rest[end..];
    }
    pieces
}

/// The scripted model: call a known tool for a fresh user question, describe tool results
/// once they come back, echo otherwise.
fn script(request: &Value, messages: &[Value]) -> Reply {
    let last = messages.last().unwrap_or(&Value::Null);
    match last["role"].as_str() {
        Some("tool") => {
            let said = describe_tool_results(messages);
            match mail_to(request, messages) {
                Some(to) => {
                    Reply::Calls(vec![("send_email".into(), json!({"to": to, "body": said}))])
                }
                None => Reply::Text(said),
            }
        }
        Some("user") => {
            let text = message_text(last);
            let calls = plan_tool_calls(request, &text);
            if calls.is_empty() {
                Reply::Text(format!("You said: {text}"))
            } else {
                Reply::Calls(calls)
            }
        }
        _ => {
            let user = messages
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .unwrap_or(&Value::Null);
            Reply::Text(format!("You said: {}", message_text(user)))
        }
    }
}

fn plan_tool_calls(request: &Value, text: &str) -> Vec<(String, Value)> {
    let mut calls = plan_scripted_calls(request, text);
    // A "new model version" that behaves differently: it also checks London, so tests can
    // re-record and see the trajectory diff name the extra call.
    if request["model"]
        .as_str()
        .is_some_and(|m| m.ends_with("-eager"))
    {
        if let Some((name, _)) = calls.first().cloned() {
            let args = match scripted(&name) {
                Some("get_weather") => json!({"city": "London", "unit": "celsius"}),
                _ => json!({"city": "London"}),
            };
            calls.push((name, args));
        }
    }
    calls
}

fn plan_scripted_calls(request: &Value, text: &str) -> Vec<(String, Value)> {
    if request["tool_choice"] == "none" {
        return Vec::new();
    }
    let tools = request["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.pointer("/function/name")?.as_str())
        .collect();
    // Tools named by their keyword in the question ("weather", "time"), in the order the
    // question mentions them; else the first scripted tool offered.
    let lower = text.to_lowercase();
    let mut mentioned: Vec<(usize, &str)> = names
        .iter()
        .copied()
        .filter_map(|n| Some((lower.find(scripted(n)?.trim_start_matches("get_"))?, n)))
        .collect();
    mentioned.sort();
    let mut chosen: Vec<&str> = mentioned.into_iter().map(|(_, n)| n).collect();
    if chosen.is_empty() {
        let Some(first) = names.iter().find(|n| scripted(n).is_some()) else {
            return Vec::new();
        };
        chosen.push(first);
    }
    let cities = capitalised_words(text);
    let parallel = names.len() >= 2 && cities.len() >= 2 && request["parallel_tool_calls"] != false;
    let targets: Vec<(&str, &str)> = if parallel {
        // Two cities: one call each, pairing the mentioned tools with the cities in order.
        cities
            .iter()
            .take(2)
            .enumerate()
            .map(|(i, c)| (*chosen.get(i).unwrap_or(&chosen[0]), c.as_str()))
            .collect()
    } else {
        vec![(chosen[0], cities.first().map_or("Paris", String::as_str))]
    };
    targets
        .into_iter()
        .map(|(name, city)| {
            let args = match scripted(name) {
                Some("get_weather") => json!({"city": city, "unit": "celsius"}),
                _ => json!({"city": city}),
            };
            (name.to_owned(), args)
        })
        .collect()
}

/// Capitalised words that do not start a sentence: in "What's the weather in Paris and
/// Tokyo?" that is Paris and Tokyo.
fn capitalised_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut sentence_start = true;
    for raw in text.split_whitespace() {
        let word = raw.trim_matches(|c: char| !c.is_alphabetic());
        let capitalised = word.chars().next().is_some_and(char::is_uppercase)
            && word.chars().all(char::is_alphabetic);
        if capitalised && !sentence_start && word != "I" && !words.iter().any(|w| w == word) {
            words.push(word.to_owned());
        }
        sentence_start = raw.ends_with(['.', '?', '!']);
    }
    words
}

/// A reply built from the trailing `tool` messages, e.g. "It is 18°C and sunny in Paris."
fn describe_tool_results(messages: &[Value]) -> String {
    let first_result = messages
        .iter()
        .rposition(|m| m["role"] != "tool")
        .map_or(0, |i| i + 1);
    let sentences: Vec<String> = messages[first_result..]
        .iter()
        .map(|result| {
            let content = message_text(result);
            let args = arguments_of_call(
                messages,
                result["tool_call_id"].as_str().unwrap_or_default(),
            );
            let mut parsed = serde_json::from_str::<Value>(&content).unwrap_or(Value::Null);
            // An MCP result as a framework forwards it: a text content item holding JSON.
            if let Some(inner) = parsed["text"]
                .as_str()
                .and_then(|t| serde_json::from_str(t).ok())
            {
                parsed = inner;
            }
            if parsed["sent"] == true {
                return format!("Mailed {}.", parsed["to"].as_str().unwrap_or("them"));
            }
            let city = parsed["city"]
                .as_str()
                .or(args["city"].as_str())
                .unwrap_or("your city");
            match (&parsed["temp_c"], &parsed["sky"], &parsed["time"]) {
                (Value::Number(temp), sky, _) => format!(
                    "It is {temp}°C and {} in {city}.",
                    sky.as_str().unwrap_or("clear")
                ),
                (_, _, Value::String(time)) => format!("It is {time} in {city}."),
                _ => format!("The tool said: {content}"),
            }
        })
        .collect();
    sentences.join(" ")
}

/// The address to mail the tool results to: `send_email` is offered, the question holds
/// one, and no `send_email` call was made yet.
fn mail_to(request: &Value, messages: &[Value]) -> Option<String> {
    let offered = request["tools"]
        .as_array()?
        .iter()
        .any(|t| t.pointer("/function/name") == Some(&json!("send_email")));
    let called = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .any(|c| c.pointer("/function/name") == Some(&json!("send_email")));
    let question = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(message_text)?;
    let address = question
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .find(|w| w.contains('@'))?;
    (offered && !called).then(|| address.to_owned())
}

/// The parsed arguments of the assistant tool call with this id, or null.
fn arguments_of_call(messages: &[Value], id: &str) -> Value {
    messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .find(|call| call["id"] == id)
        .and_then(|call| serde_json::from_str(call.pointer("/function/arguments")?.as_str()?).ok())
        .unwrap_or(Value::Null)
}

/// A message's text, whether `content` is a string or a list of text parts.
fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// A stable stand-in for a tokenizer: about four bytes per token, at least one.
fn approx_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4).max(1)
}

pub(super) fn models() -> Answer {
    // Fixed `created` values: the real endpoint's are fixed too.
    let models = [
        ("gpt-4o-mini", 1_721_172_741),
        ("gpt-4o", 1_715_367_049),
        ("text-embedding-3-small", 1_705_948_997),
    ];
    let data: Vec<Value> = models
        .iter()
        .map(|(id, created)| json!({"id": id, "object": "model", "created": created, "owned_by": "system"}))
        .collect();
    Answer::ok(json!({"object": "list", "data": data}))
}

pub(super) fn embeddings(request: &Value) -> Answer {
    let Some(model) = request.get("model").and_then(Value::as_str) else {
        return Answer::invalid("you must provide a model parameter", Some("model"));
    };
    let inputs: Vec<String> = match &request["input"] {
        Value::String(text) => vec![text.clone()],
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
            .collect(),
        _ => {
            return Answer::invalid(
                "'input' must be a string or a non-empty array.",
                Some("input"),
            )
        }
    };
    let dimensions = request["dimensions"]
        .as_u64()
        .unwrap_or(DEFAULT_DIMENSIONS)
        .clamp(1, MAX_DIMENSIONS);
    let base64 = request["encoding_format"] == "base64";
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, input)| {
            let vector = embed(input, dimensions);
            let embedding = if base64 {
                // What the SDK asks for by default: little-endian f32s, base64.
                let bytes: Vec<u8> = vector.iter().flat_map(|v| v.to_le_bytes()).collect();
                Value::String(base64_encode(&bytes))
            } else {
                json!(vector)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    let tokens: u64 = inputs.iter().map(|i| approx_tokens(i)).sum();
    Answer::ok(json!({
        "object": "list", "data": data, "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}
    }))
}

/// A deterministic vector for `text`: multiples of 1/256 in [-1, 1), exact in f32 and short
/// in decimal, so the float and base64 encodings carry the same numbers.
fn embed(text: &str, dimensions: u64) -> Vec<f32> {
    // FNV-1a: stable across runs and platforms, unlike std's randomly keyed hasher.
    let mut state = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (0..dimensions)
        .map(|_| {
            // xorshift64 steps: cheap, deterministic spread.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state % 512) as f32 - 256.0) / 256.0
        })
        .collect()
}

pub(super) fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A fresh base62 token: the fake's ids must differ on every call, as the real API's do.
pub(super) fn random_token(len: usize) -> String {
    const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    // std's RandomState is seeded from the OS; hashing a counter through it gives
    // unpredictable values, distinct in practice, without a `rand` dependency.
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let keys = RandomState::new();
    let mut out = String::with_capacity(len);
    let mut bits = 0u64;
    for i in 0..len {
        if i % 10 == 0 {
            bits = keys.hash_one(COUNTER.fetch_add(1, Ordering::Relaxed));
        }
        out.push(char::from(ALPHABET[(bits % 62) as usize]));
        bits /= 62;
    }
    out
}
