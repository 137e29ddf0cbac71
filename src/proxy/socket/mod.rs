//! WebSockets. An upgrade to a model API spoken over a socket (`dialect::socket`: the
//! Responses API's WebSocket mode) is accepted, and each of its turns is relayed to the
//! upstream's socket and recorded (`relay`), or answered from the cassette through the
//! same path as the HTTP request it carries (`serve`). Any other upgrade to a WebSocket
//! is refused with 501, through a tunnel as on the base URL.

mod relay;
mod serve;

use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;
use tower::Layer;

use super::api::Head;
use super::body::{full, text, ProxyBody};
use super::state::Proxy;
use super::step::{self, call, handler, Handler};
use crate::dialect::socket::Socket;

/// The program's side of a socket.
type Program = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// Upgrades to a WebSocket: accepted for a model API spoken over one, refused otherwise.
pub(super) fn layer(proxy: &Arc<Proxy>) -> impl Layer<Handler, Service = Handler> + Clone {
    let proxy = proxy.clone();
    step::layer(move |next: Handler| {
        let proxy = proxy.clone();
        handler(move |req| {
            let (proxy, next) = (proxy.clone(), next.clone());
            async move {
                match asks_websocket(&req) {
                    false => call(next, req).await,
                    true => open(&proxy, req).await,
                }
            }
        })
    })
}

/// Does `req` ask to switch to a WebSocket? (`h2c`, curl's HTTP/2 over plain HTTP, falls
/// back to HTTP/1.1 when ignored.)
fn asks_websocket<B>(req: &Request<B>) -> bool {
    let upgrade = req.headers().get(http::header::UPGRADE);
    upgrade
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("websocket"))
}

/// What one socket needs to know of the upgrade that opened it.
struct Opened {
    socket: Socket,
    /// The upgrade's head: its path is each turn's.
    head: Head,
    /// The upgrade's headers: each turn's (the key is there).
    headers: http::HeaderMap,
    /// The program's side, once the `101` has gone out.
    upgrade: hyper::upgrade::OnUpgrade,
}

async fn open(proxy: &Arc<Proxy>, mut req: Request<Incoming>) -> Response<ProxyBody> {
    let head = Head::of_request(proxy, &req);
    let socket = (!head.elsewhere && req.method() == Method::GET)
        .then(|| Socket::of(&head.path))
        .flatten();
    let Some(socket) = socket else {
        return refused(&req, &head.stored_path);
    };
    let key = req.headers().get(SEC_WEBSOCKET_KEY);
    let version = req.headers().get("sec-websocket-version");
    let (Some(key), true) = (key, version.is_some_and(|v| v == "13")) else {
        let why =
            "agentproxy: a WebSocket upgrade needs Sec-WebSocket-Key and Sec-WebSocket-Version: 13";
        return text(StatusCode::BAD_REQUEST, why.to_owned());
    };
    let accept = derive_accept_key(key.as_bytes());
    let opened = Opened {
        socket,
        head,
        headers: req.headers().clone(),
        upgrade: hyper::upgrade::on(&mut req),
    };
    match &proxy.opts.upstream {
        Some(up) => relay::open(proxy, up, opened, accept).await,
        None => {
            // A replayed socket speaks the first subprotocol the program offers, if any.
            let offered = opened.headers.get(SEC_WEBSOCKET_PROTOCOL);
            let protocol = offered.and_then(first_protocol);
            serve::open(proxy, opened);
            switching(&accept, protocol)
        }
    }
}

/// The limits of a socket: no message or frame over `--max-body-size`.
fn config(max_body: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(max_body))
        .max_frame_size(Some(max_body))
}

/// The program's side of a socket, once upgraded; `None` if it hung up before.
async fn program(upgrade: hyper::upgrade::OnUpgrade, max_body: usize) -> Option<Program> {
    let upgraded = upgrade.await.ok()?;
    let io = TokioIo::new(upgraded);
    Some(WebSocketStream::from_raw_socket(io, Role::Server, Some(config(max_body))).await)
}

/// The `101` that accepts an upgrade (no extension: frames are relayed and recorded as
/// they are sent).
fn switching(accept: &str, protocol: Option<HeaderValue>) -> Response<ProxyBody> {
    let mut resp = Response::new(full(Bytes::new()));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(http::header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(accept) = HeaderValue::from_str(accept) {
        h.insert(SEC_WEBSOCKET_ACCEPT, accept);
    }
    if let Some(p) = protocol {
        h.insert(SEC_WEBSOCKET_PROTOCOL, p);
    }
    resp
}

/// The first of the subprotocols a `Sec-WebSocket-Protocol` header offers.
fn first_protocol(offered: &HeaderValue) -> Option<HeaderValue> {
    let first = offered.to_str().ok()?.split(',').next()?.trim();
    HeaderValue::from_str(first)
        .ok()
        .filter(|_| !first.is_empty())
}

/// The refusal of an upgrade agentproxy does not speak.
fn refused<B>(req: &Request<B>, path: &str) -> Response<ProxyBody> {
    text(
        StatusCode::NOT_IMPLEMENTED,
        format!(
            "agentproxy: {} {path} asks to switch to a WebSocket: agentproxy records and replays the Responses API's WebSocket mode (GET …/responses) and HTTP exchanges only",
            req.method(),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_offered_protocol_is_spoken() {
        let offered = HeaderValue::from_static("realtime, openai-beta.realtime-v1");
        assert_eq!(first_protocol(&offered).unwrap(), "realtime");
        assert!(first_protocol(&HeaderValue::from_static(" ")).is_none());
    }

    #[test]
    fn only_a_websocket_upgrade_is_taken() {
        let ws = Request::get("/v1/responses")
            .header("upgrade", "WebSocket")
            .body(())
            .unwrap();
        let h2c = Request::get("/v1/responses")
            .header("upgrade", "h2c")
            .body(())
            .unwrap();
        assert!(asks_websocket(&ws));
        assert!(!asks_websocket(&h2c));
    }
}
