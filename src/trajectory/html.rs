//! The trajectory diff as HTML: the body of a page (the shell, its style and its
//! Content-Security-Policy are the report's, `report::html`). The verdict on top, then
//! what the agent did per turn and what it was told, each change tagged asserted or
//! incidental, a changed text shown old and new side by side with the changed lines or
//! words marked. Every recorded value is escaped text ([`esc`], the one escaper of every
//! HTML agentproxy writes).

use std::fmt::Write as _;

use serde_json::Value;

use super::changes::{TrajectoryDiff, Verdict};
use super::lines::{self, presence, Icon, Line, Markup};
use super::render::{compact, verdict_line};
use super::sides::Cell;
use super::textdiff::{Piece, Tag, TextDiff};

/// Longest value shown inline, in characters.
const HTML_VALUE: usize = 400;

/// Text made safe for an HTML text node or a quoted attribute.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The diff as the body of an HTML page.
pub fn render_html_body(d: &TrajectoryDiff) -> String {
    let mut out = String::from("<header>\n");
    let _ = writeln!(
        out,
        "<h1>Trajectory diff: <span class=\"verdict {0}\">{0}</span></h1>",
        d.verdict.as_str()
    );
    if let (Some(a), Some(b)) = (&d.old_name, &d.new_name) {
        let _ = writeln!(
            out,
            "<div class=\"sub\"><code>{}</code> → <code>{}</code></div>",
            esc(a),
            esc(b)
        );
    }
    let _ = writeln!(out, "<div class=\"sub\">{}</div>", esc(&verdict_line(d)));
    if d.verdict == Verdict::Identical {
        out.push_str("<p>No change in what the agent did or was told.</p>\n");
    }
    out.push_str("</header>\n<main>\n");
    if !d.turns.is_empty() {
        out.push_str("<h2>What the agent did</h2>\n");
        for t in &d.turns {
            let _ = writeln!(
                out,
                "<h3>Turn {}{}</h3>\n<ul class=\"changes\">",
                t.turn + 1,
                esc(presence(t.presence))
            );
            for l in t.changes.iter().flat_map(|c| lines::did(c, &Html)) {
                line(&mut out, &l);
            }
            out.push_str("</ul>\n");
        }
    }
    if !d.told.is_empty() {
        out.push_str("<h2>What the agent was told</h2>\n<ul class=\"changes\">\n");
        for c in &d.told {
            line(&mut out, &lines::told(c, &Html));
        }
        out.push_str("</ul>\n");
    }
    if d.sides.iter().any(|t| !t.rows.is_empty()) {
        steps(&mut out, d);
    }
    out.push_str("</main>\n");
    out
}

/// Both recordings' steps turn by turn in two columns, aligned (see [`super::sides`]):
/// an unchanged step spans its row, a changed one is marked on both sides, an added or
/// removed one stands alone on its side.
fn steps(out: &mut String, d: &TrajectoryDiff) {
    let (old, new) = (
        d.old_name.as_deref().unwrap_or("old"),
        d.new_name.as_deref().unwrap_or("new"),
    );
    out.push_str("<h2>Side by side</h2>\n");
    for t in d.sides.iter().filter(|t| !t.rows.is_empty()) {
        let _ = writeln!(
            out,
            "<h3>Turn {}</h3>\n<table class=\"sides\"><tr><th>{}</th><th>{}</th></tr>",
            t.turn + 1,
            esc(old),
            esc(new)
        );
        for r in &t.rows {
            if r.same() {
                let _ = writeln!(
                    out,
                    "<tr class=\"same\"><td colspan=\"2\">{}</td></tr>",
                    cell(r.old.as_ref())
                );
                continue;
            }
            let class = match (&r.old, &r.new) {
                (Some(_), None) => "removed",
                (None, Some(_)) => "added",
                _ => "changed",
            };
            let _ = writeln!(
                out,
                "<tr class=\"{class}\"><td>{}</td><td>{}</td></tr>",
                cell(r.old.as_ref()),
                cell(r.new.as_ref())
            );
        }
        out.push_str("</table>\n");
    }
}

/// One step as markup: a call with its arguments and the result it got, or the reply.
fn cell(c: Option<&Cell>) -> String {
    match c {
        None => String::new(),
        Some(Cell::Call {
            name,
            arguments,
            result,
        }) => {
            let result = result.as_ref().map_or_else(
                || "<div class=\"result\"><em>no result</em></div>".to_owned(),
                |r| format!("<div class=\"result\">→ {}</div>", Html.value(Some(r))),
            );
            format!(
                "call {} {}{result}",
                Html.name(name),
                Html.value(Some(arguments))
            )
        }
        Some(Cell::Reply(text)) => format!("reply {}", Html.text(Some(text))),
    }
}

struct Html;

