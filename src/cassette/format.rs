//! The cassette data model (format v1), serialized with serde in a stable key order.
//!
//! Field order in these structs is the order in the file; `serde_json` maps are sorted, so a
//! re-record of the same traffic produces the same bytes except for volatile values.
//! `docs/cassette-format.md` documents every field; keep the two in step.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::CassetteError;
pub use super::lazy::LazyJson;
use crate::dialect::{KnownClient, Provider, Route};
use crate::neutral::{Execution, ModelCall};
use crate::sse::{Framing, SseEvent};

/// Major version of the format this build writes; a cassette with a newer major is refused.
/// 2.0 keys with XXH3-128 (see [`crate::matching::key::KeyHash`]): an older reader would
/// key its requests otherwise and miss every one, so it refuses the cassette instead.
pub const FORMAT_MAJOR: u32 = 2;
/// The oldest major this build reads (1.x: its SHA-256 keys are kept).
pub const OLDEST_MAJOR: u32 = 1;
/// Minor version: additions that older readers can ignore (unknown fields are skipped on load).
pub const FORMAT_MINOR: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cassette {
    /// `"major.minor"`.
    pub format: String,
    /// `"agentproxy X.Y.Z"` of the recorder.
    pub recorder: String,
    /// RFC 3339 UTC time the recording finished.
    pub recorded_at: String,
    /// The spec case that recorded it (format 1.4); absent for `record` and pytest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_by: Option<RecordedBy>,
    /// The upstream base URLs the interactions were recorded against.
    pub upstreams: Upstreams,
    /// The matching tolerance in force when recording.
    #[serde(
        default,
        rename = "match",
        skip_serializing_if = "MatchRules::is_empty"
    )]
    pub match_rules: MatchRules,
    /// The interactions in the order their responses completed.
    pub interactions: Vec<Interaction>,
}

/// The upstream base URL of each provider, by its name in the provider table
/// (`openai`, `anthropic`, `gemini`, `azure`, `ollama`). A provider with no upstream (Azure
/// when no endpoint is known) is absent. Names this build does not know are kept.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Upstreams(pub BTreeMap<String, String>);

impl Upstreams {
    /// The base URL for `provider`'s requests; empty when it has none.
    pub fn of(&self, provider: Provider) -> &str {
        self.0.get(provider.name()).map_or("", String::as_str)
    }

    /// Set `provider`'s base URL.
    pub fn set(&mut self, provider: Provider, url: impl Into<String>) {
        self.0.insert(provider.name().to_owned(), url.into());
    }
}

/// The case of a spec that recorded a cassette. Plain `replay` neither drives the program
/// as the case does nor applies the spec's mocks; its miss report says so and how to run it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RecordedBy {
    /// The spec's path as `agentproxy test` was given it.
    pub spec: String,
    pub case: String,
    /// The tools the spec mocks (`tools:`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mocks: Vec<String>,
}

impl RecordedBy {
    /// `the case `paris` of specs/weather.yaml, which mocks get_time`, for `show` and
    /// the miss report.
    pub fn describe(&self) -> String {
        let mocks = match self.mocks.as_slice() {
            [] => String::new(),
            tools => format!(", which mocks {}", tools.join(", ")),
        };
        format!("the case `{}` of {}{mocks}", self.case, self.spec)
    }
}

/// User-declared matching tolerance: JSON pointers removed before hashing and named holes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct MatchRules {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holes: Vec<Hole>,
}

impl MatchRules {
    pub fn is_empty(&self) -> bool {
        self.ignore.is_empty() && self.holes.is_empty()
    }

    /// The tolerances of a known client's volatile fields.
    pub fn of_client(client: &KnownClient) -> MatchRules {
        MatchRules {
            ignore: client.ignore.iter().map(|p| (*p).to_owned()).collect(),
            holes: (client.holes.iter())
                .map(|(name, regex, within)| Hole {
                    name: (*name).to_owned(),
                    regex: (*regex).to_owned(),
                    within: within.map(str::to_owned),
                })
                .collect(),
        }
    }

