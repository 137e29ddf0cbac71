//! The proxy as the program's forward proxy (`HTTPS_PROXY`, `HTTP_PROXY`), in a session
//! that started the program on loopback (elsewhere it is no forward proxy): a `CONNECT`
//! to a provider's host (the provider table's `hosts`) is answered with a certificate of
//! the session's authority and the decrypted requests are served exactly as base-URL
//! traffic is (recorded, replayed, mocked, faulted), as that provider's; a tunnel to any
//! other host is passed through while recording or when the run allows the host, refused
//! in a replay otherwise, and named either way.

use std::sync::Arc;

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

use super::body::{ProxyBody, HEADER_READ_TIMEOUT};
use super::conn::{self, Answer};
use super::intercept::{Intercepted, Passage, MAX_TUNNELS};
use super::state::Proxy;
use super::upstream::Upstream;
use crate::cassette::format::Upstreams;
use crate::dialect;

/// Answer a `CONNECT host:port`; an intercepted tunnel's requests are answered by `serve`.
pub(super) async fn connect(
    proxy: Arc<Proxy>,
    mut req: Request<Incoming>,
    serve: fn(Arc<Proxy>, Request<Incoming>) -> Answer,
) -> Response<ProxyBody> {
    let Some(target) = req.uri().authority().cloned() else {
        return text(
            StatusCode::BAD_REQUEST,
            "CONNECT needs host:port".to_owned(),
        );
    };
    let host = (target.host().trim_start_matches('[').trim_end_matches(']')).to_owned();
    let port = target.port_u16().unwrap_or(443);
    let Some(authority) = proxy.opts.intercept.clone() else {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("CONNECT {target}: this session is not a forward proxy"),
        );
    };
    let Some(permit) = proxy.tunnels.clone().try_acquire_owned().ok() else {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("CONNECT {target}: more than {MAX_TUNNELS} tunnels are open"),
        );
    };
    let upgrade = hyper::upgrade::on(&mut req);
    if let Some(provider) = dialect::provider_of_host(&host) {
        let origin = match port {
            443 => format!("https://{host}"),
            _ => format!("https://{host}:{port}"),
        };
        let mark = Intercepted { provider, origin };
        let config = match authority.server_config(&host) {
            Ok(c) => c,
            Err(e) => return text(StatusCode::BAD_GATEWAY, format!("CONNECT {target}: {e}")),
        };
        proxy.note_egress(&format!("{host}:{port}"), Passage::Intercepted);
        tokio::spawn(async move {
            let _permit = permit;
            let Ok(upgraded) = upgrade.await else { return };
            let handshake = tokio_rustls::TlsAcceptor::from(config).accept(TokioIo::new(upgraded));
            // A client that opens a tunnel and says nothing gives its place back.
            let tls = match tokio::time::timeout(HEADER_READ_TIMEOUT, handshake).await {
                Err(_) => {
                    tracing::warn!("the program opened a tunnel to {host} and began no TLS within {HEADER_READ_TIMEOUT:?}");
                    return;
                }
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    // Most often a client that pins certificates or trusts only its own.
                    tracing::warn!("TLS with the program for {host} failed: {e} (does it trust the session's CA, or pin certificates?)");
                    return;
                }
            };
            // Each request is the provider's whose host it was sent to, whatever its path.
            let svc = conn::answering(move |mut req: Request<Incoming>| {
                req.extensions_mut().insert(mark.clone());
                serve(proxy.clone(), req)
            });
            let builder = conn::builder();
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), svc);
            if let Err(e) = conn.await {
                tracing::debug!("intercepted connection to {host} ended with an error: {e}");
            }
        });
        return text(StatusCode::OK, String::new());
    }
    let name = format!("{host}:{port}");
    let allowed = proxy.opts.allow.iter().any(|p| p.matches(&host, port));
    if proxy.opts.upstream.is_none() && !allowed {
        proxy.note_egress(&name, Passage::Refused);
        return text(
            StatusCode::FORBIDDEN,
            format!("agentproxy: {name} is outside the cassette: a replay reaches no host but the model APIs it serves (allow it with --allow-host or the spec's egress.allow)"),
        );
    }
    let mut remote = match tokio::net::TcpStream::connect((host.as_str(), port)).await {
        Ok(s) => s,
        Err(e) => return text(StatusCode::BAD_GATEWAY, format!("CONNECT {name}: {e}")),
    };
    proxy.note_egress(
        &name,
        if allowed {
            Passage::Allowed
        } else {
            Passage::Passed
        },
    );
    tokio::spawn(async move {
        let _permit = permit;
        let Ok(upgraded) = upgrade.await else { return };
        let _ = tokio::io::copy_bidirectional(&mut TokioIo::new(upgraded), &mut remote).await;
    });
    text(StatusCode::OK, String::new())
}

