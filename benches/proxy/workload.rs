//! The benchmark's traffic: deterministic, realistic OpenAI chat-completions conversations
//! (system prompt, tool definitions with JSON schemas, growing user/assistant/tool history),
//! the answer the model gave to each request, and cassettes holding them.
//!
//! A conversation is generated turn by turn: request `n` is the history so far and its
//! response is the assistant message that request `n + 1` then carries in its history, so a
//! cassette looks like a real agent's recording. A conversation ends when its next request
//! would pass its size cap (drawn per conversation), and a new one starts.

use std::path::Path;

use bytes::Bytes;
use serde_json::{json, Value};

use agentproxy::cassette::{
    format, store, Body, Cassette, Interaction, RecordedRequest, RecordedResponse,
};
use agentproxy::matching::{key, normalize::Rules, request_key};

/// Deterministic generator (SplitMix64): the same seed gives the same traffic on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.range(0, items.len() - 1)]
    }

    fn alnum(&mut self, n: usize) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..n).map(|_| *self.pick(A) as char).collect()
    }
}

const WORDS: &[&str] = &[
    "the",
    "agent",
    "should",
    "check",
    "whether",
    "file",
    "contains",
    "a",
    "function",
    "that",
    "returns",
    "value",
    "for",
    "each",
    "request",
    "and",
    "then",
    "report",
    "result",
    "to",
    "user",
    "in",
    "order",
    "of",
    "priority",
    "when",
    "tool",
    "call",
    "fails",
    "retry",
    "once",
    "with",
    "smaller",
    "input",
    "before",
    "giving",
    "up",
    "weather",
    "forecast",
    "city",
    "temperature",
    "database",
    "query",
    "rows",
    "customer",
    "invoice",
    "total",
    "amount",
    "due",
    "date",
    "is",
    "not",
    "available",
    "please",
    "summarize",
    "findings",
    "briefly",
    "include",
    "sources",
    "where",
    "possible",
    "repository",
    "branch",
    "commit",
    "test",
    "suite",
    "passes",
    "failed",
    "because",
    "timeout",
    "network",
    "error",
    "config",
    "option",
    "default",
    "changed",
    "since",
    "last",
    "release",
    "notes",
    "mention",
    "migration",
    "steps",
    "schema",
    "column",
    "index",
    "latency",
    "throughput",
    "memory",
    "budget",
    "plan",
    "next",
    "action",
    "observation",
    "thought",
    "answer",
    "question",
    "context",
    "document",
    "section",
    "paragraph",
    "table",
    "figure",
    "shows",
    "increase",
    "decrease",
    "compared",
    "previous",
    "quarter",
    "year",
    "revenue",
    "growth",
    "team",
    "meeting",
    "scheduled",
    "tomorrow",
    "morning",
    "calendar",
    "email",
    "draft",
    "reply",
    "politely",
    "decline",
    "accept",
    "invitation",
    "project",
    "deadline",
    "moved",
    "friday",
    "estimate",
    "hours",
    "remaining",
    "work",
    "items",
    "list",
];

/// `n` words of prose, capitalized and punctuated like sentences.
fn prose(rng: &mut Rng, n: usize) -> String {
    let mut s = String::with_capacity(n * 7);
    let mut sentence = 0;
    for i in 0..n {
        let w = *rng.pick(WORDS);
        if sentence == 0 {
            let mut c = w.chars();
            if let Some(f) = c.next() {
                s.extend(f.to_uppercase());
                s.push_str(c.as_str());
            }
        } else {
            s.push_str(w);
        }
        sentence += 1;
        if sentence > 6 && (rng.chance(15) || i + 1 == n) {
            s.push('.');
            sentence = 0;
        } else if i + 1 == n {
            s.push('.');
        }
        if i + 1 != n {
            s.push(' ');
        }
    }
    s
}

/// Between `lo` and `hi` words of prose.
fn words(rng: &mut Rng, lo: usize, hi: usize) -> String {
    let n = rng.range(lo, hi);
    prose(rng, n)
}

