//! What the fake Anthropic upstream answers (the HTTP side is in `fake_anthropic.rs`): the
//! Messages API in Anthropic's wire shapes, and its errors.
//!
//! The model is the chat fake's script (`fake_openai_model.rs`): the request is read as the
//! equivalent chat conversation (`system`, text blocks, `tool_use` as assistant tool calls,
//! `tool_result` blocks as tool messages, `input_schema` tools), and the scripted answer is
//! written back as content blocks. So it calls `get_weather` / `get_time` for a question
//! that names a city, describes tool results once they come back ("It is 18°C and sunny
//! in Paris."), and echoes anything else. Like Claude, it says a short sentence before
//! its tool calls, so a tool-calling message holds a `text` block then `tool_use` blocks.
//!
//! It refuses what the real API refuses about tool use: a `tool_result` whose `tool_use_id`
//! is not a `tool_use` of the previous assistant message, and a `tool_use` left without a
//! `tool_result` in the next user message. A proxy that served a mangled or wrong id fails.
//!
//! Volatile values are fresh on every call, as from the real API: `msg_01…` and
//! `toolu_01…` ids, and the `request_id` of errors.
//!
//! Claude Code's tool search is played as Claude plays it: Claude Code lists MCP tools as
//! deferred in its prompt ("…Use ToolSearch with query "select:<name>[,<name>...]" to load
//! tool schemas before calling them:" and a name per line) beside its `ToolSearch` tool,
//! and a tool is loaded once a `ToolSearch` result names it in a `tool_reference` block
//! (then it is offered with `defer_loading: true`). The script is offered the deferred
//! tools too; a call it makes to one not yet loaded becomes a `ToolSearch` call selecting
//! it (`{"query": "select:NAME"}`), and it never sees those search exchanges.

use bytes::Bytes;
use hyper::StatusCode;
use serde_json::{json, Map, Value};

use super::chat_model::{chat, fragments, random_token, Answer};

/// What the model says before calling tools.
pub(super) const PREAMBLE: &str = "I'll look that up.";

/// Anthropic's error shape.
pub(super) fn error(status: StatusCode, kind: &str, message: &str, request_id: &str) -> Answer {
    Answer::Json {
        status,
        body: json!({"type": "error", "error": {"type": kind, "message": message},
                     "request_id": request_id}),
        headers: Vec::new(),
    }
}

fn invalid(message: &str, request_id: &str) -> Answer {
    error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        message,
        request_id,
    )
}

