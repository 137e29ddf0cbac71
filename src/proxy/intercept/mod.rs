//! What interception needs beside the tunnel itself (`proxy::tunnel`): the session's
//! certificate [`Authority`], the count of traffic to other hosts ([`Egress`]) and the
//! bound on open tunnels.

pub mod ca;

pub use ca::Authority;

use std::sync::Arc;

/// Tunnels through the forward proxy to one host.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Egress {
    /// Tunnels to a provider's host, intercepted and served as its base URL is.
    pub intercepted: usize,
    /// Tunnels to another host passed through while recording.
    pub passed: usize,
    /// Tunnels to a host the run allows (`--allow-host`, `egress.allow`), in any mode.
    pub allowed: usize,
    /// Tunnels refused (in a replay).
    pub refused: usize,
}

/// The variables that name a trust store, and the clients that read them: OpenSSL and
/// httpx, requests, curl, Node (added to its own roots). The program's are the session's
/// bundle; the files agentproxy's own name are in it.
pub const TRUST_VARS: [&str; 4] = [
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
];

/// The mark of a request that came through an intercepted tunnel: the provider whose
/// host it was sent to, and that host as a base URL (`https://host[:port]`), which the
/// request is recorded from unless the provider's upstream was given.
#[derive(Debug, Clone)]
pub struct Intercepted {
    pub provider: crate::dialect::Provider,
    pub origin: String,
}

/// `host:port` as reports name it: with the telemetry service it belongs to, if known
/// (`api.smith.langchain.com:443 (LangSmith telemetry)`).
pub fn label(host_port: &str) -> String {
    let host = host_port.rsplit_once(':').map_or(host_port, |(h, _)| h);
    match crate::dialect::telemetry_of(host) {
        Some(name) => format!("{host_port} ({name} telemetry)"),
        None => host_port.to_owned(),
    }
}

/// What became of one tunnel to another host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passage {
    Intercepted,
    Passed,
    Allowed,
    Refused,
}

/// The most tunnels open at once; more are refused (a runaway client cannot exhaust the
/// proxy's descriptors).
pub const MAX_TUNNELS: usize = 512;

/// The semaphore that bounds the open tunnels.
pub(crate) fn tunnels() -> Arc<tokio::sync::Semaphore> {
    Arc::new(tokio::sync::Semaphore::new(MAX_TUNNELS))
}
