//! The conversation a request carries, dialect-neutral, and which part of it is new.
//!
//! Chat-style APIs resend the whole history with every call. To show (and compare) what a
//! call actually *added*, each request's items are compared with those of the requests
//! before it: the longest common prefix is history, the rest is new. The assistant items
//! right after that prefix echo the previous response and are skipped too: the previous
//! call already showed them as its reply and tool calls.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

/// One item a request sends the model, whatever the dialect.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Message {
    /// Text from a role: `user`, `assistant` (history), or `system`/`developer` when sent
    /// as a message.
    Text { role: String, text: String },
    /// A tool call the assistant made earlier, resent as history.
    ToolCall { name: String, arguments: Value },
    /// A tool result the program sends back (after any spec mock was applied: what the
    /// model was told).
    ToolResult {
        /// The provider's call id: volatile, shown only by `show --json`.
        call_id: String,
        /// The tool's name, when the conversation says which call this answers.
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        content: Value,
    },
    /// Anything else (images, files, reasoning items), by its type.
    Other { role: String, item: String },
}

/// The conversation items of a request: `messages` (chat, Anthropic) or `input`
/// (Responses; a bare string is one user message).
pub fn items<'a>(route: &str, request: &'a Value) -> Cow<'a, [Value]> {
    let field = if route == "openai.responses" {
        "input"
    } else {
        "messages"
    };
    match &request[field] {
        Value::Array(items) => Cow::Borrowed(items.as_slice()),
        Value::String(text) if route == "openai.responses" => {
            Cow::Owned(vec![serde_json::json!({"role": "user", "content": text})])
        }
        _ => Cow::Borrowed(&[]),
    }
}

/// Where the new part of `items` starts: after the longest prefix shared with one of the
/// `earlier` requests (most recent first), then past the assistant items that echo the
/// previous response.
pub fn new_start(route: &str, items: &[Value], earlier: &[&[Value]]) -> usize {
    let mut start = 0;
    for prev in earlier {
        let common = items
            .iter()
            .zip(prev.iter())
            .take_while(|(a, b)| a == b)
            .count();
        start = start.max(common);
        if common == prev.len() {
            // The usual case: the previous request is all history.
            break;
        }
    }
    if start > 0 {
        while start < items.len() && is_model_output(route, &items[start]) {
            start += 1;
        }
    }
    start
}

/// Is this item something the model produced (resent as history)?
fn is_model_output(route: &str, item: &Value) -> bool {
    match route {
        "openai.responses" => match item["type"].as_str() {
            Some("function_call" | "reasoning" | "custom_tool_call") => true,
            Some("message") | None => item["role"] == "assistant",
            _ => false,
        },
        _ => item["role"] == "assistant",
    }
}

/// The neutral messages of conversation items. `names` maps tool call ids to tool names
/// (from every call of the recording), to name the results. System and developer
/// messages are left out: the system prompt is shown from the model call itself.
pub fn neutral(route: &str, items: &[Value], names: &HashMap<String, String>) -> Vec<Message> {
    let mut out = Vec::new();
    for item in items {
        match route {
            "openai.responses" => responses_item(item, names, &mut out),
            "anthropic.messages" => anthropic_message(item, names, &mut out),
            _ => chat_message(item, names, &mut out),
        }
    }
    out
}

fn is_system(role: &str) -> bool {
    matches!(role, "system" | "developer")
}

fn result(call_id: &Value, content: &Value, names: &HashMap<String, String>) -> Message {
    let call_id = call_id.as_str().unwrap_or_default().to_owned();
    Message::ToolResult {
        name: names.get(&call_id).cloned(),
        call_id,
        content: content.clone(),
    }
}

fn arguments(raw: &Value) -> Value {
    match raw {
        Value::String(s) => crate::neutral::parse_arguments(s),
        other => other.clone(),
    }
}

