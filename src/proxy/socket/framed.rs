//! A framed socket (the Realtime API, Gemini Live): its frames kept in order and cut
//! into turns where the server ends one (see `dialect::socket`). Record keeps each turn
//! as an interaction ([`Group`]); replay answers each client frame with the server
//! frames that followed it in the recording ([`serve`]), turn after turn, and a client
//! frame that differs from the recorded one is a miss.

use std::sync::Arc;
use std::time::Instant;

use base64::Engine as _;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use super::super::miss;
use super::super::record;
use super::super::replay::Replay;
use super::super::state::Proxy;
use super::fault::{self, Injected};
use super::side::{broken, close, finish, program, Opened, Program};
use crate::cassette::{Body, RecordedResponse};
use crate::dialect::live;
use crate::dialect::socket::Socket;
use crate::matching::{index::Lookup, normalize::normalize};
use crate::sse::SseEvent;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// One turn of a framed socket on its way to the cassette.
pub(super) struct Group {
    /// The turn's number on its socket (from 0).
    turn: usize,
    /// The client's frames, as kept (see [`client_value`]).
    client: Vec<Value>,
    /// The server's frames, each numbered by the client frames before it.
    server: Vec<SseEvent>,
    /// The server frames' JSON, for the turn's end and its assembled answer.
    parsed: Vec<Value>,
    /// Each server frame's time since the turn began, in milliseconds.
    offsets: Vec<u64>,
    /// The calls whose results in the client's frames a mock wrote.
    mocked: Vec<String>,
    started: Instant,
    /// The model a Live socket's `setup` named, on an earlier turn or this one: every
    /// turn's answer names it.
    model: Option<String>,
}

impl Group {
    pub(super) fn new(turn: usize) -> Group {
        Group {
            turn,
            client: Vec::new(),
            server: Vec::new(),
            parsed: Vec::new(),
            offsets: Vec::new(),
            mocked: Vec::new(),
            started: Instant::now(),
            model: None,
        }
    }

    /// The socket's next turn, after this one.
    pub(super) fn next(&self) -> Group {
        Group {
            model: self.model.clone(),
            ..Group::new(self.turn + 1)
        }
    }

    /// A frame the program sent, as [`mocked`] read it (its results already mocked for
    /// the calls `mocked`).
    pub(super) fn client(&mut self, socket: Socket, mut frame: Value, mocked: Vec<String>) {
        socket.normalize_client(&mut frame);
        if let Some(model) = live::model_of(&frame) {
            self.model = Some(model.to_owned());
        }
        self.client.push(frame);
        self.mocked.extend(mocked);
    }

    /// A frame the upstream sent: `true` when it ends the turn. A close is kept as
    /// `{"code", "reason"}`.
    pub(super) fn server(&mut self, socket: Socket, msg: &Message) -> bool {
        let (kind, data, json) = match msg {
            Message::Text(t) => (
                "text",
                t.as_str().to_owned(),
                serde_json::from_str(t.as_str()),
            ),
            Message::Binary(b) => ("binary", B64.encode(b), serde_json::from_slice(b)),
            Message::Close(frame) => {
                let (code, reason) = frame
                    .as_ref()
                    .map_or((1005, ""), |f| (f.code.into(), &f.reason));
                let data = json!({"code": code, "reason": reason}).to_string();
                ("close", data, Ok(Value::Null))
            }
            _ => return false,
        };
        let json: Value = json.unwrap_or(Value::Null);
        let ends = socket.ends_framed_turn(&json);
        self.server.push(SseEvent {
            event: Some(kind.to_owned()),
            id: Some(self.client.len().to_string()),
            data,
        });
        self.parsed.push(json);
        self.offsets.push(record::millis(self.started.elapsed()));
        ends
    }

    /// Anything to keep: a frame of the client's (the server's alone, after a turn, say
    /// nothing a replay needs).
    pub(super) fn has_client_frames(&self) -> bool {
        !self.client.is_empty()
    }

    /// The turn as the cassette keeps it, `aborted` when it was cut short.
    pub(super) fn store(self, proxy: &Proxy, socket: Socket, path: &str, aborted: Option<String>) {
        let mut answer = socket.assemble_framed(self.parsed.iter());
        if let Some(model) = self.model {
            answer["model"] = json!(model);
        }
        let mut events = self.server;
        for e in &mut events {
            if let Some(r) = proxy.opts.secrets.redact_str(&e.data) {
                e.data = r;
            }
        }
        proxy.opts.secrets.redact_value(&mut answer);
        let headers = std::collections::BTreeMap::new();
        let mut response = RecordedResponse::new(
            200,
            headers,
            Some(Body::Json(answer.into())),
            Some(events),
            aborted,
        );
        // When each frame came, for a replay paced as recorded (`--realtime`).
        response.event_ms = self.offsets;
        let keyed = json!({"turn": self.turn, "frames": self.client});
        let latency = record::millis(self.started.elapsed());
        let route = (socket.route_name(), "GET", path);
        let mut it = record::boundary(proxy, route, keyed, response, latency);
        it.mocked = self.mocked;
        proxy.recorded(proxy.next_seq(), it);
    }
}

