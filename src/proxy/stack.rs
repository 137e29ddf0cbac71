//! The request path, composed in one place and read top to bottom. A feature that acts
//! on a request before it is routed is a `tower` layer in its own module; a feature that
//! is off for a session adds nothing to its path (its layer passes the inner service on
//! as it is). After the last layer the request is routed (`service`) to the handler its
//! target names; a model request is answered there through the fault layer (`fault`,
//! which acts on the parsed exchange).

use std::sync::Arc;

use tower::{Layer, ServiceBuilder};

use super::api::Head;
use super::state::Proxy;
pub(crate) use super::step::Arrival;
use super::step::{call, handler, layer, Handler};
use super::{egress, loops, service, socket};

/// Every request a session answers goes through this stack.
pub(super) fn stack(proxy: &Arc<Proxy>, arrival: Arrival) -> Handler {
    let routed = {
        let proxy = proxy.clone();
        handler(move |req| service::handle(proxy.clone(), req))
    };
    ServiceBuilder::new()
        // The program's forward proxy: a `CONNECT` opens a tunnel (its requests come
        // back through the layers below this one), a request in absolute form to another
        // host is forwarded or refused (`egress`).
        .layer(egress::layer(&proxy.egress, arrival))
        // The first request after a crash test's point is held (`crash`).
        .layer(crash_hold(proxy))
        // Counted until answered: the session's end waits for it, so an exchange in
        // flight is recorded, not dropped.
        .layer(in_flight(proxy))
        // A request that came back to the proxy that forwarded it is refused (`loops`).
        .layer(loops::layer(proxy))
        // A request to switch to a WebSocket: a model API's socket is relayed or served,
        // any other refused (`socket`), through a tunnel as on the base URL.
        .layer(socket::layer(proxy))
        .service(routed)
}

/// The crash test's hold (`crash`): the first request after its point is held until the
/// program is dead; nothing without a crash point.
fn crash_hold(proxy: &Arc<Proxy>) -> impl Layer<Handler, Service = Handler> + Clone {
    let proxy = proxy.clone();
    layer(move |next: Handler| {
        if proxy.crash.point.is_none() {
            return next;
        }
        let proxy = proxy.clone();
        handler(move |req| {
            let (proxy, next) = (proxy.clone(), next.clone());
            async move {
                let request = || {
                    let head = Head::of_request(&proxy, &req);
                    format!("{} {}", head.method, head.stored_path)
                };
                let turn = proxy.current_turn();
                let held = proxy.crash.hold(request, turn, proxy.arrivals()).await;
                match held {
                    Some(held) => held,
                    None => call(next, req).await,
                }
            }
        })
    })
}

/// The in-flight count around every request (see [`stack`]).
fn in_flight(proxy: &Arc<Proxy>) -> impl Layer<Handler, Service = Handler> + Clone {
    let proxy = proxy.clone();
    layer(move |next: Handler| {
        let proxy = proxy.clone();
        handler(move |req| {
            let token = proxy.tasks.token();
            let answer = call(next.clone(), req);
            async move {
                let _in_flight = token;
                answer.await
            }
        })
    })
}
