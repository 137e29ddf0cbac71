//! Record: forward an exchange upstream, pass the answer to the program as it arrives (a
//! stream chunk by chunk, never buffered), and store it redacted.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::Value;
use tokio::sync::mpsc;

use super::body::{full, json_response, ChannelBody, ProxyBody};
use super::exchange::Exchange;
use super::state::Proxy;
use super::upstream::{Upstream, UpstreamError};
use crate::cassette::{Body, Interaction, RecordedRequest, RecordedResponse};
use crate::dialect::{self, Refusal};
use crate::sse;

/// Response headers worth keeping: what a client needs to parse the body and pace retries.
/// Everything else (request ids, dates, rate-limit counters) is volatile noise.
const KEPT_HEADERS: [&str; 4] = [
    "content-type",
    "retry-after",
    "retry-after-ms",
    "x-should-retry",
];

/// Headers of one hop, and those the proxy recomputes for the program.
const HOP_HEADERS: [&str; 5] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "content-encoding",
];

/// How many stream chunks may wait for a slow program before the upstream read pauses.
const STREAM_BUFFER: usize = 64;

pub(super) async fn forward(
    proxy: &std::sync::Arc<Proxy>,
    up: &Upstream,
    ex: Exchange,
) -> Response<ProxyBody> {
    let started = Instant::now();
    if dialect::carries_placeholder(&ex.headers, &ex.forward_path) {
        let vars = dialect::key_vars(ex.provider).join(" or ");
        let vars = if vars.is_empty() {
            "the provider's key".to_owned()
        } else {
            vars
        };
        return upstream_failed(proxy, &ex, UpstreamError::Placeholder { vars });
    }
    // A request sent to the proxy's address whose provider's endpoint is the one each
    // request names (Bedrock's region, Vertex AI's location) goes there, as if it had been
    // sent to that host (see `Fallback::Request`).
    let origin = ex
        .origin
        .clone()
        .or_else(|| match ex.provider.row().fallback {
            dialect::Fallback::Request { from, .. } => from(&ex.path, &ex.headers),
            _ => None,
        });
    // Messages name the URL as stored (`path`): no credential, no secret value.
    let (forward_url, url) = match (
        up.url_for(ex.provider, origin.as_deref(), &ex.forward_path),
        up.url_for(ex.provider, origin.as_deref(), &ex.path),
    ) {
        (Ok(forward), Ok(url)) => (forward, url),
        (Err(e), _) | (_, Err(e)) => return upstream_failed(proxy, &ex, e),
    };
    let resp = match up
        .send(ex.method.clone(), &forward_url, &ex.headers, ex.raw.clone())
        .await
    {
        Ok(r) => r,
        Err(e) => return upstream_failed(proxy, &ex, e.naming(url)),
    };
    let (parts, body) = resp.into_parts();
    let framing = (parts.headers.get(http::header::CONTENT_TYPE))
        .and_then(|v| v.to_str().ok())
        .and_then(sse::Framing::of);
    let encoding = match Encoding::of(&parts.headers) {
        Ok(e) => e,
        Err(message) => {
            return upstream_failed(proxy, &ex, UpstreamError::Unreachable { url, message })
        }
    };
    match framing {
        Some(framing) => stream(
            proxy,
            ex,
            (parts, body),
            framing,
            encoding,
            up.timeout(),
            started,
        ),
        None => {
            whole(
                proxy,
                ex,
                (parts, body),
                encoding,
                url,
                up.timeout(),
                started,
            )
            .await
        }
    }
}

/// A streamed answer: relayed chunk by chunk as it comes, and recorded as its events when
/// it ends (in a tracked task: at once, as aborted, if the program hangs up early; the
/// cassette is not written before it has).
fn stream(
    proxy: &std::sync::Arc<Proxy>,
    ex: Exchange,
    (parts, body): (http::response::Parts, Incoming),
    framing: sse::Framing,
    encoding: Encoding,
    idle: Duration,
    started: Instant,
) -> Response<ProxyBody> {
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let proxy = proxy.clone();
    let status = parts.status;
    let kept = kept_headers(&parts.headers);
    proxy.tasks.clone().spawn(async move {
        let parser = framing.parser();
        let pumped = pump_stream(body, tx, encoding.decoder(), (parser, started), idle).await;
        let latency = started.elapsed();
        if let Some(why) = &pumped.aborted {
            note_abort(&proxy, &ex, why, pumped.hung_up);
        }
        let response = Recorded {
            status,
            headers: kept,
            body: None,
            events: Some(pumped.events),
            event_ms: pumped.event_ms,
            aborted: pumped.aborted,
        };
        store(&proxy, ex, response, latency);
    });
    let mut out = Response::new(ChannelBody::new(rx).boxed());
    *out.status_mut() = parts.status;
    copy_headers(&parts.headers, out.headers_mut());
    out
}

