//! The trajectory diff as GitHub-flavoured Markdown, ready to paste as a pull-request
//! comment: a headline with the verdict, then the changes as lists, line diffs in
//! ```diff fences. Recorded text sits in code spans and fences it cannot close.

use std::fmt::Write as _;

use serde_json::Value;

use super::changes::{Did, Told, ToldChange, TrajectoryDiff, Verdict};
use super::render::{clean, compact, location, pieces_text, place, presence};
use super::textdiff::TextDiff;

/// Longest value shown inline, in characters (a PR comment has a size limit).
const MD_VALUE: usize = 200;
// Markdown

/// The diff as GitHub-flavoured Markdown, ready to paste as a pull-request comment.
pub fn render_markdown(d: &TrajectoryDiff) -> String {
    let mut out = String::new();
    let icon = match d.verdict {
        Verdict::Identical => "✅",
        Verdict::Benign => "🟡",
        Verdict::Regression => "❌",
    };
    let _ = writeln!(out, "### Trajectory diff: {icon} {}\n", d.verdict.as_str());
    let mut meta = Vec::new();
    if let (Some(a), Some(b)) = (&d.old_name, &d.new_name) {
        meta.push(format!("{} → {}", code(a), code(b)));
    }
    match (&d.case, d.everything_asserted) {
        (Some(case), _) => meta.push(format!("spec case {}", code(case))),
        (None, true) => {
            meta.push("no spec: every change in what the agent did counts as asserted".into())
        }
        (None, false) => {}
    }
    if d.verdict == Verdict::Identical {
        meta.push("nothing changed but volatile values (ids, timestamps, usage, latency)".into());
    } else {
        let changes = if d.asserted == 1 { "change" } else { "changes" };
        let asserted = format!("{} asserted {changes}", d.asserted);
        let asserted = if d.asserted > 0 {
            format!("**{asserted}**")
        } else {
            asserted
        };
        meta.push(format!("{asserted}, {} incidental", d.incidental));
    }
    let _ = writeln!(out, "{}\n", meta.join(" · "));
    if !d.turns.is_empty() {
        out.push_str("#### What the agent did\n\n");
        for t in &d.turns {
            let _ = writeln!(out, "**Turn {}**{}\n", t.turn + 1, presence(t.presence));
            for c in &t.changes {
                did_md(&mut out, c);
            }
            blank_line(&mut out);
        }
    }
    if !d.told.is_empty() {
        out.push_str("#### What the agent was told\n\n");
        for c in &d.told {
            told_md(&mut out, c);
        }
        blank_line(&mut out);
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// End `out` with exactly one blank line.
fn blank_line(out: &mut String) {
    while out.ends_with("\n\n") {
        out.pop();
    }
    out.push('\n');
}

fn md_tag(asserted: bool) -> &'static str {
    if asserted {
        "**asserted**"
    } else {
        "incidental"
    }
}

fn did_md(out: &mut String, c: &Did) {
    match c {
        Did::CallAdded {
            name,
            arguments,
            at,
            asserted,
        } => {
            let _ = writeln!(
                out,
                "- ➕ now also calls {} {} {} — {}",
                code(name),
                code(&compact(arguments, MD_VALUE)),
                place(at, code),
                md_tag(*asserted)
            );
        }
        Did::CallRemoved {
            name,
            arguments,
            at,
            asserted,
        } => {
            let _ = writeln!(
                out,
                "- ➖ no longer calls {} {} (was {}) — {}",
                code(name),
                code(&compact(arguments, MD_VALUE)),
                place(at, code),
                md_tag(*asserted)
            );
        }
        Did::CallMoved {
            name,
            arguments,
            was,
            now,
            asserted,
        } => {
            let _ = writeln!(
                out,
                "- 🔀 {} {} moved: now {}, was {} — {}",
                code(name),
                code(&compact(arguments, MD_VALUE)),
                place(now, code),
                place(was, code),
                md_tag(*asserted)
            );
        }
        Did::ArgumentsChanged {
            name, at, changes, ..
        } => {
            let _ = writeln!(
                out,
                "- ✏️ {} (tool call {}) arguments changed:",
                code(name),
                at.index + 1
            );
            for p in changes {
                let path = if p.path.is_empty() {
                    "(all arguments)"
                } else {
                    &p.path
                };
                if p.diff == TextDiff::Inline {
                    let _ = writeln!(
                        out,
                        "  - {}: {} → {} — {}",
                        code(path),
                        md_value(p.old.as_ref()),
                        md_value(p.new.as_ref()),
                        md_tag(p.asserted)
                    );
                } else {
                    let _ = writeln!(out, "  - {} — {}", code(path), md_tag(p.asserted));
                    fenced_diff(out, "    ", &p.diff, p.old.as_ref(), p.new.as_ref());
                }
            }
        }
        Did::ReplyChanged {
            old,
            new,
            diff,
            asserted,
        } => {
            if *diff == TextDiff::Inline {
                let _ = writeln!(
                    out,
                    "- 💬 reply: {} → {} — {}",
                    md_reply(old.as_deref()),
                    md_reply(new.as_deref()),
                    md_tag(*asserted)
                );
            } else {
                let _ = writeln!(out, "- 💬 reply changed — {}", md_tag(*asserted));
                let (o, n) = (
                    old.clone().map(Value::String),
                    new.clone().map(Value::String),
                );
                fenced_diff(out, "  ", diff, o.as_ref(), n.as_ref());
            }
        }
        Did::ExecutionChanged {
            name,
            arguments,
            old,
            new,
            asserted,
            ..
        } => {
            let _ = writeln!(
                out,
                "- ⇢ {}: {} → {} — {}",
                code(&format!("{name} {}", compact(arguments, MD_VALUE))),
                code(old),
                code(new),
                md_tag(*asserted)
            );
        }
        Did::ModelCalls { old, new, asserted } => {
            let _ = writeln!(
                out,
                "- 🔁 model calls: {old} → {new} — {}",
                md_tag(*asserted)
            );
        }
    }
}

fn md_value(v: Option<&Value>) -> String {
    v.map_or_else(|| "*absent*".to_owned(), |v| code(&compact(v, MD_VALUE)))
}

fn md_reply(v: Option<&str>) -> String {
    v.map_or_else(
        || "*none*".to_owned(),
        |s| code(&compact(&Value::String(s.to_owned()), MD_VALUE)),
    )
}

fn told_md(out: &mut String, c: &ToldChange) {
    let at = location(c);
    let tag = md_tag(c.asserted);
    let (head, diff, old, new): (String, Option<&TextDiff>, Option<Value>, Option<Value>) =
        match &c.change {
            Told::System { old, new, diff } => (
                "system prompt changed".into(),
                Some(diff),
                old.clone().map(Value::String),
                new.clone().map(Value::String),
            ),
            Told::UserMessage { old, new, diff } => match diff {
                TextDiff::Inline => (
                    format!(
                        "user message: {} → {}",
                        md_reply(old.as_deref()),
                        md_reply(new.as_deref())
                    ),
                    None,
                    None,
                    None,
                ),
                d => (
                    "user message changed".into(),
                    Some(d),
                    old.clone().map(Value::String),
                    new.clone().map(Value::String),
                ),
            },
            Told::ToolAdded { name, diff, .. } => (
                format!("➕ tool {} offered", code(name)),
                Some(diff),
                None,
                None,
            ),
            Told::ToolRemoved { name, .. } => (
                format!("➖ tool {} no longer offered", code(name)),
                None,
                None,
                None,
            ),
            Told::ToolChanged { name, diff } => (
                format!("tool {} definition changed", code(name)),
                Some(diff),
                None,
                None,
            ),
            Told::Model { old, new } => (
                format!("model: {} → {}", code(old), code(new)),
                None,
                None,
                None,
            ),
            Told::Param {
                name,
                old,
                new,
                diff,
            } => match diff {
                TextDiff::Inline => (
                    format!(
                        "{}: {} → {}",
                        code(name),
                        md_value(old.as_ref()),
                        md_value(new.as_ref())
                    ),
                    None,
                    None,
                    None,
                ),
                d => (
                    format!("{} changed", code(name)),
                    Some(d),
                    old.clone(),
                    new.clone(),
                ),
            },
            Told::ToolResult {
                tool,
                arguments,
                old,
                new,
                diff,
            } => match diff {
                TextDiff::Inline => (
                    format!(
                        "result of {} {}: {} → {}",
                        code(tool),
                        code(&compact(arguments, MD_VALUE)),
                        code(&compact(old, MD_VALUE)),
                        code(&compact(new, MD_VALUE))
                    ),
                    None,
                    None,
                    None,
                ),
                d => (
                    format!(
                        "result of {} {} changed",
                        code(tool),
                        code(&compact(arguments, MD_VALUE))
                    ),
                    Some(d),
                    Some(old.clone()),
                    Some(new.clone()),
                ),
            },
        };
    let _ = writeln!(out, "- {head}, {at} — {tag}");
    if let Some(d) = diff {
        fenced_diff(out, "  ", d, old.as_ref(), new.as_ref());
    }
}

/// A ```diff fence (GitHub colours its `-`/`+` lines), inside a list item at `indent`.
/// A word diff is shown as the old and the new line whole.
fn fenced_diff(
    out: &mut String,
    indent: &str,
    diff: &TextDiff,
    old: Option<&Value>,
    new: Option<&Value>,
) {
    let mut body = String::new();
    match diff {
        TextDiff::Inline => return,
        TextDiff::Lines(_) => pieces_text(&mut body, "", diff),
        TextDiff::Words(_) => {
            let line = |v: Option<&Value>| match v {
                Some(Value::String(s)) => clean(s),
                Some(v) => compact(v, usize::MAX),
                None => String::new(),
            };
            let _ = writeln!(body, "- {}\n+ {}", line(old), line(new));
        }
    }
    let fence = "`".repeat(longest_run(&body, '`').max(2) + 1);
    let _ = writeln!(out, "\n{indent}{fence}diff");
    for l in body.lines() {
        let _ = writeln!(out, "{indent}{l}");
    }
    let _ = writeln!(out, "{indent}{fence}\n");
}

/// An inline code span that no backtick in `s` can close; newlines become spaces.
fn code(s: &str) -> String {
    let s = clean(s).replace(['\n', '\r', '\t'], " ");
    let fence = "`".repeat(longest_run(&s, '`') + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for x in s.chars() {
        run = if x == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}
