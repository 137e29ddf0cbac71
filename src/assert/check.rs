//! Checking a compiled [`Matcher`] against a value, and the human form of a matcher that
//! failure messages quote.

use std::fmt;

use serde_json::Value;

use super::json::{
    cmp_numbers, from_pointer, is_integer, join_path, json_eq, render, render_opt, to_pointer,
    truncate,
};
use super::matchers::{Cmp, Field, JsonType, MatchContext, Matcher, Mismatch, Node, Op};

impl Matcher {
    /// Checks `actual` (`None` when the key is absent) and returns the first mismatch, in the
    /// matcher's key order (keys sort alphabetically).
    pub fn check(&self, actual: Option<&Value>, ctx: &MatchContext<'_>) -> Result<(), Mismatch> {
        self.mismatches(actual, ctx)
            .into_iter()
            .next()
            .map_or(Ok(()), Err)
    }

    /// Every mismatch: one per failing field, element or operator of the conjunctions (bare
    /// objects and arrays, operator objects, `all_of`); `not` and `any_of` fail as one. Empty
    /// when `actual` matches. The call checks rank candidate calls by this count.
    pub fn mismatches(&self, actual: Option<&Value>, ctx: &MatchContext<'_>) -> Vec<Mismatch> {
        let walk = Walk {
            schema: ctx.schema,
            root: actual,
        };
        let mut out = Vec::new();
        walk.node(&self.node, actual, &mut Vec::new(), &mut out);
        out
    }
}

/// The matcher in the human form failure messages use, e.g. `{city: contains "Paris"}`.
impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&describe(&self.node))
    }
}

/// One check in progress: the context, and the value the check started from (for
/// `schema_valid`, which validates in context).
struct Walk<'a> {
    schema: Option<&'a Value>,
    root: Option<&'a Value>,
}

fn miss(path: &[String], expected: String, actual: Option<&Value>) -> Mismatch {
    Mismatch {
        path: join_path(path),
        expected,
        actual: render_opt(actual),
    }
}

