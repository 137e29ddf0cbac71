//! A fake Anthropic upstream for the test suite, served in-process on `127.0.0.1:0`: the
//! Messages API (`POST /v1/messages`, plain and streamed) in Anthropic's own wire shapes,
//! with the chat fake's tool-calling script, and a log of every request it receives.
//!
//! It checks what the real API checks before answering: a credential (`x-api-key`, or
//! `Authorization: Bearer` as recent SDKs send it; 401 otherwise) and the
//! `anthropic-version` header (400 otherwise). Errors, injected ones included, are in
//! Anthropic's shape, `{"type": "error", "error": {"type", "message"}, "request_id"}`.
//! Every answer carries a fresh `request-id` header and a cookie, like the real API's.
//!
//! This file is the HTTP side (server, controls, request log); what the fake says is in
//! `fake_anthropic_model.rs`, which reuses the chat fake's script (`fake_openai_model.rs`).

use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;

use super::server::{Body, Server};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use serde_json::Value;

// The chat fake's script, compiled here a second time (its items are private to the module
// that includes it): that keeps both fakes self-contained, reachable through `#[path]` alone.
#[allow(clippy::duplicate_mod)]
#[path = "fake_openai_model.rs"]
mod chat_model;
#[path = "fake_anthropic_model.rs"]
mod model;

pub use super::fake_openai::LoggedRequest;
use chat_model::{random_token, Answer};

/// A running fake Anthropic upstream. Dropping it stops accepting connections, like
/// [`Self::stop`] without waiting.
pub struct FakeAnthropic {
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
    overload_streams: usize,
}

impl FakeAnthropic {
    /// Starts a fake on the current tokio runtime.
    pub async fn start() -> FakeAnthropic {
        let shared = Arc::new(Shared {
            log: Mutex::new(Vec::new()),
            control: Mutex::new(Control::default()),
        });
        let server = Server::start(
            "fake anthropic",
            Arc::clone(&shared),
            |shared, req| async move { handle(&shared, req).await },
        )
        .await;
        FakeAnthropic { shared, server }
    }

    /// The base URL, without `/v1` (what `--anthropic-upstream` and `ANTHROPIC_BASE_URL`
    /// take).
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

    /// The next `times` messages calls answer `status` in Anthropic's error shape, with
    /// the type the real API uses for it (`rate_limit_error` with `retry-after` for 429,
    /// `overloaded_error` for 529, `api_error` for other 5xx, …). Replaces pending failures.
    pub fn fail_next(&self, status: u16, times: usize) {
        let status = StatusCode::from_u16(status)
            .unwrap_or_else(|_| panic!("fake anthropic: {status} is not an HTTP status"));
        let mut control = lock(&self.shared.control);
        control.fail_status = Some(status);
        control.fail_remaining = times;
    }

    /// The next `times` streamed answers break off after their first content block with an
    /// `error` event (`overloaded_error`), as the real API's streams do under load: HTTP 200,
    /// no `message_stop`.
    pub fn overload_next_streams(&self, times: usize) {
        lock(&self.shared.control).overload_streams = times;
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

async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let json = serde_json::from_slice::<Value>(&body).ok();
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let has_credential = header("x-api-key").is_some_and(|k| !k.is_empty())
        || header("authorization").is_some_and(|a| a.starts_with("Bearer ") && a.len() > 7);
    let has_version = header("anthropic-version").is_some();
    lock(&shared.log).push(LoggedRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts.headers.clone(),
        body,
        json: json.clone(),
    });

    let request_id = format!("req_011C{}", random_token(20));
    let messages_call = parts.method == Method::POST && parts.uri.path() == "/v1/messages";
    let (failure, overload) = {
        let mut control = lock(&shared.control);
        let failure = (messages_call && control.fail_remaining > 0)
            .then(|| {
                control.fail_remaining -= 1;
                control.fail_status
            })
            .flatten();
        let wants_stream = json.as_ref().is_some_and(|j| j["stream"] == true);
        let overload =
            messages_call && failure.is_none() && wants_stream && control.overload_streams > 0;
        if overload {
            control.overload_streams -= 1;
        }
        (failure, overload)
    };

    let answer = if !messages_call {
        model::error(
            StatusCode::NOT_FOUND,
            "not_found_error",
            "Not Found",
            &request_id,
        )
    } else if !has_credential {
        model::error(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "x-api-key header is required",
            &request_id,
        )
    } else if !has_version {
        model::error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "anthropic-version: header is required",
            &request_id,
        )
    } else if let Some(status) = failure {
        model::injected_failure(status, &request_id)
    } else if let Some(json) = &json {
        model::messages(json, overload, &request_id)
    } else {
        model::error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "There was an error parsing the body of your request: it is not valid JSON.",
            &request_id,
        )
    };
    render(answer, &request_id)
}

fn render(answer: Answer, request_id: &str) -> Response<Body> {
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
            h.insert("content-type", HeaderValue::from_static("application/json"));
            for (name, value) in headers {
                h.insert(HeaderName::from_static(name), header_value(value));
            }
            response
        }
        Answer::Stream(events) => {
            // One HTTP chunk per event, as the real API flushes them.
            let frames = futures_util::stream::iter(
                events
                    .into_iter()
                    .map(|event| Ok::<_, Infallible>(Frame::data(event))),
            );
            let mut response = Response::new(StreamBody::new(frames).boxed_unsync());
            let h = response.headers_mut();
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
    h.insert("request-id", header_value(request_id.to_owned()));
    h.insert(
        "anthropic-organization-id",
        HeaderValue::from_static("00000000-0000-4000-8000-00000000fa4e"),
    );
    h.insert(
        "set-cookie",
        header_value(format!(
            "_cfuvid={}; path=/; domain=.api.anthropic.com; HttpOnly; Secure; SameSite=None",
            random_token(43)
        )),
    );
    response
}

fn header_value(value: String) -> HeaderValue {
    HeaderValue::from_str(&value).expect("the fake only builds visible-ASCII header values")
}
