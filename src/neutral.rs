//! The neutral model of one model call: what the program told the model and what the
//! model answered, whatever the wire dialect. Every dialect extracts into these types and
//! everything above the dialects (matching, trajectory, assertions, reports) reads them.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// The provider's call id (`call_…`, `toolu_…`): volatile, never asserted on.
    pub id: String,
    pub name: String,
    /// Parsed arguments; arguments that are not JSON stay a string.
    pub arguments: Value,
}

/// A tool result the program sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolResult {
    pub call_id: String,
    /// The tool's name, when the request or the session says which call this answers.
    pub name: Option<String>,
    /// The result as sent: usually a string.
    pub content: Value,
}

/// A tool the model was offered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    pub name: String,
    /// The JSON schema of its arguments.
    pub parameters: Value,
}

/// Token usage of one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        self.prompt += o.prompt;
        self.completion += o.completion;
        self.cached += o.cached;
    }
}

/// One model call: the request's envelope and what the response asked for or said.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelCall {
    pub route: String,
    pub model: String,
    /// System prompt / instructions text, all parts joined with blank lines.
    pub system: Option<String>,
    pub tools: Vec<ToolDef>,
    /// Messages (or input items) in the request, history included.
    pub message_count: usize,
    /// The tool results this request carries that the model has not seen before (those
    /// after the last assistant turn of the request).
    pub tool_results: Vec<ToolResult>,
    /// The tool calls the response asks for, in order.
    pub tool_calls: Vec<ToolCall>,
    /// The assistant text of the response, if any.
    pub reply: Option<String>,
    pub usage: Usage,
    /// Every other top-level request field (temperature, max_tokens, tool_choice, …).
    pub params: BTreeMap<String, Value>,
}

/// Render a mocked tool result as the string a tool-result message carries.
pub fn result_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Parse tool-call arguments: JSON when they are, the raw string otherwise.
pub fn parse_arguments(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

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
