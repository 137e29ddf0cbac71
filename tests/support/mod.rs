//! Helpers shared by the integration tests (`mod support;` in each `tests/*.rs`).

// Each test binary compiles this module and uses only part of it.
#![allow(dead_code)]

pub mod browser;
pub mod fake_anthropic;
pub mod fake_gemini;
pub mod fake_ollama;
pub mod fake_openai;
pub mod http;
pub mod npm;
pub mod proxy;
pub mod run;
pub mod server;
