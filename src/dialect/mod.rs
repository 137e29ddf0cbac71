//! Wire dialects: which route a request belongs to, its envelope for near-miss reports, and
//! errors in the provider's own shape. The per-dialect wire shapes live in submodules.

pub mod anthropic;
pub mod openai_chat;
pub mod openai_responses;

use serde_json::{json, Value};

use crate::neutral::{ModelCall, ToolCall};
use crate::sse::SseEvent;

/// A route: the dialect and endpoint a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `POST …/chat/completions`
    OpenAiChat,
    /// `POST …/responses` (not `…/responses/{id}` and its sub-resources)
    OpenAiResponses,
    /// `POST /v1/messages` (not `/v1/messages/count_tokens` or `/v1/messages/batches`)
    AnthropicMessages,
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
        if method != http::Method::POST {
            Route::Http
        } else if path.ends_with("/chat/completions") {
            Route::OpenAiChat
        } else if path.ends_with("/responses") {
            Route::OpenAiResponses
        } else if path == "/v1/messages" {
            // Exact: OpenAI's `POST /v1/threads/{id}/messages` ends the same way.
            Route::AnthropicMessages
        } else {
            Route::Http
        }
    }

    /// The name stored in cassettes and hashed into keys.
    pub fn name(self) -> &'static str {
        match self {
            Route::OpenAiChat => "openai.chat",
            Route::OpenAiResponses => "openai.responses",
            Route::AnthropicMessages => "anthropic.messages",
            Route::Http => "http",
        }
    }

    /// The route a cassette names; unknown names are plain HTTP.
    pub fn from_name(name: &str) -> Route {
        match name {
            "openai.chat" => Route::OpenAiChat,
            "openai.responses" => Route::OpenAiResponses,
            "anthropic.messages" => Route::AnthropicMessages,
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
            Route::OpenAiResponses => openai_responses::wants_stream(request),
            Route::AnthropicMessages => anthropic::wants_stream(request),
            Route::Http => false,
        }
    }

    /// The whole response assembled from a recorded stream; `None` when the route has no
    /// assembled form.
    pub fn assemble(self, events: &[SseEvent]) -> Option<Result<Value, String>> {
        match self {
            Route::OpenAiChat => Some(openai_chat::assemble(events).map_err(|e| e.to_string())),
            Route::OpenAiResponses => {
                Some(openai_responses::assemble(events).map_err(|e| e.to_string()))
            }
            Route::AnthropicMessages => {
                Some(anthropic::assemble(events).map_err(|e| e.to_string()))
            }
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
            Route::OpenAiResponses => Some(openai_responses::synthesize(response)),
            Route::AnthropicMessages => Some(anthropic::synthesize(response)),
            Route::Http => None,
        }
    }

    /// The neutral model call of an exchange; `None` for plain HTTP.
    pub fn extract(self, request: &Value, response: &Value) -> Option<ModelCall> {
        match self {
            Route::OpenAiChat => Some(openai_chat::extract(request, response)),
            Route::OpenAiResponses => Some(openai_responses::extract(request, response)),
            Route::AnthropicMessages => Some(anthropic::extract(request, response)),
            Route::Http => None,
        }
    }

    /// Replace tool results in a request by mocks (see `openai_chat::rewrite_tool_results`;
    /// `lookup` is the session's `call id -> call` map, for results whose call is not in the
    /// request, as with Responses' `previous_response_id`).
    pub fn rewrite_tool_results(
        self,
        request: &mut Value,
        lookup: &dyn Fn(&str) -> Option<ToolCall>,
        mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
    ) -> usize {
        match self {
            Route::OpenAiChat => openai_chat::rewrite_tool_results(request, lookup, mock),
            Route::OpenAiResponses => openai_responses::rewrite_tool_results(request, lookup, mock),
            Route::AnthropicMessages => anthropic::rewrite_tool_results(request, lookup, mock),
            Route::Http => 0,
        }
    }
}

/// Anthropic's API lives under `/v1/messages` (including `count_tokens` and `batches`) and
/// is also recognised by its version header.
pub fn provider_of(path: &str, headers: &http::HeaderMap) -> Provider {
    let under_messages = path
        .strip_prefix("/v1/messages")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?']));
    if under_messages || headers.contains_key("anthropic-version") {
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
        "openai.responses" => Some(openai_responses::envelope(body)),
        "anthropic.messages" => Some(anthropic::envelope(body)),
        _ => None,
    }
}