/// The error a `fail_next` call asked for, with the type and message the real API uses for
/// that status.
pub(super) fn injected_failure(status: StatusCode, request_id: &str) -> Answer {
    let (kind, message) = match status.as_u16() {
        400 => (
            "invalid_request_error",
            "The request was rejected (injected by the fake upstream).",
        ),
        401 => ("authentication_error", "invalid x-api-key"),
        403 => (
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        404 => ("not_found_error", "Not Found"),
        413 => (
            "request_too_large",
            "Request exceeds the maximum allowed number of bytes.",
        ),
        429 => (
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50 requests \
             per minute. Please try again later.",
        ),
        529 => ("overloaded_error", "Overloaded"),
        500..=599 => ("api_error", "Internal server error"),
        _ => (
            "invalid_request_error",
            "The request was rejected (injected by the fake upstream).",
        ),
    };
    let mut answer = error(status, kind, message, request_id);
    if let (Answer::Json { headers, .. }, StatusCode::TOO_MANY_REQUESTS) = (&mut answer, status) {
        headers.push(("retry-after", "1".to_owned()));
    }
    answer
}

/// `POST /v1/messages`. `overload`: a streamed answer breaks off with an `error` event.
pub(super) fn messages(request: &Value, overload: bool, request_id: &str) -> Answer {
    let Some(model) = request.get("model").and_then(Value::as_str) else {
        return invalid("model: Field required", request_id);
    };
    if request.get("max_tokens").and_then(Value::as_u64).is_none() {
        return invalid("max_tokens: Field required", request_id);
    }
    let Some(turns) = request["messages"].as_array() else {
        return invalid("messages: Field required", request_id);
    };
    if turns.is_empty() {
        return invalid("messages: at least one message is required", request_id);
    }
    if let Some(problem) = tool_pairing_problem(turns) {
        return invalid(&problem, request_id);
    }

    let search = Search::of(request, turns);
    let mut chat_request = json!({
        "model": model,
        "messages": chat_messages(request, turns, &search),
        "tools": search.with_deferred(chat_tools(request)),
    });
    match request["tool_choice"]["type"].as_str() {
        Some("none") => chat_request["tool_choice"] = json!("none"),
        Some(_) if request["tool_choice"]["disable_parallel_tool_use"] == true => {
            chat_request["parallel_tool_calls"] = json!(false)
        }
        _ => {}
    }
    let (completion, message) = match chat(&chat_request) {
        Answer::Json {
            status: StatusCode::OK,
            body,
            ..
        } => {
            let message = body["choices"][0]["message"].clone();
            (body, message)
        }
        Answer::Json { body, .. } => {
            let text = body["error"]["message"]
                .as_str()
                .unwrap_or("invalid request");
            return invalid(text, request_id);
        }
        Answer::Stream(_) => unreachable!("the chat script streams only when asked to"),
    };
    let calls: Vec<(String, Value)> = (message["tool_calls"].as_array().into_iter().flatten())
        .map(|call| {
            let input = call["function"]["arguments"]
                .as_str()
                .and_then(|a| serde_json::from_str::<Value>(a).ok())
                .unwrap_or_else(|| json!({}));
            let name = call["function"]["name"].as_str().unwrap_or_default();
            (name.to_owned(), input)
        })
        .collect();
    let calls = search.first_select(calls);
    let content: Vec<Value> = if calls.is_empty() {
        vec![json!({"type": "text", "text": message["content"].as_str().unwrap_or_default()})]
    } else {
        std::iter::once(json!({"type": "text", "text": PREAMBLE}))
            .chain(calls.iter().map(|(name, input)| {
                json!({"type": "tool_use", "id": format!("toolu_01{}", random_token(22)),
                       "name": name, "input": input})
            }))
            .collect()
    };
    let usage = &completion["usage"];
    let input_tokens = usage["prompt_tokens"].as_u64().unwrap_or(1);
    let output_tokens =
        usage["completion_tokens"].as_u64().unwrap_or(1) + if calls.is_empty() { 0 } else { 6 };
    let body = json!({
        "id": format!("msg_01{}", random_token(22)),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
        "stop_sequence": null,
        "usage": {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": output_tokens,
            "service_tier": "standard",
        },
    });
    if request["stream"] == true {
        Answer::Stream(stream_events(&body, overload))
    } else {
        Answer::Json {
            status: StatusCode::OK,
            body,
            headers: Vec::new(),
        }
    }
}

/// The blocks of a message's content (a string is one text block).
fn blocks(message: &Value) -> Vec<Value> {
    match &message["content"] {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks.clone(),
        _ => Vec::new(),
    }
}

fn ids_of(blocks: &[Value], kind: &str, field: &str) -> Vec<String> {
    blocks
        .iter()
        .filter(|b| b["type"] == kind)
        .filter_map(|b| b[field].as_str().map(str::to_owned))
        .collect()
}

/// Every `tool_use` must be answered by a `tool_result` in the very next (user) message,
/// and every `tool_result` must answer a `tool_use` of the message before it; the real API
/// words its refusals like this.
fn tool_pairing_problem(turns: &[Value]) -> Option<String> {
    for (i, turn) in turns.iter().enumerate() {
        let results = ids_of(&blocks(turn), "tool_result", "tool_use_id");
        let previous_uses = match i.checked_sub(1) {
            Some(p) if turns[p]["role"] == "assistant" => {
                ids_of(&blocks(&turns[p]), "tool_use", "id")
            }
            _ => Vec::new(),
        };
        if let Some(id) = results.iter().find(|id| !previous_uses.contains(id)) {
            return Some(format!(
                "messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: \
                 {id}. Each `tool_result` block must have a corresponding `tool_use` block in \
                 the previous message."
            ));
        }
        if turn["role"] == "assistant" && i + 1 < turns.len() {
            let uses = ids_of(&blocks(turn), "tool_use", "id");
            let answered = ids_of(&blocks(&turns[i + 1]), "tool_result", "tool_use_id");
            if let Some(id) = uses.iter().find(|id| !answered.contains(id)) {
                return Some(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks \
                     immediately after: {id}. Each `tool_use` block must have a corresponding \
                     `tool_result` block in the next message."
                ));
            }
        }
    }
    None
}

