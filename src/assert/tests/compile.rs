//! Matcher compile errors: caught at load, located inside the expression, with a hint.

use super::json;
use crate::assert::{Matcher, MatcherError};

fn compile_error(expr: &str) -> MatcherError {
    match Matcher::compile(&json(expr)) {
        Ok(matcher) => panic!("{expr} compiled to {matcher}, expected an error"),
        Err(e) => e,
    }
}

#[test]
fn bad_regex_names_the_regex_and_its_path() {
    let e = compile_error(r#"{"city": {"regex": "[a"}}"#);
    assert_eq!(e.path, ["city", "regex"]);
    assert!(e.message.contains("regex `[a` does not compile"), "{e}");
    assert!(e.hint.is_some());
    assert!(
        e.to_string()
            .starts_with("invalid matcher at `city.regex`: regex `[a`"),
        "{e}"
    );

    let e = compile_error(r#"{"reply": {"any_of": [{"contains": "x"}, {"regex": "("}]}}"#);
    assert_eq!(e.path, ["reply", "any_of", "1", "regex"]);
}

#[test]
fn text_matchers_validate_the_same_way() {
    let e =
        Matcher::compile_text(&json(r#"{"not": {"regex": "(?<=a)b"}}"#)).expect_err("look-behind");
    assert_eq!(e.path, ["not", "regex"]);
}

#[test]
fn mixing_operators_and_fields_is_an_error() {
    let e = compile_error(r#"{"regex": "^P", "city": "Paris"}"#);
    assert!(
        e.message
            .contains("mixes operators (`regex`) with field keys (`city`)"),
        "{e}"
    );
    assert!(e.hint.as_deref().is_some_and(|h| h.contains("fields:")));
}

#[test]
fn misspelt_operators_are_caught() {
    for (expr, meant) in [
        (r#"{"regexp": "a"}"#, "regex"),
        (r#"{"startsWith": "a"}"#, "starts_with"),
        (r#"{"city": {"Contains": "x"}}"#, "contains"),
        (r#"{"anyOf": ["a"]}"#, "any_of"),
        (r#"{"exist": true}"#, "exists"),
    ] {
        let e = compile_error(expr);
        assert!(
            e.message.contains(&format!("did you mean `{meant}`")),
            "{expr}: {e}"
        );
    }
}

#[test]
fn ordinary_field_names_near_short_operators_are_fields() {
    // One edit from `lt`, `not`, `gte`, `fields`: still plain field names.
    let expr = json(r#"{"lat": 1, "note": "x", "get": 2, "field": "y", "id": 3}"#);
    Matcher::compile(&expr).expect("plain fields");
    // And `fields:` accepts what looks like a misspelt operator.
    Matcher::compile(&json(r#"{"fields": {"regexp": "a"}}"#)).expect("escaped");
}

#[test]
fn operand_types_are_checked() {
    for (expr, path) in [
        (r#"{"gt": "5"}"#, vec!["gt"]),
        (r#"{"n": {"range": [5, 1]}}"#, vec!["n", "range"]),
        (r#"{"range": [1]}"#, vec!["range"]),
        (r#"{"range": [1, "9"]}"#, vec!["range"]),
        (r#"{"type": "str"}"#, vec!["type"]),
        (r#"{"exists": "yes"}"#, vec!["exists"]),
        (r#"{"absent": 1}"#, vec!["absent"]),
        (r#"{"one_of": []}"#, vec!["one_of"]),
        (r#"{"any_of": {"a": 1}}"#, vec!["any_of"]),
        (r#"{"all_of": []}"#, vec!["all_of"]),
        (r#"{"schema_valid": false}"#, vec!["schema_valid"]),
        (r#"{"fields": "x"}"#, vec!["fields"]),
        (r#"{"starts_with": 3}"#, vec!["starts_with"]),
        (r#"{"icontains": null}"#, vec!["icontains"]),
        (r#"{"not": {"gt": true}}"#, vec!["not", "gt"]),
        (r#"[{"a": {"lte": []}}]"#, vec!["0", "a", "lte"]),
    ] {
        assert_eq!(compile_error(expr).path, path, "{expr}");
    }
}

#[test]
fn malformed_paths_are_errors() {
    for expr in [
        r#"{"a..b": 1}"#,
        r#"{"a.": 1}"#,
        r#"{".a": 1}"#,
        r#"{"a\\x": 1}"#,
    ] {
        let e = compile_error(expr);
        assert!(e.message.starts_with("path"), "{expr}: {e}");
    }
}

/// The wording users read, with hints.
#[test]
fn compile_error_messages() {
    let lines: Vec<String> = [
        r#"{"city": {"regex": "[a"}}"#,
        r#"{"regex": "^P", "city": "Paris"}"#,
        r#"{"regexp": "a"}"#,
        r#"{"type": "bug"}"#,
        r#"{"days": {"range": [14, 1]}}"#,
        r#"{"days": {"gt": "5"}}"#,
        r#"{"schema_valid": false}"#,
        r#"{"a..b": 1}"#,
    ]
    .iter()
    .map(|expr| {
        let e = compile_error(expr);
        format!(
            "{expr}\n  {e}\n  hint: {}",
            e.hint.as_deref().unwrap_or("-")
        )
    })
    .collect();
    insta::assert_snapshot!(lines.join("\n"));
}
