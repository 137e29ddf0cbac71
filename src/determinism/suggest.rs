//! Suggest fixes: classify each difference (inside a tool result, a volatile span in a
//! string, anything else) and merge them into as few spec entries as cover them all: one
//! mock per tool, one hole per span kind, one ignore pointer per pointer shape.

use std::collections::BTreeMap;

use serde_json::Value;

use super::findings::{pointer_string, Difference, Fix};
use super::sample::Sample;
use super::volatile::{volatile_spans, VOLATILE_SPANS};

/// What kind of fix a difference needs.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Kind {
    /// Inside the result of this tool.
    ToolResult(String),
    /// Strings equal once these volatile spans are holes (indices into [`VOLATILE_SPANS`]).
    Holes(Vec<usize>),
    Ignore,
}

pub(super) fn classify(
    pointer: &[String],
    x: Option<&Value>,
    y: Option<&Value>,
    a: &Sample,
    b: &Sample,
) -> Kind {
    let in_result = a
        .tool_results
        .iter()
        .chain(&b.tool_results)
        .find(|r| pointer.starts_with(&r.pointer));
    if let Some(r) = in_result {
        return Kind::ToolResult(r.tool.clone());
    }
    match (x, y) {
        (Some(Value::String(x)), Some(Value::String(y))) => match volatile_spans(x, y) {
            Some(kinds) => Kind::Holes(kinds),
            None => Kind::Ignore,
        },
        _ => Kind::Ignore,
    }
}

/// Turn each difference's kind into fixes, merged: one mock per tool, one hole per span
/// kind, one ignore pointer per pointer shape. Returns the fixes and, per difference, the
/// index of its fix.
pub(super) fn fixes_for(
    diffs: &[(Difference, Option<Kind>)],
    first: &[Sample],
) -> (Vec<Fix>, Vec<Option<usize>>) {
    let mut fixes: Vec<Fix> = vec![];
    let mut assignment = vec![None; diffs.len()];
    // Group differences by the fix they need, keeping first-seen order.
    let mut groups: Vec<(GroupKey, Vec<usize>)> = vec![];
    for (i, (d, kind)) in diffs.iter().enumerate() {
        let key = match kind {
            None => continue,
            Some(Kind::ToolResult(tool)) => GroupKey::Tool(tool.clone()),
            Some(Kind::Holes(kinds)) => GroupKey::Holes(kinds.clone()),
            Some(Kind::Ignore) => GroupKey::Ignore(shape(&d.pointer)),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    for (key, members) in groups {
        let pointers: Vec<&[String]> = members
            .iter()
            .map(|i| diffs[*i].0.pointer.as_slice())
            .collect();
        let fix_index = fixes.len();
        match key {
            GroupKey::Tool(tool) => fixes.push(Fix::Mock {
                results: tool_results_of(&tool, first),
                tool,
            }),
            GroupKey::Holes(kinds) => {
                let within = generalize(&pointers).map(|p| pointer_string(&p));
                for k in kinds {
                    let (name, regex) = VOLATILE_SPANS[k];
                    let taken = fixes
                        .iter()
                        .filter(|f| matches!(f, Fix::Hole { name: n, .. } if n == name || n.starts_with(&format!("{name}_"))))
                        .count();
                    let name = if taken == 0 {
                        name.to_owned()
                    } else {
                        format!("{name}_{}", taken + 1)
                    };
                    fixes.push(Fix::Hole {
                        name,
                        regex: regex.to_owned(),
                        within: within.clone(),
                    });
                }
            }
            GroupKey::Ignore(_) => {
                let pointer = generalize(&pointers).unwrap_or_else(|| pointers[0].to_vec());
                fixes.push(Fix::Ignore {
                    pointer: pointer_string(&pointer),
                });
            }
        }
        for i in members {
            assignment[i] = Some(fix_index);
        }
    }
    (fixes, assignment)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum GroupKey {
    Tool(String),
    Holes(Vec<usize>),
    Ignore(Vec<String>),
}

/// A pointer with its array indices replaced by `*`.
fn shape(pointer: &[String]) -> Vec<String> {
    pointer
        .iter()
        .map(|s| {
            if s.parse::<usize>().is_ok() {
                "*".to_owned()
            } else {
                s.clone()
            }
        })
        .collect()
}

/// One pointer covering all of `pointers`: segments they agree on kept, array indices that
/// vary made `*`. `None` when they differ in length or in a key.
fn generalize(pointers: &[&[String]]) -> Option<Vec<String>> {
    let first = pointers.first()?;
    if pointers.iter().any(|p| shape(p) != shape(first)) {
        return None;
    }
    Some(
        (0..first.len())
            .map(|i| {
                if pointers.iter().all(|p| p[i] == first[i]) {
                    first[i].clone()
                } else {
                    "*".to_owned()
                }
            })
            .collect(),
    )
}

/// What the program's tool `tool` returned in the first run, by call occurrence: a result
/// that is JSON text becomes that JSON, so the mock reads naturally in YAML.
fn tool_results_of(tool: &str, first: &[Sample]) -> Vec<Value> {
    let mut by_nth: BTreeMap<usize, Value> = BTreeMap::new();
    for s in first {
        for r in s.tool_results.iter().filter(|r| r.tool == tool) {
            if let Some(v) = s.raw.pointer(&pointer_string(&r.pointer)) {
                by_nth.entry(r.nth).or_insert_with(|| as_mock_value(v));
            }
        }
    }
    let mut values: Vec<Value> = by_nth.into_values().collect();
    if values.windows(2).all(|w| w[0] == w[1]) {
        values.truncate(1);
    }
    values
}

fn as_mock_value(v: &Value) -> Value {
    match v {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(parsed @ (Value::Object(_) | Value::Array(_))) => parsed,
            _ => v.clone(),
        },
        other => other.clone(),
    }
}