/// A request that asks to switch protocols (a WebSocket, such as OpenAI's Realtime API):
/// refused with a message, since agentproxy records and replays HTTP exchanges only.
pub(super) fn upgrade_refused<B>(req: &Request<B>) -> Option<Response<ProxyBody>> {
    let upgrade = req.headers().get(http::header::UPGRADE)?.to_str().ok()?;
    // `h2c` (curl's HTTP/2 over plain HTTP) falls back to HTTP/1.1 when ignored.
    if !upgrade.to_ascii_lowercase().contains("websocket") {
        return None;
    }
    let what = upgrade;
    Some(text(
        StatusCode::NOT_IMPLEMENTED,
        format!(
            "agentproxy: {} {} asks to switch to {what}: agentproxy records and replays HTTP exchanges only (a WebSocket API is not supported)",
            req.method(),
            req.uri().path()
        ),
    ))
}

/// What becomes of a plain `http://` request sent to the proxy as a forward proxy (its
/// target in absolute form) for a host that is not a provider's.
pub(super) enum Plain {
    /// Forwarded to `host:port` as it is (while recording, or to an allowed host), and
    /// named as it passes.
    Forward(String, Passage),
    /// Refused: the answer, the host named.
    Refused(Response<ProxyBody>),
}

/// [`Plain`] for a request in absolute form to another host; `None` for any other
/// request (origin form, a provider's host, the proxy's own loopback address).
pub(super) fn plain_elsewhere<B>(proxy: &Proxy, req: &Request<B>) -> Option<Plain> {
    let target = req.uri().authority()?;
    // HTTP/2 names its target in every request; the proxy's own loopback address is
    // its base URL.
    let host = target.host().trim_start_matches('[').trim_end_matches(']');
    let default_port = match req.uri().scheme_str() {
        Some("https") => 443,
        _ => 80,
    };
    let port = target.port_u16().unwrap_or(default_port);
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    let own = loopback && proxy.port.get().is_none_or(|p| *p == port);
    if own || dialect::provider_of_host(host).is_some() {
        return None;
    }
    let name = format!("{}:{port}", target.host());
    if proxy.opts.intercept.is_none() {
        // Not a session that started a program: no forward proxy, no relay for anyone.
        return Some(Plain::Refused(text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("agentproxy: {name}: this session is not a forward proxy"),
        )));
    }
    if proxy.opts.allow.iter().any(|p| p.matches(host, port)) {
        return Some(Plain::Forward(name, Passage::Allowed));
    }
    if proxy.opts.upstream.is_some() {
        return Some(Plain::Forward(name, Passage::Passed));
    }
    proxy.note_egress(&name, Passage::Refused);
    Some(Plain::Refused(text(
        StatusCode::FORBIDDEN,
        format!("agentproxy: {name} is outside the cassette: a replay reaches no host but the model APIs it serves"),
    )))
}

/// Forward a plain `http://` request to another host (`name`) as it is: not recorded,
/// named (as a tunnel is) as `passage` says.
pub(super) async fn forward_plain(
    proxy: Arc<Proxy>,
    req: Request<Incoming>,
    (name, passage): (String, Passage),
) -> Response<ProxyBody> {
    // A replay has no upstream client: an allowed host gets one of its own.
    let own;
    let up = match proxy.opts.upstream.as_ref() {
        Some(up) => up,
        None => match Upstream::new(&Upstreams::default(), HEADER_READ_TIMEOUT) {
            Ok(up) => {
                own = up;
                &own
            }
            Err(e) => return text(StatusCode::BAD_GATEWAY, format!("agentproxy: {e}")),
        },
    };
    let (parts, body) = req.into_parts();
    let body = match super::api::read_request_body(body, proxy.opts.max_body).await {
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
    proxy.note_egress(&name, passage);
    let url = parts.uri.to_string();
    match up.send(parts.method, &url, &parts.headers, body).await {
        Ok(resp) => resp.map(|b| b.map_err(std::io::Error::other).boxed()),
        Err(e) => text(StatusCode::BAD_GATEWAY, format!("agentproxy: {e}")),
    }
}

/// A plain-text answer.
fn text(status: StatusCode, body: String) -> Response<ProxyBody> {
    let mut resp = Response::new(super::body::full(body.into()));
    *resp.status_mut() = status;
    resp
}
