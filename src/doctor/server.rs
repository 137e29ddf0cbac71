//! Doctor mode: answer every model route with a canned reply in its own dialect (streamed
//! when the request asks for a stream), every other path with a 404 that says so, and
//! note what arrived: method, path, route, the client that sent it and which credential
//! header it carried (never its value). Nothing is forwarded and nothing is recorded.
//!
//! Each injected variable points at its own path prefix (`/_via/NAME`), stripped before
//! routing, so the arrivals tell which variable the program actually read.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde::Serialize;
use serde_json::Value;

use crate::dialect::{self, Provider, Route};
use crate::proxy::body::{chunks, json_response, ProxyBody};
use crate::proxy::server::{accept_loop, BindError, Running};

/// What every canned reply says.
pub const CANNED_TEXT: &str =
    "This is a canned reply from agentproxy doctor: your request reached the proxy.";

/// Credential headers whose presence is noted (their values never are).
const AUTH_HEADERS: [&str; 3] = ["authorization", "x-api-key", "api-key"];

/// The path prefix that marks requests sent through the variable `name`.
pub fn via_prefix(name: &str) -> String {
    format!("/_via/{name}")
}

/// Split a request path into the variable its `/_via/NAME` prefix names and the path the
/// client meant (`/_via/OPENAI_API_BASE/v1/chat/completions` → `OPENAI_API_BASE`,
/// `/v1/chat/completions`). An unprefixed path names no variable.
pub fn split_via(path: &str) -> (Option<&str>, &str) {
    let Some(rest) = path.strip_prefix("/_via/") else {
        return (None, path);
    };
    match rest.find('/') {
        Some(at) => (Some(&rest[..at]), &rest[at..]),
        None => (Some(rest), "/"),
    }
}

/// One request that reached the doctor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Arrival {
    pub method: String,
    /// The path as the client sent it (no query).
    pub path: String,
    /// The path with the `/_via/NAME` prefix stripped: what the client meant to call.
    pub api_path: String,
    /// The injected variable the request came through.
    pub via: String,
    /// `openai.chat`, `openai.responses`, `anthropic.messages` or `http`.
    pub route: String,
    /// The status the doctor answered with.
    pub status: u16,
    /// The request asked for a server-sent-event stream.
    pub stream: bool,
    pub model: Option<String>,
    /// The client, from `user-agent` and the `x-stainless-*` headers of the official SDKs.
    pub client: Option<String>,
    /// Names of the credential headers present (never their values).
    pub auth: Vec<String>,
}

impl Arrival {
    /// A chat completions, Responses or Anthropic Messages call.
    pub fn is_model_call(&self) -> bool {
        self.route != Route::Http.name()
    }
}

/// The doctor's state: what arrived, in order.
pub struct Doctor {
    arrivals: Mutex<Vec<Arrival>>,
    /// The MCP servers whose `agentproxy mcp` stand-in asked the doctor for its mode.
    mcp_servers: Mutex<Vec<String>>,
    max_body: usize,
    /// The variable an unprefixed request is attributed to.
    plain_var: String,
}

impl Doctor {
    /// `plain_var` is the variable whose URL carries no `/_via/` prefix.
    pub fn new(max_body: usize, plain_var: &str) -> Doctor {
        Doctor {
            arrivals: Mutex::default(),
            mcp_servers: Mutex::default(),
            max_body,
            plain_var: plain_var.to_owned(),
        }
    }

