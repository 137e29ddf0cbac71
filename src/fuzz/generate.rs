//! Values that satisfy a JSON schema, made at random from a seeded generator: the valid
//! arguments of a fuzz run. Generation reads the keywords real tool schemas use
//! ([`GENERATED`]); a value is always checked against the whole schema, and one that fails
//! (a keyword of [`NOT_GENERATED`] it did not meet) is made again.

use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::IndexedRandom;
use rand::RngExt;
use serde_json::{json, Map, Number, Value};

/// The keywords values are generated from.
pub const GENERATED: [&str; 22] = [
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "anyOf",
    "oneOf",
    "$ref",
    "$defs",
];

/// Keywords that constrain values but are not generated from: a value that happens to
/// meet them passes the check; a schema that needs them met every time gives no value.
pub const NOT_GENERATED: [&str; 15] = [
    "pattern",
    "patternProperties",
    "propertyNames",
    "allOf",
    "not",
    "if",
    "dependentRequired",
    "dependentSchemas",
    "contains",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "dependencies",
];

/// Deeper than this, optional properties are left out and arrays are as short as allowed,
/// so a recursive schema ends.
const SHALLOW: usize = 4;
/// Deeper than this a `$ref` is not followed (the value is `null`, and fails the check).
const DEEPEST: usize = 12;

/// The most values, array items and string characters one generated value has, all nested
/// ones counted together: each count keyword is capped on its own, but caps nested in each
/// other multiply (64 Ki items of 64 Ki-character strings is 4 GiB), and so do required
/// properties that refer back to their schema. A schema that asks for more gets a value
/// cut short, which its check then finds invalid.
const VALUE_BUDGET: usize = 1 << 20;

/// A generator of values for one schema (`root`, which `$ref`s point into).
pub struct Maker<'a> {
    root: &'a Value,
    rng: &'a mut Xoshiro256PlusPlus,
    /// What is left of [`VALUE_BUDGET`] for the value being made.
    budget: usize,
}

