//! The proxy: shared state of one session (what to serve, where to forward, what was
//! recorded and missed) and the HTTP layers around it.

pub(crate) mod body;
pub(crate) mod crash;
mod exchange;
pub mod fault;
pub mod mcp;
pub mod mcp_http;
mod miss;
mod record;
mod replay;
pub mod server;
mod service;
mod session;
pub mod switch;
pub mod upstream;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use tokio_util::task::TaskTracker;

use crate::cassette::Interaction;
use crate::dialect::Route;
use crate::matching::index::{ByPosition, Index, Lookup, Repeat};
use crate::matching::normalize::Rules;
use crate::neutral::ToolCall;
use crate::redact::Secrets;
pub use crash::Crashed;
pub use server::BindError;
pub(crate) use session::Session;
use upstream::Upstream;

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

/// No turn set: the session is not driven by the test runner.
const NO_TURN: usize = usize::MAX;

/// What a session serves from a cassette.
pub struct Replay {
    pub interactions: Vec<Interaction>,
    index: Mutex<Index>,
    /// The first recording of each request body digest (see [`Proxy::take_identical`]).
    by_digest: HashMap<u128, usize>,
    /// Serve streams paced by their recorded latency.
    pub realtime: bool,
    /// Lenient replay: serve by position instead of by key (see [`Replay::lenient`]).
    by_position: Option<Mutex<ByPosition>>,
}

impl Replay {
    /// Keys must already be computed under the rules the session matches with.
    pub fn new(interactions: Vec<Interaction>, repeat: Repeat, realtime: bool) -> Replay {
        let index = Index::new(interactions.iter().map(|i| i.key.as_str()), repeat);
        let mut by_digest = HashMap::new();
        for (pos, it) in interactions.iter().enumerate() {
            let digest = it.request.body_xxh3.as_deref();
            if let Some(d) = digest.and_then(crate::matching::key::parse_digest) {
                by_digest.entry(d).or_insert(pos);
            }
        }
        Replay {
            interactions,
            index: Mutex::new(index),
            by_digest,
            realtime,
            by_position: None,
        }
    }

    /// Serve each model request the recording at the same position for its route and
    /// turn, whatever its body, so a program whose requests drift still runs to its end
    /// (the determinism check). The served exchange is logged with the request as it
    /// arrived, not as it was recorded.
    pub fn lenient(mut self) -> Replay {
        let slots = self.interactions.iter().map(|i| (i.route.as_str(), i.turn));
        self.by_position = Some(Mutex::new(ByPosition::new(slots)));
        self
    }

    fn take_by_position(&self, route: &str, turn: Option<usize>) -> Option<usize> {
        let ix = self.by_position.as_ref()?;
        ix.lock()
            .unwrap_or_else(|p| p.into_inner())
            .take(route, turn)
    }
}

/// Everything the proxy needs, fixed at start.
pub struct Options {
    pub rules: Rules,
    pub secrets: Secrets,
    pub max_body: usize,
    /// Forward here on record (and on a miss, in update mode); `None` never touches the network.
    pub upstream: Option<Upstream>,
    pub replay: Option<Replay>,
    /// Print each miss report on stderr as it happens.
    pub print_misses: bool,
    /// Replace tool results in requests before they are matched, recorded or forwarded,
    /// and answer `tools/call` of mocked MCP tools.
    pub mocks: Option<Mocks>,
    /// Keep every exchange served or recorded (for the test runner's trajectories).
    pub log_exchanges: bool,
    /// Streamable HTTP MCP servers by name (`--mcp NAME=URL`), served at `/mcp/NAME`.
    pub mcp_http: std::collections::BTreeMap<String, String>,
    /// Faults to inject into model requests, by occurrence.
    pub faults: crate::fault::Plan,
    /// A fuzz run's arguments, put in the first call to their tool the program gets.
    pub fuzz: Option<FuzzCall>,
    /// A crash test's point: the first request after it is held (see [`crash`]).
    pub crash: Option<crate::fault::CrashPoint>,
}

/// The arguments of one fuzz run, and the tool whose call carries them.
#[derive(Debug, Clone)]
pub struct FuzzCall {
    pub tool: String,
    pub arguments: Value,
}

pub struct Proxy {
    opts: Options,
    state: Mutex<State>,
    /// Arrival order of requests (and their count), so the cassette lists interactions in a
    /// stable order.
    seq: AtomicU64,
    /// Upstream exchanges that must finish (and be recorded) before the cassette is written.
    tasks: TaskTracker,
    /// The test runner's current turn, stamped on each exchange as it arrives.
    turn: AtomicUsize,
    crash_signals: crash::Signals,
}

