//! What a contained program does when it ignores the proxy variables (see
//! `runner::contain`): its name lookups come here and every name is answered with its
//! namespace's loopback, where agentproxy listens on ports 443 and 80. A connection to a
//! provider's host there (by TLS server name, or by the `Host` of plain HTTP) is
//! intercepted as a tunnel to it is; so is another host whose traffic is recorded or
//! replayed. Any other is refused. Every name and refusal is named in the outcome.

use std::sync::Arc;

use http::{Request, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use simple_dns::rdata::{RData, A};
use simple_dns::{Packet, PacketFlag, ResourceRecord, CLASS, QTYPE, TYPE};
use tokio::io::AsyncBufReadExt;

use super::gate::Gate;
use super::log::Passage;
use super::mark::Intercepted;
use super::policy::Fate;
use super::tunnel::{Tunnel, TLS_HANDSHAKE};
use crate::proxy::body::{header_timeout, text};
use crate::proxy::conn;
use crate::proxy::step::{call, Handler};

/// Answer the name lookups that come to `socket` until the task is aborted.
pub(crate) async fn answer_names(gate: Arc<Gate>, socket: tokio::net::UdpSocket) {
    let mut buf = [0u8; 1500];
    while let Ok((n, from)) = socket.recv_from(&mut buf).await {
        let Some((name, reply)) = answer(&buf[..n]) else {
            continue;
        };
        if let Some(name) = name {
            gate.note(&name, Passage::LookedUp);
        }
        let _ = socket.send_to(&reply, from).await;
    }
}

/// The reply to a DNS query: each address (A) question answered with `127.0.0.1`, any
/// other with no record (so a client asking for both settles on IPv4); and the name an
/// address was asked for. `None` for what is not a query.
fn answer(query: &[u8]) -> Option<(Option<String>, Vec<u8>)> {
    let query = Packet::parse(query).ok()?;
    if query.has_flags(PacketFlag::RESPONSE) {
        return None;
    }
    let mut reply = Packet::new_reply(query.id());
    reply.set_flags(PacketFlag::RECURSION_AVAILABLE);
    if query.has_flags(PacketFlag::RECURSION_DESIRED) {
        reply.set_flags(PacketFlag::RECURSION_DESIRED);
    }
    let mut named = None;
    for q in &query.questions {
        if q.qtype == QTYPE::TYPE(TYPE::A) {
            let loopback = u32::from(std::net::Ipv4Addr::LOCALHOST);
            let rdata = RData::A(A { address: loopback });
            let record = ResourceRecord::new(q.qname.clone(), CLASS::IN, 1, rdata);
            reply.answers.push(record);
            named = Some(q.qname.to_string().to_ascii_lowercase());
        }
        reply.questions.push(q.clone());
    }
    Some((named, reply.build_bytes_vec().ok()?))
}

/// Serve the direct connections to `port` that come to `listener` until the task is
/// aborted; intercepted requests are answered by `serve`.
pub(crate) async fn watch(
    gate: Arc<Gate>,
    listener: tokio::net::TcpListener,
    port: u16,
    serve: Handler,
) {
    while let Ok((stream, _)) = listener.accept().await {
        let Ok(permit) = gate.tunnels.clone().try_acquire_owned() else {
            continue;
        };
        let (gate, serve) = (gate.clone(), serve.clone());
        tokio::spawn(async move {
            let _permit = permit;
            connection(gate, stream, port, serve).await;
        });
    }
}

/// One direct connection: TLS, by its server name; else plain HTTP, by each request's
/// `Host`.
async fn connection(gate: Arc<Gate>, stream: tokio::net::TcpStream, port: u16, serve: Handler) {
    let Some(authority) = gate.authority.clone() else {
        return;
    };
    let mut io = tokio::io::BufReader::new(stream);
    let first = match tokio::time::timeout(header_timeout(), io.fill_buf()).await {
        Ok(Ok([first, ..])) => *first,
        _ => return,
    };
    if first != TLS_HANDSHAKE {
        return plain(gate, io, port, serve).await;
    }
    let acceptor = rustls::server::Acceptor::default();
    let lazy = tokio_rustls::LazyConfigAcceptor::new(acceptor, io);
    let Ok(Ok(start)) = tokio::time::timeout(header_timeout(), lazy).await else {
        return;
    };
    let Some(host) = start.client_hello().server_name().map(str::to_owned) else {
        gate.note(&format!("(no server name):{port}"), Passage::Direct);
        return;
    };
    let name = format!("{host}:{port}");
    let Fate::Intercept(provider) = gate.fate(&host, port) else {
        gate.note(&name, Passage::Direct);
        return;
    };
    let Ok(config) = authority.server_config(&host) else {
        return;
    };
    gate.note(&name, Passage::Intercepted);
    let tunnel = Tunnel {
        gate,
        serve,
        host: host.clone(),
        other: None,
        mark: move |scheme: &str| Intercepted::of(provider, scheme, &host, port),
    };
    match tokio::time::timeout(header_timeout(), start.into_stream(config)).await {
        Ok(Ok(tls)) => tunnel.http(tls, "https").await,
        _ => tracing::warn!("TLS with the program for {} (direct) failed", tunnel.host),
    }
}

/// Plain HTTP on a direct connection: each request is its `Host`'s, intercepted as plain
/// HTTP through the proxy would be, or refused.
async fn plain<I>(gate: Arc<Gate>, io: I, port: u16, serve: Handler)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = conn::answering(move |mut req: Request<Incoming>| -> conn::Answer {
        let host = (req.headers().get(http::header::HOST))
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.parse::<http::uri::Authority>().ok());
        let (host, port) = match &host {
            Some(a) => (a.host().to_owned(), a.port_u16().unwrap_or(port)),
            None => ("(no Host)".to_owned(), port),
        };
        let name = format!("{host}:{port}");
        match gate.fate(&host, port) {
            Fate::Intercept(provider) => {
                gate.note(&name, Passage::Intercepted);
                (req.extensions_mut()).insert(Intercepted::of(provider, "http", &host, port));
                Box::pin(call(serve.clone(), req))
            }
            _ => {
                gate.note(&name, Passage::Direct);
                let why = format!("agentproxy: {name}: the program connected directly, ignoring HTTP_PROXY; contained, it reaches other hosts only through the proxy");
                Box::pin(std::future::ready(text(StatusCode::FORBIDDEN, why)))
            }
        }
    });
    let _ = conn::builder()
        .serve_connection(TokioIo::new(io), svc)
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use simple_dns::{Name, Question};

    fn query(name: &str, qtype: TYPE) -> Vec<u8> {
        let mut q = Packet::new_query(7);
        q.set_flags(PacketFlag::RECURSION_DESIRED);
        let name = Name::new_unchecked(name);
        q.questions
            .push(Question::new(name, qtype.into(), CLASS::IN.into(), false));
        q.build_bytes_vec().unwrap()
    }

    #[test]
    fn every_address_is_loopback_and_named() {
        let (named, reply) = answer(&query("API.Weather.test", TYPE::A)).unwrap();
        assert_eq!(named.as_deref(), Some("api.weather.test"));
        let reply = Packet::parse(&reply).unwrap();
        assert_eq!(reply.id(), 7);
        assert!(reply.has_flags(PacketFlag::RESPONSE));
        assert_eq!(reply.questions.len(), 1);
        assert_eq!(reply.answers.len(), 1);
        assert_eq!(
            reply.answers[0].rdata,
            RData::A(A {
                address: u32::from(std::net::Ipv4Addr::LOCALHOST)
            })
        );
    }

    #[test]
    fn other_questions_get_no_record_and_no_name() {
        let (named, reply) = answer(&query("api.weather.test", TYPE::AAAA)).unwrap();
        assert_eq!(named, None);
        let reply = Packet::parse(&reply).unwrap();
        assert!(reply.answers.is_empty());
        assert_eq!(reply.questions.len(), 1);
    }

    #[test]
    fn what_is_not_a_query_is_not_answered() {
        assert!(answer(b"").is_none());
        assert!(answer(b"\x00\x01garbage").is_none());
        let (_, reply) = answer(&query("a.test", TYPE::A)).unwrap();
        assert!(answer(&reply).is_none(), "a reply is not answered");
    }
}
