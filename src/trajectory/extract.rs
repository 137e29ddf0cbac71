//! From a recording's interactions to the steps of its trajectory: each model call in
//! neutral form, with its turn and the conversation items it added. Shared by `show`
//! and `diff`, so both read a recording the same way.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::history;
use crate::cassette::{Body, Interaction};
use crate::dialect::Route;
use crate::matching::normalize::{self, Rules};
use crate::neutral::{Message, ModelCall, ToolCall, ToolDef};

/// How many earlier requests of the same route are searched for the history a request
/// repeats. Concurrent conversations interleave; a handful covers them.
const LOOKBACK: usize = 8;

/// How many distinct definitions of one tool name are kept for later calls to share:
/// agents that alternate, each with its own wording of a tool, are a handful; a tool
/// whose description changes on every call (a date in it) is not compared with all its
/// past.
const VARIANTS: usize = 8;

/// One interaction of a recording, read. It owns what it holds, so a diff can keep a
/// recording's steps and let the cassette go.
#[derive(Debug)]
pub(crate) struct Step {
    /// The test-runner turn; 0 when the recording has none.
    pub turn: usize,
    /// The model call; `None` for plain HTTP or a body that is not JSON.
    pub call: Option<ModelCall>,
    /// The conversation items this request sent that earlier ones had not.
    pub new: Vec<Message>,
    /// The response succeeded (2xx) with a readable body.
    pub answered: bool,
    /// A delegation to a remote agent, as the call of a tool named after it (its id
    /// `a2a#N`, N counting the recording's delegations), with what the agent answered.
    pub delegation: Option<(ToolCall, Value)>,
}

impl Step {
    /// A model call whose response succeeded: part of what the agent did. Failed
    /// attempts (a 429 the SDK retried) are transport, not trajectory.
    pub fn model_call(&self) -> Option<&ModelCall> {
        self.call.as_ref().filter(|_| self.answered)
    }
}

/// The steps of a recording one at a time, each with its interaction, in recorded order, holding one request body as a tree at a time
/// (plus the last few of each route that the next request's history is compared with),
/// so reading a recording of any size costs about its own size in memory, not several
/// times it; `show` keeps no step once it is shown. `rules` (the recording's match
/// rules) are applied to request bodies first, so ignored fields and holes, which the
/// user declared volatile, read the same on both sides of a diff.
pub(crate) struct Steps<'a, 'r> {
    interactions: std::slice::Iter<'a, Interaction>,
    rules: Option<&'r Rules>,
    /// Tool names by call id, from the responses so far: a tool result names only its id.
    names: HashMap<String, String>,
    /// The last answered requests of each route, most recent last.
    earlier: HashMap<&'a str, VecDeque<Cow<'a, Value>>>,
    /// The last distinct definitions of each tool offered so far, by name: a call that
    /// offers one again shares it, so a recording's steps hold one copy of each tool
    /// however often it is offered.
    offered: HashMap<String, Vec<Arc<ToolDef>>>,
    /// Delegations so far.
    delegations: usize,
}

impl<'a, 'r> Steps<'a, 'r> {
    pub(crate) fn new(interactions: &'a [Interaction], rules: Option<&'r Rules>) -> Self {
        Steps {
            interactions: interactions.iter(),
            rules,
            names: HashMap::new(),
            earlier: HashMap::new(),
            offered: HashMap::new(),
            delegations: 0,
        }
    }
}

/// The copy of `tool` in `offered`, which keeps it if it is new among the last
/// [`VARIANTS`] definitions of its name.
fn share(offered: &mut HashMap<String, Vec<Arc<ToolDef>>>, tool: &Arc<ToolDef>) -> Arc<ToolDef> {
    let same = match offered.get_mut(&tool.name) {
        Some(same) => same,
        None => offered.entry(tool.name.clone()).or_default(),
    };
    match same.iter().rev().find(|t| **t == *tool) {
        Some(t) => t.clone(),
        None => {
            if same.len() == VARIANTS {
                same.remove(0);
            }
            same.push(tool.clone());
            tool.clone()
        }
    }
}

impl<'a> Iterator for Steps<'a, '_> {
    type Item = (&'a Interaction, Step);

    fn next(&mut self) -> Option<(&'a Interaction, Step)> {
        let it = self.interactions.next()?;
        let request = it.request.body.as_ref().and_then(Body::json_transient);
        let request: Option<Cow<'a, Value>> = request.map(|body| match self.rules {
            Some(r) if it.route != Route::Http.name() => Cow::Owned(normalize::normalize(&body, r)),
            _ => body,
        });
        let mut call = request.as_deref().and_then(|r| it.model_call_with(r));
        if let Some(c) = &mut call {
            c.tools = c
                .tools
                .iter()
                .map(|t| share(&mut self.offered, t))
                .collect();
            (self.names).extend(c.tool_calls.iter().map(|t| (t.id.clone(), t.name.clone())));
        }
        // Only answered requests count as history: a request the upstream refused (and
        // the SDK retried) did not reach the model.
        let answered = (200..300).contains(&it.response.status)
            && matches!(it.response.body, Some(Body::Json(_)));
        let route = Route::from_name(&it.route);
        let window = self.earlier.entry(it.route.as_str()).or_default();
        let new = match (&call, &request) {
            (Some(_), Some(req)) => {
                let items = route.conversation(req);
                let before: Vec<Cow<'_, [Value]>> =
                    window.iter().rev().map(|r| route.conversation(r)).collect();
                let before: Vec<&[Value]> = before.iter().map(|c| &**c).collect();
                let start = history::new_start(route, &items, &before);
                route.messages(&items[start..], &self.names)
            }
            _ => Vec::new(),
        };
        if answered {
            // A body that is not JSON carries no conversation, as for the requests after it.
            window.push_back(request.unwrap_or(Cow::Owned(Value::Null)));
            if window.len() > LOOKBACK {
                window.pop_front();
            }
        }
        let delegation = it.delegation().map(|d| {
            self.delegations += 1;
            let (name, arguments) = d.as_call();
            let id = format!("a2a#{}", self.delegations);
            (
                ToolCall {
                    id,
                    name,
                    arguments,
                },
                d.result(),
            )
        });
        let step = Step {
            turn: it.turn.unwrap_or(0),
            call,
            new,
            answered,
            delegation,
        };
        Some((it, step))
    }
}
