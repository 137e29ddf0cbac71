//! Streamable HTTP MCP servers, served at `/mcp/NAME` for each `--mcp NAME=URL`.
//!
//! Record forwards every request to the server's URL (the URL comes from the session's
//! configuration, never from the request) with its headers (`Mcp-Session-Id`,
//! `MCP-Protocol-Version`, credentials), and relays the answer as it comes: JSON, or an
//! SSE stream whose events are passed on one by one. Each JSON-RPC request with the
//! response the server gave it (in the JSON body or as an event of the stream) is stored
//! like a stdio stand-in's. A mocked `tools/call` is answered here and never forwarded.
//!
//! Replay answers POSTed requests from the cassette as JSON (notifications and responses
//! get `202 Accepted`), gives `initialize` an `Mcp-Session-Id` of its own, refuses the
//! server-to-client event stream (`GET`, `405`: the transport allows a server not to offer
//! one) and accepts the closing `DELETE`. Both protocol forms work: the 2025-11-25 one
//! (initialize, a session id, SSE answers, GET stream, DELETE) and the stateless
//! 2026-07-28 one (`server/discover`, a JSON answer per POST).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::body::{full, json_response, ChannelBody, ProxyBody};
use super::mcp;
use super::state::Proxy;
use crate::dialect::mcp::{self as wire, Message};
use crate::sse::SseParser;

/// The path prefix of streamable HTTP MCP servers.
pub const PREFIX: &str = "/mcp/";

/// Response headers passed back to the client: the session's, and the challenge of a
/// server that asks for authorization (MCP's OAuth flow starts from it).
const KEPT: [&str; 4] = [
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "www-authenticate",
];

pub(super) async fn handle(
    proxy: &Arc<Proxy>,
    parts: http::request::Parts,
    body: Incoming,
    rest: &str,
) -> Response<ProxyBody> {
    let name = rest.split(['/', '?']).next().unwrap_or_default().to_owned();
    let Some(url) = proxy.opts.mcp_http.get(&name).cloned() else {
        return json_response(
            StatusCode::NOT_FOUND,
            &json!({ "error": format!(
                "agentproxy: no MCP server `{name}` in this session; give it with --mcp {name}=URL (or `mcp:` in a spec)"
            ) }),
        );
    };
    let raw = match proxy.read_body(body, &format!("MCP server `{name}`")).await {
        Ok(b) => b,
        Err(why) => {
            let answer = json!({ "error": format!("agentproxy: {why}") });
            return json_response(StatusCode::PAYLOAD_TOO_LARGE, &answer);
        }
    };
    let msg: Option<Value> = serde_json::from_slice(&raw).ok();
    if msg.as_ref().is_some_and(Value::is_array) {
        // MCP dropped JSON-RPC batches in 2025-06-18; no SDK sends them.
        return json_response(
            StatusCode::BAD_REQUEST,
            &wire::error(
                &Value::Null,
                wire::INVALID_REQUEST,
                "agentproxy: JSON-RPC batches are not supported (MCP has none since 2025-06-18); send one message per POST",
            ),
        );
    }
    match &proxy.opts.upstream {
        Some(up) if mcp::records(proxy) => {
            if parts.method == Method::POST {
                if let Some(answer) = msg.as_ref().and_then(|m| mcp::mocked(proxy, &name, m)) {
                    return answered(&parts.headers, &answer);
                }
            }
            forward(proxy, up, (&name, &url), parts, raw, msg).await
        }
        // `mcp::call` answers mocked calls first.
        _ => replay(proxy, &name, &parts, msg),
    }
}

/// An answer given here, as JSON, keeping the client's session id.
fn answered(request: &HeaderMap, answer: &Value) -> Response<ProxyBody> {
    let mut resp = json_response(StatusCode::OK, answer);
    if let Some(id) = request.get("mcp-session-id") {
        resp.headers_mut().insert("mcp-session-id", id.clone());
    }
    resp
}

fn replay(
    proxy: &Proxy,
    name: &str,
    parts: &http::request::Parts,
    msg: Option<Value>,
) -> Response<ProxyBody> {
    match parts.method {
        Method::POST => {}
        Method::DELETE => return empty(StatusCode::OK),
        _ => {
            let mut resp = empty(StatusCode::METHOD_NOT_ALLOWED);
            resp.headers_mut().insert(
                http::header::ALLOW,
                HeaderValue::from_static("POST, DELETE"),
            );
            return resp;
        }
    }
    let Some(msg) = msg else {
        return json_response(
            StatusCode::BAD_REQUEST,
            &wire::error(
                &Value::Null,
                wire::PARSE_ERROR,
                "agentproxy: the body is not JSON",
            ),
        );
    };
    let Message::Request { method, .. } = wire::classify(&msg) else {
        return empty(StatusCode::ACCEPTED);
    };
    let initialize = method == "initialize";
    let answer = mcp::call(proxy, name, &msg);
    let mut resp = answered(&parts.headers, &answer);
    if initialize {
        let id = format!("agentproxy-{name}-{}", proxy.requests());
        if let Ok(v) = HeaderValue::from_str(&id) {
            resp.headers_mut().insert("mcp-session-id", v);
        }
    }
    resp
}

fn empty(status: StatusCode) -> Response<ProxyBody> {
    let mut resp = Response::new(full(Bytes::new()));
    *resp.status_mut() = status;
    resp
}

