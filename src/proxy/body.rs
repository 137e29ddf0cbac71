//! Response bodies the proxy serves: whole buffers, recorded event lists and live
//! channel-fed streams, behind one boxed type.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::{combinators::BoxBody, BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::Value;
use tokio::sync::mpsc;

/// How long a client may take to send a request's head (hyper's own default), its first
/// byte (counted from accept), or each chunk of its body: a connection that trickles or
/// stalls is closed. hyper also counts the wait for the next request on a kept-alive
/// connection, so an idle connection is closed after this long, as servers commonly do;
/// SDK clients then open a new one. 30 s, or `AGENTPROXY_HEADER_TIMEOUT` of agentproxy's
/// environment (`5s`, `2m`; read once).
pub(crate) fn header_timeout() -> std::time::Duration {
    static TIMEOUT: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
    *TIMEOUT.get_or_init(|| {
        let given = std::env::var("AGENTPROXY_HEADER_TIMEOUT").ok();
        header_timeout_from(given.as_deref()).unwrap_or_else(|why| {
            tell!("agentproxy: warning: {why}; the header timeout stays 30s");
            DEFAULT_HEADER_TIMEOUT
        })
    })
}

const DEFAULT_HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// [`header_timeout`] from the variable's value, if any.
fn header_timeout_from(value: Option<&str>) -> Result<std::time::Duration, String> {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Ok(DEFAULT_HEADER_TIMEOUT);
    };
    match humantime::parse_duration(value) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("AGENTPROXY_HEADER_TIMEOUT=0 would close every connection".to_owned()),
        Err(e) => Err(format!(
            "AGENTPROXY_HEADER_TIMEOUT={value} is not a duration ({e})"
        )),
    }
}

pub type ProxyBody = BoxBody<Bytes, std::io::Error>;

pub fn full(bytes: Bytes) -> ProxyBody {
    Full::new(bytes).map_err(|never| match never {}).boxed()
}

/// A response the accept loop must not send: it closes the connection instead, so the
/// client sees no answer at all.
#[derive(Debug, Clone, Copy)]
pub struct Disconnect;

/// No answer: the connection closes.
pub(in crate::proxy) fn disconnect() -> Response<ProxyBody> {
    let mut resp = Response::new(full(Bytes::new()));
    resp.extensions_mut().insert(Disconnect);
    resp
}

/// A body fed by a channel: each message becomes one frame as soon as it is sent, and an
/// error aborts the body (the connection is cut, as the upstream's was).
pub struct ChannelBody {
    rx: mpsc::Receiver<std::io::Result<Bytes>>,
    abort: Abort,
}

impl ChannelBody {
    pub fn new(rx: mpsc::Receiver<std::io::Result<Bytes>>) -> ChannelBody {
        ChannelBody {
            rx,
            abort: Abort::default(),
        }
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = &mut *self;
        if this.abort.is_set() {
            return this.abort.poll(cx);
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(Err(e))) => {
                this.abort.set(e);
                this.abort.poll(cx)
            }
            other => other.map(|o| o.map(|r| r.map(Frame::data))),
        }
    }
}

/// How long a body holds its abort back, so the frames before it reach the client.
const ABORT_GRACE: std::time::Duration = std::time::Duration::from_millis(50);

/// A body's abort, deferred: hyper drops what it has buffered but not yet written when a
/// body fails, so the frames before the abort would never reach the client. Holding the
/// error back for [`ABORT_GRACE`] lets hyper flush them first (a client too slow to take
/// them in that time sees the abort a little earlier than recorded).
#[derive(Default)]
struct Abort {
    error: Option<std::io::Error>,
    grace: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Abort {
    fn set(&mut self, e: std::io::Error) {
        self.error = Some(e);
    }

    fn is_set(&self) -> bool {
        self.error.is_some()
    }

    /// Once the frames are all given out: the end of the body, or its abort in due time.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if self.error.is_none() {
            return Poll::Ready(None);
        }
        let grace = self
            .grace
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(ABORT_GRACE)));
        match grace.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => Poll::Ready(self.error.take().map(Err)),
        }
    }
}

