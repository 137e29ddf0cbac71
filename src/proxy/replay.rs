//! Replay: the recordings a session serves, found by key, by digest or by position, and
//! the answer from a recorded interaction, converting between streamed and whole bodies
//! when the program asks for the other kind than was recorded.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};

use super::body::{chunks, full, paced_chunks, ProxyBody};
use super::egress::host_port;
use super::exchange::Exchange;
use crate::cassette::{Body, CassetteError, Interaction};
use crate::dialect::Route;
use crate::matching::index::{ByPosition, Index, Lookup, Repeat};
use crate::matching::key;
use crate::matching::sketch::Sketch;
use crate::sse::Framing;

/// What a session serves from a cassette.
pub struct Replay {
    pub interactions: Vec<Interaction>,
    index: Mutex<Index>,
    /// The first recording of each request body digest (see [`Replay::take_identical`]).
    by_digest: HashMap<u128, usize>,
    /// Serve streams paced by their recorded latency.
    pub realtime: bool,
    /// Lenient replay: serve by position instead of by key (see [`Replay::lenient`]).
    by_position: Option<Mutex<ByPosition>>,
    /// Each recording's request sketch, built at the first miss (see [`Replay::sketches`]).
    sketches: OnceLock<Vec<Option<Sketch>>>,
    /// The other hosts (`host:port`) whose requests the cassette holds under their whole
    /// URL (`--record-other-hosts`): a replay intercepts them and serves their recordings.
    other_hosts: HashSet<String>,
}

impl Replay {
    /// Keys must already be computed under the rules the session matches with.
    pub fn new(interactions: Vec<Interaction>, repeat: Repeat, realtime: bool) -> Replay {
        let index = Index::new(interactions.iter().map(|i| i.key.as_str()), repeat);
        let mut by_digest = HashMap::new();
        let mut other_hosts = HashSet::new();
        for (pos, it) in interactions.iter().enumerate() {
            if let Some(host) = host_port(&it.request.path) {
                other_hosts.insert(host);
            }
            let digest = it.request.body_xxh3.as_deref();
            if let Some(d) = digest.and_then(key::parse_digest) {
                by_digest.entry(d).or_insert(pos);
            }
        }
        Replay {
            interactions,
            index: Mutex::new(index),
            by_digest,
            realtime,
            by_position: None,
            sketches: OnceLock::new(),
            other_hosts,
        }
    }

    /// The other hosts (`host:port`) whose requests the cassette holds.
    pub fn other_hosts(&self) -> &HashSet<String> {
        &self.other_hosts
    }

    /// Each recording's request sketch, in cassette order (`None`: a body that is not
    /// JSON), built from the loaded text at the first miss, on every core, and kept for
    /// the next ones.
    pub fn sketches(&self) -> &[Option<Sketch>] {
        self.sketches.get_or_init(|| {
            let sketch = |i: &Interaction| match &i.request.body {
                Some(Body::Json(lazy)) => match lazy.text() {
                    Some(text) => Sketch::of_text(&text),
                    None => Some(Sketch::of_value(lazy.get())),
                },
                _ => None,
            };
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let part = self.interactions.len().div_ceil(cores).max(1);
            std::thread::scope(|scope| {
                let parts: Vec<_> = (self.interactions.chunks(part))
                    .map(|chunk| {
                        let built = scope.spawn(move || chunk.iter().map(sketch).collect());
                        (chunk.len(), built)
                    })
                    .collect();
                // A part that failed has no sketches: its recordings rank last.
                (parts.into_iter())
                    .flat_map(|(len, built)| built.join().unwrap_or_else(|_| vec![None; len]))
                    .collect()
            })
        })
    }

    /// Serve each model request the recording at the same position for its route and
    /// turn, whatever its body, so a program whose requests drift still runs to its end
    /// (the determinism check). The served exchange is logged with the request as it
    /// arrived, not as it was recorded.
    pub fn lenient(mut self) -> Replay {
        let slots = self.interactions.iter().map(|i| (i.route.as_str(), i.turn));
        self.by_position = Some(Mutex::new(ByPosition::new(slots)));
        self
    }

    /// Lenient replay only: the recording at the next position for `route` in `turn`.
    pub(super) fn take_by_position(&self, route: &str, turn: Option<usize>) -> Option<usize> {
        let ix = self.by_position.as_ref()?;
        ix.lock()
            .unwrap_or_else(|p| p.into_inner())
            .take(route, turn)
    }

    /// Whether requests are served by position (see [`Replay::lenient`]).
    pub(super) fn is_lenient(&self) -> bool {
        self.by_position.is_some()
    }

    /// Take the next recording of `key`.
    pub(super) fn take(&self, key: &str) -> Lookup {
        self.index().take(key)
    }

    /// The next recording of `key`, left in place.
    pub(super) fn peek(&self, key: &str) -> Option<usize> {
        self.index().peek(key)
    }

