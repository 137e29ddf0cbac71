//! Crash and resume end to end: a mail agent on the openai SDK with its tools over MCP
//! stdio (the official `mcp` SDK, through `agentproxy mcp`), killed at a crash point and
//! started again. Recorded against the fake OpenAI upstream with the real MCP server, then
//! replayed with the upstream stopped and the server replaced by one that fails if it is
//! started: the same verdicts both times. A stateless agent mails twice (the case fails,
//! unless `executed:` allows the repeat); one that checkpoints its conversation mails once.

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::fake_openai::FakeOpenAi;
use support::proxy::case;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> String {
    repo().join(".venv/bin/python").display().to_string()
}

const SPEC: &str = r#"
app:
  command: [PYTHON, AGENT]
  timeout: 60s
  env: {MCP_SERVER_COMMAND: 'MAIL_COMMAND'}
cases:
  - name: a stateless agent mails twice
    input: Mail the weather in Paris to ops@example.com
    env: {OUTBOX: stateless.txt}
    crash: {after: {executed: send_email}}
    expect:
      output: {contains: "reply: Mailed ops@example.com."}
  - name: a repeat executed allows
    input: Mail the weather in Paris to ops@example.com
    env: {OUTBOX: allowed.txt}
    crash: {after: {executed: send_email}}
    expect:
      executed: [get_weather, send_email, get_weather, send_email]
  - name: a checkpointing agent mails once
    input: Mail the weather in Paris to ops@example.com
    env: {OUTBOX: checkpointed.txt, CHECKPOINT: checkpoint.json}
    crash: {after: {executed: send_email}}
    expect:
      executed: [get_weather, send_email]
      output: {contains: "reply: Mailed ops@example.com."}
  - name: killed before its first tool runs
    input: Mail the weather in Paris to ops@example.com
    env: {OUTBOX: first.txt, CHECKPOINT: first.json}
    crash: {after: {request: 1}}
    expect:
      executed: [get_weather, send_email]
      exit: 0
"#;

/// The stand-in's command line around `server`, as JSON.
fn server_command(server: &[&str]) -> String {
    let mut argv = vec![support::proxy::bin(), "mcp", "--name", "mail", "--"];
    argv.extend(server);
    serde_json::to_string(&argv).unwrap()
}

/// Write the spec with the MCP server `server`, run `agentproxy test` with `args`, and
/// return its stderr and JSON report.
fn run(dir: &Path, server: &[&str], args: &[&str]) -> (String, Value) {
    assert!(
        Path::new(&python()).exists(),
        "run scripts/setup-python.sh first"
    );
    let agent = repo().join("tests/e2e/crash_agent.py");
    let spec = SPEC
        .replace("PYTHON", &python())
        .replace("AGENT", &agent.display().to_string())
        .replace("MAIL_COMMAND", &server_command(server).replace('\'', "''"));
    std::fs::write(dir.join("spec.yaml"), spec).unwrap();
    // The stateless agent's case fails the run.
    support::proxy::test_report(dir, args, 1)
}

fn lines(dir: &Path, file: &str) -> usize {
    std::fs::read_to_string(dir.join(file))
        .unwrap_or_default()
        .lines()
        .count()
}

