//! The trajectory diff of two recordings: what the agent *did* (tool calls added, removed,
//! moved, arguments changed by path, replies, number of model calls), turn by turn, apart
//! from what it was *told* (system prompt, user messages, tool definitions, model,
//! parameters, tool results). Each change is tagged asserted or incidental against an
//! [`Asserted`], and the whole gets a [`Verdict`]. Pure: recordings in, a value out.
//!
//! Volatile values never show: the diff reads the neutral [`ModelCall`], which has no
//! response ids, timestamps or fingerprints; call ids are only used to join a call to its
//! result; usage and latency are not compared; and the recording's `match` rules (ignored
//! fields, holes) are applied to requests first.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use super::asserted::Asserted;
use super::changes::{CallAt, Did, Position, Presence, Told, TrajectoryDiff, TurnDiff, Verdict};
use super::executions::Executions;
use super::extract::{self, Step};
use super::textdiff;
use super::{align, sides, told};
use crate::cassette::{Cassette, MatchRules};
use crate::matching::normalize::Rules;
use crate::neutral::ToolCall;

/// The trajectory diff of two cassettes, with both cassettes' match rules applied to the
/// requests (what the user declared volatile stays out of the diff).
pub fn diff_cassettes(old: &Cassette, new: &Cassette, asserted: &Asserted) -> TrajectoryDiff {
    let rules = rules(&old.match_rules, &new.match_rules);
    diff_recordings(
        &Recording::read(old, rules.as_ref()),
        &Recording::read(new, rules.as_ref()),
        asserted,
    )
}

/// Both cassettes' match rules, merged: what either side declared volatile is left out of
/// both. Rules that do not compile were refused when recording; without them, compare as
/// is.
pub fn rules(old: &MatchRules, new: &MatchRules) -> Option<Rules> {
    let merged = old.merged(new);
    (!merged.is_empty())
        .then(|| Rules::compile(&merged).ok())
        .flatten()
}

/// One recording as the diff reads it: its steps and its executions at the MCP boundary,
/// owned, so a large cassette can be let go once it is read (the diff then holds steps,
/// not files).
pub struct Recording {
    steps: Vec<Step>,
    executions: Executions,
}

impl Recording {
    /// Read `cassette` under `rules` (see [`rules`]).
    pub fn read(cassette: &Cassette, rules: Option<&Rules>) -> Recording {
        let steps = extract::Steps::new(&cassette.interactions, rules)
            .map(|(_, mut s)| {
                // Of what a request added, only what `told` compares is kept.
                s.new.retain(|m| told::compared(m).is_some());
                s
            })
            .collect();
        Recording {
            steps,
            executions: Executions::pair(&cassette.interactions),
        }
    }
}

/// One turn of a recording.
#[derive(Default)]
struct TurnView<'s> {
    /// Its answered model calls.
    steps: Vec<&'s Step>,
    /// Their tool calls, in order.
    tools: Vec<&'s ToolCall>,
    reply: Option<&'s str>,
}

impl<'s> TurnView<'s> {
    /// The turn as the side-by-side alignment reads it.
    fn steps<'a>(&'a self, side: &Side<'a, 's>) -> sides::Steps<'a, 's> {
        sides::Steps {
            tools: &self.tools,
            reply: self.reply,
            results: side.results,
        }
    }
}

fn turn_views(steps: &[Step]) -> BTreeMap<usize, TurnView<'_>> {
    let mut out: BTreeMap<usize, TurnView<'_>> = BTreeMap::new();
    for s in steps {
        if let Some((delegation, _)) = &s.delegation {
            out.entry(s.turn).or_default().tools.push(delegation);
        }
        let Some(call) = s.model_call() else { continue };
        let t = out.entry(s.turn).or_default();
        t.steps.push(s);
        t.tools.extend(call.tool_calls.iter());
        if let Some(r) = call.reply.as_deref().filter(|r| !r.is_empty()) {
            t.reply = Some(r);
        }
    }
    out
}

/// Call id -> the result the model was told, wherever in the recording it was sent. A
/// result that is JSON text (as most are) is parsed, so it diffs and reads as JSON.
fn results(steps: &[Step]) -> HashMap<&str, Value> {
    let delegations = (steps.iter())
        .filter_map(|s| s.delegation.as_ref())
        .map(|(call, result)| (call.id.as_str(), result.clone()));
    steps
        .iter()
        .filter_map(|s| s.call.as_ref())
        .flat_map(|c| c.tool_results.iter())
        .map(|r| {
            let content = match &r.content {
                Value::String(s) => match serde_json::from_str::<Value>(s) {
                    Ok(v @ (Value::Object(_) | Value::Array(_))) => v,
                    _ => r.content.clone(),
                },
                other => other.clone(),
            };
            (r.call_id.as_str(), content)
        })
        .chain(delegations)
        .collect()
}