/// An answer that is not streamed: read whole (bounded by `idle` between chunks),
/// decoded, recorded and given to the program.
async fn whole(
    proxy: &std::sync::Arc<Proxy>,
    ex: Exchange,
    (parts, body): (http::response::Parts, Incoming),
    encoding: Encoding,
    url: String,
    idle: Duration,
    started: Instant,
) -> Response<ProxyBody> {
    let bytes = match read_body(body, idle).await {
        Ok(b) => b,
        Err(BodyEnd::Stalled) => {
            let secs = idle.as_secs();
            return upstream_failed(proxy, &ex, UpstreamError::Timeout { url, secs });
        }
        Err(BodyEnd::Broke(e)) => {
            let message = format!("the response body broke off: {e}");
            return upstream_failed(proxy, &ex, UpstreamError::Unreachable { url, message });
        }
    };
    let bytes = match encoding.decode(bytes) {
        Ok(b) => b,
        Err(message) => {
            return upstream_failed(proxy, &ex, UpstreamError::Unreachable { url, message })
        }
    };
    let latency = started.elapsed();
    let mut out = Response::new(full(bytes.clone()));
    *out.status_mut() = parts.status;
    copy_headers(&parts.headers, out.headers_mut());
    let response = Recorded {
        status: parts.status,
        headers: kept_headers(&parts.headers),
        body: Some(Body::from_bytes(&bytes)),
        events: None,
        event_ms: Vec::new(),
        aborted: None,
    };
    store(proxy, ex, response, latency);
    out
}

/// Say why a stream was recorded as aborted; an upstream's failure (not the program's
/// own hang-up) is one of the session's upstream errors.
pub(super) fn note_abort(proxy: &Proxy, ex: &Exchange, why: &str, hung_up: bool) {
    let message = format!("{} {}: {why}; recorded as aborted", ex.method, ex.path);
    tell!("agentproxy: {message}");
    if !hung_up {
        proxy.lock().upstream_errors.push(message);
    }
}

/// Forward each chunk to the program the moment it arrives (decoded), and parse events on
/// the side. A stream that breaks off, stalls for `idle`, or cannot be decoded ends the
/// program's stream the same abrupt way and comes back with why; one the program hangs up
/// on is read no further (dropping `body` closes the upstream's connection), and comes
/// back with why and `true`.
async fn pump_stream(
    mut body: Incoming,
    tx: mpsc::Sender<std::io::Result<Bytes>>,
    mut decoder: Option<Decoder>,
    (mut parser, started): (sse::StreamParser, Instant),
    idle: Duration,
) -> Pumped {
    const HUNG_UP: &str = "the program hung up mid-stream";
    let mut events = Vec::new();
    let mut event_ms = Vec::new();
    let mut hung_up = false;
    let aborted = loop {
        // A program that hangs up ends the upstream's stream too (a model keeps generating,
        // and billing, for as long as it is read), whenever it does: what it was relayed
        // is recorded as aborted.
        let next = tokio::select! {
            next = tokio::time::timeout(idle, body.frame()) => next,
            () = tx.closed() => {
                hung_up = true;
                break Some(HUNG_UP.to_owned());
            }
        };
        let data = match next {
            Err(_) => {
                break Some(format!(
                    "the upstream's stream sent nothing for {}",
                    humantime::format_duration(idle)
                ))
            }
            Ok(None) => match decoder.as_mut().map(Decoder::finish) {
                Some(Err(e)) => break Some(format!("failed to decode the upstream's stream: {e}")),
                Some(Ok(rest)) if !rest.is_empty() => rest,
                _ => break None,
            },
            Ok(Some(Err(e))) => break Some(format!("the upstream's stream broke off: {e}")),
            Ok(Some(Ok(frame))) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                match decoder.as_mut().map(|d| d.push(&data)) {
                    None => data,
                    Some(Ok(plain)) => plain,
                    Some(Err(e)) => {
                        break Some(format!("failed to decode the upstream's stream: {e}"))
                    }
                }
            }
        };
        if data.is_empty() {
            continue;
        }
        events.extend(parser.push(&data));
        event_ms.resize(events.len(), millis(started.elapsed()));
        if tx.send(Ok(data)).await.is_err() {
            hung_up = true;
            break Some(HUNG_UP.to_owned());
        }
        if let Some(why) = parser.broken() {
            break Some(format!("the upstream's stream: {why}"));
        }
    };
    if aborted.is_none() {
        events.extend(parser.finish());
        event_ms.resize(events.len(), millis(started.elapsed()));
    }
    let aborted =
        aborted.or_else(|| (parser.broken()).map(|why| format!("the upstream's stream: {why}")));
    if let Some(why) = &aborted {
        let _ = tx.send(Err(std::io::Error::other(why.clone()))).await;
    }
    let aborted = aborted.map(|why| format!("{why} (after {} events)", events.len()));
    Pumped {
        events,
        event_ms,
        aborted,
        hung_up,
    }
}

