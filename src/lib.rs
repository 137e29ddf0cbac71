//! agentproxy: a record/replay proxy that makes LLM agents testable deterministically.
//!
//! Pure modules (`cassette::format`, `dialect`, `matching`, `redact`, `spec` but for its file
//! loaders) take values and return values; I/O lives in `proxy`, `runner`, `cassette::store`
//! and `commands`.

pub mod cassette;
pub mod cli;
pub mod commands;
pub mod dialect;
pub mod error;
pub mod matching;
pub mod proxy;
pub mod redact;
pub mod runner;
pub mod spec;
pub mod trajectory;
