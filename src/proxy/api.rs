//! A request under the provider API prefixes: checked, read within the size limit,
//! counted when it is a model request, prepared (tool results mocked, secrets redacted,
//! keyed), then answered through the fault layer from the cassette or the upstream, or as
//! a miss.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::Value;

use super::body::{header_timeout, json_response, read_request_body, BodyError, ProxyBody};
use super::egress::Intercepted;
use super::exchange::Exchange;
use super::fault::{Due, Recorded};
use super::replay::Replay;
use super::state::Proxy;
use super::{miss, record, replay};
use crate::cassette::{Body, CassetteError};
use crate::dialect::{self, Provider, Refusal, Route};
use crate::matching::{self, index::Lookup};

/// What is known of a request before its body is read.
pub(super) struct Head {
    pub method: Method,
    /// The path and query as the program sent them, for the upstream; for another host's
    /// request (`elsewhere`), its whole URL.
    pub path: String,
    /// What is stored, shown and matched: the path without credentials in its query, and
    /// secret values in the rest of it redacted as in bodies.
    pub stored_path: String,
    /// The provider family, for the shape of an error the proxy answers and the upstream
    /// a recording goes to: the intercepted host's, else the one the path names.
    pub provider: Provider,
    /// For a request through an intercepted tunnel: the host it was sent to, as a base URL.
    pub origin: Option<String>,
    /// A request to another host than the providers' (see [`Intercepted`]): plain HTTP,
    /// stored and matched under its whole URL, which is where a recording sends it.
    pub elsewhere: bool,
}

impl Head {
    /// The head of the HTTP request a WebSocket's turn carries: a `POST` to the path the
    /// socket was opened on (see `socket`).
    pub(super) fn of_turn(&self) -> Head {
        Head {
            method: Method::POST,
            path: self.path.clone(),
            stored_path: self.stored_path.clone(),
            provider: self.provider,
            origin: self.origin.clone(),
            elsewhere: false,
        }
    }

    /// The head of `req`, as it arrived (through an intercepted tunnel when marked so).
    pub(super) fn of_request<B>(proxy: &Proxy, req: &http::Request<B>) -> Head {
        let path = (req.uri().path_and_query())
            .map(|p| p.as_str().to_owned())
            .unwrap_or_else(|| "/".into());
        let intercepted = req.extensions().get::<Intercepted>();
        Head::of(
            proxy,
            req.method().clone(),
            path,
            req.headers(),
            intercepted,
        )
    }

    pub(super) fn of(
        proxy: &Proxy,
        method: Method,
        path: String,
        headers: &HeaderMap,
        intercepted: Option<&Intercepted>,
    ) -> Head {
        let (path, provider, origin) = match intercepted {
            Some(Intercepted {
                provider: Some(p),
                origin,
            }) => (path, *p, Some(origin.clone())),
            Some(Intercepted {
                provider: None,
                origin,
            }) => (format!("{origin}{path}"), Provider::OpenAi, None),
            None => {
                let provider = dialect::provider_of(&path, headers);
                (path, provider, None)
            }
        };
        let stored_path = dialect::without_credentials(&path);
        let stored_path = (proxy.opts.secrets.redact_path(&stored_path)).unwrap_or(stored_path);
        Head {
            method,
            path,
            stored_path,
            provider,
            origin,
            elsewhere: intercepted.is_some_and(|i| i.provider.is_none()),
        }
    }
}

pub(super) async fn handle(
    proxy: &Arc<Proxy>,
    head: Head,
    headers: HeaderMap,
    body: Incoming,
) -> Response<ProxyBody> {
    if dialect::has_dot_segment(&head.path) {
        let why = format!(
            "{} {} has a `.` or `..` segment; refused, so that no request can leave the upstream's base path",
            head.method, head.stored_path
        );
        return refuse(proxy, &head, StatusCode::BAD_REQUEST, Refusal::BadPath, why);
    }
    let too_large = |head: &Head| {
        let why = format!(
            "the request body is larger than the limit of {} bytes; raise it with --max-body-size",
            proxy.opts.max_body
        );
        refuse(
            proxy,
            head,
            StatusCode::PAYLOAD_TOO_LARGE,
            Refusal::BodyTooLarge,
            why,
        )
    };
    // A declared length over the limit is refused before the body is read.
    let declared = (headers.get(http::header::CONTENT_LENGTH))
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > proxy.opts.max_body as u64) {
        return too_large(&head);
    }
    let seq = proxy.next_seq();
    let raw = match read_request_body(body, proxy.opts.max_body).await {
        Ok(raw) => raw,
        Err(BodyError::TooLarge) => return too_large(&head),
        Err(BodyError::Stalled) => {
            let why = format!(
                "the request body stalled: nothing arrived for {}",
                humantime::format_duration(header_timeout())
            );
            let kind = Refusal::BadRequest;
            return refuse(proxy, &head, StatusCode::REQUEST_TIMEOUT, kind, why);
        }
        Err(BodyError::Broke(e)) => {
            let why = format!("failed to read the request body: {e}");
            return refuse(
                proxy,
                &head,
                StatusCode::BAD_REQUEST,
                Refusal::BadRequest,
                why,
            );
        }
    };
    answer_read(proxy, head, headers, seq, raw).await
}

