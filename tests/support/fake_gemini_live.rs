//! The fake Gemini upstream's Live API (`…/ws/google.ai.generativelanguage.{v}.GenerativeService.BidiGenerateContent`
//! upgraded), as the real service speaks it: the key is checked (`x-goog-api-key` or
//! `?key=`), the first message must be `setup` (answered `setupComplete`); fields are
//! read in either protobuf JSON spelling (`clientContent` or `client_content`); a
//! `clientContent` with `turnComplete` and a `toolResponse` are answered by the same
//! model as `generateContent` over the conversation so far (the setup's tools and
//! system instruction with it): a `toolCall` with fresh call ids, or the text in
//! `serverContent` pieces, then `turnComplete` with `usageMetadata`. Like the real
//! service, every server message is JSON in a binary frame.

use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use super::chat_model::{fragments, random_token, Answer};
use super::model::generate;
use super::ws::{accept, plain, Socket};
use super::{Body, Call};

/// Answer the upgrade `req` to a Live socket.
pub(super) fn upgrade(req: Request<Incoming>) -> Response<Body> {
    if !req.uri().path().ends_with("BidiGenerateContent") {
        return plain(StatusCode::NOT_FOUND, "no WebSocket here");
    }
    let header = req
        .headers()
        .get("x-goog-api-key")
        .and_then(|v| v.to_str().ok());
    let query = req.uri().query().unwrap_or_default();
    let keyed =
        header.is_some_and(|k| !k.is_empty()) || query.split('&').any(|p| p.starts_with("key="));
    if !keyed {
        return plain(StatusCode::FORBIDDEN, "missing API key");
    }
    accept(req, converse)
}

async fn converse(mut ws: Socket) {
    let mut setup: Option<Value> = None;
    let mut contents: Vec<Value> = Vec::new();
    while let Some(Ok(msg)) = ws.next().await {
        let message: Value = match &msg {
            Message::Text(t) => serde_json::from_str(t.as_str()).unwrap_or(Value::Null),
            Message::Binary(b) => serde_json::from_slice(b).unwrap_or(Value::Null),
            Message::Close(_) => return,
            _ => continue,
        };
        let answer = match (&setup, message.get("setup")) {
            (None, Some(s)) => {
                setup = Some(s.clone());
                vec![json!({"setupComplete": {}})]
            }
            (None, None) | (Some(_), Some(_)) => {
                let close = CloseFrame {
                    code: CloseCode::Policy,
                    reason: "setup must be the first message, and the only one".into(),
                };
                let _ = ws.send(Message::Close(Some(close))).await;
                return;
            }
            (Some(s), None) => turn(s, &mut contents, &message),
        };
        for out in answer {
            if ws
                .send(Message::binary(out.to_string().into_bytes()))
                .await
                .is_err()
            {
                return;
            }
        }
    }
}

/// A field the client may name either way: the service reads protobuf JSON, which
/// takes `lowerCamel` and `snake_case` alike (the Python SDK sends the latter).
fn field<'a>(v: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    v.get(camel).or_else(|| v.get(snake))
}

/// The messages that answer one client message after the setup.
fn turn(setup: &Value, contents: &mut Vec<Value>, message: &Value) -> Vec<Value> {
    if let Some(content) = field(message, "clientContent", "client_content") {
        contents.extend(content["turns"].as_array().into_iter().flatten().cloned());
        if field(content, "turnComplete", "turn_complete") != Some(&Value::Bool(true)) {
            return vec![];
        }
    } else if let Some(responses) = field(message, "toolResponse", "tool_response")
        .and_then(|r| field(r, "functionResponses", "function_responses"))
        .and_then(Value::as_array)
    {
        let parts: Vec<Value> = (responses.iter())
            .map(|r| json!({"functionResponse": {"id": r["id"], "name": r["name"], "response": r["response"]}}))
            .collect();
        contents.push(json!({"role": "user", "parts": parts}));
    } else {
        return vec![];
    }
    let model = setup["model"]
        .as_str()
        .unwrap_or_default()
        .trim_start_matches("models/");
    let call = Call {
        model: model.to_owned(),
        stream: false,
        sse: false,
        vertex: false,
    };
    let mut request = json!({"contents": contents});
    for (camel, snake) in [
        ("tools", "tools"),
        ("systemInstruction", "system_instruction"),
    ] {
        if let Some(v) = field(setup, camel, snake) {
            request[camel] = v.clone();
        }
    }
    let Answer::Json { status, body, .. } = generate(&call, &request, false, &random_token(16))
    else {
        return vec![];
    };
    if !status.is_success() {
        return vec![json!({"serverContent": {"turnComplete": true}, "error": body["error"]})];
    }
    let mut content = body["candidates"][0]["content"].clone();
    // Each call gets the id the client must answer it with, in the conversation too.
    let mut calls = Vec::new();
    for part in content["parts"].as_array_mut().into_iter().flatten() {
        if let Some(call) = part.get_mut("functionCall") {
            call["id"] = json!(format!("function-call-{}", random_token(12)));
            calls.push(json!({"id": call["id"], "name": call["name"], "args": call["args"]}));
        }
    }
    contents.push(content.clone());
    let parts = content["parts"].as_array().cloned().unwrap_or_default();
    if !calls.is_empty() {
        return vec![json!({"toolCall": {"functionCalls": calls}})];
    }
    let text: String = parts.iter().filter_map(|p| p["text"].as_str()).collect();
    let mut out: Vec<Value> = (fragments(&text).into_iter())
        .map(|piece| json!({"serverContent": {"modelTurn": {"role": "model", "parts": [{"text": piece}]}}}))
        .collect();
    out.push(
        json!({"serverContent": {"turnComplete": true}, "usageMetadata": body["usageMetadata"]}),
    );
    out
}
