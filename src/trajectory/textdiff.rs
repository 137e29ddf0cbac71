//! Text diffs of changed values, as data: a short value is shown `old → new`, multi-line
//! text as a line diff with context, a long single line as a word diff, and text that is
//! JSON (a reply the model wrote as an object) as a line diff of its pretty form, one
//! member a line, so its own braces and quotes are never mixed with the diff's marks.
//! Computed with `similar`; the renderers only lay the pieces out.

use serde::Serialize;
use serde_json::Value;
use similar::{ChangeTag, TextDiff as Similar};

/// Longest one-line value shown as `old → new`, in characters; longer ones get a word diff.
const INLINE_MAX: usize = 60;
/// Unchanged lines kept around each changed run of a line diff.
const CONTEXT: usize = 2;

/// How a changed value is shown.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "style", content = "parts", rename_all = "snake_case")]
pub enum TextDiff {
    /// Short values on one line: `old → new`, from the change's own `old` and `new`.
    Inline,
    /// A line diff: changed lines with [`CONTEXT`] unchanged lines around them.
    Lines(Vec<Piece>),
    /// A word diff of a long line: the whole text, changed words marked.
    Words(Vec<Piece>),
}

/// A line of a line diff, or a run of words of a word diff.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Piece {
    pub tag: Tag,
    /// The text, without its line ending; for [`Tag::Elided`], how many lines were left out.
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tag {
    Equal,
    Delete,
    Insert,
    /// Unchanged lines left out between hunks (`text` is their count).
    Elided,
}

/// The diff of two texts, in the style their shape calls for.
pub fn text(old: &str, new: &str) -> TextDiff {
    if let (Some(a), Some(b)) = (json_text(old), json_text(new)) {
        if a != b {
            return lines(&pretty(&a), &pretty(&b));
        }
    }
    if old.contains('\n') || new.contains('\n') {
        lines(old, new)
    } else if old.chars().count() <= INLINE_MAX && new.chars().count() <= INLINE_MAX {
        TextDiff::Inline
    } else {
        words(old, new)
    }
}

/// Text that is a JSON object or array, parsed.
fn json_text(text: &str) -> Option<Value> {
    let trimmed = text.trim_start();
    if !trimmed.starts_with(['{', '[']) {
        return None;
    }
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(|v| v.is_object() || v.is_array())
}

/// The diff of two optional texts (absent, or not text at all, is shown inline).
pub fn opt_text(old: Option<&str>, new: Option<&str>) -> TextDiff {
    match (old, new) {
        (Some(a), Some(b)) => text(a, b),
        _ => TextDiff::Inline,
    }
}

/// The diff of two JSON values: strings as text, objects and arrays as a line diff of
/// their pretty form when either is long, anything else inline.
pub fn value(old: Option<&Value>, new: Option<&Value>) -> TextDiff {
    match (old, new) {
        (Some(Value::String(a)), Some(Value::String(b))) => text(a, b),
        (Some(a), Some(b)) if is_long(a) || is_long(b) => lines(&pretty(a), &pretty(b)),
        _ => TextDiff::Inline,
    }
}

/// An object or array whose compact form would not fit on a line.
fn is_long(v: &Value) -> bool {
    (v.is_object() || v.is_array()) && v.to_string().chars().count() > INLINE_MAX
}

