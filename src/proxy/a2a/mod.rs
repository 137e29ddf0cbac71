//! Remote agents over A2A, served at `/a2a/NAME/` for each `--a2a NAME=URL` (and each
//! agent a spec's `agents:` mocks): the third boundary beside the model and MCP.
//!
//! The agent's card (`GET …/.well-known/agent-card.json`) is passed on with the interface
//! URLs it advertises rewritten to this relay, so the client's calls come here too.
//! Record forwards each call to the agent (the URL comes from the session's
//! configuration, never from the request) with the program's headers, credentials
//! included, relays the answer as it comes (JSON, or an SSE stream event by event) and
//! stores it; replay answers from the cassette in the agent's place, with the client's
//! own JSON-RPC id. A delegation a mock answers reaches no agent in any mode.

mod exchange;
mod mock;
mod relay;

use std::collections::BTreeMap;
use std::sync::Arc;

use http::{Method, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::body::{json_response, ProxyBody};
use super::miss;
use super::options::{Agents, Mocks};
use super::state::Proxy;
use crate::cassette::{Body, Interaction};
use crate::dialect::a2a as wire;
use crate::dialect::mcp::{classify, Message, INVALID_REQUEST, PARSE_ERROR};
use crate::matching::{self, index::Lookup};
use exchange::{point_here, refused, stream, Call};

/// The path prefix of the agents' relays.
pub const PREFIX: &str = "/a2a/";

/// What a run asks of the A2A boundary: its agents and its `agents:` mocks.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// The agents by name, each with its base URL.
    pub agents: BTreeMap<String, String>,
    pub mocks: BTreeMap<String, crate::spec::ToolMock>,
}

impl Setup {
    /// The session's agents, the mocks answering as `mocks` (compiled from [`Setup::mocks`]).
    pub fn agents(self, mocks: Option<Mocks>) -> Agents {
        Agents {
            mocked: self.mocks.into_keys().collect(),
            mocks,
            urls: self.agents,
        }
    }
}

pub(super) async fn handle(
    proxy: &Arc<Proxy>,
    parts: http::request::Parts,
    body: Incoming,
    rest: &str,
) -> Response<ProxyBody> {
    let (agent, rest) = rest.split_once('/').unwrap_or((rest, ""));
    let agent = agent.split('?').next().unwrap_or_default();
    if !proxy.opts.a2a.knows(agent) {
        return refused(
            StatusCode::NOT_FOUND,
            format!("no agent `{agent}` in this session; give it with --a2a {agent}=URL (or `a2a:` in a spec)"),
        );
    }
    let host = (parts.headers.get(http::header::HOST))
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    let call = Call {
        agent,
        base: proxy.opts.a2a.urls.get(agent).map(String::as_str),
        rest,
        relay: format!("http://{host}{PREFIX}{agent}"),
    };
    let raw = match proxy.read_body(body, &format!("agent `{agent}`")).await {
        Ok(b) => b,
        Err(why) => return refused(StatusCode::PAYLOAD_TOO_LARGE, why),
    };
    let records = proxy.opts.replay.is_none() && proxy.opts.upstream.is_some();
    if parts.method == Method::GET && rest.split('?').next() == Some(wire::CARD_PATH) {
        return card(proxy, &call, &parts, records).await;
    }
    // Only the JSON-RPC binding is relayed: a REST or gRPC call would not be recorded.
    if parts.method != Method::POST {
        return refused(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "{} {PREFIX}{agent}/{rest}: agentproxy relays an agent's card and its JSON-RPC calls (POST) only",
                parts.method
            ),
        );
    }
    let msg = match serde_json::from_slice::<Value>(&raw) {
        Ok(v) => v,
        Err(e) => return refused_call(PARSE_ERROR, &format!("the body is not JSON: {e}")),
    };
    let Message::Request { id, method } = classify(&msg) else {
        return refused_call(INVALID_REQUEST, "not a JSON-RPC request");
    };
    if let Some(answered) = mock::answer(proxy, &call, method, &msg) {
        return answered;
    }
    match (records, call.base) {
        (true, Some(_)) => relay::forward(proxy, &call, (parts, raw), (method, &msg)).await,
        (true, None) => json_response(
            StatusCode::OK,
            &wire::error(
                id,
                wire::INTERNAL_ERROR,
                &format!("agentproxy: agent `{agent}` has no URL and no mock answers this {method}; give it with --a2a {agent}=URL"),
            ),
        ),
        (false, _) => replay(proxy, &call, method, &msg),
    }
}

