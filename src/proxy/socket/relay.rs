//! Record over a socket: the upgrade is relayed to the upstream's socket (`ws://` for an
//! `http://` upstream, `wss://` for an `https://` one) before the program's is accepted,
//! so an upstream that refuses refuses the program alike; then frames pass both ways as
//! they are sent, and each turn (a client frame that starts one, the server frames up to
//! the one that ends it) is stored as the HTTP request it carries, answered with those
//! frames as its events. A turn cut short (either side hung up, a frame too large) is
//! stored as aborted.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::{Response, StatusCode};
use serde_json::Value;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::super::api::{self, Head};
use super::super::body::{full, ProxyBody};
use super::super::client::{DialError, WebSocket};
use super::super::exchange::Exchange;
use super::super::record::{self, Recorded};
use super::super::state::Proxy;
use super::super::upstream::{Upstream, UpstreamError};
use super::fault::{self, Injected};
use super::framed::{self, Group};
use super::side::{broken, close, config, program, switching, Opened, Program};
use crate::cassette::Body;
use crate::dialect::socket::{frame_type, Socket};
use crate::dialect::{self, Refusal};
use crate::sse::SseEvent;

/// Dial the upstream's socket for `opened`; once it answers, accept the program's and
/// relay them in a tracked task.
pub(super) async fn open(
    proxy: &Arc<Proxy>,
    up: &Upstream,
    opened: Opened,
    accept: String,
) -> Response<ProxyBody> {
    let head = &opened.head;
    if dialect::carries_placeholder(&opened.headers, &head.path) {
        let vars = dialect::key_vars(head.provider).join(" or ");
        return failed(proxy, head, UpstreamError::Placeholder { vars });
    }
    let origin = head.origin.as_deref();
    let (url, stored_url) = match (
        up.url_for(head.provider, origin, &head.path),
        up.url_for(head.provider, origin, &head.stored_path),
    ) {
        (Ok(url), Ok(stored)) => (url, stored),
        (Err(e), _) | (_, Err(e)) => return failed(proxy, head, e),
    };
    let config = config(proxy.opts.max_body);
    let (upstream, answer) = match up.dial(&url, &opened.headers, config).await {
        Ok(opened) => opened,
        Err(DialError::Failed(message)) => {
            let e = UpstreamError::Unreachable {
                url: stored_url,
                message,
            };
            return failed(proxy, head, e);
        }
        // The upstream's own refusal (a 401, a 404 a client falls back on) is the
        // program's answer.
        Err(DialError::Refused(answer)) => {
            let (parts, body) = answer.into_parts();
            let why = format!(
                "{} {}: the upstream refused the WebSocket: {}",
                head.method, head.stored_path, parts.status
            );
            proxy.lock().rejected.push(why);
            let mut resp = Response::new(full(Bytes::from(body.unwrap_or_default())));
            *resp.status_mut() = parts.status;
            if let Some(t) = parts.headers.get(http::header::CONTENT_TYPE) {
                resp.headers_mut()
                    .insert(http::header::CONTENT_TYPE, t.clone());
            }
            return resp;
        }
    };
    let protocol = answer
        .headers()
        .get(http::header::SEC_WEBSOCKET_PROTOCOL)
        .cloned();
    let task = proxy.clone();
    proxy.tasks.spawn(async move {
        let max_body = task.opts.max_body;
        let Some(program) = program(opened.upgrade, max_body).await else {
            return;
        };
        let mut relay = Relay {
            proxy: &task,
            socket: opened.socket,
            head: &opened.head,
            headers: &opened.headers,
            turns: VecDeque::new(),
            group: (opened.socket.http_route().is_none()).then(|| Group::new(0)),
            cut: None,
        };
        relay.run(program, upstream).await;
    });
    switching(&accept, protocol)
}

/// An upstream failure before the socket opened: noted, and answered in the provider's
/// shape with 502.
fn failed(proxy: &Proxy, head: &Head, e: UpstreamError) -> Response<ProxyBody> {
    let why = format!("{} {}: {e}", head.method, head.stored_path);
    tell!("agentproxy: {why}");
    proxy.lock().upstream_errors.push(why);
    let body = dialect::error_body(
        head.provider,
        502,
        Refusal::UpstreamError,
        &format!("agentproxy: {e}"),
    );
    super::super::body::json_response(StatusCode::BAD_GATEWAY, &body)
}