/// The request a POST body carries, if it is one.
fn request(msg: Option<Value>) -> Option<Value> {
    msg.filter(|m| matches!(wire::classify(m), Message::Request { .. }))
}

/// Store `answer` if it is the response to `asked`, which it then takes.
fn store_answer(
    proxy: &Proxy,
    name: &str,
    asked: &mut Option<Value>,
    answer: &Value,
    started: Instant,
) {
    let Message::Response { id } = wire::classify(answer) else {
        return;
    };
    let Some(request) = asked.take_if(|r| r["id"] == *id) else {
        return;
    };
    let latency = super::record::millis(started.elapsed());
    if let Err(why) = mcp::store(proxy, name, &request, answer, latency) {
        incomplete(proxy, name, why);
    }
}

/// Note that the recording of `name` misses an exchange: the session fails.
fn incomplete(proxy: &Proxy, name: &str, why: &str) {
    let why = format!("MCP server `{name}`: an exchange was not recorded: {why}");
    proxy.lock().upstream_errors.push(why);
}

async fn forward(
    proxy: &Arc<Proxy>,
    up: &super::upstream::Upstream,
    (name, url): (&str, &str),
    parts: http::request::Parts,
    raw: Bytes,
    msg: Option<Value>,
) -> Response<ProxyBody> {
    let started = Instant::now();
    let mut asked = request(msg);
    let resp = match up
        .send(parts.method.clone(), url, &parts.headers, raw)
        .await
    {
        Ok(r) => r,
        Err(e) => return failed(proxy, format!("MCP server `{name}`: {e}")),
    };
    let (head, body) = resp.into_parts();
    let headers: HeaderMap = (KEPT.iter())
        .filter_map(|k| {
            Some((
                http::HeaderName::from_static(k),
                head.headers.get(*k)?.clone(),
            ))
        })
        .collect();
    let content_type = head
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if content_type.starts_with("text/event-stream") {
        let (tx, rx) = mpsc::channel(16);
        let proxy = proxy.clone();
        let name = name.to_owned();
        proxy.tasks.clone().spawn(async move {
            relay(&proxy, &name, body, tx, &mut asked, started).await;
            if asked.is_some() {
                incomplete(
                    &proxy,
                    &name,
                    "the server's event stream ended before answering it",
                );
            }
        });
        let mut out = Response::new(ChannelBody::new(rx).boxed());
        *out.status_mut() = head.status;
        *out.headers_mut() = headers;
        return out;
    }
    let bytes = match Limited::new(body, proxy.opts.max_body).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            let why = format!("MCP server `{name}`: its answer could not be read ({e})");
            return failed(proxy, why);
        }
    };
    if head.status.is_success() {
        if let Ok(answer) = serde_json::from_slice::<Value>(&bytes) {
            store_answer(proxy, name, &mut asked, &answer, started);
        }
        if asked.is_some() {
            incomplete(proxy, name, "the server's answer holds no response to it");
        }
    } else if asked.is_some() {
        // An HTTP error is no JSON-RPC answer: a replay would have nothing to serve.
        let why = format!("the server answered HTTP {}", head.status);
        incomplete(proxy, name, &why);
    }
    let mut out = Response::new(full(bytes));
    *out.status_mut() = head.status;
    *out.headers_mut() = headers;
    out
}

/// The answer to a request the MCP server failed (`why`), which is one of the session's
/// upstream errors.
fn failed(proxy: &Proxy, why: String) -> Response<ProxyBody> {
    let answer = json!({ "error": format!("agentproxy: {why}") });
    proxy.lock().upstream_errors.push(why);
    json_response(StatusCode::BAD_GATEWAY, &answer)
}

/// Pass an SSE answer on chunk by chunk, storing the responses its events carry.
async fn relay(
    proxy: &Proxy,
    name: &str,
    mut body: Incoming,
    tx: mpsc::Sender<std::io::Result<Bytes>>,
    asked: &mut Option<Value>,
    started: Instant,
) {
    let mut parser = SseParser::new();
    let mut client_gone = false;
    let idle = proxy.opts.upstream.as_ref().map(|up| up.timeout());
    loop {
        // An event stream that answers nothing (the server-to-client GET stream) ends
        // when the client hangs up, even while the server is silent; one that owes an
        // answer gives up after the upstream timeout without a byte.
        let waiting = asked.is_some();
        let frame = tokio::select! {
            frame = body.frame() => frame,
            _ = tx.closed(), if !waiting => break,
            _ = tokio::time::sleep(idle.unwrap_or_default()), if waiting && idle.is_some() => {
                let _ = tx.send(Err(std::io::Error::other("the MCP server went silent"))).await;
                break;
            }
        };
        let Some(frame) = frame else { break };
        let Ok(frame) = frame else {
            let _ = tx
                .send(Err(std::io::Error::other(
                    "the MCP server's stream broke off",
                )))
                .await;
            break;
        };
        let Ok(chunk) = frame.into_data() else {
            continue;
        };
        for event in parser.push(&chunk) {
            if let Ok(answer) = serde_json::from_str::<Value>(&event.data) {
                store_answer(proxy, name, asked, &answer, started);
            }
        }
        // A client that hung up does not stop the recording of what it asked.
        if !client_gone && tx.send(Ok(chunk)).await.is_err() {
            client_gone = true;
        }
        if client_gone && asked.is_none() {
            break;
        }
    }
}
