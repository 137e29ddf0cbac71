//! Injected faults on a framed socket (the Realtime API, Gemini Live), recording and
//! replaying alike. A client frame that asks the model for an answer (`Socket::asks`:
//! Realtime's `response.create`, a Live `clientContent` that completes its turn or a
//! `toolResponse`) is a model request: counted as one, and failed as the fault due on it
//! says, in the protocol's own way:
//!
//! - `rate_limit`, `server_error`, `overloaded`, `stream_error`: Realtime's `error` event
//!   with the OpenAI error object; the frame goes no further (never upstream, never into
//!   the cassette) and the socket stays open, so the program can ask again. Live has no
//!   error message: its socket closes with 1011, the error's message as the reason;
//! - `disconnect`: a close with 1011 at once; `timeout`: the same after `for`;
//! - `truncate_stream`: the answer's first `after_events` frames, then a close with 1011;
//! - the tool-call kinds do not fire (a socket's tool call is not spoiled), which is said
//!   as a problem, as for any fault that cannot fire.

use std::time::Duration;

use futures_util::SinkExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use super::super::fault::Due;
use super::super::state::Proxy;
use super::side::{close, Program};
use crate::dialect::socket::Socket;
use crate::dialect::ErrorFault;
use crate::fault::Kind;

/// What a fault did to the socket.
pub(super) enum Injected {
    /// An error frame went to the program in place of the answer: the frame that asked
    /// goes no further.
    Answered,
    /// The socket is closed with this frame: at once (`hold` after the frame came, for a
    /// `timeout`), or after the answer's first `after` frames.
    Close {
        hold: Duration,
        after: Option<usize>,
        frame: CloseFrame,
    },
}

/// The fault the client frame `frame` (its JSON) is due, if any; a frame that asks the
/// model for an answer is counted as a model request.
pub(super) fn due(proxy: &Proxy, socket: Socket, frame: &Value) -> Option<Due> {
    if !socket.asks(frame) {
        return None;
    }
    let c = proxy.count_model_request();
    proxy.faults.due(c.nth, c.turn, c.nth_in_turn)
}

/// Inject `due`: the error frame is sent to `program` here; a close is the caller's to
/// make, once it has sent what goes before it. `None`: the fault cannot fire on a socket.
pub(super) async fn inject(
    proxy: &Proxy,
    socket: Socket,
    due: &Due,
    program: &mut Program,
) -> Option<Injected> {
    let fault = due.fault();
    let closes = |hold, after| {
        let why = format!("agentproxy: injected {}", fault.kind);
        Injected::Close {
            hold,
            after,
            frame: close(CloseCode::Error, &why),
        }
    };
    let error = match fault.kind {
        Kind::RateLimit => ErrorFault::RateLimit,
        Kind::ServerError => ErrorFault::ServerError(fault.status),
        Kind::Overloaded => ErrorFault::Overloaded,
        Kind::StreamError => ErrorFault::ServerError(500),
        Kind::Disconnect | Kind::Timeout | Kind::TruncateStream => {
            proxy.faults.fired_on_socket(due, None);
            return Some(match fault.kind {
                Kind::Disconnect => closes(Duration::ZERO, None),
                Kind::Timeout => closes(fault.hold, None),
                _ => closes(Duration::ZERO, Some(fault.after_events)),
            });
        }
        Kind::MalformedToolArgs | Kind::SchemaViolation | Kind::UnknownTool | Kind::Length => {
            let why = "a tool call on a WebSocket is not spoiled";
            proxy.faults.not_fired(due, why);
            return None;
        }
    };
    let (status, frame, message) = socket.fault(error);
    proxy.faults.fired_on_socket(due, Some(status));
    Some(match frame {
        Some(frame) => {
            let _ = program.send(Message::text(frame.to_string())).await;
            Injected::Answered
        }
        None => Injected::Close {
            hold: Duration::ZERO,
            after: None,
            frame: close(CloseCode::Error, &message),
        },
    })
}
