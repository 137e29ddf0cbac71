//! The program's side of a socket: what the upgrade that opened it says, its limits,
//! the `101` that accepts it, and how it is closed.

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::header::{CONNECTION, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_PROTOCOL};
use http::{HeaderValue, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::super::api::Head;
use super::super::body::{full, ProxyBody};
use crate::dialect::socket::Socket;

/// The program's side of a socket.
pub(super) type Program = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// What one socket needs to know of the upgrade that opened it.
pub(super) struct Opened {
    pub socket: Socket,
    /// The upgrade's head: its path is each turn's.
    pub head: Head,
    /// The upgrade's headers: each turn's (the key is there).
    pub headers: http::HeaderMap,
    /// The program's side, once the `101` has gone out.
    pub upgrade: hyper::upgrade::OnUpgrade,
}

/// The limits of a socket: no message or frame over `--max-body-size`.
pub(super) fn config(max_body: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(max_body))
        .max_frame_size(Some(max_body))
}

/// The program's side of a socket, once upgraded; `None` if it hung up before.
pub(super) async fn program(
    upgrade: hyper::upgrade::OnUpgrade,
    max_body: usize,
) -> Option<Program> {
    let upgraded = upgrade.await.ok()?;
    let io = TokioIo::new(upgraded);
    Some(WebSocketStream::from_raw_socket(io, Role::Server, Some(config(max_body))).await)
}

/// The `101` that accepts an upgrade (no extension: frames are relayed and recorded as
/// they are sent).
pub(super) fn switching(accept: &str, protocol: Option<HeaderValue>) -> Response<ProxyBody> {
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
pub(super) fn first_protocol(offered: &HeaderValue) -> Option<HeaderValue> {
    let first = offered.to_str().ok()?.split(',').next()?.trim();
    HeaderValue::from_str(first)
        .ok()
        .filter(|_| !first.is_empty())
}

/// Close the program's socket with `end`, then read what it still sends until its own
/// close (bounded): closing at once would reset a connection with unread frames, and
/// the program would see the reset rather than the close.
pub(super) async fn finish(ws: &mut Program, end: CloseFrame) {
    if ws.send(Message::Close(Some(end))).await.is_err() {
        return;
    }
    let drain = async {
        while let Some(Ok(msg)) = ws.next().await {
            if let Message::Close(_) = msg {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), drain).await;
}

pub(super) fn close(code: CloseCode, why: &str) -> CloseFrame {
    // A close frame's reason is at most 123 bytes.
    let mut end = why.len().min(123);
    while !why.is_char_boundary(end) {
        end -= 1;
    }
    CloseFrame {
        code,
        reason: why[..end].to_owned().into(),
    }
}

/// The close for a frame that could not be read: too large (1009), else a protocol error.
pub(super) fn broken(e: &tokio_tungstenite::tungstenite::Error) -> CloseFrame {
    use tokio_tungstenite::tungstenite::Error;
    match e {
        Error::Capacity(_) => close(
            CloseCode::Size,
            "agentproxy: a message is larger than --max-body-size",
        ),
        e => close(CloseCode::Protocol, &format!("agentproxy: {e}")),
    }
}