/// A stream relayed to its end: its events and when each came (see
/// [`Recorded::event_ms`]), why it broke off, if it did, and whether the program hung up.
struct Pumped {
    events: Vec<sse::SseEvent>,
    event_ms: Vec<u64>,
    aborted: Option<String>,
    hung_up: bool,
}

/// `d` in whole milliseconds.
pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Why a whole body could not be read.
enum BodyEnd {
    /// Nothing arrived for the idle limit.
    Stalled,
    Broke(hyper::Error),
}

/// Read a whole body, waiting at most `idle` for each chunk.
async fn read_body(mut body: Incoming, idle: Duration) -> Result<Bytes, BodyEnd> {
    // A body that comes in one frame (most do) is passed on without a copy.
    let mut chunks: Vec<Bytes> = Vec::new();
    loop {
        match tokio::time::timeout(idle, body.frame()).await {
            Err(_) => return Err(BodyEnd::Stalled),
            Ok(None) if chunks.len() == 1 => return Ok(chunks.swap_remove(0)),
            Ok(None) => return Ok(Bytes::from(chunks.concat())),
            Ok(Some(Err(e))) => return Err(BodyEnd::Broke(e)),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    chunks.push(data);
                }
            }
        }
    }
}

/// A response as it is stored, before redaction.
pub(super) struct Recorded {
    pub status: StatusCode,
    pub headers: BTreeMap<String, String>,
    pub body: Option<Body>,
    pub events: Option<Vec<sse::SseEvent>>,
    /// When each event came, in milliseconds since the request went upstream.
    pub event_ms: Vec<u64>,
    pub aborted: Option<String>,
}

pub(super) fn store(proxy: &Proxy, ex: Exchange, response: Recorded, latency: Duration) {
    if proxy.opts.known_clients {
        if let Some(client) = ex
            .json()
            .and_then(|body| dialect::known_clients().find(|c| (c.recognise)(&ex.headers, body)))
        {
            proxy.lock().clients.insert(client.name);
        }
    }
    let Recorded {
        status,
        headers,
        body,
        events,
        event_ms,
        aborted,
    } = response;
    let (body, events) = redacted(&proxy.opts.secrets, &ex, status, (body, events), &aborted);
    let mut response = RecordedResponse::new(status.as_u16(), headers, body, events, aborted);
    // Events made again from a redacted message came at no recorded time.
    if response.events.as_ref().map(Vec::len) == Some(event_ms.len()) {
        response.event_ms = event_ms;
    }
    let interaction = Interaction {
        route: ex.route.name().to_owned(),
        key: ex.key,
        turn: ex.turn,
        request: RecordedRequest {
            method: ex.method.to_string(),
            path: ex.path,
            body: ex.stored,
            body_xxh3: ex.digest.map(crate::matching::key::digest_hex),
        },
        response,
        latency_ms: millis(latency),
        mocked: ex.mocked,
        spoiled: None,
    };
    proxy.recorded(ex.seq, interaction);
}

