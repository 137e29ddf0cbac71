//! Argument and text matchers: a small grammar on JSON values, compiled (and validated) once
//! when the spec is loaded, then checked against tool arguments, replies and program output.
//!
//! # Grammar
//!
//! A matcher is a JSON value:
//!
//! - **Bare scalar** (`"Paris"`, `18`, `true`, `null`): equals. Numbers compare by value
//!   (`1 == 1.0`), a boolean never equals a number (`true != 1`), strings compare exactly
//!   (no normalisation: `"Zürich" != "Zurich"`). `null` means present and `null`; a missing key
//!   is not `null`.
//! - **Bare object** whose keys are field keys: a *partial* match. Every listed key must be
//!   present and match (recursively); keys not listed are ignored. `{}` matches any object.
//!   A key is a path: `passengers.0.name` walks objects by key and arrays by index; `\.`
//!   writes a literal dot inside a key and `\\` a literal backslash.
//! - **Bare array**: element-wise, same length, each element with these same bare-value
//!   semantics (so elements that are objects match partially). Order matters; to ask for
//!   "some element matches" use `contains`, for "element 2 matches" a path like `items.2`.
//! - **Operator object**: every key is an operator, and all of them must hold:
//!
//! | operator | operand | holds when the actual value… |
//! |---|---|---|
//! | `equals` | any value | equals it exactly: deep, numbers by value, *no* partial objects, operator names not interpreted |
//! | `contains` | any | string: contains the operand string; array: has an element matching the operand (bare-value semantics); object: has the operand string as a key |
//! | `icontains` | string | is a string containing the operand, ignoring case (Unicode simple case folding) |
//! | `starts_with`, `ends_with` | string | is a string with that prefix / suffix |
//! | `regex` | string | is a string in which the regex *finds* a match (use `^…$` to anchor); Rust `regex` syntax |
//! | `one_of` | non-empty array | equals one of the values, as `equals` does |
//! | `gt`, `gte`, `lt`, `lte` | number | is a number `>`, `>=`, `<`, `<=` the operand |
//! | `range` | `[min, max]` | is a number with `min <= actual <= max` |
//! | `type` | `string`, `number`, `integer`, `boolean`, `object`, `array`, `null` | has that JSON type; `integer` follows JSON Schema: `2.0` is an integer |
//! | `exists` | boolean | is present (`true`, even if `null`) or absent (`false`) |
//! | `absent` | boolean | `absent: true` is `exists: false`, and `absent: false` is `exists: true` |
//! | `schema_valid` | `true` | is valid against the tool's JSON schema from the request (no schema is a mismatch) |
//! | `not` | matcher | does not match it (so an absent key satisfies `not: 3`) |
//! | `any_of`, `all_of` | non-empty array of matchers | matches at least one / every one of them |
//! | `fields` | object | matches it as a bare object, where every key is a field key (see below) |
//!
//! Every operator except `exists`, `absent`, `not`, `any_of` and `all_of` fails on an absent key.
//!
//! An object mixing operator keys with field keys is rejected at load, because one of them is
//! almost always a typo. A **field whose name is an operator** (an argument called `type`, say)
//! is matched with `fields: {type: bug}` (partial), or with `equals` on the whole object (exact).
//! A field key that looks like a misspelt operator (`regexp`, `startsWith`, `Contains`) is also
//! rejected, with a suggestion; `fields:` accepts it as a field.
//!
//! `schema_valid` below the top level validates the whole value the matcher was checked against
//! and reports only the errors located at or under its own position, so a nested
//! `{days: {schema_valid: true}}` checks `days` against `properties.days` in context.
//!
//! # Text matchers
//!
//! [`Matcher::compile_text`] compiles the same grammar for replies and program output, with one
//! difference: a bare string means `contains` (`reply: "18"`), also inside `not`, `any_of` and
//! `all_of`. `equals` and `one_of` stay exact.

use std::cmp::Ordering;
use std::fmt;

use regex::{Regex, RegexBuilder};
use serde_json::{Map, Number, Value};
use thiserror::Error;

use super::json::{cmp_numbers, render};
use super::keys::{lookalike, split_path};

/// Every operator name; an object whose keys are all in here is an operator object.
const OPERATORS: &[&str] = &[
    "equals",
    "contains",
    "icontains",
    "starts_with",
    "ends_with",
    "regex",
    "one_of",
    "gt",
    "gte",
    "lt",
    "lte",
    "range",
    "type",
    "exists",
    "absent",
    "schema_valid",
    "not",
    "any_of",
    "all_of",
    "fields",
];

/// A compiled matcher. See the [module documentation](self) for the grammar.
#[derive(Debug, Clone)]
pub struct Matcher {
    pub(super) node: Node,
}

