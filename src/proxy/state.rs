//! The shared state of one session: its options, what it recorded, served and missed, the
//! count of its requests, and its faults and crash. Every handler reads and writes it
//! here; [`Proxy::outcome`] takes it once the session has drained.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use http::Response;
use tokio_util::task::TaskTracker;

use super::body::ProxyBody;
use super::boundary::Boundary;
use super::crash::Crash;
use super::egress::Gate;
use super::exchange::Exchange;
use super::fault::{self, Faults};
use super::options::Options;
use super::outcome::Outcome;
use crate::cassette::format::Spoiled;
use crate::cassette::Interaction;
use crate::matching::nearmiss::NearMiss;
use crate::neutral::ToolCall;

/// No turn set: the session is not driven by the test runner.
const NO_TURN: usize = usize::MAX;

pub struct Proxy {
    pub(super) opts: Options,
    state: Mutex<State>,
    /// Arrival order of requests (and their count), so the cassette lists interactions in a
    /// stable order.
    seq: AtomicU64,
    /// Upstream exchanges that must finish (and be recorded) before the cassette is written.
    pub(super) tasks: TaskTracker,
    /// The test runner's current turn, stamped on each exchange as it arrives.
    turn: AtomicUsize,
    pub(super) faults: Faults,
    pub(super) crash: Crash,
    /// The program's traffic that is not to a base URL (see `egress`).
    pub(super) egress: Arc<Gate>,
}

#[derive(Default)]
pub(super) struct State {
    recorded: Vec<(u64, Interaction)>,
    exchanges: Vec<(u64, Interaction)>,
    /// Tool calls seen in responses this session, by call id, so a tool result can be
    /// mocked even when its call is not in the request (Responses `previous_response_id`).
    calls: HashMap<String, ToolCall>,
    pub(super) misses: Vec<String>,
    pub(super) near_misses: Vec<NearMiss>,
    pub(super) missed_turns: BTreeSet<usize>,
    pub(super) upstream_errors: Vec<String>,
    pub(super) rejected: Vec<String>,
    /// The MCP boundary's part (see `boundary`).
    pub(super) mcp: Boundary,
    /// The delegations the `agents:` mocks answered (see `a2a`).
    pub(super) a2a: Tasks,
    /// The known clients whose requests were recorded, by name.
    pub(super) clients: BTreeSet<&'static str>,
    /// Model requests so far, and per turn (faulted ones included).
    model_requests: usize,
    turn_requests: BTreeMap<Option<usize>, usize>,
}

/// The delegations to remote agents the `agents:` mocks answered: how many each agent
/// had, and the tasks they made, by id (`GetTask` finds them).
#[derive(Debug, Default)]
pub(super) struct Tasks {
    pub calls: HashMap<String, usize>,
    pub tasks: HashMap<String, serde_json::Value>,
}

/// A model request, counted: its number in the case (from 1), its turn, and its number
/// in that turn.
#[derive(Debug, Clone, Copy)]
pub(super) struct Counted {
    pub nth: usize,
    pub turn: Option<usize>,
    pub nth_in_turn: usize,
}

impl Proxy {
    pub fn new(mut opts: Options) -> Proxy {
        // The faults, the fuzz arguments and the crash point live with their state.
        let faults = Faults::new(std::mem::take(&mut opts.faults), opts.fuzz.take());
        let crash = Crash::new(opts.crash.take());
        let replayed =
            (opts.replay.as_ref()).map_or_else(Default::default, |rp| rp.other_hosts().clone());
        let egress = Gate::new(
            std::mem::take(&mut opts.egress),
            opts.upstream.clone(),
            replayed,
            opts.max_body,
        );
        let egress = Arc::new(egress);
        if opts.upstream.is_some() {
            super::pages::off_while_recording();
        }
        Proxy {
            opts,
            state: Mutex::default(),
            seq: AtomicU64::new(0),
            tasks: TaskTracker::new(),
            turn: AtomicUsize::new(NO_TURN),
            faults,
            crash,
            egress,
        }
    }

    /// Stamp the exchanges that arrive from now on with this turn.
    pub fn set_turn(&self, turn: usize) {
        self.turn.store(turn, Ordering::SeqCst);
    }

    pub(super) fn current_turn(&self) -> Option<usize> {
        Some(self.turn.load(Ordering::SeqCst)).filter(|t| *t != NO_TURN)
    }

    /// Count a model request (every report counts them, faulted ones included).
    pub(super) fn count_model_request(&self) -> Counted {
        let turn = self.current_turn();
        let mut st = self.lock();
        st.model_requests += 1;
        let nth = st.model_requests;
        let in_turn = st.turn_requests.entry(turn).or_default();
        *in_turn += 1;
        Counted {
            nth,
            turn,
            nth_in_turn: *in_turn,
        }
    }

    /// The `nth` model request has been answered with `resp`: what a fault's report says
    /// the program did next, and a crash test's point when it names that request.
    pub(super) fn answered(&self, nth: usize, resp: &Response<ProxyBody>) {
        self.faults.answered(nth, resp);
        self.crash.after_request(nth);
    }

    /// Whether exchanges are kept: for the log, or for the mocks' tool calls.
    fn keeps_exchanges(&self) -> bool {
        self.opts.log_exchanges || self.opts.mocks.is_some()
    }

