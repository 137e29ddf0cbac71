//! What a session did, read once it has drained: what the record, replay and test
//! commands and `serve` report.

use std::collections::{BTreeMap, BTreeSet};

use super::boundary::McpOutcome;
use super::crash::Crashed;
use super::fault::FaultOutcome;
use crate::cassette::Interaction;
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
    /// What the mocks did at the MCP boundary.
    pub mcp: McpOutcome,
    /// Model requests per turn (`None`: outside any turn), faulted ones included.
    pub model_requests: BTreeMap<Option<usize>, usize>,
    /// What became of the faults and a fuzz run's arguments.
    pub faults: FaultOutcome,
    /// With a crash point: whether it passed, and the request it held.
    pub crash: Option<Crashed>,
    /// Tunnels through the forward proxy, by `host:port`: intercepted (a provider's
    /// host), passed through while recording, allowed, or refused in a replay.
    pub egress: super::egress::Log,
    /// The known clients (`Claude Code`) whose requests were recorded.
    pub clients: BTreeSet<&'static str>,
}