/// What a matcher is checked in: the facts a value alone does not carry.
#[derive(Debug, Clone, Copy, Default)]
pub struct MatchContext<'a> {
    /// The tool's parameters schema, as the request declared it, for `schema_valid`.
    pub schema: Option<&'a Value>,
}

/// Why a value did not match: where, what the matcher wanted there, and what was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Dotted path into the checked value (`passengers.0.name`), `""` for the value itself.
    /// Literal dots and backslashes in keys are escaped with a backslash, as in path keys.
    pub path: String,
    /// The failing part of the matcher, in human form (`contains "Paris"`, `>= 1`).
    pub expected: String,
    /// The value found at `path` as compact JSON (cut after 200 characters), or `<absent>`.
    pub actual: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            write!(f, "at `{}`: ", self.path)?;
        }
        write!(f, "expected {}, got {}", self.expected, self.actual)
    }
}

/// An error in a matcher expression, found when the spec is loaded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid matcher{}: {message}", at_path(path))]
pub struct MatcherError {
    /// Where in the expression: object keys and array indices, outermost first.
    pub path: Vec<String>,
    /// What is wrong, naming the offending operand.
    pub message: String,
    /// How to fix it, when there is a likely fix.
    pub hint: Option<String>,
}

fn at_path(path: &[String]) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at `{}`", path.join("."))
    }
}

/// A compiled matcher node.
#[derive(Debug, Clone)]
pub(super) enum Node {
    /// A bare scalar: deep equality, numbers by value.
    Equals(Value),
    /// A bare object (or `fields`): every field must match, other keys are ignored.
    Fields(Vec<Field>),
    /// A bare array: same length, element-wise.
    Elements(Vec<Node>),
    /// An operator object: every operator must hold.
    Ops(Vec<Op>),
}

/// One key of a partial object match.
#[derive(Debug, Clone)]
pub(super) struct Field {
    /// The key as the user wrote it, for messages.
    pub(super) key: String,
    /// The key split into path segments, escapes resolved.
    pub(super) path: Vec<String>,
    pub(super) node: Node,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cmp {
    Gt,
    Gte,
    Lt,
    Lte,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JsonType {
    String,
    Number,
    Integer,
    Boolean,
    Object,
    Array,
    Null,
}

#[derive(Debug, Clone)]
pub(super) enum Op {
    Equals(Value),
    Contains(Contains),
    /// The needle is kept for messages; the regex does the Unicode-aware caseless search.
    IContains(String, Regex),
    StartsWith(String),
    EndsWith(String),
    Regex(Regex),
    OneOf(Vec<Value>),
    Compare(Cmp, Number),
    Range(Number, Number),
    Type(JsonType),
    Exists(bool),
    SchemaValid,
    Not(Box<Node>),
    AnyOf(Vec<Node>),
    AllOf(Vec<Node>),
    Fields(Vec<Field>),
}

/// `contains`: what it means depends on the actual value's type, known only at check time.
#[derive(Debug, Clone)]
pub(super) struct Contains {
    /// The operand if it is a string: a substring, or an object key.
    pub(super) text: Option<String>,
    /// The operand as a bare-value matcher, for array elements.
    pub(super) element: Box<Node>,
}

/// How a bare string is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Arguments: a bare string is an exact value.
    Value,
    /// Replies and output: a bare string is a substring.
    Text,
}

impl Matcher {
    /// Compiles a matcher expression for tool arguments (a bare string means equals).
    ///
    /// Errors (a regex that does not compile, a misspelt operator, operator and field keys
    /// mixed, an operand of the wrong type, a `range` with min > max…) name the path inside the
    /// expression and carry a hint where one helps.
    pub fn compile(expr: &Value) -> Result<Matcher, MatcherError> {
        node(expr, Mode::Value, &mut Vec::new()).map(|node| Matcher { node })
    }

