//! The first step of every request: the handler its path names. Pure.

use super::{a2a, google_adc, mcp, mcp_http};
use crate::dialect;

/// Paths under this prefix are `agentproxy serve`'s control endpoint, never forwarded or
/// recorded.
pub const CONTROL_PREFIX: &str = "/_agentproxy/";

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// `serve`'s control endpoint: the path after [`CONTROL_PREFIX`].
    Control(&'a str),
    /// An `agentproxy mcp` stand-in: the path after `/_agentproxy/mcp/`, without its query.
    McpStdio(&'a str),
    /// A streamable HTTP MCP server: the path after `/mcp/`.
    McpHttp(&'a str),
    /// A remote agent's relay: the path after `/a2a/`.
    A2a(&'a str),
    /// A token refresh of the session's Google credentials (see `google_adc`).
    GoogleToken,
    /// A request under the provider API prefixes: a model request, or plain HTTP.
    Api,
    /// Anything else: refused.
    Unknown,
}

impl Target<'_> {
    /// The target of `path` (with its query).
    pub fn of(path: &str) -> Target<'_> {
        if let Some(rest) = path.strip_prefix(mcp::PREFIX) {
            return Target::McpStdio(rest.split('?').next().unwrap_or(rest));
        }
        if path.split('?').next() == Some(google_adc::TOKEN_PATH) {
            return Target::GoogleToken;
        }
        if let Some(rest) = path.strip_prefix(CONTROL_PREFIX) {
            return Target::Control(rest);
        }
        if let Some(rest) = path.strip_prefix(mcp_http::PREFIX) {
            return Target::McpHttp(rest);
        }
        if let Some(rest) = path.strip_prefix(a2a::PREFIX) {
            return Target::A2a(rest);
        }
        if dialect::is_api_path(path) {
            return Target::Api;
        }
        Target::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_path_names_one_target() {
        for (path, target) in [
            ("/v1/chat/completions", Target::Api),
            ("/v1beta/models/m:generateContent?key=k", Target::Api),
            (
                "/_agentproxy/mcp/mail/call?x=1",
                Target::McpStdio("mail/call"),
            ),
            ("/_agentproxy/test", Target::Control("test")),
            ("/_agentproxy/google-token", Target::GoogleToken),
            ("/mcp/mail", Target::McpHttp("mail")),
            ("/mcp/mail?session=1", Target::McpHttp("mail?session=1")),
            ("/a2a/fx/", Target::A2a("fx/")),
            ("/health", Target::Unknown),
            ("/", Target::Unknown),
        ] {
            assert_eq!(Target::of(path), target, "{path}");
        }
    }
}
