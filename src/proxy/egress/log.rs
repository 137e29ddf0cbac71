//! The egress log: what became of the program's traffic to each host the proxy does not
//! stand in for, counted by host (at most [`NAMED_HOSTS`] named one by one).

use std::collections::BTreeMap;

/// Tunnels through the forward proxy to one host.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// Tunnels (and plain requests) intercepted and served by the proxy: to a provider's
    /// host, served as its base URL is; to another host whose traffic is recorded
    /// (`--record-other-hosts`) or replayed from the cassette, as plain HTTP.
    pub intercepted: usize,
    /// Tunnels to another host passed through while recording.
    pub passed: usize,
    /// Tunnels to a host the run allows (`--allow-host`, `egress.allow`), in any mode.
    pub allowed: usize,
    /// Tunnels refused (in a replay).
    pub refused: usize,
    /// Tunnels refused in a replay without failing it: the side traffic of the known
    /// client that recorded the cassette (Codex CLI's plugin sync).
    pub side: usize,
    /// Connections a contained program made directly, ignoring the proxy variables,
    /// refused (those to a host the proxy serves are intercepted).
    pub direct: usize,
    /// Address lookups of this name by a contained program (each answered with its
    /// loopback): traffic that did not go through the proxy variables.
    pub looked_up: usize,
    /// Tunnels (and plain requests) to the host's own loopback a contained program asked
    /// the proxy for while recording, refused unless allowed (a replay counts them as
    /// `refused`).
    pub loopback: usize,
}

/// How many hosts a session's egress log names one by one: the traffic to any further
/// host is counted under [`OTHER_HOSTS`], so a program that reaches thousands costs the
/// log, the summaries and `--json` no more than this many entries.
pub const NAMED_HOSTS: usize = 256;

/// The egress log's key for the hosts beyond the first [`NAMED_HOSTS`].
pub const OTHER_HOSTS: &str = "*";

/// The key `host` is counted under in a session's egress log: its own while the log names
/// fewer than [`NAMED_HOSTS`] hosts (or already names it), [`OTHER_HOSTS`] after.
fn log_key<'a>(log: &BTreeMap<String, Counts>, host: &'a str) -> &'a str {
    let named = log.len() - usize::from(log.contains_key(OTHER_HOSTS));
    match named < NAMED_HOSTS || log.contains_key(host) {
        true => host,
        false => OTHER_HOSTS,
    }
}

/// `host:port` as reports name it: with the telemetry service it belongs to, if known
/// (`api.smith.langchain.com:443 (LangSmith telemetry)`).
pub fn label(host_port: &str) -> String {
    if host_port == OTHER_HOSTS {
        return format!("other hosts (beyond the first {NAMED_HOSTS})");
    }
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
    Side,
    Direct,
    LookedUp,
    Loopback,
}

/// A session's egress log, by `host:port`.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct Log(BTreeMap<String, Counts>);

impl Log {
    /// Count one `passage` of traffic to `host` (`host:port`).
    pub fn note(&mut self, host: &str, passage: Passage) {
        let key = log_key(&self.0, host).to_owned();
        let e = self.0.entry(key).or_default();
        *match passage {
            Passage::Intercepted => &mut e.intercepted,
            Passage::Passed => &mut e.passed,
            Passage::Allowed => &mut e.allowed,
            Passage::Refused => &mut e.refused,
            Passage::Side => &mut e.side,
            Passage::Direct => &mut e.direct,
            Passage::LookedUp => &mut e.looked_up,
            Passage::Loopback => &mut e.loopback,
        } += 1;
    }

    /// Each host and what became of its traffic, in host order ([`OTHER_HOSTS`] first).
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Counts)> {
        self.0.iter()
    }

    pub fn get(&self, host: &str) -> Option<&Counts> {
        self.0.get(host)
    }

    /// Connections refused because the run may not make them (outside the cassette, or
    /// direct): each fails a replay.
    pub fn refused(&self) -> usize {
        self.0.values().map(|e| e.refused + e.direct).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_egress_log_names_a_bounded_number_of_hosts() {
        let mut log = Log::default();
        for n in 0..NAMED_HOSTS + 100 {
            log.note(&format!("h{n:05}.test:443"), Passage::Passed);
        }
        assert_eq!(log.0.len(), NAMED_HOSTS + 1);
        assert_eq!(log.0[OTHER_HOSTS].passed, 100);
        // A host it names goes on being counted as itself.
        let first = "h00000.test:443";
        assert_eq!(log_key(&log.0, first), first);
        assert_eq!(log_key(&log.0, "new.test:443"), OTHER_HOSTS);
        assert_eq!(
            label(OTHER_HOSTS),
            format!("other hosts (beyond the first {NAMED_HOSTS})")
        );
    }
}