/// One socket being relayed.
struct Relay<'a> {
    proxy: &'a Arc<Proxy>,
    socket: Socket,
    head: &'a Head,
    headers: &'a http::HeaderMap,
    /// The turns sent and not yet ended, oldest first.
    turns: VecDeque<Turn>,
    /// A framed socket's turn on its way (see `framed`); `None` for the Responses mode.
    group: Option<Group>,
    /// A stream a fault cuts: the answer's frames still to go, and the close after them.
    cut: Option<(usize, CloseFrame)>,
}

/// A turn on its way: its exchange, when it was sent, and the server's frames so far,
/// with when each came (milliseconds since it was sent).
struct Turn {
    ex: Exchange,
    started: Instant,
    events: Vec<SseEvent>,
    event_ms: Vec<u64>,
}

impl Turn {
    /// Store the turn: answered with its frames as a stream's events, `aborted` when it
    /// was cut short.
    fn store(self, proxy: &Proxy, aborted: Option<String>) {
        let headers = BTreeMap::from([("content-type".to_owned(), "text/event-stream".to_owned())]);
        let recorded = Recorded {
            status: StatusCode::OK,
            headers,
            body: None,
            events: Some(self.events),
            event_ms: self.event_ms,
            aborted,
        };
        record::store(proxy, self.ex, recorded, self.started.elapsed());
    }
}

/// How a relayed socket ended: why (for a turn cut short), whether the program hung up
/// (not an upstream failure), and the close each side is sent, if any.
struct Ending {
    why: String,
    hung_up: bool,
    to_program: Option<CloseFrame>,
    to_upstream: Option<CloseFrame>,
}

impl Ending {
    /// The program went away or closed: the upstream is told.
    fn program(why: &str, to_upstream: Option<CloseFrame>) -> Ending {
        Ending {
            why: why.to_owned(),
            hung_up: true,
            to_program: None,
            to_upstream,
        }
    }

    /// A fault closed the program's socket with `frame`: the upstream's is closed too,
    /// and the turn stored as aborted, but no upstream failed.
    fn injected(frame: CloseFrame) -> Ending {
        Ending {
            why: frame.reason.to_string(),
            hung_up: true,
            to_program: Some(frame),
            to_upstream: Some(close(CloseCode::Normal, "")),
        }
    }

    /// The upstream broke off: the program is told so with 1011.
    fn upstream(why: String) -> Ending {
        let to_program = Some(close(
            CloseCode::Error,
            "agentproxy: the upstream's socket broke off",
        ));
        Ending {
            why,
            hung_up: false,
            to_program,
            to_upstream: None,
        }
    }
}

