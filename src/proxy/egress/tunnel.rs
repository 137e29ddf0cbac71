//! The proxy as the program's forward proxy (`HTTPS_PROXY`, `HTTP_PROXY`), in a session
//! that started the program on loopback (elsewhere it is no forward proxy): a `CONNECT`
//! to a provider's host (the provider table's `hosts`) is answered with a certificate of
//! the session's authority and the decrypted requests are served exactly as base-URL
//! traffic is (recorded, replayed, mocked, faulted), as that provider's; a tunnel to any
//! other host is passed through while recording or when the run allows the host, refused
//! in a replay otherwise, and named either way.

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::AsyncBufReadExt;
use tower::Layer;

use super::gate::{Gate, MAX_TUNNELS};
use super::log::Passage;
use super::mark::Intercepted;
use super::policy::Fate;
use crate::cassette::format::Upstreams;
use crate::proxy::body::{header_timeout, text, ProxyBody};
use crate::proxy::conn;
use crate::proxy::step::{self, call, handler, Arrival, Handler};
use crate::proxy::upstream::Upstream;

/// The forward proxy as a layer: a `CONNECT` opens a tunnel, a request in absolute form to
/// another host is forwarded, refused or served as that host's; any other request goes on.
pub(crate) fn layer(
    gate: &Arc<Gate>,
    arrival: Arrival,
) -> impl Layer<Handler, Service = Handler> + Clone {
    let gate = gate.clone();
    step::layer(move |next: Handler| forward(gate.clone(), arrival, next))
}

/// The forward proxy's step for requests that arrive as `arrival` says, `next` the rest of
/// the stack (which a tunnel's requests go down too).
fn forward(gate: Arc<Gate>, arrival: Arrival, next: Handler) -> Handler {
    handler(move |mut req: Request<Incoming>| {
        let (gate, next) = (gate.clone(), next.clone());
        async move {
            if req.method() != Method::CONNECT && req.uri().authority().is_none() {
                return call(next, req).await;
            }
            // Once its program runs contained (reaching the proxy inside its namespace), the
            // proxy's own listener is no forward proxy: another process on the host may not
            // relay through it, nor have its traffic named as the program's.
            if arrival == Arrival::Host && gate.contained() {
                return text(
                    StatusCode::METHOD_NOT_ALLOWED,
                    format!(
                        "agentproxy: {}: the program runs contained and reaches the proxy inside its namespace; this listener is not a forward proxy",
                        req.uri()
                    ),
                );
            }
            if req.method() == Method::CONNECT {
                // The tunnel's requests come back through the layers below this one.
                let tunneled = forward(gate.clone(), Arrival::Program, next);
                return connect(gate, req, tunneled).await;
            }
            match plain_elsewhere(&gate, &req) {
                Some(Plain::Refused(refused)) => refused,
                Some(Plain::Forward(name, passage)) => {
                    forward_plain(gate, req, (name, passage)).await
                }
                Some(Plain::Serve(mark)) => {
                    req.extensions_mut().insert(mark);
                    call(next, req).await
                }
                None => call(next, req).await,
            }
        }
    })
}

