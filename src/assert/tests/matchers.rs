//! Matcher semantics: a pass/fail table over the grammar's edge cases, then the details of
//! mismatches (path, expected, actual) and their wording.

use serde_json::Value;

use super::json;
use crate::assert::{MatchContext, Matcher};

/// The tool schema every `schema_valid` row is checked against.
const SCHEMA: &str = r#"{
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"]
}"#;

const PAX: &str = r#"{"passengers": [{"name": "Ann"}, {"name": "Bob"}]}"#;
const PAX_EVE: &str = r#"{"passengers": [{"name": "Eve"}]}"#;

/// (matcher, actual value or `None` for an absent key, should it match?)
const VALUE_TABLE: &[(&str, Option<&str>, bool)] = &[
    // Numbers compare by value; booleans, strings and numbers never mix.
    ("1", Some("1.0"), true),
    ("1.0", Some("1"), true),
    ("-0.0", Some("0"), true),
    ("true", Some("1"), false),
    ("1", Some("true"), false),
    (r#""1""#, Some("1"), false),
    ("9007199254740993", Some("9007199254740992"), false),
    ("null", Some("null"), true),
    ("null", None, false),
    // Strings are exact; Unicode is compared as written.
    (r#""Zürich""#, Some(r#""Zürich""#), true),
    (r#""Zürich""#, Some(r#""Zurich""#), false),
    (r#""°C""#, Some(r#""°C ""#), false),
    (r#""18""#, Some(r#""It is 18""#), false),
    // Bare objects match partially, recursively.
    (
        r#"{"city": "Paris"}"#,
        Some(r#"{"city": "Paris", "units": "metric"}"#),
        true,
    ),
    (
        r#"{"city": "Paris"}"#,
        Some(r#"{"units": "metric"}"#),
        false,
    ),
    (
        r#"{"trip": {"from": "ZRH"}}"#,
        Some(r#"{"trip": {"from": "ZRH", "to": "CDG"}, "pax": 2}"#),
        true,
    ),
    (
        r#"{"trip": {"from": "ZRH"}}"#,
        Some(r#"{"trip": {"from": "GVA", "to": "CDG"}}"#),
        false,
    ),
    (r#"{"trip": {}}"#, Some(r#"{"trip": "ZRH"}"#), false),
    ("{}", Some(r#"{"any": 1}"#), true),
    ("{}", Some("[]"), false),
    (r#"{"temp": 18}"#, Some(r#"{"temp": 18.0}"#), true),
    (
        r#"{"température": {"gt": 10}}"#,
        Some(r#"{"température": 12.5}"#),
        true,
    ),
    // Bare arrays: same length, in order, elements partial.
    ("[1, 2]", Some("[1.0, 2]"), true),
    ("[1, 2]", Some("[2, 1]"), false),
    ("[1, 2]", Some("[1, 2, 3]"), false),
    (
        r#"[{"name": "Ann"}]"#,
        Some(r#"[{"name": "Ann", "age": 30}]"#),
        true,
    ),
    // Paths through objects and arrays; `\.` is a literal dot.
    (r#"{"passengers.0.name": "Ann"}"#, Some(PAX), true),
    (r#"{"passengers.1.name": "Ann"}"#, Some(PAX), false),
    (
        r#"{"passengers.2.name": {"absent": true}}"#,
        Some(PAX),
        true,
    ),
    (r#"{"0.name": "Ann"}"#, Some(r#"[{"name": "Ann"}]"#), true),
    (r#"{"a.0.1": 3}"#, Some(r#"{"a": [[1, 3]]}"#), true),
    (
        r#"{"file\\.name": "x"}"#,
        Some(r#"{"file.name": "x"}"#),
        true,
    ),
    (
        r#"{"file.name": "x"}"#,
        Some(r#"{"file.name": "x"}"#),
        false,
    ),
    // Presence: null is present, absent is not null.
    (r#"{"x": {"absent": true}}"#, Some("{}"), true),
    (r#"{"x": {"absent": true}}"#, Some(r#"{"x": null}"#), false),
    (r#"{"x": {"exists": false}}"#, Some(r#"{"y": 1}"#), true),
    (r#"{"x": {"exists": true}}"#, Some(r#"{"x": null}"#), true),
    (r#"{"x": null}"#, Some("{}"), false),
    (r#"{"exists": false}"#, None, true),
    // `equals` is exact and literal; `fields` reaches keys named like operators.
    (r#"{"equals": {"a": 1}}"#, Some(r#"{"a": 1.0}"#), true),
    (
        r#"{"equals": {"a": 1}}"#,
        Some(r#"{"a": 1, "b": 2}"#),
        false,
    ),
    (
        r#"{"equals": {"type": "bug"}}"#,
        Some(r#"{"type": "bug"}"#),
        true,
    ),
    (
        r#"{"fields": {"type": "bug"}}"#,
        Some(r#"{"type": "bug", "id": 7}"#),
        true,
    ),
    (
        r#"{"fields": {"type": "bug"}}"#,
        Some(r#"{"type": "feature"}"#),
        false,
    ),
    // `contains`: substring, array element (partial), object key.
    (r#"{"contains": "ürich"}"#, Some(r#""Zürich""#), true),
    (
        r#"{"contains": {"name": "Ann"}}"#,
        Some(r#"[{"name": "Bob"}, {"name": "Ann", "age": 3}]"#),
        true,
    ),
    (
        r#"{"contains": {"name": "Eve"}}"#,
        Some(r#"[{"name": "Bob"}]"#),
        false,
    ),
    (r#"{"contains": 2}"#, Some("[1, 2.0]"), true),
    (r#"{"contains": "city"}"#, Some(r#"{"city": null}"#), true),
    (r#"{"contains": "Paris"}"#, Some("42"), false),
    (r#"{"contains": "Paris"}"#, None, false),
    (
        r#"{"icontains": "zürich"}"#,
        Some(r#""ZÜRICH airport""#),
        true,
    ),
    (r#"{"starts_with": "Zü"}"#, Some(r#""Zürich""#), true),
    (r#"{"ends_with": "°C"}"#, Some(r#""18 °C""#), true),
    (r#"{"ends_with": "°C"}"#, Some(r#""18 °F""#), false),
    // `regex` searches, on strings only; `.` is one Unicode scalar.
    (
        r#"{"regex": "6[0-9]"}"#,
        Some(r#""about 64°F today""#),
        true,
    ),
    (r#"{"regex": "^6"}"#, Some(r#""about 64""#), false),
    (r#"{"regex": "^Z.rich$"}"#, Some(r#""Zürich""#), true),
    (r#"{"regex": "6"}"#, Some("64"), false),
    // `one_of` is `equals` over a set.
    (r#"{"one_of": ["c", "f"]}"#, Some(r#""f""#), true),
    (r#"{"one_of": [1, 2]}"#, Some("2.0"), true),
    (r#"{"one_of": [1]}"#, Some("true"), false),
    // Bounds are inclusive where they say so.
    (r#"{"range": [1, 5]}"#, Some("5"), true),
    (r#"{"range": [1, 5]}"#, Some("1.0"), true),
    (r#"{"range": [1, 5]}"#, Some("5.0001"), false),
    (r#"{"gt": 5}"#, Some("5"), false),
    (r#"{"gte": 5}"#, Some("5.0"), true),
    (r#"{"lt": 5}"#, Some(r#""4""#), false),
    (
        r#"{"gte": 1, "lte": 3, "type": "integer"}"#,
        Some("2"),
        true,
    ),
    (
        r#"{"gte": 1, "lte": 3, "type": "integer"}"#,
        Some("2.5"),
        false,
    ),
    // `integer` follows JSON Schema: a zero fractional part is an integer.
    (r#"{"type": "integer"}"#, Some("2.0"), true),
    (r#"{"type": "integer"}"#, Some("2.5"), false),
    (r#"{"type": "number"}"#, Some(r#""2""#), false),
    (r#"{"type": "null"}"#, Some("null"), true),
    (r#"{"type": "null"}"#, None, false),
    // Logic; `not` holds on an absent key.
    (r#"{"not": "Paris"}"#, Some(r#""London""#), true),
    (
        r#"{"not": {"contains": "Paris"}}"#,
        Some(r#""Paris, FR""#),
        false,
    ),
    (r#"{"x": {"not": 3}}"#, Some("{}"), true),
    (
        r#"{"any_of": [{"equals": "a"}, {"regex": "^b"}]}"#,
        Some(r#""bee""#),
        true,
    ),
    (
        r#"{"any_of": [{"equals": "a"}, {"regex": "^b"}]}"#,
        Some(r#""cee""#),
        false,
    ),
    (
        r#"{"all_of": [{"contains": "a"}, {"contains": "b"}]}"#,
        Some(r#""ab""#),
        true,
    ),
    (
        r#"{"all_of": [{"contains": "a"}, {"contains": "b"}]}"#,
        Some(r#""a""#),
        false,
    ),
    // `schema_valid`, at the top and nested (checked in context).
    (
        r#"{"schema_valid": true}"#,
        Some(r#"{"city": "Paris", "days": 2}"#),
        true,
    ),
    (
        r#"{"schema_valid": true}"#,
        Some(r#"{"city": "Paris", "days": 2.0}"#),
        true,
    ),
    (r#"{"schema_valid": true}"#, Some(r#"{"days": 2}"#), false),
    (
        r#"{"days": {"schema_valid": true}}"#,
        Some(r#"{"city": "Paris", "days": 0}"#),
        false,
    ),
    (
        r#"{"city": {"schema_valid": true}}"#,
        Some(r#"{"city": "Paris", "days": 0}"#),
        true,
    ),
];

/// Replies and output: a bare string means `contains`, also under `not` and `any_of`.
const TEXT_TABLE: &[(&str, Option<&str>, bool)] = &[
    (r#""18""#, Some(r#""It is 18 °C in Zürich""#), true),
    (r#""18""#, Some(r#""It is 17 °C""#), false),
    (r#""18""#, None, false),
    (r#"{"not": "error"}"#, Some(r#""all good""#), true),
    (r#"{"not": "error"}"#, Some(r#""an error occurred""#), false),
    (
        r#"{"any_of": ["18", "eighteen"]}"#,
        Some(r#""eighteen degrees""#),
        true,
    ),
    (r#"{"equals": "18"}"#, Some(r#""It is 18""#), false),
    (r#"{"one_of": ["yes", "no"]}"#, Some(r#""yes""#), true),
    (
        r#"{"regex": "6[0-9] ?°F"}"#,
        Some(r#""That is 64 °F.""#),
        true,
    ),
];

fn run_table(
    table: &[(&str, Option<&str>, bool)],
    compile: fn(&Value) -> Result<Matcher, crate::assert::MatcherError>,
) {
    let schema = json(SCHEMA);
    let ctx = MatchContext {
        schema: Some(&schema),
    };
    let mut wrong = Vec::new();
    for (row, (expr, actual, want)) in table.iter().enumerate() {
        let matcher = match compile(&json(expr)) {
            Ok(matcher) => matcher,
            Err(e) => {
                wrong.push(format!("row {row}: {expr} does not compile: {e}"));
                continue;
            }
        };
        let actual = actual.map(json);
        let got = matcher.check(actual.as_ref(), &ctx);
        if got.is_ok() != *want {
            wrong.push(format!(
                "row {row}: {expr} vs {actual:?}: wanted pass={want}, got {got:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} rows wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn value_table() {
    assert!(VALUE_TABLE.len() >= 30);
    run_table(VALUE_TABLE, Matcher::compile);
}

#[test]
fn text_table() {
    run_table(TEXT_TABLE, Matcher::compile_text);
}

fn mismatch(expr: &str, actual: Option<&str>) -> crate::assert::matchers::Mismatch {
    let matcher = Matcher::compile(&json(expr)).expect("compiles");
    let actual = actual.map(json);
    let schema = json(SCHEMA);
    matcher
        .check(
            actual.as_ref(),
            &MatchContext {
                schema: Some(&schema),
            },
        )
        .expect_err("should not match")
}

#[test]
fn mismatch_points_at_the_deepest_failing_path() {
    let m = mismatch(
        r#"{"passengers.0.name": "Ann"}"#,
        Some(r#"{"passengers": [{"name": "Bob"}]}"#),
    );
    assert_eq!(
        (m.path.as_str(), m.expected.as_str(), m.actual.as_str()),
        ("passengers.0.name", r#""Ann""#, r#""Bob""#)
    );
    let m = mismatch(
        r#"{"trip": {"legs": [{"to": "CDG"}]}}"#,
        Some(r#"{"trip": {"legs": [{"to": "LHR"}]}}"#),
    );
    assert_eq!(m.path, "trip.legs.0.to");
    let m = mismatch(r#"{"city": "Paris"}"#, Some("{}"));
    assert_eq!((m.path.as_str(), m.actual.as_str()), ("city", "<absent>"));
    let m = mismatch(r#"{"file\\.name": "x"}"#, Some(r#"{"file.name": "y"}"#));
    assert_eq!(m.path, r"file\.name");
}

#[test]
fn mismatches_lists_every_failing_field_in_key_order() {
    let matcher = Matcher::compile(&json(r#"{"b": 2, "a": 1, "c": 3}"#)).expect("compiles");
    let actual = json(r#"{"a": 0, "b": 2, "c": 0}"#);
    let paths: Vec<String> = matcher
        .mismatches(Some(&actual), &MatchContext::default())
        .into_iter()
        .map(|m| m.path)
        .collect();
    assert_eq!(paths, ["a", "c"]);
}

#[test]
fn schema_valid_without_a_schema_says_so() {
    let matcher = Matcher::compile(&json(r#"{"schema_valid": true}"#)).expect("compiles");
    let m = matcher
        .check(Some(&json("{}")), &MatchContext::default())
        .expect_err("no schema");
    assert!(m.expected.contains("declared no schema"), "{m}");
}

#[test]
fn schema_valid_with_a_broken_schema_says_so() {
    let matcher = Matcher::compile(&json(r#"{"schema_valid": true}"#)).expect("compiles");
    let schema = json(r#"{"type": 12}"#);
    let m = matcher
        .check(
            Some(&json("{}")),
            &MatchContext {
                schema: Some(&schema),
            },
        )
        .expect_err("bad schema");
    assert!(m.expected.contains("does not compile"), "{m}");
}

#[test]
fn schema_errors_are_located_in_the_value() {
    let m = mismatch(
        r#"{"days": {"schema_valid": true}}"#,
        Some(r#"{"city": "Paris", "days": 0}"#),
    );
    assert_eq!((m.path.as_str(), m.actual.as_str()), ("days", "0"));
}

#[test]
fn long_actual_values_are_cut() {
    let long = format!(r#""{}""#, "x".repeat(1000));
    let m = mismatch(r#""short""#, Some(&long));
    assert!(m.actual.chars().count() < 250 && m.actual.ends_with('…'));
}

/// The wording users read, one line per mismatch.
#[test]
fn mismatch_messages() {
    let cases: &[(&str, Option<&str>)] = &[
        (
            r#"{"city": {"contains": "Paris"}}"#,
            Some(r#"{"city": "London"}"#),
        ),
        (r#"{"passengers.0.name": "Ann"}"#, Some(PAX_EVE)),
        (r#"{"trip": {"from": "ZRH"}}"#, Some(r#"{"trip": "ZRH"}"#)),
        ("[1, 2]", Some("[1, 2, 3]")),
        (
            r#"{"days": {"gte": 1, "lte": 14}}"#,
            Some(r#"{"days": 30}"#),
        ),
        (r#"{"days": {"range": [1, 14]}}"#, Some(r#"{"days": "3"}"#)),
        (
            r#"{"units": {"one_of": ["c", "f"]}}"#,
            Some(r#"{"units": "k"}"#),
        ),
        (r#"{"n": {"type": "integer"}}"#, Some(r#"{"n": 2.5}"#)),
        (r#"{"x": {"absent": true}}"#, Some(r#"{"x": null}"#)),
        (r#"{"regex": "^6[0-9]°F$"}"#, Some(r#""18 °C""#)),
        (r#"{"icontains": "ZÜRICH"}"#, Some(r#""Geneva""#)),
        (
            r#"{"not": {"starts_with": "Error"}}"#,
            Some(r#""Error: boom""#),
        ),
        (
            r#"{"any_of": [{"equals": "a"}, {"ends_with": "b"}]}"#,
            Some(r#""c""#),
        ),
        (
            r#"{"contains": {"name": "Eve"}}"#,
            Some(r#"[{"name": "Ann"}]"#),
        ),
        (r#"{"equals": {"a": 1}}"#, Some(r#"{"a": 1, "b": 2}"#)),
        (
            r#"{"fields": {"type": "bug"}}"#,
            Some(r#"{"type": "feature"}"#),
        ),
        (r#"{"schema_valid": true}"#, Some(r#"{"days": 0}"#)),
        (r#""Paris""#, None),
    ];
    let lines: Vec<String> = cases
        .iter()
        .map(|(expr, actual)| {
            let matcher = Matcher::compile(&json(expr)).expect("compiles");
            let actual = actual.map(json);
            let schema = json(SCHEMA);
            let found = matcher.mismatches(
                actual.as_ref(),
                &MatchContext {
                    schema: Some(&schema),
                },
            );
            let found: Vec<String> = found.iter().map(ToString::to_string).collect();
            format!("{matcher}\n  {}", found.join("\n  "))
        })
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
}