/// A request numbered `seq` whose body is read (`raw`): routed, counted when it is a
/// model request, and answered. A WebSocket turn is answered here as the request it
/// carries (see `socket`).
pub(super) async fn answer_read(
    proxy: &Arc<Proxy>,
    head: Head,
    headers: HeaderMap,
    seq: u64,
    raw: Bytes,
) -> Response<ProxyBody> {
    let route = match head.elsewhere {
        true => Route::Http,
        false => Route::of(&head.method, &head.path),
    };
    let counted = route.requires_json().then(|| proxy.count_model_request());
    let due = counted.and_then(|c| proxy.faults.due(c.nth, c.turn, c.nth_in_turn));
    let resp = answer_request(proxy, head, headers, (seq, route, raw), due).await;
    if let Some(c) = counted {
        proxy.answered(c.nth, &resp);
    }
    resp
}

/// Answer the request numbered `seq`: byte-identical to a recording, as it was recorded
/// (unless a fault is due); else prepared, through the fault layer.
async fn answer_request(
    proxy: &Arc<Proxy>,
    head: Head,
    headers: HeaderMap,
    (seq, route, raw): (u64, Route, Bytes),
    due: Option<Due>,
) -> Response<ProxyBody> {
    // The key made from the bytes, when they were keyed and not served (a recording that
    // must be converted, or none left): the full path uses it rather than keying again.
    let mut keyed = None;
    if due.is_none() {
        match serve_unparsed(proxy, &head, seq, route, &raw).await {
            Ok(resp) => return resp,
            Err(key) => keyed = key,
        }
    }
    let ex = exchange(proxy, head, headers, (seq, route, raw), keyed);
    let recorded = |ex: &Exchange| would_get(proxy, ex);
    (proxy.faults)
        .layer(ex, due, recorded, |ex| answer(proxy, ex))
        .await
}

/// The exchange a request makes: its body prepared (see [`prepare_body`]) and keyed (by
/// `keyed`, the key its bytes were given, when they were).
pub(super) fn exchange(
    proxy: &Proxy,
    head: Head,
    headers: HeaderMap,
    (seq, route, raw): (u64, Route, Bytes),
    keyed: Option<String>,
) -> Exchange {
    let (route, body) = match prepare_body(proxy, route, raw.clone()) {
        Ok(b) => (route, b),
        // What the dialect cannot read is still the program's request: it goes on as plain
        // HTTP (the upstream answers it, the cassette keeps it), with a word on stderr.
        Err(e) => {
            tell!(
                "agentproxy: warning: {} {}: the body is not JSON ({e}), so it is recorded and replayed as plain HTTP, not as {}",
                head.method,
                head.stored_path,
                route.name()
            );
            (Route::Http, plain_body(proxy, raw))
        }
    };
    let key = keyed.filter(|_| route != Route::Http).unwrap_or_else(|| {
        matching::request_key(
            route.name(),
            head.method.as_str(),
            &head.stored_path,
            body.stored.as_ref(),
            &proxy.opts.rules,
        )
    });
    Exchange {
        seq,
        turn: proxy.current_turn(),
        route,
        provider: head.provider,
        origin: head.origin,
        method: head.method,
        path: head.stored_path,
        forward_path: head.path,
        headers,
        raw: body.raw,
        stored: body.stored,
        digest: body.digest,
        mocked: body.mocked,
        key,
    }
}

