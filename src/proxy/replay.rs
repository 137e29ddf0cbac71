//! Replay: answer from a recorded interaction, converting between streamed and whole
//! bodies when the program asks for the other kind than was recorded.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};

use super::body::{chunks, full, paced_chunks, ProxyBody};
use super::exchange::Exchange;
use super::Replay;
use crate::cassette::Interaction;
use crate::sse;

/// Serve `it` to the request `ex`; `None` is a request byte-identical to the recorded one,
/// which gets the response exactly as it was recorded (a stream if the upstream streamed).
pub(super) async fn serve(
    rp: &Replay,
    it: &Interaction,
    ex: Option<&Exchange>,
) -> Response<ProxyBody> {
    let rec = &it.response;
    let status = StatusCode::from_u16(rec.status).unwrap_or(StatusCode::OK);
    let events: Option<Vec<Bytes>> = match (&rec.events, ex) {
        (_, None) => rec.event_frames(),
        (Some(_), Some(ex)) if ex.wants_stream() => rec.event_frames(),
        // Plain-HTTP streams have no assembled form: serve their events whatever was asked.
        (Some(_), Some(_)) if rec.body.is_none() => rec.event_frames(),
        (None, Some(ex)) if status.is_success() && ex.wants_stream() => rec
            .body
            .as_ref()
            .and_then(|b| b.as_json())
            .and_then(|c| ex.synthesize(c))
            .map(|evs| evs.iter().map(sse::encode).collect()),
        _ => None,
    };
    let latency = Duration::from_millis(if rp.realtime { it.latency_ms } else { 0 });
    // A recording of a stream that broke off replays as one that breaks off.
    let abort = rec.aborted.as_deref();
    let mut resp = match events {
        Some(evs) => {
            let mut r = if rp.realtime {
                Response::new(paced_chunks(pace(evs, latency), abort))
            } else {
                Response::new(chunks(evs, abort))
            };
            r.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream; charset=utf-8"),
            );
            r
        }
        None => {
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
            // An aborted stream has no whole form: the body breaks off at once.
            let mut r = match abort {
                Some(why) => Response::new(chunks(vec![], Some(why))),
                None => Response::new(full(rec.body_bytes())),
            };
            for (name, value) in &rec.headers {
                if let (Ok(n), Ok(v)) = (
                    http::HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(value),
                ) {
                    r.headers_mut().insert(n, v);
                }
            }
            // A stream recording served whole is JSON now, whatever the stream's type was.
            if rec.events.is_some() {
                r.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
            }
            r
        }
    };
    *resp.status_mut() = status;
    resp
}

/// Spread a recorded latency evenly over the events: the first after one share, like a
/// model's time to first token, the rest after theirs.
fn pace(events: Vec<Bytes>, total: Duration) -> Vec<(Duration, Bytes)> {
    let n = u32::try_from(events.len().max(1)).unwrap_or(u32::MAX);
    let step = total / n;
    events.into_iter().map(|e| (step, e)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacing_spreads_the_latency() {
        let evs = vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")];
        let paced = pace(evs, Duration::from_millis(100));
        let total: Duration = paced.iter().map(|(d, _)| *d).sum();
        assert_eq!(total, Duration::from_millis(100));
    }
}