    /// Was a cassette with these rules recorded from `client`? It holds one of the
    /// client's named holes (a recording brings them all; a later version of agentproxy
    /// may have added more).
    pub fn of_recorded_client(&self, client: &KnownClient) -> bool {
        (client.holes.iter()).any(|(name, ..)| self.holes.iter().any(|h| h.name == *name))
    }

    /// The rules in a line, for `show` and miss reports: `ignored /user; hole ${today}
    /// (/\d{4}-\d{2}-\d{2}/ under /messages)`; `None` when there are none.
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.ignore.is_empty() {
            parts.push(format!("ignored {}", self.ignore.join(", ")));
        }
        for h in &self.holes {
            let under = h
                .within
                .as_ref()
                .map(|w| format!(" under {w}"))
                .unwrap_or_default();
            parts.push(format!("hole ${{{}}} (/{}/{under})", h.name, h.regex));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// These rules plus the ones in `other` that are not already present.
    pub fn merged(&self, other: &MatchRules) -> MatchRules {
        let mut out = self.clone();
        for p in &other.ignore {
            if !out.ignore.contains(p) {
                out.ignore.push(p.clone());
            }
        }
        for h in &other.holes {
            if !out.holes.contains(h) {
                out.holes.push(h.clone());
            }
        }
        out
    }
}

/// Every match of `regex` (only under the pointer `in`, when given) becomes `${name}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Hole {
    pub name: String,
    pub regex: String,
    #[serde(default, rename = "in", skip_serializing_if = "Option::is_none")]
    pub within: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Interaction {
    /// Dialect and endpoint, e.g. `openai.chat`, or `http` for plain HTTP.
    pub route: String,
    /// The hash of the normalized request under the cassette's match rules, in hex: XXH3-128
    /// (32 digits) in cassettes recorded at format 2.0 and later, SHA-256 (64) in those
    /// recorded before (an update keeps them).
    pub key: String,
    /// The test-runner turn (0-based) this interaction happened in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
    pub request: RecordedRequest,
    pub response: RecordedResponse,
    /// Milliseconds from forwarding the request to the end of the response.
    pub latency_ms: u64,
    /// The ids of the tool calls whose results in this request a spec's mock wrote
    /// (format 1.4): the request holds what the model was told, not what the tool said.
    /// For a call to a remote agent (route `a2a`), the agent's name: an `agents:` mock
    /// answered it (such calls are in a case's log, never in a cassette).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mocked: Vec<String>,
    /// A fault spoiled one of this answer's tool calls on its way to the program (format
    /// 1.4): the recording keeps the real answer, the program got the spoiled one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spoiled: Option<Spoiled>,
}

/// Which tool call of an answer a fault spoiled, and how.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Spoiled {
    /// The call's index among the answer's tool calls (0-based).
    pub call: usize,
    /// The fault: `malformed_tool_args`, `schema_violation`, `unknown_tool` or `length`.
    pub fault: String,
}

impl Interaction {
    /// Keep the JSON bodies as compact text until they are next read or written (see
    /// [`LazyJson::compact`]).
    pub fn compact(&mut self) {
        let bodies = [&mut self.request.body, &mut self.response.body];
        for body in bodies.into_iter().flatten() {
            if let Body::Json(v) = body {
                v.compact();
            }
        }
    }

    /// The model call this interaction records, read by its route's dialect: `None` for
    /// plain HTTP and for a request body that is missing or not JSON. A response body that
    /// is missing (a stream that kept only its events) or not JSON reads as empty.
    pub fn model_call(&self) -> Option<ModelCall> {
        self.model_call_with(self.request.body.as_ref()?.as_json()?)
    }

    /// The MCP tool execution this interaction recorded (route `mcp`, a `tools/call`).
    pub fn execution(&self) -> Option<Execution> {
        if self.route != crate::dialect::mcp::ROUTE {
            return None;
        }
        let request = self.request.body.as_ref()?.as_json()?;
        let response = self.response.body.as_ref()?.as_json()?;
        crate::dialect::mcp::execution(request, response)
    }

