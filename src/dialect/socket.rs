//! The model APIs spoken over a WebSocket, as far as the frames go: which upgrade is
//! one, which client frame starts a model turn and what request it is, which server
//! frame ends the turn, and the error frame a turn fails with. No I/O.
//!
//! The Responses API's WebSocket mode (`GET …/responses` upgraded; Codex CLI's transport,
//! `client.responses.connect()` in the openai SDK) is the one spoken today. Its client
//! sends one `{"type": "response.create", …}` text frame per model call, the rest of the
//! frame being a Responses request body (without `stream`: a socket always streams);
//! the server answers with the events of the SSE stream, one text frame each, the turn
//! ending with `response.completed`, `response.failed`, `response.incomplete` or `error`.
//! So a turn is keyed, recorded and replayed as the `POST …/responses` request its frame
//! carries, and a recording made over either transport serves the other.

use serde_json::{Map, Value};

use super::Route;

/// A model API spoken over a WebSocket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Socket {
    /// The Responses API's WebSocket mode.
    Responses,
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
        let route = Route::of(&http::Method::POST, path);
        (route == Route::OpenAiResponses).then_some(Socket::Responses)
    }

    /// The route a turn is keyed, recorded and served under.
    pub fn route(self) -> Route {
        match self {
            Socket::Responses => Route::OpenAiResponses,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_responses_path_is_a_socket_and_others_are_not() {
        for path in ["/v1/responses", "/openai/v1/responses", "/v1/responses?x=1"] {
            assert_eq!(Socket::of(path), Some(Socket::Responses), "{path}");
        }
        for path in [
            "/v1/realtime?model=m",
            "/v1/chat/completions",
            "/v1/responses/r1",
        ] {
            assert_eq!(Socket::of(path), None, "{path}");
        }
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
}
