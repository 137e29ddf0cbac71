//! The traffic of the `streams` scenario: the chat workload's conversations (workload.rs)
//! in each dialect's own request shape, each answered by the server-sent events that
//! dialect's API streams, and cassettes recording them.
//!
//! - `openai.chat`: the chat request with `"stream": true` and `include_usage`; the answer
//!   as `chat.completion.chunk` events (a role chunk, content or tool-call deltas, a finish
//!   chunk, a usage chunk) and `data: [DONE]`.
//! - `openai.responses`: `instructions`, `input` items (messages, `function_call`,
//!   `function_call_output`), flat function tools; the answer as typed, numbered
//!   `response.*` events, each with an `event:` line, ending in `response.completed`.
//! - `anthropic.messages`: `system`, alternating messages with `tool_use` and `tool_result`
//!   blocks, tools with `input_schema`; the answer as `message_start`, `ping`, per block
//!   `content_block_start` / `_delta` (`text_delta`, `input_json_delta`) / `_stop`, then
//!   `message_delta` and `message_stop`.
//! - `bedrock.invoke`: the same Messages request without `model` and `stream` (the model
//!   is in the path), posted to InvokeModelWithResponseStream; the same events, each
//!   carried as base64 in a `chunk` frame of AWS's binary event stream (CRC32s and all):
//!   Bedrock's framing beside the SSE of the same stream.
//!
//! The event sequences follow the test fakes (tests/support/fake_openai_model.rs,
//! fake_openai_responses.rs, fake_anthropic_model.rs). A delta carries about a token (4
//! characters), and a stream at most [`MAX_DELTAS`] of them: 12–58 events per stream.

use std::path::Path;

use bytes::Bytes;
use serde_json::{json, Value};

use agentproxy::cassette::{store, Body, Interaction, RecordedRequest, RecordedResponse};
use agentproxy::dialect::Route;
use agentproxy::matching::{key, normalize::Rules, request_key};
use agentproxy::sse::{Framing, SseEvent, SseParser};

use super::workload::{self, Exchange};

/// The most deltas one stream carries; a longer answer is cut into longer pieces.
const MAX_DELTAS: usize = 48;

/// A dialect: its route and the path its requests are posted to.
#[derive(Clone, Copy)]
pub struct Dialect {
    pub route: Route,
    pub path: &'static str,
}

pub const DIALECTS: [Dialect; 4] = [
    Dialect {
        route: Route::OpenAiChat,
        path: "/v1/chat/completions",
    },
    Dialect {
        route: Route::OpenAiResponses,
        path: "/v1/responses",
    },
    Dialect {
        route: Route::AnthropicMessages,
        path: "/v1/messages",
    },
    Dialect {
        route: Route::BedrockInvoke,
        path: "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream",
    },
];

/// One streamed exchange.
pub struct Streamed {
    pub request: Value,
    /// The request as the client sends it (compact JSON).
    pub wire: Bytes,
    /// The answer as the upstream sends it: one frame per event.
    pub frames: Vec<Bytes>,
}

impl Streamed {
    /// Bytes of the whole stream.
    pub fn len(&self) -> usize {
        self.frames.iter().map(Bytes::len).sum()
    }
}

/// The chat exchanges as `dialect` would carry them, streamed.
pub fn streamed(dialect: Dialect, chat: &[Exchange]) -> Vec<Streamed> {
    chat.iter()
        .map(|ex| {
            let (request, frames) = match dialect.route {
                Route::OpenAiChat => chat_stream(ex),
                Route::OpenAiResponses => responses_stream(ex),
                Route::BedrockInvoke => invoke_stream(ex),
                _ => messages_stream(ex),
            };
            let wire = Bytes::from(serde_json::to_vec(&request).unwrap_or_default());
            Streamed {
                request,
                wire,
                frames,
            }
        })
        .collect()
}

/// Write a cassette of these exchanges as `agentproxy record` would (secret scan, pretty
/// JSON); returns its size in bytes.
pub fn write_cassette(path: &Path, dialect: Dialect, streams: &[Streamed]) -> Result<u64, String> {
    let mut cassette = workload::cassette(&[], true);
    cassette.interactions = streams
        .iter()
        .enumerate()
        .map(|(i, s)| interaction(dialect, s, i))
        .collect::<Result<_, _>>()?;
    store::save(path, &cassette).map_err(|e| format!("failed to write {}: {e}", path.display()))?;
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| format!("failed to stat {}: {e}", path.display()))
}

