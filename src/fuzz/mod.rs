//! Tool arguments made from a tool's own JSON schema (the `parameters` a request declares
//! it with): valid ones ([`generate`]), and near misses that break the schema in exactly
//! one named way; each checked against the schema with a JSON Schema validator before it
//! is used.

pub mod generate;

use std::collections::HashSet;
use std::fmt;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde_json::{json, Map, Value};

/// One way arguments break their schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Way {
    /// A `required` property is left out.
    MissingRequired,
    /// A property gets a value of another `type` than declared.
    WrongType,
    /// A property the schema does not declare, where `additionalProperties` is `false`.
    ExtraProperty,
    /// A property with an `enum` gets a value outside it.
    EnumOutsider,
}

impl Way {
    /// Every way, in the order one is chosen when none is named.
    pub const ALL: [Way; 4] = [
        Way::MissingRequired,
        Way::WrongType,
        Way::ExtraProperty,
        Way::EnumOutsider,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Way::MissingRequired => "missing_required",
            Way::WrongType => "wrong_type",
            Way::ExtraProperty => "extra_property",
            Way::EnumOutsider => "enum_outsider",
        }
    }

    pub fn from_name(name: &str) -> Option<Way> {
        Way::ALL.into_iter().find(|w| w.as_str() == name)
    }

    /// The names of every way, for error messages.
    pub fn names() -> String {
        let names: Vec<&str> = Way::ALL.iter().map(|w| w.as_str()).collect();
        names.join(", ")
    }
}

impl fmt::Display for Way {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `args` broken one way for `schema`: `way`, or the first of [`Way::ALL`] the schema
/// allows. The result fails validation against `schema`; `None` when no such way exists
/// (no required property, no typed property, …) or the schema does not compile.
pub fn near_miss(schema: &Value, args: &Value, way: Option<Way>) -> Option<(Way, Value)> {
    let validator = jsonschema::validator_for(schema).ok()?;
    let ways = match way {
        Some(w) => vec![w],
        None => Way::ALL.to_vec(),
    };
    let args = args.as_object().cloned().unwrap_or_default();
    ways.into_iter().find_map(|w| {
        let broken = break_checked(&validator, schema, &args, w, &mut |_| 0)?;
        Some((w, broken))
    })
}

/// `args` broken `way`, if the schema gives it a hold and the result fails `validator`.
/// `choose(n)` picks which of `n` candidate properties is broken.
fn break_checked(
    validator: &jsonschema::Validator,
    schema: &Value,
    args: &Map<String, Value>,
    way: Way,
    choose: &mut dyn FnMut(usize) -> usize,
) -> Option<Value> {
    let broken = Value::Object(break_one(schema, args, way, choose)?);
    (!validator.is_valid(&broken)).then_some(broken)
}

/// The arguments of one fuzz run.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub arguments: Value,
    /// How they break the schema; `None` for arguments that satisfy it.
    pub violation: Option<Way>,
}

/// How many tries make one value before the schema is judged to allow no more.
const TRIES: usize = 64;

/// `valid` runs whose arguments satisfy `schema`, then `invalid` runs whose arguments are a
/// valid value broken in exactly one way (the ways taken in turn), every one distinct and
/// checked with a JSON Schema validator. The same seed gives the same runs. Fewer runs come
/// back when the schema allows fewer distinct arguments; an error says why there are none.
pub fn runs(schema: &Value, valid: usize, invalid: usize, seed: u64) -> Result<Vec<Run>, String> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the schema does not compile as JSON Schema: {e}"))?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(valid + invalid);
    let fresh = |rng: &mut Xoshiro256PlusPlus| {
        (0..TRIES)
            .map(|_| generate::Maker::new(schema, rng).make())
            .find(|v| validator.is_valid(v))
    };
    let none_valid = || {
        let skipped = generate::not_generated(schema);
        let why = if skipped.is_empty() {
            String::new()
        } else {
            format!(" (it uses {}, which are not generated)", skipped.join(", "))
        };
        format!("no value made from the schema satisfies it in {TRIES} tries{why}")
    };
    for _ in 0..valid {
        let mut made = None;
        for _ in 0..TRIES {
            let v = fresh(&mut rng).ok_or_else(none_valid)?;
            if seen.insert(v.to_string()) {
                made = Some(v);
                break;
            }
        }
        let Some(arguments) = made else { break };
        out.push(Run {
            arguments,
            violation: None,
        });
    }
    for i in 0..invalid {
        let mut made = None;
        // The run's way if a valid value gives it a hold, else the next way.
        'ways: for k in 0..Way::ALL.len() {
            let way = Way::ALL[(i + k) % Way::ALL.len()];
            for _ in 0..TRIES {
                let base = fresh(&mut rng).ok_or_else(none_valid)?;
                let base = base.as_object().cloned().unwrap_or_default();
                let mut choose = |n: usize| rng.random_range(0..n);
                let Some(broken) = break_checked(&validator, schema, &base, way, &mut choose)
                else {
                    continue;
                };
                if seen.insert(broken.to_string()) {
                    made = Some((way, broken));
                    break 'ways;
                }
            }
        }
        let Some((way, arguments)) = made else {
            if out.iter().all(|r| r.violation.is_none()) {
                return Err("the schema gives no way to break its arguments (no required, typed, closed or enum property)".into());
            }
            break;
        };
        out.push(Run {
            arguments,
            violation: Some(way),
        });
    }
    Ok(out)
}