/// Answer a `CONNECT host:port`; an intercepted tunnel's requests are answered by `serve`.
async fn connect(
    gate: Arc<Gate>,
    mut req: Request<Incoming>,
    serve: Handler,
) -> Response<ProxyBody> {
    let Some(target) = req.uri().authority().cloned() else {
        return text(
            StatusCode::BAD_REQUEST,
            "CONNECT needs host:port".to_owned(),
        );
    };
    let host = (target.host().trim_start_matches('[').trim_end_matches(']')).to_owned();
    let port = target.port_u16().unwrap_or(443);
    let Some(authority) = gate.authority.clone() else {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("CONNECT {target}: this session is not a forward proxy"),
        );
    };
    let Some(permit) = gate.tunnels.clone().try_acquire_owned().ok() else {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("CONNECT {target}: more than {MAX_TUNNELS} tunnels are open"),
        );
    };
    let upgrade = hyper::upgrade::on(&mut req);
    let name = format!("{host}:{port}");
    match gate.fate(target.host(), port) {
        Fate::Intercept(provider) => {
            let config = match authority.server_config(&host) {
                Ok(c) => c,
                Err(e) => return text(StatusCode::BAD_GATEWAY, format!("CONNECT {target}: {e}")),
            };
            gate.note(&name, Passage::Intercepted);
            let uri_host = target.host().to_owned();
            // Another host's tunnel that turns out not to carry HTTP is passed through
            // while recording (a database, a mail server).
            let recording = gate.upstream.is_some();
            let other = (provider.is_none() && recording).then(|| (host.clone(), port));
            tokio::spawn(async move {
                let _permit = permit;
                let Ok(upgraded) = upgrade.await else { return };
                let tunnel = Tunnel {
                    gate,
                    serve,
                    host,
                    other,
                    mark: move |scheme: &str| Intercepted::of(provider, scheme, &uri_host, port),
                };
                tunnel.serve(upgraded, config).await;
            });
            text(StatusCode::OK, String::new())
        }
        Fate::Refuse(refusal) => {
            gate.note(&name, refusal.passage());
            text(StatusCode::FORBIDDEN, refusal.why(&name))
        }
        Fate::Pass(passage) => {
            let mut remote = match tokio::net::TcpStream::connect((host.as_str(), port)).await {
                Ok(s) => s,
                Err(e) => return text(StatusCode::BAD_GATEWAY, format!("CONNECT {name}: {e}")),
            };
            gate.note(&name, passage);
            tokio::spawn(async move {
                let _permit = permit;
                let Ok(upgraded) = upgrade.await else { return };
                let _ =
                    tokio::io::copy_bidirectional(&mut TokioIo::new(upgraded), &mut remote).await;
            });
            text(StatusCode::OK, String::new())
        }
    }
}

/// An intercepted tunnel: its requests are served by `serve`, each marked as `mark` says
/// for the scheme the program spoke in it.
pub(super) struct Tunnel<M> {
    pub gate: Arc<Gate>,
    pub serve: Handler,
    pub host: String,
    /// Another host's `host:port`, recorded: where the tunnel is passed through when what
    /// the program says in it is not HTTP (nor TLS).
    pub other: Option<(String, u16)>,
    pub mark: M,
}

impl<M: Fn(&str) -> Intercepted + Send + Sync + 'static> Tunnel<M> {
    /// Serve what the program says in the tunnel: TLS (its first byte a handshake record)
    /// answered with the session's certificate for the host, else plain HTTP (a client
    /// that tunnels `http://`); to another host recorded, anything else (or silence: a
    /// server that speaks first) is passed through as it is.
    async fn serve(self, upgraded: hyper::upgrade::Upgraded, config: Arc<rustls::ServerConfig>) {
        let host = self.host.clone();
        let mut io = tokio::io::BufReader::new(TokioIo::new(upgraded));
        // A client that opens a tunnel and says nothing gives its place back; to another
        // host, it may wait for the server to speak first: passed through soon.
        let wait = match self.other {
            Some(_) => OTHER_FIRST_BYTE,
            None => header_timeout(),
        };
        let first = match tokio::time::timeout(wait, io.fill_buf()).await {
            Ok(Ok([first, ..])) => Some(*first),
            Ok(_) => return,
            Err(_) if self.other.is_some() => None,
            Err(_) => {
                tracing::warn!(
                    "the program opened a tunnel to {host} and said nothing within {:?}",
                    header_timeout()
                );
                return;
            }
        };
        let speaks_http = first.is_some_and(|b| b.is_ascii_uppercase());
        match (first, &self.other) {
            (Some(TLS_HANDSHAKE), _) => {}
            (_, Some((other, port))) if !speaks_http => {
                // Not HTTP: as it is, not recorded.
                let name = format!("{other}:{port}");
                self.gate.note(&name, Passage::Passed);
                if let Ok(mut remote) =
                    tokio::net::TcpStream::connect((other.as_str(), *port)).await
                {
                    let _ = tokio::io::copy_bidirectional(&mut io, &mut remote).await;
                }
                return;
            }
            _ => return self.http(io, "http").await,
        }
        let handshake = tokio_rustls::TlsAcceptor::from(config).accept(io);
        match tokio::time::timeout(header_timeout(), handshake).await {
            Ok(Ok(tls)) => self.http(tls, "https").await,
            Err(_) => tracing::warn!("the program began TLS with {host} and did not finish it within {:?}", header_timeout()),
            // Most often a client that pins certificates or trusts only its own.
            Ok(Err(e)) => tracing::warn!("TLS with the program for {host} failed: {e} (does it trust the session's CA, or pin certificates?)"),
        }
    }

    /// Serve HTTP on `io`, each request marked as sent over `scheme`.
    pub(super) async fn http<I>(self, io: I, scheme: &str)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let mark = (self.mark)(scheme);
        let serve = self.serve;
        // Each request is the provider's whose host it was sent to, whatever its path.
        let svc = conn::answering(move |mut req: Request<Incoming>| {
            req.extensions_mut().insert(mark.clone());
            call(serve.clone(), req)
        });
        let builder = conn::builder();
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), svc);
        if let Err(e) = conn.await {
            tracing::debug!(
                "intercepted connection to {} ended with an error: {e}",
                self.host
            );
        }
    }
}