/// What both runs must show.
fn check(report: &Value, stderr: &str, mode: &str) {
    let stateless = case(report, "a stateless agent mails twice");
    assert_eq!(stateless["status"], "failed", "{mode}: {stderr}");
    let crash = &stateless["crash"];
    assert_eq!(crash["after"], "executed send_email");
    assert_eq!(crash["turn"], 1);
    assert_eq!(crash["held"], "POST /v1/chat/completions");
    let before = crash["output"].as_str().unwrap();
    assert!(before.contains("tool: send_email {"), "{before}");
    let repeated: Vec<&str> = (crash["repeated"].as_array().unwrap().iter())
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(repeated.len(), 2, "{repeated:?}");
    assert!(repeated[0].starts_with("get_weather {"), "{repeated:?}");
    assert!(repeated[1].starts_with("send_email {"), "{repeated:?}");
    // The restart completed: the case fails only for the repeat.
    let failed: Vec<&Value> = (stateless["assertions"].as_array().unwrap().iter())
        .filter(|a| a["passed"] == false)
        .collect();
    assert_eq!(failed.len(), 1, "{stateless}");
    let message = failed[0]["message"].as_str().unwrap();
    assert!(
        message.contains("`get_weather` ran 2 times, `send_email` ran 2 times"),
        "{message}"
    );
    assert!(
        stderr.contains("crash: no tool executed again after the restart"),
        "{stderr}"
    );

    let allowed = case(report, "a repeat executed allows");
    assert_eq!(allowed["status"], "passed", "{mode}: {stderr}");

    let resumed = case(report, "a checkpointing agent mails once");
    assert_eq!(resumed["status"], "passed", "{mode}: {stderr}");
    assert_eq!(resumed["crash"]["repeated"], serde_json::json!([]));
    let output = resumed["turns"][0]["output"].as_str().unwrap();
    assert!(output.starts_with("resumed: 5 messages\n"), "{output}");

    let first = case(report, "killed before its first tool runs");
    assert_eq!(first["status"], "passed", "{mode}: {stderr}");
    // Held on its way to the tool: the first run executed nothing.
    let held = first["crash"]["held"].as_str().unwrap();
    assert!(held.starts_with("POST /_agentproxy/mcp/mail/"), "{held}");
    assert_eq!(first["crash"]["output"], "");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_agent_is_started_again_and_its_repeats_are_caught() {
    let openai = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_owned();
    let url = openai.url();
    let (stderr, recorded) = tokio::task::spawn_blocking(move || {
        let server = repo().join("examples/mcp-agent/server.py");
        let server = [python(), server.display().to_string()];
        let server: Vec<&str> = server.iter().map(String::as_str).collect();
        run(&d, &server, &["--mode", "record", "--upstream", &url])
    })
    .await
    .unwrap();
    check(&recorded, &stderr, "record");
    // The real server ran: the stateless agent mailed twice, the checkpointing one once.
    assert_eq!(lines(dir.path(), "stateless.txt"), 2);
    assert_eq!(lines(dir.path(), "allowed.txt"), 2);
    assert_eq!(lines(dir.path(), "checkpointed.txt"), 1);
    assert_eq!(lines(dir.path(), "first.txt"), 1);
    assert!(!dir.path().join("checkpoint.json").exists());
    openai.stop().await;

    let d = dir.path().to_owned();
    let (stderr, replayed) = tokio::task::spawn_blocking(move || {
        let never = "import sys; sys.exit('the MCP server was started in replay')";
        run(&d, &[&python(), "-c", never], &["--mode", "replay"])
    })
    .await
    .unwrap();
    check(&replayed, &stderr, "replay");
    // Nothing was mailed again.
    assert_eq!(lines(dir.path(), "stateless.txt"), 2);
    assert_eq!(lines(dir.path(), "checkpointed.txt"), 1);
}

const CHAT_SPEC: &str = r#"
app:
  command: [PYTHON, CHAT]
  reply_until: '^assistant:'
  timeout: 30s
cases:
  - name: killed in the second turn
    turns:
      - input: Hello there
      - input: Tell me about Lyon
        expect:
          output: 'assistant: You said: Tell me about Lyon'
      - input: And Paris
        expect:
          output: 'assistant: You said: And Paris'
    crash: {after: {request: 1}}
"#;

/// A multi-turn chat killed once its first answer is in: its next request (in turn 2) is
/// held, and the program, started again, gets turn 2's input and goes on to turn 3.
#[tokio::test(flavor = "multi_thread")]
async fn a_program_killed_in_a_later_turn_gets_that_turns_input_again() {
    let openai = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let spec = CHAT_SPEC.replace("PYTHON", &python()).replace(
        "CHAT",
        &repo().join("examples/chat/chat.py").display().to_string(),
    );
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    let run = |args: Vec<String>| {
        let d = dir.path().to_owned();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            support::proxy::test_report(&d, &args, 0).1
        })
    };
    let record = ["--mode", "record", "--upstream", &openai.url()].map(String::from);
    let recorded = run(record.to_vec()).await.unwrap();
    // Turn 1, the held request (never forwarded), turn 2 again, turn 3.
    assert_eq!(openai.request_count(), 3);
    openai.stop().await;
    let replayed = run(["--mode", "replay"].map(String::from).to_vec())
        .await
        .unwrap();
    for report in [&recorded, &replayed] {
        let case = &report["cases"][0];
        assert_eq!(case["status"], "passed", "{case}");
        let crash = &case["crash"];
        assert_eq!(
            (crash["turn"].as_u64(), crash["after"].as_str()),
            (Some(2), Some("request 1"))
        );
        assert_eq!(crash["held"], "POST /v1/chat/completions");
        assert_eq!(
            case["turns"][0]["output"],
            "assistant: You said: Hello there\n"
        );
    }
}
