//! Alignment, the heart of the diff: which tool calls of two turns are the same call
//! (identical, moved, or with changed arguments), which were added or removed; which
//! elements of two argument values correspond; which model calls of a turn to compare.

use std::collections::BTreeSet;

use serde_json::Value;
use similar::{capture_diff_slices, Algorithm, DiffTag};

use super::asserted::Asserted;
use super::changes::{Did, PathChange, Position};
use super::extract::Step;
use super::textdiff;
use crate::assert::join_path;
use crate::neutral::ToolCall;

/// The key a tool call is aligned by: its name and canonical arguments.
fn call_key(c: &ToolCall) -> String {
    format!("{}\0{}", c.name, c.arguments)
}

/// The tool-call changes of one turn, in the new recording's order (a removed call where
/// it used to be). `paired(i, j)` is told of every old call `i` matched to new call `j`.
pub(super) fn calls(
    turn: usize,
    old: &[&ToolCall],
    new: &[&ToolCall],
    asserted: &Asserted,
    paired: &mut dyn FnMut(usize, usize),
) -> Vec<Did> {
    let ko: Vec<String> = old.iter().map(|c| call_key(c)).collect();
    let kn: Vec<String> = new.iter().map(|c| call_key(c)).collect();
    // 1. The longest common subsequence of identical calls.
    let mut pairs: Vec<(usize, usize, bool)> = Vec::new(); // (old, new, in the LCS)
    let (mut lone_old, mut lone_new) = (Vec::new(), Vec::new());
    for op in capture_diff_slices(Algorithm::Myers, &ko, &kn) {
        let (tag, or, nr) = op.as_tag_tuple();
        match tag {
            DiffTag::Equal => pairs.extend(or.zip(nr).map(|(i, j)| (i, j, true))),
            _ => {
                lone_old.extend(or);
                lone_new.extend(nr);
            }
        }
    }
    // 2. Identical calls elsewhere: moved. 3. Calls of the same tool, in order: changed
    // arguments.
    let identical = |i: usize, j: usize| ko[i] == kn[j];
    let same_tool = |i: usize, j: usize| old[i].name == new[j].name;
    pair_up(&mut lone_old, &mut lone_new, &mut pairs, &identical);
    pair_up(&mut lone_old, &mut lone_new, &mut pairs, &same_tool);
    pairs.sort_unstable();
    let in_place = in_order(&pairs);

    // Sort keys: a new-side change at 2j+1, a removed call just after the new position of
    // the old call before it.
    let mut out: Vec<(usize, Did)> = Vec::new();
    for (k, &(i, j, _)) in pairs.iter().enumerate() {
        paired(i, j);
        let (a, b) = (old[i], new[j]);
        if !in_place[k] {
            out.push((
                2 * j + 1,
                Did::CallMoved {
                    name: b.name.clone(),
                    arguments: b.arguments.clone(),
                    was: Position::of(old, i),
                    now: Position::of(new, j),
                    asserted: asserted.position(turn, &b.name),
                },
            ));
        }
        if a.arguments != b.arguments {
            let changes = argument_changes(turn, a, b, asserted);
            out.push((
                2 * j + 1,
                Did::ArgumentsChanged {
                    name: b.name.clone(),
                    arguments: b.arguments.clone(),
                    at: Position::of(new, j),
                    changes,
                },
            ));
        }
    }
    for &j in &lone_new {
        out.push((
            2 * j + 1,
            Did::CallAdded {
                name: new[j].name.clone(),
                arguments: new[j].arguments.clone(),
                at: Position::of(new, j),
                asserted: asserted.presence(turn, &new[j].name),
            },
        ));
    }
    for &i in &lone_old {
        let before = pairs
            .iter()
            .filter(|p| p.0 < i)
            .map(|p| p.1 + 1)
            .max()
            .unwrap_or(0);
        out.push((
            2 * before,
            Did::CallRemoved {
                name: old[i].name.clone(),
                arguments: old[i].arguments.clone(),
                at: Position::of(old, i),
                asserted: asserted.presence(turn, &old[i].name),
            },
        ));
    }
    out.sort_by_key(|(k, _)| *k);
    out.into_iter().map(|(_, d)| d).collect()
}

