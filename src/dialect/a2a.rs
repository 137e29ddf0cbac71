//! A2A's wire (Agent2Agent, JSON-RPC 2.0 over HTTP, SSE for streams), as far as
//! recording, replay, mocks and trajectories need it: the agent card and the interface
//! URLs it advertises, the methods (`SendMessage`, `SendStreamingMessage`, `GetTask`, …
//! of A2A 1.0, and `message/send`, `message/stream`, `tasks/get`, … of 0.3), what of a
//! request identifies it, and what a delegation asked and was answered.
//!
//! A call is stored as `{agent, method, params}` without the JSON-RPC id and the
//! message's `messageId` (the client makes both up on every run); its answer as
//! `{result}` or `{error}`, which replay gives the client's own id. A stream is stored
//! as its events (each such an answer) with, as the body, the task they build up.

use serde_json::{json, Map, Value};

/// The route name of an A2A interaction in a cassette.
pub const ROUTE: &str = "a2a";

/// Where an agent's card is, under its base URL.
pub const CARD_PATH: &str = ".well-known/agent-card.json";

/// The method a card fetch is stored under (no JSON-RPC method is named so).
pub const CARD: &str = "agent-card";

/// The JSON-RPC error code of a call with no recording; its message starts with
/// `agentproxy_cassette_miss`.
pub const MISS_CODE: i64 = -32001;

/// An error of the agent itself (JSON-RPC): an agent gone, a mock that cannot answer.
pub const INTERNAL_ERROR: i64 = -32603;

/// The terminal state a mocked or assembled task ends in when none is given.
pub const COMPLETED: &str = "TASK_STATE_COMPLETED";

/// An agent name as stored in cassettes and URLs: letters, digits, `-` and `_`.
pub fn is_agent_name(name: &str) -> bool {
    super::mcp::is_server_name(name)
}

/// The variable that gives a program the proxy's URL of the agent `name`:
/// `AGENTPROXY_A2A_<NAME>_URL`, the name upper-cased with `-` as `_`.
pub fn url_var(name: &str) -> String {
    format!(
        "AGENTPROXY_A2A_{}_URL",
        name.to_ascii_uppercase().replace('-', "_")
    )
}

/// Whether `method` sends a message to the agent (a delegation).
pub fn sends(method: &str) -> bool {
    matches!(
        method,
        "SendMessage" | "SendStreamingMessage" | "message/send" | "message/stream"
    )
}

/// Whether the agent answers `method` with an event stream.
pub fn streams(method: &str) -> bool {
    matches!(
        method,
        "SendStreamingMessage" | "SubscribeToTask" | "message/stream" | "tasks/resubscribe"
    )
}

/// Whether `method` answers with a card (the extended card an authenticated client may
/// ask for), whose interface URLs are rewritten as the public card's are.
pub fn gives_card(method: &str) -> bool {
    matches!(
        method,
        "GetExtendedAgentCard" | "agent/getAuthenticatedExtendedCard"
    )
}

/// What identifies a call to `agent`, as stored and keyed: `{agent, method, params}`
/// without the message's `messageId`, which clients make up on every run.
pub fn keyed(agent: &str, method: &str, msg: &Value) -> Value {
    let mut params = msg.get("params").cloned().unwrap_or(Value::Null);
    if let Some(m) = params.get_mut("message").and_then(Value::as_object_mut) {
        m.remove("messageId");
    }
    json!({ "agent": agent, "method": method, "params": params })
}

/// An answer as stored: `result` or `error`, without `jsonrpc` and `id`.
pub fn stored(msg: &Value) -> Value {
    super::mcp::stored_response(msg)
}

/// A stored answer, answering the client's call `id`.
pub fn answer(id: &Value, stored: &Value) -> Value {
    super::mcp::answer(id, stored)
}

/// A JSON-RPC error answering `id`.
pub fn error(id: &Value, code: i64, message: &str) -> Value {
    super::mcp::error(id, code, message)
}

/// The text of a message's parts (1.0 `{text}` parts, 0.3 `{kind: "text", text}`
/// ones), joined by newlines.
pub fn text(message: &Value) -> String {
    let parts = message.get("parts").and_then(Value::as_array);
    let texts: Vec<&str> = (parts.into_iter().flatten())
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    texts.join("\n")
}