/// The trajectory diff of two recordings read under the same rules.
pub fn diff_recordings(old: &Recording, new: &Recording, asserted: &Asserted) -> TrajectoryDiff {
    let (old_turns, new_turns) = (turn_views(&old.steps), turn_views(&new.steps));
    let (old_results, new_results) = (results(&old.steps), results(&new.steps));
    let (was, now) = (
        Side {
            executions: &old.executions,
            results: &old_results,
        },
        Side {
            executions: &new.executions,
            results: &new_results,
        },
    );
    let mut log = told::ToldLog::default();
    let mut turns = Vec::new();
    let mut aligned = Vec::new();
    let numbers: BTreeSet<usize> = old_turns.keys().chain(new_turns.keys()).copied().collect();
    let empty = TurnView::default();
    for n in numbers {
        let (o, w) = (
            old_turns.get(&n).unwrap_or(&empty),
            new_turns.get(&n).unwrap_or(&empty),
        );
        let presence = match (old_turns.contains_key(&n), new_turns.contains_key(&n)) {
            (true, false) => Presence::Removed,
            (false, true) => Presence::Added,
            _ => Presence::Both,
        };
        aligned.push(sides::turn(n, &o.steps(&was), &w.steps(&now)));
        let changes = diff_turn(n, (o, &was), (w, &now), asserted, &mut log);
        if !changes.is_empty() {
            turns.push(TurnDiff {
                turn: n,
                presence,
                changes,
            });
        }
    }
    let mut d = conclude(turns, log, asserted);
    d.sides = aligned;
    d
}

/// What one recording knows beside its turns: its executions and the tool results.
struct Side<'a, 's> {
    executions: &'a Executions,
    results: &'a HashMap<&'s str, Value>,
}

/// What the agent did differently in turn `n` (`o` then, `w` now); what it was told
/// differently goes into `log`.
fn diff_turn(
    n: usize,
    (o, was): (&TurnView<'_>, &Side<'_, '_>),
    (w, now): (&TurnView<'_>, &Side<'_, '_>),
    asserted: &Asserted,
    log: &mut told::ToldLog,
) -> Vec<Did> {
    let mut executions = Vec::new();
    let mut changes = align::calls(n, &o.tools, &w.tools, asserted, &mut |i, j| {
        let (a, b) = (o.tools[i], w.tools[j]);
        let (then, later) = (was.executions.describe(a), now.executions.describe(b));
        // A tool that moved to (or away from) an MCP server changed too.
        if (then.is_some() || later.is_some()) && then != later {
            let function = || "not an MCP tool".to_owned();
            executions.push(Did::ExecutionChanged {
                name: b.name.clone(),
                arguments: b.arguments.clone(),
                at: Position::of(&w.tools, j),
                old: then.unwrap_or_else(function),
                new: later.unwrap_or_else(function),
                asserted: asserted.presence(n, &b.name),
            });
        }
        let results = (
            was.results.get(a.id.as_str()),
            now.results.get(b.id.as_str()),
        );
        if let (Some(x), Some(y)) = results {
            if x != y {
                let key = format!("result\0{}\0{}\0{x}\0{y}", b.name, b.arguments);
                let at = CallAt {
                    turn: n,
                    call: None,
                };
                log.add(key, at, false, || Told::ToolResult {
                    tool: b.name.clone(),
                    arguments: b.arguments.clone(),
                    old: x.clone(),
                    new: y.clone(),
                    diff: textdiff::value(Some(x), Some(y)),
                });
            }
        }
    });
    changes.extend(executions);
    if o.reply != w.reply {
        changes.push(Did::ReplyChanged {
            old: o.reply.map(str::to_owned),
            new: w.reply.map(str::to_owned),
            diff: textdiff::opt_text(o.reply, w.reply),
            asserted: asserted.reply(n),
        });
    }
    if o.steps.len() != w.steps.len() {
        changes.push(Did::ModelCalls {
            old: o.steps.len(),
            new: w.steps.len(),
            asserted: false,
        });
    }
    for (i, j) in align::pair_model_calls(&o.steps, &w.steps) {
        log.pairs += 1;
        let at = CallAt {
            turn: n,
            call: Some(j),
        };
        told::compare_told(o.steps[i], w.steps[j], at, asserted, log);
    }
    changes
}

/// The diff of `turns` and what `log` holds of what the agent was told: each change
/// counted asserted or incidental, and the verdict.
fn conclude(turns: Vec<TurnDiff>, log: told::ToldLog, asserted: &Asserted) -> TrajectoryDiff {
    let pairs = log.pairs;
    let mut told = log.changes;
    for c in &mut told {
        // Tool results are located by turn only; "everywhere" speaks of model calls.
        c.everywhere =
            pairs > 1 && c.at.len() == pairs && !matches!(c.change, Told::ToolResult { .. });
    }
    let (mut a, mut i) = (0, 0);
    for d in turns.iter().flat_map(|t| &t.changes) {
        let (x, y) = d.counts();
        a += x;
        i += y;
    }
    for c in &told {
        if c.asserted {
            a += 1
        } else {
            i += 1
        }
    }
    TrajectoryDiff {
        verdict: match (a, i) {
            (0, 0) => Verdict::Identical,
            (0, _) => Verdict::Benign,
            _ => Verdict::Regression,
        },
        case: asserted.case.clone(),
        everything_asserted: asserted.everything,
        old_name: None,
        new_name: None,
        assertions_held: None,
        asserted: a,
        incidental: i,
        turns,
        told,
        sides: Vec::new(),
    }
}