impl Walk<'_> {
    fn node(
        &self,
        node: &Node,
        actual: Option<&Value>,
        path: &mut Vec<String>,
        out: &mut Vec<Mismatch>,
    ) {
        match node {
            Node::Equals(expected) => {
                if !actual.is_some_and(|a| json_eq(a, expected)) {
                    out.push(miss(path, describe(node), actual));
                }
            }
            Node::Fields(fields) => self.fields(fields, actual, path, out),
            Node::Elements(items) => match actual {
                Some(Value::Array(values)) if values.len() == items.len() => {
                    for (i, (item, value)) in items.iter().zip(values).enumerate() {
                        path.push(i.to_string());
                        self.node(item, Some(value), path, out);
                        path.pop();
                    }
                }
                _ => {
                    let expected =
                        format!("an array of {} elements {}", items.len(), describe(node));
                    out.push(miss(path, expected, actual));
                }
            },
            Node::Ops(ops) => {
                for op in ops {
                    self.op(op, actual, path, out);
                }
            }
        }
    }

    /// Whether `node` matches, without reporting why not (for `not`, `any_of`, `contains`).
    fn passes(&self, node: &Node, actual: Option<&Value>, path: &mut Vec<String>) -> bool {
        let mut scratch = Vec::new();
        self.node(node, actual, path, &mut scratch);
        scratch.is_empty()
    }

    fn fields(
        &self,
        fields: &[Field],
        actual: Option<&Value>,
        path: &mut Vec<String>,
        out: &mut Vec<Mismatch>,
    ) {
        // Keys that are all indices (`{"0.name": ...}`) may address an array directly.
        let by_index = !fields.is_empty()
            && fields
                .iter()
                .all(|f| f.path.first().is_some_and(|s| s.parse::<usize>().is_ok()));
        let container = match actual {
            Some(Value::Object(_)) => true,
            Some(Value::Array(_)) => by_index,
            _ => false,
        };
        if !container {
            let expected = if fields.is_empty() {
                "an object".to_owned()
            } else {
                format!("an object with {}", describe_fields(fields))
            };
            out.push(miss(path, expected, actual));
            return;
        }
        for field in fields {
            let depth = path.len();
            let mut value = actual;
            for segment in &field.path {
                value = value.and_then(|v| step(v, segment));
                path.push(segment.clone());
            }
            self.node(&field.node, value, path, out);
            path.truncate(depth);
        }
    }

    fn op(&self, op: &Op, actual: Option<&Value>, path: &mut Vec<String>, out: &mut Vec<Mismatch>) {
        let text = actual.and_then(Value::as_str);
        let number = match actual {
            Some(Value::Number(n)) => Some(n),
            _ => None,
        };
        let holds = match op {
            // The conjunctions report each failing part themselves.
            Op::AllOf(nodes) => {
                for node in nodes {
                    self.node(node, actual, path, out);
                }
                return;
            }
            Op::Fields(fields) => return self.fields(fields, actual, path, out),
            Op::SchemaValid => return self.schema_valid(actual, path, out),
            Op::Equals(expected) => actual.is_some_and(|a| json_eq(a, expected)),
            Op::Contains(contains) => match actual {
                Some(Value::String(s)) => contains.text.as_deref().is_some_and(|t| s.contains(t)),
                Some(Value::Object(map)) => contains
                    .text
                    .as_deref()
                    .is_some_and(|k| map.contains_key(k)),
                Some(Value::Array(items)) => items.iter().enumerate().any(|(i, item)| {
                    path.push(i.to_string());
                    let found = self.passes(&contains.element, Some(item), path);
                    path.pop();
                    found
                }),
                _ => false,
            },
            Op::IContains(_, re) | Op::Regex(re) => text.is_some_and(|s| re.is_match(s)),
            Op::StartsWith(prefix) => text.is_some_and(|s| s.starts_with(prefix.as_str())),
            Op::EndsWith(suffix) => text.is_some_and(|s| s.ends_with(suffix.as_str())),
            Op::OneOf(values) => actual.is_some_and(|a| values.iter().any(|v| json_eq(a, v))),
            Op::Compare(cmp, bound) => {
                number
                    .and_then(|n| cmp_numbers(n, bound))
                    .is_some_and(|o| match cmp {
                        Cmp::Gt => o.is_gt(),
                        Cmp::Gte => o.is_ge(),
                        Cmp::Lt => o.is_lt(),
                        Cmp::Lte => o.is_le(),
                    })
            }
            Op::Range(min, max) => number.is_some_and(|n| {
                cmp_numbers(n, min).is_some_and(|o| o.is_ge())
                    && cmp_numbers(n, max).is_some_and(|o| o.is_le())
            }),
            Op::Type(ty) => actual.is_some_and(|a| ty.accepts(a)),
            Op::Exists(want) => actual.is_some() == *want,
            Op::Not(node) => !self.passes(node, actual, path),
            Op::AnyOf(nodes) => nodes.iter().any(|node| self.passes(node, actual, path)),
        };
        if !holds {
            out.push(miss(path, describe_op(op), actual));
        }
    }

    fn schema_valid(&self, actual: Option<&Value>, path: &[String], out: &mut Vec<Mismatch>) {
        const VALID: &str = "valid against the tool's schema";
        let Some(value) = actual else {
            return out.push(miss(path, VALID.to_owned(), actual));
        };
        let Some(schema) = self.schema else {
            let expected = format!("{VALID}, but the request declared no schema for this tool");
            return out.push(miss(path, expected, actual));
        };
        let validator = match jsonschema::validator_for(schema) {
            Ok(validator) => validator,
            Err(e) => {
                let expected = format!("{VALID}, but that schema does not compile: {e}");
                return out.push(miss(path, truncate(expected), actual));
            }
        };
        // Below the top level, validate the whole value so this position is checked in context
        // (through `properties`, `items`, `$ref`…), and keep the errors at or under it.
        let (instance, prefix) = match self.root {
            Some(root) if !path.is_empty() => (root, to_pointer(path)),
            _ => (value, String::new()),
        };
        let under = format!("{prefix}/");
        for error in validator.iter_errors(instance) {
            let at = error.instance_path().as_str();
            if at == prefix || at.starts_with(&under) {
                out.push(Mismatch {
                    path: join_path(&from_pointer(at)),
                    expected: truncate(format!("{VALID}: {error}")),
                    actual: render_opt(instance.pointer(at)),
                });
            }
        }
    }
}

