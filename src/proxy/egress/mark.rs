//! The mark on a request the proxy took from the program's egress (an intercepted tunnel,
//! a direct connection, plain HTTP in absolute form), and where such a request is
//! recorded.

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

#[cfg(test)]
mod tests {
    use super::*;

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
