//! The model APIs spoken over a WebSocket, as far as the frames go: which upgrade is
//! one, what a turn is and which frame ends it, and the error frame a turn fails with.
//! No I/O.
//!
//! The Responses API's WebSocket mode (`GET …/responses` upgraded; Codex CLI's transport,
//! `client.responses.connect()` in the openai SDK) carries HTTP requests: its client
//! sends one `{"type": "response.create", …}` text frame per model call, the rest of the
//! frame being a Responses request body (without `stream`: a socket always streams);
//! the server answers with the events of the SSE stream, one text frame each, the turn
//! ending with `response.completed`, `response.failed`, `response.incomplete` or `error`.
//! So a turn is keyed, recorded and replayed as the `POST …/responses` request its frame
//! carries, and a recording made over either transport serves the other.
//!
//! The Realtime API (`realtime`) and Gemini Live (`live`) are conversations of their
//! own: a socket's frames are kept in order, cut into turns where the server ends one
//! (a **framed** socket). A turn is the client's frames since the last turn (their JSON,
//! volatile ids left out) and the server's, each with the number of the turn's client
//! frames before it, so a replay answers each client frame with what followed it.

use serde_json::{Map, Value};

use super::{live, realtime, ErrorFault, Route};
use crate::neutral::ModelCall;

/// A model API spoken over a WebSocket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Socket {
    /// The Responses API's WebSocket mode.
    Responses,
    /// OpenAI's Realtime API.
    Realtime,
    /// Gemini's Live API.
    Live,
}

/// The client frame type that starts a Responses turn.
const CREATE: &str = "response.create";

/// The server events that end a Responses turn.
const TURN_ENDS: [&str; 4] = [
    "response.completed",
    "response.failed",
    "response.incomplete",
    "error",
];

impl Socket {
    /// The socket API an upgrade of `path` (with its query) asks for, if agentproxy speaks it.
    pub fn of(path: &str) -> Option<Socket> {
        let bare = path.split('?').next().unwrap_or(path);
        if realtime::is_path(bare) {
            return Some(Socket::Realtime);
        }
        if live::is_path(bare) {
            return Some(Socket::Live);
        }
        let route = Route::of(&http::Method::POST, path);
        (route == Route::OpenAiResponses).then_some(Socket::Responses)
    }

    /// The HTTP route a turn is keyed, recorded and served under: `None` for a framed
    /// socket, whose turns have a route of their own ([`Socket::route_name`]).
    pub fn http_route(self) -> Option<Route> {
        match self {
            Socket::Responses => Some(Route::OpenAiResponses),
            Socket::Realtime | Socket::Live => None,
        }
    }

