//! agentproxy: a record/replay proxy that makes LLM agents testable deterministically.

pub mod assert;
