//! Wire dialects: everything agentproxy knows about a provider's wire format lives in one
//! folder per dialect (`openai_chat/`, `openai_responses/`, `anthropic/`, `gemini/`,
//! `ollama/`, `bedrock/`), behind the
//! `Dialect` trait (`contract.rs`): request flags, the near-miss envelope, stream assembly and
//! synthesis, extraction into the neutral model, the conversation a request carries, tool
//! results rewritten for mocks, and the provider's error shape. What the dialects share is
//! written once here ([`shared`]). [`Route`] is the one table from a request (or a
//! cassette's route name) to its dialect.

pub mod a2a;
pub mod anthropic;
pub(crate) mod bedrock;
mod contract;
pub mod gemini;
pub mod live;
pub mod mcp;
pub mod ollama;
pub mod openai_chat;
pub mod openai_responses;
mod provider;
pub mod realtime;
mod refusal;
mod shared;
pub mod socket;
mod telemetry;

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value;

use crate::neutral::{Message, ModelCall, ToolCall};
use crate::sse::{Framing, SseEvent};

pub(crate) use contract::Dialect;
pub use contract::{ErrorFault, Spoil, INJECTED};
pub use provider::{
    carries_placeholder, is_api_path, key_vars, known_clients, prefixes, provider_host_under,
    provider_of, provider_of_host, BaseVar, Fallback, KnownClient, Provider, ReplayVar, Row,
    PLACEHOLDER, PROVIDERS,
};
pub use refusal::Refusal;
pub(crate) use shared::delta_pieces;
pub use shared::AssembleError;
pub use telemetry::{telemetry_of, Telemetry, TELEMETRY};

/// A route: the dialect and endpoint a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `POST …/chat/completions`
    OpenAiChat,
    /// `POST …/responses` (not `…/responses/{id}` and its sub-resources)
    OpenAiResponses,
    /// `POST /v1/messages` (not `/v1/messages/count_tokens` or `/v1/messages/batches`),
    /// and Claude on Vertex AI (`…/publishers/anthropic/models/{model}:rawPredict` or
    /// `:streamRawPredict`)
    AnthropicMessages,
    /// `POST /{version}/…models/{model}:generateContent` or `:streamGenerateContent`
    GeminiGenerate,
    /// `POST /api/chat` (Ollama's native API)
    OllamaChat,
    /// `POST /api/generate` (Ollama's completion API)
    OllamaGenerate,
    /// `POST /model/{model}/converse` or `/converse-stream` (AWS Bedrock)
    BedrockConverse,
    /// `POST /model/{model}/invoke` or `/invoke-with-response-stream` (AWS Bedrock,
    /// Anthropic bodies)
    BedrockInvoke,
    /// Any other path, recorded and replayed as plain HTTP.
    Http,
}

/// Every model route, for tables and tests.
pub const MODEL_ROUTES: [Route; 8] = [
    Route::OpenAiChat,
    Route::OpenAiResponses,
    Route::AnthropicMessages,
    Route::GeminiGenerate,
    Route::OllamaChat,
    Route::OllamaGenerate,
    Route::BedrockConverse,
    Route::BedrockInvoke,
];

impl Route {
    pub fn of(method: &http::Method, path: &str) -> Route {
        let path = path.split('?').next().unwrap_or(path);
        if method != http::Method::POST {
            Route::Http
        } else if let Some((op, _)) = bedrock::operation(path) {
            match op {
                bedrock::Operation::Converse | bedrock::Operation::ConverseStream => {
                    Route::BedrockConverse
                }
                bedrock::Operation::Invoke | bedrock::Operation::InvokeStream => {
                    Route::BedrockInvoke
                }
            }
        } else if path.ends_with("/chat/completions") {
            Route::OpenAiChat
        } else if path.ends_with("/responses") {
            Route::OpenAiResponses
        } else if gemini::is_generate_path(path) {
            Route::GeminiGenerate
        } else if path == "/api/chat" {
            Route::OllamaChat
        } else if path == "/api/generate" {
            Route::OllamaGenerate
        } else if path == "/v1/messages" || anthropic::vertex_model(path).is_some() {
            // Exact: OpenAI's `POST /v1/threads/{id}/messages` ends the same way.
            Route::AnthropicMessages
        } else {
            Route::Http
        }
    }

