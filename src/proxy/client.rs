//! The one way agentproxy builds an outbound HTTP client, whatever it talks to (the
//! upstream while recording, an OTLP collector, serve's and the stand-ins' control
//! requests, a URL app): HTTP/1.1 and HTTP/2, `http://` and `https://`, no Nagle (a stream
//! is many small writes), idle connections kept a minute, and one trust store: the
//! built-in web roots plus the certificates of the file `SSL_CERT_FILE` and the
//! directories `SSL_CERT_DIR` name in agentproxy's environment (a private CA, a company's
//! TLS-inspecting proxy), as OpenSSL-based clients read them. Each use bounds its own
//! request in time.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::pki_types::{pem::PemObject, CertificateDer};

pub type Client = hyper_util::client::legacy::Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A new client (its own connection pool) with the process's trust store.
pub fn new() -> Client {
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    http.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls().as_ref().clone())
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(Duration::from_secs(60))
        .timer(TokioTimer::new())
        .build(connector)
}

/// The TLS configuration every client shares, made once per process.
fn tls() -> Arc<rustls::ClientConfig> {
    static TLS: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    TLS.get_or_init(|| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_root_certificates(roots())
            .with_no_client_auth();
        Arc::new(config)
    })
    .clone()
}

/// The built-in web roots and the certificates of `SSL_CERT_FILE` and `SSL_CERT_DIR`; a
/// file or directory that holds none is named in a warning, and the rest still trusted.
fn roots() -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(file) = var("SSL_CERT_FILE") {
        let added = read_pem(Path::new(&file)).map(|c| roots.add_parsable_certificates(c).0);
        warn_unless_added("SSL_CERT_FILE", Path::new(&file), added);
    }
    for dir in var("SSL_CERT_DIR").iter().flat_map(std::env::split_paths) {
        let added = std::fs::read_dir(&dir).map(|entries| {
            (entries.flatten())
                .filter_map(|e| read_pem(&e.path()).ok())
                .map(|c| roots.add_parsable_certificates(c).0)
                .sum()
        });
        warn_unless_added("SSL_CERT_DIR", &dir, added);
    }
    roots
}

/// The PEM certificates in `file` (none for a file that holds other things).
fn read_pem(file: &Path) -> std::io::Result<Vec<CertificateDer<'static>>> {
    let certs: Result<Vec<_>, _> = CertificateDer::pem_file_iter(file).and_then(|c| c.collect());
    certs.map_err(|e| std::io::Error::other(e.to_string()))
}

fn warn_unless_added(var: &str, path: &Path, added: std::io::Result<usize>) {
    let path = path.display();
    match added {
        Ok(n) if n > 0 => {}
        Ok(_) => tell!("agentproxy: warning: {var}={path}: no certificate in it; agentproxy trusts the built-in roots and the others named only"),
        Err(e) => tell!("agentproxy: warning: {var}={path}: {e}; agentproxy trusts the built-in roots and the others named only"),
    }
}

/// A WebSocket to a server: over TCP for `ws://`, TLS (the same trust store) for `wss://`.
pub(crate) type WebSocket = tokio_tungstenite::WebSocketStream<
    tokio_util::either::Either<
        tokio::net::TcpStream,
        tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    >,
>;

/// The server's answer to a WebSocket handshake.
pub(crate) type Handshake = http::Response<Option<Vec<u8>>>;

/// Why a WebSocket was not opened.
pub(crate) enum DialError {
    /// The server answered the handshake with something other than `101`.
    Refused(Handshake),
    /// No answer: unreachable, TLS, a broken handshake or `timeout`.
    Failed(String),
}

/// Open the WebSocket `req` asks for (its URI `ws://` or `wss://`, its headers sent as
/// they are), the connection and the handshake bounded by `timeout`.
pub(crate) async fn websocket(
    req: http::Request<()>,
    config: tokio_tungstenite::tungstenite::protocol::WebSocketConfig,
    timeout: Duration,
) -> Result<(WebSocket, Handshake), DialError> {
    use tokio_tungstenite::tungstenite::Error;
    use tokio_util::either::Either;
    let failed = |e: &dyn std::fmt::Display| DialError::Failed(e.to_string());
    let uri = req.uri().clone();
    let host = uri.host().ok_or_else(|| failed(&"the URL has no host"))?;
    let host = host.trim_matches(['[', ']']).to_owned();
    let tls = match uri.scheme_str() {
        Some("wss") => true,
        Some("ws") => false,
        other => return Err(failed(&format!("{other:?} is not a WebSocket scheme"))),
    };
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let open = async {
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| failed(&e))?;
        let _ = tcp.set_nodelay(true);
        let stream = match tls {
            false => Either::Left(tcp),
            true => {
                let name = rustls::pki_types::ServerName::try_from(host.clone())
                    .map_err(|e| failed(&e))?;
                let tls = tokio_rustls::TlsConnector::from(self::tls());
                Either::Right(tls.connect(name, tcp).await.map_err(|e| failed(&e))?)
            }
        };
        match tokio_tungstenite::client_async_with_config(req, stream, Some(config)).await {
            Ok(opened) => Ok(opened),
            Err(Error::Http(answer)) => Err(DialError::Refused(*answer)),
            Err(e) => Err(failed(&e)),
        }
    };
    match tokio::time::timeout(timeout, open).await {
        Ok(opened) => opened,
        Err(_) => Err(failed(&format!(
            "no answer within {}",
            humantime::format_duration(timeout)
        ))),
    }
}
