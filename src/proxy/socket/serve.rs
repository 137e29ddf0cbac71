//! Replay over a socket: each turn the program sends is answered from the cassette as
//! the HTTP request it carries (`api::answer_read`, so matching, mocks, faults and the
//! miss report are the HTTP path's), and the answer's events go back as text frames. A
//! turn that fails (a recorded error, a miss) is an `error` frame; a miss then closes the
//! socket (1011), as the run has failed.

use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use http::Response;
use http_body_util::BodyExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use super::super::api::{self, Head};
use super::super::body::ProxyBody;
use super::super::state::Proxy;
use super::side::{broken, close, finish, program, Opened, Program};
use crate::dialect::socket::{frame_type, Socket};
use crate::sse::SseParser;

/// Serve the socket `opened` in a tracked task (the session's end waits for it).
pub(super) fn open(proxy: &Arc<Proxy>, opened: Opened) {
    let proxy = proxy.clone();
    proxy.tasks.clone().spawn(async move {
        let Opened {
            socket,
            head,
            headers,
            upgrade,
        } = opened;
        let Some(mut ws) = program(upgrade, proxy.opts.max_body).await else {
            return;
        };
        let ctx = (&proxy, socket, &head, &headers);
        while let Some(msg) = ws.next().await {
            let end = match msg {
                Ok(Message::Text(frame)) => turn(ctx, &mut ws, frame.as_str()).await,
                Ok(Message::Binary(_)) => Some(close(
                    CloseCode::Unsupported,
                    "agentproxy: this socket takes text frames (JSON events) only",
                )),
                Ok(Message::Close(_)) => break,
                Ok(_) => None,
                Err(e) => Some(broken(&e)),
            };
            if let Some(end) = end {
                finish(&mut ws, end).await;
                break;
            }
        }
    });
}

type Ctx<'a> = (&'a Arc<Proxy>, Socket, &'a Head, &'a http::HeaderMap);

/// Answer one frame of the program's; `Some` closes the socket with that frame.
async fn turn(
    (proxy, socket, head, headers): Ctx<'_>,
    ws: &mut Program,
    frame: &str,
) -> Option<CloseFrame> {
    let error = |message: String| socket.error_frame(400, None, &message);
    let body = match serde_json::from_str::<Value>(frame) {
        Err(e) => Err(error(format!("agentproxy: the frame is not JSON: {e}"))),
        Ok(v) => socket.turn(&v).ok_or_else(|| {
            let kind = frame_type(&v).unwrap_or("(none)");
            error(format!(
                "agentproxy: replay answers `response.create` frames; this one's type is `{kind}`"
            ))
        }),
    };
    let mut body = match body {
        Ok(body) => body,
        Err(frame) => return send(ws, &frame).await.err(),
    };
    // The turn as the HTTP request it carries: a stream is what a socket answers with.
    body.insert("stream".into(), Value::Bool(true));
    let raw = serde_json::to_vec(&body).unwrap_or_default();
    let seq = proxy.next_seq();
    let resp = api::answer_read(proxy, head.of_turn(), headers.clone(), seq, raw.into()).await;
    relay_answer(socket, ws, resp).await
}

/// Send the HTTP answer to a turn as frames: a stream's events one frame each, an error
/// as an `error` frame (closing the socket after agentproxy's own, a miss), a whole
/// Responses body as its `response.completed` event.
async fn relay_answer(
    socket: Socket,
    ws: &mut Program,
    resp: Response<ProxyBody>,
) -> Option<CloseFrame> {
    let status = resp.status();
    let streamed = (resp.headers().get(http::header::CONTENT_TYPE))
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let mut body = resp.into_body();
    if streamed {
        let mut parser = SseParser::new();
        while let Some(chunk) = body.frame().await {
            let data = match chunk.map(|f| f.into_data()) {
                Ok(Ok(data)) => data,
                Ok(Err(_)) => continue,
                Err(e) => {
                    let why = format!("agentproxy: the recorded stream broke off: {e}");
                    return Some(close(CloseCode::Error, &why));
                }
            };
            for event in parser.push(&data) {
                if let Err(end) = send_text(ws, event.data).await {
                    return Some(end);
                }
            }
        }
        return None;
    }
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if status.is_success() {
        let completed = serde_json::json!({"type": "response.completed", "response": answer});
        return send(ws, &completed).await.err();
    }
    let error = answer.get("error");
    let message = String::from_utf8_lossy(&bytes);
    let frame = socket.error_frame(status.as_u16(), error, &message);
    if let Err(end) = send(ws, &frame).await {
        return Some(end);
    }
    let ours = (error.and_then(|e| e.get("code")).and_then(Value::as_str))
        .is_some_and(|code| code.starts_with("agentproxy_"));
    ours.then(|| close(CloseCode::Error, "agentproxy: the turn was not served"))
}

/// Send a JSON frame; `Err` when the program has gone.
async fn send(ws: &mut Program, frame: &Value) -> Result<(), CloseFrame> {
    send_text(ws, frame.to_string()).await
}

async fn send_text(ws: &mut Program, text: String) -> Result<(), CloseFrame> {
    (ws.send(Message::text(text)).await).map_err(|_| close(CloseCode::Away, "the program hung up"))
}