/// A text-only view of `system` or of a `tool_result`'s content: a string, or its text
/// blocks joined.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Claude Code's tool search in a request: whether `ToolSearch` is offered, the tools
/// offered deferred, those a search result loaded, and the ids of the search calls.
struct Search {
    offered: bool,
    deferred: Vec<String>,
    loaded: Vec<String>,
    calls: Vec<Value>,
}

const TOOL_SEARCH: &str = "ToolSearch";

impl Search {
    fn of(request: &Value, turns: &[Value]) -> Search {
        let tools = request["tools"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let named = |t: &Value| t["name"].as_str().unwrap_or_default().to_owned();
        let all_blocks = || turns.iter().flat_map(blocks);
        let texts = std::iter::once(text_of(&request["system"]))
            .chain(all_blocks().filter_map(|b| b["text"].as_str().map(str::to_owned)));
        Search {
            offered: tools.iter().any(|t| t["name"] == TOOL_SEARCH),
            deferred: (tools.iter())
                .filter(|t| t["defer_loading"] == true)
                .map(named)
                .chain(texts.flat_map(|t| listed_deferred(&t)))
                .collect(),
            loaded: all_blocks()
                .filter(|b| b["type"] == "tool_result")
                .flat_map(|b| b["content"].as_array().cloned().unwrap_or_default())
                .filter(|c| c["type"] == "tool_reference")
                .map(|c| c["tool_name"].as_str().unwrap_or_default().to_owned())
                .collect(),
            calls: all_blocks()
                .filter(|b| b["type"] == "tool_use" && b["name"] == TOOL_SEARCH)
                .map(|b| b["id"].clone())
                .collect(),
        }
    }

    /// The chat tools, with a bare definition of each deferred tool they lack.
    fn with_deferred(&self, tools: Value) -> Value {
        let mut tools = tools.as_array().cloned().unwrap_or_default();
        for name in &self.deferred {
            if !tools.iter().any(|t| &t["function"]["name"] == name) {
                tools.push(json!({"type": "function", "function": {
                    "name": name, "parameters": {"type": "object"}}}));
            }
        }
        Value::Array(tools)
    }

    /// The script's calls, or one `ToolSearch` call selecting the deferred tools among
    /// them that are not loaded yet.
    fn first_select(&self, calls: Vec<(String, Value)>) -> Vec<(String, Value)> {
        let unloaded: Vec<&str> = (calls.iter())
            .map(|(name, _)| name.as_str())
            .filter(|n| self.deferred.iter().any(|d| d == n))
            .filter(|n| !self.loaded.iter().any(|l| l == n))
            .collect();
        if !self.offered || unloaded.is_empty() {
            return calls;
        }
        let query = format!("select:{}", unloaded.join(","));
        vec![(TOOL_SEARCH.to_owned(), json!({ "query": query }))]
    }

    /// Is this block part of a tool search (a `ToolSearch` call or its result)?
    fn holds(&self, block: &Value) -> bool {
        (block["type"] == "tool_use" && block["name"] == TOOL_SEARCH)
            || (block["type"] == "tool_result" && self.calls.contains(&block["tool_use_id"]))
    }
}

/// The tool names a prompt lists as deferred: the lines after Claude Code's "Use
/// ToolSearch with query "select:…" … before calling them:", up to a blank line.
fn listed_deferred(text: &str) -> Vec<String> {
    let Some(at) = text.find("Use ToolSearch with query \"select:") else {
        return Vec::new();
    };
    let Some(colon) = text[at..].find(":\n") else {
        return Vec::new();
    };
    text[at + colon + 2..]
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_owned())
        .collect()
}