    /// Compiles a matcher for a reply or program output: like [`Matcher::compile`], except that
    /// a bare string means `contains`, also inside `not`, `any_of` and `all_of`.
    pub fn compile_text(expr: &Value) -> Result<Matcher, MatcherError> {
        node(expr, Mode::Text, &mut Vec::new()).map(|node| Matcher { node })
    }
}

fn error(at: &[String], message: impl Into<String>, hint: Option<String>) -> MatcherError {
    MatcherError {
        path: at.to_vec(),
        message: message.into(),
        hint,
    }
}

fn node(expr: &Value, mode: Mode, at: &mut Vec<String>) -> Result<Node, MatcherError> {
    match expr {
        Value::String(_) if mode == Mode::Text => Ok(Node::Ops(vec![contains(expr, at)?])),
        Value::Object(map) => {
            let is_op = |k: &String| OPERATORS.contains(&k.as_str());
            let (ops, fields): (Vec<&String>, Vec<&String>) = map.keys().partition(|k| is_op(k));
            match (ops.is_empty(), fields.is_empty()) {
                (false, true) => operators(map, mode, at),
                (false, false) => Err(mixed(&ops, &fields, at)),
                _ => {
                    if let Some((key, op)) = fields
                        .iter()
                        .find_map(|k| Some((*k, lookalike(k, OPERATORS)?)))
                    {
                        at.push(key.clone());
                        let hint = format!(
                            "to match a field named `{key}`, wrap the fields: {{fields: {{{key}: ...}}}}"
                        );
                        return Err(error(
                            at,
                            format!("unknown operator `{key}`; did you mean `{op}`?"),
                            Some(hint),
                        ));
                    }
                    field_list(map, at).map(Node::Fields)
                }
            }
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| nested(at, i.to_string(), |at| node(item, Mode::Value, at)))
            .collect::<Result<_, _>>()
            .map(Node::Elements),
        scalar => Ok(Node::Equals(scalar.clone())),
    }
}

/// Runs `f` with `segment` pushed on the expression path, so its errors say where they are.
fn nested<T>(
    at: &mut Vec<String>,
    segment: String,
    f: impl FnOnce(&mut Vec<String>) -> Result<T, MatcherError>,
) -> Result<T, MatcherError> {
    at.push(segment);
    let result = f(at);
    at.pop();
    result
}

fn mixed(ops: &[&String], fields: &[&String], at: &[String]) -> MatcherError {
    let quote = |keys: &[&String]| {
        keys.iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let first_op = ops.first().map_or("op", |k| k.as_str());
    let first_field = fields.first().map_or("field", |k| k.as_str());
    error(
        at,
        format!(
            "mixes operators ({}) with field keys ({})",
            quote(ops),
            quote(fields)
        ),
        Some(format!(
            "put the operator under the field it tests ({{{first_field}: {{{first_op}: ...}}}}), \
             or, if `{first_op}` is a field name, wrap the fields: {{fields: {{...}}}}"
        )),
    )
}

fn field_list(map: &Map<String, Value>, at: &mut Vec<String>) -> Result<Vec<Field>, MatcherError> {
    map.iter()
        .map(|(key, expr)| {
            nested(at, key.clone(), |at| {
                Ok(Field {
                    key: key.clone(),
                    path: split_path(key).map_err(|message| {
                        let hint =
                            r"separate path segments with single dots; write a literal dot as `\.`";
                        error(at, message, Some(hint.to_owned()))
                    })?,
                    node: node(expr, Mode::Value, at)?,
                })
            })
        })
        .collect()
}

fn operators(
    map: &Map<String, Value>,
    mode: Mode,
    at: &mut Vec<String>,
) -> Result<Node, MatcherError> {
    map.iter()
        .map(|(name, operand)| nested(at, name.clone(), |at| operator(name, operand, mode, at)))
        .collect::<Result<_, _>>()
        .map(Node::Ops)
}

fn operator(
    name: &str,
    operand: &Value,
    mode: Mode,
    at: &mut Vec<String>,
) -> Result<Op, MatcherError> {
    let string = |what: &str| match operand {
        Value::String(s) => Ok(s.clone()),
        other => Err(wrong_operand(name, what, other, at)),
    };
    let number = || match operand {
        Value::Number(n) => Ok(n.clone()),
        other => Err(wrong_operand(name, "a number", other, at)),
    };
    let boolean = || match operand {
        Value::Bool(b) => Ok(*b),
        other => Err(wrong_operand(name, "true or false", other, at)),
    };
    Ok(match name {
        "equals" => Op::Equals(operand.clone()),
        "contains" => return contains(operand, at),
        "icontains" => {
            let needle = string("a string")?;
            let re = RegexBuilder::new(&regex::escape(&needle))
                .case_insensitive(true)
                .build()
                .map_err(|e| {
                    error(
                        at,
                        format!("`icontains` operand cannot be searched for: {e}"),
                        None,
                    )
                })?;
            Op::IContains(needle, re)
        }
        "starts_with" => Op::StartsWith(string("a string")?),
        "ends_with" => Op::EndsWith(string("a string")?),
        "regex" => {
            let pattern = string("a regex string")?;
            let re = Regex::new(&pattern).map_err(|e| {
                error(
                    at,
                    format!("regex `{pattern}` does not compile: {}", regex_problem(&e)),
                    Some(
                        "regexes use Rust `regex` syntax (no look-around or backreferences); \
                         escape special characters such as `(`, `[`, `.`, `?` with `\\`"
                            .to_owned(),
                    ),
                )
            })?;
            Op::Regex(re)
        }
        "one_of" => Op::OneOf(non_empty(name, operand, at)?.to_vec()),
        "gt" => Op::Compare(Cmp::Gt, number()?),
        "gte" => Op::Compare(Cmp::Gte, number()?),
        "lt" => Op::Compare(Cmp::Lt, number()?),
        "lte" => Op::Compare(Cmp::Lte, number()?),
        "range" => range(operand, at)?,
        "type" => Op::Type(json_type(operand, at)?),
        "exists" => Op::Exists(boolean()?),
        "absent" => Op::Exists(!boolean()?),
        "schema_valid" => match operand {
            Value::Bool(true) => Op::SchemaValid,
            other => {
                return Err(error(
                    at,
                    format!("`schema_valid` takes `true`, got {other}"),
                    Some(
                        "to require invalid arguments, write {not: {schema_valid: true}}"
                            .to_owned(),
                    ),
                ))
            }
        },
        "not" => Op::Not(Box::new(node(operand, mode, at)?)),
        "any_of" => Op::AnyOf(matcher_list(name, operand, mode, at)?),
        "all_of" => Op::AllOf(matcher_list(name, operand, mode, at)?),
        "fields" => match operand {
            Value::Object(map) => Op::Fields(field_list(map, at)?),
            other => {
                return Err(wrong_operand(
                    name,
                    "an object of field matchers",
                    other,
                    at,
                ))
            }
        },
        // Unreachable in practice: `operators` is only called when every key is in OPERATORS.
        unknown => return Err(error(at, format!("unknown operator `{unknown}`"), None)),
    })
}

/// The one-line cause of a regex error. The crate renders syntax errors as the pattern, a caret
/// line and a last line `error: <cause>`; a spec error must fit on one line, and it already
/// quotes the pattern. Anything else is kept whole.
fn regex_problem(error: &regex::Error) -> String {
    let text = error.to_string();
    text.lines()
        .last()
        .and_then(|line| line.strip_prefix("error: "))
        .map_or_else(|| text.clone(), str::to_owned)
}

fn wrong_operand(name: &str, what: &str, got: &Value, at: &[String]) -> MatcherError {
    error(
        at,
        format!("`{name}` takes {what}, got {}", render(got)),
        None,
    )
}

fn contains(operand: &Value, at: &mut Vec<String>) -> Result<Op, MatcherError> {
    Ok(Op::Contains(Contains {
        text: operand.as_str().map(str::to_owned),
        element: Box::new(node(operand, Mode::Value, at)?),
    }))
}

fn non_empty<'v>(
    name: &str,
    operand: &'v Value,
    at: &[String],
) -> Result<&'v [Value], MatcherError> {
    match operand {
        Value::Array(items) if !items.is_empty() => Ok(items),
        other => Err(wrong_operand(name, "a non-empty array", other, at)),
    }
}

