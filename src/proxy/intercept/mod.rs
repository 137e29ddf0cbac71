//! What interception needs beside the tunnel itself (`proxy::tunnel`): the session's
//! certificate [`Authority`], the count of traffic to other hosts ([`Egress`]) and the
//! bound on open tunnels.

pub mod ca;

pub use ca::Authority;

use std::collections::BTreeMap;
use std::sync::Arc;

/// Tunnels through the forward proxy to one host.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Egress {
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

/// The variables that name a trust store, and the clients that read them: OpenSSL and
/// httpx, requests, curl, Node (added to its own roots). The program's are the session's
/// bundle; the files agentproxy's own name are in it.
pub const TRUST_VARS: [&str; 4] = [
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
];

/// The mark of a request that came through an intercepted tunnel (or in absolute form to
/// another host whose traffic is recorded): the provider whose host it was sent to, and
/// that host as a base URL (`https://host[:port]`), which the request is recorded from
/// unless the provider's upstream was given. `provider: None`: another host's request,
/// recorded and replayed as plain HTTP under its whole URL.
#[derive(Debug, Clone)]
pub struct Intercepted {
    pub provider: Option<crate::dialect::Provider>,
    pub origin: String,
}

impl Intercepted {
    /// The mark of traffic to `host` (as a URI writes it) at `port`, which the program
    /// spoke over `scheme`: another host's is recorded from where it went; a provider's
    /// always over HTTPS (port 80 as 443), so its key never crosses the network in
    /// plain text, whatever the program did.
    pub fn of(
        provider: Option<crate::dialect::Provider>,
        scheme: &str,
        host: &str,
        port: u16,
    ) -> Intercepted {
        let origin = match (provider, port) {
            (None, _) => origin(scheme, host, port),
            (Some(_), 80) => origin("https", host, 443),
            (Some(_), _) => origin("https", host, port),
        };
        Intercepted { provider, origin }
    }
}

/// The base URL of `host` (as a URI writes it: an IPv6 address in brackets) at `port`
/// over `scheme`, its default port left out.
fn origin(scheme: &str, host: &str, port: u16) -> String {
    // Host names are compared lowercased (a TLS server name and a name lookup come so).
    let host = host.to_ascii_lowercase();
    match (scheme, port) {
        ("https", 443) | ("http", 80) => format!("{scheme}://{host}"),
        _ => format!("{scheme}://{host}:{port}"),
    }
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

/// The `host:port` of a request recorded under its whole URL (another host's, see
/// [`Intercepted`]); `None` for a path, as requests to the proxy itself are recorded.
pub fn host_port(path: &str) -> Option<String> {
    if !(path.starts_with("https://") || path.starts_with("http://")) {
        return None;
    }
    let uri = path.parse::<http::Uri>().ok()?;
    let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
        Some("https") => 443,
        _ => 80,
    });
    Some(format!("{}:{port}", uri.host()?.to_ascii_lowercase()))
}

/// How many hosts a session's egress log names one by one: the traffic to any further
/// host is counted under [`OTHER_HOSTS`], so a program that reaches thousands costs the
/// log, the summaries and `--json` no more than this many entries.
pub const NAMED_HOSTS: usize = 256;

/// The egress log's key for the hosts beyond the first [`NAMED_HOSTS`].
pub const OTHER_HOSTS: &str = "*";

/// The key `host` is counted under in a session's egress log: its own while the log names
/// fewer than [`NAMED_HOSTS`] hosts (or already names it), [`OTHER_HOSTS`] after.
pub fn log_key<'a>(log: &BTreeMap<String, Egress>, host: &'a str) -> &'a str {
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
    Direct,
    LookedUp,
    Loopback,
}

/// The most tunnels open at once; more are refused (a runaway client cannot exhaust the
/// proxy's descriptors).
pub const MAX_TUNNELS: usize = 512;

/// The semaphore that bounds the open tunnels.
pub(crate) fn tunnels() -> Arc<tokio::sync::Semaphore> {
    Arc::new(tokio::sync::Semaphore::new(MAX_TUNNELS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_egress_log_names_a_bounded_number_of_hosts() {
        let mut log: BTreeMap<String, Egress> = BTreeMap::new();
        for n in 0..NAMED_HOSTS + 100 {
            let host = format!("h{n:05}.test:443");
            log.entry(log_key(&log, &host).to_owned())
                .or_default()
                .passed += 1;
        }
        assert_eq!(log.len(), NAMED_HOSTS + 1);
        assert_eq!(log[OTHER_HOSTS].passed, 100);
        // A host it names goes on being counted as itself.
        let first = "h00000.test:443";
        assert_eq!(log_key(&log, first), first);
        assert_eq!(log_key(&log, "new.test:443"), OTHER_HOSTS);
        assert_eq!(
            label(OTHER_HOSTS),
            format!("other hosts (beyond the first {NAMED_HOSTS})")
        );
    }

    #[test]
    fn a_whole_url_names_its_host_and_port_and_a_path_none() {
        for (path, host) in [
            (
                "https://api.weather.test/v1?q=1",
                Some("api.weather.test:443"),
            ),
            ("http://127.0.0.1:8080/", Some("127.0.0.1:8080")),
            ("http://db.test/x", Some("db.test:80")),
            ("https://[::1]:9/x", Some("[::1]:9")),
            ("https://API.Weather.test/x", Some("api.weather.test:443")),
            ("/v1/chat/completions", None),
            ("httpx://odd.test/", None),
        ] {
            assert_eq!(host_port(path).as_deref(), host, "{path}");
        }
        assert_eq!(origin("https", "a.test", 443), "https://a.test");
        assert!(never_recorded("OAuth2.googleapis.com.") && never_recorded("169.254.169.254"));
        assert!(
            never_recorded("sts.us-east-1.sts.amazonaws.com")
                && !never_recorded("api.weather.test")
        );
        assert_eq!(origin("http", "[::1]", 8080), "http://[::1]:8080");
        let openai = Some(crate::dialect::Provider::OpenAi);
        assert_eq!(
            Intercepted::of(openai, "http", "api.openai.com", 80).origin,
            "https://api.openai.com"
        );
        assert_eq!(
            Intercepted::of(openai, "http", "api.openai.com", 443).origin,
            "https://api.openai.com"
        );
        assert_eq!(
            Intercepted::of(None, "http", "db.test", 8080).origin,
            "http://db.test:8080"
        );
    }
}
