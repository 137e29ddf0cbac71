//! The requests of one run as samples to compare: each body as sent and normalized, and
//! where it carries tool results (found through the dialect's own mock rewriting).

use std::collections::HashMap;

use serde_json::Value;

use crate::cassette::{Body, Interaction};
use crate::dialect::Route;
use crate::matching::normalize::{normalize, Rules};
use crate::neutral::ToolCall;

/// One request of a run.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    pub(crate) route: String,
    /// The test runner's turn (0-based), when known.
    pub(crate) turn: Option<usize>,
    /// The body as sent (redacted), where tool result values are read for mocks.
    pub(crate) raw: Value,
    /// The normalized body: what is compared.
    pub(crate) body: Value,
    /// Where the body carries tool results, and which call each answers.
    pub(crate) tool_results: Vec<ToolResultAt>,
}

/// A tool result inside a request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolResultAt {
    /// JSON pointer segments of the result's content.
    pub(crate) pointer: Vec<String>,
    pub(crate) tool: String,
    /// The 0-based occurrence of the call among calls to that tool, as mocks count them.
    pub(crate) nth: usize,
}

impl Sample {
    /// A sample of a request; `normalized` is `raw` normalized under the case's rules, and
    /// `lookup` finds calls the request answers but does not carry (Responses chains).
    pub(crate) fn new(
        route: &str,
        turn: Option<usize>,
        raw: Value,
        normalized: Value,
        lookup: &dyn Fn(&str) -> Option<ToolCall>,
    ) -> Sample {
        let tool_results = tool_results_at(Route::from_name(route), &raw, lookup);
        Sample {
            route: route.to_owned(),
            turn,
            raw,
            body: normalized,
            tool_results,
        }
    }
}

/// Where the tool results of a request are, in any dialect: each result is swapped for a
/// unique marker by the dialect's own mock rewriting, then the markers are found.
pub(crate) fn tool_results_at(
    route: Route,
    request: &Value,
    lookup: &dyn Fn(&str) -> Option<ToolCall>,
) -> Vec<ToolResultAt> {
    const MARK: &str = "\u{1}agentproxy-tool-result\u{1}";
    let mut marked = request.clone();
    let mut found: Vec<(String, usize)> = vec![];
    route.rewrite_tool_results(&mut marked, lookup, &mut |call, nth| {
        found.push((call.name.clone(), nth));
        Some(Value::String(format!("{MARK}{}", found.len() - 1)))
    });
    let mut out = vec![];
    walk_strings(&marked, &mut vec![], &mut |path, s| {
        if let Some(i) = s.strip_prefix(MARK).and_then(|i| i.parse::<usize>().ok()) {
            if let Some((tool, nth)) = found.get(i) {
                out.push(ToolResultAt {
                    pointer: path.to_vec(),
                    tool: tool.clone(),
                    nth: *nth,
                });
            }
        }
    });
    out
}

fn walk_strings(v: &Value, path: &mut Vec<String>, f: &mut dyn FnMut(&[String], &str)) {
    match v {
        Value::String(s) => f(path, s),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                walk_strings(item, path, f);
                path.pop();
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                path.push(k.clone());
                walk_strings(item, path, f);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The requests of a run, normalized under the case's rules, with their tool results
/// located (calls answered across requests are looked up in the run's responses).
pub(crate) fn samples(exchanges: &[Interaction], rules: &Rules) -> Vec<Sample> {
    let mut calls: HashMap<String, ToolCall> = HashMap::new();
    for it in exchanges {
        if let Some(call) = it.model_call() {
            calls.extend(call.tool_calls.into_iter().map(|c| (c.id.clone(), c)));
        }
    }
    let lookup = |id: &str| calls.get(id).cloned();
    exchanges
        .iter()
        .map(|it| {
            let raw = (it.request.body.as_ref())
                .and_then(Body::as_json)
                .cloned()
                .unwrap_or(Value::Null);
            let normalized = normalize(&raw, rules);
            Sample::new(&it.route, it.turn, raw, normalized, &lookup)
        })
        .collect()
}