#[derive(Default)]
struct State {
    recorded: Vec<(u64, Interaction)>,
    exchanges: Vec<(u64, Interaction)>,
    /// Tool calls seen in responses this session, by call id, so a tool result can be
    /// mocked even when its call is not in the request (Responses `previous_response_id`).
    calls: HashMap<String, ToolCall>,
    misses: Vec<String>,
    missed_turns: BTreeSet<usize>,
    upstream_errors: Vec<String>,
    rejected: Vec<String>,
    /// The `outputSchema` (if any) of each tool an MCP server listed, by (server, tool).
    mcp_tools: HashMap<(String, String), Option<Value>>,
    /// The `resultType` each MCP server's results carry (protocol 2026-07-28 on).
    mcp_result_types: HashMap<String, Value>,
    /// `tools/call` requests per tool at the MCP boundary, for the mocks' occurrence count.
    mcp_calls: HashMap<String, usize>,
    /// Tools a mock answered at the MCP boundary.
    mcp_mocked: BTreeSet<String>,
    mock_problems: Vec<String>,
    /// Model requests so far, and per turn (faulted ones included).
    model_requests: usize,
    turn_requests: BTreeMap<Option<usize>, usize>,
    fired: Vec<crate::fault::Fired>,
    /// Tool-call faults that could not fire.
    fault_problems: Vec<String>,
    /// With faults: each model request's number and the status it was answered with.
    answered: Vec<(usize, Option<u16>)>,
    /// Exchanges whose tool call a fault or a fuzz run spoiled, by arrival: the call's
    /// index and how.
    spoiled: HashMap<u64, (usize, crate::dialect::Spoil)>,
    /// The fuzz run's arguments have reached the program.
    fuzzed: bool,
    crash: Crashed,
    /// The arrival number the held request would have had.
    crash_seq: u64,
}

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
    /// The turns (see [`Proxy::set_turn`]) in which a request missed.
    pub missed_turns: BTreeSet<usize>,
    pub upstream_errors: Vec<String>,
    /// Requests the proxy answered with an error of its own (not an API path, a body too
    /// large or not JSON), each as `POST /path: why`.
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
    pub faults: Vec<crate::fault::Fired>,
    /// Tool-call faults that could not fire (no tool call in the answer, no way to break
    /// its schema): each fails the case.
    pub fault_problems: Vec<String>,
    /// A fuzz run's arguments reached the program (in an answer calling their tool).
    pub fuzzed: bool,
    /// With a crash point: whether it passed, and the request it held.
    pub crash: Option<Crashed>,
}

impl Proxy {
    pub fn new(opts: Options) -> Proxy {
        Proxy {
            opts,
            state: Mutex::default(),
            seq: AtomicU64::new(0),
            tasks: TaskTracker::new(),
            turn: AtomicUsize::new(NO_TURN),
            crash_signals: crash::Signals::default(),
        }
    }

    /// Stamp the exchanges that arrive from now on with this turn.
    pub fn set_turn(&self, turn: usize) {
        self.turn.store(turn, Ordering::SeqCst);
    }

    fn current_turn(&self) -> Option<usize> {
        Some(self.turn.load(Ordering::SeqCst)).filter(|t| *t != NO_TURN)
    }

