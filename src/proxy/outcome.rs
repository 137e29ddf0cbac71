//! What a session did, read once it has drained: what the record, replay and test
//! commands and `serve` report.

use std::collections::{BTreeMap, BTreeSet};

use super::crash::Crashed;
use crate::cassette::Interaction;
use crate::fault::Fired;
use crate::matching::nearmiss::NearMiss;

/// What a session did, read once it has drained.
#[derive(Debug, Default)]
pub struct Outcome {
    /// New recordings, in request arrival order.
    pub recorded: Vec<Interaction>,
    /// With `log_exchanges`: every exchange served or recorded, in arrival order, each
    /// stamped with its turn.
    pub exchanges: Vec<Interaction>,
    /// One report per missed request.
    pub misses: Vec<String>,
    /// The misses that have a nearest recording, beside it.
    pub near_misses: Vec<NearMiss>,
    /// The turns (see `Session::set_turn`) in which a request missed.
    pub missed_turns: BTreeSet<usize>,
    pub upstream_errors: Vec<String>,
    /// Requests the proxy answered with an error of its own (not an API path, a body too
    /// large), each as `POST /path: why`.
    pub rejected: Vec<String>,
    /// Replayable interactions never served, as `#3 POST /v1/chat/completions (openai.chat)`.
    pub unused: Vec<String>,
    /// Requests that reached the proxy, served or not.
    pub requests: usize,
    /// Mocks that could not answer at the MCP boundary (a result the tool's
    /// `outputSchema` rejects): each fails the case.
    pub mock_problems: Vec<String>,
    /// Tools a mock answered at the MCP boundary (their calls never reached a server).
    pub mcp_mocked: BTreeSet<String>,
    /// Model requests per turn (`None`: outside any turn), faulted ones included.
    pub model_requests: BTreeMap<Option<usize>, usize>,
    /// The faults that fired, in order.
    pub faults: Vec<Fired>,
    /// Tool-call faults that could not fire (no tool call in the answer, no way to break
    /// its schema): each fails the case.
    pub fault_problems: Vec<String>,
    /// A fuzz run's arguments reached the program (in an answer calling their tool).
    pub fuzzed: bool,
    /// With a crash point: whether it passed, and the request it held.
    pub crash: Option<Crashed>,
    /// Tunnels through the forward proxy, by `host:port`: intercepted (a provider's
    /// host), passed through while recording, allowed, or refused in a replay.
    pub egress: super::egress::Log,
    /// The known clients (`Claude Code`) whose requests were recorded.
    pub clients: BTreeSet<&'static str>,
}