/// Replay without a tree: a request byte-identical to a recording (see
/// [`Replay::take_identical`]), else one keyed from its bytes (`matching::key_of_bytes`),
/// served its recording as recorded. Not with tool mocks (they rewrite the body before it
/// is keyed) or a fault that rewrites answers (a fuzz run looks at them). Match rules, a
/// recording that must be converted (a stream served whole, or the reverse) and nothing
/// left to serve take the full path (`Err`, with the key when the bytes were keyed: the
/// same key the full path would make, so it is made once).
async fn serve_unparsed(
    proxy: &Proxy,
    head: &Head,
    seq: u64,
    route: Route,
    raw: &[u8],
) -> Result<Response<ProxyBody>, Option<String>> {
    let Some(rp) = proxy.opts.replay.as_ref() else {
        return Err(None);
    };
    if proxy.opts.mocks.is_some() || proxy.faults.rewrites() {
        return Err(None);
    }
    let (method, path) = (head.method.as_str(), head.stored_path.as_str());
    let pos = match rp.take_identical(route, method, path, raw) {
        Some(pos) => pos,
        None => {
            let (secrets, rules) = (&proxy.opts.secrets, &proxy.opts.rules);
            let (key, transport) =
                matching::key_of_bytes(route.name(), (method, path), raw, secrets, rules)
                    .ok_or(None)?;
            match rp.take_as_recorded(&key, route.wants_stream(path, &transport)) {
                Some(pos) => pos,
                None => return Err(Some(key)),
            }
        }
    };
    let it = &rp.interactions[pos];
    let turn = proxy.current_turn();
    match replay::serve(rp, it, None).await {
        Ok(resp) => {
            proxy.served(seq, it, turn, &[], None);
            Ok(resp)
        }
        Err(e) => Ok(unreadable(proxy, head.provider, (method, path), pos, &e)),
    }
}

/// Answer `ex` from the cassette or the upstream, or as a miss.
async fn answer(proxy: &Arc<Proxy>, ex: Exchange) -> Response<ProxyBody> {
    if let Some(rp) = &proxy.opts.replay {
        // Lenient replay logs the request as it arrived: a caller compares what the
        // program sent (the determinism check), or sends other arguments (a fuzz run).
        if let Some(pos) = rp.take_by_position(ex.route.name(), ex.turn) {
            return serve(proxy, rp, pos, &ex, Some(&ex)).await;
        }
        match rp.take(&ex.key) {
            Lookup::Hit(pos) => return serve(proxy, rp, pos, &ex, None).await,
            miss if proxy.opts.upstream.is_none() => return answer_miss(proxy, rp, &ex, miss),
            _ => {}
        }
    }
    match &proxy.opts.upstream {
        Some(up) => record::forward(proxy, up, ex).await,
        // A proxy is built with a cassette, an upstream or both; without either, nothing matches.
        None => {
            let head = Head {
                method: ex.method,
                path: ex.forward_path,
                stored_path: ex.path,
                provider: ex.provider,
                origin: ex.origin,
                elsewhere: false,
            };
            let why = "no cassette and no upstream".to_owned();
            refuse(
                proxy,
                &head,
                StatusCode::BAD_REQUEST,
                Refusal::CassetteMiss,
                why,
            )
        }
    }
}

/// Serve the recording at `pos` to `ex`, logged with the request as it `arrived` when
/// given.
async fn serve(
    proxy: &Proxy,
    rp: &Replay,
    pos: usize,
    ex: &Exchange,
    arrived: Option<&Exchange>,
) -> Response<ProxyBody> {
    let it = &rp.interactions[pos];
    match replay::serve(rp, it, Some(ex)).await {
        Ok(resp) => {
            proxy.served(ex.seq, it, ex.turn, &ex.mocked, arrived);
            resp
        }
        Err(e) => unreadable(proxy, ex.provider, (ex.method.as_str(), &ex.path), pos, &e),
    }
}

/// The recording at `pos` matched but could not be read (its cassette changed on disk
/// since it loaded): a miss, reported and answered as one, saying why.
fn unreadable(
    proxy: &Proxy,
    provider: Provider,
    request: (&str, &str),
    pos: usize,
    e: &CassetteError,
) -> Response<ProxyBody> {
    let report = miss::note_unreadable(proxy, request, pos, e);
    miss_response(provider, &report)
}

/// An error the proxy answers itself, in the provider's shape. Except for a miss (which
/// has its own report), it is noted in the outcome, so a run that recorded nothing can
/// say what happened. The head's stored path is shown: no credential, no secret value.
pub(super) fn refuse(
    proxy: &Proxy,
    head: &Head,
    status: StatusCode,
    kind: Refusal,
    msg: String,
) -> Response<ProxyBody> {
    if kind != Refusal::CassetteMiss {
        let why = format!(
            "{} {}: {} {msg}",
            head.method,
            head.stored_path,
            status.as_u16()
        );
        proxy.lock().rejected.push(why);
    }
    let body = dialect::error_body(
        head.provider,
        status.as_u16(),
        kind,
        &format!("agentproxy: {msg}"),
    );
    json_response(status, &body)
}

