//! JSON value helpers shared by the matchers and the call checks: numeric comparison that
//! treats `1` and `1.0` as the same number, and the short, bounded renderings used in reports.

use std::cmp::Ordering;

use serde_json::{Number, Value};

/// Longest rendering of a value in a report, in characters. Tool arguments and replies can be
/// arbitrarily large; a failure line must stay readable, and the run report keeps the full value.
const MAX_RENDER_CHARS: usize = 200;

/// What a report prints for a key that is not there, as opposed to a present `null`.
pub(crate) const ABSENT: &str = "<absent>";

/// A JSON number in the form that compares exactly where it can: every `i64` and `u64` fits in
/// an `i128`, so integers never go through `f64` (which would make 2^53 + 1 equal 2^53).
enum Num {
    Int(i128),
    Float(f64),
}

fn num(n: &Number) -> Num {
    if let Some(i) = n.as_i64() {
        Num::Int(i128::from(i))
    } else if let Some(u) = n.as_u64() {
        Num::Int(i128::from(u))
    } else {
        // Without `arbitrary_precision` every other number is an f64; NaN never comes out of a
        // JSON parser, and it compares as unordered, which reads as "not equal" below.
        Num::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// Orders two JSON numbers by value, regardless of integer or float form.
pub(crate) fn cmp_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    match (num(a), num(b)) {
        (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
        // Precision loss here only affects integers beyond 2^53 compared with floats.
        (Num::Int(x), Num::Float(y)) => (x as f64).partial_cmp(&y),
        (Num::Float(x), Num::Int(y)) => x.partial_cmp(&(y as f64)),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y),
    }
}

/// Deep equality with numbers compared by value (`1 == 1.0`); booleans are never numbers.
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => cmp_numbers(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Whether a number is an integer in the JSON Schema sense: any number with a zero fractional
/// part, so `2.0` is an integer. YAML and JSON writers disagree on `2` vs `2.0`; a test should not.
pub(crate) fn is_integer(n: &Number) -> bool {
    match num(n) {
        Num::Int(_) => true,
        Num::Float(f) => f.is_finite() && f.fract() == 0.0,
    }
}

/// Compact JSON, cut at [`MAX_RENDER_CHARS`] with an ellipsis.
pub(crate) fn render(value: &Value) -> String {
    truncate(value.to_string())
}

/// Like [`render`], with `<absent>` for a missing key.
pub(crate) fn render_opt(value: Option<&Value>) -> String {
    value.map_or_else(|| ABSENT.to_owned(), render)
}

pub(crate) fn truncate(text: String) -> String {
    match text.char_indices().nth(MAX_RENDER_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Joins path segments with `.`, escaping `.` and `\` inside a segment with `\`, so a printed
/// path can be pasted back into a spec as a path key.
pub(crate) fn join_path(segments: &[String]) -> String {
    let mut out = String::new();
    for (i, segment) in segments.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        for c in segment.chars() {
            if c == '.' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out
}

/// The JSON pointer (RFC 6901) of a segment path, as the schema validator reports locations.
pub(crate) fn to_pointer(segments: &[String]) -> String {
    segments
        .iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// The segments of a JSON pointer; the inverse of [`to_pointer`].
pub(crate) fn from_pointer(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_compare_exactly_beyond_f64_precision() {
        assert!(!json_eq(
            &json!(9_007_199_254_740_993_u64),
            &json!(9_007_199_254_740_992_u64)
        ));
        assert!(json_eq(&json!(u64::MAX), &json!(u64::MAX)));
        assert!(!json_eq(&json!(-1), &json!(u64::MAX)));
    }

    #[test]
    fn render_truncates_on_a_char_boundary() {
        let long = "é".repeat(MAX_RENDER_CHARS + 10);
        let shown = render(&json!(long));
        assert!(shown.ends_with('…'));
        assert_eq!(shown.chars().count(), MAX_RENDER_CHARS + 1);
    }

    #[test]
    fn paths_escape_dots_and_round_trip_pointers() {
        let segs = vec!["a.b".to_owned(), "0".to_owned(), "x/y~z".to_owned()];
        assert_eq!(join_path(&segs), r"a\.b.0.x/y~z");
        assert_eq!(from_pointer(&to_pointer(&segs)), segs);
        assert_eq!(to_pointer(&[]), "");
    }
}
