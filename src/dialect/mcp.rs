//! MCP's wire format, as far as recording and replay need it: JSON-RPC 2.0 messages, one
//! per line on stdio. A request is recorded as what identifies it (the server's name, the
//! method, the params without `_meta`), its response without the id, which replay
//! rewrites to the client's own.

use serde_json::{json, Map, Value};

/// The route name of an MCP interaction in a cassette.
pub const ROUTE: &str = "mcp";

/// The JSON-RPC error code of a request with no recording (in the range JSON-RPC leaves
/// to servers); its message starts with `agentproxy_cassette_miss`.
pub const MISS_CODE: i64 = -32001;

/// Invalid JSON was received (JSON-RPC).
pub const PARSE_ERROR: i64 = -32700;

/// A server name as stored in cassettes and URLs: letters, digits, `-` and `_`.
pub fn is_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// What one line from a client or server is.
#[derive(Debug, PartialEq)]
pub enum Message<'a> {
    /// A method call that expects an answer: its id and method.
    Request { id: &'a Value, method: &'a str },
    /// A method call without an id: never answered.
    Notification { method: &'a str },
    /// An answer (`result` or `error`) to the request with this id.
    Response { id: &'a Value },
    /// Not a JSON-RPC message this module knows (a batch, say).
    Other,
}

/// Classify a parsed message.
pub fn classify(msg: &Value) -> Message<'_> {
    let method = msg.get("method").and_then(Value::as_str);
    match (msg.get("id").filter(|id| !id.is_null()), method) {
        (Some(id), Some(method)) => Message::Request { id, method },
        (None, Some(method)) => Message::Notification { method },
        (Some(id), None) if msg.get("result").is_some() || msg.get("error").is_some() => {
            Message::Response { id }
        }
        _ => Message::Other,
    }
}

/// What identifies a request to `server`, as stored and keyed: `{server, method, params}`
/// with `_meta` left out of the params (it carries per-request values: progress tokens,
/// trace context, the protocol version).
pub fn keyed(server: &str, method: &str, msg: &Value) -> Value {
    let mut params = msg.get("params").cloned().unwrap_or(Value::Null);
    if let Some(p) = params.as_object_mut() {
        p.remove("_meta");
    }
    json!({ "server": server, "method": method, "params": params })
}

/// A response as stored: `result` or `error`, without `jsonrpc` and `id`.
pub fn stored_response(msg: &Value) -> Value {
    let mut out = Map::new();
    for key in ["result", "error"] {
        if let Some(v) = msg.get(key) {
            out.insert(key.to_owned(), v.clone());
        }
    }
    Value::Object(out)
}

/// A stored response, answering the client's request `id`.
pub fn answer(id: &Value, stored: &Value) -> Value {
    let mut out = Map::new();
    out.insert("jsonrpc".into(), json!("2.0"));
    out.insert("id".into(), id.clone());
    if let Some(fields) = stored.as_object() {
        for (k, v) in fields {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Object(out)
}

/// A JSON-RPC error answering `id` (`null` when the request could not be read).
pub fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_told_apart_by_id_and_method() {
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {}});
        assert_eq!(
            classify(&call),
            Message::Request {
                id: &json!(7),
                method: "tools/call"
            }
        );
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(
            classify(&note),
            Message::Notification {
                method: "notifications/initialized"
            }
        );
        let reply = json!({"jsonrpc": "2.0", "id": "a", "result": {}});
        assert_eq!(classify(&reply), Message::Response { id: &json!("a") });
        assert_eq!(classify(&json!([call])), Message::Other);
        assert_eq!(classify(&json!({"id": 1})), Message::Other);
    }

    #[test]
    fn a_request_is_keyed_without_its_id_and_meta() {
        let a = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "send_email", "arguments": {"to": "a@b"}, "_meta": {"progressToken": 1}}});
        let b = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
            "params": {"_meta": {"progressToken": 2}, "arguments": {"to": "a@b"}, "name": "send_email"}});
        assert_eq!(
            keyed("mail", "tools/call", &a),
            keyed("mail", "tools/call", &b)
        );
        assert_eq!(
            keyed("mail", "tools/call", &a),
            json!({"server": "mail", "method": "tools/call",
                   "params": {"name": "send_email", "arguments": {"to": "a@b"}}})
        );
        assert_eq!(
            keyed("s", "ping", &json!({"id": 1, "method": "ping"}))["params"],
            Value::Null
        );
    }

    #[test]
    fn a_stored_response_answers_the_clients_own_id() {
        let recorded = json!({"jsonrpc": "2.0", "id": 3, "result": {"content": []}});
        let stored = stored_response(&recorded);
        assert_eq!(stored, json!({"result": {"content": []}}));
        assert_eq!(
            answer(&json!("client-9"), &stored),
            json!({"jsonrpc": "2.0", "id": "client-9", "result": {"content": []}})
        );
        assert_eq!(
            error(&Value::Null, PARSE_ERROR, "bad")["error"]["code"],
            json!(-32700)
        );
    }
}