/// Split `text` into the pieces a synthesized stream sends as deltas, the way a model
/// streams tokens: a new piece before each whitespace that follows a word, and at most
/// [`DELTA_CHARS`] characters each; never inside a character. Empty text has no pieces.
pub(crate) fn delta_pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut start, mut chars, mut in_word) = (0, 0, false);
    for (at, c) in text.char_indices() {
        if at > start && (chars >= DELTA_CHARS || (in_word && c.is_whitespace())) {
            pieces.push(&text[start..at]);
            (start, chars, in_word) = (at, 0, false);
        }
        chars += 1;
        in_word |= !c.is_whitespace();
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// The longest delta [`delta_pieces`] makes, in characters: a few tokens' worth.
const DELTA_CHARS: usize = 12;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(
            Route::of(&http::Method::POST, "/v1/chat/completions"),
            Route::OpenAiChat
        );
        assert_eq!(
            Route::of(&http::Method::POST, "/api/v1/chat/completions?x=1"),
            Route::OpenAiChat
        );
        assert_eq!(
            Route::of(&http::Method::GET, "/v1/chat/completions"),
            Route::Http
        );
        assert_eq!(Route::of(&http::Method::GET, "/v1/models"), Route::Http);

        let post = |path| Route::of(&http::Method::POST, path);
        assert_eq!(post("/v1/responses"), Route::OpenAiResponses);
        assert_eq!(
            post("/openai/v1/responses?api-version=preview"),
            Route::OpenAiResponses
        );
        assert_eq!(Route::of(&http::Method::GET, "/v1/responses"), Route::Http);
        assert_eq!(
            Route::of(&http::Method::GET, "/v1/responses/resp_1"),
            Route::Http
        );
        assert_eq!(
            Route::of(&http::Method::DELETE, "/v1/responses/resp_1"),
            Route::Http
        );
        assert_eq!(post("/v1/responses/resp_1/cancel"), Route::Http);
        assert_eq!(post("/v1/responses/input_tokens"), Route::Http);
        assert_eq!(
            Route::of(&http::Method::GET, "/v1/responses/resp_1/input_items"),
            Route::Http
        );

        assert_eq!(post("/v1/messages"), Route::AnthropicMessages);
        assert_eq!(post("/v1/messages?beta=true"), Route::AnthropicMessages);
        assert_eq!(post("/v1/messages/count_tokens"), Route::Http);
        assert_eq!(post("/v1/messages/batches"), Route::Http);
        assert_eq!(Route::of(&http::Method::GET, "/v1/messages"), Route::Http);
        // OpenAI Assistants: same last segment, a different API.
        assert_eq!(post("/v1/threads/thread_1/messages"), Route::Http);
    }

    #[test]
    fn route_names_round_trip() {
        for route in [
            Route::OpenAiChat,
            Route::OpenAiResponses,
            Route::AnthropicMessages,
            Route::Http,
        ] {
            assert_eq!(Route::from_name(route.name()), route);
            assert_eq!(
                envelope(route.name(), &json!({})).is_some(),
                route != Route::Http
            );
            assert_eq!(route.requires_json(), route != Route::Http);
        }
        assert_eq!(Route::OpenAiResponses.name(), "openai.responses");
        assert_eq!(Route::AnthropicMessages.name(), "anthropic.messages");
        assert_eq!(Route::from_name("anthropic.completions"), Route::Http);
    }

    #[test]
    fn dispatch_reaches_each_dialect() {
        let stream = json!({"stream": true});
        for route in [
            Route::OpenAiChat,
            Route::OpenAiResponses,
            Route::AnthropicMessages,
        ] {
            assert!(route.wants_stream(&stream), "{route:?}");
            assert!(!route.wants_stream(&json!({})), "{route:?}");
            assert_eq!(
                route.extract(&json!({}), &json!({})).map(|c| c.route),
                Some(route.name().to_owned())
            );
        }
        assert!(!Route::Http.wants_stream(&stream));
        assert_eq!(Route::Http.extract(&json!({}), &json!({})), None);

        let response =
            json!({"id": "resp_1", "object": "response", "status": "completed", "output": []});
        let events = Route::OpenAiResponses
            .synthesize(&response, &stream)
            .expect("a stream");
        assert_eq!(Route::OpenAiResponses.assemble(&events), Some(Ok(response)));
        let message = json!({"id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}});
        let events = Route::AnthropicMessages
            .synthesize(&message, &stream)
            .expect("a stream");
        assert_eq!(
            Route::AnthropicMessages.assemble(&events),
            Some(Ok(message))
        );
        assert_eq!(Route::Http.assemble(&events), None);

        let mut req = json!({"messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}]});
        let n = Route::AnthropicMessages
            .rewrite_tool_results(&mut req, &|_| None, &mut |_, _| Some(json!("y")));
        assert_eq!(n, 1);
        let mut req = json!({"input": [{"type": "function_call_output", "call_id": "call_1", "output": "x"}]});
        let lookup = |id: &str| {
            Some(ToolCall {
                id: id.into(),
                name: "f".into(),
                arguments: json!({}),
            })
        };
        let n = Route::OpenAiResponses
            .rewrite_tool_results(&mut req, &lookup, &mut |_, _| Some(json!("y")));
        assert_eq!(n, 1);
        assert_eq!(
            Route::Http.rewrite_tool_results(&mut req, &lookup, &mut |_, _| Some(json!("y"))),
            0
        );
    }

    #[test]
    fn odd_shapes_never_panic() {
        let odd = [
            json!(null),
            json!("text"),
            json!([1, 2]),
            json!({"input": 3, "messages": "x", "tools": {}, "output": [null, 1, "s"], "content": [null, 2]}),
            json!({"input": [null, 1, {"type": 2}], "messages": [null, {"content": [null, 1]}]}),
            json!({"output": [{"type": "message", "content": [{"type": "output_text"}]}, {"type": "function_call"}],
                   "content": [{"type": "tool_use"}, {"type": "text"}, {"type": "thinking"}]}),
        ];
        for route in [
            Route::OpenAiChat,
            Route::OpenAiResponses,
            Route::AnthropicMessages,
        ] {
            for a in &odd {
                let _ = envelope(route.name(), a);
                let events = route.synthesize(a, a).expect("a stream");
                let _ = route.assemble(&events);
                for b in &odd {
                    let _ = route.extract(a, b);
                    let mut req = a.clone();
                    let lookup = |_: &str| None;
                    route.rewrite_tool_results(&mut req, &lookup, &mut |_, _| Some(json!(1)));
                }
            }
        }
    }

    #[test]
    fn delta_pieces_split_like_tokens_and_never_inside_a_character() {
        assert_eq!(
            delta_pieces("It's 18 °C in Zürich."),
            vec!["It's", " 18", " °C", " in", " Zürich."]
        );
        assert_eq!(
            delta_pieces("  two  spaces "),
            vec!["  two", "  spaces", " "]
        );
        assert_eq!(
            delta_pieces(r#"{"city":"Zürich","unit":"°C"}"#),
            vec![r#"{"city":"Zür"#, r#"ich","unit":"#, r#""°C"}"#]
        );
        assert_eq!(delta_pieces(""), Vec::<&str>::new());
        for text in ["Grüße aus Köln 🌤🌤🌤🌤🌤🌤🌤🌤🌤🌤🌤🌤🌤🌤", "a\nb\nc", "x"]
        {
            assert_eq!(delta_pieces(text).concat(), text);
            assert!(delta_pieces(text)
                .iter()
                .all(|p| !p.is_empty() && p.chars().count() <= DELTA_CHARS));
        }
    }

    #[test]
    fn providers() {
        let h = http::HeaderMap::new();
        assert_eq!(provider_of("/v1/messages", &h), Provider::Anthropic);
        assert_eq!(provider_of("/v1/chat/completions", &h), Provider::OpenAi);
        assert_eq!(
            provider_of("/v1/messages?beta=true", &h),
            Provider::Anthropic
        );
        assert_eq!(
            provider_of("/v1/messages/count_tokens", &h),
            Provider::Anthropic
        );
        assert_eq!(
            provider_of("/v1/messages/batches/msgbatch_1", &h),
            Provider::Anthropic
        );
        assert_eq!(provider_of("/v1/responses", &h), Provider::OpenAi);
        assert_eq!(
            provider_of("/v1/threads/thread_1/messages", &h),
            Provider::OpenAi
        );
        assert_eq!(provider_of("/v1/messagesx", &h), Provider::OpenAi);
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
