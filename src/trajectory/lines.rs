//! The one walk over a [`TrajectoryDiff`]'s changes that every markup shares: each change
//! becomes [`Line`]s (words, tag, the text diff shown under it), spelled through a
//! [`Markup`]. The text and Markdown renderers only lay the lines out.

use serde_json::Value;

use super::changes::{CallAt, Did, PathChange, Position, Presence, Told, ToldChange};
use super::textdiff::TextDiff;

/// How one markup spells the pieces of a line.
pub(super) trait Markup {
    /// A name or a short recorded string (tool, path, model).
    fn name(&self, s: &str) -> String;
    /// A JSON value, compact; `None` where the key was absent.
    fn value(&self, v: Option<&Value>) -> String;
    /// A reply or message text; `None` where there was none.
    fn text(&self, s: Option<&str>) -> String;
    /// The mark in front of a kind of change; may be empty.
    fn icon(&self, icon: Icon) -> &'static str;
}

#[derive(Clone, Copy)]
pub(super) enum Icon {
    Added,
    Removed,
    Moved,
    Edited,
    Reply,
    Execution,
    ModelCalls,
}

/// One rendered change: at `depth` 0 a change, at 1 a path under "arguments changed".
pub(super) struct Line {
    pub depth: usize,
    pub words: String,
    /// Whether the change is asserted; `None` for a heading whose paths carry the tags.
    pub asserted: Option<bool>,
    pub diff: Option<Block>,
}

/// A line or word diff shown under its line, with the two whole values it came from
/// (a markup may show a word diff as the old and the new line).
pub(super) struct Block {
    pub diff: TextDiff,
    pub old: Option<Value>,
    pub new: Option<Value>,
}

impl Block {
    fn new(diff: &TextDiff, old: Option<Value>, new: Option<Value>) -> Option<Block> {
        (*diff != TextDiff::Inline).then(|| Block {
            diff: diff.clone(),
            old,
            new,
        })
    }
}

fn line(words: String, asserted: bool, diff: Option<Block>) -> Line {
    Line {
        depth: 0,
        words,
        asserted: Some(asserted),
        diff,
    }
}

fn mark(m: &dyn Markup, icon: Icon, words: String) -> String {
    match m.icon(icon) {
        "" => words,
        i => format!("{i} {words}"),
    }
}

fn string(s: &Option<String>) -> Option<Value> {
    s.clone().map(Value::String)
}

/// What the turn heading adds for a turn only one side made.
pub(super) fn presence(p: Presence) -> &'static str {
    match p {
        Presence::Both => "",
        Presence::Added => " (new turn)",
        Presence::Removed => " (turn no longer made)",
    }
}

/// "before `b`" / "after `a`" / "as the only call", preferring the call that follows.
fn place(p: &Position, m: &dyn Markup) -> String {
    match (&p.before, &p.after) {
        (Some(b), _) => format!("before {}", m.name(b)),
        (None, Some(a)) => format!("after {}", m.name(a)),
        (None, None) => "as the only call".to_owned(),
    }
}

/// The lines of a change in what the agent did.
pub(super) fn did(c: &Did, m: &dyn Markup) -> Vec<Line> {
    let call =
        |name: &str, arguments: &Value| format!("{} {}", m.name(name), m.value(Some(arguments)));
    let (icon, words, asserted, diff) = match c {
        Did::ArgumentsChanged {
            name, at, changes, ..
        } => return arguments(m, name, at.index, changes),
        Did::CallAdded {
            name,
            arguments,
            at,
            asserted,
        } => (
            Icon::Added,
            format!("now also calls {} {}", call(name, arguments), place(at, m)),
            asserted,
            None,
        ),
        Did::CallRemoved {
            name,
            arguments,
            at,
            asserted,
        } => (
            Icon::Removed,
            format!(
                "no longer calls {} (was {})",
                call(name, arguments),
                place(at, m)
            ),
            asserted,
            None,
        ),
        Did::CallMoved {
            name,
            arguments,
            was,
            now,
            asserted,
        } => (
            Icon::Moved,
            format!(
                "{} moved: now {}, was {}",
                call(name, arguments),
                place(now, m),
                place(was, m)
            ),
            asserted,
            None,
        ),
        Did::ReplyChanged {
            old,
            new,
            diff,
            asserted,
        } => {
            let words = match diff {
                TextDiff::Inline => format!(
                    "reply: {} → {}",
                    m.text(old.as_deref()),
                    m.text(new.as_deref())
                ),
                _ => "reply changed".to_owned(),
            };
            let block = Block::new(diff, string(old), string(new));
            (Icon::Reply, words, asserted, block)
        }
        Did::ExecutionChanged {
            name,
            arguments,
            at,
            old,
            new,
            asserted,
        } => (
            Icon::Execution,
            format!(
                "{} (tool call {}): {} → {}",
                call(name, arguments),
                at.index + 1,
                m.name(old),
                m.name(new)
            ),
            asserted,
            None,
        ),
        Did::ModelCalls { old, new, asserted } => (
            Icon::ModelCalls,
            format!("model calls: {old} → {new}"),
            asserted,
            None,
        ),
    };
    vec![line(mark(m, icon, words), *asserted, diff)]
}

