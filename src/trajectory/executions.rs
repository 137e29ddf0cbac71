//! Which tool call the model asked for was executed at the MCP boundary: each `tools/call`
//! an MCP server answered is paired with the earliest model call of that tool not yet
//! paired before it. A call to a tool an MCP server listed that nothing executed was not
//! executed there (mocked, or the program never ran it); a call to any other tool is a
//! function of the program, which the boundary does not see.

use std::collections::{BTreeSet, HashMap, VecDeque};

use crate::cassette::Interaction;
use crate::neutral::{Execution, ToolCall};

/// One execution, where it happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    /// The position of its interaction among those paired.
    pub at: usize,
    pub turn: usize,
    pub execution: Execution,
}

/// The executions of a run and their pairing with the model's tool calls.
#[derive(Debug, Default)]
pub struct Executions {
    pub all: Vec<Executed>,
    /// The execution (index into `all`) of each tool call, by call id.
    by_call: HashMap<String, usize>,
    /// Tools the MCP servers listed.
    mcp_tools: BTreeSet<String>,
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
        let mut waiting: VecDeque<ToolCall> = VecDeque::new();
        for (at, it) in interactions.iter().enumerate() {
            out.mcp_tools.extend(it.listed_tools());
            if let Some(execution) = it.execution() {
                let call = waiting.iter().position(|c| c.name == execution.tool);
                if let Some(call) = call.and_then(|i| waiting.remove(i)) {
                    out.by_call.insert(call.id, out.all.len());
                }
                out.all.push(Executed {
                    at,
                    turn: it.turn.unwrap_or(0),
                    execution,
                });
            } else if let Some(call) = answered_model_call(it) {
                waiting.extend(call);
            }
        }
        out
    }

    /// What happened to `call` at the MCP boundary.
    pub fn fate(&self, call: &ToolCall) -> Fate<'_> {
        match self.by_call.get(&call.id) {
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
    Some(it.model_call()?.tool_calls)
}
