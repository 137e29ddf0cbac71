//! How the proxy serves a connection, the listener's and an intercepted tunnel's alike:
//! HTTP/1 and HTTP/2 with their timeouts, each request answered by a handler.

use std::future::Future;
use std::pin::Pin;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::{service_fn, Service};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use hyper_util::server::conn::auto;

use super::body::{header_timeout, ProxyBody};

/// The answer to one request, boxed: a handler's type that names itself (a tunnel's
/// requests are answered by the handler that opened it).
pub(crate) type Answer = Pin<Box<dyn Future<Output = Response<ProxyBody>> + Send>>;

/// How connections are served: HTTP/1 with a header timeout, HTTP/2 with keep-alive pings.
pub(crate) fn builder() -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout());
    // An HTTP/2 client that answers no ping is gone: its connection is closed.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(header_timeout()))
        .keep_alive_timeout(header_timeout());
    builder
}

/// The service that answers a connection's requests with `handler`; a response marked
/// [`Disconnect`](super::body::Disconnect) (a `disconnect` or `timeout` fault) closes the
/// connection without an answer.
pub(crate) fn answering<H, F>(
    handler: H,
) -> impl Service<
    Request<Incoming>,
    Response = Response<ProxyBody>,
    Error = std::io::Error,
    Future: Send + 'static,
> + Clone
       + Send
       + 'static
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<ProxyBody>> + Send + 'static,
{
    service_fn(move |req| {
        let answer = handler(req);
        async move {
            let resp = answer.await;
            if resp.extensions().get::<super::body::Disconnect>().is_some() {
                return Err(std::io::Error::other("connection closed (fault)"));
            }
            Ok(resp)
        }
    })
}
