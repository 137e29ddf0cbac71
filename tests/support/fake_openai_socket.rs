//! The fake OpenAI upstream's sockets: the Realtime API (`GET /v1/realtime`, in
//! `fake_openai_realtime.rs`) and the Responses WebSocket mode (`GET /v1/responses`), as
//! the real API speaks it: the handshake is checked (a bearer token, `Sec-WebSocket-Key`,
//! version 13) and answered with the key's accept value; each `response.create` text
//! frame is a Responses request (without `stream`), answered by the same model as
//! `POST /v1/responses` (`fake_openai_responses.rs`) with its stream's events, one text
//! frame each, several turns per socket. Like the real mode, a response is kept for
//! `previous_response_id` on its socket even with `store: false`; a warm-up
//! (`"generate": false`, Codex's first frame) is answered with an empty response; a frame
//! that is not a `response.create` gets an `error` event. A binary frame closes the socket (1003).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use super::model::Answer;
use super::realtime::Realtime;
use super::responses::{self, Store};
use super::ws::{accept, plain, Socket};
use super::Body;

/// What a test controls and reads of the fake's sockets.
#[derive(Default)]
pub(super) struct Sockets {
    /// The client frames of every socket, in arrival order.
    pub frames: std::sync::Mutex<Vec<Value>>,
    /// The next this many turns are cut: two events, then a close with 1011.
    pub cuts: AtomicUsize,
    /// Sockets that have ended, closed by either side.
    pub ended: AtomicUsize,
}

/// Answer the upgrade `req`.
pub(super) fn upgrade(
    req: Request<Incoming>,
    store: Arc<Store>,
    sockets: Arc<Sockets>,
) -> Response<Body> {
    let realtime = match req.uri().path() {
        "/v1/responses" => None,
        "/v1/realtime" => {
            let query = req.uri().query().unwrap_or_default();
            let model = query.split('&').find_map(|p| p.strip_prefix("model="));
            match model {
                Some(model) => Some(Realtime::open(model)),
                None => return plain(StatusCode::BAD_REQUEST, "missing model"),
            }
        }
        _ => return plain(StatusCode::NOT_FOUND, "no WebSocket here"),
    };
    let bearer = (req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok()))
    .is_some_and(|v| v.starts_with("Bearer ") && v.len() > 7);
    if !bearer {
        return plain(StatusCode::UNAUTHORIZED, "missing bearer token");
    }
    accept(req, move |ws| async move {
        converse(ws, &store, &sockets, realtime).await;
        sockets.ended.fetch_add(1, Ordering::SeqCst);
    })
}

async fn converse(
    mut ws: Socket,
    store: &Store,
    sockets: &Sockets,
    mut realtime: Option<(Realtime, String)>,
) {
    if let Some((_, created)) = &realtime {
        if ws.send(Message::text(created.clone())).await.is_err() {
            return;
        }
    }
    while let Some(Ok(msg)) = ws.next().await {
        let frame = match msg {
            Message::Text(t) => t,
            Message::Binary(_) => {
                let close = CloseFrame {
                    code: CloseCode::Unsupported,
                    reason: "text frames only".into(),
                };
                let _ = ws.send(Message::Close(Some(close))).await;
                return;
            }
            Message::Close(_) => return,
            _ => continue,
        };
        let request: Value = serde_json::from_str(frame.as_str()).unwrap_or(Value::Null);
        (sockets.frames.lock().unwrap()).push(request.clone());
        let cut = (sockets.cuts)
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        let frames = match &mut realtime {
            Some((rt, _)) => rt.answer(store, &request),
            None => answer(store, request),
        };
        let sent = if cut { 2 } else { frames.len() };
        for out in frames.into_iter().take(sent) {
            if ws.send(Message::text(out)).await.is_err() {
                return;
            }
        }
        if cut {
            let close = CloseFrame {
                code: CloseCode::Error,
                reason: "cut by the test".into(),
            };
            let _ = ws.send(Message::Close(Some(close))).await;
            return;
        }
    }
}

/// The frames that answer one client frame.
fn answer(store: &Store, mut request: Value) -> Vec<String> {
    if request["type"] != "response.create" {
        let error = json!({"type": "error", "status": 400, "error": {
            "type": "invalid_request_error", "code": "unsupported_event",
            "message": format!("Unsupported event type: {}", request["type"])}});
        return vec![error.to_string()];
    }
    let body = request
        .as_object_mut()
        .expect("a response.create is an object");
    body.remove("type");
    body.remove("store");
    body.insert("stream".into(), Value::Bool(true));
    match responses::create(store, &request) {
        Answer::Stream(events) => events.iter().map(data_of).collect(),
        Answer::Json { status, body, .. } => {
            let error = json!({"type": "error", "status": status.as_u16(), "error": body["error"]});
            vec![error.to_string()]
        }
    }
}

/// The `data:` of one encoded event.
fn data_of(event: &Bytes) -> String {
    let text = String::from_utf8_lossy(event);
    let data = text.lines().filter_map(|l| l.strip_prefix("data: "));
    data.collect::<Vec<_>>().join("\n")
}
