//! Tests of `diff` and `show` on realistic recordings built in code: chat-completions
//! conversations of a travel and a weather agent, re-recorded with the changes the
//! snapshots are about, and with every volatile value (ids, timestamps, fingerprints,
//! usage, latency, keys) different on each recording.

mod bench;
mod diff;
mod executions;
mod extract;
mod show;

use serde_json::{json, Map, Value};

use crate::cassette::format::{self, Upstreams};
use crate::cassette::{Body, Cassette, Interaction, RecordedRequest, RecordedResponse};
use crate::spec::{self, Case};

/// A chat-completions recording under construction, one model call at a time.
pub(crate) struct Rec {
    /// Seeds every volatile value: two recordings with different salts differ in ids,
    /// timestamps, fingerprints, usage, latency and keys only.
    salt: u64,
    pub model: String,
    pub system: String,
    pub tools: Vec<Value>,
    pub params: Map<String, Value>,
    messages: Vec<Value>,
    turn: Option<usize>,
    pub interactions: Vec<Interaction>,
}

pub(super) const TRAVEL_SYSTEM: &str = "You are a travel agent for Acme Travel.\nBook flights only after the traveller confirms.\nAnswer in the traveller's language.";

pub(super) fn tool(name: &str, description: &str, parameters: Value) -> Value {
    json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}})
}

pub(super) fn travel_tools() -> Vec<Value> {
    vec![
        tool(
            "search_flights",
            "Search flights to an airport on a date.",
            json!({
                "type": "object",
                "properties": {"to": {"type": "string"}, "date": {"type": "string", "format": "date"}},
                "required": ["to", "date"]
            }),
        ),
        tool(
            "check_visa",
            "Visa rules for a nationality entering a country.",
            json!({
                "type": "object",
                "properties": {"country": {"type": "string"}, "nationality": {"type": "string"}},
                "required": ["country", "nationality"]
            }),
        ),
        tool(
            "create_booking",
            "Book a flight for passengers.",
            json!({
                "type": "object",
                "properties": {
                    "flight": {"type": "string"},
                    "passengers": {"type": "array", "items": {"type": "object"}}
                },
                "required": ["flight", "passengers"]
            }),
        ),
    ]
}

pub(super) fn weather_tools() -> Vec<Value> {
    vec![
        tool(
            "get_weather",
            "Current weather for a city.",
            json!({
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"]
            }),
        ),
        tool(
            "get_time",
            "Local time in a city.",
            json!({
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"]
            }),
        ),
    ]
}

impl Rec {
    pub fn new(salt: u64, system: &str, tools: Vec<Value>) -> Rec {
        let mut params = Map::new();
        params.insert("temperature".into(), json!(0.2));
        Rec {
            salt,
            model: "gpt-4o-mini".into(),
            system: system.into(),
            tools,
            params,
            messages: vec![json!({"role": "system", "content": system})],
            turn: None,
            interactions: Vec::new(),
        }
    }

    pub fn travel(salt: u64) -> Rec {
        Rec::new(salt, TRAVEL_SYSTEM, travel_tools())
    }

    pub fn weather(salt: u64) -> Rec {
        Rec::new(
            salt,
            "You are a weather assistant. Use the tools; answer in one sentence.",
            weather_tools(),
        )
    }

    /// Start a turn (stamped like the test runner does) with the user's input.
    pub fn turn(&mut self, turn: usize, input: &str) -> &mut Rec {
        self.turn = Some(turn);
        self.user(input)
    }

    /// Forget the history: the next call starts a new conversation.
    pub fn new_conversation(&mut self) -> &mut Rec {
        self.messages.truncate(1);
        self
    }

    /// A user message, without starting a turn.
    pub fn user(&mut self, input: &str) -> &mut Rec {
        self.messages
            .push(json!({"role": "user", "content": input}));
        self
    }

