//! A function declaration's `parameters` is Gemini's `Schema`, a subset of OpenAPI 3.0:
//! types in upper case (`OBJECT`, `STRING`), `nullable: true` instead of a `null` type, and
//! the int64 bounds (`minItems`, `maxLength`, …) written as strings, as proto3's JSON does.
//! The neutral tool definition holds the JSON Schema it means, so schema checks, faults
//! that break a schema and fuzzed arguments work on it as on any other dialect's.
//! `parametersJsonSchema` is JSON Schema already and is left as it is.

use serde_json::{Map, Value};

/// The int64 fields of `Schema`, which proto3's JSON mapping writes as strings.
const INT64: [&str; 6] = [
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
];

/// Gemini's `Schema` as JSON Schema; what is not a schema object is left as it is.
pub fn json_schema(schema: &Value) -> Value {
    let Value::Object(fields) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in fields {
        let value = match key.as_str() {
            "type" => match value.as_str() {
                // No type: any value.
                Some("TYPE_UNSPECIFIED") => continue,
                Some(t) => Value::String(t.to_ascii_lowercase()),
                None => value.clone(),
            },
            "properties" => match value {
                Value::Object(props) => Value::Object(
                    (props.iter())
                        .map(|(name, s)| (name.clone(), json_schema(s)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" => json_schema(value),
            "anyOf" => match value {
                Value::Array(options) => Value::Array(options.iter().map(json_schema).collect()),
                other => other.clone(),
            },
            k if INT64.contains(&k) => match value.as_str().and_then(|s| s.parse::<u64>().ok()) {
                Some(n) => Value::from(n),
                None => value.clone(),
            },
            // Which order a model should write properties in: not a constraint.
            "propertyOrdering" | "nullable" => continue,
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    if fields.get("nullable") == Some(&Value::Bool(true)) {
        if let Some(Value::String(t)) = out.get("type").cloned() {
            out.insert("type".into(), Value::Array(vec![t.into(), "null".into()]));
        }
        // A nullable enum takes null too.
        if let Some(Value::Array(values)) = out.get_mut("enum") {
            values.push(Value::Null);
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_openapi_schema_becomes_the_json_schema_it_means() {
        let gemini = json!({
            "type": "OBJECT",
            "properties": {
                "city": {"type": "STRING", "minLength": "1", "maxLength": "40"},
                "days": {"type": "INTEGER", "minimum": 1, "maximum": 7, "nullable": true},
                "unit": {"type": "STRING", "enum": ["celsius", "fahrenheit"], "nullable": true},
                "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "maxItems": "3"},
                "where": {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]},
                "any": {"type": "TYPE_UNSPECIFIED"}
            },
            "required": ["city"],
            "propertyOrdering": ["city", "days"]
        });
        assert_eq!(
            json_schema(&gemini),
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "minLength": 1, "maxLength": 40},
                    "days": {"type": ["integer", "null"], "minimum": 1, "maximum": 7},
                    "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit", null]},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                    "where": {"anyOf": [{"type": "string"}, {"type": "number"}]},
                    "any": {}
                },
                "required": ["city"]
            })
        );
        // What a validator makes of it: the schema compiles and means what Gemini does.
        let v = jsonschema::validator_for(&json_schema(&gemini)).unwrap();
        assert!(v.is_valid(&json!({"city": "Paris", "days": null, "tags": ["a"]})));
        assert!(!v.is_valid(&json!({"city": ""})));
        assert!(!v.is_valid(&json!({"days": 3})));
    }
}
