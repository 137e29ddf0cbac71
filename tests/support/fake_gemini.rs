//! A fake Gemini upstream for the test suite, served in-process on `127.0.0.1:0`: the
//! Gemini API's `generateContent` and `streamGenerateContent` in Google's own wire shapes,
//! with a small deterministic tool-calling script, and a log of every request it receives.
//!
//! Routes, under any of the versions `v1` (google-genai 3.x), `v1beta` (older SDKs,
//! pydantic-ai, ADK) and `v1alpha`:
//! - `POST /{version}/models/{model}:generateContent`: one `GenerateContentResponse`;
//! - `POST /{version}/models/{model}:streamGenerateContent?alt=sse`: server-sent events,
//!   each exactly `data: <one-line JSON>\r\n\r\n` (no `event:`, no `id:`, no `[DONE]`:
//!   the SDK's parser refuses them), every event a complete `GenerateContentResponse`;
//! - the same without `alt=sse`: one JSON array of those responses, streamed;
//! - the Vertex AI forms of both, `/{v1,v1beta1}/publishers/google/models/{model}:…` and
//!   `/{v1,v1beta1}/projects/{p}/locations/{l}/publishers/google/models/{model}:…`, with the
//!   same bodies plus `createTime`.
//!
//! It checks what the real API checks before answering: a key in `x-goog-api-key` or in
//! the `?key=` query parameter (an `Authorization: Bearer` token on the Vertex forms),
//! 403 `PERMISSION_DENIED` otherwise; a JSON body (400 `INVALID_ARGUMENT`). Errors,
//! injected ones included, are in Google's shape, `{"error": {"code", "message",
//! "status"}}`. Every answer carries a fresh `responseId` and a `server-timing` header.
//!
//! The Live API's socket is in `fake_gemini_live.rs`. This file is the HTTP side (server,
//! controls, request log); what the fake says is in `fake_gemini_model.rs`.

use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;

use super::server::{Body, Server};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use serde_json::Value;

// The chat fake's model file, for its `Answer` and `random_token` (its items are private to
// the module that includes it, as for the Anthropic fake).
#[allow(clippy::duplicate_mod)]
#[path = "fake_openai_model.rs"]
mod chat_model;
#[path = "fake_gemini_live.rs"]
mod live;
#[path = "fake_gemini_model.rs"]
mod model;
#[allow(clippy::duplicate_mod)]
#[path = "fake_ws.rs"]
mod ws;

pub use super::fake_openai::LoggedRequest;
use chat_model::{random_token, Answer};

/// A running fake Gemini upstream. Dropping it stops accepting connections, like
/// [`Self::stop`] without waiting.
pub struct FakeGemini {
    shared: Arc<Shared>,
    server: Server,
}

struct Shared {
    log: Mutex<Vec<LoggedRequest>>,
    control: Mutex<Control>,
}

#[derive(Default)]
struct Control {
    fail_status: Option<StatusCode>,
    fail_remaining: usize,
    broken_streams: usize,
}

/// What a request asked for, read from its path and query.
#[derive(Debug, PartialEq)]
pub(crate) struct Call {
    /// The model as named in the path, without `models/`.
    pub model: String,
    pub stream: bool,
    /// `alt=sse` (server-sent events) rather than a JSON array; only for a stream.
    pub sse: bool,
    pub vertex: bool,
}

impl FakeGemini {
    /// Starts a fake on the current tokio runtime.
    pub async fn start() -> FakeGemini {
        let shared = Arc::new(Shared {
            log: Mutex::new(Vec::new()),
            control: Mutex::new(Control::default()),
        });
        let server = Server::start(
            "fake gemini",
            Arc::clone(&shared),
            |shared, req| async move { handle(&shared, req).await },
        )
        .await;
        FakeGemini { shared, server }
    }

    /// The base URL, without a version (what `--gemini-upstream` and
    /// `GOOGLE_GEMINI_BASE_URL` take).
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

    /// The next `times` generate calls answer `status` in Google's error shape, with the
    /// status name and message the real API uses for it (`RESOURCE_EXHAUSTED` for 429,
    /// `INTERNAL` for 500, `UNAVAILABLE` "The model is overloaded." for 503, …). Replaces
    /// pending failures.
    pub fn fail_next(&self, status: u16, times: usize) {
        let status = StatusCode::from_u16(status)
            .unwrap_or_else(|_| panic!("fake gemini: {status} is not an HTTP status"));
        let mut control = lock(&self.shared.control);
        control.fail_status = Some(status);
        control.fail_remaining = times;
    }

    /// The next `times` streamed answers break off after their first chunk with an error
    /// event, `data: {"error": {"code": 503, …, "status": "UNAVAILABLE"}}`, inside an
    /// HTTP 200 (the SDK raises a `ServerError` for it). A JSON-array stream gets the error
    /// object as its next element.
    pub fn break_next_streams(&self, times: usize) {
        lock(&self.shared.control).broken_streams = times;
    }

