//! A YAML document as a tree of nodes that remember where they were written.
//!
//! `serde-saphyr` parses the text (YAML 1.2, anchors, aliases and merge keys, duplicate keys
//! refused) and gives every node its line and column through `Spanned`; the spec builder
//! then reads this tree by hand, so that every error it finds after parsing (an unknown
//! key, a wrong type, a bad regex deep inside a matcher) still points at the right place.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use serde_saphyr::{MessageFormatter, Spanned};

/// A position in a spec file: 1-based line and 1-based column, counted in characters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

impl Pos {
    pub const fn new(line: u32, column: u32) -> Pos {
        Pos { line, column }
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// One YAML node and where it starts. For a block mapping that is its first key; for a flow
/// collection its opening bracket; for an alias, the alias itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    pub(crate) at: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Null,
    Bool(bool),
    Number(Number),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in document order; keys are nodes so that their positions survive.
    Map(Vec<(Node, Node)>),
}

/// A YAML parse failure: the parser's message and, when it knows it, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub(crate) at: Option<Pos>,
    pub(crate) message: String,
}

/// Parse one YAML document into a node tree.
///
/// Settings, chosen for spec files that people write by hand:
/// - duplicate keys in a mapping are an error (the YAML spec says so; silently keeping one
///   of two `expect:` blocks would hide assertions);
/// - only YAML 1.2 booleans (`true`/`false`): `no`, `off`, `y` stay strings, so a tool
///   argument `{country: no}` means the string `"no"`;
/// - a plain scalar with a redundant leading zero (`007`, `08001`) stays a string, as it
///   would in most YAML 1.1 readers, instead of silently becoming a number;
/// - `.inf`/`.nan` are refused, since JSON cannot hold them.
pub(crate) fn parse(src: &str) -> Result<Node, SyntaxError> {
    let options = serde_saphyr::options! {
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
        with_snippet: false,
    };
    serde_saphyr::from_str_with_options::<Node>(src, options).map_err(|e| {
        let e = e.without_snippet();
        SyntaxError {
            at: e
                .location()
                .filter(|l| l.line() > 0)
                .map(|l| Pos::new(clamp(l.line()), clamp(l.column()))),
            message: serde_saphyr::UserMessageFormatter
                .format_message(e)
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect(),
        }
    })
}

