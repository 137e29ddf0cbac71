//! A fake OpenAI upstream for the test suite, served in-process on `127.0.0.1:0`.
//!
//! It answers `POST /v1/chat/completions` (plain and streamed, with a small deterministic
//! tool-calling script), `POST /v1/responses` (the Responses API, see
//! `fake_openai_responses.rs`), `GET /v1/models` and `POST /v1/embeddings`, in OpenAI's own
//! wire shapes, and logs every request it receives.
//!
//! The *content* of every answer is a function of the request, so a recorded run and its
//! replay print the same thing. The volatile values are not: like the real API, each answer
//! carries a fresh `chatcmpl-…` id, `created` time, `system_fingerprint`, `call_…` tool-call
//! ids, `x-request-id` and `set-cookie`. A proxy that keyed on them, or that did not serve
//! recorded bodies byte for byte, fails its tests against this fake.
//!
//! This file is the HTTP side (server, controls, request log); what the fake says is in
//! `fake_openai_model.rs`. Integration tests reach it through `mod support;`, the benchmark
//! through `#[path]`, so the two files depend on nothing else in `tests/support`.

use std::convert::Infallible;
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;

use super::server::{Body, Server};
use flate2::{write::GzEncoder, Compression};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use serde_json::Value;
use tokio::sync::mpsc;

// An explicit path, so the file resolves the same whether this one is reached through
// `mod support;` or through the benchmark's `#[path]`.
#[path = "fake_openai_model.rs"]
mod model;
#[path = "fake_openai_realtime.rs"]
mod realtime;
#[path = "fake_openai_responses.rs"]
mod responses;
#[path = "fake_openai_socket.rs"]
mod socket;
#[allow(clippy::duplicate_mod)]
#[path = "fake_ws.rs"]
mod ws;

use model::{chat, embeddings, injected_failure, models, random_token, Answer};

/// Settings fixed at start; each can also be changed while running.
#[derive(Clone, Debug, Default)]
pub struct FakeConfig {
    /// Delay before every answer; see [`FakeOpenAi::set_latency`].
    pub latency: Duration,
    /// Gzip every answer, streams too; see [`FakeOpenAi::set_gzip`].
    pub gzip: bool,
}

/// One request as the fake received it.
#[derive(Clone, Debug)]
pub struct LoggedRequest {
    pub method: String,
    /// The path without the query, e.g. `/v1/chat/completions`.
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The body parsed as JSON, when it is JSON.
    pub json: Option<Value>,
}

impl LoggedRequest {
    /// An upgrade to a WebSocket as logged: its head (it has no body).
    pub fn of_upgrade<B>(req: &Request<B>) -> LoggedRequest {
        LoggedRequest {
            method: req.method().to_string(),
            path: req.uri().path().to_owned(),
            query: req.uri().query().map(str::to_owned),
            headers: req.headers().clone(),
            body: Bytes::new(),
            json: None,
        }
    }

    /// A header's value, when present and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A running fake upstream. Dropping it stops accepting connections, like [`Self::stop`]
/// without waiting.
pub struct FakeOpenAi {
    shared: Arc<Shared>,
    server: Server,
}

struct Shared {
    log: Mutex<Vec<LoggedRequest>>,
    control: Mutex<Control>,
    responses: Arc<responses::Store>,
    /// The WebSockets' frames and controls.
    sockets: Arc<socket::Sockets>,
}

struct Control {
    latency: Duration,
    gzip: bool,
    fail_status: StatusCode,
    fail_remaining: usize,
}

impl FakeOpenAi {
    /// Starts a fake with no latency and no compression.
    pub async fn start() -> FakeOpenAi {
        Self::start_with(FakeConfig::default()).await
    }

    /// Starts a fake with the given settings, on the current tokio runtime.
    pub async fn start_with(config: FakeConfig) -> FakeOpenAi {
        let shared = Arc::new(Shared {
            log: Mutex::new(Vec::new()),
            control: Mutex::new(Control {
                latency: config.latency,
                gzip: config.gzip,
                fail_status: StatusCode::INTERNAL_SERVER_ERROR,
                fail_remaining: 0,
            }),
            responses: Arc::default(),
            sockets: Arc::default(),
        });
        let server = Server::start(
            "fake upstream",
            Arc::clone(&shared),
            |shared, req| async move { handle(&shared, req).await },
        )
        .await;
        FakeOpenAi { shared, server }
    }

    /// The base URL, without `/v1` (what `--upstream` takes).
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        lock(&self.shared.log).clone()
    }

    pub fn request_count(&self) -> usize {
        lock(&self.shared.log).len()
    }

    /// The JSON of every frame a program sent on a WebSocket, in arrival order.
    pub fn frames(&self) -> Vec<Value> {
        lock(&self.shared.sockets.frames).clone()
    }

