//! Helpers shared by the integration tests (`mod support;` in each `tests/*.rs`).

// Each test binary compiles this module and uses only part of it.
#![allow(dead_code)]

pub mod browser;
pub mod fake_anthropic;
pub mod fake_cloud;
pub mod fake_gemini;
pub mod fake_ollama;
pub mod fake_openai;
pub mod http;
pub mod npm;
pub mod proxy;
pub mod run;
pub mod server;

/// Wait until `cond` holds, polling every 10 ms for at most 10 s: how a test waits for an
/// event it can observe (a fake's request count, a file) instead of guessing its time.
pub async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "waited 10 s for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
