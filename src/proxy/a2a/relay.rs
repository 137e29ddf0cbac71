//! Record: each call forwarded to the agent with the program's headers, its answer
//! relayed as it comes and stored once complete.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::exchange::{interaction, point_here, refused, Answer, Call};
use crate::dialect::a2a as wire;
use crate::proxy::body::{full, ChannelBody, ProxyBody};
use crate::proxy::state::Proxy;
use crate::sse::SseParser;

/// Response headers passed back to the client: the type, and the challenge of an agent
/// that asks for credentials.
const KEPT: [&str; 2] = ["content-type", "www-authenticate"];

/// The agent's URL for the relay's path `rest`: its base, joined.
fn url(base: &str, rest: &str) -> String {
    match rest {
        "" => base.to_owned(),
        rest => format!("{}/{rest}", base.trim_end_matches('/')),
    }
}

fn ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Note that the recording of `agent` misses an exchange: the session fails.
fn incomplete(proxy: &Proxy, agent: &str, why: &str) {
    let why = format!("agent `{agent}`: an exchange was not recorded: {why}");
    proxy.lock().upstream_errors.push(why);
}

/// The answer to a call the agent failed (`why`), which is one of the session's upstream
/// errors.
fn failed(proxy: &Proxy, why: String) -> Response<ProxyBody> {
    proxy.lock().upstream_errors.push(why.clone());
    refused(StatusCode::BAD_GATEWAY, why)
}

async fn send(
    proxy: &Proxy,
    call: &Call<'_>,
    (method, headers): (Method, &HeaderMap),
    body: Bytes,
) -> Result<Response<Incoming>, Response<ProxyBody>> {
    let Some(up) = &proxy.opts.upstream else {
        return Err(failed(proxy, "no upstream in this session".into()));
    };
    let to = url(call.base.unwrap_or_default(), call.rest);
    (up.send(method, &to, headers, body).await)
        .map_err(|e| failed(proxy, format!("agent `{}`: {e}", call.agent)))
}

fn kept(from: &HeaderMap) -> HeaderMap {
    (KEPT.iter())
        .filter_map(|k| Some((http::HeaderName::from_static(k), from.get(*k)?.clone())))
        .collect()
}

/// The agent's card, stored; a card the agent would not give is its answer, passed on.
pub(super) async fn fetch_card(
    proxy: &Arc<Proxy>,
    call: &Call<'_>,
    parts: &http::request::Parts,
) -> Result<Value, Response<ProxyBody>> {
    let started = Instant::now();
    let seq = proxy.next_seq();
    let resp = send(proxy, call, (Method::GET, &parts.headers), Bytes::new()).await?;
    let (head, body) = resp.into_parts();
    let bytes = match Limited::new(body, proxy.opts.max_body).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return Err(failed(
                proxy,
                format!("agent `{}`: its card could not be read ({e})", call.agent),
            ))
        }
    };
    let card = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .filter(|_| head.status.is_success());
    let Some(card) = card else {
        incomplete(
            proxy,
            call.agent,
            &format!("its card was not given (HTTP {})", head.status),
        );
        let mut out = Response::new(full(bytes));
        *out.status_mut() = head.status;
        *out.headers_mut() = kept(&head.headers);
        return Err(out);
    };
    let keyed = json!({ "agent": call.agent, "method": wire::CARD });
    let it = interaction(
        proxy,
        call.agent,
        wire::CARD,
        keyed,
        Answer::Json(card.clone()),
        ms(started),
    );
    proxy.recorded(seq, it);
    Ok(card)
}

