//! The value a trajectory diff produces: per turn, what the agent did differently and
//! what it was told differently, each change tagged asserted or incidental, and the
//! verdict over all of them. Data only; `diff` computes it, `render` and `markdown` print it.

use serde::Serialize;
use serde_json::Value;

use super::sides::AlignedTurn;
use super::textdiff::TextDiff;
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
    /// Set by a test run that re-recorded: whether the case's assertions all held on the
    /// new recording. An asserted change whose assertions hold is not a regression in
    /// that run, and the verdict line says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assertions_held: Option<bool>,
    /// How many changes are asserted, and how many incidental (an argument change counts
    /// once per changed path).
    pub asserted: usize,
    pub incidental: usize,
    /// What the agent did, per turn; only turns with a change.
    pub turns: Vec<TurnDiff>,
    /// What the agent was told, each distinct change once with where it happened.
    pub told: Vec<ToldChange>,
    /// Every turn's steps of both recordings aligned, changed or not: the side-by-side
    /// view's rows.
    #[serde(skip)]
    pub sides: Vec<AlignedTurn>,
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
    /// A call made in both whose execution at the MCP boundary changed: now executed, no
    /// longer executed, or executed with other arguments (`executed by mail`, `not
    /// executed`, `executed by mail with {…}`).
    ExecutionChanged {
        name: String,
        arguments: Value,
        at: Position,
        old: String,
        new: String,
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
    pub(super) fn counts(&self) -> (usize, usize) {
        let one = |a: bool| if a { (1, 0) } else { (0, 1) };
        match self {
            Did::CallAdded { asserted, .. }
            | Did::CallRemoved { asserted, .. }
            | Did::CallMoved { asserted, .. }
            | Did::ReplyChanged { asserted, .. }
            | Did::ExecutionChanged { asserted, .. }
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
