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

/// A tool call an MCP server executed (a `tools/call` it answered).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Execution {
    /// The server's name: `agentproxy mcp --name NAME` for stdio, `--mcp NAME=URL` (or a
    /// spec's `mcp:`) for streamable HTTP.
    pub server: String,
    pub tool: String,
    /// The arguments the server was called with.
    pub arguments: Value,
    /// The tool ran and failed: the server's result is marked `isError`.
    pub is_error: bool,
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
    /// The whole definition as the request wrote it (description included), for the
    /// trajectory diff: what changed in a tool is shown in the request's own words.
    pub definition: Value,
}

/// Token usage of one model call as its response reported it, or summed over calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Usage {
    /// Every prompt token, cached ones included.
    pub prompt: u64,
    pub completion: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read: u64,
    /// Prompt tokens written to the provider's cache (Anthropic reports them; OpenAI and
    /// Gemini do not).
    pub cache_creation: u64,
    /// Calls summed in whose response carried no usage (a stream without a usage chunk):
    /// their tokens are unknown, not zero.
    pub calls_without_usage: u32,
}

impl Usage {
    /// The usage of a call whose response reported none.
    pub const UNKNOWN: Usage = Usage {
        prompt: 0,
        completion: 0,
        cache_read: 0,
        cache_creation: 0,
        calls_without_usage: 1,
    };
}

impl std::fmt::Display for Usage {
    /// `412 prompt / 38 completion tokens`, with `(256 cache read, 32 cache write)` after
    /// `prompt` when the cache was used, `; 1 call without usage` when some calls did not
    /// report theirs, and `usage unknown` when none did.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unknown = self.calls_without_usage;
        if unknown > 0 && self.prompt == 0 && self.completion == 0 {
            return f.write_str("usage unknown");
        }
        write!(f, "{} prompt", self.prompt)?;
        let cache: Vec<String> = [(self.cache_read, "read"), (self.cache_creation, "write")]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} cache {what}"))
            .collect();
        if !cache.is_empty() {
            write!(f, " ({})", cache.join(", "))?;
        }
        write!(f, " / {} completion tokens", self.completion)?;
        match unknown {
            0 => Ok(()),
            1 => f.write_str("; 1 call without usage"),
            n => write!(f, "; {n} calls without usage"),
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        self.prompt += o.prompt;
        self.completion += o.completion;
        self.cache_read += o.cache_read;
        self.cache_creation += o.cache_creation;
        self.calls_without_usage += o.calls_without_usage;
    }
}

/// One model call: the request's envelope and what the response asked for or said.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelCall {
    pub route: String,
    pub model: String,
    /// System prompt / instructions text, all parts joined with blank lines.
    pub system: Option<String>,
    /// Each definition shared: a recording read whole holds one copy of a tool however
    /// many calls offer it.
    pub tools: std::sync::Arc<[std::sync::Arc<ToolDef>]>,
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

#[cfg(test)]
mod tests {
    use super::Usage;

    #[test]
    fn usage_reads_as_tokens_cache_and_unknown_calls() {
        let known = Usage {
            prompt: 412,
            completion: 38,
            ..Usage::default()
        };
        assert_eq!(known.to_string(), "412 prompt / 38 completion tokens");
        let cached = Usage {
            cache_read: 256,
            cache_creation: 32,
            ..known
        };
        assert_eq!(
            cached.to_string(),
            "412 prompt (256 cache read, 32 cache write) / 38 completion tokens"
        );
        assert_eq!(Usage::UNKNOWN.to_string(), "usage unknown");
        let mut partial = known;
        partial += Usage::UNKNOWN;
        partial += Usage::UNKNOWN;
        assert_eq!(
            partial.to_string(),
            "412 prompt / 38 completion tokens; 2 calls without usage"
        );
        assert_eq!(partial.calls_without_usage, 2);
    }
}
