//! A fake Ollama server for the test suite, served in-process on `127.0.0.1:0`, in the
//! wire shapes of Ollama's native API, with a log of every request it receives.
//!
//! - `POST /api/chat`: a small deterministic tool-calling script. Asked about Paris or
//!   Tokyo with a `get_weather` tool offered, the model calls it once per city
//!   (`{"city": …, "unit": "celsius"}`; offered as `PLUGIN-get_weather`, it is called by
//!   that name); once the results are in, it answers from them
//!   ("It is 18°C and sunny in Paris."). A stream unless `"stream": false`:
//!   `application/x-ndjson`, one chunk per line, the content in pieces, the tool calls
//!   whole in a chunk of their own (each with an `id` and `function.index`, as newer
//!   servers send them), and a last chunk with `done: true`, `done_reason` and the counts.
//!   Every chunk carries a fresh `created_at`, and the last one fresh durations: the
//!   volatile values a replay must not key on.
//! - `POST /api/generate`: the prompt echoed (`You said: …`), a stream unless
//!   `"stream": false`, each chunk a word of `response`, the last with `done: true`, the
//!   counts and a `context`.
//! - `GET /api/tags`, `GET /api/version`, `POST /api/show`, `POST /api/embed`: fixed
//!   answers.
//! - Errors as Ollama gives them: `{"error": "…"}` with 404 for an unknown model
//!   (`missing`), 400 for a body that is not JSON.

use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use super::server::{Body, Server};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::HeaderValue;
use hyper::{Method, Request, Response, StatusCode};

use serde_json::{json, Value};

pub use super::fake_openai::LoggedRequest;

/// A running fake Ollama server; [`Self::stop`] closes it.
pub struct FakeOllama {
    log: Arc<Mutex<Vec<LoggedRequest>>>,
    server: Server,
}

impl FakeOllama {
    pub async fn start() -> FakeOllama {
        let log = Arc::new(Mutex::new(Vec::new()));
        let server = Server::start("fake ollama", Arc::clone(&log), |log, req| async move {
            handle(&log, req).await
        })
        .await;
        FakeOllama { log, server }
    }

    /// The base URL (what `OLLAMA_HOST` and `--upstream ollama=URL` take).
    pub fn url(&self) -> String {
        self.server.url()
    }

    pub fn requests(&self) -> Vec<LoggedRequest> {
        lock(&self.log).clone()
    }

    pub fn request_count(&self) -> usize {
        lock(&self.log).len()
    }

    /// Closes the listener, then waits, bounded, for in-flight answers.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn handle(log: &Mutex<Vec<LoggedRequest>>, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let json = serde_json::from_slice::<Value>(&body).ok();
    lock(log).push(LoggedRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts.headers.clone(),
        body,
        json: json.clone(),
    });
    let post = parts.method == Method::POST;
    match (&parts.method, parts.uri.path()) {
        (_, "/api/chat" | "/api/generate" | "/api/show" | "/api/embed")
            if post && json.is_none() =>
        {
            error(
                StatusCode::BAD_REQUEST,
                "invalid character looking for beginning of value",
            )
        }
        (_, "/api/chat") if post => chat(json.as_ref().unwrap_or(&Value::Null)),
        (_, "/api/generate") if post => generate(json.as_ref().unwrap_or(&Value::Null)),
        (&Method::GET, "/api/tags") => whole(json!({"models": [{
            "name": "llama3.2:latest", "model": "llama3.2:latest",
            "modified_at": "2026-11-01T10:00:00Z", "size": 2019393189,
            "digest": "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
            "details": {"format": "gguf", "family": "llama", "parameter_size": "3.2B",
                        "quantization_level": "Q4_K_M"}}]})),
        (&Method::GET, "/api/version") => whole(json!({"version": "0.13.0"})),
        (_, "/api/show") if post => whole(json!({"modelfile": "FROM llama3.2",
            "details": {"family": "llama"}, "model_info": {"general.architecture": "llama"}})),
        (_, "/api/embed") if post => whole(json!({"model": "all-minilm",
            "embeddings": [[0.01, -0.02, 0.03]], "prompt_eval_count": 4})),
        (method, path) => error(StatusCode::NOT_FOUND, &format!("{method} {path} not found")),
    }
}

fn whole(body: Value) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())).boxed_unsync());
    r.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    r
}

fn error(status: StatusCode, message: &str) -> Response<Body> {
    let mut r = whole(json!({ "error": message }));
    *r.status_mut() = status;
    r
}

/// Nanoseconds since the epoch: a fresh, volatile value per answer.
fn now() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn created_at() -> String {
    format!("2026-12-05T06:00:00.{}Z", now() % 1_000_000_000)
}

