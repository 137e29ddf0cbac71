//! Tool arguments made from a tool's own JSON schema (the `parameters` a request declares
//! it with): near misses that break the schema in exactly one named way, each checked
//! invalid with a JSON Schema validator before it is used.

use std::fmt;

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
        let broken = Value::Object(break_one(schema, &args, w)?);
        (!validator.is_valid(&broken)).then_some((w, broken))
    })
}

/// `args` with one thing changed the way `way` says, if the schema gives it a hold.
fn break_one(schema: &Value, args: &Map<String, Value>, way: Way) -> Option<Map<String, Value>> {
    let properties = schema["properties"].as_object();
    // A property the arguments carry, in the schema's order, that `pick` accepts.
    let present = |pick: &dyn Fn(&Value) -> bool| -> Option<(String, Value)> {
        let props = properties?;
        let (name, prop) = props
            .iter()
            .find(|(name, prop)| args.contains_key(*name) && pick(prop))?;
        Some((name.clone(), prop.clone()))
    };
    let mut out = args.clone();
    match way {
        Way::MissingRequired => {
            let required = schema["required"].as_array()?;
            let name = required
                .iter()
                .filter_map(Value::as_str)
                .find(|n| args.contains_key(*n))?;
            out.remove(name);
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