    /// The dialect of a model route; `None` for plain HTTP.
    pub(crate) fn dialect(self) -> Option<&'static dyn Dialect> {
        match self {
            Route::OpenAiChat => Some(&openai_chat::OpenAiChat),
            Route::OpenAiResponses => Some(&openai_responses::OpenAiResponses),
            Route::AnthropicMessages => Some(&anthropic::Anthropic),
            Route::GeminiGenerate => Some(&gemini::Gemini),
            Route::OllamaChat => Some(&ollama::Ollama),
            Route::OllamaGenerate => Some(&ollama::Generate),
            Route::BedrockConverse => Some(&bedrock::Converse),
            Route::BedrockInvoke => Some(&bedrock::Invoke),
            Route::Http => None,
        }
    }

    /// The name stored in cassettes and hashed into keys.
    pub fn name(self) -> &'static str {
        self.dialect().map_or("http", |d| d.name())
    }

    /// The route a cassette names; unknown names are plain HTTP.
    pub fn from_name(name: &str) -> Route {
        MODEL_ROUTES
            .into_iter()
            .find(|r| r.name() == name)
            .unwrap_or(Route::Http)
    }

    /// Model routes must carry a JSON body; plain HTTP may carry anything.
    pub fn requires_json(self) -> bool {
        self.dialect().is_some()
    }

    /// Does this request (`path` with its query, and body) ask for a server-sent-event
    /// stream?
    pub fn wants_stream(self, path: &str, request: &Value) -> bool {
        self.dialect()
            .is_some_and(|d| d.wants_stream(path, request))
    }

    /// How this route's streams are framed (plain HTTP streams: as recorded; synthesized
    /// ones do not exist).
    pub fn framing(self) -> Framing {
        self.dialect().map_or(Framing::Sse, |d| d.framing())
    }

    /// What of `path` belongs in the request's key (see [`Dialect::key_scope`]).
    pub fn key_scope(self, path: &str) -> Option<String> {
        self.dialect()?.key_scope(path)
    }

    /// The model `path` names, where the body does not name it (see [`Dialect::path_model`]).
    pub fn path_model(self, path: &str) -> Option<String> {
        self.dialect()?.path_model(path)
    }

    /// The whole response assembled from a recorded stream; `None` when the route has no
    /// assembled form.
    pub fn assemble(self, events: &[SseEvent]) -> Option<Result<Value, AssembleError>> {
        Some(self.dialect()?.assemble(events))
    }

    /// A stream synthesized from a whole response, shaped by what `request` asked for.
    pub fn synthesize(self, response: &Value, request: &Value) -> Option<Vec<SseEvent>> {
        Some(self.dialect()?.synthesize(response, request))
    }

    /// The neutral model call of an exchange; `None` for plain HTTP.
    pub fn extract(self, request: &Value, response: &Value) -> Option<ModelCall> {
        Some(self.dialect()?.extract(request, response))
    }

    /// The model a request names in its body, if it names one (Gemini's is in the path).
    pub fn model(self, request: &Value) -> Option<String> {
        let model = match self.dialect() {
            Some(d) => d.extract(request, &Value::Null).model,
            // Plain HTTP under the API prefixes (embeddings, moderations) names it as
            // OpenAI's API does.
            None => request["model"].as_str().unwrap_or_default().to_owned(),
        };
        Some(model).filter(|m| !m.is_empty())
    }

    /// The envelope of a request for the near-miss report; `None` for plain HTTP.
    pub fn envelope(self, request: &Value) -> Option<Vec<(&'static str, String)>> {
        Some(self.dialect()?.envelope(request))
    }

    /// The conversation items a request carries; none for plain HTTP.
    pub fn conversation<'a>(self, request: &'a Value) -> Cow<'a, [Value]> {
        self.dialect()
            .map_or(Cow::Borrowed(&[][..]), |d| d.conversation(request))
    }

    /// Did the model produce this conversation item?
    pub fn is_model_output(self, item: &Value) -> bool {
        self.dialect().is_some_and(|d| d.is_model_output(item))
    }

    /// The neutral messages of conversation items (see [`Dialect::messages`]).
    pub fn messages(self, items: &[Value], names: &HashMap<String, String>) -> Vec<Message> {
        let mut out = Vec::new();
        if let Some(d) = self.dialect() {
            for item in items {
                d.messages(item, names, &mut out);
            }
        }
        out
    }

    /// A minimal valid response of this route's dialect whose reply is `text`; `None` for
    /// plain HTTP.
    pub fn text_response(self, request: &Value, model: &str, text: &str) -> Option<Value> {
        Some(self.dialect()?.text_response(request, model, text))
    }

    /// An error fault's status and body in this route's shape; `None` for plain HTTP.
    pub fn fault_error(self, fault: ErrorFault) -> Option<(u16, Value)> {
        Some(self.dialect()?.fault_error(fault))
    }

    /// An error event inside a stream of this route; `None` for plain HTTP.
    pub fn stream_error(self) -> Option<SseEvent> {
        Some(self.dialect()?.stream_error())
    }

    /// Spoil a tool call of a whole response (see [`Dialect::spoil_tool_call`]); plain
    /// HTTP has none.
    pub fn spoil_tool_call(self, response: &mut Value, nth: usize, spoil: &Spoil) {
        if let Some(d) = self.dialect() {
            d.spoil_tool_call(response, nth, spoil);
        }
    }

    /// Replace tool results in a request by mocks (see [`Dialect::rewrite_tool_results`]).
    pub fn rewrite_tool_results(
        self,
        request: &mut Value,
        lookup: &dyn Fn(&str) -> Option<ToolCall>,
        mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
    ) -> usize {
        self.dialect()
            .map_or(0, |d| d.rewrite_tool_results(request, lookup, mock))
    }
}