/// The answer's body and events with every secret value redacted, including one split
/// over a stream's deltas (then the stream is synthesized again from its redacted message,
/// or, with no message to redo it from, its events are not kept).
fn redacted(
    secrets: &crate::redact::Secrets,
    ex: &Exchange,
    status: StatusCode,
    (body, events): (Option<Body>, Option<Vec<sse::SseEvent>>),
    aborted: &Option<String>,
) -> (Option<Body>, Option<Vec<sse::SseEvent>>) {
    let mut body = body.map(|b| redact_body(secrets, b));
    let mut events = events.map(|evs| {
        evs.into_iter()
            .map(|mut e| {
                if let Some(r) = secrets.redact_str(&e.data) {
                    e.data = r;
                }
                e
            })
            .collect::<Vec<_>>()
    });
    // Whether the stream's whole text was checked for a secret split over its events.
    let mut checked = false;
    // A stream that broke off is kept as the events it sent: it has no whole message.
    if let (Some(evs), true, None) = (&events, status.is_success(), aborted) {
        match ex.route.assemble(evs) {
            Some(Ok(mut message)) => {
                checked = true;
                // A secret split over several deltas survives redaction event by event and
                // reappears whole once they are joined. Then neither form may be kept: the
                // message is redacted, and the events become a stream synthesized from it.
                if secrets.redact_value(&mut message) {
                    let request = ex.stored.as_ref().and_then(Body::as_json);
                    events = ex
                        .route
                        .synthesize(&message, request.unwrap_or(&Value::Null));
                }
                body = Some(Body::Json(message.into()));
            }
            Some(Err(e)) => tracing::warn!("{e}; only the stream's events are recorded"),
            None => {}
        }
    }
    if let (Some(evs), false) = (&mut events, checked) {
        // No assembled message to check against (an aborted stream, an error stream, plain
        // HTTP): the events' text fields are joined as a client joins deltas. A secret found
        // there costs the recording its events, never the secret its redaction.
        if secrets.split_across(evs.iter().map(|e| e.data.as_str())) {
            tracing::warn!(
                "a secret value was split over the stream's events; its events are not recorded"
            );
            evs.clear();
        }
    }
    (body, events)
}

fn redact_body(secrets: &crate::redact::Secrets, body: Body) -> Body {
    match body {
        Body::Json(mut v) => {
            secrets.redact_value(v.get_mut());
            Body::Json(v)
        }
        Body::Text(t) => Body::Text(secrets.redact_str(&t).unwrap_or(t)),
        other => other,
    }
}

/// Unreachable or slow upstream: 502/504 in the provider's shape, remembered for the exit
/// status, and nothing recorded (a replay must never serve an outage the proxy invented).
fn upstream_failed(proxy: &Proxy, ex: &Exchange, e: UpstreamError) -> Response<ProxyBody> {
    let status = match e {
        UpstreamError::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
        UpstreamError::Unreachable { .. } | UpstreamError::Missing { .. } => {
            StatusCode::BAD_GATEWAY
        }
        UpstreamError::Loop { .. } => StatusCode::LOOP_DETECTED,
        UpstreamError::Placeholder { .. } | UpstreamError::Signature { .. } => {
            StatusCode::UNAUTHORIZED
        }
    };
    let message = e.to_string();
    let named = format!("{} {}: {message}", ex.method, ex.path);
    tell!("agentproxy: {named}");
    proxy.lock().upstream_errors.push(named);
    json_response(
        status,
        &dialect::error_body(
            ex.provider,
            status.as_u16(),
            Refusal::UpstreamError,
            &format!("agentproxy: {message}"),
        ),
    )
}

fn kept_headers(h: &HeaderMap) -> BTreeMap<String, String> {
    KEPT_HEADERS
        .iter()
        .filter_map(|name| {
            let v = h.get(*name)?.to_str().ok()?;
            Some((name.to_string(), v.to_owned()))
        })
        .collect()
}

