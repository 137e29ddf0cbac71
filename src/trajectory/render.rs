//! Renderings of a [`TrajectoryDiff`]: plain text (no colour; a console may add it) and
//! JSON here, Markdown for a pull-request comment in `markdown`.
//!
//! Text that came from a recording is cleaned of control characters (a cassette from an
//! untrusted branch must not drive the terminal) and, in Markdown, can neither break out
//! of a code span or fence nor become HTML.

use std::fmt::Write as _;

use serde_json::Value;

use super::changes::{TrajectoryDiff, Verdict};
use super::lines::{self, presence, Icon, Line, Markup};
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
            for l in t.changes.iter().flat_map(|c| lines::did(c, &Text)) {
                // A path's diff sits two columns in, a change's four.
                match l.depth {
                    0 => line_text(&mut out, "    ", "        ", &l),
                    _ => line_text(&mut out, "        ", "          ", &l),
                }
            }
        }
    }
    if !d.told.is_empty() {
        if !d.turns.is_empty() {
            out.push('\n');
        }
        out.push_str("what the agent was told\n");
        for c in &d.told {
            line_text(&mut out, "  ", "      ", &lines::told(c, &Text));
        }
    }
    if d.verdict != Verdict::Identical {
        out.push('\n');
    }
    let _ = writeln!(out, "verdict: {}", verdict_line(d));
    out
}

struct Text;

impl Markup for Text {
    fn name(&self, s: &str) -> String {
        clean(s)
    }
    fn value(&self, v: Option<&Value>) -> String {
        v.map_or_else(|| "<absent>".to_owned(), |v| compact(v, TEXT_VALUE))
    }
    fn text(&self, s: Option<&str>) -> String {
        s.map_or_else(
            || "(none)".to_owned(),
            |s| compact(&Value::String(s.to_owned()), TEXT_VALUE),
        )
    }
    fn icon(&self, icon: Icon) -> &'static str {
        match icon {
            Icon::Added => "+",
            Icon::Removed => "-",
            Icon::Moved => "↕",
            Icon::Edited => "~",
            Icon::Execution => "⇢",
            Icon::Reply | Icon::ModelCalls => "",
        }
    }
}

/// A line at `indent`, its tag after two spaces, its diff below at `under`.
fn line_text(out: &mut String, indent: &str, under: &str, l: &Line) {
    let _ = write!(out, "{indent}{}", l.words);
    if let Some(a) = l.asserted {
        let _ = write!(out, "  {}", tag(a));
    }
    out.push('\n');
    if let Some(b) = &l.diff {
        pieces_text(out, under, &b.diff);
    }
}

/// `regression (2 asserted changes, 1 incidental; spec case "x")`.
pub(super) fn verdict_line(d: &TrajectoryDiff) -> String {
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

/// The marks of a word diff: `[-deleted-]`, `{+inserted+}`.
const MARKS: [&str; 4] = ["[-", "-]", "{+", "+}"];

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
            // A text that holds the marks themselves could not be read: its old and new
            // line whole instead.
            let marked = words
                .iter()
                .any(|w| MARKS.iter().any(|m| w.text.contains(m)));
            if marked {
                let side = |skip: Tag| -> String {
                    let kept = words.iter().filter(|w| w.tag != skip);
                    clean(&kept.map(|w| w.text.as_str()).collect::<String>())
                };
                let _ = writeln!(out, "{indent}- {}", side(Tag::Insert));
                let _ = writeln!(out, "{indent}+ {}", side(Tag::Delete));
                return;
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trajectory::textdiff;

    #[test]
    fn a_word_diff_whose_text_holds_its_marks_shows_both_lines_whole() {
        let mut out = String::new();
        let plain = textdiff::text(
            "The weather in Paris is sunny with a high of 18 degrees and light wind today.",
            "The weather in Paris is cloudy with a high of 18 degrees and light wind today.",
        );
        pieces_text(&mut out, "", &plain);
        assert_eq!(
            out,
            "The weather in Paris is [-sunny-]{+cloudy+} with a high of 18 degrees and light wind today.\n"
        );
        let mut out = String::new();
        let marked = textdiff::text(
            "Use the list [-a, b-] then {+c+} as given, which is a fairly long line of text here.",
            "Use the list [-a, b-] then {+d+} as given, which is a fairly long line of text here.",
        );
        pieces_text(&mut out, "  ", &marked);
        assert_eq!(
            out,
            "  - Use the list [-a, b-] then {+c+} as given, which is a fairly long line of text here.\n  + Use the list [-a, b-] then {+d+} as given, which is a fairly long line of text here.\n"
        );
    }
}