    /// The next `times` WebSocket turns are cut after two events (a close with 1011).
    pub fn cut_next_turns(&self, times: usize) {
        self.shared
            .sockets
            .cuts
            .store(times, std::sync::atomic::Ordering::SeqCst);
    }

    /// How many WebSockets have ended, closed by either side.
    pub fn sockets_ended(&self) -> usize {
        self.shared
            .sockets
            .ended
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The next `times` model calls (chat completions, responses and embeddings) answer
    /// `status` in OpenAI's error shape; a 429 also carries `retry-after`. Replaces any
    /// pending failures.
    pub fn fail_next(&self, status: u16, times: usize) {
        let status = StatusCode::from_u16(status)
            .unwrap_or_else(|_| panic!("fake upstream: {status} is not an HTTP status"));
        let mut control = lock(&self.shared.control);
        control.fail_status = status;
        control.fail_remaining = times;
    }

    /// Delay before each answer. A stream sends its headers at once, its first event after
    /// half the delay and spreads the other half evenly between the remaining events, so
    /// both time-to-first-token and total time are visible to a benchmark.
    pub fn set_latency(&self, latency: Duration) {
        lock(&self.shared.control).latency = latency;
    }

    /// Gzip JSON answers (`content-encoding: gzip`) whatever the client's `accept-encoding`,
    /// as some upstreams do. Streams are never compressed.
    pub fn set_gzip(&self, on: bool) {
        lock(&self.shared.control).gzip = on;
    }

    /// Closes the listener (later connections are refused), then waits, bounded, for
    /// in-flight answers to finish.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// A lock that survives a test that panicked while holding it, so one failure does not
/// hide the next assertion behind a poison error.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    if ws::asks(&req) {
        lock(&shared.log).push(LoggedRequest::of_upgrade(&req));
        return socket::upgrade(req, shared.responses.clone(), shared.sockets.clone());
    }
    let (parts, body) = req.into_parts();
    // A body cut short by the client is logged as empty; the answer goes nowhere anyway.
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let json = serde_json::from_slice::<Value>(&body).ok();
    lock(&shared.log).push(LoggedRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts.headers,
        body,
        json: json.clone(),
    });

    // Azure OpenAI serves the same API under `/openai/…`.
    let path = match azure_path(parts.uri.path(), parts.uri.query()) {
        Ok(path) => path,
        Err(answer) => return render(answer, Duration::ZERO, false).await,
    };
    let path = path.as_deref().unwrap_or(parts.uri.path());
    let model_call = parts.method == Method::POST
        && matches!(
            path,
            "/v1/chat/completions" | "/v1/responses" | "/v1/embeddings"
        );
    let (latency, gzip, failure) = {
        let mut control = lock(&shared.control);
        let failure = (model_call && control.fail_remaining > 0).then(|| {
            control.fail_remaining -= 1;
            control.fail_status
        });
        (control.latency, control.gzip, failure)
    };

    let answer = match (failure, &parts.method, path) {
        (Some(status), _, _) => injected_failure(status),
        (None, _, _) if model_call && json.is_none() => Answer::invalid(
            "We could not parse the JSON body of your request. (HINT: This likely means you \
             aren't using your HTTP library correctly. The OpenAI API expects a JSON payload.)",
            None,
        ),
        (None, &Method::POST, "/v1/chat/completions") => {
            chat(json.as_ref().unwrap_or(&Value::Null))
        }
        (None, &Method::POST, "/v1/responses") => {
            responses::create(&shared.responses, json.as_ref().unwrap_or(&Value::Null))
        }
        (None, &Method::POST, "/v1/embeddings") => {
            embeddings(json.as_ref().unwrap_or(&Value::Null))
        }
        (None, &Method::GET, "/v1/models") => models(),
        (None, method, path) => Answer::error(
            StatusCode::NOT_FOUND,
            &format!("Invalid URL ({method} {path})"),
            "invalid_request_error",
            None,
            None,
        ),
    };
    render(answer, latency, gzip).await
}

/// The OpenAI path an Azure OpenAI path stands for: `/openai/deployments/{d}/X` and
/// `/openai/X` (which need an `api-version`, as Azure's do) and `/openai/v1/X` are
/// `/v1/X`. `Ok(None)` for a path that is not Azure's.
fn azure_path(path: &str, query: Option<&str>) -> Result<Option<String>, Answer> {
    let Some(rest) = path.strip_prefix("/openai/") else {
        return Ok(None);
    };
    if let Some(v1) = rest.strip_prefix("v1/") {
        return Ok(Some(format!("/v1/{v1}")));
    }
    let has_version = query.is_some_and(|q| q.split('&').any(|p| p.starts_with("api-version=")));
    if !has_version {
        return Err(Answer::error(
            StatusCode::NOT_FOUND,
            "Resource not found",
            "404",
            None,
            None,
        ));
    }
    let rest = match rest.strip_prefix("deployments/") {
        Some(d) => d.split_once('/').map_or("", |(_, rest)| rest),
        None => rest,
    };
    Ok(Some(format!("/v1/{rest}")))
}