    /// The route name a turn is stored under.
    pub fn route_name(self) -> &'static str {
        match self {
            Socket::Responses => Route::OpenAiResponses.name(),
            Socket::Realtime => realtime::ROUTE,
            Socket::Live => live::ROUTE,
        }
    }

    /// The socket whose turns are stored under `route`, if one is framed.
    pub fn framed_of_route(route: &str) -> Option<Socket> {
        [Socket::Realtime, Socket::Live]
            .into_iter()
            .find(|s| s.route_name() == route)
    }

    /// Does the server frame `frame` (JSON) end a framed socket's turn?
    pub fn ends_framed_turn(self, frame: &Value) -> bool {
        match self {
            Socket::Realtime => realtime::ends_turn(frame),
            Socket::Live => live::ends_turn(frame),
            Socket::Responses => frame_type(frame).is_some_and(|k| self.ends_turn(k)),
        }
    }

    /// A client frame as a framed turn keeps and matches it (volatile ids left out).
    pub fn normalize_client(self, frame: &mut Value) {
        if self == Socket::Realtime {
            realtime::normalize_client(frame);
        }
    }

    /// A framed socket's client frame with the tool results it carries rewritten where
    /// `mock` has one (see [`realtime::rewrite_tool_results`], [`live::rewrite_tool_results`]);
    /// how many were replaced.
    pub fn rewrite_tool_results(
        self,
        frame: &mut Value,
        lookup: &dyn Fn(&str) -> Option<crate::neutral::ToolCall>,
        mock: &mut dyn FnMut(&crate::neutral::ToolCall, usize) -> Option<Value>,
    ) -> usize {
        match self {
            Socket::Realtime => realtime::rewrite_tool_results(frame, lookup, mock),
            Socket::Live => live::rewrite_tool_results(frame, lookup, mock),
            // A Responses turn is a request: its tool results are the HTTP path's.
            Socket::Responses => 0,
        }
    }

    /// A framed turn's answer assembled from its server frames (JSON).
    pub fn assemble_framed<'a>(self, server: impl Iterator<Item = &'a Value>) -> Value {
        match self {
            Socket::Live => live::assemble(server),
            _ => realtime::assemble(server),
        }
    }

    /// Does the client frame `frame` of a framed socket ask the model for an answer (a
    /// model request: counted, and a fault can fail it)?
    pub fn asks(self, frame: &Value) -> bool {
        match self {
            Socket::Realtime => realtime::asks(frame),
            Socket::Live => live::asks(frame),
            Socket::Responses => frame_type(frame) == Some(CREATE),
        }
    }

    /// An injected error on a socket: its status, the frame it is sent as (`None` for
    /// Live, which has no error message and closes the socket instead) and its message
    /// (that close's reason).
    pub fn fault(self, fault: ErrorFault) -> (u16, Option<Value>, String) {
        let (status, body) = super::openai_chat::fault_error(fault);
        let message = body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let frame = match self {
            Socket::Realtime => Some(realtime::error_event(&body["error"])),
            Socket::Responses => Some(self.error_frame(status, Some(&body["error"]), &message)),
            Socket::Live => None,
        };
        (status, frame, message)
    }

    /// The frame a framed socket's turn fails with before its close, if the protocol has
    /// one (Live has none: its close says why).
    pub fn framed_error(self, code: &str, message: &str) -> Option<Value> {
        (self == Socket::Realtime).then(|| {
            serde_json::json!({"type": "error", "error": {
                "type": "invalid_request_error", "code": code, "message": message}})
        })
    }

    /// The request body of the turn `frame` starts (the frame without its `type`), or
    /// `None` for a frame that starts none.
    pub fn turn(self, frame: &Value) -> Option<Map<String, Value>> {
        let Value::Object(fields) = frame else {
            return None;
        };
        if fields.get("type").and_then(Value::as_str) != Some(CREATE) {
            return None;
        }
        let mut body = fields.clone();
        body.remove("type");
        Some(body)
    }

    /// The client frame that sends `body` as a turn.
    pub fn turn_frame(self, body: &Map<String, Value>) -> Value {
        let mut frame = Map::with_capacity(body.len() + 1);
        frame.insert("type".into(), CREATE.into());
        frame.extend(body.iter().map(|(k, v)| (k.clone(), v.clone())));
        Value::Object(frame)
    }

    /// Does the server event named `kind` (its `type`) end a turn?
    pub fn ends_turn(self, kind: &str) -> bool {
        TURN_ENDS.contains(&kind)
    }

    /// The server frame a turn fails with: `error` (an HTTP answer's `error` object, or
    /// one made of `message`) with the HTTP status it stands for.
    pub fn error_frame(self, status: u16, error: Option<&Value>, message: &str) -> Value {
        let error = match error {
            Some(e) if e.is_object() => e.clone(),
            _ => serde_json::json!({"type": "server_error", "message": message}),
        };
        serde_json::json!({"type": "error", "status": status, "error": error})
    }
}

/// The `type` of a frame's JSON, when it has one.
pub fn frame_type(frame: &Value) -> Option<&str> {
    frame.get("type").and_then(Value::as_str)
}