/// The program's data frame `msg` with the tool results it carries mocked, as the model
/// is to see them (a spec's `tools:`), read as a turn keeps it (see [`client_value`]), and
/// the ids of the calls mocked; as it is without mocks or results.
pub(super) fn mocked(proxy: &Proxy, socket: Socket, msg: Message) -> (Message, Value, Vec<String>) {
    let parsed = match &msg {
        Message::Text(t) => serde_json::from_str::<Value>(t.as_str()).ok(),
        _ => None,
    };
    let Some(mut frame) = parsed else {
        let frame = client_value(&msg).unwrap_or(Value::Null);
        return (msg, frame, Vec::new());
    };
    let mocked =
        proxy.mock_results(|lookup, mock| socket.rewrite_tool_results(&mut frame, lookup, mock));
    match mocked {
        Some(ids) if !ids.is_empty() => (Message::text(frame.to_string()), frame, ids),
        _ => (msg, frame, Vec::new()),
    }
}

/// A client frame as a turn keeps it: its JSON, `{"text": …}` for text that is not JSON,
/// `{"binary": BASE64}` for a binary frame; `None` for a control frame.
fn client_value(msg: &Message) -> Option<Value> {
    match msg {
        Message::Text(t) => {
            Some(serde_json::from_str(t.as_str()).unwrap_or_else(|_| json!({"text": t.as_str()})))
        }
        Message::Binary(b) => Some(json!({"binary": B64.encode(b)})),
        _ => None,
    }
}

/// Replay a framed socket in a tracked task (the session's end waits for it).
pub(super) fn serve(proxy: &Arc<Proxy>, opened: Opened) {
    let proxy = proxy.clone();
    proxy.tasks.clone().spawn(async move {
        let Some(rp) = proxy.opts.replay.as_ref() else {
            return;
        };
        let Some(mut ws) = program(opened.upgrade, proxy.opts.max_body).await else {
            return;
        };
        let mut chain = Chain {
            proxy: &proxy,
            rp,
            socket: opened.socket,
            path: &opened.head.stored_path,
            turn: 0,
            pos: None,
            seen: Vec::new(),
            began: Instant::now(),
        };
        let end = chain.run(&mut ws).await;
        finish(&mut ws, end).await;
    });
}

/// Where a replayed socket is in its recording.
struct Chain<'a> {
    proxy: &'a Proxy,
    rp: &'a Replay,
    socket: Socket,
    path: &'a str,
    /// The turn being served, and its recording.
    turn: usize,
    pos: Option<usize>,
    /// The client frames of this turn so far (normalized, redacted).
    seen: Vec<Value>,
    /// When this turn began, for `--realtime` pacing.
    began: Instant,
}