/// The paths at which two calls of one tool differ in their arguments.
fn argument_changes(
    turn: usize,
    a: &ToolCall,
    b: &ToolCall,
    asserted: &Asserted,
) -> Vec<PathChange> {
    let mut changes = Vec::new();
    value_changes(
        Some(&a.arguments),
        Some(&b.arguments),
        &mut Vec::new(),
        &mut changes,
    );
    changes
        .into_iter()
        .map(|(path, old, new)| PathChange {
            path: join_path(&path),
            diff: textdiff::value(old.as_ref(), new.as_ref()),
            asserted: asserted.argument(turn, &b.name, &path),
            old,
            new,
        })
        .collect()
}

/// Pair each unmatched old call with the first unmatched new call `same` accepts.
fn pair_up(
    lone_old: &mut Vec<usize>,
    lone_new: &mut Vec<usize>,
    pairs: &mut Vec<(usize, usize, bool)>,
    same: &dyn Fn(usize, usize) -> bool,
) {
    lone_old.retain(|&i| match lone_new.iter().position(|&j| same(i, j)) {
        Some(at) => {
            pairs.push((i, lone_new.remove(at), false));
            false
        }
        None => true,
    });
}

/// Which pairs (sorted by old index) keep their relative order: the heaviest increasing
/// run of new indices, where pairs from the common subsequence outweigh all others, so
/// the calls reported as moved are the ones that really left their place.
fn in_order(pairs: &[(usize, usize, bool)]) -> Vec<bool> {
    let n = pairs.len();
    let weight = |k: usize| if pairs[k].2 { n + 1 } else { 1 };
    let mut best = vec![0usize; n];
    let mut prev = vec![usize::MAX; n];
    for k in 0..n {
        best[k] = weight(k);
        for m in 0..k {
            if pairs[m].1 < pairs[k].1 && best[m] + weight(k) > best[k] {
                best[k] = best[m] + weight(k);
                prev[k] = m;
            }
        }
    }
    let mut keep = vec![false; n];
    let mut k = (0..n).max_by_key(|&k| (best[k], std::cmp::Reverse(k)));
    while let Some(at) = k {
        keep[at] = true;
        k = (prev[at] != usize::MAX).then_some(prev[at]);
    }
    keep
}

/// The leaf changes between two values, by path: objects key by key, arrays element by
/// element after aligning equal elements (so an inserted element is one change, not a
/// shift of every later index), anything else as a whole.
type Change = (Vec<String>, Option<Value>, Option<Value>);

fn value_changes(
    old: Option<&Value>,
    new: Option<&Value>,
    at: &mut Vec<String>,
    out: &mut Vec<Change>,
) {
    match (old, new) {
        (Some(a), Some(b)) if a == b => {}
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                at.push(k.clone());
                value_changes(a.get(k), b.get(k), at, out);
                at.pop();
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            let ka: Vec<String> = a.iter().map(Value::to_string).collect();
            let kb: Vec<String> = b.iter().map(Value::to_string).collect();
            for op in capture_diff_slices(Algorithm::Myers, &ka, &kb) {
                let (tag, ar, br) = op.as_tag_tuple();
                if tag == DiffTag::Equal {
                    continue;
                }
                let (al, bl) = (ar.len(), br.len());
                for k in 0..al.max(bl) {
                    // Paired positions recurse; the rest are added (new index) or removed
                    // (old index).
                    let (x, y) = (
                        a.get(ar.start + k).filter(|_| k < al),
                        b.get(br.start + k).filter(|_| k < bl),
                    );
                    let index = if k < bl { br.start + k } else { ar.start + k };
                    at.push(index.to_string());
                    value_changes(x, y, at, out);
                    at.pop();
                }
            }
        }
        (None, None) => {}
        _ => out.push((at.clone(), old.cloned(), new.cloned())),
    }
}

/// Pairs of model calls of one turn to compare what they were told: aligned by model,
/// system prompt and tool names (so a side call racing the main one pairs with its
/// counterpart), then the rest in order.
pub(super) fn pair_model_calls(old: &[&Step], new: &[&Step]) -> Vec<(usize, usize)> {
    let sig = |s: &&Step| {
        s.call.as_ref().map(|c| {
            let tools: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
            format!("{}\0{:?}\0{}", c.model, c.system, tools.join(","))
        })
    };
    let so: Vec<Option<String>> = old.iter().map(sig).collect();
    let sn: Vec<Option<String>> = new.iter().map(sig).collect();
    let mut out = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, &so, &sn) {
        let (_, or, nr) = op.as_tag_tuple();
        out.extend(or.zip(nr));
    }
    out
}
