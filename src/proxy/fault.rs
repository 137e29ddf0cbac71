//! Injected faults: which model request gets one (counted per case and per turn), and the
//! answer it gets instead of its recording or the upstream's. A faulted request uses up
//! no recording and is never forwarded: the retry gets what the request would have.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};

use super::body::{chunks, full, json_response, ProxyBody};
use super::exchange::Exchange;
use super::Proxy;
use crate::dialect::ErrorFault;
use crate::fault::{Fault, Fired, Kind};
use crate::sse::{self, SseEvent};

/// A response the accept loop must not send: it closes the connection instead, so the
/// client sees no answer at all.
#[derive(Debug, Clone, Copy)]
pub struct Disconnect;

/// A fault a request is due to get.
pub(super) struct Due {
    pub fault: Fault,
    /// The request's number in the case, and its turn.
    nth: usize,
    turn: Option<usize>,
}

/// Count a model request; the fault it gets, if one.
pub(super) fn next(proxy: &Proxy) -> Option<Due> {
    let turn = proxy.current_turn();
    let mut st = proxy.lock();
    st.model_requests += 1;
    let nth = st.model_requests;
    let in_turn = st.turn_requests.entry(turn).or_default();
    *in_turn += 1;
    let nth_in_turn = *in_turn;
    let fault = proxy.opts.faults.pick(nth, turn, nth_in_turn)?.clone();
    Some(Due { fault, nth, turn })
}

/// Remember that `due` fired, answered with `resp`.
pub(super) fn note(proxy: &Proxy, due: &Due, resp: &Response<ProxyBody>) {
    let fired = Fired {
        request: due.nth,
        turn: due.turn,
        kind: due.fault.kind,
        status: (resp.extensions().get::<Disconnect>().is_none()).then(|| resp.status().as_u16()),
    };
    proxy.lock().fired.push(fired);
}

/// Serve `fault` to `ex`. `recorded` is the stream (or whole body) the request would have
/// got, for the kinds that cut or spoil it.
pub(super) async fn serve(ex: &Exchange, fault: &Fault, recorded: Recorded) -> Response<ProxyBody> {
    let error = |e: ErrorFault| {
        let (status, body) = ex
            .route
            .fault_error(e)
            .unwrap_or((500, serde_json::Value::Null));
        json_response(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            &body,
        )
    };
    match fault.kind {
        Kind::RateLimit => {
            let mut resp = error(ErrorFault::RateLimit);
            let secs = fault.retry_after.as_secs_f64().ceil();
            let h = resp.headers_mut();
            h.insert("retry-after", HeaderValue::from(secs as u64));
            h.insert(
                "retry-after-ms",
                HeaderValue::from(u64::try_from(fault.retry_after.as_millis()).unwrap_or(u64::MAX)),
            );
            resp
        }
        Kind::ServerError => error(ErrorFault::ServerError(fault.status)),
        Kind::Overloaded => error(ErrorFault::Overloaded),
        Kind::Timeout => {
            tokio::time::sleep(fault.hold).await;
            disconnect()
        }
        Kind::Disconnect => disconnect(),
        Kind::TruncateStream => match recorded {
            Recorded::Events(evs) => {
                let kept = evs.into_iter().take(fault.after_events).collect();
                stream(chunks(kept, Some(CUT)))
            }
            // A whole body breaks off halfway.
            Recorded::Whole(bytes) => {
                let half = bytes.slice(..bytes.len() / 2);
                let mut resp = Response::new(chunks(vec![half], Some(CUT)));
                resp.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                resp
            }
        },
        Kind::StreamError => match (recorded, ex.route.stream_error()) {
            (Recorded::Events(evs), Some(err)) => {
                // The first event, then the error: the stream had started.
                let mut kept: Vec<Bytes> = evs.into_iter().take(1).collect();
                kept.push(sse::encode(&err));
                stream(chunks(kept, None))
            }
            // A request that does not stream gets the server error instead.
            _ => error(ErrorFault::ServerError(500)),
        },
    }
}

/// The abort a cut stream ends with.
const CUT: &str = "agentproxy: the stream was cut (truncate_stream fault)";

/// What a request would have been answered with, for faults that spoil an answer.
pub(super) enum Recorded {
    /// A stream's encoded events.
    Events(Vec<Bytes>),
    /// A whole body.
    Whole(Bytes),
}

impl Recorded {
    /// The answer for `ex`: `response` (recorded, or a stand-in) as a stream when the
    /// request wants one, else whole.
    pub fn of(ex: &Exchange, response: &serde_json::Value, events: Option<Vec<Bytes>>) -> Recorded {
        if ex.wants_stream() {
            let events = events.or_else(|| {
                let evs: Vec<SseEvent> = ex.synthesize(response)?;
                Some(evs.iter().map(sse::encode).collect())
            });
            if let Some(evs) = events {
                return Recorded::Events(evs);
            }
        }
        Recorded::Whole(Bytes::from(
            serde_json::to_vec(response).unwrap_or_default(),
        ))
    }
}

fn stream(body: ProxyBody) -> Response<ProxyBody> {
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    resp
}

fn disconnect() -> Response<ProxyBody> {
    let mut resp = Response::new(full(Bytes::new()));
    resp.extensions_mut().insert(Disconnect);
    resp
}
