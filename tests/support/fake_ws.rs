//! The server side of a WebSocket handshake, as the fakes' real services check it: a
//! `Sec-WebSocket-Key` and version 13, answered `101` with the key's accept value; the
//! socket is handed to the fake once upgraded.

use std::future::Future;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::upgrade::Upgraded;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;

use super::Body;

/// A fake's side of a socket.
pub(super) type Socket = WebSocketStream<TokioIo<Upgraded>>;

/// Does `req` ask to switch to a WebSocket?
pub(super) fn asks(req: &Request<Incoming>) -> bool {
    (req.headers().get("upgrade").and_then(|v| v.to_str().ok()))
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// Accept the upgrade `req`: `converse` is run on the socket once it is open.
pub(super) fn accept<F, Fut>(mut req: Request<Incoming>, converse: F) -> Response<Body>
where
    F: FnOnce(Socket) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let key = req.headers().get("sec-websocket-key").cloned();
    let version = req.headers().get("sec-websocket-version");
    let (Some(key), true) = (key, version.is_some_and(|v| v == "13")) else {
        return plain(StatusCode::BAD_REQUEST, "bad WebSocket handshake");
    };
    let on = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(upgraded) = on.await else { return };
        let io = TokioIo::new(upgraded);
        converse(WebSocketStream::from_raw_socket(io, Role::Server, None).await).await;
    });
    let mut resp = Response::new(Full::new(Bytes::new()).boxed_unsync());
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert("upgrade", "websocket".parse().unwrap());
    h.insert("connection", "Upgrade".parse().unwrap());
    let accept = derive_accept_key(key.as_bytes());
    h.insert("sec-websocket-accept", accept.parse().unwrap());
    resp
}

/// A refusal of the upgrade.
pub(super) fn plain(status: StatusCode, why: &str) -> Response<Body> {
    let mut resp = Response::new(Full::new(Bytes::from(why.to_owned())).boxed_unsync());
    *resp.status_mut() = status;
    resp
}