/// A call refused as JSON-RPC does: an error with no id, `why` its message.
fn refused_call(code: i64, why: &str) -> Response<ProxyBody> {
    let answer = wire::error(&Value::Null, code, &format!("agentproxy: {why}"));
    json_response(StatusCode::OK, &answer)
}

/// The agent's card, its interface URLs pointing here: a mocked agent's made up, else
/// the agent's own (record) or the recorded one (replay).
async fn card(
    proxy: &Arc<Proxy>,
    call: &Call<'_>,
    parts: &http::request::Parts,
    records: bool,
) -> Response<ProxyBody> {
    let agent = call.agent;
    // A mocked agent with no URL gets a card of agentproxy's own; one with a URL, its
    // own, so what no mock answers goes where the agent takes it.
    if mock::is_mocked(proxy, agent) && call.base.is_none() {
        return json_response(StatusCode::OK, &mock::card(agent, &call.relay));
    }
    let (mut card, any_host) = if records {
        match relay::fetch_card(proxy, call, parts).await {
            Ok(card) => (card, false),
            Err(resp) => return resp,
        }
    } else {
        match replay_card(proxy, agent) {
            Ok(card) => (card, true),
            Err(report) => {
                let why = format!("agentproxy_cassette_miss: {report}");
                return json_response(StatusCode::NOT_FOUND, &json!({ "error": why }));
            }
        }
    };
    point_here(proxy, call, &mut card, any_host);
    json_response(StatusCode::OK, &card)
}

/// The recorded card of `agent`.
fn replay_card(proxy: &Proxy, agent: &str) -> Result<Value, String> {
    let keyed = json!({ "agent": agent, "method": wire::CARD });
    let it = answer_from_cassette(proxy, agent, wire::CARD, keyed)?;
    Ok((it.response.body.as_ref().and_then(Body::as_json).cloned()).unwrap_or(Value::Null))
}

/// The recording that answers a call keyed `keyed` (taken), or the miss report.
fn answer_from_cassette<'p>(
    proxy: &'p Proxy,
    agent: &str,
    method: &str,
    mut keyed: Value,
) -> Result<&'p Interaction, String> {
    let Some(rp) = &proxy.opts.replay else {
        return Err("this session has no cassette".into());
    };
    let seq = proxy.next_seq();
    proxy.opts.secrets.redact_value(&mut keyed);
    let body = Body::Json(keyed.clone().into());
    let key = matching::request_key(wire::ROUTE, method, agent, Some(&body), &proxy.opts.rules);
    match rp.take(&key) {
        Lookup::Hit(pos) => {
            let it = &rp.interactions[pos];
            proxy.served(seq, it, proxy.current_turn(), &[], None);
            Ok(it)
        }
        miss => {
            let now = matching::normalize::normalize(&keyed, &proxy.opts.rules);
            Err(miss::note(
                proxy,
                rp,
                (method, agent, wire::ROUTE),
                &now,
                miss,
            ))
        }
    }
}

/// Answer a call from the cassette, as JSON or as the recorded stream, with the client's id.
fn replay(proxy: &Proxy, call: &Call<'_>, method: &str, msg: &Value) -> Response<ProxyBody> {
    let (agent, id) = (call.agent, &msg["id"]);
    let it = match answer_from_cassette(proxy, agent, method, wire::keyed(agent, method, msg)) {
        Ok(it) => it,
        Err(report) => {
            let answer = wire::error(
                id,
                wire::MISS_CODE,
                &format!("agentproxy_cassette_miss: {report}"),
            );
            return json_response(StatusCode::OK, &answer);
        }
    };
    match &it.response.events {
        Some(events) => {
            let answers = events
                .iter()
                .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok());
            let answers: Vec<Value> = answers.map(|a| wire::answer(id, &a)).collect();
            stream(&answers, it.response.aborted.as_deref())
        }
        None => {
            let stored = it.response.body.as_ref().and_then(Body::as_json).cloned();
            let mut answer = wire::answer(id, &stored.unwrap_or(Value::Null));
            if wire::gives_card(method) && answer.get("result").is_some() {
                point_here(proxy, call, &mut answer["result"], true);
            }
            json_response(StatusCode::OK, &answer)
        }
    }
}
