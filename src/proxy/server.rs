//! The accept loop: one task per connection, HTTP/1 and HTTP/2, graceful drain on shutdown.
//! A bad connection is logged and never stops the loop.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::body::header_timeout;
use super::body::ProxyBody;
use super::conn;
use super::stack::{self, Arrival};
use super::state::Proxy;
use super::step;

/// How long in-flight requests may take to finish once shutdown starts (a second signal
/// cuts it short).
pub(crate) const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The first byte of a TLS connection: a handshake record.
const TLS_HANDSHAKE: u8 = 0x16;

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
    /// Cancelled to stop draining: what has finished is kept, the rest is dropped.
    hurry: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    /// Bind `listen`, then run `serve(listener, stop, hurry)` in a task; `serve` must wind
    /// down once `stop` resolves (it resolves on [`Running::stop`], or when the handle is
    /// dropped), and stop waiting for in-flight work once `hurry` is cancelled.
    pub(crate) async fn start<F, S>(listen: SocketAddr, serve: S) -> Result<Running, BindError>
    where
        S: FnOnce(TcpListener, oneshot::Receiver<()>, CancellationToken) -> F,
        F: Future<Output = ()> + Send + 'static,
    {
        let failed = |source| BindError {
            addr: listen,
            source,
        };
        let listener = TcpListener::bind(listen).await.map_err(failed)?;
        Running::on(listener, serve).map_err(failed)
    }

    /// [`Running::start`] on a listener already bound.
    pub(crate) fn on<F, S>(listener: TcpListener, serve: S) -> std::io::Result<Running>
    where
        S: FnOnce(TcpListener, oneshot::Receiver<()>, CancellationToken) -> F,
        F: Future<Output = ()> + Send + 'static,
    {
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel();
        let hurry = CancellationToken::new();
        let task = tokio::spawn(serve(listener, stopped, hurry.clone()));
        Ok(Running {
            addr,
            stop,
            hurry,
            task,
        })
    }

    /// The address the server listens on (the real port when `listen` asked for port 0).
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop accepting and wait until the server has drained.
    pub(crate) async fn stop(self) {
        self.stop_unless(std::future::pending()).await;
    }

    /// Stop accepting and wait until the server has drained, or, once `hurry` resolves (a
    /// second Ctrl-C), only for what has already finished.
    pub(crate) async fn stop_unless(mut self, hurry: impl Future<Output = ()>) {
        let _ = self.stop.send(());
        tokio::select! {
            _ = &mut self.task => return,
            () = hurry => self.hurry.cancel(),
        }
        let _ = self.task.await;
    }
}

/// Serve until `shutdown` resolves, then drain in-flight exchanges (bounded by
/// [`DRAIN_TIMEOUT`]) so every completed response reaches the recording.
pub async fn serve(
    listener: TcpListener,
    proxy: Arc<Proxy>,
    shutdown: impl Future<Output = ()>,
    hurry: CancellationToken,
) {
    let stack = stack::stack(&proxy, Arrival::Host);
    let handler = move |req| step::call(stack.clone(), req);
    let tls = own_tls(&listener, &proxy);
    accept_loop(listener, handler, shutdown, hurry.clone(), tls).await;
    proxy.tasks.close();
    tokio::select! {
        r = tokio::time::timeout(DRAIN_TIMEOUT, proxy.tasks.wait()) => if r.is_err() {
            tracing::warn!("some upstream exchanges did not finish within {DRAIN_TIMEOUT:?}; they are not recorded");
        },
        () = hurry.cancelled() => {
            tracing::warn!("stopping at once: exchanges still in flight are not recorded");
        }
    }
}

/// Answer requests on one more listener (a contained program's) with `proxy`, until
/// `shutdown`; the exchanges' drain is the main listener's ([`serve`]).
pub(crate) async fn serve_more(
    listener: TcpListener,
    proxy: Arc<Proxy>,
    shutdown: impl Future<Output = ()>,
    hurry: CancellationToken,
) {
    let stack = stack::stack(&proxy, Arrival::Program);
    let handler = move |req| step::call(stack.clone(), req);
    let tls = own_tls(&listener, &proxy);
    accept_loop(listener, handler, shutdown, hurry, tls).await;
}

/// A program that speaks TLS to the session's own address (google-genai's Live client
/// dials `wss://` whatever its base URL says) is answered with a certificate of the
/// session's authority for it, which the program trusts; none without an authority.
fn own_tls(listener: &TcpListener, proxy: &Proxy) -> Option<Arc<rustls::ServerConfig>> {
    let own = listener.local_addr().ok()?.ip().to_string();
    proxy.egress.own_tls(&own)
}

/// Accept connections and answer each request with `handler` until `shutdown` resolves,
/// then let open connections finish (bounded by [`DRAIN_TIMEOUT`]); with `tls`, a
/// connection whose first byte opens a TLS handshake is answered over TLS. Shared by the
/// proxy and doctor mode.
pub(crate) async fn accept_loop<H, F>(
    listener: TcpListener,
    handler: H,
    shutdown: impl Future<Output = ()>,
    hurry: CancellationToken,
    tls: Option<Arc<rustls::ServerConfig>>,
) where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<ProxyBody>> + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    let builder = conn::builder();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let svc = conn::answering(handler.clone());
                    let builder = builder.clone();
                    let watcher = graceful.watcher();
                    let tls = tls.clone();
                    tokio::spawn(async move {
                        // Until its first byte hyper cannot tell a connection's version, and
                        // its header timeout has not started: a connection that sends nothing
                        // is closed here, rather than holding its descriptor for ever.
                        let mut first = [0u8; 1];
                        match tokio::time::timeout(header_timeout(), stream.peek(&mut first)).await {
                            Ok(Ok(n)) if n > 0 => {}
                            _ => return,
                        }
                        let ended = match tls.filter(|_| first[0] == TLS_HANDSHAKE) {
                            None => watcher.watch(builder.serve_connection_with_upgrades(TokioIo::new(stream), svc).into_owned()).await,
                            Some(config) => {
                                let accept = tokio_rustls::TlsAcceptor::from(config).accept(stream);
                                let Ok(Ok(stream)) = tokio::time::timeout(header_timeout(), accept).await else { return };
                                watcher.watch(builder.serve_connection_with_upgrades(TokioIo::new(stream), svc).into_owned()).await
                            }
                        };
                        if let Err(e) = ended {
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
    tokio::select! {
        r = tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown()) => if r.is_err() {
            tracing::warn!("some connections were still open after {DRAIN_TIMEOUT:?}; closing them");
        },
        () = hurry.cancelled() => {}
    }
}
