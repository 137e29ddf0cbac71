//! The canned-reply server: the floor agentproxy is compared with, and the fake upstream it
//! records from. It uses the same stack as agentproxy (hyper 1 behind hyper-util's
//! `auto::Builder`, `TCP_NODELAY`), reads each request body whole, and answers a fixed body:
//! so the difference to agentproxy is exactly agentproxy's own work.
//!
//! It runs on a tokio runtime of its own (2 workers, like agentproxy on this machine) in the
//! bench process, on threads named `bench-canned` so their CPU time can be read apart.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

pub const THREAD_NAME: &str = "bench-canned";

/// What the server answers to every request.
#[derive(Clone)]
pub enum Reply {
    /// `200 application/json` with this body.
    Json(Bytes),
    /// `200 text/event-stream`: the first event at once, then one every `gap`.
    Sse { events: Vec<Bytes>, gap: Duration },
    /// `200 text/event-stream`: all the events at once, one body frame each, as replay
    /// serves a recorded stream.
    Events(Vec<Bytes>),
}

/// The runtime the canned servers run on; dropping it stops them.
pub struct Servers {
    rt: Option<tokio::runtime::Runtime>,
}

impl Servers {
    pub fn new() -> Result<Servers, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(THREAD_NAME)
            .enable_all()
            .build()
            .map_err(|e| format!("failed to start the canned server runtime: {e}"))?;
        Ok(Servers { rt: Some(rt) })
    }

    /// Start a server answering `reply`, on `127.0.0.1:0`; its address.
    pub fn start(&self, reply: Reply) -> Result<SocketAddr, String> {
        let rt = self.rt.as_ref().ok_or("runtime stopped")?;
        let listener = rt
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .map_err(|e| format!("failed to bind the canned server: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        rt.spawn(accept_loop(listener, reply));
        Ok(addr)
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

async fn accept_loop(listener: TcpListener, reply: Reply) {
    let builder = auto::Builder::new(TokioExecutor::new());
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let reply = reply.clone();
        let svc = service_fn(move |req| {
            let reply = reply.clone();
            async move { Ok::<_, Infallible>(answer(req, reply).await) }
        });
        let conn = builder
            .serve_connection(TokioIo::new(stream), svc)
            .into_owned();
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
}

type Out = BoxBody<Bytes, Infallible>;

async fn answer(req: Request<Incoming>, reply: Reply) -> Response<Out> {
    // Read the whole body, as any server must before answering a JSON API call.
    let _ = req.into_body().collect().await;
    match reply {
        Reply::Json(body) => {
            let mut r = Response::new(Full::new(body).boxed());
            r.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            r
        }
        Reply::Events(events) => {
            let frames = events
                .into_iter()
                .map(|e| Ok::<_, Infallible>(Frame::data(e)));
            sse_response(StreamBody::new(futures_util::stream::iter(frames)).boxed())
        }
        Reply::Sse { events, gap } => {
            let stream = futures_util::stream::unfold(
                (events.into_iter(), true),
                move |(mut it, first)| async move {
                    let next = it.next()?;
                    if !first {
                        tokio::time::sleep(gap).await;
                    }
                    Some((Ok::<_, Infallible>(Frame::data(next)), (it, false)))
                },
            );
            sse_response(StreamBody::new(stream).boxed())
        }
    }
}

fn sse_response(body: Out) -> Response<Out> {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    r
}
