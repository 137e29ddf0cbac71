//! Renderings of a [`TrajectoryDiff`]: plain text (no colour; a console may add it) and
//! JSON here, Markdown for a pull-request comment in `markdown`.
//!
//! Text that came from a recording is cleaned of control characters (a cassette from an
//! untrusted branch must not drive the terminal) and, in Markdown, can neither break out
//! of a code span or fence nor become HTML.

use std::fmt::Write as _;

use serde_json::Value;

use super::changes::{
    CallAt, Did, PathChange, Position, Presence, Told, ToldChange, TrajectoryDiff, Verdict,
};
use super::textdiff::{Tag, TextDiff};

/// Longest value shown inline in text, in characters.
const TEXT_VALUE: usize = 160;

/// The diff as plain text, ending with a newline. Sections "what the agent did" (per
/// turn) and "what the agent was told", each change tagged `[asserted]` or
/// `[incidental]`, then the verdict line.
pub fn render_text(d: &TrajectoryDiff) -> String {
    let mut out = String::new();
    if let (Some(a), Some(b)) = (&d.old_name, &d.new_name) {
        let _ = writeln!(out, "old: {}\nnew: {}\n", clean(a), clean(b));
    }
    if d.verdict == Verdict::Identical {
        out.push_str("no change in what the agent did or was told\n");
    }
    if !d.turns.is_empty() {
        out.push_str("what the agent did\n");
        for t in &d.turns {
            let _ = writeln!(out, "  turn {}{}", t.turn + 1, presence(t.presence));
            for c in &t.changes {
                did_text(&mut out, c);
            }
        }
    }
    if !d.told.is_empty() {
        if !d.turns.is_empty() {
            out.push('\n');
        }
        out.push_str("what the agent was told\n");
        for c in &d.told {
            told_text(&mut out, c);
        }
    }
    if d.verdict != Verdict::Identical {
        out.push('\n');
    }
    let _ = writeln!(out, "verdict: {}", verdict_line(d));
    out
}

pub(super) fn presence(p: Presence) -> &'static str {
    match p {
        Presence::Both => "",
        Presence::Added => " (new turn)",
        Presence::Removed => " (turn no longer made)",
    }
}

fn verdict_line(d: &TrajectoryDiff) -> String {
    let mut s = match (d.verdict, d.assertions_held) {
        (Verdict::Regression, Some(true)) => {
            "asserted values changed and every assertion still holds".to_owned()
        }
        (v, _) => v.as_str().to_owned(),
    };
    if d.verdict == Verdict::Identical {
        return s;
    }
    let changes = if d.asserted == 1 { "change" } else { "changes" };
    let _ = write!(
        s,
        " ({} asserted {changes}, {} incidental",
        d.asserted, d.incidental
    );
    match (&d.case, d.everything_asserted) {
        (Some(case), _) => {
            let _ = write!(s, "; spec case \"{}\"", clean(case));
        }
        (None, true) => {
            s.push_str("; no spec: every change in what the agent did counts as asserted")
        }
        (None, false) => {}
    }
    s.push(')');
    s
}

fn tag(asserted: bool) -> &'static str {
    if asserted {
        "[asserted]"
    } else {
        "[incidental]"
    }
}

/// Compact JSON on one line, cut at `max` characters.
pub(super) fn compact(v: &Value, max: usize) -> String {
    cut(&clean(&v.to_string()), max)
}

fn opt_value(v: Option<&Value>, max: usize) -> String {
    v.map_or_else(|| "<absent>".to_owned(), |v| compact(v, max))
}

fn opt_reply(v: Option<&str>, max: usize) -> String {
    v.map_or_else(
        || "(none)".to_owned(),
        |s| compact(&Value::String(s.to_owned()), max),
    )
}

/// "before `b`" / "after `a`" / "as the only call", preferring the call that follows.
pub(super) fn place(p: &Position, quote: fn(&str) -> String) -> String {
    match (&p.before, &p.after) {
        (Some(b), _) => format!("before {}", quote(b)),
        (None, Some(a)) => format!("after {}", quote(a)),
        (None, None) => "as the only call".to_owned(),
    }
}

fn did_text(out: &mut String, c: &Did) {
    const I: &str = "    ";
    match c {
        Did::CallAdded {
            name,
            arguments,
            at,
            asserted,
        } => {
            let _ = writeln!(
                out,
                "{I}+ now also calls {} {} {}  {}",
                clean(name),
                compact(arguments, TEXT_VALUE),
                place(at, clean),
                tag(*asserted)
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
                "{I}- no longer calls {} {} (was {})  {}",
                clean(name),
                compact(arguments, TEXT_VALUE),
                place(at, clean),
                tag(*asserted)
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
                "{I}↕ {} {} moved: now {}, was {}  {}",
                clean(name),
                compact(arguments, TEXT_VALUE),
                place(now, clean),
                place(was, clean),
                tag(*asserted)
            );
        }
        Did::ArgumentsChanged {
            name, at, changes, ..
        } => {
            let _ = writeln!(
                out,
                "{I}~ {} (tool call {}): arguments changed",
                clean(name),
                at.index + 1
            );
            for p in changes {
                path_text(out, p);
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
                    "{I}reply: {} → {}  {}",
                    opt_reply(old.as_deref(), TEXT_VALUE),
                    opt_reply(new.as_deref(), TEXT_VALUE),
                    tag(*asserted)
                );
            } else {
                let _ = writeln!(out, "{I}reply changed  {}", tag(*asserted));
                pieces_text(out, "        ", diff);
            }
        }
        Did::ExecutionChanged {
            name,
            arguments,
            at,
            old,
            new,
            asserted,
        } => {
            let _ = writeln!(
                out,
                "{I}⇢ {} {} (tool call {}): {} → {}  {}",
                clean(name),
                compact(arguments, TEXT_VALUE),
                at.index + 1,
                clean(old),
                clean(new),
                tag(*asserted)
            );
        }
        Did::ModelCalls { old, new, asserted } => {
            let _ = writeln!(out, "{I}model calls: {old} → {new}  {}", tag(*asserted));
        }
    }
}

