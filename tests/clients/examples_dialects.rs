//! The example agents of the newer dialects pass their specs offline from their committed
//! cassettes: `examples/anthropic-agent` (the `anthropic` SDK, Messages API),
//! `examples/responses-agent` (the `openai` SDK's Responses API with
//! `previous_response_id`), `examples/gemini-agent` (the `google-genai` SDK),
//! `examples/azure-agent` (the `openai` SDK's `AzureOpenAI`) and `examples/ollama-agent`
//! (the `ollama` client, Ollama's native API) and `examples/bedrock-agent` (boto3's
//! Converse and ConverseStream on AWS Bedrock) and `examples/a2a-agent` (an assistant whose
//! tool delegates to a remote agent over A2A with `a2a-sdk`, recorded and mocked) and
//! `examples/realtime-agent` (the `openai` SDK's Realtime client, one WebSocket), each run
//! by `agentproxy test --mode replay` exactly as a user would run it.
//!
//! The cassettes were recorded against the test suite's fake upstreams, not a real model.
//! To re-record them after changing an example:
//! `cargo test --test clients examples_dialects:: -- --ignored`.
//!
//! The examples run on the SDKs in `.venv` (`scripts/setup-python.sh`);
//! `AGENTPROXY_SKIP_PYTHON_E2E=1` skips these tests on purpose.

use crate::support;

use std::path::Path;
use std::process::{Command, Output};

use support::fake_anthropic::FakeAnthropic;
use support::fake_cloud::Fake;
use support::fake_gemini::FakeGemini;
use support::fake_ollama::FakeOllama;
use support::fake_openai::FakeOpenAi;
use support::proxy::bin;

/// (spec, number of cases) of each example, relative to the repository root.
const SPECS: [(&str, usize); 10] = [
    ("examples/anthropic-agent/anthropic.yaml", 2),
    ("examples/responses-agent/responses.yaml", 3),
    ("examples/gemini-agent/gemini.yaml", 2),
    ("examples/azure-agent/azure.yaml", 2),
    ("examples/ollama-agent/ollama.yaml", 2),
    ("examples/bedrock-agent/bedrock.yaml", 4),
    ("examples/bedrock-agent/mocked.yaml", 1),
    ("examples/a2a-agent/a2a.yaml", 2),
    ("examples/a2a-agent/mocked.yaml", 1),
    ("examples/realtime-agent/realtime.yaml", 2),
];

/// The port `examples/a2a-agent/a2a.yaml` gives its weather agent.
const WEATHER_AGENT_PORT: &str = "9898";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// False when the Python tests are skipped on purpose; a missing venv is a failure.
fn have_python() -> bool {
    if std::env::var_os("AGENTPROXY_SKIP_PYTHON_E2E").is_some_and(|v| v == "1") {
        eprintln!("AGENTPROXY_SKIP_PYTHON_E2E=1: skipping the example specs");
        return false;
    }
    assert!(
        repo().join(".venv/bin/python").exists(),
        ".venv is missing: run scripts/setup-python.sh (or set AGENTPROXY_SKIP_PYTHON_E2E=1)"
    );
    true
}

/// `agentproxy ARGS` from the repository root, with no key, no CI-set mode and no upstream
/// from the developer's shell.
fn agentproxy(args: &[&str], keys: bool) -> Command {
    let mut command = Command::new(bin());
    command.args(args).current_dir(repo());
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if [
            "OPENAI_",
            "ANTHROPIC_",
            "AGENTPROXY_",
            "GEMINI_",
            "GOOGLE_",
            "AZURE_",
            "OLLAMA_",
            "AWS_",
        ]
        .iter()
        .any(|prefix| text.starts_with(prefix))
        {
            command.env_remove(&name);
        }
    }
    command.env_remove("CI").env("PYTHONDONTWRITEBYTECODE", "1");
    if keys {
        command
            .env(
                "OPENAI_API_KEY",
                "sk-example-not-a-real-key-0000000000000000",
            )
            .env(
                "ANTHROPIC_API_KEY",
                "sk-ant-example-not-a-real-key-0000000000000000",
            )
            .env(
                "GEMINI_API_KEY",
                "AIzaSyExample-not-a-real-key-000000000000",
            )
            .env(
                "AZURE_OPENAI_API_KEY",
                "azure-example-not-a-real-key-0000000000000",
            )
            .env("AWS_ACCESS_KEY_ID", "AKIDAGENTPROXYTEST01")
            .env(
                "AWS_SECRET_ACCESS_KEY",
                "e2e/secret/key/not/a/real/one/000000000",
            );
    }
    command
}

fn describe(out: &Output) -> String {
    format!(
        "{}\n--- stdout ---\n{}--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn dialect_example_specs_pass_offline() {
    if !have_python() {
        return;
    }
    for (spec, cases) in SPECS {
        let out = agentproxy(&["test", spec, "--mode", "replay"], false)
            .output()
            .expect("failed to run agentproxy");
        assert!(out.status.success(), "{spec}: {}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let summary = stderr.lines().last().unwrap_or_default();
        assert_eq!(
            summary,
            format!("{cases} passed, 0 failed"),
            "{spec}: {}",
            describe(&out)
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "re-records the committed example cassettes of the dialect examples"]
async fn rerecord_dialect_examples() {
    assert!(have_python(), "re-recording needs the SDKs in .venv");
    let openai = FakeOpenAi::start().await;
    let anthropic = FakeAnthropic::start().await;
    let gemini = FakeGemini::start().await;
    let ollama = FakeOllama::start().await;
    let dir = tempfile::tempdir().unwrap();
    let python = repo().join(".venv/bin/python");
    let bedrock = Fake::start(&python, "fake_bedrock.py", dir.path()).await;
    let azure = format!("azure={}", openai.url());
    let ollama_upstream = format!("ollama={}", ollama.url());
    let bedrock_upstream = format!("bedrock={}", bedrock.url);
    let mut weather_agent = Command::new(&python)
        .arg(repo().join("examples/a2a-agent/weather_agent.py"))
        .arg(WEATHER_AGENT_PORT)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the weather agent starts");
    // It prints `port N` once it listens.
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(weather_agent.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert!(line.starts_with("port"), "{line}");
    for (spec, cases) in SPECS {
        let mut command = agentproxy(
            &[
                "test",
                spec,
                "--mode",
                "record",
                "--upstream",
                &openai.url(),
                "--anthropic-upstream",
                &anthropic.url(),
                "--gemini-upstream",
                &gemini.url(),
                "--upstream",
                &azure,
                "--upstream",
                &ollama_upstream,
                "--upstream",
                &bedrock_upstream,
            ],
            true,
        );
        let out = tokio::task::spawn_blocking(move || command.output())
            .await
            .expect("the blocking task ran")
            .expect("failed to run agentproxy");
        assert!(out.status.success(), "{spec}: {}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.ends_with(&format!("{cases} passed, 0 failed\n")),
            "{spec}: {}",
            describe(&out)
        );
    }
    openai.stop().await;
    anthropic.stop().await;
    gemini.stop().await;
    ollama.stop().await;
    bedrock.stop().await;
    let _ = weather_agent.kill();
    let _ = weather_agent.wait();
}