fn matcher_list(
    name: &str,
    operand: &Value,
    mode: Mode,
    at: &mut Vec<String>,
) -> Result<Vec<Node>, MatcherError> {
    non_empty(name, operand, at)?
        .iter()
        .enumerate()
        .map(|(i, item)| nested(at, i.to_string(), |at| node(item, mode, at)))
        .collect()
}

fn range(operand: &Value, at: &[String]) -> Result<Op, MatcherError> {
    let hint = || {
        Some("write `range: [min, max]`, both inclusive; for one bound use gte or lte".to_owned())
    };
    let (min, max) = match operand.as_array().map(Vec::as_slice) {
        Some([Value::Number(min), Value::Number(max)]) => (min, max),
        _ => {
            return Err(error(
                at,
                format!(
                    "`range` takes [min, max] with two numbers, got {}",
                    render(operand)
                ),
                hint(),
            ))
        }
    };
    if cmp_numbers(min, max) == Some(Ordering::Greater) {
        return Err(error(
            at,
            format!("`range` has min {min} greater than max {max}"),
            hint(),
        ));
    }
    Ok(Op::Range(min.clone(), max.clone()))
}

fn json_type(operand: &Value, at: &[String]) -> Result<JsonType, MatcherError> {
    Ok(match operand.as_str() {
        Some("string") => JsonType::String,
        Some("number") => JsonType::Number,
        Some("integer") => JsonType::Integer,
        Some("boolean") => JsonType::Boolean,
        Some("object") => JsonType::Object,
        Some("array") => JsonType::Array,
        Some("null") => JsonType::Null,
        _ => {
            return Err(error(
                at,
                format!("unknown type {}", render(operand)),
                Some(
                    "use one of string, number, integer, boolean, object, array, null; \
                     to match a field named `type`, wrap the fields: {fields: {type: ...}}"
                        .to_owned(),
                ),
            ))
        }
    })
}
