//! `agentproxy doctor` end to end: small stdlib programs that read OPENAI_BASE_URL,
//! OPENAI_API_BASE or ANTHROPIC_BASE_URL (streamed), one that lists models only, one that
//! ignores every injected variable, and the real openai SDK.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::proxy::bin;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn app() -> String {
    repo()
        .join("tests/fixtures/doctor_app.py")
        .display()
        .to_string()
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn doctor(args: &[&str]) -> Run {
    let out = Command::new(bin())
        .arg("doctor")
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("MY_LLM_URL")
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn json_of(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", run.stdout, run.stderr))
}

const CANNED: &str = "This is a canned reply from agentproxy doctor";

/// The program never gets a real key, even one set in the environment: a client that
/// ignored the URL variables could take it to the real API.
#[test]
fn the_program_gets_placeholder_keys_even_when_real_ones_are_set() {
    let out = Command::new(bin())
        .args(["doctor", "--json", "--", "sh", "-c"])
        .arg("echo \"$OPENAI_API_KEY $ANTHROPIC_API_KEY\"")
        .env("OPENAI_API_KEY", "sk-real-0123456789")
        .env("ANTHROPIC_API_KEY", "sk-ant-real-0123456789")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["stdout_tail"],
        serde_json::json!(["agentproxy-replay-placeholder agentproxy-replay-placeholder"]),
        "{report}"
    );
}