fn copy_headers(from: &HeaderMap, to: &mut HeaderMap) {
    for (name, value) in from {
        if !HOP_HEADERS.contains(&name.as_str()) {
            to.append(name.clone(), value.clone());
        }
    }
}

/// The `content-encoding` of an upstream response. The proxy asks for `identity`; an
/// upstream that compresses anyway is decoded, so the cassette stores readable bodies and
/// the program gets them uncompressed (the header is not passed on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Identity,
    Gzip,
    Deflate,
}

impl Encoding {
    fn of(headers: &HeaderMap) -> Result<Encoding, String> {
        let value = headers
            .get(http::header::CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.trim().to_ascii_lowercase());
        match value.as_deref() {
            None | Some("identity") | Some("") => Ok(Encoding::Identity),
            Some("gzip") | Some("x-gzip") => Ok(Encoding::Gzip),
            Some("deflate") => Ok(Encoding::Deflate),
            Some(other) => Err(format!(
                "the upstream answered with content-encoding `{other}` although asked for identity, and agentproxy decodes only gzip and deflate; nothing was recorded"
            )),
        }
    }

    /// Decode a whole body.
    fn decode(self, bytes: Bytes) -> Result<Bytes, String> {
        let Some(mut d) = self.decoder() else {
            return Ok(bytes);
        };
        let fail =
            |e: std::io::Error| format!("failed to decode the upstream's {self:?} body: {e}");
        let mut out = d.push(&bytes).map_err(fail)?.to_vec();
        out.extend_from_slice(&d.finish().map_err(fail)?);
        Ok(Bytes::from(out))
    }

    fn decoder(self) -> Option<Decoder> {
        match self {
            Encoding::Identity => None,
            Encoding::Gzip => Some(Decoder::Gzip(
                flate2::write::MultiGzDecoder::new(Vec::new()),
            )),
            Encoding::Deflate => Some(Decoder::Deflate(
                flate2::write::ZlibDecoder::new(Vec::new()),
            )),
        }
    }
}

/// Incremental decoding: compressed chunks in, whatever they decode to out, so a
/// compressed stream still reaches the program event by event.
enum Decoder {
    Gzip(flate2::write::MultiGzDecoder<Vec<u8>>),
    Deflate(flate2::write::ZlibDecoder<Vec<u8>>),
}

impl Decoder {
    fn push(&mut self, chunk: &[u8]) -> std::io::Result<Bytes> {
        match self {
            Decoder::Gzip(d) => {
                d.write_all(chunk)?;
                d.flush()?;
                Ok(Bytes::from(std::mem::take(d.get_mut())))
            }
            Decoder::Deflate(d) => {
                d.write_all(chunk)?;
                d.flush()?;
                Ok(Bytes::from(std::mem::take(d.get_mut())))
            }
        }
    }

    /// The end of the input: what is left.
    fn finish(&mut self) -> std::io::Result<Bytes> {
        match self {
            Decoder::Gzip(d) => d.try_finish()?,
            Decoder::Deflate(d) => d.try_finish()?,
        }
        let rest = match self {
            Decoder::Gzip(d) => std::mem::take(d.get_mut()),
            Decoder::Deflate(d) => std::mem::take(d.get_mut()),
        };
        Ok(Bytes::from(rest))
    }
}

/// An exchange at a boundary beside the model (an MCP server, a remote agent) as a
/// cassette keeps it: `keyed` (what identifies the request, redacted here) under `route`,
/// `method` and `name` (the server's or agent's), answered with `response`.
pub(super) fn boundary(
    proxy: &Proxy,
    (route, method, name): (&str, &str, &str),
    mut keyed: serde_json::Value,
    response: RecordedResponse,
    latency_ms: u64,
) -> Interaction {
    proxy.opts.secrets.redact_value(&mut keyed);
    let body = Body::Json(keyed.into());
    let key = crate::matching::request_key(route, method, name, Some(&body), &proxy.opts.rules);
    Interaction {
        route: route.into(),
        key,
        turn: proxy.current_turn(),
        request: RecordedRequest {
            method: method.to_owned(),
            path: name.to_owned(),
            body: Some(body),
            body_xxh3: None,
        },
        response,
        latency_ms,
        mocked: Vec::new(),
        spoiled: None,
    }
}