/// Pre-encoded chunks, one frame each, so SSE event boundaries stay intact; with an
/// abort, the body breaks off after them.
struct Chunks {
    items: std::collections::VecDeque<Bytes>,
    abort: Abort,
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = &mut *self;
        match this.items.pop_front() {
            Some(b) => Poll::Ready(Some(Ok(Frame::data(b)))),
            None => this.abort.poll(cx),
        }
    }
}

/// A body of pre-encoded chunks, one frame each, so SSE event boundaries stay intact;
/// with `abort`, the body breaks off after them, as a recorded aborted stream did.
pub fn chunks(items: Vec<Bytes>, abort: Option<&str>) -> ProxyBody {
    let mut a = Abort::default();
    if let Some(why) = abort {
        a.set(std::io::Error::other(why.to_owned()));
    }
    Chunks {
        items: items.into(),
        abort: a,
    }
    .boxed()
}

/// A body of chunks sent with a pause before each, for `--realtime` replay; with `abort`,
/// it breaks off after them.
pub fn paced_chunks(items: Vec<(std::time::Duration, Bytes)>, abort: Option<&str>) -> ProxyBody {
    let (tx, rx) = mpsc::channel(16);
    let abort = abort.map(str::to_owned);
    tokio::spawn(async move {
        for (pause, bytes) in items {
            tokio::time::sleep(pause).await;
            if tx.send(Ok(bytes)).await.is_err() {
                return;
            }
        }
        if let Some(why) = abort {
            let _ = tx.send(Err(std::io::Error::other(why))).await;
        }
    });
    ChannelBody::new(rx).boxed()
}

/// A JSON response.
pub fn json_response(status: StatusCode, value: &Value) -> Response<ProxyBody> {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    let mut resp = Response::new(full(Bytes::from(bytes)));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A plain-text answer.
pub(crate) fn text(status: StatusCode, body: String) -> Response<ProxyBody> {
    let mut resp = Response::new(full(body.into()));
    *resp.status_mut() = status;
    resp
}

/// Why a request body could not be read.
pub(crate) enum BodyError {
    TooLarge,
    /// Nothing arrived for [`header_timeout`]: a client that sent half a body does not
    /// hold its connection for ever.
    Stalled,
    Broke(Box<dyn std::error::Error + Send + Sync>),
}

/// The request body, at most `max` bytes, waiting at most [`header_timeout`] for each
/// chunk. A body of one chunk (most are) is passed on without a copy.
pub(crate) async fn read_request_body(body: Incoming, max: usize) -> Result<Bytes, BodyError> {
    let mut body = Limited::new(body, max);
    let mut chunks: Vec<Bytes> = Vec::new();
    loop {
        match tokio::time::timeout(header_timeout(), body.frame()).await {
            Err(_) => return Err(BodyError::Stalled),
            Ok(None) if chunks.len() == 1 => return Ok(chunks.swap_remove(0)),
            Ok(None) => return Ok(Bytes::from(chunks.concat())),
            Ok(Some(Err(e))) if e.is::<http_body_util::LengthLimitError>() => {
                return Err(BodyError::TooLarge)
            }
            Ok(Some(Err(e))) => return Err(BodyError::Broke(e)),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    chunks.push(data);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_timeout_is_30s_unless_the_environment_says_otherwise() {
        let secs = |v| header_timeout_from(v).map(|d| d.as_millis());
        assert_eq!(secs(None), Ok(30_000));
        assert_eq!(secs(Some("")), Ok(30_000));
        assert_eq!(secs(Some("500ms")), Ok(500));
        assert_eq!(secs(Some("2m")), Ok(120_000));
        assert!(secs(Some("0s"))
            .unwrap_err()
            .contains("would close every connection"));
        assert!(secs(Some("soon"))
            .unwrap_err()
            .contains("is not a duration"));
    }
}
