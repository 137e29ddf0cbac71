//! The pytest plugin's own tests (`tests/python/test_pytest_plugin.py`, written with
//! pytest's `pytester`), run against the fake OpenAI and Anthropic upstreams: record then
//! replay with the upstreams stopped, a miss failing its test with the report, mocks,
//! pytest-xdist with two workers (what each found told once by the controller), SDK clients
//! made at import time, a subprocess agent.

use crate::support;

use std::path::Path;
use std::process::Command;

use support::fake_anthropic::FakeAnthropic;
use support::fake_openai::FakeOpenAi;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_plugin_passes_its_pytester_suite() {
    let openai = FakeOpenAi::start().await;
    let anthropic = FakeAnthropic::start().await;
    let (openai_url, anthropic_url) = (openai.url(), anthropic.url());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(repo().join(".venv/bin/python"))
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(repo().join("tests/python/test_pytest_plugin.py"))
            .current_dir(repo())
            .env("PYTHONPATH", repo().join("python"))
            .env("AGENTPROXY_BIN", support::proxy::bin())
            .env("FAKE_OPENAI_URL", openai_url)
            .env("FAKE_ANTHROPIC_URL", anthropic_url)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("15 passed"), "{text}");
    // Only the record runs reached the upstreams: 2 model requests per recorded test.
    assert!(openai.request_count() > 0 && anthropic.request_count() > 0);
    openai.stop().await;
    anthropic.stop().await;
}
