//! A proxy whose session is switched while it keeps its address: `agentproxy serve`, for
//! test harnesses whose SDK clients are made once (at import time) and used by many tests.
//! Requests under [`CONTROL_PREFIX`](super::route::CONTROL_PREFIX) go to a control handler given from above; every other
//! request is served by the current [`Proxy`], which the control handler replaces.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use serde_json::Value;

use super::body::{json_response, ProxyBody};
use super::options::Options;
use super::outcome::Outcome;
use super::route::Target;
use super::secret::{self, SECRET_HEADER};
use super::server::{self, BindError, Running, DRAIN_TIMEOUT};
use super::service;
use super::state::Proxy;
use crate::cassette::Interaction;

/// The largest control request body.
const CONTROL_MAX_BODY: usize = 1 << 20;

/// A control request: method, path (after the prefix) and its JSON body (`Null` when
/// empty); answered with a status and a JSON body.
pub type Control = Arc<
    dyn Fn(Method, String, Value) -> Pin<Box<dyn Future<Output = (StatusCode, Value)> + Send>>
        + Send
        + Sync,
>;

/// The proxy now serving.
pub struct Switch {
    current: RwLock<Arc<Proxy>>,
}

impl Switch {
    pub fn new(first: Options) -> Switch {
        Switch {
            current: RwLock::new(Arc::new(Proxy::new(first))),
        }
    }

    fn current(&self) -> Arc<Proxy> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Serve `next` from now on; the previous proxy is drained and its outcome returned
    /// (requests already in it finish there).
    pub async fn replace(&self, next: Options) -> Outcome {
        let old = {
            let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(&mut *current, Arc::new(Proxy::new(next)))
        };
        old.tasks.close();
        let drained = tokio::time::timeout(DRAIN_TIMEOUT, old.tasks.wait()).await;
        let mut outcome = old.outcome();
        if drained.is_err() {
            outcome.upstream_errors.push(format!(
                "{} exchange(s) were still in flight {} after the test ended; they are not recorded",
                old.tasks.len(),
                humantime::format_duration(DRAIN_TIMEOUT)
            ));
        }
        outcome
    }

    /// The exchanges the current proxy has logged so far, in arrival order, and how many
    /// requests reached it.
    pub fn so_far(&self) -> (Vec<Interaction>, usize) {
        let proxy = self.current();
        (proxy.exchanges_so_far(), proxy.requests())
    }
}

/// The running server of a [`Switch`].
pub struct Switched {
    running: Running,
}

impl Switched {
    /// Bind `listen` and serve `switch`, with `control` answering the control endpoint
    /// for a request that presents `secret`.
    pub async fn start(
        listen: SocketAddr,
        switch: Arc<Switch>,
        control: Control,
        secret: Arc<str>,
    ) -> Result<Switched, BindError> {
        let running = Running::start(listen, move |listener, stop, hurry| {
            let handler = move |req: http::Request<hyper::body::Incoming>| {
                let switch = switch.clone();
                let control = control.clone();
                let secret = secret.clone();
                async move {
                    // MCP stand-ins talk to the test's proxy, not to the harness.
                    match Target::of(req.uri().path()) {
                        Target::Control(_) if !secret::presents(req.headers(), &secret) => {
                            control_error(
                                StatusCode::FORBIDDEN,
                                &format!("the control endpoint needs the secret in {SECRET_HEADER}, which agentproxy serve gave in its listening line (a plugin older than control protocol 2 does not send it: install the agentproxy wheel of the same release as the binary)"),
                            )
                        }
                        Target::Control(rest) => {
                            let rest = rest.to_owned();
                            answer_control(control, rest, req).await
                        }
                        _ => service::handle(switch.current(), req).await,
                    }
                }
            };
            server::accept_loop(
                listener,
                handler,
                async move {
                    let _ = stop.await;
                },
                hurry,
            )
        })
        .await?;
        Ok(Switched { running })
    }

    pub fn addr(&self) -> SocketAddr {
        self.running.addr()
    }

    /// Stop accepting and let open connections finish.
    pub async fn stop(self) {
        self.running.stop().await;
    }
}

async fn answer_control(
    control: Control,
    path: String,
    req: http::Request<hyper::body::Incoming>,
) -> Response<ProxyBody> {
    let (parts, body) = req.into_parts();
    let bytes: Bytes = match Limited::new(body, CONTROL_MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return control_error(StatusCode::BAD_REQUEST, &format!("unreadable body: {e}")),
    };
    let json = if bytes.is_empty() {
        Value::Null
    } else {
        match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                return control_error(
                    StatusCode::BAD_REQUEST,
                    &format!("the body is not JSON: {e}"),
                )
            }
        }
    };
    let (status, value) = control(parts.method, path, json).await;
    json_response(status, &value)
}

fn control_error(status: StatusCode, message: &str) -> Response<ProxyBody> {
    json_response(status, &serde_json::json!({ "error": message }))
}
