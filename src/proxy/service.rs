//! One request: check the route, read and parse the body within the size limit, compute its
//! key, then serve it from the cassette or forward it upstream (or answer a miss).

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use serde_json::Value;

use super::body::{json_response, ProxyBody};
use super::exchange::Exchange;
use super::{fault, record, replay, Proxy};
use crate::cassette::Body;
use crate::dialect::{self, Route};
use crate::matching::{self, index::Lookup};
use crate::neutral::ToolCall;

pub async fn handle(proxy: Arc<Proxy>, req: Request<hyper::body::Incoming>) -> Response<ProxyBody> {
    let (parts, body) = req.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "/".into());
    let provider = dialect::provider_of(&path, &parts.headers);
    // What is stored, shown and matched: the path without credentials in its query, and
    // secret values in the rest of it redacted as in bodies. The upstream gets the path
    // as sent.
    let stored_path = dialect::without_credentials(&path);
    let stored_path = (proxy.opts.secrets.redact_path(&stored_path)).unwrap_or(stored_path);
    let error = |status: StatusCode, kind: &str, msg: String| {
        refuse(
            &proxy,
            provider,
            (&parts.method, &stored_path),
            status,
            kind,
            msg,
        )
    };
    if proxy.opts.crash.is_some() {
        if let Some(held) = proxy
            .crash_hold(format!("{} {stored_path}", parts.method))
            .await
        {
            return held;
        }
    }
    if let Some(rest) = path.strip_prefix(super::mcp::PREFIX) {
        let rest = rest.split('?').next().unwrap_or(rest).to_owned();
        let body = match Limited::new(body, proxy.opts.max_body).collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => {
                // What a stand-in could not report is missing from the recording: the
                // run must not look complete.
                let why = format!(
                    "{} {}{rest}: an MCP message the stand-in relayed could not be stored ({e}; the limit is {} bytes, raise it with --max-body-size)",
                    parts.method,
                    super::mcp::PREFIX,
                    proxy.opts.max_body
                );
                proxy.lock().upstream_errors.push(why.clone());
                return json_response(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &serde_json::json!({ "error": why }),
                );
            }
        };
        return super::mcp::handle(&proxy, &parts.method, &rest, &body);
    }
    if let Some(rest) = path.strip_prefix(super::mcp_http::PREFIX) {
        let rest = rest.to_owned();
        return super::mcp_http::handle(&proxy, parts, body, &rest).await;
    }
    if !dialect::is_api_path(&path) {
        return error(
            StatusCode::NOT_FOUND,
            "agentproxy_unknown_route",
            format!(
                "{} {stored_path} is not a provider API path; agentproxy serves /v1/…, /v1beta/… and /v1alpha/… (point the SDK at $OPENAI_BASE_URL, $ANTHROPIC_BASE_URL or $GOOGLE_GEMINI_BASE_URL)",
                parts.method
            ),
        );
    }
    if dialect::has_dot_segment(&path) {
        return error(
            StatusCode::BAD_REQUEST,
            "agentproxy_bad_path",
            format!(
                "{} {stored_path} has a `.` or `..` segment; refused, so that no request can leave the upstream's base path",
                parts.method
            ),
        );
    }
    let too_large = || {
        error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "agentproxy_body_too_large",
            format!(
                "the request body is larger than the limit of {} bytes; raise it with --max-body-size",
                proxy.opts.max_body
            ),
        )
    };
    // A declared length over the limit is refused before the body is read.
    let declared = (parts.headers.get(http::header::CONTENT_LENGTH))
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > proxy.opts.max_body as u64) {
        return too_large();
    }
    let seq = proxy.next_seq();
    let raw = match Limited::new(body, proxy.opts.max_body).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "agentproxy_bad_request",
                format!("failed to read the request body: {e}"),
            )
        }
    };
    let route = Route::of(&parts.method, &path);
    let (nth, due) = if route.requires_json() {
        fault::next(&proxy)
    } else {
        (None, None)
    };
    if due.is_none() {
        if let Some((rp, pos)) =
            proxy.take_identical(route, parts.method.as_str(), &stored_path, &raw)
        {
            let resp = serve_identical(&proxy, rp, seq, pos).await;
            answered(&proxy, nth, &resp);
            return resp;
        }
    }
    let (raw, stored, digest) = match prepare_body(&proxy, route, raw) {
        Ok(b) => b,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                format!(
                    "the request body is not valid JSON ({e}); nothing was forwarded or recorded"
                ),
            )
        }
    };
    let key = matching::request_key(
        route.name(),
        parts.method.as_str(),
        &stored_path,
        stored.as_ref(),
        &proxy.opts.rules,
    );
    let ex = Exchange {
        seq,
        turn: proxy.current_turn(),
        route,
        provider,
        method: parts.method,
        path: stored_path,
        forward_path: path,
        headers: parts.headers,
        raw,
        stored,
        digest,
        key,
    };
    let resp = match due {
        // A spoiled tool call needs the real answer: the request is served as any other
        // (its recording used up, or forwarded and recorded), then the answer spoiled.
        Some(due) if due.fault.kind.spoils_tool_call() => {
            let asked = fault::Asked::of(&ex);
            let resp = answer(&proxy, ex).await;
            fault::spoil(&proxy, &due, &asked, resp).await
        }
        Some(due) => {
            let resp = fault::serve(&ex, &due.fault, would_get(&proxy, &ex)).await;
            fault::note(&proxy, &due, &resp, None);
            resp
        }
        None => match proxy.fuzz_pending().filter(|_| route.requires_json()) {
            Some(fuzz) => {
                let asked = fault::Asked::of(&ex);
                let resp = answer(&proxy, ex).await;
                fault::fuzz(&proxy, fuzz, &asked, resp).await
            }
            None => answer(&proxy, ex).await,
        },
    };
    answered(&proxy, nth, &resp);
    resp
}

