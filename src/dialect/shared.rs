//! What the dialects share: the stream-assembly error, the request flags and fields that
//! read the same in every dialect, the tool-result rewrite loop, and the way a synthesized
//! stream splits text into deltas.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::neutral::{parse_arguments, result_text, Message, ToolCall, Usage};

/// Why a recorded stream could not be assembled into a whole response.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    #[error("failed to parse stream event {index} as JSON")]
    NotJson {
        index: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("failed to read stream event {index}: {problem}")]
    Shape { index: usize, problem: &'static str },
    #[error("failed to assemble the stream: event {index} reports an upstream error: {message}")]
    Upstream { index: usize, message: String },
    /// `what`: `events`, or the dialect's word for the events that carry data (`chunks`).
    #[error("failed to assemble the stream: it has no {what}")]
    Empty { what: &'static str },
    #[error("failed to assemble the stream: no chunk carries `{field}`")]
    MissingField { field: &'static str },
    #[error("failed to assemble the stream: it has no `{event}` event")]
    MissingEvent { event: &'static str },
    #[error(
        "failed to assemble the stream: it ended after {events} events without \
         `{terminal}` (last event: `{last}`)"
    )]
    Incomplete {
        events: usize,
        last: String,
        terminal: &'static str,
    },
    #[error("failed to assemble the stream: the input of content block {block} is not JSON")]
    ToolInput {
        block: u64,
        #[source]
        source: serde_json::Error,
    },
}

/// Azure OpenAI's deployment, from `/openai/deployments/{deployment}/…`: the model a
/// request is for, which the body need not name.
pub(crate) fn azure_deployment(path: &str) -> Option<String> {
    let path = path.split('?').next().unwrap_or(path);
    let rest = path.strip_prefix("/openai/deployments/")?;
    let (deployment, _) = rest.split_once('/')?;
    (!deployment.is_empty()).then(|| format!("deployment {deployment}"))
}

/// The usage of an API that counts cached prompt tokens apart from the rest (Anthropic,
/// Bedrock): `fields` names its `[input, cache read, cache write, output]` counts, and
/// the prompt is their first three summed. No `usage` object: [`Usage::UNKNOWN`].
pub(crate) fn usage_apart(usage: &Value, fields: [&str; 4]) -> Usage {
    if !usage.is_object() {
        return Usage::UNKNOWN;
    }
    let count = |field: &str| usage[field].as_u64().unwrap_or(0);
    let [input, read, write, output] = fields.map(count);
    Usage {
        prompt: input + read + write,
        completion: output,
        cache_read: read,
        cache_creation: write,
        calls_without_usage: 0,
    }
}

/// The elements of an array field, or none.
pub(crate) fn array<'a>(value: &'a Value, field: &str) -> &'a [Value] {
    value[field]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Every top-level request field but `not_params` (the conversation and transport): the
