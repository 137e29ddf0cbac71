//! The MCP side of a session, for `agentproxy mcp` stand-ins: which mode the session is
//! in, MCP requests answered from the cassette (replay), and exchanges a stand-in relayed
//! to the real server stored in it (record). Requests are keyed like model requests, so
//! they are served FIFO per key, counted as unused, and written in arrival order.
//!
//! A spec's tool mocks answer `tools/call` here, in every mode, so a mocked tool never
//! executes: its result is shaped for the tool's `outputSchema`, learnt from the server's
//! `tools/list` answer.
//!
//! Under `/_agentproxy/mcp/NAME`: `GET` (the mode), `POST …/call` (a client message to
//! answer, in replay), `POST …/mock` (`{"answer": …}`, `null` when the message is not a
//! mocked call and goes to the server, in record), `POST …/record` (`{request, response,
//! latency_ms}` to store).

use std::sync::Arc;

use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::body::{json_response, ProxyBody};
use super::boundary::Call;
use super::miss;
use super::options::Mocked;
use super::state::Proxy;
use crate::cassette::{Body, RecordedResponse};
use crate::dialect::mcp::{self, Message};
use crate::matching::{self, index::Lookup};
use crate::neutral::ToolCall;

/// The path prefix of the MCP endpoints.
pub const PREFIX: &str = "/_agentproxy/mcp/";

/// The mode `agentproxy doctor` answers: run the server as it is.
pub const PASSTHROUGH: &str = "passthrough";

/// Answer a stand-in's request to `rest` (the path after [`PREFIX`]).
pub(super) async fn handle(
    proxy: &Arc<Proxy>,
    method: &Method,
    rest: &str,
    body: Incoming,
) -> Response<ProxyBody> {
    let body = match Limited::new(body, proxy.opts.max_body).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            // What a stand-in could not report is missing from the recording: the run
            // must not look complete.
            let why = format!(
                "{method} {PREFIX}{rest}: an MCP message the stand-in relayed could not be stored ({e}; the limit is {} bytes, raise it with --max-body-size)",
                proxy.opts.max_body
            );
            proxy.lock().upstream_errors.push(why.clone());
            return json_response(StatusCode::PAYLOAD_TOO_LARGE, &json!({ "error": why }));
        }
    };
    let (name, op) = rest.split_once('/').unwrap_or((rest, ""));
    if !mcp::is_server_name(name) {
        return refused(format!(
            "`{name}` is not an MCP server name (letters, digits, - and _)"
        ));
    }
    match (method, op) {
        (&Method::GET, "") => json_response(StatusCode::OK, &json!({ "mode": mode(proxy) })),
        (&Method::POST, "call" | "mock" | "record" | "problem") => {
            let msg: Value = match serde_json::from_slice(&body) {
                Ok(v) => v,
                Err(e) => return refused(format!("the body is not JSON: {e}")),
            };
            match op {
                "call" => json_response(StatusCode::OK, &call(proxy, name, &msg)),
                "mock" => json_response(
                    StatusCode::OK,
                    &json!({ "answer": mocked(proxy, name, &msg) }),
                ),
                // What the stand-in saw go wrong with its server (a request never
                // answered, an answer to no request): the recording is not complete.
                "problem" => {
                    let why = msg["problem"]
                        .as_str()
                        .unwrap_or("a problem it did not name");
                    let why = format!("MCP server `{name}`: {why}");
                    tell!("agentproxy: {why}");
                    proxy.lock().upstream_errors.push(why);
                    json_response(StatusCode::OK, &json!({}))
                }
                _ => record(proxy, name, &msg),
            }
        }
        _ => refused(format!("no MCP endpoint {method} {PREFIX}{rest}")),
    }
}

fn refused(message: String) -> Response<ProxyBody> {
    json_response(StatusCode::BAD_REQUEST, &json!({ "error": message }))
}

/// `replay` when MCP requests are answered from the cassette; `record` when a stand-in
/// must run the real server and report what it relayed. An update session replays MCP:
/// it refreshes model calls, and running tools again to refresh theirs would repeat their
/// side effects.
fn mode(proxy: &Proxy) -> &'static str {
    match (&proxy.opts.replay, &proxy.opts.upstream) {
        (Some(_), _) => "replay",
        (None, Some(_)) => "record",
        (None, None) => "none",
    }
}

/// MCP requests go to the real server (a record session), not to the cassette.
pub(super) fn records(proxy: &Proxy) -> bool {
    mode(proxy) == "record"
}

