//! MCP's wire format, as far as recording and replay need it: JSON-RPC 2.0 messages, one
//! per line on stdio. A request is recorded as what identifies it (the server's name, the
//! method, the params without `_meta`), its response without the id, which replay
//! rewrites to the client's own.

use serde_json::{json, Map, Value};

use crate::neutral::Execution;

/// The route name of an MCP interaction in a cassette.
pub const ROUTE: &str = "mcp";

/// The JSON-RPC error code of a request with no recording (in the range JSON-RPC leaves
/// to servers); its message starts with `agentproxy_cassette_miss`.
pub const MISS_CODE: i64 = -32001;

/// Invalid JSON was received (JSON-RPC).
pub const PARSE_ERROR: i64 = -32700;

/// The message is not a valid request (JSON-RPC).
pub const INVALID_REQUEST: i64 = -32600;

/// An error of the server itself (JSON-RPC): a server gone, a mock that cannot answer.
pub const INTERNAL_ERROR: i64 = -32603;

/// A server name as stored in cassettes and URLs: letters, digits, `-` and `_`.
pub fn is_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Why `url` cannot be a streamable HTTP MCP server's URL, if it cannot.
pub fn check_server_url(url: &str) -> Result<(), String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
        return Err(format!("`{url}` must be an http:// or https:// URL"));
    }
    Ok(())
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

/// The tool a `tools/call` request calls and its arguments (`{}` when it gives none).
pub fn tool_call(msg: &Value) -> Option<(&str, Value)> {
    if msg.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let params = msg.get("params")?;
    let name = params.get("name")?.as_str()?;
    let arguments = params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    Some((name, arguments))
}

/// The execution a stored `tools/call` exchange records: `request` as [`keyed`] stores it,
/// `response` as [`stored_response`] does. A JSON-RPC error is no execution: the server
/// refused the call (an unknown tool, invalid arguments) or never answered it; a result
/// marked `isError` is a tool that ran and failed.
pub fn execution(request: &Value, response: &Value) -> Option<Execution> {
    let (tool, arguments) = tool_call(request)?;
    if response.get("error").is_some() {
        return None;
    }
    let is_error = response.pointer("/result/isError") == Some(&Value::Bool(true));
    Some(Execution {
        server: request.get("server")?.as_str()?.to_owned(),
        tool: tool.to_owned(),
        arguments,
        is_error,
    })
}

/// The tools a `tools/list` result declares, each with its `outputSchema` if it has one.
pub fn listed_tools(result: &Value) -> impl Iterator<Item = (&str, Option<&Value>)> {
    let tools = result.get("tools").and_then(Value::as_array);
    tools.into_iter().flatten().filter_map(|t| {
        let name = t.get("name")?.as_str()?;
        Some((name, t.get("outputSchema").filter(|s| s.is_object())))
    })
}

/// The keys a mock may give to be served as a whole `tools/call` result.
const RESULT_KEYS: [&str; 5] = [
    "content",
    "structuredContent",
    "isError",
    "_meta",
    "resultType",
];

/// A mocked value as the `tools/call` result a client expects. A mapping with a `content`
/// list (and only result keys) is a whole result, served as it is. Any other mapping is
/// the structured result: `structuredContent`, plus its JSON as text content, as servers
/// built with the SDKs answer. A string is text content; another value, its JSON as text.
/// With an `outputSchema`, the structured content must exist and be valid for it (clients
/// reject a result that is not), unless the result is an error. `result_type` is the
/// `resultType` the server's own results carry (required from protocol 2026-07-28 on,
/// absent before), given to the mocked result unless the mock sets one.
pub fn mock_result(
    value: &Value,
    output_schema: Option<&Value>,
    result_type: Option<&Value>,
) -> Result<Value, String> {
    let text = |t: String| json!([{ "type": "text", "text": t }]);
    let result = match value {
        Value::Object(m)
            if m.get("content").is_some_and(Value::is_array)
                && m.keys().all(|k| RESULT_KEYS.contains(&k.as_str())) =>
        {
            value.clone()
        }
        Value::Object(_) => {
            json!({ "content": text(value.to_string()), "structuredContent": value })
        }
        Value::String(s) => json!({ "content": text(s.clone()) }),
        other => json!({ "content": text(other.to_string()) }),
    };
    let mut result = result;
    if let (Some(t), Some(fields)) = (result_type, result.as_object_mut()) {
        fields.entry("resultType").or_insert_with(|| t.clone());
    }
    let Some(schema) = output_schema else {
        return Ok(result);
    };
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Ok(result);
    }
    let Some(structured) = result.get("structuredContent") else {
        return Err(
            "the tool declares an outputSchema, so its mock must be a mapping (its structured result)".into(),
        );
    };
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the tool's outputSchema is not a valid JSON Schema: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(structured)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!(
                "{}{e}",
                if at.is_empty() {
                    String::new()
                } else {
                    format!("at {at}: ")
                }
            )
        })
        .collect();
    if errors.is_empty() {
        Ok(result)
    } else {
        Err(format!(
            "the mock does not fit the tool's outputSchema: {}",
            errors.join("; ")
        ))
    }
}

