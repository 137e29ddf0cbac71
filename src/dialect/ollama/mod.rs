//! Ollama's native API (`/api/…`).

use serde_json::{json, Value};

/// An error as Ollama's server answers one: `{"error": "…"}`.
pub fn error_body(message: &str) -> Value {
    json!({ "error": message })
}