    /// Closes the listener (later connections are refused), then waits, bounded, for
    /// in-flight answers to finish.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// A lock that survives a test that panicked while holding it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `/{version}/models/{model}:{method}` and the Vertex forms, with the query's `alt`.
pub(crate) fn parse_call(path: &str, query: Option<&str>) -> Option<Call> {
    let rest = path.strip_prefix('/')?;
    let (version, rest) = rest.split_once('/')?;
    let (vertex, rest) = if let Some(rest) = rest.strip_prefix("publishers/google/") {
        (true, rest)
    } else if rest.starts_with("projects/") {
        // projects/{p}/locations/{l}/publishers/google/models/…
        let segments: Vec<&str> = rest.splitn(5, '/').collect();
        match segments.as_slice() {
            ["projects", p, "locations", l, tail] if !p.is_empty() && !l.is_empty() => {
                (true, tail.strip_prefix("publishers/google/")?)
            }
            _ => return None,
        }
    } else {
        (false, rest)
    };
    let allowed: &[&str] = if vertex {
        &["v1", "v1beta1"]
    } else {
        &["v1", "v1beta", "v1alpha"]
    };
    if !allowed.contains(&version) {
        return None;
    }
    let (model, method) = rest.strip_prefix("models/")?.rsplit_once(':')?;
    if model.is_empty() || model.contains('/') {
        return None;
    }
    let stream = match method {
        "generateContent" => false,
        "streamGenerateContent" => true,
        _ => return None,
    };
    let sse = stream && query_param(query, "alt") == Some("sse");
    Some(Call {
        model: model.to_owned(),
        stream,
        sse,
        vertex,
    })
}

fn query_param<'a>(query: Option<&'a str>, name: &str) -> Option<&'a str> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    if ws::asks(&req) {
        lock(&shared.log).push(LoggedRequest::of_upgrade(&req));
        return live::upgrade(req);
    }
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let json = serde_json::from_slice::<Value>(&body).ok();
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let query = parts.uri.query();
    let has_key = header("x-goog-api-key").is_some_and(|k| !k.is_empty())
        || query_param(query, "key").is_some_and(|k| !k.is_empty());
    let has_bearer =
        header("authorization").is_some_and(|a| a.starts_with("Bearer ") && a.len() > 7);
    lock(&shared.log).push(LoggedRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: query.map(str::to_owned),
        headers: parts.headers.clone(),
        body,
        json: json.clone(),
    });

    let call = parse_call(parts.uri.path(), query).filter(|_| parts.method == Method::POST);
    let (failure, broken) = {
        let mut control = lock(&shared.control);
        let failure = (call.is_some() && control.fail_remaining > 0)
            .then(|| {
                control.fail_remaining -= 1;
                control.fail_status
            })
            .flatten();
        let broken = call.as_ref().is_some_and(|c| c.stream)
            && failure.is_none()
            && control.broken_streams > 0;
        if broken {
            control.broken_streams -= 1;
        }
        (failure, broken)
    };

    let response_id = random_token(22);
    let authorized = |call: &Call| has_key || (call.vertex && has_bearer);
    let answer = match (&call, failure, &json) {
        (None, _, _) => model::error(
            StatusCode::NOT_FOUND,
            &format!(
                "The requested URL {} was not found on this server.",
                parts.uri.path()
            ),
        ),
        (Some(call), _, _) if !authorized(call) => model::error(
            StatusCode::FORBIDDEN,
            "Method doesn't allow unregistered callers (callers without established \
             identity). Please use API Key or other form of API consumer identity to call \
             this API.",
        ),
        (Some(_), Some(status), _) => model::injected_failure(status),
        (Some(call), None, Some(json)) => model::generate(call, json, broken, &response_id),
        (Some(_), None, None) => model::error(
            StatusCode::BAD_REQUEST,
            "Invalid JSON payload received. Unexpected token.",
        ),
    };
    render(answer, call.as_ref().is_some_and(|c| c.stream && !c.sse))
}

/// `json_array`: a stream asked for without `alt=sse`, framed as one JSON array.
fn render(answer: Answer, json_array: bool) -> Response<Body> {
    let mut response = match answer {
        Answer::Json {
            status,
            body,
            headers,
        } => {
            let bytes = serde_json::to_vec(&body).expect("a serde_json::Value always serializes");
            let mut response = Response::new(Full::new(Bytes::from(bytes)).boxed_unsync());
            *response.status_mut() = status;
            let h = response.headers_mut();
            h.insert(
                "content-type",
                HeaderValue::from_static("application/json; charset=UTF-8"),
            );
            for (name, value) in headers {
                h.insert(HeaderName::from_static(name), header_value(value));
            }
            response
        }
        Answer::Stream(events) => {
            // The events come framed (`fake_gemini_model::frame`).
            let content_type = if json_array {
                "application/json; charset=UTF-8"
            } else {
                "text/event-stream"
            };
            // One HTTP chunk per event, as the real API flushes them.
            let frames = futures_util::stream::iter(
                events
                    .into_iter()
                    .map(|chunk| Ok::<_, Infallible>(Frame::data(chunk))),
            );
            let mut response = Response::new(StreamBody::new(frames).boxed_unsync());
            response
                .headers_mut()
                .insert("content-type", HeaderValue::from_static(content_type));
            response
        }
    };
    // What Google's front end adds; `server-timing` is volatile, a proxy must not key on it.
    let h = response.headers_mut();
    h.insert(
        "vary",
        HeaderValue::from_static("Origin, X-Origin, Referer"),
    );
    h.insert(
        "server",
        HeaderValue::from_static("scaffolding on HTTPServer2"),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        "server-timing",
        header_value(format!("gfet4t7; dur={}", server_time())),
    );
    response
}

/// A plausible, varying server time in milliseconds.
fn server_time() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    200 + nanos % 1800
}

fn header_value(value: String) -> HeaderValue {
    HeaderValue::from_str(&value).expect("the fake only builds visible-ASCII header values")
}