    fn request(&self) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        let mut messages = self.messages.clone();
        messages[0] = json!({"role": "system", "content": self.system});
        body.insert("messages".into(), Value::Array(messages));
        if !self.tools.is_empty() {
            body.insert("tools".into(), Value::Array(self.tools.clone()));
        }
        body.extend(self.params.clone());
        Value::Object(body)
    }

    fn n(&self) -> u64 {
        self.interactions.len() as u64
    }

    fn push(&mut self, request: Value, status: u16, response: Value) {
        let (salt, n) = (self.salt, self.n());
        self.interactions.push(Interaction {
            route: "openai.chat".into(),
            key: format!("{:064x}", salt * 1_000_003 + n),
            turn: self.turn,
            request: RecordedRequest {
                method: "POST".into(),
                path: "/v1/chat/completions".into(),
                body: Some(Body::Json(request.into())),
                body_xxh3: None,
            },
            response: RecordedResponse {
                status,
                headers: [("content-type".to_owned(), "application/json".to_owned())].into(),
                body: Some(Body::Json(response.into())),
                events: None,
                aborted: None,
                encoded: Default::default(),
                encoded_events: Default::default(),
                event_ms: Vec::new(),
            },
            latency_ms: 380 + salt * 17 + n * 45,
            mocked: Vec::new(),
            spoiled: None,
        });
    }

    fn completion(&self, message: Value, finish: &str) -> Value {
        let (salt, n) = (self.salt, self.n());
        let prompt = 180 + n * 64 + salt;
        json!({
            "id": format!("chatcmpl-{salt}x{n}"),
            "object": "chat.completion",
            "created": 1_764_532_000 + salt * 1000 + n,
            "model": format!("{}-2024-07-18", self.model),
            "system_fingerprint": format!("fp_{salt:x}e9{n}"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": null}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 20 + salt, "total_tokens": prompt + 20 + salt,
                      "prompt_tokens_details": {"cached_tokens": salt * 64}}
        })
    }

    /// One model call that asks for `calls` (tool, arguments); the program answers each
    /// with its result.
    pub fn calls(&mut self, calls: &[(&str, Value, Value)]) -> &mut Rec {
        let (salt, n) = (self.salt, self.n());
        let tool_calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(k, (name, args, _))| {
                json!({"id": format!("call_{salt}q{n}z{k}"), "type": "function",
                       "function": {"name": name, "arguments": args.to_string()}})
            })
            .collect();
        let message = json!({"role": "assistant", "content": null, "tool_calls": tool_calls});
        let response = self.completion(message.clone(), "tool_calls");
        self.push(self.request(), 200, response);
        self.messages.push(message);
        for (k, (_, _, result)) in calls.iter().enumerate() {
            let content = match result {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            self.messages.push(json!({"role": "tool", "tool_call_id": format!("call_{salt}q{n}z{k}"), "content": content}));
        }
        self
    }

    /// One model call that answers with text.
    pub fn reply(&mut self, text: &str) -> &mut Rec {
        let message = json!({"role": "assistant", "content": text, "refusal": null});
        let response = self.completion(message.clone(), "stop");
        self.push(self.request(), 200, response);
        self.messages.push(message);
        self
    }

    /// A model call the upstream refused with a 429 (the SDK retries it).
    pub fn rate_limited(&mut self) -> &mut Rec {
        let error = json!({"error": {"message": "Rate limit reached for gpt-4o-mini", "type": "requests", "code": "rate_limit_exceeded", "param": null}});
        self.push(self.request(), 429, error);
        self
    }

    /// An MCP exchange through `agentproxy mcp`: `method` to `server` with `params`,
    /// answered with `result`.
    pub fn mcp(&mut self, server: &str, method: &str, params: Value, result: Value) -> &mut Rec {
        self.boundary(("mcp", "server"), server, method, params, result)
    }

    /// A call to the remote agent `agent` over A2A, answered with `result`.
    pub fn a2a(&mut self, agent: &str, method: &str, params: Value, result: Value) -> &mut Rec {
        self.boundary(("a2a", "agent"), agent, method, params, result)
    }

    fn boundary(
        &mut self,
        (route, who): (&str, &str),
        name: &str,
        method: &str,
        params: Value,
        result: Value,
    ) -> &mut Rec {
        let n = self.n();
        self.interactions.push(Interaction {
            route: route.into(),
            key: format!("{:064x}", self.salt * 1_000_003 + n),
            turn: self.turn,
            request: RecordedRequest {
                method: method.into(),
                path: name.into(),
                body: Some(Body::Json(
                    json!({who: name, "method": method, "params": params}).into(),
                )),
                body_xxh3: None,
            },
            response: RecordedResponse {
                status: 200,
                headers: Default::default(),
                body: Some(Body::Json(json!({ "result": result }).into())),
                events: None,
                aborted: None,
                encoded: Default::default(),
                encoded_events: Default::default(),
                event_ms: Vec::new(),
            },
            latency_ms: 3 + n,
            mocked: Vec::new(),
            spoiled: None,
        });
        self
    }

    /// A plain-HTTP interaction (the SDK listing models).
    pub fn list_models(&mut self) -> &mut Rec {
        self.interactions.push(Interaction {
            route: "http".into(),
            key: format!("{:064x}", self.salt + 7),
            turn: self.turn,
            request: RecordedRequest {
                method: "GET".into(),
                path: "/v1/models".into(),
                body: None,
                body_xxh3: None,
            },
            response: RecordedResponse {
                status: 200,
                headers: Default::default(),
                body: Some(Body::Json(
                    json!({"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model"}]})
                        .into(),
                )),
                events: None,
                aborted: None,
                encoded: Default::default(),
                encoded_events: Default::default(),
                event_ms: Vec::new(),
            },
            latency_ms: 12 + self.salt,
            mocked: Vec::new(),
            spoiled: None,
        });
        self
    }

    pub fn cassette(&self) -> Cassette {
        Cassette {
            format: format::format_version(),
            recorder: "agentproxy 0.1.0".into(),
            recorded_at: format!("2026-11-{:02}T19:42:07Z", 1 + self.salt % 28),
            recorded_by: None,
            upstreams: Upstreams(std::collections::BTreeMap::from([
                ("openai".into(), "https://api.openai.com".into()),
                ("anthropic".into(), "https://api.anthropic.com".into()),
            ])),
            match_rules: Default::default(),
            interactions: self.interactions.clone(),
        }
    }
}

/// The first case of a spec given as the YAML of its `cases:` list.
pub(super) fn case(cases_yaml: &str) -> Case {
    let src = format!("app: {{command: python agent.py}}\ncases:\n{cases_yaml}");
    let sp = spec::parse(&src, std::path::Path::new("spec.yaml")).unwrap_or_else(|e| panic!("{e}"));
    sp.cases.into_iter().next().expect("a case")
}