impl<'a> Maker<'a> {
    pub fn new(root: &'a Value, rng: &'a mut Xoshiro256PlusPlus) -> Maker<'a> {
        Maker {
            root,
            rng,
            budget: VALUE_BUDGET,
        }
    }

    /// Take up to `n` units of the budget; how many were left to take.
    fn spend(&mut self, n: usize) -> usize {
        let n = n.min(self.budget);
        self.budget -= n;
        n
    }

    /// A value for the root schema; not yet checked.
    pub fn make(&mut self) -> Value {
        self.budget = VALUE_BUDGET;
        self.value(self.root, 0)
    }

    fn value(&mut self, s: &Value, depth: usize) -> Value {
        // Every value costs one unit: a schema whose required properties refer back to
        // itself would otherwise make a tree of billions of nodes within the depth limit.
        if self.spend(1) == 0 {
            return Value::Null;
        }
        let Some(obj) = s.as_object() else {
            // `true` (anything) or `false` (nothing: no value will pass).
            return if s == &Value::Bool(false) {
                Value::Null
            } else {
                self.any()
            };
        };
        if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
            let target = r.strip_prefix('#').and_then(|p| self.root.pointer(p));
            return match target {
                Some(t) if depth < DEEPEST => self.value(t, depth + 1),
                _ => Value::Null,
            };
        }
        if let Some(c) = obj.get("const") {
            return c.clone();
        }
        if let Some(choices) = obj.get("enum").and_then(Value::as_array) {
            return choices.choose(self.rng).cloned().unwrap_or(Value::Null);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = obj.get(key).and_then(Value::as_array) {
                let Some(branch) = branches.choose(self.rng) else {
                    return Value::Null;
                };
                // The branch with the keywords beside `anyOf` (a shared `type`, say).
                let mut merged = obj.clone();
                merged.remove(key);
                if let Some(b) = branch.as_object() {
                    merged.extend(b.clone());
                }
                return self.value(&Value::Object(merged), depth);
            }
        }
        match self.type_of(obj).as_str() {
            "object" => self.object(obj, depth),
            "array" => self.array(obj, depth),
            "string" => self.string(obj),
            "integer" => self.integer(obj),
            "number" => self.number(obj),
            "boolean" => Value::Bool(self.rng.random_bool(0.5)),
            "null" => Value::Null,
            _ => self.any(),
        }
    }

    /// The declared type (one of a list of them), or the one the keywords imply.
    fn type_of(&mut self, obj: &Map<String, Value>) -> String {
        match obj.get("type") {
            Some(Value::String(t)) => return t.clone(),
            Some(Value::Array(ts)) => {
                if let Some(t) = ts.choose(self.rng).and_then(Value::as_str) {
                    return t.to_owned();
                }
            }
            _ => {}
        }
        let has = |keys: &[&str]| keys.iter().any(|k| obj.contains_key(*k));
        let implied = if has(&["properties", "required", "additionalProperties"]) {
            "object"
        } else if has(&["items", "prefixItems", "minItems", "maxItems"]) {
            "array"
        } else if has(&["minLength", "maxLength", "format", "pattern"]) {
            "string"
        } else if has(&["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]) {
            "number"
        } else {
            ""
        };
        implied.to_owned()
    }

    /// A string, a whole number or a boolean.
    fn any(&mut self) -> Value {
        match self.rng.random_range(0..3) {
            0 => Value::String(self.text(0, 8)),
            1 => json!(self.rng.random_range(-100..=100)),
            _ => Value::Bool(self.rng.random_bool(0.5)),
        }
    }

    fn object(&mut self, obj: &Map<String, Value>, depth: usize) -> Value {
        let empty = Map::new();
        let props = obj
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required: Vec<&str> = (obj.get("required").and_then(Value::as_array))
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut out = Map::new();
        for (name, prop) in props {
            let wanted =
                required.contains(&name.as_str()) || (depth < SHALLOW && self.rng.random_bool(0.5));
            if wanted {
                out.insert(name.clone(), self.value(prop, depth + 1));
            }
        }
        // Required names the properties do not declare take `additionalProperties`' form.
        let extra = obj.get("additionalProperties").filter(|a| a.is_object());
        for name in required.iter().filter(|n| !props.contains_key(**n)) {
            let v = match extra {
                Some(schema) => self.value(schema, depth + 1),
                None => Value::String(self.text(1, 8)),
            };
            out.insert((*name).to_owned(), v);
        }
        Value::Object(out)
    }

    fn array(&mut self, obj: &Map<String, Value>, depth: usize) -> Value {
        let min = count(obj, "minItems").unwrap_or(0);
        let max = count(obj, "maxItems").unwrap_or(usize::MAX).max(min);
        let len = if depth < SHALLOW {
            self.rng.random_range(min..=max.min(min + 3))
        } else {
            min
        };
        let len = self.spend(len);
        // A list of schemas under `items` is the older spelling of `prefixItems`.
        let prefix = (obj.get("prefixItems").or(obj.get("items")))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let rest = obj.get("items").filter(|i| !i.is_array());
        let any = Value::Bool(true);
        let items = (0..len)
            .map(|i| {
                let schema = prefix.get(i).or(rest).unwrap_or(&any);
                self.value(schema, depth + 1)
            })
            .collect();
        Value::Array(items)
    }

    fn string(&mut self, obj: &Map<String, Value>) -> Value {
        if let Some(s) = obj
            .get("format")
            .and_then(Value::as_str)
            .and_then(|f| self.formatted(f))
        {
            return Value::String(s);
        }
        let min = count(obj, "minLength").unwrap_or(0);
        let max = count(obj, "maxLength").unwrap_or(usize::MAX).max(min);
        // The shortest and the longest allowed are the likeliest to break a program.
        let len = match self.rng.random_range(0..4) {
            0 => min,
            1 if max <= min + 64 => max,
            _ => self.rng.random_range(min..=max.min(min + 12)),
        };
        Value::String(self.text(len, len))
    }

    /// Text of `min..=max` characters: letters and digits, with spaces, quotes and
    /// characters beyond ASCII among them.
    fn text(&mut self, min: usize, max: usize) -> String {
        const PLAIN: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        const ODD: [char; 10] = [' ', '"', '\'', '\\', '\n', 'é', 'ß', '日', '本', '🙂'];
        let len = self.rng.random_range(min..=max);
        let len = self.spend(len);
        (0..len)
            .map(|_| {
                if self.rng.random_bool(0.15) {
                    *ODD.choose(self.rng).unwrap_or(&' ')
                } else {
                    char::from(*PLAIN.choose(self.rng).unwrap_or(&b'a'))
                }
            })
            .collect()
    }

    fn word(&mut self) -> String {
        const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
        let len = self.rng.random_range(1..=8);
        (0..len)
            .map(|_| char::from(*LOWER.choose(self.rng).unwrap_or(&b'a')))
            .collect()
    }

    /// A string in a common `format`; `None` for a format not known here.
    fn formatted(&mut self, format: &str) -> Option<String> {
        let r = &mut *self.rng;
        let (mo, d, h, mi, s) = (
            r.random_range(1..=12),
            r.random_range(1..=28),
            r.random_range(0..24),
            r.random_range(0..60),
            r.random_range(0..60),
        );
        Some(match format {
            "email" | "idn-email" => format!("{}@example.com", self.word()),
            "date" => format!("2026-{mo:02}-{d:02}"),
            "date-time" => format!("2026-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"),
            "time" => format!("{h:02}:{mi:02}:{s:02}Z"),
            "uri" | "url" | "iri" => format!("https://example.com/{}", self.word()),
            "hostname" | "idn-hostname" => format!("{}.example.com", self.word()),
            "ipv4" => format!("127.0.0.{}", self.rng.random_range(1..255)),
            "ipv6" => "::1".to_owned(),
            "uuid" => {
                let hex: String = (0..32)
                    .map(|_| char::from(b"0123456789abcdef"[self.rng.random_range(0..16)]))
                    .collect();
                format!(
                    "{}-{}-4{}-8{}-{}",
                    &hex[..8],
                    &hex[8..12],
                    &hex[13..16],
                    &hex[17..20],
                    &hex[20..]
                )
            }
            _ => return None,
        })
    }

    fn integer(&mut self, obj: &Map<String, Value>) -> Value {
        let (lo, hi) = bounds(obj, true);
        let step = obj
            .get("multipleOf")
            .and_then(Value::as_f64)
            .filter(|m| *m >= 1.0 && m.fract() == 0.0);
        let n = match step {
            Some(m) => {
                let (a, b) = ((lo / m).ceil() as i64, (hi / m).floor() as i64);
                self.pick(a, b) * m as i64
            }
            None => self.pick(lo as i64, hi as i64),
        };
        json!(n)
    }

    /// A whole number in `lo..=hi`, the ends and zero more often than the rest.
    fn pick(&mut self, lo: i64, hi: i64) -> i64 {
        if lo > hi {
            return lo;
        }
        match self.rng.random_range(0..6) {
            0 => lo,
            1 => hi,
            2 if lo <= 0 && 0 <= hi => 0,
            _ => self.rng.random_range(lo..=hi),
        }
    }

    fn number(&mut self, obj: &Map<String, Value>) -> Value {
        let (lo, hi) = bounds(obj, false);
        if let Some(m) = obj
            .get("multipleOf")
            .and_then(Value::as_f64)
            .filter(|m| *m > 0.0)
        {
            let k = self.pick((lo / m).ceil() as i64, (hi / m).floor() as i64);
            return Number::from_f64(k as f64 * m).map_or(Value::Null, Value::Number);
        }
        let x = match self.rng.random_range(0..4) {
            0 => lo,
            1 => hi,
            _ => lo + self.rng.random::<f64>() * (hi - lo),
        };
        // Three decimals read better in a report; the check catches a rounding past a bound.
        let x = (x * 1000.0).round() / 1000.0;
        Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}

/// A count keyword (`minItems`, `maxLength`, …), bounded so a generated value stays small.
fn count(obj: &Map<String, Value>, key: &str) -> Option<usize> {
    let n = obj.get(key)?.as_u64()?;
    Some(usize::try_from(n.min(1 << 16)).unwrap_or(1 << 16))
}

/// The closed range a number must lie in: the declared bounds (an exclusive one moved
/// inside, by one for whole numbers), else a window of a thousand around what is given.
fn bounds(obj: &Map<String, Value>, whole: bool) -> (f64, f64) {
    const WINDOW: f64 = 1000.0;
    // Beyond 2^53 a float no longer holds every whole number.
    const LIMIT: f64 = 9_007_199_254_740_992.0;
    let nudge = if whole { 1.0 } else { 1e-3 };
    let get = |k: &str| obj.get(k).and_then(Value::as_f64);
    let lo = match (get("minimum"), get("exclusiveMinimum")) {
        (Some(a), Some(b)) => Some(a.max(b + nudge)),
        (a, b) => a.or(b.map(|b| b + nudge)),
    };
    let hi = match (get("maximum"), get("exclusiveMaximum")) {
        (Some(a), Some(b)) => Some(a.min(b - nudge)),
        (a, b) => a.or(b.map(|b| b - nudge)),
    };
    let (lo, hi) = match (lo, hi) {
        (Some(lo), Some(hi)) => (lo, hi),
        (Some(lo), None) => (lo, lo + WINDOW),
        (None, Some(hi)) => (hi - WINDOW, hi),
        (None, None) => (-WINDOW, WINDOW),
    };
    let (lo, hi) = (lo.clamp(-LIMIT, LIMIT), hi.clamp(-LIMIT, LIMIT));
    if whole {
        (lo.ceil(), hi.floor())
    } else {
        (lo, hi)
    }
}

/// The keywords of [`NOT_GENERATED`] that `schema` uses, anywhere in it.
pub fn not_generated(schema: &Value) -> Vec<&'static str> {
    let mut found = Vec::new();
    let mut stack = vec![schema];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    if let Some(kw) = NOT_GENERATED.iter().find(|kw| **kw == k) {
                        if !found.contains(kw) {
                            found.push(*kw);
                        }
                    }
                    // Under these the keys are names, not keywords.
                    match (k.as_str(), child) {
                        ("properties" | "$defs" | "definitions", Value::Object(named)) => {
                            stack.extend(named.values())
                        }
                        _ => stack.push(child),
                    }
                }
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    found.sort_unstable();
    found
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use serde_json::json;

    use super::*;

    /// Values made from `schema` with seeds 0..n.
    fn made(schema: &Value, n: u64) -> Vec<Value> {
        (0..n)
            .map(|seed| {
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                Maker::new(schema, &mut rng).make()
            })
            .collect()
    }

    #[test]
    fn every_generated_keyword_is_met_without_a_retry() {
        let schemas = [
            json!({"type": "string", "minLength": 3, "maxLength": 5}),
            json!({"type": "string", "format": "email"}),
            json!({"type": "string", "format": "date-time"}),
            json!({"type": "string", "format": "uuid"}),
            json!({"type": "integer", "minimum": 10, "exclusiveMaximum": 13}),
            json!({"type": "integer", "multipleOf": 5, "minimum": 1, "maximum": 30}),
            json!({"type": "number", "exclusiveMinimum": 0, "maximum": 1}),
            json!({"type": "number", "multipleOf": 0.5, "minimum": -2, "maximum": 2}),
            json!({"type": ["string", "null"], "maxLength": 2}),
            json!({"const": "fixed"}),
            json!({"enum": [1, "two", null]}),
            json!({"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 4}),
            json!({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2}),
            json!({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "minLength": 1}]}),
            json!({"type": "object", "oneOf": [
                {"properties": {"kind": {"const": "a"}}, "required": ["kind"]},
                {"properties": {"kind": {"const": "b"}, "n": {"type": "integer"}}, "required": ["kind", "n"]}
            ]}),
            json!({
                "type": "object",
                "properties": {"to": {"$ref": "#/$defs/address"}, "cc": {"type": "array", "items": {"$ref": "#/$defs/address"}}},
                "required": ["to"],
                "additionalProperties": false,
                "$defs": {"address": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}}, "required": ["email"]}}
            }),
            json!({"type": "object", "required": ["free"], "additionalProperties": {"type": "integer"}}),
            // Recursive: a tree of nodes ends.
            json!({"$defs": {"node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"}),
        ];
        for schema in schemas {
            let validator = jsonschema::validator_for(&schema).unwrap();
            for v in made(&schema, 64) {
                assert!(validator.is_valid(&v), "{v} for {schema}");
            }
        }
    }

    #[test]
    fn values_reach_the_ends_of_their_ranges() {
        let ints = made(&json!({"type": "integer", "minimum": 1, "maximum": 9}), 200);
        assert!(ints.contains(&json!(1)) && ints.contains(&json!(9)));
        let texts = made(&json!({"type": "string", "maxLength": 40}), 200);
        assert!(texts.contains(&json!("")));
        assert!(texts
            .iter()
            .any(|t| t.as_str().unwrap().chars().count() == 40));
        assert!(texts.iter().any(|t| !t.as_str().unwrap().is_ascii()));
        // An optional property is sometimes there, sometimes not.
        let objs = made(&json!({"properties": {"a": {"type": "boolean"}}}), 50);
        assert!(objs.contains(&json!({})) && objs.iter().any(|o| o.get("a").is_some()));
    }

    #[test]
    fn caps_nested_in_each_other_do_not_multiply_past_the_budget() {
        let schema = json!({"type": "array", "minItems": 65536, "items": {
            "type": "array", "minItems": 65536, "items": {"type": "string", "minLength": 65536}}});
        let started = std::time::Instant::now();
        for v in made(&schema, 2) {
            let size = v.to_string().len();
            assert!(size < 16 << 20, "{size} bytes");
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        // Twenty required properties, each the whole schema again: 20^12 values within
        // the depth limit, unless each value is counted.
        let names: Vec<String> = (0..20).map(|i| format!("p{i}")).collect();
        let props: Map<String, Value> = (names.iter())
            .map(|n| (n.clone(), json!({"$ref": "#"})))
            .collect();
        let schema = json!({"type": "object", "required": names, "properties": props});
        let started = std::time::Instant::now();
        for v in made(&schema, 2) {
            let size = v.to_string().len();
            assert!(size < 64 << 20, "{size} bytes");
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn the_keywords_not_generated_are_named() {
        let schema = json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "pattern": "^[a-z]+$"},
                "tags": {"type": "array", "uniqueItems": true}
            },
            "allOf": [{"required": ["pattern"]}]
        });
        assert_eq!(not_generated(&schema), ["allOf", "pattern", "uniqueItems"]);
        assert!(not_generated(&json!({"properties": {"if": {}}})).is_empty());
    }
}
