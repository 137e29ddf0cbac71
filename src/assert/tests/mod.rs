//! Tests of the assertion engine, by layer: matcher semantics, matcher compile errors, call
//! sequence checks.

mod calls;
mod compile;
mod matchers;

use serde_json::Value;

/// Parses a JSON literal written in a test.
fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("bad JSON in test: {e}: {text}"))
}