    /// Every request that arrived so far, in arrival order.
    pub fn arrivals(&self) -> Vec<Arrival> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arrival>> {
        self.arrivals.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Doctor mode serving in the background, from [`Session::start`] until [`Session::stop`]:
/// the same shape as a proxy session.
pub(crate) struct Session {
    doctor: Arc<Doctor>,
    running: Running,
}

impl Session {
    /// Bind `listen` and answer every request that arrives there on behalf of `doctor`.
    pub(crate) async fn start(doctor: Doctor, listen: SocketAddr) -> Result<Session, BindError> {
        let doctor = Arc::new(doctor);
        let serving = doctor.clone();
        let running = Running::start(listen, move |listener, stop, hurry| {
            accept_loop(
                listener,
                move |req| handle(serving.clone(), req),
                async move {
                    let _ = stop.await;
                },
                hurry,
                None,
            )
        })
        .await?;
        Ok(Session { doctor, running })
    }

    /// The address doctor mode listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.running.addr()
    }

    /// Stop accepting, let open connections finish, and take every request that arrived
    /// and the MCP servers that came through the stand-in.
    pub(crate) async fn stop(self) -> (Vec<Arrival>, Vec<String>) {
        self.running.stop().await;
        let servers = self.doctor.mcp_servers.lock().map(|s| s.clone());
        (self.doctor.arrivals(), servers.unwrap_or_default())
    }
}

async fn handle(doctor: Arc<Doctor>, req: Request<Incoming>) -> Response<ProxyBody> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_owned();
    let (via, api_path) = split_via(&path);
    let via = via.unwrap_or(&doctor.plain_var).to_owned();
    // An `agentproxy mcp` stand-in asking how to run: it runs its server as it is, and
    // the doctor notes that the server is wired.
    if let Some(rest) = api_path.strip_prefix(crate::proxy::mcp::PREFIX) {
        let name = rest.split('/').next().unwrap_or_default().to_owned();
        let mut servers = doctor.mcp_servers.lock().unwrap_or_else(|p| p.into_inner());
        if !servers.contains(&name) {
            servers.push(name);
        }
        return json_response(
            StatusCode::OK,
            &serde_json::json!({ "mode": crate::proxy::mcp::PASSTHROUGH }),
        );
    }
    let route = Route::of(&parts.method, api_path);
    let provider = dialect::provider_of(api_path, &parts.headers);
    // A body too large or broken still counts as an arrival; it is just not read.
    let raw = Limited::new(body, doctor.max_body)
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let request: Option<Value> = serde_json::from_slice(&raw).ok();
    let stream = request
        .as_ref()
        .is_some_and(|b| route.wants_stream(api_path, b));
    let resp = match (route, &request) {
        (Route::Http, _) => refuse(
            provider,
            StatusCode::NOT_FOUND,
            &format!(
                "agentproxy doctor: {} {api_path} is not a model route; in doctor mode only model requests \
                 get a (canned) answer. Record and replay pass it through as plain HTTP.",
                parts.method
            ),
        ),
        (_, None) => refuse(
            provider,
            StatusCode::BAD_REQUEST,
            "agentproxy doctor: the request body is not JSON",
        ),
        (route, Some(request)) => canned_response(route, api_path, request),
    };
    let arrival = Arrival {
        method: parts.method.to_string(),
        path: path.clone(),
        api_path: api_path.to_owned(),
        via,
        route: route.name().to_owned(),
        status: resp.status().as_u16(),
        stream,
        model: request.as_ref().and_then(|b| route.model(b)),
        client: client_of(&parts.headers),
        auth: AUTH_HEADERS
            .iter()
            .filter(|h| parts.headers.contains_key(**h))
            .map(|h| h.to_string())
            .collect(),
    };
    doctor.lock().push(arrival);
    resp
}

/// A non-retryable error in the provider's shape.
fn refuse(provider: Provider, status: StatusCode, message: &str) -> Response<ProxyBody> {
    let mut resp = json_response(
        status,
        &dialect::error_body(provider, status.as_u16(), dialect::Refusal::Doctor, message),
    );
    resp.headers_mut()
        .insert("x-should-retry", HeaderValue::from_static("false"));
    resp
}