fn path_text(out: &mut String, p: &PathChange) {
    let path = if p.path.is_empty() {
        "(all arguments)"
    } else {
        &p.path
    };
    if p.diff == TextDiff::Inline {
        let _ = writeln!(
            out,
            "        {}: {} → {}  {}",
            clean(path),
            opt_value(p.old.as_ref(), TEXT_VALUE),
            opt_value(p.new.as_ref(), TEXT_VALUE),
            tag(p.asserted)
        );
    } else {
        let _ = writeln!(out, "        {}:  {}", clean(path), tag(p.asserted));
        pieces_text(out, "          ", &p.diff);
    }
}

/// The pieces of a line or word diff, each line indented by `indent`.
pub(super) fn pieces_text(out: &mut String, indent: &str, diff: &TextDiff) {
    match diff {
        TextDiff::Inline => {}
        TextDiff::Lines(lines) => {
            for l in lines {
                let line = match l.tag {
                    Tag::Equal => format!("  {}", clean(&l.text)),
                    Tag::Delete => format!("- {}", clean(&l.text)),
                    Tag::Insert => format!("+ {}", clean(&l.text)),
                    Tag::Elided => format!("  ⋯ {}", unchanged(&l.text)),
                };
                let _ = writeln!(out, "{indent}{}", line.trim_end());
            }
        }
        TextDiff::Words(words) => {
            let mut line = String::new();
            for w in words {
                match w.tag {
                    Tag::Delete => {
                        let _ = write!(line, "[-{}-]", clean(&w.text));
                    }
                    Tag::Insert => {
                        let _ = write!(line, "{{+{}+}}", clean(&w.text));
                    }
                    _ => line.push_str(&clean(&w.text)),
                }
            }
            let _ = writeln!(out, "{indent}{line}");
        }
    }
}

fn unchanged(count: &str) -> String {
    if count == "1" {
        "1 unchanged line".to_owned()
    } else {
        format!("{count} unchanged lines")
    }
}

/// Where a told change was seen: `in every model call`, `in turn 2`, or
/// `in turn 1 (model calls 1, 2), turn 3 (model call 1)`.
pub(super) fn location(c: &ToldChange) -> String {
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

fn told_text(out: &mut String, c: &ToldChange) {
    const I: &str = "  ";
    let (head, diff): (String, Option<&TextDiff>) = match &c.change {
        Told::System { diff, .. } => ("system prompt changed".into(), Some(diff)),
        Told::UserMessage { old, new, diff } => match diff {
            TextDiff::Inline => (
                format!(
                    "user message: {} → {}",
                    opt_reply(old.as_deref(), TEXT_VALUE),
                    opt_reply(new.as_deref(), TEXT_VALUE)
                ),
                None,
            ),
            d => ("user message changed".into(), Some(d)),
        },
        Told::ToolAdded { name, diff, .. } => {
            (format!("+ tool {} offered", clean(name)), Some(diff))
        }
        Told::ToolRemoved { name, .. } => {
            (format!("- tool {} no longer offered", clean(name)), None)
        }
        Told::ToolChanged { name, diff } => (
            format!("tool {} definition changed", clean(name)),
            Some(diff),
        ),
        Told::Model { old, new } => (format!("model: {} → {}", clean(old), clean(new)), None),
        Told::Param {
            name,
            old,
            new,
            diff,
        } => match diff {
            TextDiff::Inline => (
                format!(
                    "{}: {} → {}",
                    clean(name),
                    opt_value(old.as_ref(), TEXT_VALUE),
                    opt_value(new.as_ref(), TEXT_VALUE)
                ),
                None,
            ),
            d => (format!("{} changed", clean(name)), Some(d)),
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
                    clean(tool),
                    compact(arguments, TEXT_VALUE),
                    compact(old, TEXT_VALUE),
                    compact(new, TEXT_VALUE)
                ),
                None,
            ),
            d => (
                format!(
                    "result of {} {} changed",
                    clean(tool),
                    compact(arguments, TEXT_VALUE)
                ),
                Some(d),
            ),
        },
    };
    let _ = writeln!(out, "{I}{head}, {}  {}", location(c), tag(c.asserted));
    if let Some(d) = diff {
        pieces_text(out, "      ", d);
    }
}

/// The diff as pretty JSON, ending with a newline. Its shape is [`TrajectoryDiff`]'s
/// serde form, documented in `docs/trajectory-diff.md`.
pub fn render_json(d: &TrajectoryDiff) -> String {
    // Serializing these types cannot fail: every map key is a string.
    let mut s = serde_json::to_string_pretty(d).unwrap_or_default();
    s.push('\n');
    s
}

/// At most `max` characters, with `…` when cut.
pub(crate) fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((at, _)) => format!("{}…", &s[..at]),
    }
}

/// Text that came from the program, the model or a cassette, made safe to print: escape
/// sequences removed (a cassette from an untrusted branch must not drive the terminal, and
/// a stderr tail's colours are noise in a file), other control characters except newline
/// and tab dropped. Every renderer, the reports' included, uses this one.
pub(crate) fn clean(s: &str) -> String {
    anstream::adapter::strip_str(s)
        .to_string()
        .chars()
        .filter(|&c| !c.is_control() || c == '\n' || c == '\t')
        .collect()
}