/// The interaction a recording stores for `s`: the frames through the library's parser of
/// the route's framing, the whole message assembled from the events by the route, the key
/// from the request with no match rules.
fn interaction(dialect: Dialect, s: &Streamed, i: usize) -> Result<Interaction, String> {
    let framing = dialect.route.framing();
    let mut parser = framing.parser();
    let mut events: Vec<SseEvent> = Vec::new();
    for frame in &s.frames {
        events.extend(parser.push(frame));
    }
    events.extend(parser.finish());
    let route = dialect.route.name();
    let assembled = dialect
        .route
        .assemble(&events)
        .ok_or_else(|| format!("{route} has no assembled form"))?
        .map_err(|e| format!("{route} stream {i}: {e}"))?;
    let body = Body::Json(s.request.clone().into());
    let key = request_key(route, "POST", dialect.path, Some(&body), &Rules::default());
    Ok(Interaction {
        route: route.into(),
        key,
        turn: None,
        request: RecordedRequest {
            method: "POST".into(),
            path: dialect.path.into(),
            body: Some(body),
            body_xxh3: Some(key::digest_hex(key::body_digest(&s.wire))),
        },
        response: RecordedResponse {
            status: 200,
            headers: [(
                "content-type".to_string(),
                framing.content_type().to_string(),
            )]
            .into(),
            body: Some(Body::Json(assembled.into())),
            events: Some(events),
            aborted: None,
            encoded: Default::default(),
            encoded_events: Default::default(),
            event_ms: Vec::new(),
        },
        latency_ms: 400 + (i as u64 * 7919) % 2600,
        mocked: Vec::new(),
        spoiled: None,
    })
}

/// One event as the upstream frames it: `event: NAME` when the dialect names events.
fn frame(event: Option<&str>, data: &Value) -> Bytes {
    Bytes::from(match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    })
}

/// `text` in pieces of about a token (4 characters), at most `max` of them (at least one),
/// never inside a character. Empty text has no pieces.
fn deltas(text: &str, max: usize) -> Vec<&str> {
    let chars = text.chars().count();
    if chars == 0 {
        return Vec::new();
    }
    let per = chars.div_ceil(chars.div_ceil(4).clamp(1, max.max(1)));
    let mut pieces = Vec::new();
    let (mut start, mut count) = (0, 0);
    for (at, _) in text.char_indices() {
        if count == per {
            pieces.push(&text[start..at]);
            (start, count) = (at, 0);
        }
        count += 1;
    }
    pieces.push(&text[start..]);
    pieces
}

/// The part of a generated id after its prefix (`call_…`, `chatcmpl-…`), to derive the
/// ids other dialects give the same call or answer.
fn suffix(id: &Value) -> &str {
    let id = id.as_str().unwrap_or_default();
    id.rsplit(['_', '-']).next().unwrap_or(id)
}

/// A stable id for a text (FNV-1a), for items the chat history carries without one.
fn text_id(prefix: &str, text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{prefix}{hash:016x}")
}

fn chat_messages(request: &Value) -> &[Value] {
    request["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn chat_tool_calls(message: &Value) -> &[Value] {
    message["tool_calls"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The chat request, streamed with usage, and its completion as `chat.completion.chunk`s.
fn chat_stream(ex: &Exchange) -> (Value, Vec<Bytes>) {
    let mut request = ex.request.clone();
    request["stream"] = true.into();
    request["stream_options"] = json!({"include_usage": true});
    let c = &ex.response;
    let message = &c["choices"][0]["message"];
    let head = |choices: Value, usage: Value| {
        json!({"id": c["id"], "object": "chat.completion.chunk", "created": c["created"],
               "model": c["model"], "service_tier": c["service_tier"],
               "system_fingerprint": c["system_fingerprint"], "choices": choices, "usage": usage})
    };
    let chunk = |delta: Value, finish: &Value| {
        head(
            json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]),
            Value::Null,
        )
    };
    let none = Value::Null;
    let calls = chat_tool_calls(message);
    let mut chunks = Vec::new();
    if calls.is_empty() {
        chunks.push(chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            &none,
        ));
        for piece in deltas(message["content"].as_str().unwrap_or_default(), MAX_DELTAS) {
            chunks.push(chunk(json!({"content": piece}), &none));
        }
    } else {
        chunks.push(chunk(
            json!({"role": "assistant", "content": null, "refusal": null}),
            &none,
        ));
        for (index, call) in calls.iter().enumerate() {
            let f = &call["function"];
            chunks.push(chunk(
                json!({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                       "function": {"name": f["name"], "arguments": ""}}]}),
                &none,
            ));
            let arguments = f["arguments"].as_str().unwrap_or_default();
            for piece in deltas(arguments, MAX_DELTAS / calls.len()) {
                chunks.push(chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    &none,
                ));
            }
        }
    }
    chunks.push(chunk(json!({}), &c["choices"][0]["finish_reason"]));
    chunks.push(head(json!([]), c["usage"].clone()));
    let mut frames: Vec<Bytes> = chunks.iter().map(|c| frame(None, c)).collect();
    frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
    (request, frames)
}