/// The pool of tools an agent may declare; each conversation picks 3 to 8.
fn tool_pool() -> Vec<Value> {
    let defs: [(&str, &str, Value, &[&str]); 10] = [
        (
            "get_weather",
            "Get the current weather and a short forecast for a city.",
            json!({
            "city": {"type": "string", "description": "City name, e.g. Paris or San Francisco, CA"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
            "days": {"type": "integer", "minimum": 1, "maximum": 7, "description": "Forecast length in days"}}),
            &["city"],
        ),
        (
            "search_web",
            "Search the web and return the top results with titles, URLs and snippets.",
            json!({
            "query": {"type": "string", "description": "The search query"},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 20},
            "recency_days": {"type": "integer", "description": "Only results newer than this many days"}}),
            &["query"],
        ),
        (
            "read_file",
            "Read a UTF-8 text file from the workspace.",
            json!({
            "path": {"type": "string", "description": "Path relative to the workspace root"},
            "start_line": {"type": "integer", "minimum": 1},
            "end_line": {"type": "integer", "minimum": 1}}),
            &["path"],
        ),
        (
            "write_file",
            "Create or overwrite a file in the workspace.",
            json!({
            "path": {"type": "string"},
            "content": {"type": "string", "description": "The full new content of the file"},
            "create_dirs": {"type": "boolean", "default": false}}),
            &["path", "content"],
        ),
        (
            "run_shell",
            "Run a shell command in the sandbox and return stdout, stderr and exit code.",
            json!({
            "command": {"type": "string"},
            "timeout_seconds": {"type": "number", "minimum": 1, "maximum": 600},
            "cwd": {"type": "string"}}),
            &["command"],
        ),
        (
            "query_database",
            "Run a read-only SQL query against the analytics database.",
            json!({
            "sql": {"type": "string", "description": "A single SELECT statement"},
            "limit": {"type": "integer", "maximum": 1000},
            "params": {"type": "array", "items": {"type": ["string", "number", "null"]}}}),
            &["sql"],
        ),
        (
            "send_email",
            "Send an email on behalf of the user after they confirmed it.",
            json!({
            "to": {"type": "array", "items": {"type": "string", "format": "email"}, "minItems": 1},
            "subject": {"type": "string", "maxLength": 200},
            "body": {"type": "string"},
            "cc": {"type": "array", "items": {"type": "string", "format": "email"}}}),
            &["to", "subject", "body"],
        ),
        (
            "create_event",
            "Create a calendar event.",
            json!({
            "title": {"type": "string"},
            "start": {"type": "string", "format": "date-time"},
            "duration_minutes": {"type": "integer", "minimum": 5},
            "attendees": {"type": "array", "items": {"type": "object", "properties": {
                "email": {"type": "string"}, "optional": {"type": "boolean"}}, "required": ["email"]}}}),
            &["title", "start"],
        ),
        (
            "http_get",
            "Fetch a URL and return its text content, truncated to 20,000 characters.",
            json!({
            "url": {"type": "string", "format": "uri"},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}}}),
            &["url"],
        ),
        (
            "list_directory",
            "List the entries of a workspace directory.",
            json!({
            "path": {"type": "string"},
            "recursive": {"type": "boolean"},
            "glob": {"type": "string", "description": "Only entries matching this glob, e.g. *.rs"}}),
            &["path"],
        ),
    ];
    defs.into_iter()
        .map(|(name, description, props, required)| {
            json!({"type": "function", "function": {
                "name": name, "description": description, "strict": false,
                "parameters": {"type": "object", "properties": props, "required": required,
                               "additionalProperties": false}}})
        })
        .collect()
}

/// Arguments the model passes to a tool, as the JSON string OpenAI sends.
fn arguments(rng: &mut Rng, tool: &str) -> String {
    let v = match tool {
        "get_weather" => {
            json!({"city": *rng.pick(&["Paris", "Berlin", "Tokyo", "Lagos", "Lima"]), "unit": "celsius", "days": rng.range(1, 5)})
        }
        "search_web" => json!({"query": words(rng, 4, 10), "max_results": 5}),
        "read_file" => json!({"path": format!("src/module_{}.rs", rng.range(1, 40))}),
        "write_file" => {
            json!({"path": format!("notes/summary_{}.md", rng.range(1, 9)), "content": words(rng, 30, 120)})
        }
        "run_shell" => {
            json!({"command": format!("cargo test --package crate{} -- --nocapture", rng.range(1, 9)), "timeout_seconds": 120})
        }
        "query_database" => {
            json!({"sql": format!("SELECT customer_id, SUM(amount) FROM invoices WHERE due_date < '2026-0{}-01' GROUP BY 1 ORDER BY 2 DESC", rng.range(1, 9)), "limit": 50})
        }
        "send_email" => {
            json!({"to": ["alex@example.com"], "subject": prose(rng, 6), "body": words(rng, 40, 100)})
        }
        "create_event" => {
            json!({"title": prose(rng, 4), "start": "2026-03-14T09:30:00Z", "duration_minutes": 30})
        }
        "http_get" => {
            json!({"url": format!("https://docs.example.org/guide/page-{}", rng.range(1, 300))})
        }
        _ => json!({"path": "src", "recursive": true}),
    };
    v.to_string()
}