/// A request body made ready: a JSON body gets its tool results mocked first, so the mock
/// is what is matched, recorded and forwarded; then secret values become `${NAME}` in the
/// stored copy.
struct Prepared {
    /// The bytes to forward.
    raw: Bytes,
    /// The body as it will be stored and keyed.
    stored: Option<Body>,
    /// The digest of `raw`, when it held no secret.
    digest: Option<u128>,
    /// The ids of the tool calls whose results a mock wrote.
    mocked: Vec<String>,
}

fn prepare_body(proxy: &Proxy, route: Route, raw: Bytes) -> Result<Prepared, serde_json::Error> {
    match serde_json::from_slice::<Value>(&raw) {
        Ok(mut v) => {
            let mut raw = raw;
            let mocked = (proxy
                .mock_results(|lookup, mock| route.rewrite_tool_results(&mut v, lookup, mock)))
            .unwrap_or_default();
            if !mocked.is_empty() {
                raw = Bytes::from(serde_json::to_vec(&v)?);
            }
            let redacted = proxy.opts.secrets.redact_value(&mut v);
            // Only a recording keeps the digest.
            let digest = (!redacted && proxy.opts.upstream.is_some())
                .then(|| matching::key::body_digest(&raw));
            Ok(Prepared {
                raw,
                stored: Some(Body::Json(v.into())),
                digest,
                mocked,
            })
        }
        // A model route's dialect needs JSON: its caller goes on as plain HTTP.
        Err(e) if route.requires_json() => Err(e),
        Err(_) => Ok(plain_body(proxy, raw)),
    }
}

/// A body that is not JSON, as it is forwarded and stored (text with its secrets redacted).
fn plain_body(proxy: &Proxy, raw: Bytes) -> Prepared {
    let stored = (!raw.is_empty()).then(|| match Body::from_bytes(&raw) {
        Body::Text(t) => Body::Text(proxy.opts.secrets.redact_str(&t).unwrap_or(t)),
        other => other,
    });
    Prepared {
        raw,
        stored,
        digest: None,
        mocked: Vec::new(),
    }
}

/// A miss: report it (stderr and the outcome) and answer a non-retryable 4xx in the
/// provider's error shape, so the SDK raises instead of retrying.
fn answer_miss(proxy: &Proxy, rp: &Replay, ex: &Exchange, lookup: Lookup) -> Response<ProxyBody> {
    let normalized_now = ex
        .json()
        .map(|b| matching::normalize::normalize(b, &proxy.opts.rules))
        .unwrap_or(Value::Null);
    let report = miss::note(
        proxy,
        rp,
        (ex.method.as_str(), &ex.path, ex.route.name()),
        &normalized_now,
        lookup,
    );
    miss_response(ex.provider, &report)
}

/// A miss's answer: a non-retryable 4xx in the provider's error shape, so the SDK raises
/// instead of retrying.
fn miss_response(provider: Provider, report: &str) -> Response<ProxyBody> {
    let mut resp = json_response(
        StatusCode::BAD_REQUEST,
        &dialect::error_body(
            provider,
            StatusCode::BAD_REQUEST.as_u16(),
            Refusal::CassetteMiss,
            &format!("agentproxy: {report}"),
        ),
    );
    resp.headers_mut()
        .insert("x-should-retry", http::HeaderValue::from_static("false"));
    resp
}

/// What `ex` would be answered with, for a fault that cuts or spoils it: its recording,
/// left in place for the retry, or (recording, or nothing recorded) an empty reply.
fn would_get(proxy: &Proxy, ex: &Exchange) -> Recorded {
    let recorded = proxy.opts.replay.as_ref().and_then(|rp| {
        let pos = rp.peek(&ex.key)?;
        Some(&rp.interactions[pos].response)
    });
    let recorded = recorded.filter(|r| (200..300).contains(&r.status));
    if let Some(rec) = recorded {
        if let Some(body) = rec.body.as_ref().and_then(Body::as_json) {
            let events = rec.event_frames().map(|evs| (evs, rec.framing()));
            return Recorded::of(ex, body, events);
        }
        if let Some(events) = rec.event_frames() {
            return Recorded::Events(events, rec.framing());
        }
    }
    let request = ex.json().cloned().unwrap_or_default();
    let model = (ex.route.model(&request)).unwrap_or_else(|| "agentproxy".to_owned());
    let stand_in = ex
        .route
        .text_response(&request, &model, "")
        .unwrap_or_default();
    Recorded::of(ex, &stand_in, None)
}