/// The text a call sends: its message's (`""` when it has none).
pub fn sent_text(params: &Value) -> String {
    params.get("message").map(text).unwrap_or_default()
}

/// The task or message an answer carries: 1.0 wraps it (`{task}`, `{message}`,
/// `{statusUpdate}`, `{artifactUpdate}`); 0.3 gives it bare with a `kind`.
fn payload(result: &Value) -> (&str, &Value) {
    for key in ["task", "message", "statusUpdate", "artifactUpdate"] {
        if let Some(v) = result.get(key) {
            return (key, v);
        }
    }
    match result.get("kind").and_then(Value::as_str) {
        Some("status-update") => ("statusUpdate", result),
        Some("artifact-update") => ("artifactUpdate", result),
        Some("message") => ("message", result),
        _ => ("task", result),
    }
}

/// The task a stream's answers (`result`s, in order) build up: the first task, its
/// status as the last update set it, and its artifacts, appended to as updates say. A
/// stream that answers with a message is that message.
pub fn assemble<'a>(results: impl IntoIterator<Item = &'a Value>) -> Value {
    let mut task = Map::new();
    let mut artifacts: Vec<Value> = Vec::new();
    for result in results {
        match payload(result) {
            ("message", m) => return json!({ "message": m }),
            ("statusUpdate", u) => {
                task.insert("status".into(), u["status"].clone());
                for key in ["taskId", "contextId"] {
                    if let Some(v) = u.get(key) {
                        let to = if key == "taskId" { "id" } else { key };
                        task.entry(to).or_insert_with(|| v.clone());
                    }
                }
            }
            ("artifactUpdate", u) => {
                let artifact = &u["artifact"];
                let same = (artifacts.iter_mut()).find(|a| {
                    a.get("artifactId").is_some() && a["artifactId"] == artifact["artifactId"]
                });
                match same {
                    Some(a) if u["append"] == json!(true) => {
                        let more = artifact["parts"].as_array().cloned().unwrap_or_default();
                        if let Some(parts) = a["parts"].as_array_mut() {
                            parts.extend(more);
                        }
                    }
                    Some(a) => *a = artifact.clone(),
                    None => artifacts.push(artifact.clone()),
                }
            }
            (_, t) => {
                if let Some(fields) = t.as_object() {
                    for (k, v) in fields {
                        if k == "artifacts" {
                            artifacts = v.as_array().cloned().unwrap_or_default();
                        } else {
                            task.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
        }
    }
    if !artifacts.is_empty() {
        task.insert("artifacts".into(), Value::Array(artifacts));
    }
    json!({ "task": task })
}

/// What an agent answered a call, read from its stored answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The answer's text: a message's, else the task's artifacts', else its status
    /// message's.
    pub text: String,
    /// The task's state (`TASK_STATE_COMPLETED`), when a task answered.
    pub state: Option<String>,
    /// The JSON-RPC error's message, when the agent refused the call.
    pub error: Option<String>,
}

/// The reply a stored answer (`{result}` or `{error}`) holds.
pub fn reply(stored: &Value) -> Reply {
    if let Some(e) = stored.get("error") {
        let message = e
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("an error");
        return Reply {
            text: String::new(),
            state: None,
            error: Some(format!("{} {message}", e["code"])),
        };
    }
    let (kind, v) = payload(&stored["result"]);
    if kind == "message" {
        return Reply {
            text: text(v),
            state: None,
            error: None,
        };
    }
    let artifacts = v.get("artifacts").and_then(Value::as_array);
    let texts: Vec<String> = (artifacts.into_iter().flatten())
        .map(text)
        .filter(|t| !t.is_empty())
        .collect();
    let text = match texts.is_empty() {
        true => v
            .pointer("/status/message")
            .map(self::text)
            .unwrap_or_default(),
        false => texts.join("\n"),
    };
    Reply {
        text,
        state: v
            .pointer("/status/state")
            .and_then(Value::as_str)
            .map(str::to_owned),
        error: None,
    }
}

/// One delegation: a message sent to an agent, and what it answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Delegation {
    pub agent: String,
    pub message: String,
    pub reply: Reply,
}

impl Delegation {
    /// The delegation a stored call and its stored answer are, if the call sent a message.
    pub fn of(request: &Value, response: &Value) -> Option<Delegation> {
        let method = request.get("method")?.as_str()?;
        if !sends(method) {
            return None;
        }
        Some(Delegation {
            agent: request.get("agent")?.as_str()?.to_owned(),
            message: sent_text(&request["params"]),
            reply: reply(response),
        })
    }

    /// The delegation as the call of a tool named after the agent, with the message as
    /// its one argument: what `calls:` and `never:` match and reports list.
    pub fn as_call(&self) -> (String, Value) {
        (self.agent.clone(), json!({ "message": self.message }))
    }

    /// What the agent answered, as a tool result: its text, or its state or error when it
    /// said nothing.
    pub fn result(&self) -> Value {
        let r = &self.reply;
        match (&r.error, r.state.as_deref()) {
            (Some(e), _) => json!(format!("error {e}")),
            (None, Some(state)) if state_name(state) != COMPLETED && !r.text.is_empty() => {
                json!(format!("{} ({state})", r.text))
            }
            (None, Some(state)) if r.text.is_empty() => json!(state),
            _ => json!(r.text),
        }
    }
}

/// Rewrite the interface URLs an agent card advertises (`supportedInterfaces[].url`,
/// 0.3's `url` and `additionalInterfaces[].url`) with `to`, those of the JSON-RPC binding
/// only (the one agentproxy relays; an interface of another binding is left as it is);
/// the URLs `to` cannot map (`None`) are left and returned.
pub fn rewrite_card(card: &mut Value, to: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let mut left = Vec::new();
    let mut visit = |slot: &mut Value| {
        if let Some(url) = slot.as_str() {
            match to(url) {
                Some(new) => *slot = Value::String(new),
                None => left.push(url.to_owned()),
            }
        }
    };
    // The binding an interface names (1.0 `protocolBinding`, 0.3 `transport` and
    // `preferredTransport`); none is JSON-RPC.
    let json_rpc = |binding: Option<&Value>| binding.is_none_or(|b| b == "JSONRPC");
    if json_rpc(card.get("preferredTransport")) {
        if let Some(slot) = card.get_mut("url") {
            visit(slot);
        }
    }
    for (list, binding) in [
        ("supportedInterfaces", "protocolBinding"),
        ("additionalInterfaces", "transport"),
    ] {
        let items = card.get_mut(list).and_then(Value::as_array_mut);
        for item in items
            .into_iter()
            .flatten()
            .filter(|i| json_rpc(i.get(binding)))
        {
            if let Some(slot) = item.get_mut("url") {
                visit(slot);
            }
        }
    }
    left
}

/// The part of `url` under the agent's `base` URL (`""` for the base itself, `"rpc"`
/// for `{base}/rpc`), when it is under it. `any_host`: compare the paths only (a replay,
/// whose recorded agent may have listened elsewhere).
pub fn under_base(url: &str, base: &str, any_host: bool) -> Option<String> {
    let split = |u: &str| -> Option<(String, String)> {
        let uri: http::Uri = u.parse().ok()?;
        let origin = format!("{}://{}", uri.scheme_str()?, uri.authority()?);
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        Some((origin, path))
    };
    let (url_origin, url_path) = split(url)?;
    let (base_origin, base_path) = split(base)?;
    if !any_host && url_origin != base_origin {
        return None;
    }
    let base_path = base_path.trim_end_matches('/');
    let rest = url_path.strip_prefix(base_path)?;
    match rest {
        "" => Some(String::new()),
        r if r.starts_with('/') || r.starts_with('?') => Some(r.trim_start_matches('/').to_owned()),
        _ => None,
    }
}

/// The keys of a mock's result that give the reply itself; a mapping with none of them is
/// the reply's JSON text.
pub const MOCK_KEYS: [&str; 5] = ["reply", "state", "artifacts", "error", "cut"];

/// The task states a mock may give (as 0.3 names them; 1.0's `TASK_STATE_…` names too).
const STATES: [&str; 8] = [
    "submitted",
    "working",
    "completed",
    "failed",
    "canceled",
    "input-required",
    "rejected",
    "auth-required",
];

/// Why a mock's result cannot answer a delegation, if it cannot: a `state` A2A does not
/// have, or a mapping that mixes the reply's keys with others.
pub fn check_mock(mock: &Value) -> Result<(), String> {
    let Some(m) = mock.as_object() else {
        return Ok(());
    };
    if !m.keys().any(|k| MOCK_KEYS.contains(&k.as_str())) {
        return Ok(());
    }
    if let Some(k) = m.keys().find(|k| !MOCK_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "`{k}` is not a key of an agent's reply (expected one of: {})",
            MOCK_KEYS.join(", ")
        ));
    }
    match m.get("state") {
        Some(Value::String(s)) if STATES.contains(&state_word(s).as_str()) => Ok(()),
        Some(s) => Err(format!(
            "`state: {s}` is not a task state (expected one of: {})",
            STATES.join(", ")
        )),
        None => Ok(()),
    }
}

