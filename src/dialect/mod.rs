//! Wire dialects: which route a request belongs to, its envelope for near-miss reports, and
//! errors in the provider's own shape. The per-dialect wire shapes live in submodules.

pub mod openai_chat;
pub mod sse;

use serde_json::{json, Value};

use crate::trajectory::{ModelCall, ToolCall};
use sse::SseEvent;

/// A route: the dialect and endpoint a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `POST …/chat/completions`
    OpenAiChat,
    /// Any other path, recorded and replayed as plain HTTP.
    Http,
}

/// Which provider family a request speaks, for error shapes and upstream choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    OpenAi,
    Anthropic,
}

impl Route {
    pub fn of(method: &http::Method, path: &str) -> Route {
        let path = path.split('?').next().unwrap_or(path);
        if method == http::Method::POST && path.ends_with("/chat/completions") {
            Route::OpenAiChat
        } else {
            Route::Http
        }
    }

    /// The name stored in cassettes and hashed into keys.
    pub fn name(self) -> &'static str {
        match self {
            Route::OpenAiChat => "openai.chat",
            Route::Http => "http",
        }
    }

    /// The route a cassette names; unknown names are plain HTTP.
    pub fn from_name(name: &str) -> Route {
        match name {
            "openai.chat" => Route::OpenAiChat,
            _ => Route::Http,
        }
    }

    /// Model routes must carry a JSON body; plain HTTP may carry anything.
    pub fn requires_json(self) -> bool {
        !matches!(self, Route::Http)
    }

    /// Does this request ask for a server-sent-event stream?
    pub fn wants_stream(self, request: &Value) -> bool {
        match self {
            Route::OpenAiChat => openai_chat::wants_stream(request),
            Route::Http => false,
        }
    }

    /// The whole response assembled from a recorded stream; `None` when the route has no
    /// assembled form.
    pub fn assemble(self, events: &[SseEvent]) -> Option<Result<Value, String>> {
        match self {
            Route::OpenAiChat => Some(openai_chat::assemble(events).map_err(|e| e.to_string())),
            Route::Http => None,
        }
    }

    /// A stream synthesized from a whole response, shaped by what `request` asked for.
    pub fn synthesize(self, response: &Value, request: &Value) -> Option<Vec<SseEvent>> {
        match self {
            Route::OpenAiChat => Some(openai_chat::synthesize(
                response,
                openai_chat::wants_usage(request),
            )),
            Route::Http => None,
        }
    }

    /// The neutral model call of an exchange; `None` for plain HTTP.
    pub fn extract(self, request: &Value, response: &Value) -> Option<ModelCall> {
        match self {
            Route::OpenAiChat => Some(openai_chat::extract(request, response)),
            Route::Http => None,
        }
    }

    /// Replace tool results in a request by mocks (see `openai_chat::rewrite_tool_results`).
    pub fn rewrite_tool_results(
        self,
        request: &mut Value,
        lookup: &dyn Fn(&str) -> Option<ToolCall>,
        mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
    ) -> usize {
        match self {
            Route::OpenAiChat => openai_chat::rewrite_tool_results(request, lookup, mock),
            Route::Http => 0,
        }
    }
}

/// Anthropic's API lives under `/v1/messages` and is also recognised by its version header.
pub fn provider_of(path: &str, headers: &http::HeaderMap) -> Provider {
    if path.starts_with("/v1/messages") || headers.contains_key("anthropic-version") {
        Provider::Anthropic
    } else {
        Provider::OpenAi
    }
}

/// An error body in the provider's own shape, so SDKs raise a readable exception.
pub fn error_body(provider: Provider, kind: &str, message: &str) -> Value {
    match provider {
        Provider::OpenAi => json!({
            "error": {"message": message, "type": kind, "param": null, "code": kind}
        }),
        Provider::Anthropic => json!({
            "type": "error",
            "error": {"type": kind, "message": message}
        }),
    }
}

/// The envelope of a request for the near-miss report: labelled summaries of what shapes a
/// conversation (model, message count, roles, tool names). `None` for plain HTTP.
pub fn envelope(route: &str, body: &Value) -> Option<Vec<(&'static str, String)>> {
    match route {
        "openai.chat" => Some(openai_chat::envelope(body)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(Route::of(&http::Method::POST, "/v1/chat/completions"), Route::OpenAiChat);
        assert_eq!(Route::of(&http::Method::POST, "/api/v1/chat/completions?x=1"), Route::OpenAiChat);
        assert_eq!(Route::of(&http::Method::GET, "/v1/chat/completions"), Route::Http);
        assert_eq!(Route::of(&http::Method::GET, "/v1/models"), Route::Http);
    }

    #[test]
    fn providers() {
        let h = http::HeaderMap::new();
        assert_eq!(provider_of("/v1/messages", &h), Provider::Anthropic);
        assert_eq!(provider_of("/v1/chat/completions", &h), Provider::OpenAi);
        let mut h = http::HeaderMap::new();
        h.insert("anthropic-version", "2023-06-01".parse().unwrap());
        assert_eq!(provider_of("/v1/models", &h), Provider::Anthropic);
    }

    #[test]
    fn error_shapes() {
        let e = error_body(Provider::OpenAi, "agentproxy_cassette_miss", "m");
        assert_eq!(e["error"]["type"], "agentproxy_cassette_miss");
        let e = error_body(Provider::Anthropic, "agentproxy_cassette_miss", "m");
        assert_eq!(e["type"], "error");
        assert_eq!(e["error"]["message"], "m");
    }
}