impl Markup for Html {
    fn name(&self, s: &str) -> String {
        format!("<code>{}</code>", esc(s))
    }
    fn value(&self, v: Option<&Value>) -> String {
        v.map_or_else(
            || "<em>absent</em>".to_owned(),
            |v| format!("<code>{}</code>", esc(&compact(v, HTML_VALUE))),
        )
    }
    fn text(&self, s: Option<&str>) -> String {
        s.map_or_else(
            || "<em>none</em>".to_owned(),
            |s| {
                format!(
                    "<code>{}</code>",
                    esc(&compact(&Value::String(s.to_owned()), HTML_VALUE))
                )
            },
        )
    }
    fn icon(&self, icon: Icon) -> &'static str {
        match icon {
            // Symbols every text font has (an emoji font is not a given).
            Icon::Added => "+",
            Icon::Removed => "−",
            Icon::Moved => "↕",
            Icon::Edited => "✎",
            Icon::Reply => "»",
            Icon::Execution => "⇢",
            Icon::ModelCalls => "↻",
        }
    }
}

/// A change as a list item (its words are markup already: the names and values in it
/// went through [`Html`]), its tag, and its text diff side by side.
fn line(out: &mut String, l: &Line) {
    let tag = match l.asserted {
        Some(true) => "asserted",
        Some(false) => "incidental",
        None => "heading",
    };
    let depth = if l.depth > 0 { " path" } else { "" };
    let _ = write!(out, "<li class=\"{tag}{depth}\">{}", l.words);
    if let Some(a) = l.asserted {
        let _ = write!(
            out,
            " <span class=\"tag\">{}</span>",
            if a { "asserted" } else { "incidental" }
        );
    }
    if let Some(b) = &l.diff {
        side_by_side(out, &b.diff, ("old", "new"));
    }
    out.push_str("</li>\n");
}

/// Old on the left, new on the right, under their `titles` (text): a line diff row by row
/// (a run of deleted lines beside the run of inserted lines that replaced it), a word
/// diff as the two texts with the changed words marked.
pub fn side_by_side(out: &mut String, diff: &TextDiff, titles: (&str, &str)) {
    let _ = writeln!(
        out,
        "<table class=\"diff\"><tr><th>{}</th><th>{}</th></tr>",
        esc(titles.0),
        esc(titles.1)
    );
    match diff {
        TextDiff::Inline => {}
        TextDiff::Lines(pieces) => {
            let mut i = 0;
            while i < pieces.len() {
                let p = &pieces[i];
                match p.tag {
                    Tag::Equal => row(out, Some(("", &p.text)), Some(("", &p.text))),
                    Tag::Elided => {
                        let _ = writeln!(
                            out,
                            "<tr><td colspan=\"2\" class=\"cut\">⋯ {} unchanged lines</td></tr>",
                            esc(&p.text)
                        );
                    }
                    Tag::Delete | Tag::Insert => {
                        let run: Vec<&Piece> = pieces[i..]
                            .iter()
                            .take_while(|p| matches!(p.tag, Tag::Delete | Tag::Insert))
                            .collect();
                        let dels: Vec<&Piece> = run
                            .iter()
                            .copied()
                            .filter(|p| p.tag == Tag::Delete)
                            .collect();
                        let ins: Vec<&Piece> = run
                            .iter()
                            .copied()
                            .filter(|p| p.tag == Tag::Insert)
                            .collect();
                        for k in 0..dels.len().max(ins.len()) {
                            row(
                                out,
                                dels.get(k).map(|p| ("del", p.text.as_str())),
                                ins.get(k).map(|p| ("ins", p.text.as_str())),
                            );
                        }
                        i += run.len();
                        continue;
                    }
                }
                i += 1;
            }
        }
        TextDiff::Words(words) => {
            let side = |keep: Tag, mark: &str| {
                let mut s = String::new();
                for w in words
                    .iter()
                    .filter(|w| w.tag == Tag::Equal || w.tag == keep)
                {
                    match w.tag {
                        Tag::Equal => s.push_str(&esc(&w.text)),
                        _ => {
                            let _ = write!(s, "<{mark}>{}</{mark}>", esc(&w.text));
                        }
                    }
                }
                s
            };
            let _ = writeln!(
                out,
                "<tr><td><pre>{}</pre></td><td><pre>{}</pre></td></tr>",
                side(Tag::Delete, "del"),
                side(Tag::Insert, "ins")
            );
        }
    }
    out.push_str("</table>\n");
}

/// A row of a line diff: each side a line (its class, its text) or empty.
fn row(out: &mut String, old: Option<(&str, &str)>, new: Option<(&str, &str)>) {
    let cell = |side: Option<(&str, &str)>| match side {
        Some((class, text)) => format!("<td class=\"{class}\"><pre>{}</pre></td>", esc(text)),
        None => "<td></td>".to_owned(),
    };
    let _ = writeln!(out, "<tr>{}{}</tr>", cell(old), cell(new));
}