/// `args` with one thing changed the way `way` says, if the schema gives it a hold;
/// `choose(n)` picks among `n` properties that would do.
fn break_one(
    schema: &Value,
    args: &Map<String, Value>,
    way: Way,
    choose: &mut dyn FnMut(usize) -> usize,
) -> Option<Map<String, Value>> {
    let properties = schema["properties"].as_object();
    // A property the arguments carry, in the schema's order, that `pick` accepts.
    let mut present = |pick: &dyn Fn(&Value) -> bool| -> Option<(String, Value)> {
        let props = properties?;
        let fit: Vec<(&String, &Value)> = props
            .iter()
            .filter(|(name, prop)| args.contains_key(*name) && pick(prop))
            .collect();
        let (name, prop) = fit.get(choose(fit.len().max(1)))?;
        Some(((*name).clone(), (*prop).clone()))
    };
    let mut out = args.clone();
    match way {
        Way::MissingRequired => {
            let required = schema["required"].as_array()?;
            let fit: Vec<&str> = required
                .iter()
                .filter_map(Value::as_str)
                .filter(|n| args.contains_key(*n))
                .collect();
            let name = fit.get(choose(fit.len().max(1)))?;
            out.remove(*name);
        }
        Way::WrongType => {
            let (name, prop) = present(&|p| p["type"].is_string())?;
            out.insert(name, of_another_type(prop["type"].as_str()?));
        }
        Way::ExtraProperty => {
            if schema["additionalProperties"] != Value::Bool(false) {
                return None;
            }
            let name = (0..)
                .map(|n| match n {
                    0 => "unexpected".to_owned(),
                    n => format!("unexpected_{n}"),
                })
                .find(|n| properties.is_none_or(|p| !p.contains_key(n)))?;
            out.insert(name, Value::Bool(true));
        }
        Way::EnumOutsider => {
            let (name, prop) = present(&|p| p["enum"].is_array())?;
            let allowed = prop["enum"].as_array()?;
            let base = allowed.iter().find_map(Value::as_str).unwrap_or("value");
            let outsider = (0..)
                .map(|n| json!(format!("{base}_{}", "x".repeat(n + 1))))
                .find(|v| !allowed.contains(v))?;
            out.insert(name, outsider);
        }
    }
    Some(out)
}