/// The task a mock's result answers a delegation with: a string is the agent's reply
/// (a completed task with one text artifact); a mapping may give `reply`, `state` (a
/// task state: `failed`, `input-required`, or A2A's `TASK_STATE_…` name), `artifacts`
/// (A2A artifacts as they are) and `cut` (the relay breaks the connection before the
/// task ends); any other value is the reply's JSON text. `Err` for a mapping with an
/// `error`: the JSON-RPC error (`{code, message}`) to answer with instead.
pub fn mocked_task(mock: &Value, ids: (&str, &str)) -> Result<Value, Value> {
    if let Some(e) = mock.get("error") {
        let e = match e {
            Value::String(m) => json!({ "code": INTERNAL_ERROR, "message": m }),
            other => other.clone(),
        };
        return Err(e);
    }
    let (reply, state, artifacts) = match mock {
        Value::String(s) => (Some(s.clone()), None, None),
        Value::Object(m) if m.keys().any(|k| MOCK_KEYS.contains(&k.as_str())) => (
            m.get("reply")
                .map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_owned)),
            m.get("state").and_then(Value::as_str).map(state_name),
            m.get("artifacts").cloned(),
        ),
        other => (Some(other.to_string()), None, None),
    };
    let artifacts = artifacts.unwrap_or_else(|| match &reply {
        Some(text) => json!([{ "artifactId": format!("{}-artifact", ids.0), "name": "reply", "parts": [{ "text": text }] }]),
        None => json!([]),
    });
    Ok(json!({
        "id": ids.0,
        "contextId": ids.1,
        "status": { "state": state.unwrap_or_else(|| COMPLETED.to_owned()) },
        "artifacts": artifacts,
    }))
}

