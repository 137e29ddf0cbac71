//! The session's egress gate: what the run lets through (its options and policy) and
//! what went through (its log), shared by the forward proxy, the direct connections of a
//! contained program and the session that reads the log at its end.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::ca::{Authority, CaError};
use super::log::{Log, Passage};
use super::policy::{Fate, Policy};
use crate::dialect::KnownClient;
use crate::proxy::upstream::Upstream;
use crate::spec::HostPattern;

/// What a run asks of the program's egress (a `runner::plan::Setup` holds one).
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Serve as the program's forward proxy, intercepting the provider hosts' HTTPS: on
    /// for a program agentproxy starts on loopback.
    pub intercept: bool,
    /// Other hosts the program may reach in any mode (`--allow-host`, `egress.allow`).
    pub allow: Vec<HostPattern>,
    /// Record other hosts' traffic as plain HTTP (`--record-other-hosts`, `egress.record`).
    pub record_other_hosts: bool,
}

impl Setup {
    /// The session's options: with interception, an authority made now that may vouch
    /// for the names `scope` gives (any, for `None`).
    pub fn options(self, scope: impl FnOnce() -> Option<Vec<String>>) -> Result<Options, CaError> {
        let authority = match self.intercept {
            true => Some(Arc::new(Authority::new(scope().as_deref())?)),
            false => None,
        };
        Ok(Options {
            authority,
            allow: self.allow,
            record_other_hosts: self.record_other_hosts,
            side: Vec::new(),
        })
    }
}

/// What a session is asked to do with the program's egress (made by [`Setup::options`]).
#[derive(Default)]
pub struct Options {
    /// Be the program's forward proxy, intercepting TLS with this authority's
    /// certificates; `None`: no forward proxy (a session that started no program on
    /// loopback relays for no one).
    pub authority: Option<Arc<Authority>>,
    /// Other hosts the program may reach in any mode (`--allow-host`, `egress.allow`).
    pub allow: Vec<HostPattern>,
    /// Record other hosts' traffic as plain HTTP (`--record-other-hosts`, `egress.record`).
    pub record_other_hosts: bool,
    /// The known clients whose side traffic a replay refuses without failing: those the
    /// cassette was recorded from.
    pub side: Vec<&'static KnownClient>,
}

/// The most tunnels open at once; more are refused (a runaway client cannot exhaust the
/// proxy's descriptors).
pub const MAX_TUNNELS: usize = 512;

/// The semaphore that bounds the open tunnels.
pub(crate) fn tunnels() -> Arc<tokio::sync::Semaphore> {
    Arc::new(tokio::sync::Semaphore::new(MAX_TUNNELS))
}

/// One session's egress.
pub struct Gate {
    pub(super) authority: Option<Arc<Authority>>,
    policy: Policy,
    /// The session's upstream client, for plain requests passed to another host (a replay
    /// makes one of its own for an allowed host).
    pub(super) upstream: Option<Upstream>,
    /// The request body limit (`--max-body-size`).
    pub(super) max_body: usize,
    /// Bounds the open tunnels and direct connections.
    pub(super) tunnels: Arc<tokio::sync::Semaphore>,
    log: Mutex<Log>,
    /// The program runs contained, and reaches the proxy on a listener inside its
    /// namespace: the proxy's own listener on the host is then no forward proxy.
    contained: AtomicBool,
    /// The port the session listens on, once bound: a request in absolute form to it on
    /// loopback is for the proxy itself.
    port: OnceLock<u16>,
}

impl Gate {
    /// The gate of a session with `options`, which records through `upstream` (when
    /// given) and replays a cassette holding the other hosts `replayed`.
    pub(crate) fn new(
        options: Options,
        upstream: Option<Upstream>,
        replayed: HashSet<String>,
        max_body: usize,
    ) -> Gate {
        Gate {
            authority: options.authority,
            policy: Policy {
                allow: options.allow,
                recording: upstream.is_some(),
                record_other_hosts: options.record_other_hosts,
                replayed,
                side: options.side,
            },
            upstream,
            max_body,
            tunnels: tunnels(),
            log: Mutex::default(),
            contained: AtomicBool::new(false),
            port: OnceLock::new(),
        }
    }

    /// The TLS configuration that presents the session's own address `host` a
    /// certificate of its authority, when it has one.
    pub(crate) fn own_tls(&self, host: &str) -> Option<Arc<rustls::ServerConfig>> {
        let authority = self.authority.as_ref()?;
        match authority.server_config(host) {
            Ok(config) => Some(config),
            Err(e) => {
                tracing::warn!(
                    "no certificate for {host}: {e}; TLS to the session's port is refused"
                );
                None
            }
        }
    }

    /// Count one `passage` of traffic to `host` (`host:port`).
    pub(crate) fn note(&self, host: &str, passage: Passage) {
        self.lock().note(host, passage);
    }

    /// The fate of traffic to `host` (as a URI writes it) at `port`.
    pub(super) fn fate(&self, host: &str, port: u16) -> Fate {
        self.policy.fate(host, port, self.contained())
    }

    /// The log so far, emptied (the session's end reads it once).
    pub(crate) fn take_log(&self) -> Log {
        std::mem::take(&mut *self.lock())
    }

    /// The program runs contained from now on (see [`Gate::contained`]).
    pub(crate) fn set_contained(&self) {
        self.contained.store(true, Ordering::SeqCst);
    }

    pub(super) fn contained(&self) -> bool {
        self.contained.load(Ordering::SeqCst)
    }

    /// The session listens on `port`.
    pub(crate) fn set_port(&self, port: u16) {
        let _ = self.port.set(port);
    }

    /// Is `port` the session's own (or not known yet)?
    pub(super) fn is_own_port(&self, port: u16) -> bool {
        self.port.get().is_none_or(|p| *p == port)
    }

    /// The ports of the host's loopback the run allows (`--allow-host 127.0.0.1:PORT`, a
    /// spec's `egress.allow`), but the session's `own`.
    pub(crate) fn loopback_ports(&self, own: u16) -> Vec<u16> {
        self.policy.loopback_ports(own)
    }

    /// The log lock; a panic elsewhere must not lose what was counted.
    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }
}