/// The model call a framed socket's turn records: `request` its stored body
/// (`{"turn": N, "frames": [...]}`), `answer` its assembled answer, `path` its socket's.
/// `None` for a route that is not a framed socket's.
pub fn model_call(route: &str, request: &Value, answer: &Value, path: &str) -> Option<ModelCall> {
    let frames = request["frames"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    match Socket::framed_of_route(route)? {
        Socket::Live => Some(live::extract(frames, answer)),
        _ => Some(realtime::extract(frames, answer, path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_socket_is_known_by_its_path() {
        for path in ["/v1/responses", "/openai/v1/responses", "/v1/responses?x=1"] {
            assert_eq!(Socket::of(path), Some(Socket::Responses), "{path}");
        }
        for path in ["/v1/chat/completions", "/v1/responses/r1", "/v1/models"] {
            assert_eq!(Socket::of(path), None, "{path}");
        }
        assert_eq!(Socket::of("/v1/realtime?model=m"), Some(Socket::Realtime));
        let live = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";
        assert_eq!(Socket::of(live), Some(Socket::Live));
        assert_eq!(Socket::framed_of_route("gemini.live"), Some(Socket::Live));
        assert_eq!(Socket::framed_of_route("openai.responses"), None);
    }

    #[test]
    fn a_create_frame_is_a_turn_whose_body_has_no_type() {
        let frame = json!({"type": "response.create", "model": "m", "input": "hi"});
        let body = Socket::Responses.turn(&frame).unwrap();
        assert_eq!(
            Value::Object(body.clone()),
            json!({"model": "m", "input": "hi"})
        );
        assert_eq!(Socket::Responses.turn_frame(&body), frame);
        for other in [
            json!({"type": "response.cancel"}),
            json!([1]),
            json!({"model": "m"}),
        ] {
            assert!(Socket::Responses.turn(&other).is_none(), "{other}");
        }
    }

    #[test]
    fn a_turn_ends_with_its_last_event() {
        let s = Socket::Responses;
        assert!(s.ends_turn("response.completed") && s.ends_turn("error"));
        assert!(!s.ends_turn("response.output_text.delta"));
    }

    #[test]
    fn an_error_frame_keeps_the_answers_error() {
        let e = json!({"type": "invalid_request_error", "code": "x", "message": "m"});
        let frame = Socket::Responses.error_frame(400, Some(&e), "ignored");
        assert_eq!(frame, json!({"type": "error", "status": 400, "error": e}));
        let made = Socket::Responses.error_frame(502, None, "gone");
        assert_eq!(made["error"]["message"], "gone");
        assert_eq!(frame_type(&made), Some("error"));
    }

    /// The frames a fault can fail: those that ask the model for an answer.
    #[test]
    fn a_frame_that_asks_for_an_answer_is_a_model_request() {
        let rt = Socket::Realtime;
        assert!(rt.asks(&json!({"type": "response.create", "event_id": "e1"})));
        assert!(!rt.asks(&json!({"type": "conversation.item.create"})));
        let live = Socket::Live;
        assert!(live.asks(&json!({"clientContent": {"turns": [], "turnComplete": true}})));
        assert!(live.asks(&json!({"client_content": {"turn_complete": true}})));
        assert!(live.asks(&json!({"tool_response": {"function_responses": []}})));
        assert!(!live.asks(&json!({"clientContent": {"turns": []}})));
        assert!(!live.asks(&json!({"setup": {"model": "m"}})));
    }

    #[test]
    fn an_injected_error_is_realtimes_error_event_and_lives_close_reason() {
        let (status, frame, message) = Socket::Realtime.fault(ErrorFault::RateLimit);
        let frame = frame.unwrap();
        assert_eq!((status, &frame["type"]), (429, &json!("error")));
        assert_eq!(frame["error"]["code"], "rate_limit_exceeded");
        assert!(
            message.ends_with(crate::dialect::contract::INJECTED),
            "{message}"
        );
        let (status, frame, message) = Socket::Live.fault(ErrorFault::ServerError(503));
        assert_eq!((status, frame), (503, None));
        assert!(message.len() <= 123, "a close's reason: {message}");
    }
}