/// Whether `method` is one of A2A 0.3's (`message/send`): its answers take 0.3's shapes.
pub fn is_v03(method: &str) -> bool {
    method.contains('/')
}

/// A 1.0 answer's result (`{task}`, `{message}`, `{statusUpdate}`, `{artifactUpdate}`)
/// in 0.3's shape: the payload bare with its `kind`, states as 0.3 names them
/// (`completed`), text parts with `kind: "text"`, and `final` on a status update that
/// ends the task.
pub fn to_v03(result: &Value) -> Value {
    let (kind, v) = payload(result);
    let mut v = v.clone();
    let kind = match kind {
        "statusUpdate" => "status-update",
        "artifactUpdate" => "artifact-update",
        other => other,
    };
    fn visit(v: &mut Value) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(s)) = m.get_mut("state") {
                    *s = state_word(s);
                }
                if m.contains_key("text") && !m.contains_key("kind") {
                    m.insert("kind".into(), json!("text"));
                }
                m.values_mut().for_each(visit);
            }
            Value::Array(items) => items.iter_mut().for_each(visit),
            _ => {}
        }
    }
    visit(&mut v);
    if let Some(m) = v.as_object_mut() {
        m.insert("kind".into(), json!(kind));
        if kind == "status-update" {
            let state = m
                .get("status")
                .and_then(|s| s["state"].as_str())
                .unwrap_or_default();
            let done = !matches!(state, "submitted" | "working");
            m.insert("final".into(), json!(done));
        }
    }
    v
}

/// A task state as A2A 1.0 names it: `failed` → `TASK_STATE_FAILED`.
pub fn state_name(state: &str) -> String {
    if state.starts_with("TASK_STATE_") {
        return state.to_owned();
    }
    format!(
        "TASK_STATE_{}",
        state.to_ascii_uppercase().replace('-', "_")
    )
}

/// A task state as a word: `TASK_STATE_INPUT_REQUIRED` → `input-required` (A2A 0.3's
/// names, which are also what a spec's mock writes).
pub fn state_word(state: &str) -> String {
    let word = state.strip_prefix("TASK_STATE_").unwrap_or(state);
    word.to_ascii_lowercase().replace('_', "-")
}