/// The conversation as chat messages for the chat script, without the tool searches (an
/// assistant turn that only searched is left out whole).
fn chat_messages(request: &Value, turns: &[Value], search: &Search) -> Vec<Value> {
    let mut messages = Vec::new();
    let system = text_of(&request["system"]);
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    for turn in turns {
        let all = blocks(turn);
        let blocks: Vec<Value> = all.iter().filter(|b| !search.holds(b)).cloned().collect();
        let only_searched =
            blocks.len() < all.len() && !blocks.iter().any(|b| b["type"] == "tool_use");
        if turn["role"] == "assistant" && only_searched {
            continue;
        }
        let text: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect();
        if turn["role"] == "assistant" {
            let calls: Vec<Value> = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| {
                    json!({"id": b["id"], "type": "function",
                           "function": {"name": b["name"], "arguments": b["input"].to_string()}})
                })
                .collect();
            let mut message = json!({"role": "assistant", "content": text.join("")});
            if !calls.is_empty() {
                message["tool_calls"] = json!(calls);
            }
            messages.push(message);
        } else {
            for result in blocks.iter().filter(|b| b["type"] == "tool_result") {
                messages.push(
                    json!({"role": "tool", "tool_call_id": result["tool_use_id"],
                                     "content": text_of(&result["content"])}),
                );
            }
            if !text.is_empty() {
                messages.push(json!({"role": "user", "content": text.join("\n")}));
            }
        }
    }
    messages
}

/// Client tools (`{name, description, input_schema}`) in the chat shape; server tools
/// (`{type: "web_search_…", …}`) are left out.
fn chat_tools(request: &Value) -> Value {
    let tools = request["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    tools
        .iter()
        .filter(|t| t.get("input_schema").is_some())
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t["name"], "description": t["description"], "parameters": t["input_schema"]}})
        })
        .collect()
}

/// One event as Anthropic frames it: the `event:` name repeats the data's `type`.
fn event(kind: &str, mut fields: Map<String, Value>) -> Bytes {
    let mut data = Map::new();
    data.insert("type".into(), json!(kind));
    data.append(&mut fields);
    Bytes::from(format!("event: {kind}\ndata: {}\n\n", Value::Object(data)))
}

fn fields(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The events of a streamed message: `message_start` (empty content, `output_tokens: 1`),
/// per block `content_block_start`, a `ping` after the first one, the block's deltas
/// (`text_delta`; for `tool_use` an empty `input_json_delta` first, then the input's JSON in
/// fragments split mid-key and mid-value), `content_block_stop`; then `message_delta` with
/// the stop reason and the usage, and `message_stop`. With `overload`, the stream stops
/// after the first block with an `error` event instead.
fn stream_events(message: &Value, overload: bool) -> Vec<Bytes> {
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(1);
    let mut events = vec![event("message_start", fields(json!({"message": start})))];
    let content = message["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (index, block) in content.iter().enumerate() {
        let mut empty = block.clone();
        match block["type"].as_str() {
            Some("tool_use") => empty["input"] = json!({}),
            _ => empty["text"] = json!(""),
        }
        events.push(event(
            "content_block_start",
            fields(json!({"index": index, "content_block": empty})),
        ));
        if index == 0 {
            events.push(event("ping", Map::new()));
        }
        let delta = |delta: Value| {
            event(
                "content_block_delta",
                fields(json!({"index": index, "delta": delta})),
            )
        };
        if block["type"] == "tool_use" {
            // The real API starts every tool input with an empty fragment, and spaces its JSON.
            events.push(delta(
                json!({"type": "input_json_delta", "partial_json": ""}),
            ));
            let input = spaced_json(&block["input"]);
            for piece in fragments(&input) {
                events.push(delta(
                    json!({"type": "input_json_delta", "partial_json": piece}),
                ));
            }
        } else {
            for piece in fragments(block["text"].as_str().unwrap_or_default()) {
                events.push(delta(json!({"type": "text_delta", "text": piece})));
            }
        }
        events.push(event("content_block_stop", fields(json!({"index": index}))));
        if overload {
            events.push(event(
                "error",
                fields(json!({"error": {"type": "overloaded_error", "message": "Overloaded"}})),
            ));
            return events;
        }
    }
    let usage = &message["usage"];
    events.push(event(
        "message_delta",
        fields(json!({
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": null},
            "usage": {
                "input_tokens": usage["input_tokens"],
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": usage["output_tokens"],
            },
        })),
    ));
    events.push(event("message_stop", Map::new()));
    events
}

/// JSON with a space after `:` and `,`, as Claude writes tool input.
fn spaced_json(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let entries: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), spaced_json(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(spaced_json).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}