/// Forward a call and relay its answer, storing it: JSON at once, a stream once it ends.
pub(super) async fn forward(
    proxy: &Arc<Proxy>,
    call: &Call<'_>,
    (parts, raw): (http::request::Parts, Bytes),
    (method, msg): (&str, &Value),
) -> Response<ProxyBody> {
    let started = Instant::now();
    let keyed = wire::keyed(call.agent, method, msg);
    let seq = proxy.next_seq();
    let resp = match send(proxy, call, (Method::POST, &parts.headers), raw).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let (head, body) = resp.into_parts();
    let headers = kept(&head.headers);
    let content_type = (head.headers.get(http::header::CONTENT_TYPE))
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let agent = call.agent.to_owned();
    let method = method.to_owned();
    if head.status.is_success() && content_type.starts_with("text/event-stream") {
        let (tx, rx) = mpsc::channel(16);
        let proxy = proxy.clone();
        proxy.tasks.clone().spawn(async move {
            let (answers, aborted) = relay(&proxy, &agent, body, tx).await;
            if answers.is_empty() {
                incomplete(&proxy, &agent, "its event stream ended without an answer");
                return;
            }
            let answer = Answer::Stream { answers, aborted };
            let it = interaction(&proxy, &agent, &method, keyed, answer, ms(started));
            proxy.recorded(seq, it);
        });
        let mut out = Response::new(ChannelBody::new(rx).boxed());
        *out.status_mut() = head.status;
        *out.headers_mut() = headers;
        return out;
    }
    let bytes = match Limited::new(body, proxy.opts.max_body).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return failed(
                proxy,
                format!("agent `{agent}`: its answer could not be read ({e})"),
            )
        }
    };
    let answer = serde_json::from_slice::<Value>(&bytes).ok();
    let mut bytes = bytes;
    match answer.filter(|_| head.status.is_success()) {
        Some(mut a) if a.get("result").is_some() || a.get("error").is_some() => {
            let stored = Answer::Json(wire::stored(&a));
            let it = interaction(proxy, &agent, &method, keyed, stored, ms(started));
            proxy.recorded(seq, it);
            // An extended card points its client here too.
            if wire::gives_card(&method) {
                point_here(proxy, call, &mut a["result"], false);
                bytes = Bytes::from(serde_json::to_vec(&a).unwrap_or_default());
            }
        }
        // An HTTP error is no JSON-RPC answer: a replay would have nothing to serve.
        _ => incomplete(
            proxy,
            &agent,
            &format!(
                "the agent answered HTTP {} without a JSON-RPC answer",
                head.status
            ),
        ),
    }
    let mut out = Response::new(full(bytes));
    *out.status_mut() = head.status;
    *out.headers_mut() = headers;
    out
}

/// Pass an SSE answer on chunk by chunk; the answers its events carried, stored-form, and
/// why it broke off, if it did (or why it could not be kept whole: past `--max-body-size`).
/// A client that hangs up does not stop the recording.
async fn relay(
    proxy: &Proxy,
    agent: &str,
    mut body: Incoming,
    tx: mpsc::Sender<std::io::Result<Bytes>>,
) -> (Vec<Value>, Option<String>) {
    let mut parser = SseParser::new();
    let mut answers = Vec::new();
    let idle = (proxy.opts.upstream.as_ref())
        .map(|up| up.timeout())
        .unwrap_or_default();
    let (mut client_gone, mut read) = (false, 0usize);
    let keep = |event: crate::sse::SseEvent, answers: &mut Vec<Value>| {
        if let Ok(answer) = serde_json::from_str::<Value>(&event.data) {
            answers.push(wire::stored(&answer));
        }
    };
    loop {
        let frame = tokio::select! {
            frame = body.frame() => frame,
            _ = tokio::time::sleep(idle), if !idle.is_zero() => {
                let why = "the agent went silent";
                let _ = tx.send(Err(std::io::Error::other(why))).await;
                return (answers, Some(why.into()));
            }
        };
        let chunk = match frame {
            None => {
                // A last event without its closing blank line is an event all the same.
                if let Some(event) = parser.finish() {
                    keep(event, &mut answers);
                }
                return (answers, None);
            }
            Some(Err(e)) => {
                let why = format!("the agent's stream broke off: {e}");
                let _ = tx.send(Err(std::io::Error::other(why.clone()))).await;
                return (answers, Some(why));
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(chunk) => chunk,
                Err(_) => continue,
            },
        };
        read += chunk.len();
        if read > proxy.opts.max_body {
            let why = format!(
                "the agent's stream passed {} bytes (--max-body-size)",
                proxy.opts.max_body
            );
            let _ = tx.send(Err(std::io::Error::other(why.clone()))).await;
            incomplete(proxy, agent, &why);
            return (answers, Some(why));
        }
        for event in parser.push(&chunk) {
            keep(event, &mut answers);
        }
        if !client_gone && tx.send(Ok(chunk)).await.is_err() {
            client_gone = true;
        }
    }
}
