//! The HTTP side every fake upstream shares: a server on `127.0.0.1:0` (HTTP/1.1 and
//! HTTP/2) that hands each request to the fake's handler with the fake's state. Dropping
//! it stops accepting connections; [`Server::stop`] also waits, bounded, for answers in
//! flight.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::{conn::auto, graceful::GracefulShutdown};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The body every fake answers with.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// How long `stop` waits for answers in flight.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Server {
    name: &'static str,
    addr: SocketAddr,
    tls: bool,
    // Dropping the sender is the shutdown signal.
    shutdown: watch::Sender<()>,
    task: JoinHandle<()>,
}

impl Server {
    /// Serve `handle(state, request)` on the current tokio runtime; `name` is the fake's,
    /// for its failures.
    pub async fn start<S, F, Fut>(name: &'static str, state: Arc<S>, handle: F) -> Server
    where
        S: Send + Sync + 'static,
        F: Fn(Arc<S>, Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        Server::start_with(name, state, handle, None).await
    }

    /// [`Server::start`] behind TLS with `config` (`https://127.0.0.1:PORT`).
    pub async fn start_tls<S, F, Fut>(
        name: &'static str,
        state: Arc<S>,
        handle: F,
        config: Arc<rustls::ServerConfig>,
    ) -> Server
    where
        S: Send + Sync + 'static,
        F: Fn(Arc<S>, Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        Server::start_with(name, state, handle, Some(config.into())).await
    }

    async fn start_with<S, F, Fut>(
        name: &'static str,
        state: Arc<S>,
        handle: F,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> Server
    where
        S: Send + Sync + 'static,
        F: Fn(Arc<S>, Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap_or_else(|e| panic!("{name}: failed to bind 127.0.0.1:0: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("{name}: failed to read the bound address: {e}"));
        let (shutdown, shutdown_rx) = watch::channel(());
        let secure = tls.is_some();
        let task = tokio::spawn(serve(listener, tls, state, handle, shutdown_rx));
        Server {
            name,
            addr,
            tls: secure,
            shutdown,
            task,
        }
    }

    /// `http://127.0.0.1:PORT` (`https://` behind TLS).
    pub fn url(&self) -> String {
        match self.tls {
            true => format!("https://{}", self.addr),
            false => format!("http://{}", self.addr),
        }
    }

    /// Closes the listener (later connections are refused), then waits, bounded, for
    /// in-flight answers to finish.
    pub async fn stop(self) {
        let Server {
            name,
            shutdown,
            task,
            ..
        } = self;
        drop(shutdown);
        if let Err(err) = task.await {
            panic!("{name}: server task failed: {err}");
        }
    }
}

async fn serve<S, F, Fut>(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    state: Arc<S>,
    handle: F,
    mut shutdown: watch::Receiver<()>,
) where
    S: Send + Sync + 'static,
    F: Fn(Arc<S>, Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<Body>> + Send + 'static,
{
    let builder = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    loop {
        let stream = tokio::select! {
            // Only ever errs: the sender is dropped by `stop` or by dropping the server.
            _ = shutdown.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // A failed accept (e.g. out of descriptors) concerns one connection, not
                // the server; back off briefly so the loop does not spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let (state, handle) = (Arc::clone(&state), handle.clone());
        let service = service_fn(move |req| {
            let answer = handle(Arc::clone(&state), req);
            async move { Ok::<_, Infallible>(answer.await) }
        });
        let (builder, watcher, tls) = (builder.clone(), graceful.watcher(), tls.clone());
        // A connection error is a client hanging up mid-answer (or failing the TLS
        // handshake): nothing to report.
        tokio::spawn(async move {
            let _ = match tls {
                None => {
                    let conn =
                        builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                    watcher.watch(conn.into_owned()).await
                }
                Some(tls) => match tls.accept(stream).await {
                    Ok(stream) => {
                        let conn =
                            builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                        watcher.watch(conn.into_owned()).await
                    }
                    Err(_) => Ok(()),
                },
            };
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown()).await;
}
