//! The trajectory diff as GitHub-flavoured Markdown, ready to paste as a pull-request
//! comment: a headline with the verdict, then the changes as lists, line diffs in
//! ```diff fences. Recorded text sits in code spans and fences it cannot close.

use std::fmt::Write as _;

use serde_json::Value;

use super::changes::{TrajectoryDiff, Verdict};
use super::lines::{self, presence, Block, Icon, Line, Markup};
use super::render::{clean, compact, pieces_text};
use super::textdiff::TextDiff;

/// Longest value shown inline, in characters (a PR comment has a size limit).
const MD_VALUE: usize = 200;

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
            for l in t.changes.iter().flat_map(|c| lines::did(c, &Markdown)) {
                line_md(&mut out, &l);
            }
            blank_line(&mut out);
        }
    }
    if !d.told.is_empty() {
        out.push_str("#### What the agent was told\n\n");
        for c in &d.told {
            line_md(&mut out, &lines::told(c, &Markdown));
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

struct Markdown;

impl Markup for Markdown {
    fn name(&self, s: &str) -> String {
        code(s)
    }
    fn value(&self, v: Option<&Value>) -> String {
        v.map_or_else(|| "*absent*".to_owned(), |v| code(&compact(v, MD_VALUE)))
    }
    fn text(&self, s: Option<&str>) -> String {
        s.map_or_else(
            || "*none*".to_owned(),
            |s| code(&compact(&Value::String(s.to_owned()), MD_VALUE)),
        )
    }
    fn icon(&self, icon: Icon) -> &'static str {
        match icon {
            Icon::Added => "➕",
            Icon::Removed => "➖",
            Icon::Moved => "🔀",
            Icon::Edited => "✏️",
            Icon::Reply => "💬",
            Icon::Execution => "⇢",
            Icon::ModelCalls => "🔁",
        }
    }
}

/// A list item (nested by the line's depth), its tag after a dash, its diff fenced below.
fn line_md(out: &mut String, l: &Line) {
    let indent = "  ".repeat(l.depth);
    let _ = write!(out, "{indent}- {}", l.words);
    if let Some(a) = l.asserted {
        let _ = write!(out, " — {}", md_tag(a));
    }
    out.push('\n');
    if let Some(b) = &l.diff {
        fenced_diff(out, &format!("{indent}  "), b);
    }
}

/// A ```diff fence (GitHub colours its `-`/`+` lines), inside a list item at `indent`.
/// A word diff is shown as the old and the new line whole.
fn fenced_diff(out: &mut String, indent: &str, b: &Block) {
    let (diff, old, new) = (&b.diff, b.old.as_ref(), b.new.as_ref());
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
