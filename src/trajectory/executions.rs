//! Which tool call the model asked for was executed at the MCP boundary: each `tools/call`
//! an MCP server answered is paired with a model call of that tool not yet paired before
//! it, preferring one of the same turn, then one with the same arguments, then the
//! earliest. A call to a tool an MCP server listed that nothing executed was not executed
//! there (mocked, refused, or the program never ran it); a call to any other tool is a
//! function of the program, which the boundary does not see.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::cassette::Interaction;
use crate::neutral::{Execution, ToolCall};

/// One execution, in the turn it happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    pub turn: usize,
    pub execution: Execution,
}

/// The executions of a run and their pairing with the model's tool calls.
#[derive(Debug, Default)]
pub struct Executions {
    pub all: Vec<Executed>,
    /// The execution (index into `all`) of each tool call, by [`CallKey`].
    by_call: HashMap<CallKey, usize>,
    /// Tools the MCP servers listed.
    mcp_tools: BTreeSet<String>,
}

/// What tells tool calls apart: the id, and the name and arguments, since some dialects
/// (Gemini) may give calls no id.
#[derive(Debug, PartialEq, Eq, Hash)]
struct CallKey(String, String, String);

impl CallKey {
    fn of(call: &ToolCall) -> CallKey {
        CallKey(
            call.id.clone(),
            call.name.clone(),
            call.arguments.to_string(),
        )
    }
}

/// What the MCP boundary saw of one tool call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fate<'a> {
    Executed(&'a Execution),
    /// An MCP tool that no server executed for this call.
    NotExecuted,
    /// Not an MCP tool.
    Function,
}

impl Executions {
    /// Pair the executions in `interactions` (in arrival order) with the tool calls of
    /// the model calls before them.
    pub fn pair(interactions: &[Interaction]) -> Executions {
        let mut out = Executions::default();
        // Without MCP traffic there is nothing to pair (and no body to read for it).
        if !(interactions.iter()).any(|it| it.route == crate::dialect::mcp::ROUTE) {
            return out;
        }
        // The model's calls not yet paired, with their turns.
        let mut waiting: Vec<(usize, ToolCall)> = Vec::new();
        for it in interactions {
            out.mcp_tools.extend(it.listed_tools());
            let turn = it.turn.unwrap_or(0);
            if let Some(execution) = it.execution() {
                if let Some(i) = best_match(&waiting, turn, &execution.tool, &execution.arguments) {
                    let (_, call) = waiting.remove(i);
                    out.by_call.insert(CallKey::of(&call), out.all.len());
                }
                out.all.push(Executed { turn, execution });
            } else if let Some(calls) = answered_model_call(it) {
                waiting.extend(calls.into_iter().map(|c| (turn, c)));
            }
        }
        out
    }

    /// What happened to `call` at the MCP boundary.
    pub fn fate(&self, call: &ToolCall) -> Fate<'_> {
        match self.by_call.get(&CallKey::of(call)) {
            Some(i) => Fate::Executed(&self.all[*i].execution),
            None if self.mcp_tools.contains(&call.name) => Fate::NotExecuted,
            None => Fate::Function,
        }
    }

    /// What the MCP boundary saw of `call`, in words: `executed by mail`, `executed by
    /// mail with {…}` (other arguments than the model gave), `not executed`; `None` for a
    /// function of the program.
    pub fn describe(&self, call: &ToolCall) -> Option<String> {
        match self.fate(call) {
            Fate::Executed(e) if e.arguments == call.arguments => {
                Some(format!("executed by {}", e.server))
            }
            Fate::Executed(e) => Some(format!("executed by {} with {}", e.server, e.arguments)),
            Fate::NotExecuted => Some("not executed".into()),
            Fate::Function => None,
        }
    }

    /// The executions in `turn`.
    pub fn in_turn(&self, turn: usize) -> impl Iterator<Item = &Execution> {
        self.all
            .iter()
            .filter(move |e| e.turn == turn)
            .map(|e| &e.execution)
    }
}

/// The tool calls of a model call the program could read (a 2xx with a body).
fn answered_model_call(it: &Interaction) -> Option<Vec<ToolCall>> {
    if !(200..300).contains(&it.response.status) {
        return None;
    }
    // Read without keeping the request's tree: a pass over a whole recording holds one.
    let request = it.request.body.as_ref()?.json_transient()?;
    Some(it.model_call_with(&request)?.tool_calls)
}

/// The waiting call an execution of `tool` with `arguments` in `turn` answers: one of the
/// same turn before one of another, one with the same arguments before one with other
/// arguments (the program may change them), the earliest first.
fn best_match(
    waiting: &[(usize, ToolCall)],
    turn: usize,
    tool: &str,
    arguments: &Value,
) -> Option<usize> {
    waiting
        .iter()
        .enumerate()
        .filter(|(_, (_, c))| c.name == tool)
        .min_by_key(|(i, (t, c))| (*t != turn, c.arguments != *arguments, *i))
        .map(|(i, _)| i)
}