fn clamp(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Node {
    /// What kind of value this is, for "expected X, found Y" messages.
    pub(crate) fn describe(&self) -> &'static str {
        match &self.kind {
            Kind::Null => "nothing (null)",
            Kind::Bool(_) => "a boolean",
            Kind::Number(_) => "a number",
            Kind::Str(_) => "a string",
            Kind::Seq(_) => "a list",
            Kind::Map(_) => "a mapping",
        }
    }

    pub(crate) fn is_null(&self) -> bool {
        matches!(self.kind, Kind::Null)
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The text of a scalar that is not null: strings as they are, numbers and booleans as
    /// written in JSON (`1`, `1.5`, `true`).
    pub(crate) fn scalar_text(&self) -> Option<String> {
        match &self.kind {
            Kind::Str(s) => Some(s.clone()),
            Kind::Number(n) => Some(n.to_string()),
            Kind::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    /// The node as JSON. Mapping keys become strings (`1: x` gives `{"1": "x"}`); a key that
    /// is null or a collection cannot, and its position is returned.
    pub(crate) fn to_json(&self) -> Result<Value, Pos> {
        Ok(match &self.kind {
            Kind::Null => Value::Null,
            Kind::Bool(b) => Value::Bool(*b),
            Kind::Number(n) => Value::Number(n.clone()),
            Kind::Str(s) => Value::String(s.clone()),
            Kind::Seq(items) => {
                Value::Array(items.iter().map(Node::to_json).collect::<Result<_, _>>()?)
            }
            Kind::Map(entries) => {
                let mut map = Map::new();
                for (k, v) in entries {
                    let key = k.scalar_text().ok_or(k.at)?;
                    map.insert(key, v.to_json()?);
                }
                Value::Object(map)
            }
        })
    }

    /// The node reached by following `path` (mapping keys and list indices, outermost first),
    /// or the deepest node on the way when the path leaves the tree.
    pub(crate) fn locate(&self, path: &[String]) -> &Node {
        let Some((first, rest)) = path.split_first() else {
            return self;
        };
        match self.child(first) {
            Some(n) => n.locate(rest),
            None => self,
        }
    }

    /// Where to point for a problem at `path`: like [`Node::locate`], except that when the
    /// last step is a mapping key, the key itself (`regex: '('` is reported at `regex`).
    pub(crate) fn locate_entry(&self, path: &[String]) -> Pos {
        let Some((last, parent_path)) = path.split_last() else {
            return self.at;
        };
        let parent = self.locate(parent_path);
        if let Kind::Map(entries) = &parent.kind {
            if let Some((k, _)) = entries
                .iter()
                .find(|(k, _)| k.scalar_text().as_deref() == Some(last.as_str()))
            {
                return k.at;
            }
        }
        self.locate(path).at
    }

    /// The value under mapping key `key`, or the list item at index `key`.
    pub(crate) fn child(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.scalar_text().as_deref() == Some(key))
                .map(|(_, v)| v),
            Kind::Seq(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<Kind>::deserialize(d)?;
        let loc = spanned.referenced;
        Ok(Node {
            kind: spanned.value,
            at: Pos::new(clamp(loc.line()), clamp(loc.column())),
        })
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(KindVisitor)
    }
}

struct KindVisitor;

impl<'de> Visitor<'de> for KindVisitor {
    type Value = Kind;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }

    fn visit_none<E>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Kind, D::Error> {
        d.deserialize_any(KindVisitor)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Kind, E> {
        Ok(Kind::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Kind, E> {
        Ok(Kind::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Kind, E> {
        Ok(Kind::Number(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Kind, E> {
        Number::from_f64(v)
            .map(Kind::Number)
            .ok_or_else(|| E::custom(format!("`{v}` is not a finite number")))
    }

    fn visit_str<E>(self, v: &str) -> Result<Kind, E> {
        Ok(Kind::Str(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Kind, E> {
        Ok(Kind::Str(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kind, A::Error> {
        let mut items = Vec::new();
        while let Some(n) = seq.next_element::<Node>()? {
            items.push(n);
        }
        Ok(Kind::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kind, A::Error> {
        let mut entries = Vec::new();
        while let Some(k) = map.next_key::<Node>()? {
            let v = map.next_value::<Node>()?;
            entries.push((k, v));
        }
        Ok(Kind::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nodes_know_their_positions() {
        let n = parse("a:\n  b: [1, x]\nc: {d: true}\n").unwrap();
        let Kind::Map(top) = &n.kind else {
            panic!("{n:?}")
        };
        assert_eq!(top[0].0.at, Pos::new(1, 1));
        assert_eq!(
            top[0].1.at,
            Pos::new(2, 3),
            "a block mapping starts at its first key"
        );
        assert_eq!(
            n.locate(&["a".into(), "b".into(), "1".into()]).at,
            Pos::new(2, 10)
        );
        assert_eq!(n.locate(&["c".into(), "d".into()]).at, Pos::new(3, 8));
        assert_eq!(n.locate_entry(&["c".into(), "d".into()]), Pos::new(3, 5));
        assert_eq!(
            n.locate_entry(&["a".into(), "b".into(), "1".into()]),
            Pos::new(2, 10)
        );
        assert_eq!(n.locate(&["c".into(), "nope".into()]).at, Pos::new(3, 4));
        assert_eq!(
            n.to_json().unwrap(),
            json!({"a": {"b": [1, "x"]}, "c": {"d": true}})
        );
    }

    #[test]
    fn scalars_follow_yaml_1_2_with_safe_exceptions() {
        let n = parse("[no, yes, true, 08001, 0x1F, 1.5, -3, ~, '', \"7\"]").unwrap();
        assert_eq!(
            n.to_json().unwrap(),
            json!(["no", "yes", true, "08001", 31, 1.5, -3, null, "", "7"])
        );
    }

    #[test]
    fn anchors_and_merge_keys_expand() {
        let n = parse("base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\n").unwrap();
        assert_eq!(
            n.to_json().unwrap(),
            json!({"base": {"x": 1}, "use": {"x": 1, "y": 2}})
        );
    }

    #[test]
    fn syntax_errors_carry_positions() {
        let e = parse("a: 1\na: 2\n").unwrap_err();
        assert_eq!(e.at, Some(Pos::new(2, 1)));
        assert!(e.message.contains("duplicate"), "{}", e.message);
        let e = parse("a: \"open\n").unwrap_err();
        assert_eq!(e.at, Some(Pos::new(1, 4)));
        let e = parse("a: .inf\n").unwrap_err();
        assert_eq!(e.at, Some(Pos::new(1, 4)));
    }

    #[test]
    fn non_scalar_keys_cannot_become_json() {
        let n = parse("? [a]\n: 1\n").unwrap();
        assert_eq!(n.to_json().unwrap_err(), Pos::new(1, 3));
    }
}