    /// The delegation to a remote agent this interaction is, if it sent one a message.
    pub fn delegation(&self) -> Option<crate::dialect::a2a::Delegation> {
        if self.route != crate::dialect::a2a::ROUTE {
            return None;
        }
        let request = self.request.body.as_ref()?.as_json()?;
        let response = self.response.body.as_ref()?.as_json()?;
        crate::dialect::a2a::Delegation::of(request, response)
    }

    /// The tools an MCP server listed in this interaction (a `tools/list` answer).
    pub fn listed_tools(&self) -> Vec<String> {
        if self.route != crate::dialect::mcp::ROUTE || self.request.method != "tools/list" {
            return vec![];
        }
        match self.response.body.as_ref().and_then(Body::as_json) {
            Some(r) => crate::dialect::mcp::listed_tools(&r["result"])
                .map(|(name, _)| name.to_owned())
                .collect(),
            None => Vec::new(),
        }
    }

    /// [`Interaction::model_call`] with the request body given (normalized, say).
    /// The response body is read without keeping its parsed tree (the interaction is
    /// read once, and a whole cassette of trees would cost several times its size).
    pub fn model_call_with(&self, request: &Value) -> Option<ModelCall> {
        let response = self.response.body.as_ref().and_then(Body::json_transient);
        let response = response.as_deref().unwrap_or(&Value::Null);
        let path = &self.request.path;
        if let Some(call) = crate::dialect::socket::model_call(&self.route, request, response, path)
        {
            return Some(call);
        }
        let route = Route::from_name(&self.route);
        let mut call = route.extract(request, response)?;
        if call.model.is_empty() {
            call.model = route.path_model(&self.request.path).unwrap_or_default();
        }
        Some(call)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordedRequest {
    pub method: String,
    /// Path and query, as the program sent them.
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Body>,
    /// Hex XXH3-128 of the JSON body's bytes exactly as sent upstream, so replay
    /// recognizes a byte-identical request without parsing it. Absent when the body held a
    /// secret value (a digest of it could be brute-forced from the rest of the cassette).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_xxh3: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordedResponse {
    pub status: u16,
    /// Only the headers a client needs to behave the same (content type, retry hints).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The body; for a stream, the message assembled from its events (when the dialect knows how).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Body>,
    /// For a server-sent-event stream: the events, boundaries intact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<SseEvent>>,
    /// For a stream: when each event came, in milliseconds since the request went
    /// upstream (format 2.1; a 2.0 reader skips it, and `--realtime` spreads `latency_ms`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub event_ms: Vec<u64>,
    /// Why the upstream's stream broke off before its end, when it did (format 1.2). Such
    /// a recording replays as a stream that breaks off after the same events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<String>,
    /// The encoded body, cached on first replay so hot keys do not re-serialize.
    #[serde(skip)]
    pub encoded: OnceLock<Bytes>,
    /// The encoded events, one frame each, cached on first replay likewise.
    #[serde(skip)]
    pub encoded_events: OnceLock<Vec<Bytes>>,
}

/// A message body: JSON when it parses, else UTF-8 text, else base64.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Body {
    Json(LazyJson),
    Text(String),
    Base64(String),
}

impl Body {
    pub fn from_bytes(bytes: &[u8]) -> Body {
        if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
            return Body::Json(v.into());
        }
        match std::str::from_utf8(bytes) {
            Ok(s) => Body::Text(s.to_owned()),
            Err(_) => Body::Base64(base64::engine::general_purpose::STANDARD.encode(bytes)),
        }
    }

    /// The bytes to send; fails only for JSON text in a cassette file that changed since
    /// it loaded (see [`LazyJson::compact_bytes`]).
    pub fn to_bytes(&self) -> Result<Bytes, CassetteError> {
        Ok(match self {
            // No tree is built: a tree is four times the text.
            Body::Json(v) => v.compact_bytes()?,
            Body::Text(s) => Bytes::from(s.clone()),
            Body::Base64(b) => Bytes::from(
                base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .unwrap_or_default(),
            ),
        })
    }