/// The chat request as a Responses request: the system message as `instructions`, the
/// rest as input items, the tools flattened.
fn responses_request(chat: &Value) -> Value {
    let mut instructions = Value::Null;
    let mut input = Vec::new();
    for m in chat_messages(chat) {
        match m["role"].as_str() {
            Some("system") => instructions = m["content"].clone(),
            Some("user") => input.push(json!({"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": m["content"]}]})),
            Some("assistant") => input.extend(output_items(m)),
            _ => input.push(json!({"type": "function_call_output",
                "call_id": m["tool_call_id"], "output": m["content"]})),
        }
    }
    let tools: Vec<Value> = chat["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|t| {
            let f = &t["function"];
            json!({"type": "function", "name": f["name"], "description": f["description"],
                   "parameters": f["parameters"], "strict": false})
        })
        .collect();
    json!({"model": chat["model"], "instructions": instructions, "input": input,
           "tools": tools, "tool_choice": "auto", "parallel_tool_calls": true,
           "temperature": chat["temperature"], "user": chat["user"], "store": false,
           "stream": true})
}

/// An assistant chat message as the Responses output items it was: one `function_call`
/// per tool call, or one `message` with an `output_text` part.
fn output_items(message: &Value) -> Vec<Value> {
    let calls = chat_tool_calls(message);
    if calls.is_empty() {
        let text = message["content"].as_str().unwrap_or_default();
        return vec![json!({"id": text_id("msg_", text), "type": "message",
            "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "annotations": [], "logprobs": [],
                         "text": text}]})];
    }
    calls
        .iter()
        .map(|c| {
            json!({"id": format!("fc_{}", suffix(&c["id"])), "type": "function_call",
                   "status": "completed", "arguments": c["function"]["arguments"],
                   "call_id": c["id"], "name": c["function"]["name"]})
        })
        .collect()
}

/// The Responses request and its answer as numbered `response.*` events.
fn responses_stream(ex: &Exchange) -> (Value, Vec<Bytes>) {
    let request = responses_request(&ex.request);
    let response = response_object(&request, &ex.response);
    let frames = response_events(&response);
    (request, frames)
}

/// The `response` object for the chat completion `c`, with the fields the API returns.
fn response_object(request: &Value, c: &Value) -> Value {
    let usage = &c["usage"];
    json!({
        "id": format!("resp_{}", suffix(&c["id"])), "object": "response",
        "created_at": c["created"], "status": "completed", "background": false,
        "completed_at": c["created"], "error": null, "incomplete_details": null,
        "instructions": request["instructions"], "max_output_tokens": null,
        "model": request["model"], "output": output_items(&c["choices"][0]["message"]),
        "parallel_tool_calls": true, "previous_response_id": null,
        "reasoning": {"effort": null, "summary": null}, "service_tier": "default",
        "store": false, "temperature": request["temperature"],
        "text": {"format": {"type": "text"}, "verbosity": "medium"}, "tool_choice": "auto",
        "tools": request["tools"], "top_p": 1.0, "truncation": "disabled",
        "usage": {"input_tokens": usage["prompt_tokens"],
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": usage["completion_tokens"],
                  "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": usage["total_tokens"]},
        "user": request["user"], "metadata": {},
    })
}