fn chat_message(m: &Value, names: &HashMap<String, String>, out: &mut Vec<Message>) {
    let role = m["role"].as_str().unwrap_or("?");
    if is_system(role) {
        return;
    }
    if role == "tool" {
        out.push(result(&m["tool_call_id"], &m["content"], names));
        return;
    }
    parts(role, &m["content"], out);
    for c in m["tool_calls"].as_array().into_iter().flatten() {
        out.push(Message::ToolCall {
            name: c["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            arguments: arguments(&c["function"]["arguments"]),
        });
    }
}

fn anthropic_message(m: &Value, names: &HashMap<String, String>, out: &mut Vec<Message>) {
    let role = m["role"].as_str().unwrap_or("?");
    let Value::Array(blocks) = &m["content"] else {
        parts(role, &m["content"], out);
        return;
    };
    for b in blocks {
        match b["type"].as_str().unwrap_or_default() {
            "text" => text(role, b["text"].as_str().unwrap_or_default(), out),
            "tool_use" => out.push(Message::ToolCall {
                name: b["name"].as_str().unwrap_or_default().to_owned(),
                arguments: b["input"].clone(),
            }),
            "tool_result" => out.push(result(&b["tool_use_id"], &b["content"], names)),
            other => out.push(Message::Other {
                role: role.to_owned(),
                item: other.to_owned(),
            }),
        }
    }
}

fn responses_item(i: &Value, names: &HashMap<String, String>, out: &mut Vec<Message>) {
    match i["type"].as_str() {
        Some("message") | None if i.get("role").is_some() => {
            let role = i["role"].as_str().unwrap_or("?");
            if !is_system(role) {
                parts(role, &i["content"], out);
            }
        }
        Some("function_call") => out.push(Message::ToolCall {
            name: i["name"].as_str().unwrap_or_default().to_owned(),
            arguments: arguments(&i["arguments"]),
        }),
        Some("function_call_output") => out.push(result(&i["call_id"], &i["output"], names)),
        other => out.push(Message::Other {
            role: i["role"].as_str().unwrap_or("item").to_owned(),
            item: other.unwrap_or("?").to_owned(),
        }),
    }
}

/// A `content` that is a string or a list of parts: text parts become text, others are
/// named by their type.
fn parts(role: &str, content: &Value, out: &mut Vec<Message>) {
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

fn text(role: &str, t: &str, out: &mut Vec<Message>) {
    if !t.is_empty() {
        out.push(Message::Text {
            role: role.to_owned(),
            text: t.to_owned(),
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn new_part_skips_history_and_the_echoed_reply() {
        let first = vec![
            json!({"role": "system", "content": "s"}),
            json!({"role": "user", "content": "hi"}),
        ];
        let mut second = first.clone();
        second.push(json!({"role": "assistant", "content": null, "tool_calls": []}));
        second.push(json!({"role": "tool", "tool_call_id": "call_1", "content": "18"}));
        assert_eq!(new_start("openai.chat", &first, &[]), 0);
        assert_eq!(new_start("openai.chat", &second, &[&first]), 3);
        // A different conversation (a title call) shares nothing: all of it is new.
        let other = vec![json!({"role": "user", "content": "title?"})];
        assert_eq!(new_start("openai.chat", &other, &[&second, &first]), 0);
        // The best of the earlier requests wins.
        assert_eq!(new_start("openai.chat", &second, &[&other, &first]), 3);
        let names = HashMap::from([("call_1".to_owned(), "get_weather".to_owned())]);
        assert_eq!(
            neutral("openai.chat", &second[3..], &names),
            vec![Message::ToolResult {
                call_id: "call_1".into(),
                name: Some("get_weather".into()),
                content: json!("18")
            }]
        );
    }

    #[test]
    fn every_dialect_becomes_neutral_messages() {
        let names = HashMap::new();
        let anthropic = vec![json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18"},
            {"type": "text", "text": "thanks"},
            {"type": "image", "source": {}}]})];
        assert_eq!(
            neutral("anthropic.messages", &anthropic, &names),
            vec![
                Message::ToolResult {
                    call_id: "toolu_1".into(),
                    name: None,
                    content: json!("18")
                },
                Message::Text {
                    role: "user".into(),
                    text: "thanks".into()
                },
                Message::Other {
                    role: "user".into(),
                    item: "image".into()
                },
            ]
        );
        let request = json!({"input": [
            {"type": "function_call", "name": "f", "arguments": "{\"a\":1}", "call_id": "c"},
            {"type": "function_call_output", "call_id": "c", "output": "ok"},
            {"role": "developer", "content": "rules"},
            {"role": "user", "content": [{"type": "input_text", "text": "go"}]}]});
        let responses = items("openai.responses", &request);
        assert_eq!(
            new_start("openai.responses", &responses, &[&responses[..1]]),
            1
        );
        assert_eq!(
            neutral("openai.responses", &responses, &names),
            vec![
                Message::ToolCall {
                    name: "f".into(),
                    arguments: json!({"a": 1})
                },
                Message::ToolResult {
                    call_id: "c".into(),
                    name: None,
                    content: json!("ok")
                },
                Message::Text {
                    role: "user".into(),
                    text: "go".into()
                },
            ]
        );
        assert_eq!(items("openai.responses", &json!({"input": "hi"})).len(), 1);
    }
}