/// One path step: a key into an object, an index into an array.
fn step<'v>(value: &'v Value, segment: &str) -> Option<&'v Value> {
    match value {
        Value::Object(map) => map.get(segment),
        Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    }
}

impl JsonType {
    fn accepts(self, value: &Value) -> bool {
        match (self, value) {
            (JsonType::Integer, Value::Number(n)) => is_integer(n),
            (JsonType::String, Value::String(_))
            | (JsonType::Number, Value::Number(_))
            | (JsonType::Boolean, Value::Bool(_))
            | (JsonType::Object, Value::Object(_))
            | (JsonType::Array, Value::Array(_))
            | (JsonType::Null, Value::Null) => true,
            _ => false,
        }
    }

    fn name(self) -> &'static str {
        match self {
            JsonType::String => "string",
            JsonType::Number => "number",
            JsonType::Integer => "integer",
            JsonType::Boolean => "boolean",
            JsonType::Object => "object",
            JsonType::Array => "array",
            JsonType::Null => "null",
        }
    }
}

fn quote(text: &str) -> String {
    render(&Value::from(text))
}

fn join(nodes: &[Node], separator: &str) -> String {
    nodes
        .iter()
        .map(describe)
        .collect::<Vec<_>>()
        .join(separator)
}

fn describe(node: &Node) -> String {
    match node {
        Node::Equals(value) => render(value),
        Node::Fields(fields) => describe_fields(fields),
        Node::Elements(items) => format!("[{}]", join(items, ", ")),
        Node::Ops(ops) => ops
            .iter()
            .map(describe_op)
            .collect::<Vec<_>>()
            .join(" and "),
    }
}

fn describe_fields(fields: &[Field]) -> String {
    let parts: Vec<String> = fields
        .iter()
        .map(|f| format!("{}: {}", f.key, describe(&f.node)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

fn describe_op(op: &Op) -> String {
    match op {
        Op::Equals(value) => format!("equals {}", render(value)),
        Op::Contains(contains) => format!("contains {}", describe(&contains.element)),
        Op::IContains(needle, _) => format!("contains {} (ignoring case)", quote(needle)),
        Op::StartsWith(prefix) => format!("starts with {}", quote(prefix)),
        Op::EndsWith(suffix) => format!("ends with {}", quote(suffix)),
        Op::Regex(re) => format!("regex /{}/", re.as_str()),
        Op::OneOf(values) => {
            let parts: Vec<String> = values.iter().map(render).collect();
            format!("one of [{}]", parts.join(", "))
        }
        Op::Compare(cmp, bound) => {
            let symbol = match cmp {
                Cmp::Gt => ">",
                Cmp::Gte => ">=",
                Cmp::Lt => "<",
                Cmp::Lte => "<=",
            };
            format!("{symbol} {bound}")
        }
        Op::Range(min, max) => format!("in range [{min}, {max}]"),
        Op::Type(ty) => format!("type {}", ty.name()),
        Op::Exists(true) => "present".to_owned(),
        Op::Exists(false) => "absent".to_owned(),
        Op::SchemaValid => "valid against the tool's schema".to_owned(),
        Op::Not(node) => format!("not ({})", describe(node)),
        Op::AnyOf(nodes) => format!("any of ({})", join(nodes, " | ")),
        Op::AllOf(nodes) => format!("all of ({})", join(nodes, "; ")),
        Op::Fields(fields) => describe_fields(fields),
    }
}