/// The `nth` model request has been answered with `resp`: what a fault's report says the
/// program did next, and a crash test's point when it names that request.
fn answered(proxy: &Proxy, nth: Option<usize>, resp: &Response<ProxyBody>) {
    let Some(nth) = nth else {
        return;
    };
    fault::answered(proxy, nth, resp);
    if proxy.opts.crash.is_some() {
        proxy.crash_after_request(nth);
    }
}

/// Answer `ex` from the cassette or the upstream, or as a miss.
async fn answer(proxy: &Arc<Proxy>, ex: Exchange) -> Response<ProxyBody> {
    if let Some(rp) = &proxy.opts.replay {
        if let Some(pos) = rp.take_by_position(ex.route.name(), ex.turn) {
            return serve_by_position(proxy, rp, pos, &ex).await;
        }
        let lookup = rp
            .index
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take(&ex.key);
        match lookup {
            Lookup::Hit(pos) => {
                let it = &rp.interactions[pos];
                if proxy.opts.log_exchanges || proxy.opts.mocks.is_some() {
                    let mut served = it.clone();
                    served.turn = ex.turn;
                    proxy.note_exchange(ex.seq, &served);
                }
                return replay::serve(rp, it, Some(&ex)).await;
            }
            miss if proxy.opts.upstream.is_none() => return answer_miss(proxy, rp, &ex, miss),
            _ => {}
        }
    }
    match &proxy.opts.upstream {
        Some(up) => record::forward(proxy, up, ex).await,
        // A proxy is built with a cassette, an upstream or both; without either, nothing matches.
        None => refuse(
            proxy,
            ex.provider,
            (&ex.method, &ex.path),
            StatusCode::BAD_REQUEST,
            "agentproxy_cassette_miss",
            "no cassette and no upstream".into(),
        ),
    }
}

/// An error the proxy answers itself, in the provider's shape. Except for a miss (which
/// has its own report), it is noted in the outcome, so a run that recorded nothing can
/// say what happened. `path` is the stored form: no credential, no secret value.
fn refuse(
    proxy: &Proxy,
    provider: dialect::Provider,
    (method, path): (&http::Method, &str),
    status: StatusCode,
    kind: &str,
    msg: String,
) -> Response<ProxyBody> {
    if kind != "agentproxy_cassette_miss" {
        let why = format!("{method} {path}: {} {msg}", status.as_u16());
        proxy.lock().rejected.push(why);
    }
    json_response(
        status,
        &dialect::error_body(
            provider,
            status.as_u16(),
            kind,
            &format!("agentproxy: {msg}"),
        ),
    )
}

/// Lenient replay: serve the recording at `pos` and log the exchange with the request as
/// it arrived, so a caller can see what the program sent (the determinism check compares
/// two runs).
async fn serve_by_position(
    proxy: &Proxy,
    rp: &super::Replay,
    pos: usize,
    ex: &Exchange,
) -> Response<ProxyBody> {
    let it = &rp.interactions[pos];
    let mut served = it.clone();
    served.turn = ex.turn;
    served.request.method = ex.method.to_string();
    served.request.path = ex.path.clone();
    served.request.body = ex.stored.clone();
    proxy.note_exchange(ex.seq, &served);
    replay::serve(rp, it, Some(ex)).await
}