    /// The fast path of replay: when `body` is byte-identical to a recorded request body
    /// (same digest) on the same route, take the next interaction of that recording's key
    /// without parsing the body: the same bytes parse to the same body, so the key could
    /// only be the same. Not with tool mocks (they rewrite the body before it is keyed), in a
    /// fuzz run (its answers are looked at) or in lenient replay; a key with nothing left falls through to the full path, which
    /// reports the miss.
    fn take_identical(
        &self,
        route: Route,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> Option<(&Replay, usize)> {
        let rp = self.opts.replay.as_ref()?;
        let rewrites = self.opts.mocks.is_some() || self.opts.fuzz.is_some();
        if rp.by_digest.is_empty() || rp.by_position.is_some() || rewrites {
            return None;
        }
        let first =
            &rp.interactions[*rp.by_digest.get(&crate::matching::key::body_digest(body))?];
        // The key covers the route, and for plain HTTP the method and path too. A dialect
        // that reads part of the request from the path (Gemini: the model, and whether a
        // stream is wanted) is served as recorded only for the same path.
        let path_matters = first.route == "http" || route.key_scope(path).is_some();
        let same_scope = first.route == route.name()
            && (!path_matters || (first.request.method == method && first.request.path == path));
        if !same_scope {
            return None;
        }
        match rp
            .index
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take(&first.key)
        {
            Lookup::Hit(pos) => Some((rp, pos)),
            _ => None,
        }
    }

    /// Remember a finished exchange: in the log, and its tool calls for later mocks.
    fn note_exchange(&self, seq: u64, it: &Interaction) {
        if self.opts.crash.is_some() {
            self.crash_after_exchange(it);
        }
        if !self.opts.log_exchanges && self.opts.mocks.is_none() {
            return;
        }
        let calls = match it.model_call() {
            Some(call) if self.opts.mocks.is_some() => call.tool_calls,
            _ => vec![],
        };
        let mut st = self.lock();
        for c in calls {
            st.calls.insert(c.id.clone(), c);
        }
        if self.opts.log_exchanges {
            st.exchanges.push((seq, it.clone()));
        }
    }

    /// The fuzz run's arguments, while they have not reached the program.
    fn fuzz_pending(&self) -> Option<&FuzzCall> {
        let fuzz = self.opts.fuzz.as_ref()?;
        (!self.lock().fuzzed).then_some(fuzz)
    }

    fn known_call(&self, id: &str) -> Option<ToolCall> {
        self.lock().calls.get(id).cloned()
    }

    /// A tool some MCP server listed this session: mocked where it executes, at the MCP
    /// boundary, not in what the model is told.
    fn is_mcp_tool(&self, name: &str) -> bool {
        self.lock().mcp_tools.keys().any(|(_, tool)| tool == name)
    }

    /// Take what the session recorded and missed. Call after [`server::serve`] returned
    /// (as [`Session::stop`] does).
    pub fn outcome(&self) -> Outcome {
        let mut st = self.lock();
        let mut recorded = std::mem::take(&mut st.recorded);
        recorded.sort_by_key(|(seq, _)| *seq);
        let mut exchanges = std::mem::take(&mut st.exchanges);
        exchanges.sort_by_key(|(seq, _)| *seq);
        if st.crash.held.is_some() {
            let at = st.crash_seq;
            st.crash.before = exchanges.iter().filter(|(seq, _)| *seq < at).count();
        }
        for (seq, it) in &mut exchanges {
            if let Some((nth, how)) = st.spoiled.get(seq) {
                fault::as_served(it, *nth, how);
            }
        }
        let unused = match &self.opts.replay {
            Some(r) => {
                let positions = r.index.lock().map(|ix| ix.unused()).unwrap_or_default();
                positions
                    .into_iter()
                    .map(|pos| {
                        let it = &r.interactions[pos];
                        format!(
                            "#{pos} {} {} ({})",
                            it.request.method, it.request.path, it.route
                        )
                    })
                    .collect()
            }
            None => vec![],
        };
        Outcome {
            recorded: recorded.into_iter().map(|(_, i)| i).collect(),
            exchanges: exchanges.into_iter().map(|(_, i)| i).collect(),
            misses: std::mem::take(&mut st.misses),
            missed_turns: std::mem::take(&mut st.missed_turns),
            upstream_errors: std::mem::take(&mut st.upstream_errors),
            rejected: std::mem::take(&mut st.rejected),
            unused,
            requests: self.requests(),
            mock_problems: std::mem::take(&mut st.mock_problems),
            mcp_mocked: std::mem::take(&mut st.mcp_mocked),
            model_requests: std::mem::take(&mut st.turn_requests),
            faults: {
                let mut fired = std::mem::take(&mut st.fired);
                fault::with_next(&mut fired, &st.answered);
                fired
            },
            fault_problems: std::mem::take(&mut st.fault_problems),
            fuzzed: st.fuzzed,
            crash: self
                .opts
                .crash
                .as_ref()
                .map(|_| std::mem::take(&mut st.crash)),
        }
    }

    /// The exchanges logged so far (with `log_exchanges`), in arrival order, left in place.
    pub fn exchanges_so_far(&self) -> Vec<Interaction> {
        let mut exchanges = self.lock().exchanges.clone();
        exchanges.sort_by_key(|(seq, _)| *seq);
        exchanges.into_iter().map(|(_, i)| i).collect()
    }

    /// Requests that reached the proxy so far, served or not.
    pub fn requests(&self) -> usize {
        usize::try_from(self.seq.load(Ordering::Relaxed)).unwrap_or(usize::MAX)
    }

    fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// The state lock; a panic elsewhere must not lose the recording, so poisoning is ignored.
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
