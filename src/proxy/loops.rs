//! A request that came back to the proxy that forwarded it (an upstream or `--mcp`
//! server that points at the proxy itself) is refused rather than forwarded again, and
//! its answer marked so that the proxy that sent it reports the loop.

use std::sync::Arc;

use http::StatusCode;
use tower::Layer;

use super::api::{self, Head};
use super::state::Proxy;
use super::step::{self, call, handler, Handler};
use super::upstream::LOOP_HEADER;
use crate::dialect::Refusal;

/// The loop check; nothing while replaying only (nothing is forwarded).
pub(super) fn layer(proxy: &Arc<Proxy>) -> impl Layer<Handler, Service = Handler> + Clone {
    let proxy = proxy.clone();
    step::layer(move |next: Handler| {
        if proxy.opts.upstream.is_none() {
            return next;
        }
        let proxy = proxy.clone();
        handler(move |req| {
            let (proxy, next) = (proxy.clone(), next.clone());
            async move {
                let came_back =
                    (proxy.opts.upstream.as_ref()).is_some_and(|up| up.came_back(req.headers()));
                if !came_back {
                    return call(next, req).await;
                }
                let head = Head::of_request(&proxy, &req);
                let why = format!(
                    "{} {} came back to the proxy that forwarded it: an upstream (or --mcp server) points at this proxy itself",
                    head.method, head.stored_path
                );
                let mut refused =
                    api::refuse(&proxy, &head, StatusCode::LOOP_DETECTED, Refusal::Loop, why);
                refused
                    .headers_mut()
                    .insert(LOOP_HEADER, http::HeaderValue::from_static("1"));
                refused
            }
        })
    })
}