async fn render(answer: Answer, latency: Duration, gzip: bool) -> Response<Body> {
    let mut response = match answer {
        Answer::Json {
            status,
            body,
            headers,
        } => {
            pause(latency).await;
            let bytes = serde_json::to_vec(&body).expect("a serde_json::Value always serializes");
            let mut response =
                Response::new(Full::new(Bytes::from(maybe_gzip(bytes, gzip))).boxed_unsync());
            *response.status_mut() = status;
            let h = response.headers_mut();
            h.insert("content-type", HeaderValue::from_static("application/json"));
            if gzip {
                h.insert("content-encoding", HeaderValue::from_static("gzip"));
            }
            for (name, value) in headers {
                h.insert(HeaderName::from_static(name), header_value(value));
            }
            response
        }
        Answer::Stream(events) => {
            let events = if gzip { gzip_events(events) } else { events };
            let mut response = Response::new(stream_body(events, latency));
            let h = response.headers_mut();
            if gzip {
                h.insert("content-encoding", HeaderValue::from_static("gzip"));
            }
            h.insert(
                "content-type",
                HeaderValue::from_static("text/event-stream; charset=utf-8"),
            );
            h.insert("cache-control", HeaderValue::from_static("no-cache"));
            response
        }
    };
    // Volatile headers the real API sends; a proxy must neither key on them nor store the
    // cookie.
    let h = response.headers_mut();
    h.insert(
        "x-request-id",
        header_value(format!("req_{}", random_token(32))),
    );
    h.insert(
        "openai-processing-ms",
        header_value(latency.as_millis().to_string()),
    );
    h.insert("openai-version", HeaderValue::from_static("2020-10-01"));
    h.insert(
        "set-cookie",
        header_value(format!(
            "__cf_bm={}; path=/; HttpOnly; Secure; SameSite=None",
            random_token(43)
        )),
    );
    response
}

/// Sleeps, unless there is nothing to wait for: a zero-length timer still costs a wakeup
/// per chunk, which a benchmark at zero latency would measure.
async fn pause(delay: Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

fn header_value(value: String) -> HeaderValue {
    HeaderValue::from_str(&value).expect("the fake only builds visible-ASCII header values")
}

fn maybe_gzip(bytes: Vec<u8>, gzip: bool) -> Vec<u8> {
    if !gzip {
        return bytes;
    }
    let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
    encoder
        .write_all(&bytes)
        .expect("writing to a Vec cannot fail");
    encoder.finish().expect("writing to a Vec cannot fail")
}

/// A gzip stream with a sync flush after each event, as servers that compress event streams
/// send them: each chunk decodes to whole events as it arrives; the trailer comes last.
fn gzip_events(events: Vec<Bytes>) -> Vec<Bytes> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
    let mut out: Vec<Bytes> = events
        .iter()
        .map(|e| {
            encoder.write_all(e).expect("writing to a Vec cannot fail");
            encoder.flush().expect("writing to a Vec cannot fail");
            Bytes::from(std::mem::take(encoder.get_mut()))
        })
        .collect();
    out.push(Bytes::from(
        encoder.finish().expect("writing to a Vec cannot fail"),
    ));
    out
}

/// A chunked body fed by a task, so each event is its own HTTP chunk sent at its own time
/// (a buffered body would hide exactly the behaviour a streaming proxy must preserve).
fn stream_body(events: Vec<Bytes>, latency: Duration) -> Body {
    // Capacity 1: the producer runs at most one event ahead of the connection.
    let (tx, rx) = mpsc::channel::<Bytes>(1);
    tokio::spawn(async move {
        let gap = match u32::try_from(events.len().saturating_sub(1)) {
            Ok(rest) if rest > 0 => latency / 2 / rest,
            _ => Duration::ZERO,
        };
        for (i, event) in events.into_iter().enumerate() {
            pause(if i == 0 { latency / 2 } else { gap }).await;
            // The client hung up: nobody is left to read the rest.
            if tx.send(event).await.is_err() {
                return;
            }
        }
    });
    let frames = futures_util::stream::unfold(rx, |mut rx| async move {
        let event = rx.recv().await?;
        Some((Ok::<_, Infallible>(Frame::data(event)), rx))
    });
    StreamBody::new(frames).boxed_unsync()
}