/// A JSON-RPC error answering `id` (`null` when the request could not be read).
pub fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// The variable that gives a program the proxy's URL of the streamable HTTP MCP server
/// `name`: `AGENTPROXY_MCP_<NAME>_URL`, the name upper-cased with `-` as `_`.
pub fn url_var(name: &str) -> String {
    format!(
        "AGENTPROXY_MCP_{}_URL",
        name.to_ascii_uppercase().replace('-', "_")
    )
}

/// Two MCP server names whose URL variables are the same (`a-b` and `a_b`), and that
/// variable: a program could reach only one of them.
pub fn var_clash<'a>(
    names: impl IntoIterator<Item = &'a String>,
) -> Option<(String, String, String)> {
    var_clash_by(names, url_var)
}

/// [`var_clash`] for names given as the variables `var` makes of them (an A2A agent's).
pub fn var_clash_by<'a>(
    names: impl IntoIterator<Item = &'a String>,
    var: fn(&str) -> String,
) -> Option<(String, String, String)> {
    let mut seen: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    for name in names {
        let var = var(name);
        match seen.get(&var) {
            Some(other) if *other != name => return Some(((*other).to_owned(), name.clone(), var)),
            _ => {
                seen.insert(var, name);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_names_that_give_one_variable_clash() {
        let names = |v: &[&str]| v.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(var_clash(&names(&["mail", "a-b", "docs"])), None);
        assert_eq!(
            var_clash(&names(&["a-b", "mail", "a_b"])),
            Some(("a-b".into(), "a_b".into(), "AGENTPROXY_MCP_A_B_URL".into()))
        );
        assert!(var_clash(&names(&["Mail", "mail"])).is_some());
    }

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
    fn a_tools_call_names_its_tool_and_a_list_its_schemas() {
        let call = json!({"id": 1, "method": "tools/call", "params": {"name": "send_email"}});
        assert_eq!(tool_call(&call), Some(("send_email", json!({}))));
        assert_eq!(tool_call(&json!({"id": 1, "method": "tools/list"})), None);
        let list = json!({"tools": [
            {"name": "a", "inputSchema": {}},
            {"name": "b", "outputSchema": {"type": "object"}},
            {"title": "nameless"}
        ]});
        let tools: Vec<_> = listed_tools(&list).collect();
        assert_eq!(
            tools,
            vec![("a", None), ("b", Some(&json!({"type": "object"})))]
        );
    }

    #[test]
    fn a_stored_tools_call_is_an_execution() {
        let request = json!({"server": "mail", "method": "tools/call",
            "params": {"name": "send_email", "arguments": {"to": "a@b"}}});
        let done = execution(&request, &json!({"result": {"content": []}})).unwrap();
        assert_eq!(
            done,
            Execution {
                server: "mail".into(),
                tool: "send_email".into(),
                arguments: json!({"to": "a@b"}),
                is_error: false
            }
        );
        assert!(
            execution(&request, &json!({"result": {"isError": true}}))
                .unwrap()
                .is_error
        );
        // Refused by the server: nothing ran.
        assert_eq!(
            execution(&request, &json!({"error": {"code": -32602}})),
            None
        );
        let list = json!({"server": "mail", "method": "tools/list", "params": null});
        assert_eq!(execution(&list, &json!({"result": {}})), None);
    }

    #[test]
    fn a_mock_becomes_the_result_a_client_expects() {
        let schema = json!({"type": "object", "required": ["sent"],
            "properties": {"sent": {"type": "boolean"}}});
        assert_eq!(
            mock_result(&json!({"sent": true}), Some(&schema), None).unwrap(),
            json!({"content": [{"type": "text", "text": "{\"sent\":true}"}],
                   "structuredContent": {"sent": true}})
        );
        // A server on protocol 2026-07-28 marks its results; the mock's result is marked too.
        assert_eq!(
            mock_result(&json!("ok"), None, Some(&json!("complete"))).unwrap(),
            json!({"content": [{"type": "text", "text": "ok"}], "resultType": "complete"})
        );
        assert_eq!(
            mock_result(&json!("sunny"), None, None).unwrap(),
            json!({"content": [{"type": "text", "text": "sunny"}]})
        );
        assert_eq!(
            mock_result(&json!(18), None, None).unwrap()["content"][0]["text"],
            json!("18")
        );
        // A whole result is served as given, an error even against a schema.
        let whole = json!({"content": [{"type": "text", "text": "no"}], "isError": true});
        assert_eq!(mock_result(&whole, Some(&schema), None).unwrap(), whole);
        assert_eq!(
            mock_result(&json!({"sent": "yes"}), Some(&schema), None).unwrap_err(),
            "the mock does not fit the tool's outputSchema: at /sent: \"yes\" is not of type \"boolean\""
        );
        assert!(mock_result(&json!("sent"), Some(&schema), None)
            .unwrap_err()
            .contains("must be a mapping"));
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
