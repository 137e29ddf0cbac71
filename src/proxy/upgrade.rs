//! A request that asks to switch protocols (a WebSocket, such as OpenAI's Realtime API)
//! is refused with a message: agentproxy records and replays HTTP exchanges only.

use http::{Request, Response, StatusCode};
use tower::Layer;

use super::body::text;
use super::body::ProxyBody;
use super::step::{self, call, handler, Handler};

/// The refusal of upgrades.
pub(super) fn layer() -> impl Layer<Handler, Service = Handler> + Clone {
    step::layer(|next: Handler| {
        handler(move |req| {
            let refused = refused(&req);
            let next = next.clone();
            async move {
                match refused {
                    Some(refused) => refused,
                    None => call(next, req).await,
                }
            }
        })
    })
}

/// The refusal of a request that asks to switch to a WebSocket; `None` for any other.
fn refused<B>(req: &Request<B>) -> Option<Response<ProxyBody>> {
    let upgrade = req.headers().get(http::header::UPGRADE)?.to_str().ok()?;
    // `h2c` (curl's HTTP/2 over plain HTTP) falls back to HTTP/1.1 when ignored.
    if !upgrade.to_ascii_lowercase().contains("websocket") {
        return None;
    }
    let what = upgrade;
    Some(text(
        StatusCode::NOT_IMPLEMENTED,
        format!(
            "agentproxy: {} {} asks to switch to {what}: agentproxy records and replays HTTP exchanges only (a WebSocket API is not supported)",
            req.method(),
            req.uri().path()
        ),
    ))
}
