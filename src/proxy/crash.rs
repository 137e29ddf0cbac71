//! A crash test's side of the session: when the crash point has passed (the case's N-th
//! model request answered, or a tool executed at the MCP boundary), the next request the
//! program makes is held unanswered, and whoever drives the program is told to kill it.
//! Holding makes the crash deterministic: the program is blocked on that request when it
//! dies, whatever it did in between, and the request is neither forwarded, recorded nor
//! served, so a replay crashes at the same point.

use http::Response;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::body::ProxyBody;
use super::Proxy;
use crate::cassette::Interaction;
use crate::fault::CrashPoint;

/// The signals between a holding request and the driver of the program.
#[derive(Default)]
pub(super) struct Signals {
    /// A request is held: kill the program (a permit, so it is not missed).
    held: Notify,
    /// The program is dead: the held request may end.
    released: CancellationToken,
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

impl Proxy {
    /// The point has passed if `nth` (the model request just answered) is its request.
    pub(super) fn crash_after_request(&self, nth: usize) {
        if self.opts.crash == Some(CrashPoint::Request(nth)) {
            self.lock().crash.passed = true;
        }
    }

    /// The point has passed if `it` is an execution of its tool.
    pub(super) fn crash_after_exchange(&self, it: &Interaction) {
        let Some(CrashPoint::Executed(tool)) = &self.opts.crash else {
            return;
        };
        if it.execution().is_some_and(|e| &e.tool == tool) {
            self.lock().crash.passed = true;
        }
    }

    /// Hold `request` (`METHOD path`) if it is the first to arrive after the point: tell
    /// the driver, wait until the program is dead, and close the connection. `None`: not
    /// held, serve it.
    pub(super) async fn crash_hold(&self, request: String) -> Option<Response<ProxyBody>> {
        {
            let mut st = self.lock();
            if !st.crash.passed || st.crash.held.is_some() {
                return None;
            }
            st.crash.held = Some(Held {
                request,
                turn: self.current_turn(),
            });
            // Exchanges are numbered on arrival: the first run's are numbered below this.
            st.crash_seq = self.seq.load(std::sync::atomic::Ordering::Relaxed);
        }
        self.crash_signals.held.notify_one();
        self.crash_signals.released.cancelled().await;
        Some(super::fault::disconnect())
    }

    /// Resolves once a request is held: the program is to be killed.
    pub(super) async fn crash_held(&self) {
        self.crash_signals.held.notified().await;
    }

    /// The program is dead (or the session ends): a held request ends.
    pub(super) fn crash_release(&self) {
        self.crash_signals.released.cancel();
    }
}