impl Chain<'_> {
    /// Serve until the program closes or a frame misses; the close to send.
    async fn run(&mut self, ws: &mut Program) -> CloseFrame {
        if let Err(end) = self.next_turn(ws).await {
            return end;
        }
        while let Some(msg) = ws.next().await {
            let msg = match msg {
                Ok(Message::Close(_)) => return close(CloseCode::Normal, ""),
                Ok(m @ (Message::Text(_) | Message::Binary(_))) => m,
                Ok(_) => continue,
                Err(e) => return broken(&e),
            };
            if let Err(end) = self.answer(ws, msg).await {
                return end;
            }
        }
        close(CloseCode::Away, "the program hung up")
    }

    /// Answer one client frame: check it against the recording, send what followed it
    /// (unless a fault is due on it).
    async fn answer(&mut self, ws: &mut Program, msg: Message) -> Result<(), CloseFrame> {
        let (_, mut frame, _) = mocked(self.proxy, self.socket, msg);
        self.socket.normalize_client(&mut frame);
        self.proxy.opts.secrets.redact_value(&mut frame);
        let mut cut = None;
        if let Some(due) = fault::due(self.proxy, self.socket, &frame) {
            match fault::inject(self.proxy, self.socket, &due, ws).await {
                Some(Injected::Answered) => return Ok(()),
                Some(Injected::Close { hold, after, frame }) => match after {
                    None => {
                        tokio::time::sleep(hold).await;
                        return Err(frame);
                    }
                    Some(n) => cut = Some((n, frame)),
                },
                None => {}
            }
        }
        let rules = &self.proxy.opts.rules;
        let recorded = self.pos.and_then(|pos| {
            let body = self.rp.interactions[pos]
                .request
                .body
                .as_ref()?
                .json_transient()?;
            Some(body["frames"].get(self.seen.len())?.clone())
        });
        self.seen.push(frame);
        let matches = recorded.is_some_and(|r| {
            normalize(&r, rules) == normalize(self.seen.last().unwrap_or(&Value::Null), rules)
        });
        if !matches {
            return Err(self.miss(ws).await);
        }
        let Some(pos) = self.pos else { return Ok(()) };
        if self.seen.len() == 1 {
            // Served: counted and logged as a request when its first frame comes, in the
            // test runner's turn that sent it (a test's trajectory reads it).
            let (seq, turn) = (self.proxy.next_seq(), self.proxy.current_turn());
            self.proxy
                .served(seq, &self.rp.interactions[pos], turn, &[], None);
        }
        let limit = cut.as_ref().map(|(n, _)| *n);
        self.send_after(ws, pos, self.seen.len(), limit).await?;
        if let Some((_, frame)) = cut {
            return Err(frame);
        }
        let it = &self.rp.interactions[pos];
        let frames = (it.request.body.as_ref().and_then(Body::json_transient))
            .and_then(|b| b["frames"].as_array().map(Vec::len))
            .unwrap_or(0);
        if self.seen.len() < frames {
            return Ok(());
        }
        if let Some(why) = &it.response.aborted {
            return Err(close(
                CloseCode::Error,
                &format!("agentproxy: the recorded turn was cut short: {why}"),
            ));
        }
        self.turn += 1;
        self.next_turn(ws).await
    }

    /// Take the socket's next turn and send what its server said before any client frame.
    async fn next_turn(&mut self, ws: &mut Program) -> Result<(), CloseFrame> {
        let after = self.pos;
        self.seen.clear();
        self.began = Instant::now();
        self.pos = next_recording(
            self.rp,
            (self.socket.route_name(), self.path),
            self.turn,
            after,
        );
        match self.pos {
            Some(pos) => self.send_after(ws, pos, 0, None).await,
            // The first turn missing: nothing was recorded for this socket at all.
            None if self.turn == 0 => Err(self.miss(ws).await),
            // Later ones: a client frame will miss, if one comes.
            None => Ok(()),
        }
    }

    /// Send the recording's server frames that followed its `n`-th client frame (the
    /// first `limit` of them, when given).
    async fn send_after(
        &self,
        ws: &mut Program,
        pos: usize,
        n: usize,
        limit: Option<usize>,
    ) -> Result<(), CloseFrame> {
        let n = n.to_string();
        let response = &self.rp.interactions[pos].response;
        let events = response.events.as_deref().unwrap_or_default();
        // Paced as recorded with `--realtime`: each frame when it came in its turn.
        let offsets: &[u64] = match self.rp.realtime {
            true => &response.event_ms,
            false => &[],
        };
        let after_n =
            (events.iter().enumerate()).filter(|(_, e)| e.id.as_deref() == Some(n.as_str()));
        for (i, e) in after_n.take(limit.unwrap_or(usize::MAX)) {
            if let Some(ms) = offsets.get(i) {
                let at = self.began + std::time::Duration::from_millis(*ms);
                tokio::time::sleep_until(at.into()).await;
            }
            let msg = match e.event.as_deref() {
                Some("binary") => {
                    Message::Binary(Bytes::from(B64.decode(&e.data).unwrap_or_default()))
                }
                // The server closed the socket here: so does the replay, as it did.
                Some("close") => {
                    let v: Value = serde_json::from_str(&e.data).unwrap_or(Value::Null);
                    let code = v["code"].as_u64().and_then(|c| u16::try_from(c).ok());
                    let reason = v["reason"].as_str().unwrap_or_default();
                    return Err(close(CloseCode::from(code.unwrap_or(1011)), reason));
                }
                _ => Message::text(e.data.clone()),
            };
            if ws.send(msg).await.is_err() {
                return Err(close(CloseCode::Away, "the program hung up"));
            }
        }
        Ok(())
    }

    /// A turn with no recording: the near-miss report, the protocol's error, then 1011.
    async fn miss(&self, ws: &mut Program) -> CloseFrame {
        self.proxy.next_seq();
        let now = json!({"turn": self.turn, "frames": self.seen});
        let normalized = normalize(&now, &self.proxy.opts.rules);
        let route = self.socket.route_name();
        let report = miss::note(
            self.proxy,
            self.rp,
            ("GET", self.path, route),
            &normalized,
            Lookup::Unknown,
        );
        let message = format!("agentproxy: {report}");
        if let Some(error) = self
            .socket
            .framed_error("agentproxy_cassette_miss", &message)
        {
            let _ = ws.send(Message::text(error.to_string())).await;
        }
        close(
            CloseCode::Error,
            "agentproxy: cassette miss (see the near-miss report)",
        )
    }
}

/// The first unused recording after `after` of turn `turn` of a socket on `route` at
/// `path`, taken.
fn next_recording(
    rp: &Replay,
    (route, path): (&str, &str),
    turn: usize,
    after: Option<usize>,
) -> Option<usize> {
    let start = after.map_or(0, |a| a + 1);
    let candidates = rp.interactions.iter().enumerate().skip(start);
    for (_, it) in candidates.filter(|(_, it)| it.route == route && it.request.path == path) {
        let body = it.request.body.as_ref().and_then(Body::json_transient);
        if body.is_some_and(|b| b["turn"] == turn) {
            if let Lookup::Hit(pos) = rp.take(&it.key) {
                return Some(pos);
            }
        }
    }
    None
}
