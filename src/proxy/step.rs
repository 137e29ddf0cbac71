//! The plumbing of the request path (see `stack`): a step is a `tower` service from a
//! request to its answer, a feature's layer wraps the step below it.

use std::convert::Infallible;
use std::future::Future;

use http::{Request, Response};
use hyper::body::Incoming;
use tower::util::BoxCloneSyncService;
use tower::{Layer, ServiceExt};

use super::body::ProxyBody;

/// A step of the request path: a request in, its answer out.
pub(crate) type Handler = BoxCloneSyncService<Request<Incoming>, Response<ProxyBody>, Infallible>;

/// Where a request reached the proxy.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Arrival {
    /// The proxy's own listener on the host.
    Host,
    /// A contained program's listener in its namespace, a direct connection it made, or
    /// a tunnel the proxy opened for it.
    Program,
}

/// A handler made of an async function.
pub(crate) fn handler<F, A>(f: F) -> Handler
where
    F: Fn(Request<Incoming>) -> A + Clone + Send + Sync + 'static,
    A: Future<Output = Response<ProxyBody>> + Send + 'static,
{
    BoxCloneSyncService::new(tower::service_fn(move |req| {
        let answer = f(req);
        async move { Ok::<_, Infallible>(answer.await) }
    }))
}

/// `req` answered by `next`.
pub(crate) async fn call(next: Handler, req: Request<Incoming>) -> Response<ProxyBody> {
    match next.oneshot(req).await {
        Ok(resp) => resp,
        Err(never) => match never {},
    }
}

/// A layer that passes the inner handler to `wrap`.
pub(super) fn layer(
    wrap: impl Fn(Handler) -> Handler + Clone,
) -> impl Layer<Handler, Service = Handler> + Clone {
    tower::layer::layer_fn(wrap)
}
