//! The upstream client: a pooled hyper client with rustls, fixed base URLs chosen at start
//! (a request can never pick its own upstream: no open relay; the forward proxy of a
//! session that started a program, `proxy::tunnel`, reaches the hosts the provider table
//! names, and others only for that program, while recording or when allowed), and a
//! header timeout.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;

use crate::cassette::format::Upstreams;
use crate::dialect::Provider;

/// Headers that describe one hop, not the message, plus the ones the proxy recomputes.
const NOT_FORWARDED: [&str; 11] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "accept-encoding",
];

#[derive(Clone)]
pub struct Upstream {
    client: super::client::Client,
    /// The bases, without a trailing `/`.
    bases: Upstreams,
    timeout: Duration,
    /// This proxy's mark on what it forwards to a loopback upstream (see [`HOP_HEADER`]).
    hop: String,
}

/// The header a proxy puts on a request it forwards to a loopback address, with a value
/// of its own: a request that arrives carrying its own value has gone round in a circle
/// (an upstream, or an `--mcp` server, pointing at the proxy itself).
pub const HOP_HEADER: &str = "x-agentproxy-hop";

/// The header on the answer to a request that came round: the proxy that forwarded it
/// reports an upstream failure rather than recording the answer.
pub const LOOP_HEADER: &str = "x-agentproxy-loop";

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("upstream {url} did not answer within {secs}s")]
    Timeout { url: String, secs: u64 },
    #[error("failed to reach upstream {url}: {message}")]
    Unreachable { url: String, message: String },
    /// The provider has no upstream (Azure OpenAI when no endpoint is known).
    #[error("no {title} upstream to record from: {how}")]
    Missing { title: &'static str, how: String },
    #[error("upstream {url} is this proxy itself: the request came back to it (point the upstream elsewhere)")]
    Loop { url: String },
    /// A signed request (AWS SigV4) that agentproxy cannot keep valid upstream: not sent.
    #[error("cannot send the request to {url}: {message}")]
    Signature { url: String, message: String },
    /// The request carries agentproxy's placeholder key: not sent.
    #[error("the request carries agentproxy's placeholder key (given because the environment had none), so it was not sent to the real API: set {vars} to record")]
    Placeholder { vars: String },
}

/// How to give `provider` an upstream: its flag, and the variable it falls back to.
fn missing_how(provider: Provider) -> String {
    let row = provider.row();
    let flag = format!("pass --upstream {}=URL", row.name);
    match &row.fallback {
        crate::dialect::Fallback::Env { var, .. } => format!("{flag} or set {var}"),
        crate::dialect::Fallback::Url(_) => flag,
        crate::dialect::Fallback::Request { says, .. } => {
            format!(
                "{flag}; by default it is {}, which this request does not name",
                says.to_lowercase()
            )
        }
    }
}

/// The upstream a provider records from when nothing gives one (`""`: none).
fn default_base(provider: Provider) -> &'static str {
    match provider.row().fallback {
        crate::dialect::Fallback::Url(url) => url,
        crate::dialect::Fallback::Env { or, .. } => or.unwrap_or_default(),
        crate::dialect::Fallback::Request { .. } => "",
    }
}

