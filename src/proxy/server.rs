//! The accept loop: one task per connection, HTTP/1 and HTTP/2, graceful drain on shutdown.
//! A bad connection is logged and never stops the loop.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::body::ProxyBody;
use super::{service, Proxy};

/// How long in-flight requests may take to finish once shutdown starts.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The listen address could not be bound (or read back).
#[derive(Debug, thiserror::Error)]
#[error("failed to listen on {addr}: {source}")]
pub struct BindError {
    pub addr: SocketAddr,
    pub source: std::io::Error,
}

/// A server running in a task on a bound port until [`Running::stop`]: the proxy's
/// [`Session`](super::Session) and doctor mode's are both one of these.
pub(crate) struct Running {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Running {
    /// Bind `listen`, then run `serve(listener, stop)` in a task; `serve` must wind down
    /// once `stop` resolves (it resolves on [`Running::stop`], or when the handle is dropped).
    pub(crate) async fn start<F, S>(listen: SocketAddr, serve: S) -> Result<Running, BindError>
    where
        S: FnOnce(TcpListener, oneshot::Receiver<()>) -> F,
        F: Future<Output = ()> + Send + 'static,
    {
        let failed = |source| BindError {
            addr: listen,
            source,
        };
        let listener = TcpListener::bind(listen).await.map_err(failed)?;
        let addr = listener.local_addr().map_err(failed)?;
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(serve(listener, stopped));
        Ok(Running { addr, stop, task })
    }

    /// The address the server listens on (the real port when `listen` asked for port 0).
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop accepting and wait until the server has drained.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// Serve until `shutdown` resolves, then drain in-flight exchanges (bounded by
/// [`DRAIN_TIMEOUT`]) so every completed response reaches the recording.
pub async fn serve(listener: TcpListener, proxy: Arc<Proxy>, shutdown: impl Future<Output = ()>) {
    let handler = {
        let proxy = proxy.clone();
        move |req| service::handle(proxy.clone(), req)
    };
    accept_loop(listener, handler, shutdown).await;
    proxy.tasks.close();
    if tokio::time::timeout(DRAIN_TIMEOUT, proxy.tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!("some upstream exchanges did not finish within {DRAIN_TIMEOUT:?}; they are not recorded");
    }
}

/// Accept connections and answer each request with `handler` until `shutdown` resolves,
/// then let open connections finish (bounded by [`DRAIN_TIMEOUT`]). Shared by the proxy
/// and doctor mode.
pub(crate) async fn accept_loop<H, F>(
    listener: TcpListener,
    handler: H,
    shutdown: impl Future<Output = ()>,
) where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<ProxyBody>> + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    let builder = auto::Builder::new(TokioExecutor::new());
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let handler = handler.clone();
                    let svc = service_fn(move |req| {
                        let answer = handler(req);
                        async move { Ok::<_, Infallible>(answer.await) }
                    });
                    let conn = builder.serve_connection(TokioIo::new(stream), svc).into_owned();
                    let conn = graceful.watch(conn);
                    tokio::spawn(async move {
                        if let Err(e) = conn.await {
                            tracing::debug!("connection from {peer} ended with an error: {e}");
                        }
                    });
                }
                Err(e) => {
                    // Usually fd exhaustion: back off instead of spinning.
                    tracing::warn!("failed to accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("some connections were still open after {DRAIN_TIMEOUT:?}; closing them");
    }
}