/// The canned reply for a model request: whole, or as the stream the request asked for.
fn canned_response(route: Route, path: &str, request: &Value) -> Response<ProxyBody> {
    let Some(reply) = canned_reply(route, request) else {
        return refuse(
            Provider::OpenAi,
            StatusCode::NOT_FOUND,
            "agentproxy doctor: not a model route",
        );
    };
    let events = route
        .wants_stream(path, request)
        .then(|| route.synthesize(&reply, request))
        .flatten();
    match events {
        Some(events) => {
            let framing = route.framing();
            let mut resp = Response::new(chunks(
                events
                    .iter()
                    .map(|e| framing.encode(e))
                    .collect::<Vec<Bytes>>(),
                None,
            ));
            resp.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static(framing.content_type()),
            );
            resp
        }
        None => json_response(StatusCode::OK, &reply),
    }
}

/// A minimal, valid reply of the route's dialect that says it comes from the doctor, for
/// the model the request named. `None` for plain HTTP.
pub fn canned_reply(route: Route, request: &Value) -> Option<Value> {
    let model = route.model(request);
    let model = model.as_deref().unwrap_or("agentproxy-doctor");
    route.text_response(request, model, CANNED_TEXT)
}

/// The client that sent a request: its `user-agent`, else the language and version the
/// official SDKs send as `x-stainless-*`; control characters dropped and the length
/// bounded, since a program chooses these.
fn client_of(headers: &HeaderMap) -> Option<String> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let text = match (
        get("user-agent"),
        get("x-stainless-lang"),
        get("x-stainless-package-version"),
    ) {
        (Some(ua), _, _) => ua.to_owned(),
        (None, Some(lang), Some(version)) => format!("{lang} SDK {version}"),
        (None, Some(lang), None) => format!("{lang} SDK"),
        (None, None, _) => return None,
    };
    Some(text.chars().filter(|c| !c.is_control()).take(80).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn via_prefixes_split_off() {
        assert_eq!(
            split_via("/_via/OPENAI_API_BASE/v1/chat/completions"),
            (Some("OPENAI_API_BASE"), "/v1/chat/completions")
        );
        assert_eq!(
            split_via("/_via/AGENTPROXY_URL"),
            (Some("AGENTPROXY_URL"), "/")
        );
        assert_eq!(split_via("/v1/models"), (None, "/v1/models"));
        assert_eq!(via_prefix("ANTHROPIC_BASE_URL"), "/_via/ANTHROPIC_BASE_URL");
    }

    #[test]
    fn canned_replies_are_valid_in_every_dialect_and_stream() {
        let ask = serde_json::json!({"model": "m1", "stream": true});
        for route in crate::dialect::MODEL_ROUTES {
            let reply = canned_reply(route, &ask).expect("a reply");
            let call = route.extract(&ask, &reply).expect("a model call");
            assert_eq!(call.reply.as_deref(), Some(CANNED_TEXT), "{route:?}");
            // Gemini and Bedrock name the model in the URL, not the body.
            if !matches!(route, Route::GeminiGenerate | Route::BedrockConverse) {
                assert_eq!(call.model, "m1", "{route:?}");
            }
            // The stream it is served as assembles back to the same reply.
            let events = route.synthesize(&reply, &ask).expect("a stream");
            let assembled = route.assemble(&events).expect("assembles").expect("valid");
            let again = route.extract(&ask, &assembled).expect("a model call");
            assert_eq!(again.reply.as_deref(), Some(CANNED_TEXT), "{route:?}");
        }
        assert_eq!(canned_reply(Route::Http, &ask), None);
    }

    #[test]
    fn clients_are_named_from_their_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(client_of(&h), None);
        h.insert(
            "user-agent",
            HeaderValue::from_static("OpenAI/Python 3.57.0"),
        );
        assert_eq!(client_of(&h).as_deref(), Some("OpenAI/Python 3.57.0"));
        h.insert("x-stainless-lang", HeaderValue::from_static("python"));
        h.insert(
            "x-stainless-package-version",
            HeaderValue::from_static("3.57.0"),
        );
        assert_eq!(client_of(&h).as_deref(), Some("OpenAI/Python 3.57.0"));
        h.remove("user-agent");
        assert_eq!(client_of(&h).as_deref(), Some("python SDK 3.57.0"));
    }
}