/// "arguments changed", then a line per changed path.
fn arguments(m: &dyn Markup, name: &str, index: usize, changes: &[PathChange]) -> Vec<Line> {
    let head = Line {
        depth: 0,
        words: mark(
            m,
            Icon::Edited,
            format!(
                "{} (tool call {}): arguments changed",
                m.name(name),
                index + 1
            ),
        ),
        asserted: None,
        diff: None,
    };
    let paths = changes.iter().map(|p| {
        let path = m.name(if p.path.is_empty() {
            "(all arguments)"
        } else {
            &p.path
        });
        let words = match p.diff {
            TextDiff::Inline => format!(
                "{path}: {} → {}",
                m.value(p.old.as_ref()),
                m.value(p.new.as_ref())
            ),
            _ => path,
        };
        Line {
            depth: 1,
            ..line(
                words,
                p.asserted,
                Block::new(&p.diff, p.old.clone(), p.new.clone()),
            )
        }
    });
    std::iter::once(head).chain(paths).collect()
}

/// The line of a change in what the agent was told, ending with where it was seen.
pub(super) fn told(c: &ToldChange, m: &dyn Markup) -> Line {
    let inline = |head: String| (head, None);
    let (head, diff) = match &c.change {
        Told::System { old, new, diff } => (
            "system prompt changed".to_owned(),
            Block::new(diff, string(old), string(new)),
        ),
        Told::UserMessage { old, new, diff } => match diff {
            TextDiff::Inline => inline(format!(
                "user message: {} → {}",
                m.text(old.as_deref()),
                m.text(new.as_deref())
            )),
            d => (
                "user message changed".to_owned(),
                Block::new(d, string(old), string(new)),
            ),
        },
        Told::ToolAdded { name, diff, .. } => (
            mark(m, Icon::Added, format!("tool {} offered", m.name(name))),
            Block::new(diff, None, None),
        ),
        Told::ToolRemoved { name, .. } => inline(mark(
            m,
            Icon::Removed,
            format!("tool {} no longer offered", m.name(name)),
        )),
        Told::ToolChanged { name, diff } => (
            format!("tool {} definition changed", m.name(name)),
            Block::new(diff, None, None),
        ),
        Told::Model { old, new } => inline(format!("model: {} → {}", m.name(old), m.name(new))),
        Told::Param {
            name,
            old,
            new,
            diff,
        } => match diff {
            TextDiff::Inline => inline(format!(
                "{}: {} → {}",
                m.name(name),
                m.value(old.as_ref()),
                m.value(new.as_ref())
            )),
            d => (
                format!("{} changed", m.name(name)),
                Block::new(d, old.clone(), new.clone()),
            ),
        },
        Told::ToolResult {
            tool,
            arguments,
            old,
            new,
            diff,
        } => {
            let call = format!("{} {}", m.name(tool), m.value(Some(arguments)));
            match diff {
                TextDiff::Inline => inline(format!(
                    "result of {call}: {} → {}",
                    m.value(Some(old)),
                    m.value(Some(new))
                )),
                d => (
                    format!("result of {call} changed"),
                    Block::new(d, Some(old.clone()), Some(new.clone())),
                ),
            }
        }
    };
    line(format!("{head}, {}", location(c)), c.asserted, diff)
}

/// Where a told change was seen: `in every model call`, `in turn 2`, or
/// `in turn 1 (model calls 1, 2), turn 3 (model call 1)`.
fn location(c: &ToldChange) -> String {
    if c.everywhere {
        return "in every model call".to_owned();
    }
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for &CallAt { turn, call } in &c.at {
        let call = call.map(|n| n + 1);
        match groups.last_mut() {
            Some((t, calls)) if *t == turn => calls.extend(call),
            _ => groups.push((turn, call.into_iter().collect())),
        }
    }
    const MAX: usize = 4;
    let mut parts: Vec<String> = groups
        .iter()
        .take(MAX)
        .map(|(t, calls)| {
            if calls.is_empty() {
                return format!("turn {}", t + 1);
            }
            let list: Vec<String> = calls.iter().map(usize::to_string).collect();
            let noun = if calls.len() == 1 {
                "model call"
            } else {
                "model calls"
            };
            format!("turn {} ({noun} {})", t + 1, list.join(", "))
        })
        .collect();
    if groups.len() > MAX {
        parts.push(format!("{} more turns", groups.len() - MAX));
    }
    format!("in {}", parts.join(", "))
}
