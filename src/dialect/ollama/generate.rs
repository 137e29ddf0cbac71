//! Ollama's completion API (`POST /api/generate`): a `prompt` (with `system`, `suffix`,
//! `images`, the `context` tokens of an earlier answer) and a `response` text; no tools.
//! A stream unless `"stream": false`, newline-delimited like chat's: each chunk a piece of
//! `response` (or `thinking`), the last with `done: true`, the counts and `context`. A
//! request with no prompt loads the model (`done_reason: "load"`).

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::super::contract::{Dialect, ErrorFault, Spoil};
use super::super::shared::{delta_pieces, params, text, AssembleError};
use super::stream::{done, lines, objects};
use super::{fault_error, stream_error, streams};
use crate::neutral::{Message, ModelCall, ToolCall, Usage};
use crate::sse::{Framing, SseEvent};

/// The route name, stored in cassettes and in [`ModelCall::route`].
const ROUTE: &str = "ollama.generate";

/// Request fields that are not options of the call: the prompt and transport.
const NOT_PARAMS: [&str; 4] = ["model", "prompt", "system", "stream"];

/// The text fields of an answer, in the order a stream sends them.
const TEXTS: [&str; 2] = ["thinking", "response"];

/// The Ollama completion dialect.
pub(crate) struct Generate;

impl Dialect for Generate {
    fn name(&self) -> &'static str {
        ROUTE
    }

    fn wants_stream(&self, _path: &str, request: &Value) -> bool {
        streams(request)
    }

    fn framing(&self) -> Framing {
        Framing::Ndjson
    }

    fn assemble(&self, events: &[SseEvent]) -> Result<Value, AssembleError> {
        assemble(events)
    }

    fn synthesize(&self, response: &Value, _request: &Value) -> Vec<SseEvent> {
        synthesize(response)
    }

    fn extract(&self, request: &Value, response: &Value) -> ModelCall {
        let count = |field: &str| response[field].as_u64();
        let usage = match (count("prompt_eval_count"), count("eval_count")) {
            (None, None) => Usage::UNKNOWN,
            (prompt, completion) => Usage {
                prompt: prompt.unwrap_or(0),
                completion: completion.unwrap_or(0),
                ..Usage::default()
            },
        };
        ModelCall {
            route: ROUTE.into(),
            model: request["model"].as_str().unwrap_or_default().to_owned(),
            system: request["system"].as_str().map(str::to_owned),
            tools: Vec::new().into(),
            message_count: usize::from(prompt(request).is_some()),
            tool_results: vec![],
            tool_calls: vec![],
            reply: response["response"].as_str().map(str::to_owned),
            usage,
            params: params(request, &NOT_PARAMS),
        }
    }

    fn envelope(&self, request: &Value) -> Vec<(&'static str, String)> {
        let chars = prompt(request).map_or(0, |p| p.chars().count());
        vec![
            ("model", request["model"].to_string()),
            ("prompt", format!("{chars} characters")),
            ("system", request["system"].to_string()),
        ]
    }

    /// The prompt, as one user message.
    fn conversation<'a>(&self, request: &'a Value) -> Cow<'a, [Value]> {
        Cow::Owned(
            prompt(request)
                .map(|p| vec![json!({"role": "user", "content": p})])
                .unwrap_or_default(),
        )
    }

    fn is_model_output(&self, _item: &Value) -> bool {
        false
    }

    fn messages(&self, item: &Value, _names: &HashMap<String, String>, out: &mut Vec<Message>) {
        text("user", item["content"].as_str().unwrap_or_default(), out);
    }

    /// There are no tool results to mock.
    fn rewrite_tool_results(
        &self,
        _request: &mut Value,
        _lookup: &dyn Fn(&str) -> Option<ToolCall>,
        _mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
    ) -> usize {
        0
    }

    fn text_response(&self, _request: &Value, model: &str, text: &str) -> Value {
        json!({
            "model": model,
            "created_at": "1970-01-01T00:00:00Z",
            "response": text,
            "done": true,
            "done_reason": "stop",
        })
    }

    fn fault_error(&self, fault: ErrorFault) -> (u16, Value) {
        fault_error(fault)
    }

    fn stream_error(&self) -> SseEvent {
        stream_error()
    }

    /// There are no tool calls to spoil.
    fn spoil_tool_call(&self, _response: &mut Value, _nth: usize, _spoil: &Spoil) {}
}

/// The request's prompt, when it has one.
fn prompt(request: &Value) -> Option<&str> {
    request["prompt"].as_str().filter(|p| !p.is_empty())
}

/// The whole response a stream amounts to: its last chunk, with the text fields gathered
/// from every chunk.
fn assemble(events: &[SseEvent]) -> Result<Value, AssembleError> {
    let chunks = objects(events)?;
    let texts = TEXTS.map(|field| {
        (chunks.iter())
            .filter_map(|c| c.get(field).and_then(Value::as_str))
            .collect::<String>()
    });
    let mut whole = done(chunks)?;
    for (field, text) in TEXTS.into_iter().zip(texts) {
        whole.remove(field);
        if !text.is_empty() || field == "response" {
            whole.insert(field.to_owned(), Value::String(text));
        }
    }
    Ok(Value::Object(whole))
}