#[test]
fn a_program_that_reads_openai_base_url_is_ok() {
    let r = doctor(&[
        "--input",
        "Hello there",
        "--",
        "python3",
        &app(),
        "base_url",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    for expected in [
        "requests: 1 model call, 0 other",
        "POST /v1/chat/completions  → openai.chat (200)  via OPENAI_BASE_URL  model: gpt-4o-mini  client: doctor-test/1.0  auth: authorization",
        "✓ OPENAI_BASE_URL",
        "· OPENAI_API_BASE",
        "ok: the program honours OPENAI_BASE_URL.",
    ] {
        assert!(r.stdout.contains(expected), "missing {expected:?} in:\n{}", r.stdout);
    }
    // The credential header is named, never shown.
    assert!(!r.stdout.contains("placeholder"), "{}", r.stdout);
}

#[test]
fn a_program_that_reads_openai_api_base_is_told_apart_by_its_path() {
    let r = doctor(&["--json", "--", "python3", &app(), "api_base"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let j = json_of(&r);
    assert_eq!(j["ok"], true);
    assert_eq!(j["honoured"], serde_json::json!(["OPENAI_API_BASE"]));
    let a = &j["arrivals"][0];
    assert_eq!(a["api_path"], "/v1/chat/completions");
    assert!(
        a["path"]
            .as_str()
            .unwrap()
            .starts_with("/_via/OPENAI_API_BASE/v1/"),
        "{a}"
    );
    assert_eq!(a["route"], "openai.chat");
    // The program got the canned reply and printed it.
    assert!(
        j["stdout_tail"][0].as_str().unwrap().starts_with(CANNED),
        "{j}"
    );
    assert_eq!(
        j["program"],
        serde_json::json!({"kind": "exited", "code": 0})
    );
}

#[test]
fn an_anthropic_streaming_client_gets_a_canned_event_stream() {
    let r = doctor(&["--json", "--", "python3", &app(), "anthropic"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let j = json_of(&r);
    assert_eq!(j["honoured"], serde_json::json!(["ANTHROPIC_BASE_URL"]));
    let a = &j["arrivals"][0];
    assert_eq!(
        (a["route"].as_str(), a["stream"].as_bool()),
        (Some("anthropic.messages"), Some(true))
    );
    assert_eq!(a["auth"], serde_json::json!(["x-api-key"]));
    assert!(
        j["stdout_tail"][0].as_str().unwrap().starts_with(CANNED),
        "{j}"
    );
}

#[test]
fn a_program_that_ignores_every_variable_fails_with_advice() {
    let r = doctor(&["--", "python3", &app(), "own"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    for expected in [
        "requests: 0 model calls, 0 other",
        "program: exited with status 1",
        "no request reached the proxy",
        "Connection refused",
        "Which client reads which variable:",
        "langchain-openai  OPENAI_API_BASE first, then OPENAI_BASE_URL",
        "Its files mention MY_LLM_URL.",
        "app:\n      env:\n        MY_LLM_URL: ${agentproxy.url}\n",
    ] {
        assert!(
            r.stdout.contains(expected),
            "missing {expected:?} in:\n{}",
            r.stdout
        );
    }
}

#[test]
fn the_suggested_check_of_a_mapped_variable_names_it() {
    // What the advice above says to run, on a free port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mapped = format!("MY_LLM_URL=http://127.0.0.1:{port}/_via/MY_LLM_URL/v1");
    let r = doctor(&[
        "--listen",
        &listen,
        "--",
        "env",
        &mapped,
        "python3",
        &app(),
        "own",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("ok: the program honours MY_LLM_URL."),
        "{}",
        r.stdout
    );
}

#[test]
fn plain_http_gets_a_404_that_says_doctor_mode_and_is_not_enough() {
    let r = doctor(&["--", "python3", &app(), "models"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("GET /v1/models  → http (404)  via OPENAI_BASE_URL"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("none was a model call"), "{}", r.stdout);
    assert!(
        r.stdout.contains(
            "no model call reached the proxy, although the program honours OPENAI_BASE_URL"
        ),
        "{}",
        r.stdout
    );
    // The program saw the doctor's explanation.
    assert!(
        r.stdout
            .contains("HTTP 404: agentproxy doctor: GET /v1/models is not a model route"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_program_that_cannot_start_is_an_execution_error() {
    let r = doctor(&["--", "/nonexistent/agentproxy-doctor-test"]);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("failed to start"), "{}", r.stderr);
}

/// The venv's interpreter (see tests/clients/e2e_python.rs), or `None` when skipped on purpose.
fn venv_python() -> Option<PathBuf> {
    if std::env::var_os("AGENTPROXY_SKIP_PYTHON_E2E").is_some_and(|v| v == "1") {
        return None;
    }
    let python = repo().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-python.sh",
        python.display()
    );
    Some(python)
}

#[test]
fn the_real_openai_sdk_accepts_the_doctor_paths_and_replies() {
    let Some(python) = venv_python() else { return };
    let script = repo().join("tests/e2e/doctor_sdk.py");
    let r = doctor(&[
        "--json",
        "--",
        python.to_str().unwrap(),
        script.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let j = json_of(&r);
    assert_eq!(j["honoured"], serde_json::json!(["OPENAI_API_BASE"]));
    let routes: Vec<(&str, bool)> = j["arrivals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["route"].as_str().unwrap(), a["stream"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        routes,
        [
            ("openai.chat", false),
            ("openai.chat", true),
            ("openai.responses", false)
        ]
    );
    assert!(
        j["arrivals"][0]["client"]
            .as_str()
            .unwrap()
            .starts_with("OpenAI/Python"),
        "{j}"
    );
    let out: Vec<&str> = j["stdout_tail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    for (i, label) in ["chat:", "stream:", "responses:"].iter().enumerate() {
        assert!(out[i].starts_with(&format!("{label} {CANNED}")), "{out:?}");
    }
}

/// The MCP example: its server comes through `agentproxy mcp`, which the doctor names and
/// runs as it is (nothing is recorded); the outbox is not written (the canned reply asks
/// for no tool).
#[test]
fn an_mcp_server_through_the_stand_in_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let bin_dir = Path::new(bin()).parent().unwrap().to_owned();
    let out = Command::new(bin())
        .args([
            "doctor",
            "--json",
            "--input",
            "Mail the weather in Paris to a@b.c",
            "--",
        ])
        .arg(repo().join(".venv/bin/python"))
        .arg(repo().join("examples/mcp-agent/agent.py"))
        .current_dir(dir.path())
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin_dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env_remove("AGENTPROXY_URL")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(
        report["mcp_servers"],
        serde_json::json!(["mail"]),
        "{report}"
    );
    assert_eq!(report["notes"], serde_json::json!([]), "{report}");
    assert!(!dir.path().join("outbox.txt").exists());
}

/// With no program, doctor reports on agentproxy itself: the version line `--version`
/// prints, this binary's path and every provider's upstream; `--json` the same as data.
#[test]
fn with_no_program_doctor_says_what_a_bug_report_needs() {
    let version = Command::new(bin()).arg("--version").output().unwrap();
    let version = String::from_utf8_lossy(&version.stdout).into_owned();
    let run = doctor(&[]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.starts_with(&version), "{}", run.stdout);
    let exe = std::fs::canonicalize(bin()).unwrap();
    assert!(
        run.stdout
            .contains(&format!("executable  {}\n", exe.display())),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("  openai     "), "{}", run.stdout);

    let run = doctor(&["--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let about = json_of(&run);
    assert_eq!(
        format!("agentproxy {}\n", about["version"].as_str().unwrap()),
        version
    );
    let providers: Vec<&str> = (about["upstreams"].as_array().unwrap().iter())
        .map(|u| u["provider"].as_str().unwrap())
        .collect();
    assert_eq!(
        providers,
        [
            "openai",
            "anthropic",
            "gemini",
            "azure",
            "ollama",
            "bedrock",
            "vertex"
        ]
    );
}