impl Relay<'_> {
    async fn run(&mut self, mut program: Program, mut upstream: WebSocket) {
        let ending = loop {
            let step = tokio::select! {
                msg = program.next() => self.program_sent(msg, &mut upstream, &mut program).await,
                msg = upstream.next() => self.upstream_sent(msg, &mut program).await,
            };
            if let Some(ending) = step {
                break ending;
            }
        };
        self.abort(&ending.why, ending.hung_up);
        if let Some(frame) = ending.to_program {
            let _ = program.send(Message::Close(Some(frame))).await;
        }
        if let Some(frame) = ending.to_upstream {
            let _ = upstream.send(Message::Close(Some(frame))).await;
        }
        // A close received is answered: the reply queued by the read goes out.
        let _ = program.flush().await;
    }

    /// Relay what the program sent; `Some` ends the socket.
    async fn program_sent(
        &mut self,
        msg: Option<Result<Message, WsError>>,
        upstream: &mut WebSocket,
        program: &mut Program,
    ) -> Option<Ending> {
        let hung_up = || Some(close(CloseCode::Away, "the program hung up"));
        let out = match msg {
            Some(Ok(msg @ (Message::Text(_) | Message::Binary(_)))) => {
                let (msg, frame, mocked) = framed::mocked(self.proxy, self.socket, msg);
                let injected = self.fault(&frame, program).await;
                if matches!(injected, Some(Injected::Answered)) {
                    return None;
                }
                // A framed turn keeps the frame that was failed; a Responses turn is
                // recorded only once it goes upstream.
                let forwarded = !matches!(injected, Some(Injected::Close { after: None, .. }));
                let msg = match (&mut self.group, msg) {
                    (Some(group), msg) => {
                        group.client(self.socket, frame, mocked);
                        msg
                    }
                    (None, Message::Text(text)) if forwarded => {
                        Message::text(self.turn_sent(text.as_str(), &frame))
                    }
                    (None, msg) => msg,
                };
                match injected {
                    Some(Injected::Close {
                        hold,
                        after: None,
                        frame,
                    }) => {
                        tokio::time::sleep(hold).await;
                        return Some(Ending::injected(frame));
                    }
                    Some(Injected::Close {
                        after: Some(n),
                        frame,
                        ..
                    }) => self.cut = Some((n, frame)),
                    _ => {}
                }
                msg
            }
            // Each side answers its own pings.
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => return None,
            Some(Ok(Message::Close(frame))) => {
                return Some(Ending::program(
                    "the program closed the socket mid-turn",
                    frame,
                ))
            }
            Some(Err(e)) => {
                let end = broken(&e);
                let mut ending =
                    Ending::program(&format!("the program's socket: {}", end.reason), hung_up());
                ending.to_program = Some(end);
                return Some(ending);
            }
            None => return Some(Ending::program("the program hung up mid-turn", hung_up())),
        };
        match upstream.send(out).await {
            Ok(()) => self.cut_after(0),
            Err(e) => Some(Ending::upstream(format!(
                "the upstream's socket broke off: {e}"
            ))),
        }
    }

    /// The fault the program's frame `frame` is due (counted as a model request when it
    /// asks for an answer), injected.
    async fn fault(&self, frame: &Value, program: &mut Program) -> Option<Injected> {
        let due = fault::due(self.proxy, self.socket, frame)?;
        fault::inject(self.proxy, self.socket, &due, program).await
    }

    /// A stream cut by a fault ends once `sent` more of the answer's frames have gone.
    fn cut_after(&mut self, sent: usize) -> Option<Ending> {
        let (left, _) = self.cut.as_mut()?;
        *left = left.saturating_sub(sent);
        if *left > 0 {
            return None;
        }
        self.cut.take().map(|(_, frame)| Ending::injected(frame))
    }

    /// Relay what the upstream sent; `Some` ends the socket.
    async fn upstream_sent(
        &mut self,
        msg: Option<Result<Message, WsError>>,
        program: &mut Program,
    ) -> Option<Ending> {
        let out = match msg {
            Some(Ok(msg @ (Message::Text(_) | Message::Binary(_)))) if self.group.is_some() => {
                self.framed_sent(&msg);
                msg
            }
            Some(Ok(Message::Text(frame))) => {
                self.answer_sent(frame.as_str());
                Message::Text(frame)
            }
            Some(Ok(Message::Binary(b))) => Message::Binary(b),
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => return None,
            Some(Ok(Message::Close(frame))) => {
                // A framed turn keeps the close, its code and reason, for its replay.
                if let Some(group) = &mut self.group {
                    group.server(self.socket, &Message::Close(frame.clone()));
                }
                let code = frame.as_ref().map_or(1005, |f| u16::from(f.code));
                let mut ending =
                    Ending::upstream(format!("the upstream closed the socket mid-turn ({code})"));
                ending.to_program = frame;
                return Some(ending);
            }
            Some(Err(e)) => {
                return Some(Ending::upstream(format!(
                    "the upstream's socket broke off: {e}"
                )))
            }
            None => {
                return Some(Ending::upstream(
                    "the upstream's socket broke off".to_owned(),
                ))
            }
        };
        match program.send(out).await {
            Ok(()) => self.cut_after(1),
            Err(_) => Some(Ending::program(
                "the program hung up mid-turn",
                Some(close(CloseCode::Away, "the program hung up")),
            )),
        }
    }

    /// A frame of the program's: a turn starts when it starts one (its tool results
    /// mocked first, as for HTTP); what goes upstream comes back.
    fn turn_sent(&mut self, frame: &str, parsed: &Value) -> String {
        let body = self.socket.turn(parsed);
        let (Some(body), Some(route)) = (body, self.socket.http_route()) else {
            return frame.to_owned();
        };
        let proxy = self.proxy;
        let raw = serde_json::to_vec(&body).unwrap_or_default();
        let seq = proxy.next_seq();
        let mut ex = api::exchange(
            proxy,
            self.head.of_turn(),
            self.headers.clone(),
            (seq, route, raw.into()),
            None,
        );
        // A turn's bytes are a frame's, not a body's: no digest to recognise them by.
        ex.digest = None;
        let out = match ex.mocked.is_empty() {
            true => frame.to_owned(),
            false => match serde_json::from_slice::<serde_json::Map<String, Value>>(&ex.raw) {
                Ok(body) => self.socket.turn_frame(&body).to_string(),
                Err(_) => frame.to_owned(),
            },
        };
        self.turns.push_back(Turn {
            ex,
            started: Instant::now(),
            events: Vec::new(),
            event_ms: Vec::new(),
        });
        out
    }

    /// A frame of the upstream's: one more event of the oldest turn, which it may end.
    fn answer_sent(&mut self, frame: &str) {
        let Some(turn) = self.turns.front_mut() else {
            return;
        };
        let parsed = serde_json::from_str::<Value>(frame).ok();
        let kind = parsed.as_ref().and_then(frame_type).map(str::to_owned);
        let ends = kind.as_deref().is_some_and(|k| self.socket.ends_turn(k));
        turn.events.push(SseEvent {
            event: kind.clone(),
            id: None,
            data: frame.to_owned(),
        });
        turn.event_ms.push(record::millis(turn.started.elapsed()));
        if !ends {
            return;
        }
        let Some(turn) = self.turns.pop_front() else {
            return;
        };
        match (kind.as_deref(), turn.events.len(), &parsed) {
            // A turn refused at once is the HTTP error it stands for.
            (Some("error"), 1, Some(error)) => {
                let latency = turn.started.elapsed();
                record::store(self.proxy, turn.ex, refused(error), latency);
            }
            _ => turn.store(self.proxy, None),
        }
    }

    /// A frame of the upstream's on a framed socket: one more of the turn, which it may end.
    fn framed_sent(&mut self, msg: &Message) {
        let Some(group) = &mut self.group else { return };
        if !group.server(self.socket, msg) {
            return;
        }
        let next = group.next();
        let done = std::mem::replace(group, next);
        done.store(self.proxy, self.socket, &self.head.stored_path, None);
    }

    /// Every turn still open is stored as aborted, `why`.
    fn abort(&mut self, why: &str, hung_up: bool) {
        if let Some(group) = self.group.take().filter(Group::has_client_frames) {
            let message = format!(
                "{} {}: {why}; recorded as aborted",
                self.head.method, self.head.stored_path
            );
            tell!("agentproxy: {message}");
            if !hung_up {
                self.proxy.lock().upstream_errors.push(message);
            }
            group.store(
                self.proxy,
                self.socket,
                &self.head.stored_path,
                Some(why.to_owned()),
            );
        }
        for turn in std::mem::take(&mut self.turns) {
            let n = turn.events.len();
            record::note_abort(self.proxy, &turn.ex, why, hung_up);
            turn.store(self.proxy, Some(format!("{why} (after {n} events)")));
        }
    }
}

/// A turn the server refused with an `error` frame: the HTTP answer it stands for.
fn refused(error: &Value) -> Recorded {
    let status = (error.get("status").and_then(Value::as_u64))
        .and_then(|s| u16::try_from(s).ok())
        .and_then(|s| StatusCode::from_u16(s).ok())
        .filter(|s| s.is_client_error() || s.is_server_error())
        .unwrap_or(StatusCode::BAD_REQUEST);
    let body = serde_json::json!({"error": error.get("error").cloned().unwrap_or(Value::Null)});
    let headers = BTreeMap::from([("content-type".to_owned(), "application/json".to_owned())]);
    Recorded {
        status,
        headers,
        body: Some(Body::Json(body.into())),
        events: None,
        event_ms: Vec::new(),
        aborted: None,
    }
}