/// A value that is not of JSON Schema type `ty`.
fn of_another_type(ty: &str) -> Value {
    match ty {
        "string" => json!(0),
        "integer" | "number" => json!("0"),
        "boolean" => json!("true"),
        "array" => json!({}),
        _ => json!([]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1}
            },
            "required": ["city"],
            "additionalProperties": false
        })
    }

    fn valid(schema: &Value, v: &Value) -> bool {
        jsonschema::validator_for(schema).unwrap().is_valid(v)
    }

    #[test]
    fn each_way_breaks_valid_arguments_and_only_by_its_change() {
        let args = json!({"city": "Paris", "unit": "celsius", "days": 2});
        assert!(valid(&schema(), &args));
        let cases = [
            (Way::MissingRequired, json!({"unit": "celsius", "days": 2})),
            (
                Way::WrongType,
                json!({"city": 0, "unit": "celsius", "days": 2}),
            ),
            (
                Way::ExtraProperty,
                json!({"city": "Paris", "unit": "celsius", "days": 2, "unexpected": true}),
            ),
            (
                Way::EnumOutsider,
                json!({"city": "Paris", "unit": "celsius_x", "days": 2}),
            ),
        ];
        for (way, want) in cases {
            let (got_way, broken) = near_miss(&schema(), &args, Some(way)).unwrap();
            assert_eq!((got_way, &broken), (way, &want));
            assert!(!valid(&schema(), &broken), "{way}");
        }
    }

    #[test]
    fn without_a_named_way_the_first_the_schema_allows_is_taken() {
        let args = json!({"city": "Paris"});
        assert_eq!(
            near_miss(&schema(), &args, None).unwrap().0,
            Way::MissingRequired
        );
        let loose = json!({"type": "object", "properties": {"n": {"type": "number"}}});
        let (way, broken) = near_miss(&loose, &json!({"n": 1}), None).unwrap();
        assert_eq!((way, broken), (Way::WrongType, json!({"n": "0"})));
    }

    #[test]
    fn a_schema_that_gives_no_hold_gives_no_near_miss() {
        let open = json!({"type": "object"});
        assert_eq!(near_miss(&open, &json!({"a": 1}), None), None);
        // No enum among the properties the call carries.
        assert_eq!(
            near_miss(
                &schema(),
                &json!({"city": "Paris"}),
                Some(Way::EnumOutsider)
            ),
            None
        );
        // The extra property's name steers clear of declared ones.
        let s = json!({"type": "object", "properties": {"unexpected": {}}, "additionalProperties": false});
        let (_, broken) = near_miss(&s, &json!({}), Some(Way::ExtraProperty)).unwrap();
        assert_eq!(broken, json!({"unexpected_1": true}));
        // A schema that does not compile.
        assert_eq!(near_miss(&json!({"type": 7}), &json!({}), None), None);
    }

    /// A send_email tool's schema: six properties, two required, closed.
    fn email_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "to": {"type": "string", "format": "email"},
                "subject": {"type": "string", "minLength": 1, "maxLength": 80},
                "body": {"type": "string"},
                "priority": {"type": "string", "enum": ["low", "normal", "high"]},
                "cc": {"type": "array", "items": {"type": "string", "format": "email"}, "maxItems": 3},
                "send_at": {"type": "integer", "minimum": 0}
            },
            "required": ["to", "subject"],
            "additionalProperties": false
        })
    }

    #[test]
    fn fuzz_runs_are_valid_then_near_misses_each_checked() {
        let schema = email_schema();
        let runs = runs(&schema, 16, 16, 1).unwrap();
        assert_eq!(runs.len(), 32);
        for (i, r) in runs.iter().enumerate() {
            let ok = valid(&schema, &r.arguments);
            assert_eq!(ok, r.violation.is_none(), "run {i}: {}", r.arguments);
        }
        // Every way is taken, in turn.
        let ways: Vec<Way> = runs[16..20].iter().filter_map(|r| r.violation).collect();
        assert_eq!(ways, Way::ALL);
        let distinct: HashSet<String> = runs.iter().map(|r| r.arguments.to_string()).collect();
        assert_eq!(distinct.len(), 32);
    }

    #[test]
    fn fuzz_runs_are_the_same_for_a_seed() {
        let schema = email_schema();
        assert_eq!(runs(&schema, 8, 8, 7), runs(&schema, 8, 8, 7));
        assert_ne!(runs(&schema, 8, 8, 7), runs(&schema, 8, 8, 8));
    }

    #[test]
    fn a_schema_that_allows_few_values_gives_few_runs() {
        let small = json!({"type": "object", "properties": {"unit": {"enum": ["c", "f"]}}, "required": ["unit"]});
        let got = runs(&small, 16, 0, 1).unwrap();
        let mut args: Vec<String> = got.iter().map(|r| r.arguments.to_string()).collect();
        args.sort();
        assert_eq!(args, [r#"{"unit":"c"}"#, r#"{"unit":"f"}"#]);
    }

    #[test]
    fn a_schema_that_cannot_be_fuzzed_says_why() {
        let pattern = json!({"type": "object", "properties": {"id": {"type": "string", "pattern": "^[0-9]{6}$"}}, "required": ["id"]});
        assert_eq!(
            runs(&pattern, 1, 0, 1).unwrap_err(),
            "no value made from the schema satisfies it in 64 tries (it uses pattern, which are not generated)"
        );
        let open = json!({"type": "object", "properties": {"note": {}}});
        assert_eq!(
            runs(&open, 0, 1, 1).unwrap_err(),
            "the schema gives no way to break its arguments (no required, typed, closed or enum property)"
        );
        assert!(runs(&json!({"type": 7}), 1, 0, 1)
            .unwrap_err()
            .starts_with("the schema does not compile as JSON Schema"));
    }

    #[test]
    fn ways_are_named_as_in_the_spec() {
        for w in Way::ALL {
            assert_eq!(Way::from_name(w.as_str()), Some(w));
        }
        assert_eq!(
            Way::names(),
            "missing_required, wrong_type, extra_property, enum_outsider"
        );
    }
}