    pub fn as_json(&self) -> Option<&Value> {
        match self {
            Body::Json(v) => Some(v.get()),
            _ => None,
        }
    }

    /// [`Body::as_json`] without keeping the parsed value (see [`LazyJson::get_transient`]).
    pub fn json_transient(&self) -> Option<std::borrow::Cow<'_, Value>> {
        match self {
            Body::Json(v) => Some(v.get_transient()),
            _ => None,
        }
    }
}

impl RecordedResponse {
    /// A response to store: its status, its kept headers, its body and (a stream) its
    /// events, and why it broke off, if it did.
    pub fn new(
        status: u16,
        headers: BTreeMap<String, String>,
        body: Option<Body>,
        events: Option<Vec<SseEvent>>,
        aborted: Option<String>,
    ) -> RecordedResponse {
        RecordedResponse {
            status,
            headers,
            body,
            events,
            event_ms: Vec::new(),
            aborted,
            encoded: Default::default(),
            encoded_events: Default::default(),
        }
    }

    /// The body bytes to serve, encoded once.
    pub fn body_bytes(&self) -> Result<Bytes, CassetteError> {
        if let Some(encoded) = self.encoded.get() {
            return Ok(encoded.clone());
        }
        let body = self.body.as_ref().map(Body::to_bytes).transpose()?;
        Ok(self
            .encoded
            .get_or_init(|| body.unwrap_or_default())
            .clone())
    }

    /// The recorded events as frames to serve, encoded once; `None` when not a stream.
    pub fn event_frames(&self) -> Option<Vec<Bytes>> {
        let events = self.events.as_ref()?;
        let framing = self.framing();
        Some(
            self.encoded_events
                .get_or_init(|| events.iter().map(|e| framing.encode(e)).collect())
                .clone(),
        )
    }

    /// How the recorded stream was framed, from its content type (server-sent events when
    /// it has none).
    pub fn framing(&self) -> Framing {
        (self.headers.get("content-type"))
            .and_then(|ct| Framing::of(ct))
            .unwrap_or(Framing::Sse)
    }
}

/// `"major.minor"` of this build.
pub fn format_version() -> String {
    format!("{FORMAT_MAJOR}.{FORMAT_MINOR}")
}

/// The major number of a `"major.minor"` version string.
pub fn parse_major(version: &str) -> Option<u32> {
    let (major, minor) = version.split_once('.')?;
    minor.parse::<u32>().ok()?;
    major.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_picks_json_then_text_then_base64() {
        assert_eq!(
            Body::from_bytes(br#"{"a":1}"#),
            Body::Json(serde_json::json!({"a": 1}).into())
        );
        assert_eq!(Body::from_bytes(b"plain"), Body::Text("plain".into()));
        let raw = [0xff, 0x00, 0x10];
        let b = Body::from_bytes(&raw);
        assert!(matches!(b, Body::Base64(_)));
        assert_eq!(&b.to_bytes().unwrap()[..], &raw);
    }

    #[test]
    fn versions_parse() {
        assert_eq!(parse_major("1.0"), Some(1));
        assert_eq!(parse_major("12.3"), Some(12));
        assert_eq!(parse_major("1"), None);
        assert_eq!(parse_major("x.1"), None);
        assert_eq!(format_version(), "2.1");
    }

    #[test]
    fn merged_rules_keep_order_and_skip_duplicates() {
        let a = MatchRules {
            ignore: vec!["/user".into()],
            holes: vec![],
        };
        let b = MatchRules {
            ignore: vec!["/user".into(), "/metadata".into()],
            holes: vec![Hole {
                name: "d".into(),
                regex: r"\d+".into(),
                within: None,
            }],
        };
        let m = a.merged(&b);
        assert_eq!(m.ignore, vec!["/user", "/metadata"]);
        assert_eq!(m.holes.len(), 1);
    }
}
