//! The normalized form of a request body: transport-only fields removed, user-declared
//! `ignore` pointers removed and `holes` filled, so equal-in-meaning requests are equal values.

use regex::Regex;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use super::key::KeyHash;
use crate::cassette::MatchRules;

/// Top-level fields that only change how the answer is delivered, never what it says.
pub(crate) const TRANSPORT_FIELDS: [&str; 2] = ["stream", "stream_options"];

/// Match rules with their regexes compiled and pointers split, validated once at start-up.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    ignore: Vec<Vec<String>>,
    holes: Vec<CompiledHole>,
    /// The rules as [`MatchRules::describe`] says them.
    described: Option<String>,
    /// How keys are hashed (the cassette's kind).
    hash: KeyHash,
}

#[derive(Debug, Clone)]
struct CompiledHole {
    placeholder: String,
    regex: Regex,
    within: Option<Vec<String>>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RuleError {
    #[error("invalid JSON pointer `{0}` in match.ignore: it must start with `/` (e.g. `/user` or `/messages/*/name`)")]
    Pointer(String),
    #[error("invalid regex for hole `{name}`: {message}")]
    Regex { name: String, message: String },
    #[error("invalid JSON pointer `{pointer}` in hole `{name}`: it must start with `/`")]
    HolePointer { name: String, pointer: String },
}

impl Rules {
    /// No `ignore` pointers and no holes: normalizing only removes the transport fields.
    pub fn is_empty(&self) -> bool {
        self.ignore.is_empty() && self.holes.is_empty()
    }

