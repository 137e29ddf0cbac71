//! The MCP boundary end to end with the official `mcp` Python SDK: a host whose stdio
//! server command is `agentproxy mcp --name mail -- python mcp_server.py OUTBOX` records
//! the model call and the MCP traffic into one cassette, then replays with the model
//! upstream stopped and the server's command replaced by one that fails if started: same
//! output, the side effect (an email in the outbox) not repeated. Both with a host that
//! passes its environment to the server and one on the SDK's bare default.

use crate::support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use support::fake_openai::FakeOpenAi;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> String {
    repo().join(".venv/bin/python").display().to_string()
}

/// The stand-in's command line around `server`.
fn server_command(server: &[String]) -> String {
    let mut argv = vec![
        support::proxy::bin().to_owned(),
        "mcp".into(),
        "--name".into(),
        "mail".into(),
        "--".into(),
    ];
    argv.extend(server.iter().cloned());
    serde_json::to_string(&argv).unwrap()
}

fn run(dir: &Path, args: &[&str], server: &[String], env: &[(&str, &str)]) -> Output {
    Command::new(support::proxy::bin())
        .args(args)
        .arg("--")
        .arg(python())
        .arg(repo().join("tests/e2e/mcp_client.py"))
        .current_dir(dir)
        .env("MCP_SERVER_COMMAND", server_command(server))
        .env_remove("AGENTPROXY_URL")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn record_then_replay(pass_env: &'static str) {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("outbox.txt");
    let server = vec![
        python(),
        repo().join("tests/e2e/mcp_server.py").display().to_string(),
        outbox.display().to_string(),
    ];
    let upstream = fake.url();
    let env = [("MCP_PASS_ENV", pass_env), ("OPENAI_API_KEY", "sk-test")];
    let (d, s) = (dir.path().to_owned(), server.clone());
    let recorded = tokio::task::spawn_blocking(move || {
        run(
            &d,
            &["record", "--cassette", "c.json", "--upstream", &upstream],
            &s,
            &env,
        )
    })
    .await
    .unwrap();
    let (stdout, stderr) = text(&recorded);
    assert!(recorded.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("model: You said: Mail the weather in Paris"),
        "{stdout}"
    );
    assert!(
        stdout.contains("tools: ['get_weather', 'send_email']"),
        "{stdout}"
    );
    assert!(
        stdout.contains("sent: ['sent to ops@example.com'] error: False"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(&outbox).unwrap(),
        "ops@example.com: Paris is sunny\n"
    );
    let cassette: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("c.json")).unwrap()).unwrap();
    let routes: Vec<&str> = cassette["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["route"].as_str().unwrap())
        .collect();
    assert_eq!(routes[0], "openai.chat", "{routes:?}");
    assert!(routes[1..].iter().all(|r| *r == "mcp"), "{routes:?}");
    let calls: Vec<&Value> = cassette["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["request"]["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2, "{cassette}");
    assert_eq!(
        calls[1]["request"]["body"]["json"]["params"]["name"],
        "send_email"
    );
    assert_eq!(calls[1]["request"]["path"], "mail");
    let shown = Command::new(support::proxy::bin())
        .args(["show", "c.json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let (show, err) = text(&shown);
    assert!(shown.status.success(), "{err}");
    // MCP requests are listed where they happened, with what they executed.
    assert!(
        show.contains("MCP mail tools/call send_email {\"body\":\"Paris is sunny\",\"to\":\"ops@example.com\"}"),
        "{show}"
    );
    let model_requests = fake.request_count();
    fake.stop().await;

    // Replay: the upstream is gone and the server would fail if it were started.
    let never = vec![
        python(),
        "-c".into(),
        "import sys; sys.exit('the MCP server was started in replay')".into(),
    ];
    let (d, n) = (dir.path().to_owned(), never.clone());
    let replayed = tokio::task::spawn_blocking(move || {
        run(
            &d,
            &["replay", "--cassette", "c.json"],
            &n,
            &[("MCP_PASS_ENV", pass_env)],
        )
    })
    .await
    .unwrap();
    let (again, stderr) = text(&replayed);
    assert!(replayed.status.success(), "{again}\n{stderr}");
    assert_eq!(again, stdout, "the replay prints what the recording did");
    assert!(stderr.contains("0 missed; 0 of"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&outbox).unwrap(),
        "ops@example.com: Paris is sunny\n",
        "no email sent again"
    );
    assert_eq!(model_requests, 1);

    // A tool call with other arguments has no recording: the host gets a JSON-RPC error
    // naming the miss, the run reports it against the nearest recording and exits 1.
    let d = dir.path().to_owned();
    let missed = tokio::task::spawn_blocking(move || {
        run(
            &d,
            &["replay", "--cassette", "c.json"],
            &never,
            &[("MCP_PASS_ENV", pass_env), ("WEATHER_CITY", "Lima")],
        )
    })
    .await
    .unwrap();
    let (out, err) = text(&missed);
    assert_eq!(missed.status.code(), Some(1), "{out}\n{err}");
    assert!(
        err.contains("cassette miss: tools/call mail (mcp) has no recording"),
        "{err}"
    );
    assert!(err.contains("Lima"), "{err}");
    assert!(
        err.contains("agentproxy_cassette_miss"),
        "the host saw the error: {err}"
    );
    assert_eq!(std::fs::read_to_string(&outbox).unwrap().lines().count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_passing_its_environment_records_and_replays() {
    record_then_replay("1").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_on_the_sdks_bare_environment_records_and_replays() {
    record_then_replay("0").await;
}

/// Outside any session the stand-in is the server; with a session that does not answer,
/// it fails closed: the server is not started.
#[test]
fn outside_a_session_the_command_runs_and_a_dead_session_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let stand_in = |env: Option<&str>| {
        let mut cmd = Command::new(support::proxy::bin());
        cmd.args([
            "mcp",
            "--name",
            "x",
            "--",
            "sh",
            "-c",
            "touch started; echo server",
        ])
        .current_dir(dir.path())
        .env_remove("AGENTPROXY_URL");
        if let Some(url) = env {
            cmd.env("AGENTPROXY_URL", url);
        }
        cmd.output().unwrap()
    };
    let out = stand_in(Some("http://127.0.0.1:9"));
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("agentproxy mcp: the session at http://127.0.0.1:9 cannot serve MCP"),
        "{err}"
    );
    assert!(!dir.path().join("started").exists(), "fail closed");

    // This test's ancestors (cargo and its parents) are in no session.
    if std::env::var_os("AGENTPROXY_URL").is_none() {
        let out = stand_in(None);
        assert!(out.status.success());
        assert_eq!(text(&out).0, "server\n");
        assert!(dir.path().join("started").exists());
    }
}

/// The committed example's agent (openai-agents `MCPServerStdio`, tools from the MCP
/// server): record, then replay with the model upstream stopped and the server's command
/// one that fails if started.
fn run_mail_agent(dir: &Path, args: &[&str], server: Option<&[String]>) -> Output {
    use std::io::Write as _;
    let bin_dir = Path::new(support::proxy::bin())
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new(support::proxy::bin())
        .args(args)
        .arg("--")
        .arg(python())
        .arg(repo().join("examples/mcp-agent/agent.py"))
        .current_dir(dir)
        .env("PATH", path)
        .env("OUTBOX", dir.join("outbox.txt"))
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_AGENTS_DISABLE_TRACING", "1")
        .env(
            "MAIL_SERVER",
            serde_json::to_string(&server.unwrap_or_default()).unwrap(),
        )
        .env_remove("AGENTPROXY_URL")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"Mail the weather in Paris to ops@example.com\n")
        .unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_openai_agents_mcp_agent_records_and_replays() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let upstream = fake.url();
    let d = dir.path().to_owned();
    let recorded = tokio::task::spawn_blocking(move || {
        run_mail_agent(
            &d,
            &["record", "--cassette", "c.json", "--upstream", &upstream],
            None,
        )
    })
    .await
    .unwrap();
    let (stdout, stderr) = text(&recorded);
    assert!(recorded.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("tool call: send_email {\"body\": \"It is 18°C and sunny in Paris.\", \"to\": \"ops@example.com\"}"),
        "{stdout}"
    );
    let outbox = dir.path().join("outbox.txt");
    assert_eq!(
        std::fs::read_to_string(&outbox).unwrap(),
        "ops@example.com: It is 18°C and sunny in Paris.\n"
    );
    assert!(
        stdout.ends_with("reply: Mailed ops@example.com.\n"),
        "{stdout}"
    );
    let model_requests = fake.request_count();
    assert_eq!(model_requests, 3, "weather, mail, reply");
    fake.stop().await;

    let never = vec![
        python(),
        "-c".into(),
        "import sys; sys.exit('the MCP server was started in replay')".into(),
    ];
    let d = dir.path().to_owned();
    let replayed = tokio::task::spawn_blocking(move || {
        run_mail_agent(&d, &["replay", "--cassette", "c.json"], Some(&never))
    })
    .await
    .unwrap();
    let (again, stderr) = text(&replayed);
    assert!(replayed.status.success(), "{again}\n{stderr}");
    assert_eq!(again, stdout, "the replay prints what the recording did");
    assert!(stderr.contains("0 missed; 0 of"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&outbox).unwrap().lines().count(),
        1,
        "no email sent again"
    );
}

/// The example's spec, run from a temporary directory: its cassettes and the outbox land
/// there. `extra` is appended to its `tools:` block's `send_email` rules.
fn mail_spec(dir: &Path, extra_rule: &str) -> std::path::PathBuf {
    let spec = std::fs::read_to_string(repo().join("examples/mcp-agent/mail.yaml")).unwrap();
    let agent = repo().join("examples/mcp-agent/agent.py");
    let spec = spec
        .replace(
            "command: [../../.venv/bin/python, agent.py]",
            &format!("command: [{}, {}]", python(), agent.display()),
        )
        .replace("../../cassettes/examples/mcp-agent", "cassettes")
        .replace("  send_email:\n", &format!("  send_email:\n{extra_rule}"));
    let path = dir.join("mail.yaml");
    std::fs::write(&path, spec).unwrap();
    path
}

fn agentproxy_test(dir: &Path, args: &[&str], server: Option<&[String]>) -> Output {
    let bin_dir = Path::new(support::proxy::bin())
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(support::proxy::bin())
        .arg("test")
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .env("OUTBOX", dir.join("outbox.txt"))
        .env("OPENAI_API_KEY", "sk-test")
        .env(
            "MAIL_SERVER",
            serde_json::to_string(&server.unwrap_or_default()).unwrap(),
        )
        .env_remove("AGENTPROXY_URL")
        .env_remove("CI")
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mocked_mcp_tool_never_executes_in_record_or_replay() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let spec = mail_spec(dir.path(), "");
    let upstream = fake.url();
    let d = dir.path().to_owned();
    let recorded = tokio::task::spawn_blocking(move || {
        agentproxy_test(
            &d,
            &[
                spec.to_str().unwrap(),
                "--mode",
                "record",
                "--upstream",
                &upstream,
            ],
            None,
        )
    })
    .await
    .unwrap();
    let (stdout, stderr) = text(&recorded);
    assert!(recorded.status.success(), "{stdout}\n{stderr}");
    let outbox = dir.path().join("outbox.txt");
    // Only the unmocked mail reached the server.
    assert_eq!(
        std::fs::read_to_string(&outbox).unwrap(),
        "ops@example.com: It is 18°C and sunny in Paris.\n"
    );
    let mocked = std::fs::read_to_string(
        dir.path()
            .join("cassettes/a-mocked-send-email-is-never-executed.json"),
    )
    .unwrap();
    let cassette: Value = serde_json::from_str(&mocked).unwrap();
    let executed: Vec<&Value> = cassette["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["request"]["method"] == "tools/call")
        .map(|i| &i["request"]["body"]["json"]["params"]["name"])
        .collect();
    assert_eq!(executed, [&Value::from("get_weather")], "{mocked}");
    // The model was told the framework's own rendering of the mocked MCP result (a list of
    // content items), not a rewrite of it at the model boundary.
    let outputs: Vec<&Value> = cassette["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["route"] == "openai.responses")
        .filter_map(|i| i["request"]["body"]["json"]["input"].as_array())
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| &item["output"])
        .collect();
    let told = outputs.last().unwrap();
    assert_eq!(
        told[0]["text"], "{\"sent\":true,\"to\":\"test@example.com\"}",
        "{outputs:?}"
    );
    fake.stop().await;

    let never = vec![
        python(),
        "-c".into(),
        "import sys; sys.exit('the MCP server was started in replay')".into(),
    ];
    let (d, n) = (dir.path().to_owned(), never.clone());
    let replayed = tokio::task::spawn_blocking(move || {
        agentproxy_test(&d, &["mail.yaml", "--mode", "replay"], Some(&n))
    })
    .await
    .unwrap();
    let (stdout, stderr) = text(&replayed);
    assert!(replayed.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("2 passed, 0 failed"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&outbox).unwrap().lines().count(), 1);

    // Update mode refreshes model calls only: MCP is replayed, the server not started.
    let d = dir.path().to_owned();
    let updated = tokio::task::spawn_blocking(move || {
        agentproxy_test(
            &d,
            &[
                "mail.yaml",
                "--mode",
                "update",
                "--upstream",
                "http://127.0.0.1:9",
            ],
            Some(&never),
        )
    })
    .await
    .unwrap();
    let (stdout, stderr) = text(&updated);
    assert!(updated.status.success(), "{stdout}\n{stderr}");
    assert_eq!(std::fs::read_to_string(&outbox).unwrap().lines().count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mock_that_breaks_the_tools_output_schema_fails_the_case() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let rule = "    - when: {to: ops@example.com}\n      result: {sent: yes please}\n";
    let spec = mail_spec(dir.path(), rule);
    let upstream = fake.url();
    let d = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        agentproxy_test(
            &d,
            &[
                spec.to_str().unwrap(),
                "--mode",
                "record",
                "--upstream",
                &upstream,
                "--case",
                "mails the weather",
            ],
            None,
        )
    })
    .await
    .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("tools.send_email (MCP server `mail`): the mock does not fit the tool's outputSchema: \"to\" is a required property; at /sent: \"yes please\" is not of type \"boolean\""),
        "{stderr}"
    );
    assert!(
        !dir.path().join("outbox.txt").exists(),
        "the server was not called"
    );
    fake.stop().await;
}