/// Pretty JSON (two-space indent, keys sorted as `serde_json` keeps them).
pub fn pretty(v: &Value) -> String {
    // Serializing a `Value` cannot fail: its map keys are strings.
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// A line diff with [`CONTEXT`] lines of context; runs of unchanged lines between hunks,
/// before the first and after the last, are one [`Tag::Elided`] piece each.
pub fn lines(old: &str, new: &str) -> TextDiff {
    let diff = Similar::from_lines(old, new);
    let total = diff.old_slices().len();
    let mut out = Vec::new();
    let mut next_old = 0; // first old line not yet shown or elided
    for group in diff.grouped_ops(CONTEXT) {
        let Some(first) = group.first() else { continue };
        let start = first.old_range().start;
        if start > next_old {
            out.push(elided(start - next_old));
        }
        for op in &group {
            for change in diff.iter_changes(op) {
                out.push(Piece {
                    tag: tag(change.tag()),
                    text: change.value().trim_end_matches(['\n', '\r']).to_owned(),
                });
            }
        }
        next_old = group.last().map_or(start, |op| op.old_range().end);
    }
    if total > next_old && !out.is_empty() {
        out.push(elided(total - next_old));
    }
    TextDiff::Lines(out)
}

fn elided(n: usize) -> Piece {
    Piece {
        tag: Tag::Elided,
        text: n.to_string(),
    }
}

/// A word diff: consecutive words with the same tag merged into one piece.
fn words(old: &str, new: &str) -> TextDiff {
    let diff = Similar::from_words(old, new);
    let mut out: Vec<Piece> = Vec::new();
    for change in diff.iter_all_changes() {
        let t = tag(change.tag());
        match out.last_mut() {
            Some(last) if last.tag == t => last.text.push_str(change.value()),
            _ => out.push(Piece {
                tag: t,
                text: change.value().to_owned(),
            }),
        }
    }
    TextDiff::Words(out)
}

fn tag(t: ChangeTag) -> Tag {
    match t {
        ChangeTag::Equal => Tag::Equal,
        ChangeTag::Delete => Tag::Delete,
        ChangeTag::Insert => Tag::Insert,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn show(d: &TextDiff) -> String {
        let pieces = match d {
            TextDiff::Inline => return "inline".into(),
            TextDiff::Lines(p) | TextDiff::Words(p) => p,
        };
        pieces
            .iter()
            .map(|p| match p.tag {
                Tag::Equal => format!(" {}", p.text),
                Tag::Delete => format!("-{}", p.text),
                Tag::Insert => format!("+{}", p.text),
                Tag::Elided => format!("…{}", p.text),
            })
            .collect::<Vec<_>>()
            .join("|")
    }

    #[test]
    fn styles_follow_the_shape_of_the_text() {
        assert_eq!(text("Paris", "Lyon"), TextDiff::Inline);
        let long_a = "The weather in Paris is sunny with a high of 18 degrees and light wind.";
        let long_b = "The weather in Paris is cloudy with a high of 18 degrees and light wind.";
        assert_eq!(
            show(&text(long_a, long_b)),
            " The weather in Paris is |-sunny|+cloudy|  with a high of 18 degrees and light wind."
        );
        let a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let b = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        assert_eq!(show(&text(a, b)), "…2| 3| 4|-5|+five| 6| 7|…2");
        assert_eq!(show(&lines("a\n", "a\nb\n")), " a|+b");
        assert_eq!(value(Some(&json!(1)), Some(&json!(2))), TextDiff::Inline);
        // A reply that is JSON: one member a line, whatever its length.
        let was = r#"{"city": "Paris", "sky": "cloudy"}"#;
        let now = r#"{"city": "Paris", "sky": "sunny"}"#;
        assert_eq!(
            show(&text(was, now)),
            " {|   \"city\": \"Paris\",|-  \"sky\": \"cloudy\"|+  \"sky\": \"sunny\"| }"
        );
        // JSON of the same value written another way is no change of structure: a word diff.
        let spaced =
            r#"{"city": "Paris",  "sky": "cloudy", "wind": "light", "pressure": "high", "x": 1}"#;
        let tight =
            r#"{"city": "Paris", "sky": "cloudy", "wind": "light", "pressure": "high", "x": 1}"#;
        assert!(matches!(text(spaced, tight), TextDiff::Words(_)));
        let big = json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}});
        assert!(matches!(
            value(Some(&big), Some(&json!({}))),
            TextDiff::Lines(_)
        ));
    }
}
