//! The load generator: a hyper 1 client (hyper-util's legacy pooled client, HTTP/1.1,
//! keep-alive) driving `concurrency` request loops, each bounded by a request count and a
//! deadline, recording one latency per request.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioTimer};

pub const THREAD_NAME: &str = "bench-client";

pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// A keep-alive pool; each target gets its own so connections are never shared.
pub fn client() -> HttpClient {
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(Duration::from_secs(90))
        .build(http)
}

/// What one request's latency is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Until the whole response body has arrived.
    Whole,
    /// Until the first body chunk has arrived (the rest is still read, and timed too).
    FirstChunk,
}

/// One load run.
pub struct Load {
    pub url: Uri,
    /// Request bodies, sent in order and round and round.
    pub bodies: Arc<Vec<Bytes>>,
    /// The response length each body must get (same index), or one length for all; empty: any.
    pub expect_len: Arc<Vec<usize>>,
    pub concurrency: usize,
    pub max_requests: usize,
    pub max_time: Duration,
    pub measure: Measure,
}

/// What a run measured. Latencies are sorted.
#[derive(Default)]
pub struct Run {
    pub ok: usize,
    pub errors: usize,
    pub first_error: Option<String>,
    pub elapsed: Duration,
    /// Per request: whole response, or first chunk (Measure::FirstChunk).
    pub latency: Vec<Duration>,
    /// Per request, whole response (only filled for Measure::FirstChunk).
    pub total: Vec<Duration>,
}

impl Load {
    /// A load against `base_url`'s chat completions path: one request until bounded by
    /// [`Load::with`].
    pub fn new(
        base_url: &str,
        bodies: Arc<Vec<Bytes>>,
        expect_len: Arc<Vec<usize>>,
        measure: Measure,
    ) -> Result<Load, String> {
        let url = format!("{base_url}/v1/chat/completions");
        Ok(Load {
            url: url.parse().map_err(|e| format!("bad url {url}: {e}"))?,
            bodies,
            expect_len,
            concurrency: 1,
            max_requests: 1,
            max_time: Duration::from_secs(1),
            measure,
        })
    }

    /// `concurrency` request loops, stopping after `max_requests` in all or `max_time`.
    pub fn with(mut self, concurrency: usize, max_requests: usize, max_time: Duration) -> Load {
        self.concurrency = concurrency.max(1);
        self.max_requests = max_requests;
        self.max_time = max_time;
        self
    }
}

impl Run {
    pub fn rps(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Nearest-rank percentile of sorted samples.
pub fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub async fn run(client: &HttpClient, load: &Load) -> Run {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let deadline = started + load.max_time;
    let mut tasks = Vec::with_capacity(load.concurrency);
    for _ in 0..load.concurrency {
        let client = client.clone();
        let next = next.clone();
        let bodies = load.bodies.clone();
        let expect = load.expect_len.clone();
        let url = load.url.clone();
        let (max, measure) = (load.max_requests, load.measure);
        tasks.push(tokio::spawn(async move {
            let mut out = Run::default();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= max || Instant::now() >= deadline {
                    return out;
                }
                let body = bodies[i % bodies.len()].clone();
                let want = match expect.len() {
                    0 => None,
                    1 => Some(expect[0]),
                    _ => Some(expect[i % expect.len()]),
                };
                match one(&client, &url, body, measure).await {
                    Ok((first, total, len)) if want.is_none_or(|w| w == len) => {
                        out.ok += 1;
                        out.latency.push(first);
                        if measure == Measure::FirstChunk {
                            out.total.push(total);
                        }
                    }
                    Ok((_, _, len)) => {
                        out.errors += 1;
                        out.first_error.get_or_insert_with(|| {
                            format!("request {i}: response of {len} bytes, expected {want:?}")
                        });
                    }
                    Err(e) => {
                        out.errors += 1;
                        out.first_error
                            .get_or_insert_with(|| format!("request {i}: {e}"));
                    }
                }
            }
        }));
    }
    let mut all = Run::default();
    for t in tasks {
        match t.await {
            Ok(r) => {
                all.ok += r.ok;
                all.errors += r.errors;
                if all.first_error.is_none() {
                    all.first_error = r.first_error;
                }
                all.latency.extend(r.latency);
                all.total.extend(r.total);
            }
            Err(e) => {
                all.errors += 1;
                all.first_error
                    .get_or_insert_with(|| format!("load task panicked: {e}"));
            }
        }
    }
    all.elapsed = started.elapsed();
    all.latency.sort_unstable();
    all.total.sort_unstable();
    all
}

/// One request: (latency to the first chunk or the end, latency to the end, body length).
async fn one(
    client: &HttpClient,
    url: &Uri,
    body: Bytes,
    measure: Measure,
) -> Result<(Duration, Duration, usize), String> {
    let mut req = Request::post(url.clone())
        .body(Full::new(body))
        .map_err(|e| e.to_string())?;
    let h = req.headers_mut();
    h.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("Bearer {}", super::daemon::API_KEY)) {
        h.insert(http::header::AUTHORIZATION, v);
    }
    let sent = Instant::now();
    let resp = tokio::time::timeout(Duration::from_secs(30), client.request(req))
        .await
        .map_err(|_| "no response head within 30 s".to_owned())?
        .map_err(|e| e.to_string())?;
    if resp.status() != http::StatusCode::OK {
        let status = resp.status();
        let text = resp
            .into_body()
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        return Err(format!(
            "status {status}: {}",
            String::from_utf8_lossy(&text[..text.len().min(400)])
        ));
    }
    let mut body = resp.into_body();
    let mut first = None;
    let mut len = 0;
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(30), body.frame())
            .await
            .map_err(|_| "body stalled for 30 s".to_owned())?;
        match frame {
            None => break,
            Some(Err(e)) => return Err(format!("body broke off: {e}")),
            Some(Ok(f)) => {
                if let Ok(d) = f.into_data() {
                    if first.is_none() && !d.is_empty() {
                        first = Some(sent.elapsed());
                    }
                    len += d.len();
                }
            }
        }
    }
    let total = sent.elapsed();
    let first = match measure {
        Measure::Whole => total,
        Measure::FirstChunk => first.unwrap_or(total),
    };
    Ok((first, total, len))
}
