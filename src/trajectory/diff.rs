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

use serde::Serialize;
use serde_json::Value;

use super::asserted::Asserted;
use super::extract::{self, Step};
use super::textdiff::{self, TextDiff};
use super::{align, told};
use crate::cassette::{Cassette, Interaction};
use crate::matching::normalize::Rules;
use crate::neutral::ToolCall;

/// The diff of two recordings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrajectoryDiff {
    pub verdict: Verdict,
    /// The spec case the asserted/incidental tags come from; `None` without a spec.
    pub case: Option<String>,
    /// No spec: every change in what the agent did counted as asserted.
    pub everything_asserted: bool,
    /// Names of the two recordings (file paths), for the renderers' headline; set by the
    /// caller, `None` when the diff stands inside another report.
    pub old_name: Option<String>,
    pub new_name: Option<String>,
    /// How many changes are asserted, and how many incidental (an argument change counts
    /// once per changed path).
    pub asserted: usize,
    pub incidental: usize,
    /// What the agent did, per turn; only turns with a change.
    pub turns: Vec<TurnDiff>,
    /// What the agent was told, each distinct change once with where it happened.
    pub told: Vec<ToldChange>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Nothing changed but volatile values.
    Identical,
    /// Only values no assertion depends on changed.
    Benign,
    /// A value an assertion depends on changed.
    Regression,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Identical => "identical",
            Verdict::Benign => "benign",
            Verdict::Regression => "regression",
        }
    }
}

/// The changes of one turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnDiff {
    /// 0-based; renderers number turns from 1.
    pub turn: usize,
    pub presence: Presence,
    pub changes: Vec<Did>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    Both,
    /// The turn is only in the old recording.
    Removed,
    /// The turn is only in the new recording.
    Added,
}

/// A change in what the agent did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Did {
    /// A call the new recording makes and the old did not.
    CallAdded {
        name: String,
        arguments: Value,
        at: Position,
        asserted: bool,
    },
    /// A call the old recording made and the new does not.
    CallRemoved {
        name: String,
        arguments: Value,
        at: Position,
        asserted: bool,
    },
    /// A call made in both, in another place among the turn's calls.
    CallMoved {
        name: String,
        arguments: Value,
        was: Position,
        now: Position,
        asserted: bool,
    },
    /// A call made in both with other arguments (same tool, paired in order).
    ArgumentsChanged {
        name: String,
        /// The new arguments, to tell calls of the same tool apart.
        arguments: Value,
        at: Position,
        changes: Vec<PathChange>,
    },
    /// The turn's reply: the last assistant text the model produced in it.
    ReplyChanged {
        old: Option<String>,
        new: Option<String>,
        diff: TextDiff,
        asserted: bool,
    },
    /// How many model calls the turn took.
    ModelCalls {
        old: usize,
        new: usize,
        asserted: bool,
    },
}

impl Did {
    fn counts(&self) -> (usize, usize) {
        let one = |a: bool| if a { (1, 0) } else { (0, 1) };
        match self {
            Did::CallAdded { asserted, .. }
            | Did::CallRemoved { asserted, .. }
            | Did::CallMoved { asserted, .. }
            | Did::ReplyChanged { asserted, .. }
            | Did::ModelCalls { asserted, .. } => one(*asserted),
            Did::ArgumentsChanged { changes, .. } => changes.iter().fold((0, 0), |(a, i), c| {
                let (x, y) = one(c.asserted);
                (a + x, i + y)
            }),
        }
    }
}

/// Where a call is among its turn's calls (in its own recording).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Position {
    /// 0-based index among the turn's tool calls.
    pub index: usize,
    /// The tool called just before, if any.
    pub after: Option<String>,
    /// The tool called just after, if any.
    pub before: Option<String>,
}

impl Position {
    pub(super) fn of(calls: &[&ToolCall], index: usize) -> Position {
        let name = |i: usize| calls.get(i).map(|c| c.name.clone());
        Position {
            index,
            after: index.checked_sub(1).and_then(name),
            before: name(index + 1),
        }
    }
}

/// One changed argument.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathChange {
    /// Dotted path (`passengers.0.name`), as matchers write it; `""` for the arguments as a whole.
    pub path: String,
    /// The value before; absent on that side when the key is missing (JSON: no `old` key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<Value>,
    pub diff: TextDiff,
    pub asserted: bool,
}

