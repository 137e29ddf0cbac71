//! End-to-end tests with the real clients: the Python SDKs and agent frameworks in
//! `.venv` (scripts/setup-python.sh), the npm helpers under Node (scripts/setup-node.sh),
//! the pytest plugin and the wheel, each recording against the fakes in `tests/support`
//! and replaying with them stopped. One binary; `cargo test --test clients e2e_node::`
//! runs one module.

#[path = "../support/mod.rs"]
mod support;

mod e2e_a2a;
mod e2e_clouds;
mod e2e_codex;
mod e2e_crash;
mod e2e_dialects;
mod e2e_faults;
mod e2e_fuzz;
mod e2e_gemini;
mod e2e_mcp;
mod e2e_mcp_http;
mod e2e_node;
mod e2e_python;
mod examples_dialects;
mod pytest_plugin;
mod wheel;
