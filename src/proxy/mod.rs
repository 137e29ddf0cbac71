//! The proxy: shared state of one session (what to serve, where to forward, what was
//! recorded and missed) and the HTTP layers around it.

mod body;
mod record;
mod replay;
pub mod server;
mod service;
pub mod upstream;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tokio_util::task::TaskTracker;

use crate::cassette::Interaction;
use crate::matching::index::{Index, Repeat};
use crate::matching::normalize::Rules;
use crate::redact::Secrets;
use upstream::Upstream;

/// What a session serves from a cassette.
pub struct Replay {
    pub interactions: Vec<Interaction>,
    index: Mutex<Index>,
    /// Serve streams paced by their recorded latency.
    pub realtime: bool,
}

impl Replay {
    /// Keys must already be computed under the rules the session matches with.
    pub fn new(interactions: Vec<Interaction>, repeat: Repeat, realtime: bool) -> Replay {
        let index = Index::new(interactions.iter().map(|i| i.key.as_str()), repeat);
        Replay {
            interactions,
            index: Mutex::new(index),
            realtime,
        }
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
}

pub struct Proxy {
    opts: Options,
    state: Mutex<State>,
    /// Arrival order of requests, so the cassette lists interactions in a stable order.
    seq: AtomicU64,
    /// Upstream exchanges that must finish (and be recorded) before the cassette is written.
    tasks: TaskTracker,
}

#[derive(Default)]
struct State {
    recorded: Vec<(u64, Interaction)>,
    misses: Vec<String>,
    upstream_errors: Vec<String>,
    requests: usize,
}

/// What a session did, read once it has drained.
#[derive(Debug, Default)]
pub struct Outcome {
    /// New recordings, in request arrival order.
    pub recorded: Vec<Interaction>,
    /// One report per missed request.
    pub misses: Vec<String>,
    pub upstream_errors: Vec<String>,
    /// Replayable interactions never served, as `#3 POST /v1/chat/completions (openai.chat)`.
    pub unused: Vec<String>,
    /// Requests that reached the proxy, served or not.
    pub requests: usize,
}

impl Proxy {
    pub fn new(opts: Options) -> Proxy {
        Proxy {
            opts,
            state: Mutex::default(),
            seq: AtomicU64::new(0),
            tasks: TaskTracker::new(),
        }
    }

    /// The interactions being replayed, if any.
    pub fn replay(&self) -> Option<&Replay> {
        self.opts.replay.as_ref()
    }

    /// Take what the session recorded and missed. Call after [`server::serve`] returned.
    pub fn outcome(&self) -> Outcome {
        let mut st = self.lock();
        let mut recorded = std::mem::take(&mut st.recorded);
        recorded.sort_by_key(|(seq, _)| *seq);
        let unused = match &self.opts.replay {
            Some(r) => {
                let positions = r.index.lock().map(|ix| ix.unused()).unwrap_or_default();
                positions
                    .into_iter()
                    .map(|pos| {
                        let it = &r.interactions[pos];
                        format!("#{pos} {} {} ({})", it.request.method, it.request.path, it.route)
                    })
                    .collect()
            }
            None => vec![],
        };
        Outcome {
            recorded: recorded.into_iter().map(|(_, i)| i).collect(),
            misses: std::mem::take(&mut st.misses),
            upstream_errors: std::mem::take(&mut st.upstream_errors),
            unused,
            requests: st.requests,
        }
    }

    fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// The state lock; a panic elsewhere must not lose the recording, so poisoning is ignored.
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