/// A request byte-identical to the recording at `pos`: serve it as it was recorded,
/// without parsing it.
async fn serve_identical(
    proxy: &Proxy,
    rp: &super::Replay,
    seq: u64,
    pos: usize,
) -> Response<ProxyBody> {
    let it = &rp.interactions[pos];
    if proxy.opts.log_exchanges {
        let mut served = it.clone();
        served.turn = proxy.current_turn();
        proxy.note_exchange(seq, &served);
    }
    replay::serve(rp, it, None).await
}

/// The bytes to forward, the body as it will be stored and keyed, and the digest of the
/// bytes when they held no secret. A JSON body (model routes must be JSON) gets its tool
/// results mocked first, so the mock is what is matched, recorded and forwarded; then
/// secret values become `${NAME}` in the stored copy.
type Prepared = (Bytes, Option<Body>, Option<u128>);

fn prepare_body(proxy: &Proxy, route: Route, raw: Bytes) -> Result<Prepared, serde_json::Error> {
    if raw.is_empty() && !route.requires_json() {
        return Ok((raw, None, None));
    }
    match serde_json::from_slice::<Value>(&raw) {
        Ok(mut v) => {
            let mut raw = raw;
            if let Some(mocks) = &proxy.opts.mocks {
                let lookup = |id: &str| proxy.known_call(id);
                let mut mock = |c: &ToolCall, n| {
                    (!proxy.is_mcp_tool(&c.name))
                        .then(|| mocks(c, n).result())
                        .flatten()
                };
                if route.rewrite_tool_results(&mut v, &lookup, &mut mock) > 0 {
                    raw = Bytes::from(serde_json::to_vec(&v)?);
                }
            }
            let redacted = proxy.opts.secrets.redact_value(&mut v);
            // Only a recording keeps the digest.
            let digest = (!redacted && proxy.opts.upstream.is_some())
                .then(|| matching::key::body_digest(&raw));
            Ok((raw, Some(Body::Json(v.into())), digest))
        }
        Err(e) if route.requires_json() => Err(e),
        Err(_) => {
            let stored = match Body::from_bytes(&raw) {
                Body::Text(t) => Body::Text(proxy.opts.secrets.redact_str(&t).unwrap_or(t)),
                other => other,
            };
            Ok((raw, Some(stored), None))
        }
    }
}

/// A miss: report it (stderr and the outcome) and answer a non-retryable 4xx in the
/// provider's error shape, so the SDK raises instead of retrying.
fn answer_miss(
    proxy: &Proxy,
    rp: &super::Replay,
    ex: &Exchange,
    lookup: Lookup,
) -> Response<ProxyBody> {
    let normalized_now = ex
        .json()
        .map(|b| matching::normalize::normalize(b, &proxy.opts.rules))
        .unwrap_or(Value::Null);
    let report = super::miss::note(
        proxy,
        rp,
        (ex.method.as_str(), &ex.path, ex.route.name()),
        &normalized_now,
        lookup,
    );
    let mut resp = json_response(
        StatusCode::BAD_REQUEST,
        &dialect::error_body(
            ex.provider,
            StatusCode::BAD_REQUEST.as_u16(),
            "agentproxy_cassette_miss",
            &format!("agentproxy: {report}"),
        ),
    );
    resp.headers_mut()
        .insert("x-should-retry", http::HeaderValue::from_static("false"));
    resp
}

/// What `ex` would be answered with, for a fault that cuts or spoils it: its recording,
/// left in place for the retry, or (recording, or nothing recorded) an empty reply.
fn would_get(proxy: &Proxy, ex: &Exchange) -> fault::Recorded {
    let recorded = proxy.opts.replay.as_ref().and_then(|rp| {
        let pos = rp
            .index
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .peek(&ex.key)?;
        Some(&rp.interactions[pos].response)
    });
    let recorded = recorded.filter(|r| (200..300).contains(&r.status));
    if let Some(rec) = recorded {
        if let Some(body) = rec.body.as_ref().and_then(Body::as_json) {
            return fault::Recorded::of(ex, body, rec.event_frames());
        }
        if let Some(events) = rec.event_frames() {
            return fault::Recorded::Events(events);
        }
    }
    let request = ex.json().cloned().unwrap_or_default();
    let model = request["model"].as_str().unwrap_or("agentproxy").to_owned();
    let stand_in = ex
        .route
        .text_response(&request, &model, "")
        .unwrap_or_default();
    fault::Recorded::of(ex, &stand_in, None)
}