    /// The recording `it` was served to the request numbered `seq`, which arrived in
    /// `turn` with the results of the calls `mocked` written by mocks: log the exchange.
    /// `arrived` is the request when it may differ from the recording (lenient replay),
    /// so a caller sees what the program sent.
    pub(super) fn served(
        &self,
        seq: u64,
        it: &Interaction,
        turn: Option<usize>,
        mocked: &[String],
        arrived: Option<&Exchange>,
    ) {
        if !self.keeps_exchanges() {
            // Not kept, but a crash test's point may be this exchange.
            self.crash.after_exchange(it);
            return;
        }
        let mut served = it.clone();
        served.turn = turn;
        served.mocked = mocked.to_vec();
        if let Some(ex) = arrived {
            served.request.method = ex.method.to_string();
            served.request.path = ex.path.clone();
            served.request.body = ex.stored.clone();
        }
        self.note_exchange(seq, &served);
    }

    /// A new recording of the request numbered `seq`: logged, and kept for the cassette.
    pub(super) fn recorded(&self, seq: u64, mut it: Interaction) {
        self.note_exchange(seq, &it);
        // Held until the cassette is written: as text, a fraction of the trees.
        it.compact();
        self.lock().recorded.push((seq, it));
    }

    /// Remember a finished exchange: in the log, and its tool calls for later mocks.
    fn note_exchange(&self, seq: u64, it: &Interaction) {
        self.crash.after_exchange(it);
        if !self.keeps_exchanges() {
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

    /// The body of a request a boundary relay (an MCP server's, an agent's) received, read
    /// whole up to `--max-body-size`; past it, why (`who`'s), which is one of the session's
    /// upstream errors: what could not be read is missing from the recording.
    pub(super) async fn read_body(
        &self,
        body: hyper::body::Incoming,
        who: &str,
    ) -> Result<bytes::Bytes, String> {
        use http_body_util::BodyExt;
        match http_body_util::Limited::new(body, self.opts.max_body)
            .collect()
            .await
        {
            Ok(b) => Ok(b.to_bytes()),
            Err(e) => {
                let why =
                    format!("{who}: a request body could not be read ({e}); raise --max-body-size");
                self.lock().upstream_errors.push(why.clone());
                Err(why)
            }
        }
    }

    /// Run `rewrite` (a dialect's rewrite of the tool results in a request) with the
    /// session's mocks: calls looked up among those seen this session, a tool some MCP
    /// server listed left to that server. The ids of the calls whose results were
    /// mocked; `None` without mocks.
    pub(super) fn mock_results(
        &self,
        rewrite: impl FnOnce(
            &dyn Fn(&str) -> Option<ToolCall>,
            &mut dyn FnMut(&ToolCall, usize) -> Option<serde_json::Value>,
        ) -> usize,
    ) -> Option<Vec<String>> {
        let mocks = self.opts.mocks.as_ref()?;
        let mut mocked = Vec::new();
        let lookup = |id: &str| self.known_call(id);
        let mut mock = |c: &ToolCall, n| {
            let result = (!self.is_mcp_tool(&c.name))
                .then(|| mocks(c, n).result())
                .flatten();
            if result.is_some() {
                mocked.push(c.id.clone());
            }
            result
        };
        rewrite(&lookup, &mut mock);
        Some(mocked)
    }

    pub(super) fn known_call(&self, id: &str) -> Option<ToolCall> {
        self.lock().calls.get(id).cloned()
    }

    /// A tool some MCP server listed this session: mocked where it executes, at the MCP
    /// boundary, not in what the model is told.
    pub(super) fn is_mcp_tool(&self, name: &str) -> bool {
        self.lock().mcp.lists(name)
    }

    /// Take what the session recorded and missed. Call after the server returned (as
    /// `Session::stop` does).
    pub fn outcome(&self) -> Outcome {
        let mut st = self.lock();
        let mut recorded = std::mem::take(&mut st.recorded);
        recorded.sort_by_key(|(seq, _)| *seq);
        let mut exchanges = std::mem::take(&mut st.exchanges);
        exchanges.sort_by_key(|(seq, _)| *seq);
        let faults = self.faults.outcome(&st.turn_requests);
        // The log has the answer as the program got it; the cassette keeps the real one.
        // Both say which call was spoiled.
        for (seq, it) in &mut exchanges {
            if let Some((nth, how, _)) = faults.spoiled.get(seq) {
                fault::as_served(it, *nth, how);
            }
        }
        for (seq, it) in exchanges.iter_mut().chain(recorded.iter_mut()) {
            if let Some((nth, _, by)) = faults.spoiled.get(seq) {
                it.spoiled = Some(Spoiled {
                    call: *nth,
                    fault: by.clone(),
                });
            }
        }
        Outcome {
            recorded: recorded.into_iter().map(|(_, i)| i).collect(),
            crash: self.crash.outcome(exchanges.iter().map(|(seq, _)| *seq)),
            exchanges: exchanges.into_iter().map(|(_, i)| i).collect(),
            misses: std::mem::take(&mut st.misses),
            near_misses: std::mem::take(&mut st.near_misses),
            egress: self.egress.take_log(),
            missed_turns: std::mem::take(&mut st.missed_turns),
            upstream_errors: std::mem::take(&mut st.upstream_errors),
            rejected: std::mem::take(&mut st.rejected),
            unused: self
                .opts
                .replay
                .as_ref()
                .map(|r| r.unused())
                .unwrap_or_default(),
            requests: self.requests(),
            mcp: st.mcp.outcome(),
            model_requests: std::mem::take(&mut st.turn_requests),
            faults: faults.told,
            clients: std::mem::take(&mut st.clients),
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
        usize::try_from(self.arrivals()).unwrap_or(usize::MAX)
    }

    /// The number the next request to arrive will get.
    pub(super) fn arrivals(&self) -> u64 {
        self.seq.load(Ordering::Relaxed)
    }

    pub(super) fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// The state lock; a panic elsewhere must not lose the recording, so poisoning is ignored.
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