/// sampling parameters and options a model call was made with.
pub(crate) fn params(request: &Value, not_params: &[&str]) -> BTreeMap<String, Value> {
    request
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| !not_params.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// Message content as text: a string, or the `text` of its parts joined by newlines.
pub(crate) fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The tool-result rewrite loop every dialect runs: for each result (its call id and the
/// value to replace), find the call it answers in `calls` (the request's own history) or
/// through `lookup`, count the call's occurrence among calls to that tool, and when
/// `mock` answers, hand the mock's text to `replace`. Returns how many were replaced.
pub(crate) fn rewrite_results<'a>(
    results: impl Iterator<Item = (String, &'a mut Value)>,
    calls: &BTreeMap<String, ToolCall>,
    lookup: &dyn Fn(&str) -> Option<ToolCall>,
    mock: &mut dyn FnMut(&ToolCall, usize) -> Option<Value>,
    replace: impl Fn(&mut Value, String),
) -> usize {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut replaced = 0;
    for (id, result) in results {
        let Some(call) = calls.get(&id).cloned().or_else(|| lookup(&id)) else {
            continue;
        };
        let nth = seen.entry(call.name.clone()).or_default();
        if let Some(v) = mock(&call, *nth) {
            replace(result, result_text(&v));
            replaced += 1;
        }
        *nth += 1;
    }
    replaced
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

/// The index of the `nth` (0-based) element of `items` that `is_call` accepts: where a
/// dialect's `nth` tool call sits among its output items, blocks or parts.
pub(crate) fn nth_call(
    items: &[Value],
    nth: usize,
    is_call: impl Fn(&Value) -> bool,
) -> Option<usize> {
    (items.iter().enumerate())
        .filter(|(_, item)| is_call(item))
        .nth(nth)
        .map(|(at, _)| at)
}

/// Arguments text cut short so that it is no longer JSON: the first half of `text`
/// (trimmed), at least one character. A proper prefix of an object or array never parses;
/// a prefix that happens to (a bare number) gets an unclosed brace.
pub(crate) fn broken_json(text: &str) -> String {
    let text = text.trim();
    let mut end = (text.len() / 2).max(1).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    let cut = &text[..end];
    if cut.is_empty() || serde_json::from_str::<Value>(cut).is_ok() {
        format!("{cut}{{")
    } else {
        cut.to_owned()
    }
}

/// An object cut short the way a parser of a partial stream reads it: the first half of
/// its properties (rounded down). Anything else comes back as it is.
pub(crate) fn cut_object(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let keep = map.len() / 2;
            Value::Object(
                map.iter()
                    .take(keep)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// The longest delta [`delta_pieces`] makes, in characters: a few tokens' worth.
pub(super) const DELTA_CHARS: usize = 12;

/// A system prompt sent as a message.
pub(crate) fn is_system(role: &str) -> bool {
    matches!(role, "system" | "developer")
}

/// A tool result, named by the call it answers when `names` knows it.
pub(crate) fn result_message(
    call_id: &Value,
    content: &Value,
    names: &HashMap<String, String>,
) -> Message {
    let call_id = call_id.as_str().unwrap_or_default().to_owned();
    Message::ToolResult {
        name: names.get(&call_id).cloned(),
        call_id,
        content: content.clone(),
    }
}

/// Tool-call arguments sent as a JSON string or as an object.
pub(crate) fn arguments(raw: &Value) -> Value {
    match raw {
        Value::String(s) => parse_arguments(s),
        other => other.clone(),
    }
}

/// A `content` that is a string or a list of parts: text parts become text, others are
/// named by their type.
pub(crate) fn parts(role: &str, content: &Value, out: &mut Vec<Message>) {
    match content {
        Value::String(s) => text(role, s, out),
        Value::Array(parts) => {
            for p in parts {
                match p["text"].as_str() {
                    Some(t) => text(role, t, out),
                    None => out.push(Message::Other {
                        role: role.to_owned(),
                        item: p["type"].as_str().unwrap_or("?").to_owned(),
                    }),
                }
            }
        }
        _ => {}
    }
}

/// A non-empty text as a message of `role`.
pub(crate) fn text(role: &str, t: &str, out: &mut Vec<Message>) {
    if !t.is_empty() {
        out.push(Message::Text {
            role: role.to_owned(),
            text: t.to_owned(),
        });
    }
}

/// A spoken model's reply: its `text` (or transcript), else its audio by size; `None` for
/// neither.
pub(crate) fn spoken_reply(text: String, audio_bytes: u64) -> Option<String> {
    match (text.is_empty(), audio_bytes) {
        (false, _) => Some(text),
        (true, 0) => None,
        (true, n) => Some(format!("audio, {n} bytes")),
    }
}

/// How many bytes the base64 `text` decodes to (padding and line breaks not counted).
pub(crate) fn base64_len(text: &str) -> usize {
    let digits = text
        .bytes()
        .filter(|b| !matches!(b, b'=' | b'\n' | b'\r'))
        .count();
    digits * 3 / 4
}

/// The value of `name` in `path`'s query, percent-decoded.
pub(crate) fn query_value(path: &str, name: &str) -> Option<String> {
    let (_, query) = path.split_once('?')?;
    let value = query
        .split('&')
        .find_map(|p| p.strip_prefix(name)?.strip_prefix('='))?;
    Some(
        percent_encoding::percent_decode_str(value)
            .decode_utf8_lossy()
            .into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_lengths_and_query_values() {
        assert_eq!(
            (base64_len("AAECAw=="), base64_len("AAAA"), base64_len("")),
            (4, 3, 0)
        );
        assert_eq!(
            query_value("/v1/realtime?x=1&model=gpt%2Drt", "model").as_deref(),
            Some("gpt-rt")
        );
        assert_eq!(query_value("/v1/realtime", "model"), None);
    }
}