/// The events that stream `response`: `response.created` and `.in_progress` with an
/// empty snapshot, per output item its `.added`, deltas, `.done` events, then
/// `response.completed` with the whole response.
fn response_events(response: &Value) -> Vec<Bytes> {
    let mut frames = Vec::new();
    let mut emit = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(frames.len());
        frames.push(frame(Some(kind), &data));
    };
    let mut snapshot = response.clone();
    snapshot["status"] = json!("in_progress");
    snapshot["output"] = json!([]);
    snapshot["usage"] = Value::Null;
    snapshot["completed_at"] = Value::Null;
    emit("response.created", json!({"response": snapshot}));
    emit("response.in_progress", json!({"response": snapshot}));
    let output = response["output"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let share = MAX_DELTAS / output.len().max(1);
    for (output_index, item) in output.iter().enumerate() {
        let at = json!({"item_id": item["id"], "output_index": output_index});
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        if item["type"] == "function_call" {
            added["arguments"] = json!("");
            emit(
                "response.output_item.added",
                json!({"output_index": output_index, "item": added}),
            );
            let arguments = item["arguments"].as_str().unwrap_or_default();
            for piece in deltas(arguments, share) {
                emit(
                    "response.function_call_arguments.delta",
                    with(&at, json!({"delta": piece})),
                );
            }
            emit(
                "response.function_call_arguments.done",
                with(&at, json!({"arguments": arguments})),
            );
        } else {
            added["content"] = json!([]);
            emit(
                "response.output_item.added",
                json!({"output_index": output_index, "item": added}),
            );
            let at = with(&at, json!({"content_index": 0}));
            let part = &item["content"][0];
            let text = part["text"].as_str().unwrap_or_default();
            let mut empty = part.clone();
            empty["text"] = json!("");
            emit(
                "response.content_part.added",
                with(&at, json!({"part": empty})),
            );
            for piece in deltas(text, share) {
                emit(
                    "response.output_text.delta",
                    with(&at, json!({"delta": piece, "logprobs": []})),
                );
            }
            emit(
                "response.output_text.done",
                with(&at, json!({"text": text, "logprobs": []})),
            );
            emit(
                "response.content_part.done",
                with(&at, json!({"part": part})),
            );
        }
        emit(
            "response.output_item.done",
            json!({"output_index": output_index, "item": item}),
        );
    }
    emit("response.completed", json!({"response": response}));
    frames
}

/// `at` plus `fields`.
fn with(at: &Value, fields: Value) -> Value {
    let mut out = at.clone();
    if let (Some(out), Value::Object(fields)) = (out.as_object_mut(), fields) {
        out.extend(fields);
    }
    out
}

/// The Claude model that stands in for an OpenAI one of the chat workload.
fn claude(model: &Value) -> &'static str {
    match model.as_str() {
        Some("gpt-4o-mini") => "claude-haiku-4-5-20251001",
        Some("gpt-4.1") => "claude-opus-4-1-20250805",
        _ => "claude-sonnet-4-5-20250929",
    }
}

/// The chat request as a Messages request: the system message as `system`, tool calls as
/// `tool_use` blocks, consecutive tool results as one user message of `tool_result` blocks.
fn messages_request(chat: &Value) -> Value {
    let mut system = Value::Null;
    let mut messages: Vec<Value> = Vec::new();
    for m in chat_messages(chat) {
        match m["role"].as_str() {
            Some("system") => system = m["content"].clone(),
            Some("user") => messages.push(json!({"role": "user", "content": m["content"]})),
            Some("assistant") => {
                messages.push(json!({"role": "assistant", "content": content_blocks(m)}))
            }
            _ => {
                let result = json!({"type": "tool_result",
                    "tool_use_id": format!("toolu_01{}", suffix(&m["tool_call_id"])),
                    "content": m["content"]});
                match messages.last_mut() {
                    Some(last) if last["role"] == "user" && last["content"].is_array() => {
                        if let Some(blocks) = last["content"].as_array_mut() {
                            blocks.push(result);
                        }
                    }
                    _ => messages.push(json!({"role": "user", "content": [result]})),
                }
            }
        }
    }
    let tools: Vec<Value> = chat["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|t| {
            let f = &t["function"];
            json!({"name": f["name"], "description": f["description"],
                   "input_schema": f["parameters"]})
        })
        .collect();
    json!({"model": claude(&chat["model"]), "max_tokens": 8192, "system": system,
           "messages": messages, "tools": tools, "tool_choice": {"type": "auto"},
           "temperature": chat["temperature"], "metadata": {"user_id": chat["user"]},
           "stream": true})
}

