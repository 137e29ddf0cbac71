//! Record: forward an exchange upstream, pass the answer to the program as it arrives (a
//! stream chunk by chunk, never buffered), and store it redacted.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::Value;
use tokio::sync::mpsc;

use super::body::{full, json_response, ChannelBody, ProxyBody};
use super::exchange::Exchange;
use super::upstream::{Upstream, UpstreamError};
use super::Proxy;
use crate::cassette::{Body, Interaction, RecordedRequest, RecordedResponse};
use crate::dialect;
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
    let url = up.url_for(ex.provider, &ex.forward_path);
    let started = Instant::now();
    let resp = match up
        .send(ex.method.clone(), &url, &ex.headers, ex.raw.clone())
        .await
    {
        Ok(r) => r,
        Err(e) => return upstream_failed(proxy, &ex, e),
    };
    let (parts, body) = resp.into_parts();
    let is_stream = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/event-stream"));
    if is_stream {
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let proxy = proxy.clone();
        let status = parts.status;
        let kept = kept_headers(&parts.headers);
        // The recording finishes in a tracked task even if the program hangs up early, and
        // the cassette is not written before it has.
        proxy.tasks.clone().spawn(async move {
            let events = pump_stream(body, tx).await;
            let latency = started.elapsed();
            store(&proxy, ex, status, kept, None, Some(events), latency);
        });
        let mut out = Response::new(ChannelBody(rx).boxed());
        *out.status_mut() = parts.status;
        copy_headers(&parts.headers, out.headers_mut());
        return out;
    }
    let bytes = match body.collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) => {
            return upstream_failed(
                proxy,
                &ex,
                UpstreamError::Unreachable {
                    url,
                    message: format!("the response body broke off: {e}"),
                },
            )
        }
    };
    let bytes = match decode(&parts.headers, bytes) {
        Ok(b) => b,
        Err(message) => {
            return upstream_failed(proxy, &ex, UpstreamError::Unreachable { url, message })
        }
    };
    let latency = started.elapsed();
    let mut out = Response::new(full(bytes.clone()));
    *out.status_mut() = parts.status;
    copy_headers(&parts.headers, out.headers_mut());
    store(
        proxy,
        ex,
        parts.status,
        kept_headers(&parts.headers),
        Some(Body::from_bytes(&bytes)),
        None,
        latency,
    );
    out
}

/// Forward each chunk to the program the moment it arrives, and parse events on the side.
async fn pump_stream(mut body: Incoming, tx: mpsc::Sender<Bytes>) -> Vec<sse::SseEvent> {
    let mut parser = sse::SseParser::new();
    let mut events = Vec::new();
    let mut program_gone = false;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            tracing::warn!("the upstream stream broke off; recording the events received so far");
            break;
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if !program_gone {
            // A program that hung up stops receiving, but the recording still completes.
            program_gone = tx.send(data.clone()).await.is_err();
        }
        events.extend(parser.push(&data));
    }
    events.extend(parser.finish());
    events
}

fn store(
    proxy: &Proxy,
    ex: Exchange,
    status: StatusCode,
    headers: BTreeMap<String, String>,
    body: Option<Body>,
    events: Option<Vec<sse::SseEvent>>,
    latency: std::time::Duration,
) {
    let secrets = &proxy.opts.secrets;
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
    if let (Some(evs), true) = (&events, status.is_success()) {
        match ex.route.assemble(evs) {
            Some(Ok(mut message)) => {
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
        response: RecordedResponse {
            status: status.as_u16(),
            headers,
            body,
            events,
            encoded: Default::default(),
            encoded_events: Default::default(),
        },
        latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
    };
    proxy.note_exchange(ex.seq, &interaction);
    proxy.lock().recorded.push((ex.seq, interaction));
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
        UpstreamError::Unreachable { .. } => StatusCode::BAD_GATEWAY,
    };
    let message = e.to_string();
    eprintln!("agentproxy: {} {}: {message}", ex.method, ex.path);
    proxy.lock().upstream_errors.push(message.clone());
    json_response(
        status,
        &dialect::error_body(
            ex.provider,
            status.as_u16(),
            "agentproxy_upstream_error",
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

/// Undo a `content-encoding` the upstream applied although asked for `identity`: the cassette
/// stores readable bodies and the program gets them uncompressed.
fn decode(headers: &HeaderMap, bytes: Bytes) -> Result<Bytes, String> {
    let encoding = headers
        .get(http::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim().to_ascii_lowercase());
    let mut out = Vec::new();
    let result = match encoding.as_deref() {
        None | Some("identity") | Some("") => return Ok(bytes),
        Some("gzip") | Some("x-gzip") => {
            flate2::read::MultiGzDecoder::new(&bytes[..]).read_to_end(&mut out)
        }
        Some("deflate") => flate2::read::ZlibDecoder::new(&bytes[..]).read_to_end(&mut out),
        Some(other) => {
            return Err(format!(
            "the upstream answered with content-encoding `{other}`, which agentproxy cannot decode"
        ))
        }
    };
    result.map(|_| Bytes::from(out)).map_err(|e| {
        format!(
            "failed to decode the upstream's {} body: {e}",
            encoding.unwrap_or_default()
        )
    })
}
