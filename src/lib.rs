//! agentproxy: a record/replay proxy that makes LLM agents testable deterministically.
//!
//! Pure modules (`assert`, `cassette::format`, `dialect`, `matching`, `redact`, `report`,
//! `spec` but for its file loaders, `trajectory`) take values and return values; I/O lives in
//! `proxy`, `runner`, `cassette::store` and `commands`.

pub mod assert;
pub mod cassette;
pub mod cli;
pub mod commands;
pub mod dialect;
pub mod error;
pub mod matching;
pub mod neutral;
pub mod proxy;
pub mod redact;
pub mod report;
pub mod runner;
pub mod spec;
pub mod sse;
pub mod trajectory;
