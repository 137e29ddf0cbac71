//! Response bodies the proxy serves: whole buffers, recorded event lists and live
//! channel-fed streams, behind one boxed type.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use serde_json::Value;
use tokio::sync::mpsc;

pub type ProxyBody = BoxBody<Bytes, std::io::Error>;

pub fn full(bytes: Bytes) -> ProxyBody {
    Full::new(bytes).map_err(|never| match never {}).boxed()
}

/// A body fed by a channel: each message becomes one frame as soon as it is sent.
pub struct ChannelBody(pub mpsc::Receiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.0.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b))))
    }
}

/// A body of pre-encoded chunks, one frame each, so SSE event boundaries stay intact.
pub fn chunks(items: Vec<Bytes>) -> ProxyBody {
    let stream = futures_util::stream::iter(items.into_iter().map(|b| Ok(Frame::data(b))));
    StreamBody::new(stream).boxed()
}

/// A body of chunks sent with a pause before each, for `--realtime` replay.
pub fn paced_chunks(items: Vec<(std::time::Duration, Bytes)>) -> ProxyBody {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        for (pause, bytes) in items {
            tokio::time::sleep(pause).await;
            if tx.send(bytes).await.is_err() {
                return;
            }
        }
    });
    ChannelBody(rx).boxed()
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
