//! Agents that call agents, end to end with the official A2A SDK (a2a-sdk 1.x): the remote
//! weather agent of examples/a2a-agent behind a bearer token, whose task streams, and an
//! orchestrator that fetches its card through `--a2a weather=URL`
//! (AGENTPROXY_A2A_WEATHER_URL), sends,
//! streams, looks the task up, then asks the model. Recorded, then replayed with the agent
//! and the model stopped; a changed message misses with a JSON-RPC error; a spec mocks the
//! agent (never started) and asserts the delegation.

use crate::support;

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command};

use serde_json::Value;
use support::fake_openai::FakeOpenAi;
use support::run::{agentproxy, session};

const TOKEN: &str = "a2a-bearer-e2e-9f1c";
const PARIS: &str = r#"{"city": "Paris", "sky": "sunny", "temp_c": 18}"#;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> String {
    repo().join(".venv/bin/python").display().to_string()
}

/// The remote agent on a free loopback port, once it accepts connections.
fn start_agent() -> (Child, u16) {
    let mut command = Command::new(python());
    command
        .arg(repo().join("examples/a2a-agent/weather_agent.py"))
        .env("WEATHER_AGENT_TOKEN", TOKEN);
    support::run::serving(command, |c, port| {
        c.arg(port.to_string());
    })
}

fn orchestrator() -> Vec<String> {
    vec![
        python(),
        repo()
            .join("tests/e2e/a2a_orchestrator.py")
            .display()
            .to_string(),
    ]
}

async fn run(mode: &str, cassette: &Path, flags: &[&str], text: &str) -> support::run::Run {
    let program = orchestrator();
    let program: Vec<&OsStr> = program.iter().map(OsStr::new).collect();
    agentproxy(
        session(mode, cassette, flags, &program),
        &[
            ("A2A_TOKEN", TOKEN),
            ("A2A_TEXT", text),
            ("OPENAI_API_KEY", "sk-test-a2a"),
        ],
    )
    .await
}

#[tokio::test]
async fn a_delegation_records_then_replays_with_the_agent_and_the_model_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("a2a.json");
    let (mut agent, port) = start_agent();
    let model = FakeOpenAi::start().await;
    let a2a = format!("weather=http://127.0.0.1:{port}");
    let upstream = model.url();
    let recorded = run(
        "record",
        &cassette,
        &["--upstream", &upstream, "--a2a", &a2a],
        "weather in Paris",
    )
    .await;
    let _ = agent.kill();
    let _ = agent.wait();
    model.stop().await;
    assert!(recorded.status.success(), "{recorded}");
    let out = &recorded.stdout;
    for line in [
        "card: Weather Agent streaming=True".to_owned(),
        format!("send: TASK_STATE_COMPLETED '{PARIS}'"),
        "stream: task TASK_STATE_SUBMITTED".to_owned(),
        "stream: status TASK_STATE_WORKING".to_owned(),
        format!("stream: artifact '{PARIS}'"),
        "stream: status TASK_STATE_COMPLETED".to_owned(),
        format!("get_task: TASK_STATE_COMPLETED '{PARIS}'"),
        format!("model: You said: Say this to the user: {PARIS}"),
    ] {
        assert!(out.contains(&line), "missing {line:?}:\n{recorded}");
    }

    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(!text.contains(TOKEN), "the bearer token is never stored");
    let c: Value = serde_json::from_str(&text).unwrap();
    let calls: Vec<(&str, &str)> = (c["interactions"].as_array().unwrap().iter())
        .map(|i| {
            (
                i["route"].as_str().unwrap(),
                i["request"]["method"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("a2a", "agent-card"),
            ("a2a", "SendMessage"),
            ("a2a", "SendStreamingMessage"),
            ("a2a", "GetTask"),
            ("openai.chat", "POST"),
        ]
    );
    let stream = &c["interactions"][2]["response"];
    assert_eq!(stream["events"].as_array().unwrap().len(), 4, "{stream}");
    assert_eq!(
        stream["body"]["json"]["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{stream}"
    );

    // Both the agent and the model are gone: the replay answers in their place.
    let replayed = run("replay", &cassette, &["--a2a", &a2a], "weather in Paris").await;
    assert!(replayed.status.success(), "{replayed}");
    assert_eq!(
        replayed.stdout, recorded.stdout,
        "the replay prints what the recording did"
    );
    assert!(replayed.stderr.contains("0 missed; 0 of 5"), "{replayed}");

    // `show` lists the delegations beside the model call.
    let shown = agentproxy(vec!["show".into(), cassette.clone().into()], &[]).await;
    assert!(shown.status.success(), "{shown}");
    assert!(
        shown.stdout.contains(&format!(
            "a2a weather: \"weather in Paris\" → completed \"{PARIS}\""
        )),
        "{shown}"
    );

    // Another message has no recording: the client's call fails with the miss.
    let missed = run("replay", &cassette, &["--a2a", &a2a], "weather in Oslo").await;
    assert_eq!(missed.status.code(), Some(1), "{missed}");
    assert!(
        missed
            .stderr
            .contains("SendMessage weather (a2a) has no recording"),
        "{missed}"
    );
    assert!(
        missed.stderr.contains("weather in Paris"),
        "the nearest recording is shown: {missed}"
    );
    assert_eq!(
        std::fs::read_to_string(&cassette).unwrap(),
        text,
        "the cassette is untouched"
    );
}