const READINGS: [(&str, i64, &str); 2] = [("Paris", 18, "sunny"), ("Tokyo", 22, "cloudy")];

/// The scripted model: tool calls for the cities asked about, then an answer from the
/// results.
fn chat(request: &Value) -> Response<Body> {
    let model = request["model"].as_str().unwrap_or_default();
    if model == "missing" {
        return error(
            StatusCode::NOT_FOUND,
            "model \"missing\" not found, try pulling it first",
        );
    }
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    // The name it is offered by: `get_weather`, or behind a plugin prefix
    // (`weather-get_weather`, as Semantic Kernel names a plugin's functions).
    let offered = (request["tools"].as_array().into_iter().flatten())
        .filter_map(|t| t["function"]["name"].as_str())
        .find(|n| *n == "get_weather" || n.ends_with("-get_weather"))
        .map(str::to_owned);
    let text = |m: &Value| m["content"].as_str().unwrap_or_default().to_owned();
    let (content, calls) = if last["role"] == "tool" {
        let results: Vec<Value> = (messages.iter().rev())
            .take_while(|m| m["role"] == "tool")
            .filter_map(|m| serde_json::from_str(&text(m)).ok())
            .collect();
        let parts: Vec<String> = (results.iter().rev())
            .map(|r| {
                let field = |name: &str| r[name].as_str().unwrap_or_default().to_owned();
                format!(
                    "It is {}°C and {} in {}.",
                    r["temp_c"],
                    field("sky"),
                    field("city")
                )
            })
            .collect();
        (parts.join(" "), Vec::new())
    } else {
        let asked = text(&last);
        let cities: Vec<&str> = (READINGS.iter())
            .filter(|(city, ..)| asked.contains(city))
            .map(|(city, ..)| *city)
            .collect();
        if let (Some(name), false) = (&offered, cities.is_empty()) {
            let calls = (cities.iter().enumerate())
                .map(|(i, city)| {
                    json!({"id": format!("call_{:x}", now() % 0xffff_ffff + i as u128),
                    "function": {"index": i, "name": name,
                                 "arguments": {"city": city, "unit": "celsius"}}})
                })
                .collect();
            (String::new(), calls)
        } else {
            (format!("You said: {asked}"), Vec::new())
        }
    };
    let last_chunk = json!({
        "model": model, "created_at": created_at(),
        "message": {"role": "assistant", "content": ""},
        "done": true, "done_reason": "stop",
        "total_duration": now() % 1_000_000_000, "load_duration": 1_000_000,
        "prompt_eval_count": 20 + messages.len(), "eval_count": 5 + content.len() / 4,
    });
    if request["stream"] == false {
        let mut answer = last_chunk;
        answer["message"]["content"] = json!(content);
        if !calls.is_empty() {
            answer["message"]["tool_calls"] = json!(calls);
        }
        return whole(answer);
    }
    let chunk = |message: Value| json!({"model": model, "created_at": created_at(), "message": message, "done": false});
    let mut lines: Vec<Value> = Vec::new();
    if !calls.is_empty() {
        lines.push(chunk(
            json!({"role": "assistant", "content": "", "tool_calls": calls}),
        ));
    }
    for word in content.split_inclusive(' ') {
        lines.push(chunk(json!({"role": "assistant", "content": word})));
    }
    lines.push(last_chunk);
    ndjson(lines)
}

/// The completion API: the prompt echoed, word by word when streamed.
fn generate(request: &Value) -> Response<Body> {
    let model = request["model"].as_str().unwrap_or_default();
    let prompt = request["prompt"].as_str().unwrap_or_default();
    let text = format!("You said: {prompt}");
    let last_chunk = json!({
        "model": model, "created_at": created_at(), "response": "",
        "done": true, "done_reason": "stop", "context": [1, 2, prompt.len()],
        "total_duration": now() % 1_000_000_000, "load_duration": 1_000_000,
        "prompt_eval_count": 10 + prompt.len() / 4, "eval_count": 3 + text.len() / 4,
    });
    if request["stream"] == false {
        let mut answer = last_chunk;
        answer["response"] = json!(text);
        return whole(answer);
    }
    let mut lines: Vec<Value> = text
        .split_inclusive(' ')
        .map(|word| json!({"model": model, "created_at": created_at(), "response": word, "done": false}))
        .collect();
    lines.push(last_chunk);
    ndjson(lines)
}

/// A stream of these objects, one per line, as Ollama sends it.
fn ndjson(lines: Vec<Value>) -> Response<Body> {
    let frames = lines
        .into_iter()
        .map(|l| Ok::<_, Infallible>(Frame::data(Bytes::from(format!("{l}\n")))));
    let mut r = Response::new(StreamBody::new(futures_util::stream::iter(frames)).boxed_unsync());
    r.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("application/x-ndjson"),
    );
    r
}
