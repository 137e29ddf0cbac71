//! Streamable HTTP MCP servers end to end with the official `mcp` Python SDK: the example's
//! MCPServer runs as a streamable HTTP server, the SDK's `Client` reaches it through
//! `--mcp mail=URL` (the URL injected as AGENTPROXY_MCP_MAIL_URL). Record, then replay with
//! the server stopped: the same output, the side effect (a mail in the outbox) not
//! repeated. In both protocol forms the SDK speaks: 2025-11-25 (initialize, a session id,
//! SSE answers, the GET stream, DELETE) and the stateless 2026-07-28 one.

use crate::support;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> String {
    repo().join(".venv/bin/python").display().to_string()
}

/// The example's server on a free loopback port, once it accepts connections.
fn start_server(outbox: &Path) -> (Child, u16) {
    let mut command = Command::new(python());
    command
        .arg(repo().join("examples/mcp-agent/server.py"))
        .env("OUTBOX", outbox);
    support::run::serving(command, |c, port| {
        c.args(["--http", &port.to_string()]);
    })
}

fn run(dir: &Path, args: &[&str], mode: &str) -> Output {
    Command::new(support::proxy::bin())
        .args(args)
        .arg("--")
        .arg(python())
        .arg(repo().join("tests/e2e/mcp_http_client.py"))
        .current_dir(dir)
        .env("MCP_MODE", mode)
        .env_remove("AGENTPROXY_URL")
        .output()
        .unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn record_then_replay(mode: &str, first_method: &str) {
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox.txt");
    let (mut server, port) = start_server(&outbox);
    let mcp = format!("mail=http://127.0.0.1:{port}/mcp");
    let recorded = run(
        dir.path(),
        &[
            "record",
            "--cassette",
            "c.json",
            "--upstream",
            "http://127.0.0.1:9",
            "--mcp",
            &mcp,
        ],
        mode,
    );
    let _ = server.kill();
    let _ = server.wait();
    let (stdout, stderr) = text(&recorded);
    assert!(recorded.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout,
        "tools: ['get_weather', 'send_email']\n\
         weather: {\"city\": \"Paris\", \"sky\": \"sunny\", \"temp_c\": 18}\n\
         sent: {\"sent\": true, \"to\": \"ops@example.com\"} error: False\n"
    );
    assert_eq!(
        std::fs::read_to_string(&outbox).unwrap(),
        "ops@example.com: sunny\n"
    );
    let cassette: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("c.json")).unwrap()).unwrap();
    let methods: Vec<&str> = cassette["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["request"]["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        [first_method, "tools/list", "tools/call", "tools/call"]
    );
    assert!(cassette["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["route"] == "mcp" && i["request"]["path"] == "mail"));

    // The server is gone: replay answers in its place.
    let replayed = run(
        dir.path(),
        &["replay", "--cassette", "c.json", "--mcp", &mcp],
        mode,
    );
    let (again, stderr) = text(&replayed);
    assert!(replayed.status.success(), "{again}\n{stderr}");
    assert_eq!(again, stdout, "the replay prints what the recording did");
    assert!(stderr.contains("0 missed; 0 of 4"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&outbox).unwrap().lines().count(),
        1,
        "no mail sent again"
    );

    // Another argument has no recording: the client gets the miss as a JSON-RPC error.
    let missed = Command::new(support::proxy::bin())
        .args(["replay", "--cassette", "c.json", "--mcp", &mcp, "--"])
        .arg(python())
        .arg(repo().join("tests/e2e/mcp_http_client.py"))
        .current_dir(dir.path())
        .env("MCP_MODE", mode)
        .env("CITY", "Lima")
        .env_remove("AGENTPROXY_URL")
        .output()
        .unwrap();
    let (out, err) = text(&missed);
    assert_eq!(missed.status.code(), Some(1), "{out}\n{err}");
    assert!(
        err.contains("tools/call mail (mcp) has no recording"),
        "{err}"
    );
}

#[test]
fn the_2025_11_25_session_form_records_and_replays() {
    record_then_replay("legacy", "initialize");
}

#[test]
fn the_stateless_2026_07_28_form_records_and_replays() {
    record_then_replay("auto", "server/discover");
}

#[test]
fn an_unknown_server_name_and_a_batch_are_refused_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    // An empty cassette: the session serves nothing.
    std::fs::write(
        dir.path().join("c.json"),
        r#"{"format":"1.3","recorder":"t","recorded_at":"2026-01-01T00:00:00Z","upstreams":{"openai":"http://127.0.0.1:9","anthropic":"http://127.0.0.1:9","gemini":"http://127.0.0.1:9"},"interactions":[]}"#,
    )
    .unwrap();
    let out = Command::new(support::proxy::bin())
        .args([
            "replay",
            "--cassette",
            "c.json",
            "--mcp",
            "mail=http://127.0.0.1:9/mcp",
            "--",
        ])
        .args([
            "python3",
            "-c",
            "import os, urllib.request as u\n\
             url = os.environ['AGENTPROXY_URL'] + '/mcp/other'\n\
             try: u.urlopen(u.Request(url, data=b'{}', method='POST'))\n\
             except Exception as e: print(e.code, e.read().decode())\n\
             batch = b'[{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}]'\n\
             try: u.urlopen(u.Request(os.environ['AGENTPROXY_MCP_MAIL_URL'], data=batch, method='POST'))\n\
             except Exception as e: print(e.code, e.read().decode())\n\
             print(os.environ['AGENTPROXY_MCP_MAIL_URL'].endswith('/mcp/mail'))",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains("404") && stdout.contains("give it with --mcp other=URL"),
        "{stdout}\n{stderr}"
    );
    // A batch (which MCP no longer has) is refused, not left unanswered.
    assert!(
        stdout.contains("400") && stdout.contains("JSON-RPC batches are not supported"),
        "{stdout}"
    );
    assert!(stdout.ends_with("True\n"), "{stdout}");
}

/// `agentproxy test` with a spec's `mcp:`: recorded with the server up, replayed with it
/// stopped, and checked for determinism with it stopped; the spec's mock of `send_email`
/// answers at the MCP boundary in all three, so the server never sends a mail, and
/// `executed:` / `not_executed:` judge what ran.
#[test]
fn a_spec_names_http_servers_and_mocks_their_tools() {
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox.txt");
    let (mut server, port) = start_server(&outbox);
    let spec = format!(
        "app:\n  command: [{python}, {client}]\nmcp:\n  mail: http://127.0.0.1:{port}/mcp\n\
         tools:\n  send_email: {{result: {{sent: true, to: ops@example.com}}}}\n\
         cases:\n  - name: mail\n    expect:\n      executed: [{{get_weather: {{city: Paris}}}}]\n      not_executed: [send_email]\n      output: {{contains: 'sent: {{\"sent\": true'}}\n",
        python = python(),
        client = repo().join("tests/e2e/mcp_http_client.py").display(),
    );
    std::fs::write(dir.path().join("mail.yaml"), spec).unwrap();
    let test = |mode: &str| {
        let args = match mode {
            "determinism" => vec!["--check-determinism"],
            mode => vec!["--mode", mode, "--upstream", "http://127.0.0.1:9"],
        };
        Command::new(support::proxy::bin())
            .args(["test", "mail.yaml"])
            .args(args)
            .current_dir(dir.path())
            .env_remove("AGENTPROXY_URL")
            .env_remove("CI")
            .output()
            .unwrap()
    };
    let recorded = test("record");
    let _ = server.kill();
    let _ = server.wait();
    let (stdout, stderr) = text(&recorded);
    assert!(recorded.status.success(), "{stdout}\n{stderr}");
    assert!(!outbox.exists(), "the mocked mail never reached the server");
    let replayed = test("replay");
    let (stdout, stderr) = text(&replayed);
    assert!(replayed.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("1 passed, 0 failed"), "{stderr}");
    // The determinism check serves the spec's HTTP server from the cassette as the replay
    // does: two runs, the same requests.
    let checked = test("determinism");
    let (stdout, stderr) = text(&checked);
    assert!(checked.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("1 passed, 0 failed"), "{stderr}");
}

/// The example's agent on openai-agents' `MCPServerStreamableHttp` (the stateless form:
/// `server/discover`, `tools/list` again on every run, two `tools/call` in flight when
/// the model asks for two at once), with the model faked: record, then replay with both
/// the model upstream and the MCP server stopped.
#[tokio::test(flavor = "multi_thread")]
async fn an_openai_agents_http_mcp_agent_records_and_replays() {
    let fake = support::fake_openai::FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox.txt");
    let (mut server, port) = start_server(&outbox);
    let mcp = format!("mail=http://127.0.0.1:{port}/mcp");
    let agent = |args: Vec<String>| {
        let dir = dir.path().to_owned();
        move || {
            use std::io::Write as _;
            let mut child = Command::new(support::proxy::bin())
                .args(&args)
                .args([
                    "--",
                    "sh",
                    "-c",
                    "MAIL_MCP_URL=$AGENTPROXY_MCP_MAIL_URL exec \"$0\" \"$1\"",
                ])
                .arg(python())
                .arg(repo().join("examples/mcp-agent/agent.py"))
                .current_dir(&dir)
                .env("OPENAI_API_KEY", "sk-test")
                .env("OPENAI_AGENTS_DISABLE_TRACING", "1")
                .env_remove("AGENTPROXY_URL")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            stdin
                .write_all(b"What's the weather in Paris and Tokyo? Mail it to ops@example.com\nMail the weather in Oslo to ops@example.com\n")
                .unwrap();
            drop(stdin);
            child.wait_with_output().unwrap()
        }
    };
    let record: Vec<String> = [
        "record",
        "--cassette",
        "c.json",
        "--upstream",
        &fake.url(),
        "--mcp",
        &mcp,
    ]
    .map(String::from)
    .to_vec();
    let recorded = tokio::task::spawn_blocking(agent(record)).await.unwrap();
    let _ = server.kill();
    let _ = server.wait();
    fake.stop().await;
    let (stdout, stderr) = text(&recorded);
    assert!(recorded.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout.matches("tool call: get_weather").count(),
        3,
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("reply: Mailed ops@example.com.").count(),
        2,
        "{stdout}"
    );
    assert_eq!(std::fs::read_to_string(&outbox).unwrap().lines().count(), 2);
    let cassette: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("c.json")).unwrap()).unwrap();
    let methods: Vec<&str> = cassette["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["route"] == "mcp")
        .map(|i| i["request"]["method"].as_str().unwrap())
        .collect();
    assert!(methods.contains(&"server/discover"), "{methods:?}");
    assert!(
        methods.iter().filter(|m| **m == "tools/list").count() >= 2,
        "{methods:?}"
    );
    assert_eq!(
        methods.iter().filter(|m| **m == "tools/call").count(),
        5,
        "{methods:?}"
    );

    let replay: Vec<String> = ["replay", "--cassette", "c.json", "--mcp", &mcp]
        .map(String::from)
        .to_vec();
    let replayed = tokio::task::spawn_blocking(agent(replay)).await.unwrap();
    let (again, stderr) = text(&replayed);
    assert!(replayed.status.success(), "{again}\n{stderr}");
    assert_eq!(again, stdout, "the replay prints what the recording did");
    assert!(stderr.contains(" 0 missed;"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&outbox).unwrap().lines().count(),
        2,
        "no mail sent again"
    );
}

