//! The MCP boundary's part of a session's state: what each server listed (its tools'
//! output schemas, how it marks its results), the calls per tool (a mock's `results:`
//! are used in order), and what the mocks did ([`McpOutcome`]).

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

#[derive(Debug, Default)]
pub(super) struct Boundary {
    /// The `outputSchema` (if any) of each tool a server listed, by (server, tool).
    tools: HashMap<(String, String), Option<Value>>,
    /// The `resultType` each server's results carry (protocol 2026-07-28 on).
    result_types: HashMap<String, Value>,
    /// `tools/call` requests per tool, for the mocks' occurrence count.
    calls: HashMap<String, usize>,
    told: McpOutcome,
}

/// What the mocks did at the MCP boundary.
#[derive(Debug, Default)]
pub struct McpOutcome {
    /// Tools a mock answered (their calls never reached a server).
    pub mocked: BTreeSet<String>,
    /// Mocks that could not answer (a result the tool's `outputSchema` rejects): each
    /// fails a test case.
    pub problems: Vec<String>,
}

/// What a mock needs to answer one call: its number among the tool's calls, the tool's
/// output schema and the server's result type, if known.
pub(super) struct Call {
    pub nth: usize,
    pub schema: Option<Value>,
    pub result_type: Option<Value>,
}

impl Boundary {
    /// `server` listed `tools` (each with its output schema), marking its results with
    /// `result_type`.
    pub(super) fn learn(
        &mut self,
        server: &str,
        tools: impl IntoIterator<Item = (String, Option<Value>)>,
        result_type: Option<&Value>,
    ) {
        let tools = tools.into_iter();
        (self.tools).extend(tools.map(|(tool, schema)| ((server.to_owned(), tool), schema)));
        if let Some(t) = result_type {
            self.result_types.insert(server.to_owned(), t.clone());
        }
    }

    /// Did some server list `tool`?
    pub(super) fn lists(&self, tool: &str) -> bool {
        self.tools.keys().any(|(_, t)| t == tool)
    }

    /// A call of `tool` on `server`, counted.
    pub(super) fn call(&mut self, server: &str, tool: &str) -> Call {
        let count = self.calls.entry(tool.to_owned()).or_default();
        let nth = *count;
        *count += 1;
        let schema = self.tools.get(&(server.to_owned(), tool.to_owned()));
        Call {
            nth,
            schema: schema.cloned().flatten(),
            result_type: self.result_types.get(server).cloned(),
        }
    }

    /// A mock answered a call of `tool`.
    pub(super) fn mocked(&mut self, tool: &str) {
        self.told.mocked.insert(tool.to_owned());
    }

    /// A mock could not answer.
    pub(super) fn problem(&mut self, problem: String) {
        self.told.problems.push(problem);
    }

    /// What the mocks did, taken (the session's end reads it once).
    pub(super) fn outcome(&mut self) -> McpOutcome {
        std::mem::take(&mut self.told)
    }
}