/// Does the path (before any query) have a `.` or `..` segment, spelled plainly or
/// percent-encoded (`%2e`)? A server that normalises paths would resolve it, so a request
/// could leave the upstream base's prefix: such paths are refused, never forwarded.
pub fn has_dot_segment(path_and_query: &str) -> bool {
    let path = path_and_query.split(['?', '#']).next().unwrap_or_default();
    /// `.` or `..`, each dot plain or as `%2e` / `%2E`.
    fn is_dots(mut s: &[u8]) -> bool {
        let mut dots = 0;
        while !s.is_empty() {
            if s[0] == b'.' {
                s = &s[1..];
            } else if s.len() >= 3 && s[0] == b'%' && s[1] == b'2' && s[2] | 0x20 == b'e' {
                s = &s[3..];
            } else {
                return false;
            }
            dots += 1;
        }
        (1..=2).contains(&dots)
    }
    path.split('/').any(|segment| is_dots(segment.as_bytes()))
}

/// Query parameters that carry a credential: an API key (Google's `?key=`, and the names
/// other APIs use), the signature and credentials of a presigned URL (AWS SigV4 with its
/// STS session token, Google Cloud Storage, Azure SAS, CloudFront), and an OAuth code. A
/// presigned URL is a bearer credential for as long as it lives.
const CREDENTIAL_PARAMS: [&str; 21] = [
    "key",
    "api_key",
    "api-key",
    "apikey",
    "access_token",
    "id_token",
    "refresh_token",
    "auth_token",
    "token",
    "client_secret",
    "password",
    "secret",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
    "sig",
    "signature",
    "googleaccessid",
    "code",
];

/// `path_and_query` without its credential parameters: a key in the URL is never stored,
/// shown or matched.
pub fn without_credentials(path_and_query: &str) -> String {
    let Some((path, query)) = path_and_query.split_once('?') else {
        return path_and_query.to_owned();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| {
            let name = p.split('=').next().unwrap_or_default();
            !CREDENTIAL_PARAMS
                .iter()
                .any(|c| name.eq_ignore_ascii_case(c))
        })
        .collect();
    if kept.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

/// The message of an error body in any provider's shape (`error.message`; AWS's at the
/// top, beside its `__type`).
pub fn error_message(body: &Value) -> Option<&str> {
    (body["error"]["message"].as_str()).or_else(|| body.get("__type").and(body["message"].as_str()))
}

/// An error body in the provider's own shape, so SDKs raise a readable exception.
pub fn error_body(provider: Provider, status: u16, kind: Refusal, message: &str) -> Value {
    let kind = kind.as_str();
    match provider {
        Provider::OpenAi => openai_chat::error_body(kind, message),
        Provider::Anthropic => anthropic::error_body(kind, message),
        Provider::Gemini => gemini::error_body(status, kind, message),
        Provider::Azure => openai_chat::error_body(kind, message),
        Provider::Ollama => ollama::error_body(message),
        Provider::Bedrock => bedrock::error_body(kind, message),
        Provider::Vertex => gemini::error_body(status, kind, message),
    }
}

#[cfg(test)]
mod tests;
