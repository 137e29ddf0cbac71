//! agentproxy: a record/replay proxy that makes LLM agents testable deterministically.
//!
//! # Layers
//!
//! Modules are layered, lowest first; a module names only modules of lower layers (and
//! its own files), never one above it or beside it. `tests/suite/layers.rs` checks the imports
//! against this list, which it reads from here.
//!
//! - layer 1, leaves: `neutral` `sse` `redact` `assert` `fuzz` `os`
//! - layer 2: `dialect` `fault`
//! - layer 3: `cassette`
//! - layer 4: `matching`
//! - layer 5: `trajectory`
//! - layer 6: `spec`
//! - layer 7: `report`
//! - layer 8: `proxy`
//! - layer 9: `runner`
//! - layer 10: `doctor` `determinism`
//! - layer 11: `cli` `error`
//! - layer 12: `commands`
//!
//! Pure modules (`assert`, `cassette::format`, `dialect`, `fault`, `fuzz`, `matching`, `neutral`, `redact`,
//! `report`, `spec` but for its file loaders, `sse`, `trajectory`) take values and return
//! values; I/O lives in `proxy`, `runner`, `doctor`, `determinism::driver`, `cassette::store`
//! and `commands`.
//! `docs/architecture.md` says where each concern lives and how to add a dialect.

/// `eprintln!` for what agentproxy tells its user on standard error, without the panic
/// when the write fails: a reader of stderr that went away (`agentproxy test … 2>&1 |
/// head`) must not take the proxy, and the program it serves, down with it. What cannot
/// be written is dropped.
#[macro_export]
macro_rules! tell {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

pub(crate) mod assert;
pub mod cassette;
pub mod cli;
pub mod commands;
pub(crate) mod determinism;
pub mod dialect;
pub(crate) mod doctor;
pub mod error;
pub mod fault;
pub mod fuzz;
pub mod matching;
pub(crate) mod neutral;
pub(crate) mod os;
pub(crate) mod proxy;
pub mod redact;
pub(crate) mod report;
pub(crate) mod runner;
pub(crate) mod spec;
pub mod sse;
#[cfg(test)]
mod tests;

/// The unit tests count allocations (see `os`): code run in a forked child must make none.
#[cfg(test)]
#[global_allocator]
static ALLOCATOR: os::tests::Counting = os::tests::Counting;
pub(crate) mod trajectory;