    /// The fast path of replay: when `body` is byte-identical to a recorded request body
    /// (same digest) on the same route, take the next interaction of that recording's key
    /// without parsing the body: the same bytes parse to the same body, so the key could
    /// only be the same. Not in lenient replay; a key with nothing left falls through to
    /// the full path, which reports the miss.
    pub(super) fn take_identical(
        &self,
        route: Route,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> Option<usize> {
        if self.by_digest.is_empty() || self.is_lenient() {
            return None;
        }
        let first = &self.interactions[*self.by_digest.get(&key::body_digest(body))?];
        // The key covers the route, and for plain HTTP the method and path too. A dialect
        // that reads part of the request from the path (Gemini: the model, and whether a
        // stream is wanted) is served as recorded only for the same path.
        let path_matters = first.route == Route::Http.name() || route.key_scope(path).is_some();
        let same_scope = first.route == route.name()
            && (!path_matters || (first.request.method == method && first.request.path == path));
        if !same_scope {
            return None;
        }
        match self.take(&first.key) {
            Lookup::Hit(pos) => Some(pos),
            _ => None,
        }
    }

    /// The next recording of `key`, taken only if it answers a request that does or does
    /// not `want_stream` as it was recorded (see [`serve`]); else left in place, for the
    /// full path to convert.
    pub(super) fn take_as_recorded(&self, key: &str, want_stream: bool) -> Option<usize> {
        if self.is_lenient() {
            return None;
        }
        let mut index = self.index();
        let pos = index.peek(key)?;
        if !served_as_recorded(&self.interactions[pos], want_stream) {
            return None;
        }
        match index.take(key) {
            Lookup::Hit(pos) => Some(pos),
            _ => None,
        }
    }

    /// Recordings never served, as `#3 POST /v1/chat/completions (openai.chat)`.
    pub(super) fn unused(&self) -> Vec<String> {
        let positions = self.index().unused();
        positions
            .into_iter()
            .map(|pos| {
                let it = &self.interactions[pos];
                format!(
                    "#{pos} {} {} ({})",
                    it.request.method, it.request.path, it.route
                )
            })
            .collect()
    }

    /// The index lock; a panic elsewhere must not stop the replay, so poisoning is ignored.
    fn index(&self) -> std::sync::MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Serve `it` to the request `ex`; `None` is a request byte-identical to the recorded one,
/// which gets the response exactly as it was recorded (a stream if the upstream streamed).
/// Fails when the recorded body is in a cassette file that changed since it loaded.
pub(super) async fn serve(
    rp: &Replay,
    it: &Interaction,
    ex: Option<&Exchange>,
) -> Result<Response<ProxyBody>, CassetteError> {
    let rec = &it.response;
    let status = StatusCode::from_u16(rec.status).unwrap_or(StatusCode::OK);
    let recorded = || rec.event_frames().map(|evs| (evs, rec.framing()));
    let events: Option<(Vec<Bytes>, Framing)> = match (&rec.events, ex) {
        (_, None) => recorded(),
        (Some(_), Some(ex)) if ex.wants_stream() => recorded(),
        // Plain-HTTP streams have no assembled form: serve their events whatever was asked.
        (Some(_), Some(_)) if rec.body.is_none() => recorded(),
        (None, Some(ex)) if status.is_success() && ex.wants_stream() => rec
            .body
            .as_ref()
            .and_then(|b| b.as_json())
            .and_then(|c| ex.synthesize(c))
            .map(|evs| {
                let framing = ex.framing();
                (evs.iter().map(|e| framing.encode(e)).collect(), framing)
            }),
        _ => None,
    };
    let latency = Duration::from_millis(if rp.realtime { it.latency_ms } else { 0 });
    // A recording of a stream that broke off replays as one that breaks off.
    let abort = rec.aborted.as_deref();
    let mut resp = match events {
        Some((evs, framing)) => {
            let mut r = if rp.realtime {
                Response::new(paced_chunks(pace(evs, latency, &rec.event_ms), abort))
            } else {
                Response::new(chunks(evs, abort))
            };
            r.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static(framing.content_type()),
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
                None => Response::new(full(rec.body_bytes()?)),
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
    Ok(resp)
}

/// Does [`serve`] answer a request that does or does not `want_stream` with `it` exactly
/// as recorded? Not when it turns a recorded stream into a whole body, or a whole body
/// into a stream.
fn served_as_recorded(it: &Interaction, want_stream: bool) -> bool {
    let rec = &it.response;
    match &rec.events {
        Some(_) => want_stream || rec.body.is_none(),
        None => !want_stream || !StatusCode::from_u16(rec.status).is_ok_and(|s| s.is_success()),
    }
}

/// The pause before each event: each at its recorded time `at` (milliseconds since the
/// request), when there is one per event; else a recorded latency spread evenly over them,
/// the first after one share, like a model's time to first token, the rest after theirs.
fn pace(events: Vec<Bytes>, total: Duration, at: &[u64]) -> Vec<(Duration, Bytes)> {
    if at.len() == events.len() {
        let since = std::iter::once(0).chain(at.iter().copied());
        let pauses = at
            .iter()
            .zip(since)
            .map(|(t, before)| t.saturating_sub(before));
        return (pauses.map(Duration::from_millis)).zip(events).collect();
    }
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
        let paced = pace(evs.clone(), Duration::from_millis(100), &[]);
        let total: Duration = paced.iter().map(|(d, _)| *d).sum();
        assert_eq!(total, Duration::from_millis(100));
        // Each event when it came: 40 ms, then 250 ms in.
        let paced = pace(evs, Duration::from_millis(100), &[40, 250]);
        let pauses: Vec<u64> = paced.iter().map(|(d, _)| d.as_millis() as u64).collect();
        assert_eq!(pauses, [40, 210]);
    }
}
