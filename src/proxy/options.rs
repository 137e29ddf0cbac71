//! What a session is asked to do, fixed at start: the proxy's [`Options`] (built in one
//! place, `runner::plan`), and the tool mocks and fuzz arguments they carry.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::replay::Replay;
use super::upstream::Upstream;
use crate::fault::CrashPoint;
use crate::matching::normalize::Rules;
use crate::neutral::ToolCall;
use crate::redact::Secrets;

/// Tool mocks: given the call a tool result answers and its 0-based occurrence among the
/// calls to that tool in the conversation, the result the model should be told instead.
pub type Mocks = Arc<dyn Fn(&ToolCall, usize) -> Mocked + Send + Sync>;

/// What the mocks say of one tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum Mocked {
    /// The result to give instead of the tool's own.
    Result(Value),
    /// Not mocked, or no `when:` rule matches: the tool's own result stands.
    Unmocked,
    /// Mocked, but its `results:` are used up (the case fails for it): the model is told
    /// the program's result, and an MCP server is not called.
    Exhausted,
}

impl Mocked {
    /// The mocked result, if there is one.
    pub fn result(self) -> Option<Value> {
        match self {
            Mocked::Result(v) => Some(v),
            Mocked::Unmocked | Mocked::Exhausted => None,
        }
    }
}

/// Everything the proxy needs, fixed at start.
pub struct Options {
    /// What a request under the control prefix must present (see `secret::SECRET_HEADER`).
    pub secret: String,
    pub rules: Rules,
    pub secrets: Secrets,
    pub max_body: usize,
    /// Forward here on record (and on a miss, in update mode); `None` never touches the network.
    pub upstream: Option<Upstream>,
    pub replay: Option<Replay>,
    /// Print each miss report on stderr as it happens.
    pub print_misses: bool,
    /// What every miss report's hints say of this session (how to record again, whose
    /// words; for a spec case's cassette served by another session, what it is: see
    /// `runner::plan`).
    pub advice: crate::matching::nearmiss::Advice,
    /// Replace tool results in requests before they are matched, recorded or forwarded,
    /// and answer `tools/call` of mocked MCP tools.
    pub mocks: Option<Mocks>,
    /// Keep every exchange served or recorded (for the test runner's trajectories).
    pub log_exchanges: bool,
    /// Streamable HTTP MCP servers by name (`--mcp NAME=URL`), served at `/mcp/NAME`.
    pub mcp_http: BTreeMap<String, String>,
    /// Remote agents over A2A (`--a2a NAME=URL`, a spec's `agents:` mocks), served at
    /// `/a2a/NAME/`.
    pub a2a: Agents,
    /// Faults to inject into model requests, by occurrence.
    pub faults: crate::fault::Plan,
    /// A fuzz run's arguments, put in the first call to their tool the program gets.
    pub fuzz: Option<FuzzCall>,
    /// A crash test's point: the first request after it is held (see `proxy::crash`).
    pub crash: Option<CrashPoint>,
    /// What becomes of the program's traffic that is not to a base URL (see `egress`).
    pub egress: super::egress::Options,
    /// Note the known clients (Claude Code) whose requests are recorded, so their
    /// volatile fields are tolerated in the cassette written.
    pub known_clients: bool,
}

/// The session's remote agents over A2A (see `a2a`).
#[derive(Default)]
pub struct Agents {
    /// The agents by name, each with its base URL (where its card is).
    pub urls: BTreeMap<String, String>,
    /// The spec's `agents:` mocks, by agent name: a delegation is the call of a tool named
    /// after the agent with `{"message": text}` as its arguments.
    pub mocks: Option<Mocks>,
    /// The mocked agents' names: each has a relay (and a card) even without a URL.
    pub mocked: Vec<String>,
}

impl Agents {
    /// Whether `name` is one of the session's agents.
    pub(super) fn knows(&self, name: &str) -> bool {
        self.urls.contains_key(name) || self.mocked.iter().any(|m| m == name)
    }
}

/// The arguments of one fuzz run, and the tool whose call carries them.
#[derive(Debug, Clone)]
pub struct FuzzCall {
    pub tool: String,
    pub arguments: Value,
}
