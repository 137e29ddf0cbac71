//! A spec's `agents:` mocks: a mocked agent's card made up here, and a delegation a mock
//! answers with a task (or a JSON-RPC error), in every mode, the agent never reached. A
//! mocked task is kept, so `GetTask` finds it.

use http::{Response, StatusCode};
use serde_json::{json, Value};

use super::exchange::{interaction, stream, Answer, Call};
use crate::dialect::a2a as wire;
use crate::neutral::ToolCall;
use crate::proxy::body::{disconnect, json_response, ProxyBody};
use crate::proxy::options::Mocked;
use crate::proxy::state::Proxy;

/// Why a mocked stream broke off (`cut: true`).
const CUT: &str = "agentproxy: the agent's stream was cut (a mock's `cut: true`)";

pub(super) fn is_mocked(proxy: &Proxy, agent: &str) -> bool {
    proxy.opts.a2a.mocked.iter().any(|m| m == agent)
}

/// The card of a mocked agent: one JSON-RPC interface, at this relay, that streams.
pub(super) fn card(agent: &str, relay: &str) -> Value {
    json!({
        "name": agent,
        "description": format!("agent `{agent}`, mocked by agentproxy"),
        "version": "1.0.0",
        "supportedInterfaces": [{ "url": format!("{relay}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0" }],
        "capabilities": { "streaming": true },
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    })
}

/// The answer of the mocks to a call of `method`, if they answer it: a delegation a
/// mock matches, or a look-up of a task a mock made.
pub(super) fn answer(
    proxy: &Proxy,
    call: &Call<'_>,
    method: &str,
    msg: &Value,
) -> Option<Response<ProxyBody>> {
    if !is_mocked(proxy, call.agent) {
        return None;
    }
    let id = &msg["id"];
    if !wire::sends(method) {
        let task_id = msg.pointer("/params/id").and_then(Value::as_str)?;
        let task = proxy.lock().a2a.tasks.get(task_id).cloned()?;
        return Some(json_response(
            StatusCode::OK,
            &wire::answer(id, &json!({ "result": task })),
        ));
    }
    let mocks = proxy.opts.a2a.mocks.as_ref()?;
    let agent = call.agent;
    let text = wire::sent_text(&msg["params"]);
    let nth = {
        let mut st = proxy.lock();
        let n = st.a2a.calls.entry(agent.to_owned()).or_default();
        *n += 1;
        *n - 1
    };
    let asked = ToolCall {
        id: String::new(),
        name: agent.to_owned(),
        arguments: json!({ "message": text }),
    };
    let mocked = mocks(&asked, nth);
    // `cut: true`: the connection breaks before the task ends.
    let cut = matches!(&mocked, Mocked::Result(v) if v.get("cut") == Some(&Value::Bool(true)));
    let stored = match mocked {
        Mocked::Unmocked => return None,
        Mocked::Exhausted => json!({ "error": {
            "code": wire::INTERNAL_ERROR,
            "message": format!("agentproxy: agents.{agent} has no mocked result left for this call"),
        } }),
        Mocked::Result(v) => {
            let task_id = format!("agentproxy-{agent}-task-{}", nth + 1);
            let context = (msg
                .pointer("/params/message/contextId")
                .and_then(Value::as_str))
            .map_or_else(|| format!("agentproxy-{agent}-context"), str::to_owned);
            match wire::mocked_task(&v, (&task_id, &context)) {
                Ok(task) => {
                    proxy.lock().a2a.tasks.insert(task_id, task.clone());
                    json!({ "result": { "task": task } })
                }
                Err(e) => json!({ "error": e }),
            }
        }
    };
    // A delegation the session answered, though no agent saw it: a step of the trajectory.
    let seq = proxy.next_seq();
    let keyed = wire::keyed(agent, method, msg);
    let it = interaction(proxy, agent, method, keyed, Answer::Json(stored.clone()), 0);
    // Marked as a mock's answer, as a mocked tool result is.
    proxy.served(seq, &it, proxy.current_turn(), &[agent.to_owned()], None);
    let streamed = wire::streams(method) && stored.get("result").is_some();
    Some(match (streamed, cut) {
        (true, _) => {
            let mut events = wire::task_events(&stored["result"]["task"]);
            if cut {
                events.pop();
            }
            let answers: Vec<Value> = events.iter().map(|a| wire::answer(id, a)).collect();
            stream(&answers, cut.then_some(CUT))
        }
        (false, true) => disconnect(),
        (false, false) => json_response(StatusCode::OK, &wire::answer(id, &stored)),
    })
}
