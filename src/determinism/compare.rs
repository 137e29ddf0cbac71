//! Compare the requests of two runs: align them by order within their turn and route,
//! and find every leaf value that differed, each with the fix it needs.

use std::collections::BTreeMap;

use serde_json::Value;

use super::findings::{Difference, Findings};
use super::sample::Sample;
use super::suggest::{classify, fixes_for, Kind};

/// Compare two runs' requests and suggest fixes.
pub(crate) fn compare(first: &[Sample], second: &[Sample]) -> Findings {
    let mut raw_diffs: Vec<(Difference, Option<Kind>)> = vec![];
    for (slot, a, b) in align(first, second) {
        let (route, turn, call) = slot;
        match (a, b) {
            (Some(a), Some(b)) => {
                for (pointer, x, y) in leaf_differences(&a.body, &b.body) {
                    let kind = classify(&pointer, x, y, a, b);
                    raw_diffs.push((
                        Difference {
                            route: route.clone(),
                            turn,
                            call,
                            pointer,
                            first: x.cloned(),
                            second: y.cloned(),
                            fix: None,
                        },
                        Some(kind),
                    ));
                }
            }
            (a, b) => raw_diffs.push((
                Difference {
                    route: route.clone(),
                    turn,
                    call,
                    pointer: vec![],
                    first: a.map(|s| s.body.clone()),
                    second: b.map(|s| s.body.clone()),
                    fix: None,
                },
                None,
            )),
        }
    }
    let (fixes, assignment) = fixes_for(&raw_diffs, first);
    let differences = raw_diffs
        .into_iter()
        .zip(assignment)
        .map(|((mut d, _), fix)| {
            d.fix = fix;
            d
        })
        .collect();
    Findings { differences, fixes }
}

type Slot = (String, Option<usize>, usize);

/// Pair the n-th request of each (turn, route) of one run with the n-th of the other, in
/// the order of the first run (then requests only the second run made).
fn align<'a>(
    first: &'a [Sample],
    second: &'a [Sample],
) -> Vec<(Slot, Option<&'a Sample>, Option<&'a Sample>)> {
    fn slots(run: &[Sample]) -> Vec<Slot> {
        let mut seen: BTreeMap<(String, Option<usize>), usize> = BTreeMap::new();
        run.iter()
            .map(|s| {
                let n = seen.entry((s.route.clone(), s.turn)).or_default();
                *n += 1;
                (s.route.clone(), s.turn, *n)
            })
            .collect()
    }
    let (sa, sb) = (slots(first), slots(second));
    let mut out: Vec<(Slot, Option<&Sample>, Option<&Sample>)> = sa
        .iter()
        .zip(first)
        .map(|(slot, a)| {
            let b = sb.iter().position(|s| s == slot).map(|i| &second[i]);
            (slot.clone(), Some(a), b)
        })
        .collect();
    for (slot, b) in sb.iter().zip(second) {
        if !sa.contains(slot) {
            out.push((slot.clone(), None, Some(b)));
        }
    }
    out
}

/// Every leaf where two values differ: pointer segments and the value on each side
/// (`None` where absent). Objects are compared key by key, arrays index by index; a value
/// whose type changed is one difference.
fn leaf_differences<'a>(
    a: &'a Value,
    b: &'a Value,
) -> Vec<(Vec<String>, Option<&'a Value>, Option<&'a Value>)> {
    fn walk<'a>(
        a: Option<&'a Value>,
        b: Option<&'a Value>,
        path: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, Option<&'a Value>, Option<&'a Value>)>,
    ) {
        match (a, b) {
            (Some(Value::Object(x)), Some(Value::Object(y))) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    path.push(k.clone());
                    walk(x.get(k), y.get(k), path, out);
                    path.pop();
                }
            }
            (Some(Value::Array(x)), Some(Value::Array(y))) => {
                for i in 0..x.len().max(y.len()) {
                    path.push(i.to_string());
                    walk(x.get(i), y.get(i), path, out);
                    path.pop();
                }
            }
            (x, y) if x == y => {}
            (x, y) => out.push((path.clone(), x, y)),
        }
    }
    let mut out = vec![];
    walk(Some(a), Some(b), &mut vec![], &mut out);
    out
}
