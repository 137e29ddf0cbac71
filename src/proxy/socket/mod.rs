//! WebSockets. An upgrade to a model API spoken over a socket (`dialect::socket`) is
//! accepted: relayed to the upstream's socket and recorded by turn (`relay`), or
//! answered from the cassette: the Responses API's WebSocket mode through the same path
//! as the HTTP request each turn carries (`serve`), the Realtime API and Gemini Live
//! frame by frame (`framed`), their injected faults in `fault`. Any other upgrade to a WebSocket is refused with 501,
//! through a tunnel as on the base URL.

mod fault;
mod framed;
mod relay;
mod serve;
mod side;

use std::sync::Arc;

use http::header::{SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL};
use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tower::Layer;

use super::api::Head;
use super::body::{text, ProxyBody};
use super::state::Proxy;
use super::step::{self, call, handler, Handler};
use crate::dialect::socket::Socket;
use side::{first_protocol, switching, Opened};

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
            match opened.socket.http_route() {
                Some(_) => serve::open(proxy, opened),
                None => framed::serve(proxy, opened),
            }
            switching(&accept, protocol)
        }
    }
}

/// The refusal of an upgrade agentproxy does not speak.
fn refused<B>(req: &Request<B>, path: &str) -> Response<ProxyBody> {
    text(
        StatusCode::NOT_IMPLEMENTED,
        format!(
            "agentproxy: {} {path} asks to switch to a WebSocket: agentproxy records and replays the sockets of the Responses API (GET …/responses), the Realtime API (GET …/realtime) and Gemini Live (…BidiGenerateContent), and HTTP exchanges",
            req.method(),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

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