    pub fn compile(rules: &MatchRules) -> Result<Rules, RuleError> {
        let ignore = rules
            .ignore
            .iter()
            .map(|p| split_pointer(p).ok_or_else(|| RuleError::Pointer(p.clone())))
            .collect::<Result<_, _>>()?;
        let holes = rules
            .holes
            .iter()
            .map(|h| {
                let regex = Regex::new(&h.regex).map_err(|e| RuleError::Regex {
                    name: h.name.clone(),
                    message: e.to_string(),
                })?;
                let within = match &h.within {
                    None => None,
                    Some(p) => Some(split_pointer(p).ok_or_else(|| RuleError::HolePointer {
                        name: h.name.clone(),
                        pointer: p.clone(),
                    })?),
                };
                Ok(CompiledHole {
                    placeholder: format!("${{{}}}", h.name),
                    regex,
                    within,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Rules {
            ignore,
            holes,
            described: rules.describe(),
            hash: KeyHash::default(),
        })
    }

    /// These rules, keying with `hash`.
    pub fn hashed_with(self, hash: KeyHash) -> Rules {
        Rules { hash, ..self }
    }

    /// How keys are hashed under these rules.
    pub fn hash(&self) -> KeyHash {
        self.hash
    }

    /// The rules in a line, for miss reports; `None` when there are none.
    pub fn described(&self) -> Option<&str> {
        self.described.as_deref()
    }
}

/// Split `/a/b~1c/*` into `["a", "b/c", "*"]`; `None` if it does not start with `/`.
fn split_pointer(p: &str) -> Option<Vec<String>> {
    if p.is_empty() {
        return Some(vec![]);
    }
    let rest = p.strip_prefix('/')?;
    Some(
        rest.split('/')
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

/// The normalized body: what the key is computed over.
pub fn normalize(body: &Value, rules: &Rules) -> Value {
    let mut v = body.clone();
    if let Value::Object(map) = &mut v {
        for f in TRANSPORT_FIELDS {
            map.remove(f);
        }
    }
    for pointer in &rules.ignore {
        remove_at(&mut v, pointer);
    }
    for hole in &rules.holes {
        match &hole.within {
            None => fill_hole(&mut v, hole),
            Some(p) => for_each_at(&mut v, p, &mut |target| fill_hole(target, hole)),
        }
    }
    v
}

/// A body seen without its top-level transport fields: it serializes exactly as
/// `normalize(body, &Rules::default())` does, without copying the body. Replay computes the
/// key of every request; the copy `normalize` makes cost as much as hashing it.
pub struct WithoutTransport<'a>(pub &'a Value);

impl Serialize for WithoutTransport<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(map) = self.0 else {
            return self.0.serialize(s);
        };
        let kept = |k: &String| !TRANSPORT_FIELDS.contains(&k.as_str());
        let mut out = s.serialize_map(Some(map.keys().filter(|k| kept(k)).count()))?;
        for (k, v) in map.iter().filter(|(k, _)| kept(k)) {
            out.serialize_entry(k, v)?;
        }
        out.end()
    }
}

/// Remove what a pointer (with `*` wildcards) designates. Array elements are replaced by
/// `null` rather than removed so the indices of their siblings stay put.
fn remove_at(v: &mut Value, pointer: &[String]) {
    let Some((last, parent)) = pointer.split_last() else {
        return;
    };
    for_each_at(v, parent, &mut |target| match target {
        Value::Object(map) => {
            if last == "*" {
                map.clear();
            } else {
                map.remove(last.as_str());
            }
        }
        Value::Array(items) => {
            if last == "*" {
                items.iter_mut().for_each(|i| *i = Value::Null);
            } else if let Some(item) = last.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                *item = Value::Null;
            }
        }
        _ => {}
    });
}

/// Call `f` on every value the pointer designates.
fn for_each_at(v: &mut Value, pointer: &[String], f: &mut dyn FnMut(&mut Value)) {
    let Some((first, rest)) = pointer.split_first() else {
        f(v);
        return;
    };
    match v {
        Value::Object(map) if first == "*" => {
            map.values_mut().for_each(|c| for_each_at(c, rest, f));
        }
        Value::Object(map) => {
            if let Some(c) = map.get_mut(first.as_str()) {
                for_each_at(c, rest, f);
            }
        }
        Value::Array(items) if first == "*" => {
            items.iter_mut().for_each(|c| for_each_at(c, rest, f));
        }
        Value::Array(items) => {
            if let Some(c) = first.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                for_each_at(c, rest, f);
            }
        }
        _ => {}
    }
}

fn fill_hole(v: &mut Value, hole: &CompiledHole) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(r) = hole
                .regex
                .replace_all(s, regex::NoExpand(&hole.placeholder))
            {
                *s = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| fill_hole(i, hole)),
        Value::Object(map) => map.values_mut().for_each(|i| fill_hole(i, hole)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::format::Hole;
    use serde_json::json;

    fn rules(ignore: &[&str], holes: &[(&str, &str, Option<&str>)]) -> Rules {
        Rules::compile(&MatchRules {
            ignore: ignore.iter().map(|s| s.to_string()).collect(),
            holes: holes
                .iter()
                .map(|(n, r, w)| Hole {
                    name: n.to_string(),
                    regex: r.to_string(),
                    within: w.map(str::to_string),
                })
                .collect(),
        })
        .unwrap()
    }

    #[test]
    fn strips_transport_fields_only_at_top_level() {
        let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
                          "messages": [{"stream": 1}]});
        assert_eq!(
            normalize(&body, &Rules::default()),
            json!({"model": "m", "messages": [{"stream": 1}]})
        );
    }

    #[test]
    fn the_view_without_transport_serializes_like_normalize() {
        for body in [
            json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
                   "messages": [{"role": "user", "content": "hi \u{b0} \"q\"", "stream": 1}], "n": 1.5}),
            json!({"stream": false}),
            json!({}),
            json!(["not", "an", "object"]),
            json!("text"),
        ] {
            assert_eq!(
                serde_json::to_string(&WithoutTransport(&body)).unwrap(),
                serde_json::to_string(&normalize(&body, &Rules::default())).unwrap()
            );
        }
    }

    #[test]
    fn ignore_pointers_with_wildcards() {
        let body = json!({"user": "u1", "metadata": {"a": 1},
                          "messages": [{"role": "user", "name": "x"}, {"role": "tool", "name": "y"}]});
        let r = rules(&["/user", "/messages/*/name", "/nothing/here"], &[]);
        assert_eq!(
            normalize(&body, &r),
            json!({"metadata": {"a": 1}, "messages": [{"role": "user"}, {"role": "tool"}]})
        );
    }

    #[test]
    fn ignore_array_element_keeps_indices() {
        let body = json!({"messages": ["a", "b", "c"]});
        let r = rules(&["/messages/1"], &[]);
        assert_eq!(normalize(&body, &r), json!({"messages": ["a", null, "c"]}));
    }

    #[test]
    fn holes_replace_every_match_optionally_scoped() {
        let body = json!({"messages": [
            {"role": "system", "content": "Today is 2026-11-30. Yesterday 2026-11-29."},
            {"role": "user", "content": "Book 2026-12-24"}]});
        let all = rules(&[], &[("date", r"\d{4}-\d{2}-\d{2}", None)]);
        assert_eq!(
            normalize(&body, &all)["messages"][0]["content"],
            json!("Today is ${date}. Yesterday ${date}.")
        );
        let scoped = rules(&[], &[("date", r"\d{4}-\d{2}-\d{2}", Some("/messages/0"))]);
        let n = normalize(&body, &scoped);
        assert_eq!(
            n["messages"][0]["content"],
            json!("Today is ${date}. Yesterday ${date}.")
        );
        assert_eq!(n["messages"][1]["content"], json!("Book 2026-12-24"));
    }

    #[test]
    fn pointer_escapes() {
        assert_eq!(
            split_pointer("/a~1b/c~0d"),
            Some(vec!["a/b".into(), "c~d".into()])
        );
        assert_eq!(split_pointer("nope"), None);
    }

    #[test]
    fn bad_rules_are_reported() {
        let err = Rules::compile(&MatchRules {
            ignore: vec![],
            holes: vec![Hole {
                name: "h".into(),
                regex: "(".into(),
                within: None,
            }],
        })
        .unwrap_err();
        assert!(err.to_string().contains("hole `h`"));
        let err = Rules::compile(&MatchRules {
            ignore: vec!["user".into()],
            holes: vec![],
        })
        .unwrap_err();
        assert_eq!(err, RuleError::Pointer("user".into()));
    }
}
