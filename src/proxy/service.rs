//! One request, routed: held first when a crash test's point has passed, then answered by
//! the handler its target names (a model API request, an MCP relay) or refused.

use std::sync::Arc;

use http::{Request, Response, StatusCode};

use super::api::{self, Head};
use super::body::ProxyBody;
use super::route::Target;
use super::secret;
use super::state::Proxy;
use super::upstream::LOOP_HEADER;
use super::{mcp, mcp_http};
use crate::dialect::{self, Refusal};

pub async fn handle(proxy: Arc<Proxy>, req: Request<hyper::body::Incoming>) -> Response<ProxyBody> {
    let (parts, body) = req.into_parts();
    let path = (parts.uri.path_and_query())
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "/".into());
    let intercepted = parts.extensions.get::<super::intercept::Intercepted>();
    let head = Head::of(
        &proxy,
        parts.method.clone(),
        path,
        &parts.headers,
        intercepted,
    );
    let request = || format!("{} {}", head.method, head.stored_path);
    let turn = proxy.current_turn();
    if let Some(held) = proxy.crash.hold(request, turn, proxy.arrivals()).await {
        return held;
    }
    // Counted until answered: the end of the session (or of a serve test) waits for it,
    // so an exchange in flight is recorded, not dropped.
    let _in_flight = proxy.tasks.token();
    if (proxy.opts.upstream.as_ref()).is_some_and(|up| up.came_back(&parts.headers)) {
        let why = format!(
            "{} {} came back to the proxy that forwarded it: an upstream (or --mcp server) points at this proxy itself",
            head.method, head.stored_path
        );
        let mut refused = api::refuse(&proxy, &head, StatusCode::LOOP_DETECTED, Refusal::Loop, why);
        refused
            .headers_mut()
            .insert(LOOP_HEADER, http::HeaderValue::from_static("1"));
        return refused;
    }
    // Another host's request is plain HTTP whatever its path.
    let target = match head.elsewhere {
        true => Target::Api,
        false => Target::of(&head.path),
    };
    match target {
        Target::McpStdio(_) if !secret::presents(&parts.headers, &proxy.opts.secret) => {
            let why = format!(
                "{} {} needs this session's secret",
                head.method, head.stored_path
            );
            api::refuse(
                &proxy,
                &head,
                StatusCode::FORBIDDEN,
                Refusal::Forbidden,
                why,
            )
        }
        Target::McpStdio(rest) => {
            let rest = rest.to_owned();
            mcp::handle(&proxy, &parts.method, &rest, body).await
        }
        Target::McpHttp(rest) => {
            let rest = rest.to_owned();
            mcp_http::handle(&proxy, parts, body, &rest).await
        }
        Target::Api => api::handle(&proxy, head, parts.headers, body).await,
        // The control endpoint is `serve`'s (see `switch`): a session has none.
        Target::Control(_) | Target::Unknown => {
            let vars: Vec<String> = (dialect::PROVIDERS.iter())
                .flat_map(|r| r.vars)
                .map(|v| format!("${}", v.name))
                .collect();
            let why = format!(
                "{} {} is not a provider API path; agentproxy serves {} (point the SDK at {})",
                head.method,
                head.stored_path,
                dialect::prefixes(),
                vars.join(", ")
            );
            let kind = Refusal::UnknownRoute;
            api::refuse(&proxy, &head, StatusCode::NOT_FOUND, kind, why)
        }
    }
}
