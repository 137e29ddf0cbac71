//! One request, routed (after the layers of `stack`): answered by the handler its target
//! names (a model API request, an MCP relay) or refused.

use std::sync::Arc;

use http::{Request, Response, StatusCode};

use super::api::{self, Head};
use super::body::ProxyBody;
use super::route::Target;
use super::secret;
use super::state::Proxy;
use super::{a2a, google_adc, mcp, mcp_http};
use crate::dialect::{self, Refusal};

pub(super) async fn handle(
    proxy: Arc<Proxy>,
    req: Request<hyper::body::Incoming>,
) -> Response<ProxyBody> {
    let head = Head::of_request(&proxy, &req);
    let (parts, body) = req.into_parts();
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
        Target::A2a(rest) => {
            let rest = rest.to_owned();
            a2a::handle(&proxy, parts, body, &rest).await
        }
        Target::Api => api::handle(&proxy, head, parts.headers, body).await,
        Target::GoogleToken => google_adc::token(),
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