/// What a tool returns: a few hundred bytes to a few kilobytes, like real tool output.
fn tool_result(rng: &mut Rng, tool: &str) -> String {
    match tool {
        "search_web" | "list_directory" | "query_database" => {
            let n = rng.range(3, 12);
            let rows: Vec<Value> = (0..n)
                .map(|i| json!({"rank": i + 1, "title": prose(rng, 6), "url": format!("https://example.org/a/{}", rng.range(1, 99999)), "snippet": words(rng, 15, 40)}))
                .collect();
            json!({"results": rows, "elapsed_ms": rng.range(20, 900)}).to_string()
        }
        "read_file" | "http_get" | "run_shell" => {
            let lines = rng.range(10, 60);
            let mut s = String::new();
            for i in 0..lines {
                s.push_str(&format!("{:>4} | {}\n", i + 1, words(rng, 3, 12)));
            }
            s
        }
        _ => json!({"ok": true, "id": rng.alnum(12), "detail": words(rng, 10, 40)}).to_string(),
    }
}

fn completion(
    rng: &mut Rng,
    model: &str,
    message: Value,
    finish: &str,
    prompt_bytes: usize,
) -> Value {
    let completion_tokens = rng.range(10, 400);
    let prompt_tokens = prompt_bytes / 4;
    json!({
        "id": format!("chatcmpl-{}", rng.alnum(29)),
        "object": "chat.completion",
        "created": 1_767_225_600 + rng.range(0, 10_000_000),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens,
                  "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
        "service_tier": "default",
        "system_fingerprint": format!("fp_{}", rng.alnum(10)),
    })
}

/// One recorded exchange of the workload.
pub struct Exchange {
    pub request: Value,
    pub response: Value,
    /// The request as the client sends it (compact JSON).
    pub wire: Bytes,
}

