//! The containment policy: what becomes of the program's traffic to a host the proxy
//! does not stand in for as its base URL. Pure.

use std::collections::HashSet;

use super::log::Passage;
use crate::dialect::{self, KnownClient};
use crate::spec::HostPattern;

/// What a session's run lets through.
#[derive(Debug, Default)]
pub(super) struct Policy {
    /// Other hosts the run lets the program reach (`--allow-host`, `egress.allow`).
    pub allow: Vec<HostPattern>,
    /// The session records (it has an upstream).
    pub recording: bool,
    /// Other hosts' traffic is recorded as plain HTTP (`--record-other-hosts`).
    pub record_other_hosts: bool,
    /// The other hosts (`host:port`) whose traffic the cassette holds: replayed.
    pub replayed: HashSet<String>,
    /// The known clients whose side traffic a replay refuses without failing.
    pub side: Vec<&'static KnownClient>,
}

/// What becomes of traffic to `host` (as a URI writes it) at `port`.
pub(super) enum Fate {
    /// Served by the proxy: a provider's host as that provider's base URL; another host
    /// (`None`) as plain HTTP under its whole URL, recorded (`--record-other-hosts`) or
    /// replayed from the cassette.
    Intercept(Option<dialect::Provider>),
    /// Passed through as it is, not recorded: while recording, or to an allowed host.
    Pass(Passage),
    /// Refused with `403`.
    Refuse(Refusal),
}

/// Why traffic to another host is refused.
pub(super) enum Refusal {
    /// A replay reaches no other host.
    Outside,
    /// The side traffic of the known client that recorded the cassette: refused without
    /// failing the replay.
    Side(&'static KnownClient),
    /// While recording, a contained program reaches none of the host's own loopback
    /// services through the proxy (a database, a Docker port, another agentproxy) unless
    /// allowed.
    Loopback,
}

impl Refusal {
    /// How the log counts it.
    pub(super) fn passage(&self) -> Passage {
        match self {
            Refusal::Outside => Passage::Refused,
            Refusal::Side(_) => Passage::Side,
            Refusal::Loopback => Passage::Loopback,
        }
    }

    /// What the refusal of `name` (`host:port`) says.
    pub(super) fn why(&self, name: &str) -> String {
        match self {
            Refusal::Outside => format!("agentproxy: {name} is outside the cassette: a replay reaches no host but the model APIs it serves (allow it with --allow-host or the spec's egress.allow, or record it with --record-other-hosts)"),
            Refusal::Side(client) => format!("agentproxy: {name} is {}'s side traffic ({}): a replay refuses it without failing", client.name, client.side_why),
            Refusal::Loopback => format!("agentproxy: {name} is the host's own loopback: a contained program does not reach the host's services through the proxy (allow it with --allow-host {name} or the spec's egress.allow)"),
        }
    }
}

impl Policy {
    /// The ports of the host's loopback the run allows, in order, but `own`.
    pub(super) fn loopback_ports(&self, own: u16) -> Vec<u16> {
        let mut ports: Vec<u16> = (self.allow.iter())
            .filter_map(|p| p.loopback_port())
            .filter(|p| *p != own)
            .collect();
        ports.sort_unstable();
        ports.dedup();
        ports
    }

    /// The fate of traffic to `host` (as a URI writes it) at `port`, from a program that
    /// runs `contained` or not.
    pub(super) fn fate(&self, host: &str, port: u16, contained: bool) -> Fate {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Some(provider) = dialect::provider_of_host(bare) {
            return Fate::Intercept(Some(provider));
        }
        if self.allow.iter().any(|p| p.matches(bare, port)) {
            return Fate::Pass(Passage::Allowed);
        }
        let recording = self.recording;
        // While recording (a replay refuses what its cassette does not hold anyway).
        if recording && contained && is_loopback(bare) {
            return Fate::Refuse(Refusal::Loopback);
        }
        if recording && never_recorded(bare) {
            return Fate::Pass(Passage::Passed);
        }
        let replayed = (self.replayed).contains(&format!("{}:{port}", host.to_ascii_lowercase()));
        if replayed || (recording && self.record_other_hosts) {
            return Fate::Intercept(None);
        }
        if recording {
            return Fate::Pass(Passage::Passed);
        }
        let host = bare.trim_end_matches('.').to_ascii_lowercase();
        match (self.side.iter()).find(|c| c.side.contains(&host.as_str())) {
            Some(client) => Fate::Refuse(Refusal::Side(client)),
            None => Fate::Refuse(Refusal::Outside),
        }
    }
}

/// Is `host` (bare, as a URI writes it) the machine's own: a loopback or unspecified
/// address (`0.0.0.0` reaches the host too), `localhost` or a name under it?
pub(super) fn is_loopback(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| {
            let ip = ip.to_canonical();
            ip.is_loopback() || ip.is_unspecified()
        })
}

/// Hosts whose traffic holds credentials in its bodies (OAuth token endpoints, cloud
/// metadata services): `--record-other-hosts` passes them through instead of writing the
/// tokens into a cassette.
const NEVER_RECORDED: [&str; 7] = [
    "oauth2.googleapis.com",
    "accounts.google.com",
    "login.microsoftonline.com",
    "sts.amazonaws.com",
    "metadata.google.internal",
    "169.254.169.254",
    "fd00:ec2::254",
];

/// Is `host` one whose traffic is never recorded (see [`NEVER_RECORDED`])?
pub fn never_recorded(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    NEVER_RECORDED.contains(&host.as_str()) || host.ends_with(".sts.amazonaws.com")
}

#[cfg(test)]
mod tests {
    use super::{is_loopback, never_recorded, Fate, Passage, Policy, Refusal};
    use crate::dialect::openai_responses::CODEX;

    /// A replay of a Codex cassette refuses Codex's side traffic without failing, and
    /// every other host as any replay does; recording passes them all.
    #[test]
    fn a_replay_refuses_its_recorded_clients_side_traffic_without_failing() {
        let replay = Policy {
            side: vec![&CODEX],
            ..Policy::default()
        };
        assert!(
            matches!(replay.fate("GitHub.com.", 443, true), Fate::Refuse(Refusal::Side(c)) if c.name == "Codex CLI")
        );
        assert!(matches!(
            replay.fate("api.weather.test", 443, true),
            Fate::Refuse(Refusal::Outside)
        ));
        assert!(matches!(
            Policy::default().fate("github.com", 443, true),
            Fate::Refuse(Refusal::Outside)
        ));
        let recording = Policy {
            recording: true,
            side: vec![&CODEX],
            ..Policy::default()
        };
        assert!(matches!(
            recording.fate("github.com", 443, true),
            Fate::Pass(Passage::Passed)
        ));
    }

    #[test]
    fn the_hosts_own_addresses_are_loopback() {
        for host in [
            "127.0.0.1",
            "127.8.9.10",
            "::1",
            "::ffff:127.0.0.1",
            "0.0.0.0",
            "::",
            "localhost",
            "LOCALHOST.",
            "db.localhost",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in [
            "127.0.0.1.test",
            "api.openai.com",
            "localhost.test",
            "mylocalhost",
        ] {
            assert!(!is_loopback(host), "{host}");
        }
    }

    #[test]
    fn credential_hosts_are_never_recorded() {
        assert!(never_recorded("OAuth2.googleapis.com.") && never_recorded("169.254.169.254"));
        assert!(
            never_recorded("sts.us-east-1.sts.amazonaws.com")
                && !never_recorded("api.weather.test")
        );
    }
}