/// The stream answers that deliver `task` as a server would: the task submitted, each
/// artifact, then its final status.
pub fn task_events(task: &Value) -> Vec<Value> {
    let mut submitted = task.clone();
    if let Some(t) = submitted.as_object_mut() {
        t.remove("artifacts");
        t.insert("status".into(), json!({ "state": "TASK_STATE_SUBMITTED" }));
    }
    let mut out = vec![json!({ "result": { "task": submitted } })];
    let ids = (task["id"].clone(), task["contextId"].clone());
    for artifact in task["artifacts"].as_array().into_iter().flatten() {
        out.push(json!({ "result": { "artifactUpdate": {
            "taskId": ids.0, "contextId": ids.1, "artifact": artifact, "lastChunk": true
        } } }));
    }
    out.push(json!({ "result": { "statusUpdate": {
        "taskId": ids.0, "contextId": ids.1, "status": task["status"]
    } } }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_keyed_without_its_id_and_message_id() {
        let a = json!({"jsonrpc": "2.0", "id": "r1", "method": "SendMessage", "params": {
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}, "configuration": {}}});
        let mut b = a.clone();
        b["id"] = json!("r2");
        b["params"]["message"]["messageId"] = json!("m2");
        assert_eq!(
            keyed("fx", "SendMessage", &a),
            keyed("fx", "SendMessage", &b)
        );
        assert_eq!(
            keyed("fx", "SendMessage", &a),
            json!({"agent": "fx", "method": "SendMessage", "params": {
                "message": {"role": "ROLE_USER", "parts": [{"text": "hi"}]}, "configuration": {}}})
        );
    }

    #[test]
    fn a_stream_assembles_into_its_final_task() {
        let events = [
            json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}}),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}),
            json!({"artifactUpdate": {"taskId": "t", "artifact": {"artifactId": "a", "parts": [{"text": "10 USD"}]}}}),
            json!({"artifactUpdate": {"taskId": "t", "append": true, "artifact": {"artifactId": "a", "parts": [{"text": "is 9.20 EUR"}]}}}),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        ];
        let task = assemble(&events);
        assert_eq!(task["task"]["id"], "t");
        assert_eq!(task["task"]["status"]["state"], COMPLETED);
        let r = reply(&json!({ "result": task }));
        assert_eq!(r.text, "10 USD\nis 9.20 EUR");
        assert_eq!(r.state.as_deref(), Some(COMPLETED));
        // A 0.3 stream: bare payloads with a `kind`.
        let old = [
            json!({"kind": "task", "id": "t", "status": {"state": "submitted"}}),
            json!({"kind": "status-update", "taskId": "t", "status": {"state": "completed"}, "final": true}),
        ];
        assert_eq!(assemble(&old)["task"]["status"]["state"], "completed");
    }

    #[test]
    fn replies_read_messages_tasks_and_errors() {
        let msg =
            json!({"result": {"message": {"role": "ROLE_AGENT", "parts": [{"text": "hello"}]}}});
        assert_eq!(reply(&msg).text, "hello");
        let err = json!({"error": {"code": -32001, "message": "Task not found"}});
        assert_eq!(reply(&err).error.as_deref(), Some("-32001 Task not found"));
        let failed = json!({"result": {"task": {"id": "t", "status": {"state": "TASK_STATE_FAILED",
            "message": {"parts": [{"text": "no rates today"}]}}}}});
        let d = Delegation::of(
            &json!({"agent": "fx", "method": "SendMessage", "params": {"message": {"parts": [{"text": "convert"}]}}}),
            &failed,
        )
        .unwrap();
        assert_eq!(
            d.as_call(),
            ("fx".to_owned(), json!({"message": "convert"}))
        );
        assert_eq!(d.result(), json!("no rates today (TASK_STATE_FAILED)"));
        assert!(Delegation::of(
            &json!({"agent": "fx", "method": "GetTask", "params": {}}),
            &failed
        )
        .is_none());
    }

    #[test]
    fn card_urls_are_rewritten_and_foreign_ones_left() {
        let mut card = json!({"name": "fx", "url": "http://a.test/", "supportedInterfaces": [
            {"url": "http://a.test/rpc", "protocolBinding": "JSONRPC"},
            {"url": "http://elsewhere.test/", "protocolBinding": "JSONRPC"},
            {"url": "http://a.test/grpc", "protocolBinding": "GRPC"}]});
        let left = rewrite_card(&mut card, |u| {
            under_base(u, "http://a.test", false)
                .map(|rest| format!("http://proxy.test/a2a/fx/{rest}"))
        });
        assert_eq!(card["url"], "http://proxy.test/a2a/fx/");
        assert_eq!(
            card["supportedInterfaces"][0]["url"],
            "http://proxy.test/a2a/fx/rpc"
        );
        assert_eq!(left, vec!["http://elsewhere.test/".to_owned()]);
        assert_eq!(
            card["supportedInterfaces"][2]["url"], "http://a.test/grpc",
            "another binding is left"
        );
        assert_eq!(
            under_base("http://a.test/agents/fx/", "http://a.test/agents/fx", false).as_deref(),
            Some("")
        );
        assert_eq!(
            under_base("http://a.test/agents/fxy", "http://a.test/agents/fx", false),
            None
        );
        assert_eq!(
            under_base("http://b.test:9/rpc", "http://a.test/", true).as_deref(),
            Some("rpc")
        );
    }

    #[test]
    fn mocks_answer_with_a_task_or_an_error() {
        let t = mocked_task(&json!("9.20 EUR"), ("t1", "c1")).unwrap();
        assert_eq!(reply(&json!({"result": {"task": t}})).text, "9.20 EUR");
        let t = mocked_task(&json!({"reply": "no", "state": "failed"}), ("t1", "c1")).unwrap();
        assert_eq!(t["status"]["state"], "TASK_STATE_FAILED");
        assert_eq!(state_word("TASK_STATE_INPUT_REQUIRED"), "input-required");
        assert_eq!(state_name("input-required"), "TASK_STATE_INPUT_REQUIRED");
        let events = task_events(&t);
        assert_eq!(events.len(), 3);
        let results: Vec<Value> = events.iter().map(|e| e["result"].clone()).collect();
        assert_eq!(
            assemble(&results)["task"]["status"]["state"],
            "TASK_STATE_FAILED"
        );
        let e = mocked_task(
            &json!({"error": {"code": -32000, "message": "busy"}}),
            ("t", "c"),
        )
        .unwrap_err();
        assert_eq!(e["code"], -32000);
    }

    #[test]
    fn answers_take_0_3_shapes_for_0_3_methods() {
        let task = json!({"task": {"id": "t", "status": {"state": "TASK_STATE_COMPLETED",
            "message": {"parts": [{"text": "done"}]}}, "artifacts": [{"parts": [{"text": "9C"}]}]}});
        let old = to_v03(&task);
        assert_eq!(old["kind"], "task");
        assert_eq!(old["status"]["state"], "completed");
        assert_eq!(
            old["artifacts"][0]["parts"][0],
            json!({"kind": "text", "text": "9C"})
        );
        assert_eq!(old["status"]["message"]["parts"][0]["kind"], "text");
        let update =
            json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}});
        assert_eq!(to_v03(&update)["final"], false);
        let done =
            json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_FAILED"}}});
        assert_eq!(to_v03(&done)["final"], true);
        assert_eq!(to_v03(&done)["kind"], "status-update");
        assert!(is_v03("message/send") && !is_v03("SendMessage"));
        // A 0.3 completed reply reads as completed.
        let d = Delegation::of(
            &json!({"agent": "fx", "method": "message/send", "params": {"message": {"parts": [{"kind": "text", "text": "hi"}]}}}),
            &json!({"result": old}),
        )
        .unwrap();
        assert_eq!(d.result(), json!("9C"));
    }

    #[test]
    fn mock_results_are_checked_and_plain_mappings_are_json_replies() {
        assert!(check_mock(&json!({"reply": "x", "state": "input-required"})).is_ok());
        assert!(check_mock(&json!({"state": "TASK_STATE_FAILED"})).is_ok());
        assert!(check_mock(&json!({"state": "done"}))
            .unwrap_err()
            .contains("not a task state"));
        assert!(check_mock(&json!({"reply": "x", "temp": 1}))
            .unwrap_err()
            .contains("`temp`"));
        assert!(check_mock(&json!({"temp_c": -5})).is_ok());
        let t = mocked_task(&json!({"temp_c": -5}), ("t", "c")).unwrap();
        assert_eq!(
            reply(&json!({"result": {"task": t}})).text,
            r#"{"temp_c":-5}"#
        );
    }
}