/// An upstream base URL that cannot be used.
impl UpstreamError {
    /// The same error naming `url` instead: the URL as stored, for messages and reports
    /// (the URL as sent may carry a key in its query).
    pub fn naming(self, url: String) -> UpstreamError {
        match self {
            UpstreamError::Timeout { secs, .. } => UpstreamError::Timeout { url, secs },
            UpstreamError::Unreachable { message, .. } => {
                UpstreamError::Unreachable { url, message }
            }
            unnamed @ (UpstreamError::Missing { .. } | UpstreamError::Placeholder { .. }) => {
                unnamed
            }
            UpstreamError::Loop { .. } => UpstreamError::Loop { url },
            UpstreamError::Signature { message, .. } => UpstreamError::Signature { url, message },
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("invalid upstream URL `{url}`: {reason}")]
pub struct InvalidUpstream {
    pub url: String,
    pub reason: String,
}

impl Upstream {
    /// A client for the provider bases in `bases`, each checked to be an http(s) URL.
    pub fn new(bases: &Upstreams, timeout: Duration) -> Result<Upstream, InvalidUpstream> {
        for base in bases.0.values().filter(|b| !b.is_empty()) {
            let invalid = |reason: String| InvalidUpstream {
                url: base.to_owned(),
                reason,
            };
            // A base is joined with the request's path and query: a query or fragment of
            // its own would end up in the middle of the URL.
            if base.contains(['?', '#']) {
                return Err(invalid(
                    "it must not have a query or fragment; give the base URL only".to_owned(),
                ));
            }
            let uri: Uri = base.parse().map_err(|e| invalid(format!("{e}")))?;
            if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
                return Err(invalid(
                    "it must be http:// or https:// with a host".to_owned(),
                ));
            }
        }
        let client = super::client::new();
        Ok(Upstream {
            client,
            bases: Upstreams(
                (bases.0.iter())
                    .map(|(name, base)| (name.clone(), base.trim_end_matches('/').to_owned()))
                    .collect(),
            ),
            timeout,
            hop: super::secret::new_secret().unwrap_or_else(|_| std::process::id().to_string()),
        })
    }

    /// Did this request come from this proxy (`HOP_HEADER` with our mark)?
    pub fn came_back(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(HOP_HEADER)
            .iter()
            .any(|v| v.as_bytes() == self.hop.as_bytes())
    }

    /// How long to wait for the response head, and for each chunk of a body after it.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The full upstream URL for a request path: the provider's base joined with the path,
    /// so a base with a prefix (`https://host/api`) keeps it. A request through an
    /// intercepted tunnel (`origin`, the provider's host it was sent to) goes to that host
    /// unless the provider's upstream was given (a flag or a variable, not its default).
    /// Another host's request, whose path is its whole URL, goes there.
    pub fn url_for(
        &self,
        provider: Provider,
        origin: Option<&str>,
        path_and_query: &str,
    ) -> Result<String, UpstreamError> {
        if path_and_query.starts_with("https://") || path_and_query.starts_with("http://") {
            return Ok(path_and_query.to_owned());
        }
        let base = self.bases.of(provider);
        let given = !base.is_empty() && base != default_base(provider);
        match (origin, base) {
            (Some(origin), _) if !given => Ok(format!("{origin}{path_and_query}")),
            (_, "") => Err(UpstreamError::Missing {
                title: provider.row().title,
                how: missing_how(provider),
            }),
            (_, base) => Ok(format!("{base}{path_and_query}")),
        }
    }

    /// Send one request; the timeout covers connecting and the response head (the caller
    /// bounds each chunk of the body after it the same way).
    pub async fn send(
        &self,
        method: http::Method,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let unreachable = |message: String| UpstreamError::Unreachable {
            url: url.to_owned(),
            message,
        };
        let mut req = Request::builder()
            .method(method)
            .uri(url)
            .body(Full::new(body.clone()))
            .map_err(|e| unreachable(e.to_string()))?;
        let out = req.headers_mut();
        for (name, value) in headers {
            if !NOT_FORWARDED.contains(&name.as_str()) {
                out.append(name.clone(), value.clone());
            }
        }
        if is_loopback(url) {
            if let Ok(hop) = HeaderValue::from_str(&self.hop) {
                out.append(HOP_HEADER, hop);
            }
        }
        // Ask for an uncompressed answer: it is what gets stored, and decoding is then only
        // a fallback for servers that compress anyway.
        out.insert(
            http::header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
        super::sigv4::keep_valid(&mut req, headers, &body).map_err(|message| {
            UpstreamError::Signature {
                url: url.to_owned(),
                message,
            }
        })?;
        match tokio::time::timeout(self.timeout, self.client.request(req)).await {
            Err(_) => Err(UpstreamError::Timeout {
                url: url.to_owned(),
                secs: self.timeout.as_secs(),
            }),
            Ok(Err(e)) => Err(unreachable(error_chain(&e))),
            Ok(Ok(resp)) if resp.headers().contains_key(LOOP_HEADER) => Err(UpstreamError::Loop {
                url: url.to_owned(),
            }),
            Ok(Ok(resp)) => Ok(resp),
        }
    }
}

impl Upstream {
    /// Open the WebSocket at `url` (an `http(s)://` URL, dialled as `ws(s)://`) with the
    /// program's `headers`, less a hop's own and the handshake's (made again here, with
    /// no extension offered: frames are relayed and recorded as they are sent).
    pub(crate) async fn dial(
        &self,
        url: &str,
        headers: &HeaderMap,
        config: tokio_tungstenite::tungstenite::protocol::WebSocketConfig,
    ) -> Result<(super::client::WebSocket, super::client::Handshake), super::client::DialError>
    {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let ws_url = match url.split_once("://") {
            Some(("https", rest)) => format!("wss://{rest}"),
            Some(("http", rest)) => format!("ws://{rest}"),
            _ => url.to_owned(),
        };
        let mut req = (ws_url.as_str().into_client_request())
            .map_err(|e| super::client::DialError::Failed(e.to_string()))?;
        let out = req.headers_mut();
        for (name, value) in headers {
            let name_str = name.as_str();
            let handshake =
                name_str.starts_with("sec-websocket-") && name_str != "sec-websocket-protocol";
            if !NOT_FORWARDED.contains(&name_str) && !handshake {
                out.append(name.clone(), value.clone());
            }
        }
        if is_loopback(url) {
            if let Ok(hop) = HeaderValue::from_str(&self.hop) {
                out.append(HOP_HEADER, hop);
            }
        }
        super::client::websocket(req, config, self.timeout).await
    }
}

/// Is `url`'s host this machine (a loopback address or `localhost`)? Only there can a
/// request come back to the proxy; nothing is added to what goes elsewhere.
fn is_loopback(url: &str) -> bool {
    let Ok(uri) = url.parse::<Uri>() else {
        return false;
    };
    let host = uri.host().unwrap_or_default().trim_matches(['[', ']']);
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified())
}

/// `e: cause: cause…` — hyper's top-level messages alone ("client error (Connect)") say little.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An intercepted request goes to the host it was sent to, unless the provider's
    /// upstream was given; a base-URL request to the provider's upstream.
    #[test]
    fn an_intercepted_request_goes_to_its_host_unless_the_upstream_was_given() {
        let mut bases = Upstreams::default();
        bases.set(Provider::OpenAi, "https://api.openai.com");
        bases.set(Provider::Azure, "http://127.0.0.1:9");
        bases.set(Provider::Ollama, "http://127.0.0.1:11434");
        let up = Upstream::new(&bases, Duration::from_secs(1)).unwrap();
        let path = "/v1/chat/completions";
        let url = |p, origin| up.url_for(p, origin, path).unwrap();
        // OpenAI's upstream is its default: the host asked for (a gateway of the table).
        assert_eq!(
            url(Provider::OpenAi, Some("https://api.openai.com")),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            url(Provider::OpenAi, None),
            "https://api.openai.com/v1/chat/completions"
        );
        // Given (a flag or a variable): it wins, as for a fake in a test.
        assert_eq!(
            url(Provider::Azure, Some("https://res.openai.azure.com")),
            "http://127.0.0.1:9/v1/chat/completions"
        );
        // Ollama's default is the local server; ollama.com asked for goes to ollama.com.
        assert_eq!(
            url(Provider::Ollama, Some("https://ollama.com")),
            "https://ollama.com/v1/chat/completions"
        );
        assert_eq!(
            url(Provider::Ollama, None),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        // No upstream at all: the host asked for, or the missing one named.
        let none = Upstream::new(&Upstreams::default(), Duration::from_secs(1)).unwrap();
        assert_eq!(
            none.url_for(Provider::Azure, Some("https://res.openai.azure.com"), path)
                .unwrap(),
            "https://res.openai.azure.com/v1/chat/completions"
        );
        assert!(none.url_for(Provider::Azure, None, path).is_err());
    }
}
