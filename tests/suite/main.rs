//! The integration tests that need the binary and nothing else: each starts agentproxy
//! on `127.0.0.1:0` against the fakes in `tests/support` (which behave like the real
//! providers), or reads the repository (docs, layers, workflows). One binary: the support
//! code is compiled and linked once. A module per concern; `cargo test --test suite
//! hardening::` runs one.

#[path = "../support/mod.rs"]
mod support;

mod a2a;
mod bad_input;
mod determinism;
mod diff_show;
mod doc_samples;
mod doctor;
mod examples;
mod fake_dialects;
mod fake_upstream;
mod faults;
mod hardening;
mod html_report;
mod layers;
mod mcp_hostile;
mod otlp;
mod record_replay;
mod test_command;
mod websocket;
mod workflows;
