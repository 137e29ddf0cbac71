//! The delegations to remote agents over A2A in a case's exchanges, as calls of tools
//! named after the agents, placed among the model's tool calls where they happened: what
//! `calls:` and `never:` judge and the reports list.

use std::collections::HashMap;

use serde_json::Value;

use crate::cassette::{Body, Interaction};
use crate::neutral::ToolCall;

/// A delegation to a remote agent, as a call of a tool named after the agent: its turn,
/// its place among the turn's calls, the call and the agent's answer.
pub struct Delegated {
    pub turn: usize,
    pub at: usize,
    /// The call, its id `a2a#N` (N counting the case's delegations from 1).
    pub call: ToolCall,
    pub result: Value,
    /// A spec's `agents:` mock answered it.
    pub mocked: bool,
}

/// The delegations of a case's exchanges, each placed after the tool calls of the model
/// calls answered before it in its turn.
pub fn delegations(exchanges: &[Interaction]) -> Vec<Delegated> {
    let mut out = Vec::new();
    if !(exchanges.iter()).any(|it| it.route == crate::dialect::a2a::ROUTE) {
        return out;
    }
    let mut calls_in: HashMap<usize, usize> = HashMap::new();
    for it in exchanges {
        let turn = it.turn.unwrap_or(0);
        let seen = calls_in.entry(turn).or_default();
        if let Some(d) = it.delegation() {
            let (name, arguments) = d.as_call();
            out.push(Delegated {
                turn,
                at: *seen,
                call: ToolCall {
                    id: format!("a2a#{}", out.len() + 1),
                    name,
                    arguments,
                },
                result: d.result(),
                mocked: !it.mocked.is_empty(),
            });
            *seen += 1;
        } else if it.response.body.as_ref().and_then(Body::as_json).is_some() {
            *seen += it.model_call().map_or(0, |c| c.tool_calls.len());
        }
    }
    out
}
