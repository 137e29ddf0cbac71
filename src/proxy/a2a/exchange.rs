//! What the relay's parts share: a call as the relay reads it, an answer as stored, the
//! interaction a cassette keeps of them, and the responses written to the client.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use serde_json::{json, Value};

use crate::cassette::{Body, Interaction, RecordedResponse};
use crate::dialect::a2a as wire;
use crate::proxy::body::{chunks, json_response, ProxyBody};
use crate::proxy::state::Proxy;
use crate::sse::SseEvent;

/// One request to an agent's relay, read.
pub(super) struct Call<'a> {
    pub agent: &'a str,
    /// The agent's base URL, if the session was given one.
    pub base: Option<&'a str>,
    /// The path after the agent's name (`""`, `rpc`, the card's path).
    pub rest: &'a str,
    /// This relay's URL as the client reaches it, without a trailing `/`.
    pub relay: String,
}

/// Point the interface URLs `card` advertises at this relay (see
/// [`wire::rewrite_card`]); one that is not under the agent's base URL fails the session,
/// since calls there would pass by unrecorded. `any_host`: compare paths only (a replay).
pub(super) fn point_here(proxy: &Proxy, call: &Call<'_>, card: &mut Value, any_host: bool) {
    let base = call.base.unwrap_or_default();
    let left = wire::rewrite_card(card, |url| {
        wire::under_base(url, base, any_host).map(|rest| format!("{}/{rest}", call.relay))
    });
    for url in left {
        let why = format!(
            "agent `{}`: its card advertises {url}, which is not under {base}: calls there would pass by agentproxy unrecorded; give the agent's base URL with --a2a {}=URL",
            call.agent, call.agent
        );
        crate::tell!("agentproxy: {why}");
        proxy.lock().upstream_errors.push(why);
    }
}

/// A refusal of the relay's own, as JSON.
pub(super) fn refused(status: StatusCode, why: String) -> Response<ProxyBody> {
    json_response(status, &json!({ "error": format!("agentproxy: {why}") }))
}

/// An SSE stream of `answers`, breaking off after them with `abort`.
pub(super) fn stream(answers: &[Value], abort: Option<&str>) -> Response<ProxyBody> {
    let frames = (answers.iter())
        .map(|a| Bytes::from(format!("data: {a}\n\n")))
        .collect();
    let mut resp = Response::new(chunks(frames, abort));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    resp
}

/// An exchange with `agent` as a cassette keeps it: the call as [`wire::keyed`] has it,
/// the answer as [`wire::stored`] does, a stream's answers as its events (their task, as
/// assembled, the body).
pub(super) fn interaction(
    proxy: &Proxy,
    agent: &str,
    method: &str,
    keyed: Value,
    answer: Answer,
    latency_ms: u64,
) -> Interaction {
    let (mut stored, events, aborted) = match answer {
        Answer::Json(v) => (v, None, None),
        Answer::Stream { answers, aborted } => {
            // A stream that answered with an error has that error as its body.
            let error = answers.iter().find(|a| a.get("error").is_some());
            let results: Vec<&Value> = answers.iter().filter_map(|a| a.get("result")).collect();
            let body = match error {
                Some(e) => e.clone(),
                None => json!({ "result": wire::assemble(results) }),
            };
            let events = (answers.iter())
                .map(|a| {
                    let mut a = a.clone();
                    proxy.opts.secrets.redact_value(&mut a);
                    SseEvent {
                        event: None,
                        id: None,
                        data: a.to_string(),
                    }
                })
                .collect();
            (body, Some(events), aborted)
        }
    };
    proxy.opts.secrets.redact_value(&mut stored);
    let stored = Some(Body::Json(stored.into()));
    let response = RecordedResponse::new(200, Default::default(), stored, events, aborted);
    let at = (wire::ROUTE, method, agent);
    crate::proxy::record::boundary(proxy, at, keyed, response, latency_ms)
}

/// What an agent answered, as stored: `{result}`/`{error}`, or a stream's answers in order.
pub(super) enum Answer {
    Json(Value),
    Stream {
        answers: Vec<Value>,
        aborted: Option<String>,
    },
}
