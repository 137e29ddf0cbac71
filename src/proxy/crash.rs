//! A crash test's side of the session: when the crash point has passed (the case's N-th
//! model request answered, or a tool executed at the MCP boundary), the next request the
//! program makes is held unanswered, and whoever drives the program is told to kill it.
//! Holding makes the crash deterministic: the program is blocked on that request when it
//! dies, whatever it did in between, and the request is neither forwarded, recorded nor
//! served, so a replay crashes at the same point.

use std::sync::Mutex;

use http::Response;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::body::{disconnect, ProxyBody};
use crate::cassette::Interaction;
use crate::fault::CrashPoint;

/// The crash of one session: its point, what happened, and the signals between a holding
/// request and the driver of the program.
pub(super) struct Crash {
    pub(super) point: Option<CrashPoint>,
    state: Mutex<State>,
    /// A request is held: kill the program (a permit, so it is not missed).
    held: Notify,
    /// The program is dead: the held request may end.
    released: CancellationToken,
}

#[derive(Default)]
struct State {
    crashed: Crashed,
    /// The arrival number the held request would have had.
    seq: u64,
}

/// What the crash did, once the session is over.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Crashed {
    /// The point passed.
    pub passed: bool,
    /// The request the program was killed waiting for, if it made one after the point.
    pub held: Option<Held>,
    /// How many of the session's exchanges (in arrival order) came before the held
    /// request: the first run's.
    pub before: usize,
}

/// The request a crash held.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    /// `POST /v1/chat/completions`.
    pub request: String,
    /// The turn it came in (0-based), under the test runner.
    pub turn: Option<usize>,
}

impl Crash {
    /// A session's crash at `point`; with none, nothing is ever held.
    pub(super) fn new(point: Option<CrashPoint>) -> Crash {
        Crash {
            point,
            state: Mutex::default(),
            held: Notify::new(),
            released: CancellationToken::new(),
        }
    }

    /// The point has passed if `nth` (the model request just answered) is its request.
    pub(super) fn after_request(&self, nth: usize) {
        if self.point == Some(CrashPoint::Request(nth)) {
            self.lock().crashed.passed = true;
        }
    }

    /// The point has passed if `it` is an execution of its tool.
    pub(super) fn after_exchange(&self, it: &Interaction) {
        let Some(CrashPoint::Executed(tool)) = &self.point else {
            return;
        };
        if it.execution().is_some_and(|e| &e.tool == tool) {
            self.lock().crashed.passed = true;
        }
    }

    /// Hold a request (`request` names it: `METHOD path`; it arrives in `turn` as the
    /// `seq`-th request) if it is the first after the point: tell the driver, wait until
    /// the program is dead, and close the connection. `None`: not held, serve it.
    pub(super) async fn hold(
        &self,
        request: impl FnOnce() -> String,
        turn: Option<usize>,
        seq: u64,
    ) -> Option<Response<ProxyBody>> {
        self.point.as_ref()?;
        {
            let mut st = self.lock();
            if !st.crashed.passed || st.crashed.held.is_some() {
                return None;
            }
            let request = request();
            st.crashed.held = Some(Held { request, turn });
            // Exchanges are numbered on arrival: the first run's are numbered below this.
            st.seq = seq;
        }
        self.held.notify_one();
        self.released.cancelled().await;
        Some(disconnect())
    }

    /// Resolves once a request is held: the program is to be killed.
    pub(super) async fn held(&self) {
        self.held.notified().await;
    }

    /// The program is dead (or the session ends): a held request ends.
    pub(super) fn release(&self) {
        self.released.cancel();
    }

    /// What the crash did, given the arrival numbers of the session's exchanges in order;
    /// `None` without a crash point.
    pub(super) fn outcome(&self, arrivals: impl Iterator<Item = u64>) -> Option<Crashed> {
        self.point.as_ref()?;
        let mut st = std::mem::take(&mut *self.lock());
        if st.crashed.held.is_some() {
            st.crashed.before = arrivals.filter(|seq| *seq < st.seq).count();
        }
        Some(st.crashed)
    }

    /// The state lock; a panic elsewhere must not lose the outcome, so poisoning is ignored.
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