/// A crash over streamable HTTP: the example's Agents SDK agent reaches its tools through
/// `mcp:`, is killed once `send_email` has run at the server, and started again. It keeps
/// no checkpoint, so it mails again (the case lists the repeat under `executed:`):
/// recorded with the server up (two mails in the outbox), replayed with it and the model
/// stopped, to the same verdict.
#[tokio::test(flavor = "multi_thread")]
async fn a_crash_after_an_http_mcp_execution_restarts_the_agent() {
    let fake = support::fake_openai::FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox.txt");
    let (mut server, port) = start_server(&outbox);
    let spec = format!(
        "app:\n  command: [sh, -c, 'MAIL_MCP_URL=$AGENTPROXY_MCP_MAIL_URL exec \"$0\" \"$1\"', {python}, {agent}]\n  \
         reply_until: '^reply:'\n  timeout: 60s\n  env: {{OPENAI_AGENTS_DISABLE_TRACING: '1'}}\n\
         mcp:\n  mail: http://127.0.0.1:{port}/mcp\n\
         cases:\n  - name: killed after the mail\n    input: Mail the weather in Paris to ops@example.com\n    \
         crash: {{after: {{executed: send_email}}}}\n    expect:\n      \
         executed: [get_weather, send_email, get_weather, send_email]\n      reply: Mailed ops@example.com\n",
        python = python(),
        agent = repo().join("examples/mcp-agent/agent.py").display(),
    );
    std::fs::write(dir.path().join("crash.yaml"), spec).unwrap();
    let test = |args: Vec<String>| {
        let dir = dir.path().to_owned();
        move || {
            Command::new(support::proxy::bin())
                .args(["test", "crash.yaml", "--report", "json", "-o"])
                .args(&args)
                .current_dir(&dir)
                .env("OPENAI_API_KEY", "sk-test")
                .env_remove("AGENTPROXY_URL")
                .env_remove("CI")
                .output()
                .unwrap()
        }
    };
    let record = ["record.json", "--mode", "record", "--upstream", &fake.url()].map(String::from);
    let recorded = tokio::task::spawn_blocking(test(record.to_vec()))
        .await
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    fake.stop().await;
    let (stdout, stderr) = text(&recorded);
    assert!(recorded.status.success(), "{stdout}\n{stderr}");
    assert_eq!(std::fs::read_to_string(&outbox).unwrap().lines().count(), 2);
    let replay = ["replay.json", "--mode", "replay"].map(String::from);
    let replayed = tokio::task::spawn_blocking(test(replay.to_vec()))
        .await
        .unwrap();
    let (stdout, stderr) = text(&replayed);
    assert!(replayed.status.success(), "{stdout}\n{stderr}");
    assert_eq!(std::fs::read_to_string(&outbox).unwrap().lines().count(), 2);
    let crash = |file: &str| -> Value {
        let text = std::fs::read_to_string(dir.path().join(file)).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["cases"][0]["crash"].clone()
    };
    let (recorded, replayed) = (crash("record.json"), crash("replay.json"));
    // Killed at the same request both times: the client's next one after the mail.
    assert_eq!(recorded, replayed);
    let held = replayed["held"].as_str().unwrap();
    assert!(held.starts_with("POST /"), "{replayed}");
    assert_eq!(
        replayed["repeated"].as_array().unwrap().len(),
        2,
        "{replayed}"
    );
}
