//! A proxy whose session is switched while it keeps its address: `agentproxy serve`, for
//! test harnesses whose SDK clients are made once (at import time) and used by many tests.
//! Requests under [`CONTROL_PREFIX`](super::route::CONTROL_PREFIX) go to a control handler given from above; every other
//! request is served by the [`Proxy`] of the test it belongs to, which the control handler
//! starts and ends: the test its [`TEST_HEADER`] names, else the only one running (none
//! running: a proxy where every request misses).

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use serde_json::Value;

use super::body::{json_response, ProxyBody};
use super::google_adc;
use super::options::Options;
use super::outcome::Outcome;
use super::route::Target;
use super::secret::{self, SECRET_HEADER};
use super::server::{self, BindError, Running, DRAIN_TIMEOUT};
use super::stack::{self, Arrival};
use super::state::Proxy;
use super::step;
use crate::cassette::Interaction;

/// The largest control request body.
const CONTROL_MAX_BODY: usize = 1 << 20;

/// A control request: method, path (after the prefix), the test its [`TEST_HEADER`]
/// names and its JSON body (`Null` when empty); answered with a status and a JSON body.
pub type Control = Arc<
    dyn Fn(
            Method,
            String,
            Option<String>,
            Value,
        ) -> Pin<Box<dyn Future<Output = (StatusCode, Value)> + Send>>
        + Send
        + Sync,
>;

/// The header that names the test a request belongs to (its `name` in the start request,
/// percent-encoded), on model requests and control requests alike, when several tests run
/// at once.
pub const TEST_HEADER: &str = "x-agentproxy-test";

/// The proxies of the tests running, by name, and the one between tests.
pub struct Switch {
    idle: Arc<Proxy>,
    tests: RwLock<BTreeMap<String, Arc<Proxy>>>,
}

impl Switch {
    /// A switch with no test running, serving `idle` (every request misses).
    pub fn new(idle: Options) -> Switch {
        Switch {
            idle: Arc::new(Proxy::new(idle)),
            tests: RwLock::default(),
        }
    }

    /// The test `named` (by [`TEST_HEADER`]), else the only one running, else the idle
    /// proxy; `Err` says why a request cannot be served (a test not running, or several
    /// running and none named).
    pub fn route(&self, named: Option<&str>) -> Result<Arc<Proxy>, String> {
        let tests = self.tests.read().unwrap_or_else(|p| p.into_inner());
        match named {
            Some(name) => tests
                .get(name)
                .cloned()
                .ok_or_else(|| format!("test `{name}` ({TEST_HEADER}) is not running")),
            None => match tests.len() {
                0 => Ok(self.idle.clone()),
                1 => Ok(tests.values().next().cloned().unwrap_or_else(|| self.idle.clone())),
                n => Err(format!(
                    "{n} tests are running and this request names none of them ({TEST_HEADER}: NAME)"
                )),
            },
        }
    }

    /// Serve the test `name` with `options` from now on.
    pub fn start(&self, name: &str, options: Options) {
        let mut tests = self.tests.write().unwrap_or_else(|p| p.into_inner());
        tests.insert(name.to_owned(), Arc::new(Proxy::new(options)));
    }

    /// Serve the test `name` with `options` instead, if no request has reached it yet
    /// (checked and swapped at once): the proxy it had, to drain; `None` when the test is
    /// not running or was already asked something.
    pub fn restart(&self, name: &str, options: Options) -> Option<Arc<Proxy>> {
        let mut tests = self.tests.write().unwrap_or_else(|p| p.into_inner());
        let slot = tests.get_mut(name).filter(|p| p.requests() == 0)?;
        Some(std::mem::replace(slot, Arc::new(Proxy::new(options))))
    }

    /// Take the test `name` out: no request reaches its proxy any more; [`Switch::drain`]
    /// it.
    pub fn take(&self, name: &str) -> Option<Arc<Proxy>> {
        (self.tests.write().unwrap_or_else(|p| p.into_inner())).remove(name)
    }

    /// Let a proxy taken out finish the requests already in it, and take its outcome.
    pub async fn drain(old: Arc<Proxy>) -> Outcome {
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

    /// The exchanges the test `name` has logged so far, in arrival order, and how many
    /// requests reached it; `None` when it is not running.
    pub fn so_far(&self, name: &str) -> Option<(Vec<Interaction>, usize)> {
        let tests = self.tests.read().unwrap_or_else(|p| p.into_inner());
        let proxy = tests.get(name)?;
        Some((proxy.exchanges_so_far(), proxy.requests()))
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
                        // A client made before its test started refreshes its token too.
                        Target::GoogleToken => google_adc::token(),
                        _ => {
                            // Serve's own header: it goes no further.
                            let mut req = req;
                            let test = match named(&req) {
                                Ok(t) => t,
                                Err(why) => return control_error(StatusCode::BAD_REQUEST, &why),
                            };
                            req.headers_mut().remove(TEST_HEADER);
                            match switch.route(test.as_deref()) {
                                Ok(proxy) => {
                                    let stack = stack::stack(&proxy, Arrival::Program);
                                    step::call(stack, req).await
                                }
                                Err(why) => control_error(
                                    StatusCode::CONFLICT,
                                    &format!("agentproxy serve: {why}"),
                                ),
                            }
                        }
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
                None,
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
    let test = match named(&req) {
        Ok(t) => t,
        Err(why) => return control_error(StatusCode::BAD_REQUEST, &why),
    };
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
    let (status, value) = control(parts.method, path, test, json).await;
    json_response(status, &value)
}

/// The test a request names in [`TEST_HEADER`] (percent-encoded UTF-8), if it does; `Err`
/// for a value that is not that.
fn named<B>(req: &http::Request<B>) -> Result<Option<String>, String> {
    let Some(value) = req.headers().get(TEST_HEADER) else {
        return Ok(None);
    };
    let bad = || format!("{TEST_HEADER} must be a test's name, percent-encoded UTF-8");
    let text = value.to_str().map_err(|_| bad())?;
    let name = (percent_encoding::percent_decode_str(text).decode_utf8()).map_err(|_| bad())?;
    Ok(Some(name.into_owned()).filter(|v| !v.is_empty()))
}

fn control_error(status: StatusCode, message: &str) -> Response<ProxyBody> {
    json_response(status, &serde_json::json!({ "error": message }))
}