/// A stream for a whole response, as Ollama's server sends one: the thinking and the
/// response in token-sized pieces, then the last chunk with the response's own
/// `done_reason`, counts and `context`.
fn synthesize(response: &Value) -> Vec<SseEvent> {
    let mut chunks: Vec<Value> = Vec::new();
    for field in TEXTS {
        let text = response[field].as_str().unwrap_or_default();
        chunks.extend(delta_pieces(text).into_iter().map(|piece| {
            let mut chunk = json!({
                "model": response["model"],
                "created_at": response["created_at"],
                "response": "",
                "done": false,
            });
            chunk[field] = json!(piece);
            chunk
        }));
    }
    let mut last = match response {
        Value::Object(o) => o.clone(),
        _ => Map::new(),
    };
    last.remove("thinking");
    last.insert("response".to_owned(), json!(""));
    last.insert("done".to_owned(), json!(true));
    chunks.push(Value::Object(last));
    lines(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(lines: &[Value]) -> Vec<SseEvent> {
        lines
            .iter()
            .map(|l| SseEvent {
                event: None,
                id: None,
                data: l.to_string(),
            })
            .collect()
    }

    fn answer() -> Value {
        json!({
            "model": "llama3.2", "created_at": "2026-12-05T08:00:00Z",
            "response": "The sky is blue because of Rayleigh scattering.",
            "thinking": "Short answer.",
            "done": true, "done_reason": "stop", "context": [1, 2, 3],
            "prompt_eval_count": 26, "eval_count": 12, "total_duration": 5043500667u64,
        })
    }

    #[test]
    fn a_stream_assembles_to_its_answer_and_an_answer_streams_back() {
        let streamed = synthesize(&answer());
        assert!(streamed.len() > 3, "in pieces: {streamed:?}");
        let first: Value = serde_json::from_str(&streamed[0].data).unwrap();
        assert_eq!(first["done"], false);
        let last: Value = serde_json::from_str(&streamed.last().unwrap().data).unwrap();
        assert_eq!(
            (last["done"].clone(), last["response"].clone()),
            (json!(true), json!(""))
        );
        assert_eq!(last["context"], json!([1, 2, 3]));
        assert_eq!(assemble(&streamed).unwrap(), answer());
    }

    #[test]
    fn a_stream_that_failed_or_never_ended_does_not_assemble() {
        let piece = json!({"model": "m", "response": "Hi", "done": false});
        let err = assemble(&events(&[piece.clone(), json!({"error": "model crashed"})]));
        assert!(
            matches!(err, Err(AssembleError::Upstream { index: 1, .. })),
            "{err:?}"
        );
        let err = assemble(&events(&[piece]));
        assert!(
            matches!(err, Err(AssembleError::Incomplete { .. })),
            "{err:?}"
        );
        assert!(matches!(assemble(&[]), Err(AssembleError::Empty { .. })));
    }

    #[test]
    fn the_model_call_has_the_prompt_the_system_the_reply_and_the_counts() {
        let request = json!({"model": "llama3.2", "prompt": "Why is the sky blue?", "system": "Be brief.", "options": {"temperature": 0}});
        let call = Generate.extract(&request, &answer());
        assert_eq!(call.route, "ollama.generate");
        assert_eq!(call.system.as_deref(), Some("Be brief."));
        assert_eq!(call.message_count, 1);
        assert_eq!(
            call.reply.as_deref(),
            Some("The sky is blue because of Rayleigh scattering.")
        );
        assert_eq!((call.usage.prompt, call.usage.completion), (26, 12));
        assert_eq!(call.params["options"], json!({"temperature": 0}));
        let mut out = Vec::new();
        for item in Generate.conversation(&request).iter() {
            Generate.messages(item, &HashMap::new(), &mut out);
        }
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(
            Generate.envelope(&request)[1],
            ("prompt", "20 characters".to_owned())
        );
        // Loading the model: no prompt, no conversation.
        let load = json!({"model": "llama3.2"});
        assert_eq!(Generate.extract(&load, &Value::Null).message_count, 0);
        assert!(Generate.conversation(&load).is_empty());
    }

    #[test]
    fn streams_by_default_and_faults_in_ollamas_shape() {
        assert!(Generate.wants_stream("/api/generate", &json!({"prompt": "x"})));
        assert!(!Generate.wants_stream("/api/generate", &json!({"stream": false})));
        let (status, body) = Generate.fault_error(ErrorFault::RateLimit);
        assert_eq!(status, 429);
        assert!(body["error"]
            .as_str()
            .unwrap()
            .contains("injected by agentproxy"));
        let text = Generate.text_response(&json!({}), "llama3.2", "hi");
        assert_eq!(
            Generate.extract(&json!({}), &text).reply.as_deref(),
            Some("hi")
        );
    }
}