/// A change in what the agent was told, with every model call it was seen in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToldChange {
    pub change: Told,
    pub asserted: bool,
    /// The model calls (new side) it was seen in, in order.
    pub at: Vec<CallAt>,
    /// It was seen in every model call the two recordings have in common.
    pub everywhere: bool,
}

/// A model call: its turn and its index among the turn's model calls, both 0-based.
/// A tool result is located by its turn only (`call` absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CallAt {
    pub turn: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Told {
    /// The system prompt (instructions), all parts joined.
    System {
        old: Option<String>,
        new: Option<String>,
        diff: TextDiff,
    },
    /// A user message the call sent for the first time (the n-th of that call).
    UserMessage {
        old: Option<String>,
        new: Option<String>,
        diff: TextDiff,
    },
    /// A tool offered now and not before; `diff` shows its whole definition as added lines.
    ToolAdded {
        name: String,
        definition: Value,
        diff: TextDiff,
    },
    /// A tool no longer offered.
    ToolRemoved {
        name: String,
        definition: Value,
    },
    /// A tool whose definition (description, parameters schema) changed: a line diff of
    /// its pretty JSON.
    ToolChanged {
        name: String,
        diff: TextDiff,
    },
    Model {
        old: String,
        new: String,
    },
    /// A request parameter (`temperature`, `max_tokens`, `tool_choice`, …).
    Param {
        name: String,
        /// Absent (no key) when the parameter was not sent on that side.
        #[serde(skip_serializing_if = "Option::is_none")]
        old: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        new: Option<Value>,
        diff: TextDiff,
    },
    /// The result a tool call (made in both) was answered with.
    ToolResult {
        tool: String,
        arguments: Value,
        old: Value,
        new: Value,
        diff: TextDiff,
    },
}

/// The trajectory diff of two cassettes, with both cassettes' match rules applied to the
/// requests (what the user declared volatile stays out of the diff).
pub fn diff_cassettes(old: &Cassette, new: &Cassette, asserted: &Asserted) -> TrajectoryDiff {
    let merged = old.match_rules.merged(&new.match_rules);
    // Rules that do not compile were refused when recording; without them, compare as is.
    let rules = (!merged.is_empty())
        .then(|| Rules::compile(&merged).ok())
        .flatten();
    diff_steps(
        &extract::steps(&old.interactions, rules.as_ref()),
        &extract::steps(&new.interactions, rules.as_ref()),
        asserted,
    )
}

/// The trajectory diff of two recordings' interactions.
pub fn diff(old: &[Interaction], new: &[Interaction], asserted: &Asserted) -> TrajectoryDiff {
    diff_steps(
        &extract::steps(old, None),
        &extract::steps(new, None),
        asserted,
    )
}

/// One turn of a recording.
#[derive(Default)]
struct TurnView<'s> {
    /// Its answered model calls.
    steps: Vec<&'s Step<'s>>,
    /// Their tool calls, in order.
    tools: Vec<&'s ToolCall>,
    reply: Option<&'s str>,
}

fn turn_views<'s>(steps: &'s [Step<'s>]) -> BTreeMap<usize, TurnView<'s>> {
    let mut out: BTreeMap<usize, TurnView<'s>> = BTreeMap::new();
    for s in steps {
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
fn results<'s>(steps: &'s [Step<'s>]) -> HashMap<&'s str, Value> {
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
        .collect()
}

fn diff_steps(old: &[Step<'_>], new: &[Step<'_>], asserted: &Asserted) -> TrajectoryDiff {
    let (old_turns, new_turns) = (turn_views(old), turn_views(new));
    let (old_results, new_results) = (results(old), results(new));
    let mut log = told::ToldLog::default();
    let mut turns = Vec::new();
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
        let mut changes = align::calls(n, &o.tools, &w.tools, asserted, &mut |i, j| {
            let (a, b) = (o.tools[i], w.tools[j]);
            if let (Some(x), Some(y)) = (
                old_results.get(a.id.as_str()),
                new_results.get(b.id.as_str()),
            ) {
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
            told::compare_told(
                o.steps[i],
                w.steps[j],
                CallAt {
                    turn: n,
                    call: Some(j),
                },
                asserted,
                &mut log,
            );
        }
        if !changes.is_empty() {
            turns.push(TurnDiff {
                turn: n,
                presence,
                changes,
            });
        }
    }
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
        asserted: a,
        incidental: i,
        turns,
        told,
    }
}
