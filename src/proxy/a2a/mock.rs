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

/// The card of a mocked agent: one JSON-RPC interface, at this relay, that streams (in
/// 1.0's fields, and 0.3's for a 0.3 client).
pub(super) fn card(agent: &str, relay: &str) -> Value {
    let url = format!("{relay}/");
    json!({
        "name": agent,
        "description": format!("agent `{agent}`, mocked by agentproxy"),
        "version": "1.0.0",
        "supportedInterfaces": [{ "url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0" }],
        "url": url,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "capabilities": { "streaming": true },
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    })
}

/// The answer of the mocks to a call of `method`, if they answer it: a delegation a
/// mock matches, or a call about a task a mock made (`GetTask`, `CancelTask`,
/// `SubscribeToTask`, or their 0.3 names). Answers take the shapes of the method's
/// version of A2A.
pub(super) fn answer(
    proxy: &Proxy,
    call: &Call<'_>,
    method: &str,
    msg: &Value,
) -> Option<Response<ProxyBody>> {
    if !is_mocked(proxy, call.agent) {
        return None;
    }
    let reply = Reply {
        id: &msg["id"],
        v03: wire::is_v03(method),
        streams: wire::streams(method),
        bare: !wire::sends(method),
    };
    let (task, cut) = match wire::sends(method) {
        false => (about_task(proxy, method, msg)?, false),
        true => {
            let (stored, cut) = delegated(proxy, call.agent, msg)?;
            // A delegation the session answered, though no agent saw it: a step of the
            // trajectory, marked as a mock's answer as a mocked tool result is.
            let seq = proxy.next_seq();
            let keyed = wire::keyed(call.agent, method, msg);
            let logged = match cut {
                true => json!({ "error": { "code": wire::INTERNAL_ERROR, "message": CUT } }),
                false => stored.clone(),
            };
            let it = interaction(proxy, call.agent, method, keyed, Answer::Json(logged), 0);
            proxy.served(
                seq,
                &it,
                proxy.current_turn(),
                &[call.agent.to_owned()],
                None,
            );
            (stored, cut)
        }
    };
    Some(reply.of(&task, cut))
}

/// How a call is answered: its id, its version of A2A, whether it asked for a stream,
/// whether a task it gets is bare (a look-up) rather than wrapped (1.0's `SendMessage`).
struct Reply<'a> {
    id: &'a Value,
    v03: bool,
    streams: bool,
    bare: bool,
}

impl Reply<'_> {
    /// The response that gives `stored` (`{result: {task}}` or `{error}`); `cut`: the
    /// connection breaks before the task ends.
    fn of(&self, stored: &Value, cut: bool) -> Response<ProxyBody> {
        let shaped = |result: &Value| match self.v03 {
            true => json!({ "result": wire::to_v03(result) }),
            false => json!({ "result": result }),
        };
        let Some(task) = stored.pointer("/result/task") else {
            return json_response(StatusCode::OK, &wire::answer(self.id, stored));
        };
        match (self.streams, cut) {
            (true, _) => {
                let mut events = wire::task_events(task);
                if cut {
                    events.pop();
                }
                let answers: Vec<Value> = (events.iter())
                    .map(|e| wire::answer(self.id, &shaped(&e["result"])))
                    .collect();
                stream(&answers, cut.then_some(CUT))
            }
            (false, true) => disconnect(),
            // 1.0's SendMessage wraps the task; a 1.0 look-up gives it bare, as 0.3 does all.
            (false, false) if self.bare && !self.v03 => json_response(
                StatusCode::OK,
                &wire::answer(self.id, &json!({ "result": task })),
            ),
            (false, false) => json_response(
                StatusCode::OK,
                &wire::answer(self.id, &shaped(&stored["result"])),
            ),
        }
    }
}

/// A call about a task a mock made: the task as it is now (cancelled by a cancel).
fn about_task(proxy: &Proxy, method: &str, msg: &Value) -> Option<Value> {
    let task_id = msg.pointer("/params/id").and_then(Value::as_str)?;
    let mut st = proxy.lock();
    let task = st.a2a.tasks.get_mut(task_id)?;
    if matches!(method, "CancelTask" | "tasks/cancel") {
        task["status"] = json!({ "state": "TASK_STATE_CANCELED" });
    }
    Some(json!({ "result": { "task": task.clone() } }))
}

/// The mocks' answer to a delegation to `agent` (`{result: {task}}` or `{error}`) and
/// whether it is cut; `None` when no mock answers it.
fn delegated(proxy: &Proxy, agent: &str, msg: &Value) -> Option<(Value, bool)> {
    let mocks = proxy.opts.a2a.mocks.as_ref()?;
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
    Some((stored, cut))
}