/// An assistant chat message as the content blocks Claude would have answered.
fn content_blocks(message: &Value) -> Vec<Value> {
    let calls = chat_tool_calls(message);
    if calls.is_empty() {
        return vec![json!({"type": "text", "text": message["content"]})];
    }
    calls
        .iter()
        .map(|c| {
            let input: Value = c["function"]["arguments"]
                .as_str()
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or_else(|| json!({}));
            json!({"type": "tool_use", "id": format!("toolu_01{}", suffix(&c["id"])),
                   "name": c["function"]["name"], "input": input})
        })
        .collect()
}

/// The Messages request and its answer as Anthropic's event sequence.
fn messages_stream(ex: &Exchange) -> (Value, Vec<Bytes>) {
    let request = messages_request(&ex.request);
    let message = message_object(&request, &ex.response);
    let frames = message_events(&message);
    (request, frames)
}

/// The `message` object for the chat completion `c`, with the fields the API returns.
fn message_object(request: &Value, c: &Value) -> Value {
    let content = content_blocks(&c["choices"][0]["message"]);
    let stop = if content[0]["type"] == "tool_use" {
        "tool_use"
    } else {
        "end_turn"
    };
    json!({"id": format!("msg_01{}", suffix(&c["id"])), "type": "message",
           "role": "assistant", "model": request["model"], "content": content,
           "stop_reason": stop, "stop_sequence": null,
           "usage": {"input_tokens": c["usage"]["prompt_tokens"],
                     "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                     "output_tokens": c["usage"]["completion_tokens"],
                     "service_tier": "standard"}})
}

/// The events that stream `message`: `message_start` (no content, `output_tokens: 1`),
/// per block `content_block_start`, a `ping` after the first one, its deltas (a tool
/// input opens with an empty fragment, as the API sends it) and `content_block_stop`,
/// then `message_delta` with the stop reason and usage, and `message_stop`.
fn message_events(message: &Value) -> Vec<Bytes> {
    let event = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        frame(Some(kind), &data)
    };
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(1);
    let mut frames = vec![event("message_start", json!({"message": start}))];
    let blocks = message["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let share = MAX_DELTAS / blocks.len().max(1);
    for (index, block) in blocks.iter().enumerate() {
        let delta = |delta: Value| {
            event(
                "content_block_delta",
                json!({"index": index, "delta": delta}),
            )
        };
        let mut empty = block.clone();
        let mut pieces = Vec::new();
        if block["type"] == "tool_use" {
            empty["input"] = json!({});
            pieces.push(delta(
                json!({"type": "input_json_delta", "partial_json": ""}),
            ));
            for piece in deltas(&block["input"].to_string(), share) {
                pieces.push(delta(
                    json!({"type": "input_json_delta", "partial_json": piece}),
                ));
            }
        } else {
            empty["text"] = json!("");
            for piece in deltas(block["text"].as_str().unwrap_or_default(), share) {
                pieces.push(delta(json!({"type": "text_delta", "text": piece})));
            }
        }
        frames.push(event(
            "content_block_start",
            json!({"index": index, "content_block": empty}),
        ));
        if index == 0 {
            frames.push(event("ping", json!({})));
        }
        frames.extend(pieces);
        frames.push(event("content_block_stop", json!({"index": index})));
    }
    frames.push(event(
        "message_delta",
        json!({"delta": {"stop_reason": message["stop_reason"], "stop_sequence": null},
               "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
    ));
    frames.push(event("message_stop", json!({})));
    frames
}

/// The Messages stream as InvokeModelWithResponseStream sends it: the request without
/// `model` and `stream`, each event's data as base64 in a `chunk` frame.
fn invoke_stream(ex: &Exchange) -> (Value, Vec<Bytes>) {
    use base64::Engine;
    let (mut request, frames) = messages_stream(ex);
    if let Some(fields) = request.as_object_mut() {
        fields.remove("model");
        fields.remove("stream");
        fields.insert("anthropic_version".into(), json!("bedrock-2023-05-31"));
    }
    let mut parser = SseParser::new();
    let chunks = (frames.iter().flat_map(|f| parser.push(f)))
        .map(|e| {
            let bytes = base64::engine::general_purpose::STANDARD.encode(&e.data);
            Framing::EventStream.encode(&SseEvent {
                event: Some("chunk".into()),
                id: None,
                data: json!({"bytes": bytes}).to_string(),
            })
        })
        .collect();
    (request, chunks)
}
