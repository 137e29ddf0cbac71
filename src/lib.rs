//! agentproxy: a record/replay proxy that makes LLM agents testable deterministically.
//!
//! Pure modules (`assert`, `cassette::format`, `dialect`, `matching`, `redact`, `report`,
//! Pure modules (`cassette::format`, `dialect`, `matching`, `redact`, `spec` but for its file
//! `cassette::store` and `commands`.
//! `trajectory`) take values and return values; I/O lives in `proxy`, `runner`,
//! and `commands`.
//! loaders) take values and return values; I/O lives in `proxy`, `runner`, `cassette::store`

pub mod assert;
pub mod cassette;
pub mod cli;
pub mod commands;
pub mod dialect;
pub mod error;
pub mod matching;
pub mod proxy;
pub mod redact;
pub mod report;
pub mod runner;
pub mod spec;
pub mod trajectory;