/// `v` spelled as Python's `json.dumps` writes a dict built in another order than sorted:
/// each object's keys in reverse order, `", "` and `": "` between items. The same request
/// as `wire`, in another spelling: what a keyed replay is for.
pub fn respelled(v: &Value) -> Bytes {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(map) => {
                out.push('{');
                for (i, (k, item)) in map.iter().rev().enumerate() {
                    out.push_str(if i > 0 { ", " } else { "" });
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push_str(": ");
                    write(item, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    out.push_str(if i > 0 { ", " } else { "" });
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    Bytes::from(out)
}

/// `count` exchanges from consecutive conversations. Request bodies range from about 2 KB
/// (a fresh conversation) to `max_kb` (a long one).
pub fn generate(count: usize, max_kb: usize, seed: u64) -> Vec<Exchange> {
    let mut rng = Rng::new(seed);
    let pool = tool_pool();
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        conversation(&mut rng, &pool, max_kb, count - out.len(), &mut out);
    }
    out
}

fn conversation(
    rng: &mut Rng,
    pool: &[Value],
    max_kb: usize,
    left: usize,
    out: &mut Vec<Exchange>,
) {
    let cap = rng.range(max_kb * 1024 * 2 / 5, max_kb * 1024);
    let model = *rng.pick(&["gpt-4o-2024-08-06", "gpt-4o-mini", "gpt-4.1"]);
    let ntools = rng.range(3, 8);
    let mut tools: Vec<Value> = Vec::new();
    while tools.len() < ntools {
        let t = rng.pick(pool).clone();
        if !tools.contains(&t) {
            tools.push(t);
        }
    }
    let names: Vec<String> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap_or("tool").to_owned())
        .collect();
    let system = format!(
        "You are a careful assistant working for the user inside a sandboxed workspace. {} Always explain which tool you use and why.",
        words(rng, 40, 180)
    );
    let mut messages = vec![
        json!({"role": "system", "content": system}),
        json!({"role": "user", "content": words(rng, 15, 80)}),
    ];
    let temperature = [0.0, 0.2, 0.7][rng.range(0, 2)];
    let mut produced = 0;
    loop {
        let request = json!({"model": model, "messages": messages, "tools": tools,
                             "tool_choice": "auto", "parallel_tool_calls": true,
                             "temperature": temperature, "user": format!("bench-{}", rng.range(1, 50))});
        let wire = Bytes::from(serde_json::to_vec(&request).unwrap_or_default());
        if (wire.len() > cap && produced > 0) || produced >= left {
            return;
        }
        // The model's next move: call tools (60%) or answer in text.
        let (message, finish) = if rng.chance(60) {
            let calls: Vec<Value> = (0..rng.range(1, 2))
                .map(|_| {
                    let name = rng.pick(&names).clone();
                    let args = arguments(rng, &name);
                    json!({"id": format!("call_{}", rng.alnum(24)), "type": "function",
                           "function": {"name": name, "arguments": args}})
                })
                .collect();
            (
                json!({"role": "assistant", "content": null, "tool_calls": calls, "refusal": null, "annotations": []}),
                "tool_calls",
            )
        } else {
            (
                json!({"role": "assistant", "content": words(rng, 30, 350), "refusal": null, "annotations": []}),
                "stop",
            )
        };
        let response = completion(rng, model, message.clone(), finish, wire.len());
        out.push(Exchange {
            request,
            response,
            wire,
        });
        produced += 1;
        // Extend the history as the agent would for its next request.
        let mut history = message;
        if let Some(m) = history.as_object_mut() {
            m.remove("refusal");
            m.remove("annotations");
        }
        let calls = history.get("tool_calls").cloned();
        messages.push(history);
        match calls {
            Some(Value::Array(calls)) => {
                for c in calls {
                    let name = c["function"]["name"].as_str().unwrap_or("tool");
                    messages.push(json!({"role": "tool", "tool_call_id": c["id"], "content": tool_result(rng, name)}));
                }
            }
            _ => messages.push(json!({"role": "user", "content": words(rng, 10, 60)})),
        }
    }
}

/// A cassette of these exchanges, with keys computed by the library as the proxy does.
/// With `digests`, each request carries the digest of its wire bytes, as a recording of
/// them would; without, replay must parse and key every request (as it does for a
/// request spelled differently from its recording).
pub fn cassette(exchanges: &[Exchange], digests: bool) -> Cassette {
    let rules = Rules::default();
    let interactions = exchanges
        .iter()
        .enumerate()
        .map(|(i, ex)| {
            let body = Body::Json(ex.request.clone().into());
            let key = request_key(
                "openai.chat",
                "POST",
                "/v1/chat/completions",
                Some(&body),
                &rules,
            );
            Interaction {
                route: "openai.chat".into(),
                key,
                turn: None,
                request: RecordedRequest {
                    method: "POST".into(),
                    path: "/v1/chat/completions".into(),
                    body: Some(body),
                    body_xxh3: digests.then(|| key::digest_hex(key::body_digest(&ex.wire))),
                },
                response: RecordedResponse {
                    status: 200,
                    headers: [("content-type".to_string(), "application/json".to_string())].into(),
                    body: Some(Body::Json(ex.response.clone().into())),
                    events: None,
                    aborted: None,
                    encoded: Default::default(),
                    encoded_events: Default::default(),
                    event_ms: Vec::new(),
                },
                latency_ms: 400 + (i as u64 * 7919) % 2600,
                mocked: Vec::new(),
                spoiled: None,
            }
        })
        .collect();
    Cassette {
        format: format::format_version(),
        recorder: "agentproxy bench".into(),
        recorded_at: "2026-01-01T00:00:00Z".into(),
        recorded_by: None,
        upstreams: format::Upstreams(std::collections::BTreeMap::from([
            ("openai".into(), "https://api.openai.com".into()),
            ("anthropic".into(), "https://api.anthropic.com".into()),
        ])),
        match_rules: Default::default(),
        interactions,
    }
}

/// Write the cassette exactly as `agentproxy record` would (secret scan, pretty JSON);
/// returns its size in bytes.
pub fn write_cassette(path: &Path, exchanges: &[Exchange], digests: bool) -> Result<u64, String> {
    store::save(path, &cassette(exchanges, digests))
        .map_err(|e| format!("failed to write {}: {e}", path.display()))?;
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| format!("failed to stat {}: {e}", path.display()))
}

/// The SSE events of a streamed answer, as OpenAI sends them: a role chunk, content chunks,
/// a finish chunk, a usage chunk and `[DONE]`.
pub fn sse_events(chunks: usize) -> Vec<Bytes> {
    let mut rng = Rng::new(7);
    let id = format!("chatcmpl-{}", rng.alnum(29));
    let head = |choices: Value, usage: Value| {
        let mut v = json!({"id": id, "object": "chat.completion.chunk", "created": 1_767_225_600,
                           "model": "gpt-4o-mini", "system_fingerprint": "fp_0123456789",
                           "service_tier": "default", "choices": choices});
        if !usage.is_null() {
            v["usage"] = usage;
        }
        Bytes::from(format!("data: {v}\n\n"))
    };
    let mut out = vec![head(
        json!([{"index": 0, "delta": {"role": "assistant", "content": "", "refusal": null}, "logprobs": null, "finish_reason": null}]),
        Value::Null,
    )];
    for _ in 0..chunks {
        out.push(head(
            json!([{"index": 0, "delta": {"content": format!("{} ", prose(&mut rng, 8))}, "logprobs": null, "finish_reason": null}]),
            Value::Null,
        ));
    }
    out.push(head(
        json!([{"index": 0, "delta": {}, "logprobs": null, "finish_reason": "stop"}]),
        Value::Null,
    ));
    out.push(head(
        json!([]),
        json!({"prompt_tokens": 812, "completion_tokens": 64, "total_tokens": 876}),
    ));
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}