/// The answer to one client message in replay: a request's recorded response with the
/// client's id, a JSON-RPC error naming the miss, or `null` for what is not answered
/// (notifications, responses to server requests).
pub(super) fn call(proxy: &Proxy, server: &str, msg: &Value) -> Value {
    let Message::Request { id, method } = mcp::classify(msg) else {
        return Value::Null;
    };
    if let Some(answer) = mocked(proxy, server, msg) {
        return answer;
    }
    let Some(rp) = &proxy.opts.replay else {
        return mcp::error(
            id,
            mcp::MISS_CODE,
            "agentproxy_cassette_miss: this session has no cassette",
        );
    };
    let seq = proxy.next_seq();
    let mut keyed = mcp::keyed(server, method, msg);
    proxy.opts.secrets.redact_value(&mut keyed);
    let body = Body::Json(keyed.clone().into());
    let key = matching::request_key(mcp::ROUTE, method, server, Some(&body), &proxy.opts.rules);
    match rp.take(&key) {
        Lookup::Hit(pos) => {
            let it = &rp.interactions[pos];
            proxy.served(seq, it, proxy.current_turn(), &[], None);
            let stored = it.response.body.as_ref().and_then(Body::as_json).cloned();
            let stored = stored.unwrap_or(Value::Null);
            learn_tools(proxy, server, method, &stored);
            mcp::answer(id, &stored)
        }
        miss => {
            let now = matching::normalize::normalize(&keyed, &proxy.opts.rules);
            let report = miss::note(proxy, rp, (method, server, mcp::ROUTE), &now, miss);
            mcp::error(
                id,
                mcp::MISS_CODE,
                &format!("agentproxy_cassette_miss: {report}"),
            )
        }
    }
}

/// The answer of a mock to a `tools/call` of a mocked tool, `None` for any other message
/// (and for a call no `when:` rule matches, which the server answers). A mock the tool's
/// `outputSchema` rejects, and a call past the end of `results:`, are answered with a
/// JSON-RPC error and fail the case: the tool does not run.
pub(super) fn mocked(proxy: &Proxy, server: &str, msg: &Value) -> Option<Value> {
    let mocks = proxy.opts.mocks.as_ref()?;
    let Message::Request { id, .. } = mcp::classify(msg) else {
        return None;
    };
    let (name, arguments) = mcp::tool_call(msg)?;
    let Call {
        nth,
        schema,
        result_type,
    } = proxy.lock().mcp.call(server, name);
    let call = ToolCall {
        id: String::new(),
        name: name.to_owned(),
        arguments,
    };
    let mocked = mocks(&call, nth);
    if mocked != Mocked::Unmocked {
        // A request the session answered, though no server saw it.
        proxy.next_seq();
        proxy.lock().mcp.mocked(name);
    }
    let value = match mocked {
        Mocked::Result(v) => v,
        Mocked::Unmocked => return None,
        // Its `results:` are used up: the case fails, and the tool does not run.
        Mocked::Exhausted => {
            return Some(mcp::error(
                id,
                mcp::INTERNAL_ERROR,
                &format!("agentproxy: tools.{name} has no mocked result left for this call"),
            ))
        }
    };
    Some(
        match mcp::mock_result(&value, schema.as_ref(), result_type.as_ref()) {
            Ok(result) => mcp::answer(id, &json!({ "result": result })),
            Err(why) => {
                let problem = format!("tools.{name} (MCP server `{server}`): {why}");
                let answer = mcp::error(id, mcp::INTERNAL_ERROR, &format!("agentproxy: {problem}"));
                proxy.lock().mcp.problem(problem);
                answer
            }
        },
    )
}

/// Remember the tools a server listed, with their output schemas, and how it marks its
/// results, for the mocks.
fn learn_tools(proxy: &Proxy, server: &str, method: &str, stored: &Value) {
    if method != "tools/list" {
        return;
    }
    let result = &stored["result"];
    let tools: Vec<_> = mcp::listed_tools(result)
        .map(|(tool, schema)| (tool.to_owned(), schema.cloned()))
        .collect();
    (proxy.lock().mcp).learn(server, tools, result.get("resultType"));
}

/// Store one exchange a stand-in relayed: `{request, response, latency_ms}`.
fn record(proxy: &Proxy, server: &str, pair: &Value) -> Response<ProxyBody> {
    let latency_ms = pair["latency_ms"].as_u64().unwrap_or(0);
    match store(
        proxy,
        server,
        &pair["request"],
        &pair["response"],
        latency_ms,
    ) {
        Ok(()) => json_response(StatusCode::OK, &json!({})),
        Err(why) => {
            // The stand-in relayed it all the same: the recording is incomplete.
            let why = format!("MCP server `{server}`: an exchange was not recorded: {why}");
            proxy.lock().upstream_errors.push(why.clone());
            refused(why)
        }
    }
}

/// Store a request to `server` with its response, as relayed to the real server.
pub(super) fn store(
    proxy: &Proxy,
    server: &str,
    request: &Value,
    response: &Value,
    latency_ms: u64,
) -> Result<(), &'static str> {
    let Message::Request { method, .. } = mcp::classify(request) else {
        return Err("`request` is not a JSON-RPC request");
    };
    if !matches!(mcp::classify(response), Message::Response { .. }) {
        return Err("`response` is not a JSON-RPC response");
    }
    let seq = proxy.next_seq();
    let keyed = mcp::keyed(server, method, request);
    let mut stored = mcp::stored_response(response);
    learn_tools(proxy, server, method, &stored);
    proxy.opts.secrets.redact_value(&mut stored);
    let response = RecordedResponse::new(
        200,
        Default::default(),
        Some(Body::Json(stored.into())),
        None,
        None,
    );
    let at = (mcp::ROUTE, method, server);
    let interaction = super::record::boundary(proxy, at, keyed, response, latency_ms);
    proxy.recorded(seq, interaction);
    Ok(())
}