/// How long a tunnel to another host, recorded, waits for the program's first byte before
/// it is taken for a protocol whose server speaks first, and passed through.
const OTHER_FIRST_BYTE: std::time::Duration = std::time::Duration::from_secs(1);

/// The first byte of a TLS connection (a handshake record).
pub(super) const TLS_HANDSHAKE: u8 = 0x16;

/// What becomes of a plain `http://` request sent to the proxy as a forward proxy (its
/// target in absolute form) for a host that is not a provider's.
enum Plain {
    /// Forwarded to `host:port` as it is (while recording, or to an allowed host), and
    /// named as it passes.
    Forward(String, Passage),
    /// Served by the proxy as plain HTTP under its whole URL (recorded or replayed), with
    /// this mark.
    Serve(Intercepted),
    /// Refused: the answer, the host named.
    Refused(Response<ProxyBody>),
}

/// [`Plain`] for a request in absolute form to another host; `None` for any other
/// request (origin form, a provider's host, the proxy's own loopback address).
fn plain_elsewhere<B>(gate: &Gate, req: &Request<B>) -> Option<Plain> {
    let target = req.uri().authority()?;
    // HTTP/2 names its target in every request; the proxy's own loopback address is
    // its base URL.
    let host = target.host().trim_start_matches('[').trim_end_matches(']');
    let scheme = req.uri().scheme_str().unwrap_or("http");
    let port = target.port_u16().unwrap_or(match scheme {
        "https" => 443,
        _ => 80,
    });
    let own = super::policy::is_loopback(host) && gate.is_own_port(port);
    if own || crate::dialect::provider_of_host(host).is_some() {
        return None;
    }
    let name = format!("{host}:{port}");
    if gate.authority.is_none() {
        // Not a session that started a program: no forward proxy, no relay for anyone.
        return Some(Plain::Refused(text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("agentproxy: {name}: this session is not a forward proxy"),
        )));
    }
    Some(match gate.fate(target.host(), port) {
        Fate::Intercept(provider) => {
            gate.note(&name, Passage::Intercepted);
            Plain::Serve(Intercepted::of(provider, scheme, target.host(), port))
        }
        Fate::Pass(passage) => Plain::Forward(name, passage),
        Fate::Refuse(refusal) => {
            gate.note(&name, refusal.passage());
            Plain::Refused(text(StatusCode::FORBIDDEN, refusal.why(&name)))
        }
    })
}

/// Forward a plain `http://` request to another host (`name`) as it is: not recorded,
/// named (as a tunnel is) as `passage` says.
async fn forward_plain(
    gate: Arc<Gate>,
    req: Request<Incoming>,
    (name, passage): (String, Passage),
) -> Response<ProxyBody> {
    // A replay has no upstream client: an allowed host gets one of its own.
    let own;
    let up = match gate.upstream.as_ref() {
        Some(up) => up,
        None => match Upstream::new(&Upstreams::default(), header_timeout()) {
            Ok(up) => {
                own = up;
                &own
            }
            Err(e) => return text(StatusCode::BAD_GATEWAY, format!("agentproxy: {e}")),
        },
    };
    let (parts, body) = req.into_parts();
    let body = match crate::proxy::body::read_request_body(body, gate.max_body).await {
        Ok(b) => b,
        Err(_) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!(
                "agentproxy: the request to {name} could not be read (or was over --max-body-size)"
            ),
            )
        }
    };
    gate.note(&name, passage);
    let url = parts.uri.to_string();
    match up.send(parts.method, &url, &parts.headers, body).await {
        Ok(resp) => resp.map(|b| b.map_err(std::io::Error::other).boxed()),
        Err(e) => text(StatusCode::BAD_GATEWAY, format!("agentproxy: {e}")),
    }
}
