//! End-to-end tests of the Gemini dialect with the real `google-genai` Python SDK
//! (`tests/e2e/gemini_tools.py`: a manual two-tool loop, plain and streamed), recorded
//! through the `agentproxy` binary against the fake Gemini upstream, then replayed with the
//! upstream stopped and no API key: the replay must print exactly what the record printed.
//! One test runs the script straight against the fake, without the proxy, to show the fake
//! is one the SDK accepts; one drives the proxy with plain HTTP and the key in `?key=`.
//!
//! The SDK lives in `.venv` at the repository root: run `scripts/setup-python.sh` first.
//! A missing venv fails these tests; `AGENTPROXY_SKIP_PYTHON_E2E=1` skips them on purpose.

use crate::support;

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::{json, Value};
use support::fake_gemini::FakeGemini;
use support::http;
use support::proxy::Daemon;

/// The key of the record runs, shaped like a real one (`AIzaSy` + 33 characters): the
/// proxy must forward it and never write it.
const GEMINI_KEY: &str = "AIzaSyE2eNotARealKey0000000000000000000";
/// Generous: Python interpreters of parallel tests share a 2-core CI machine.
const CHILD_TIMEOUT: Duration = Duration::from_secs(180);
const MODEL: &str = "gemini-3-flash-preview";
/// The script's default question: `get_weather`, then `get_time`, then the answer.
const REPLY: &str = "reply: It is 18°C and sunny in Paris. It is 09:00 in Tokyo.\n";
const WEATHER_CALL: &str = r#"tool call: get_weather {"city": "Paris"} (id: yes, signature: "#;
const TIME_CALL: &str = r#"tool call: get_time {"city": "Tokyo"} (id: no, signature: "#;
/// One tool, two cities: two parallel calls in one answer, only the first signed.
const PARALLEL: &str = "What's the weather in Paris and Tokyo?";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The venv's interpreter, or `None` when the tests are skipped on purpose.
fn python() -> Option<PathBuf> {
    if std::env::var_os("AGENTPROXY_SKIP_PYTHON_E2E").is_some_and(|v| v == "1") {
        eprintln!("AGENTPROXY_SKIP_PYTHON_E2E=1: skipping the Python end-to-end test");
        return None;
    }
    let python = repo().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-python.sh to install the SDKs \
         (or set AGENTPROXY_SKIP_PYTHON_E2E=1 to skip these tests)",
        python.display()
    );
    Some(python)
}

/// One finished child run.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// Runs `program ARGS` in an environment cleaned of anything from the developer's shell
/// that could steer agentproxy or the SDK: `GOOGLE_API_KEY` (which the SDK prefers to
/// `GEMINI_API_KEY`), `GOOGLE_GENAI_USE_VERTEXAI`, `GOOGLE_GEMINI_BASE_URL`, … `env`: what to
/// set on top.
async fn run(program: &Path, args: Vec<OsString>, env: &[(&str, &str)]) -> Run {
    let mut command = tokio::process::Command::new(program);
    command.args(args).current_dir(repo()).kill_on_drop(true);
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if ["OPENAI_", "ANTHROPIC_", "AGENTPROXY_", "GEMINI_", "GOOGLE_"]
            .iter()
            .any(|prefix| text.starts_with(prefix))
        {
            command.env_remove(&name);
        }
    }
    // Unbuffered, so a child killed by the timeout still shows how far it got; UTF-8,
    // because the replies contain "°"; no bytecode files written into tests/e2e.
    command
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONIOENCODING", "utf-8")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(env.iter().copied());
    let output = tokio::time::timeout(CHILD_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{} did not finish within {CHILD_TIMEOUT:?}",
                program.display()
            )
        })
        .unwrap_or_else(|e| panic!("failed to start {}: {e}", program.display()));
    Run {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The agentproxy binary with `args`; `key`: set `GEMINI_API_KEY` (record) or not (replay).
async fn agentproxy(args: Vec<OsString>, key: bool) -> Run {
    let env: &[(&str, &str)] = if key {
        &[("GEMINI_API_KEY", GEMINI_KEY)]
    } else {
        &[]
    };
    run(Path::new(env!("CARGO_BIN_EXE_agentproxy")), args, env).await
}

/// `python tests/e2e/gemini_tools.py ARGS...`.
fn script(python: &Path, args: &[&str]) -> Vec<OsString> {
    let mut command: Vec<OsString> = vec![
        python.into(),
        repo().join("tests/e2e/gemini_tools.py").into_os_string(),
    ];
    command.extend(args.iter().map(OsString::from));
    command
}

/// Every request the fake got is a generate call of the script's model, streamed
/// (`alt=sse`) or not, and carried the key in `x-goog-api-key`.
fn check_requests(fake: &FakeGemini, streamed: bool) {
    let (method, query) = if streamed {
        ("streamGenerateContent", Some("alt=sse"))
    } else {
        ("generateContent", None)
    };
    let path = format!("/v1/models/{MODEL}:{method}");
    for request in fake.requests() {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, path, "what the SDK called");
        assert_eq!(request.query.as_deref(), query, "the query of {path}");
        assert_eq!(
            request.header("x-goog-api-key"),
            Some(GEMINI_KEY),
            "the key must reach the upstream"
        );
    }
}

/// The `thoughtSignature`s of the model turns the SDK sent back, as sent.
fn echoed_signatures(fake: &FakeGemini) -> Vec<String> {
    fake.requests()
        .iter()
        .filter_map(|r| r.json.clone())
        .flat_map(|body| body["contents"].as_array().cloned().unwrap_or_default())
        .filter(|content| content["role"] == "model")
        .flat_map(|content| content["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["thoughtSignature"].as_str().map(str::to_owned))
        .collect()
}

/// The script against the fake, no proxy: the fake is one the real SDK accepts, and the
/// SDK sends what these tests expect the proxy to see.
#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_runs_its_tool_loop_against_the_fake_directly() {
    let Some(python) = python() else { return };
    for streamed in [false, true] {
        let fake = FakeGemini::start().await;
        let url = fake.url();
        let args: &[&str] = if streamed { &["stream"] } else { &[] };
        let mut program = script(&python, args);
        let interpreter = PathBuf::from(program.remove(0));
        let direct = run(
            &interpreter,
            program,
            &[
                ("GOOGLE_GEMINI_BASE_URL", &url),
                ("GEMINI_API_KEY", GEMINI_KEY),
            ],
        )
        .await;
        assert!(direct.status.success(), "the SDK failed: {direct}");
        for line in [WEATHER_CALL, TIME_CALL, REPLY, "finish: STOP\n"] {
            assert!(direct.stdout.contains(line), "no {line:?}: {direct}");
        }
        assert!(!direct.stdout.contains("signature: none"), "{direct}");
        if streamed {
            assert!(
                direct.stdout.contains("chunk: text 'It is' (finish: -)\n"),
                "the text was not streamed in pieces: {direct}"
            );
        }
        assert_eq!(fake.request_count(), 3, "{direct}");
        check_requests(&fake, streamed);
        // The SDK echoes the signatures it was sent in standard base64 re-encoded in the
        // URL-safe alphabet: a proxy that compares them byte for byte misses.
        let echoed = echoed_signatures(&fake);
        assert_eq!(echoed.len(), 3, "{echoed:?}");
        assert!(
            echoed
                .iter()
                .all(|s| s.contains(['-', '_']) && !s.contains(['+', '/'])),
            "{echoed:?}"
        );
        fake.stop().await;
    }
}

/// `(route, streamed)` of each recorded interaction.
fn interactions(cassette: &Value) -> Vec<(String, bool)> {
    cassette["interactions"]
        .as_array()
        .expect("interactions")
        .iter()
        .map(|i| {
            (
                i["route"].as_str().unwrap_or_default().to_owned(),
                i["response"].get("events").is_some(),
            )
        })
        .collect()
}

/// Records `gemini_tools.py ARGS` against a fresh fake, checks the key was forwarded and
/// never written, stops the fake, replays with no key: exit 0 and the same output.
/// Returns the record run. `requests`: how many generate calls the script makes.
async fn record_then_replay(args: &[&str], requests: usize) -> Option<Run> {
    let python = python()?;
    let streamed = args.first() == Some(&"stream");
    let fake = FakeGemini::start().await;
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let cassette = dir.path().join("c.json");

    let mut record: Vec<OsString> = vec![
        "record".into(),
        "--cassette".into(),
        cassette.clone().into(),
        "--gemini-upstream".into(),
        fake.url().into(),
        "--".into(),
    ];
    record.extend(script(&python, args));
    let recording = agentproxy(record, true).await;
    assert!(recording.status.success(), "record failed: {recording}");
    assert_eq!(fake.request_count(), requests, "{recording}");
    check_requests(&fake, streamed);
    assert!(recording.stdout.contains(REPLY) || recording.stdout.contains("reply: It is"));
    let written = std::fs::read_to_string(&cassette).expect("record wrote no cassette");
    assert!(
        !written.contains(GEMINI_KEY),
        "the key leaked into the cassette:\n{written}"
    );
    let parsed: Value = serde_json::from_str(&written).expect("the cassette is JSON");
    assert_eq!(
        interactions(&parsed),
        vec![("gemini.generate".to_owned(), streamed); requests],
        "what was recorded"
    );
    fake.stop().await;

    let mut replay: Vec<OsString> = vec![
        "replay".into(),
        "--cassette".into(),
        cassette.into(),
        "--".into(),
    ];
    replay.extend(script(&python, args));
    let replayed = agentproxy(replay, false).await;
    assert!(replayed.status.success(), "replay failed: {replayed}");
    assert_eq!(
        replayed.stdout, recording.stdout,
        "the replay printed something else"
    );
    Some(recording)
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_tools_records_and_replays() {
    let Some(recording) = record_then_replay(&[], 3).await else {
        return;
    };
    for line in [WEATHER_CALL, TIME_CALL, REPLY, "usage: prompt="] {
        assert!(recording.stdout.contains(line), "no {line:?}: {recording}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_stream_records_and_replays() {
    let Some(recording) = record_then_replay(&["stream"], 3).await else {
        return;
    };
    for line in [
        WEATHER_CALL,
        TIME_CALL,
        "chunk: call get_weather (finish: STOP)\n",
        "chunk: text 'It is' (finish: -)\n",
        REPLY,
    ] {
        assert!(recording.stdout.contains(line), "no {line:?}: {recording}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_parallel_calls_stream_records_and_replays() {
    let Some(recording) = record_then_replay(&["stream", PARALLEL], 2).await else {
        return;
    };
    for line in [
        "chunk: call get_weather, call get_weather (finish: STOP)\n",
        r#"tool call: get_weather {"city": "Tokyo"} (id: yes, signature: none)"#,
        "reply: It is 18°C and sunny in Paris. It is 22°C and cloudy in Tokyo.\n",
    ] {
        assert!(recording.stdout.contains(line), "no {line:?}: {recording}");
    }
}

/// The lines that do not depend on how the answers were delivered (streamed or whole).
fn outcome_lines(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| !l.starts_with("chunk: "))
        .collect()
}

/// Records with `record_args`, replays with `replay_args` (one side streamed, the other
/// not): the proxy converts the recording, the SDK accepts it, the follow-up requests it
/// builds from the converted answers match the recording, and the outcome is the same.
async fn record_then_replay_converted(record_args: &[&str], replay_args: &[&str]) {
    let Some(python) = python() else { return };
    let fake = FakeGemini::start().await;
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let cassette = dir.path().join("c.json");
    let mut record: Vec<OsString> = vec![
        "record".into(),
        "--cassette".into(),
        cassette.clone().into(),
        "--gemini-upstream".into(),
        fake.url().into(),
        "--".into(),
    ];
    record.extend(script(&python, record_args));
    let recording = agentproxy(record, true).await;
    assert!(recording.status.success(), "record failed: {recording}");
    fake.stop().await;
    let mut replay: Vec<OsString> = vec![
        "replay".into(),
        "--cassette".into(),
        cassette.into(),
        "--".into(),
    ];
    replay.extend(script(&python, replay_args));
    let replayed = agentproxy(replay, false).await;
    assert!(
        replayed.status.success(),
        "converted replay failed: {replayed}"
    );
    let want = outcome_lines(&recording.stdout);
    assert!(want.iter().any(|l| l.starts_with("reply: ")), "{recording}");
    assert_eq!(
        outcome_lines(&replayed.stdout),
        want,
        "record: {recording}\nreplay: {replayed}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_stream_recording_serves_a_plain_client_and_back() {
    record_then_replay_converted(&["stream"], &[]).await;
    record_then_replay_converted(&[], &["stream"]).await;
}

/// A hand-written client with the key in the URL, as older LiteLLM and many REST snippets
/// send it: forwarded upstream, never written, no part of the match.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_in_the_query_is_forwarded_and_never_recorded() {
    let fake = FakeGemini::start().await;
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let cassette = dir.path().join("c.json");
    let cassette_arg = cassette.to_str().expect("a UTF-8 temp path");
    let upstream = fake.url();
    let body = json!({
        "contents": [{"role": "user", "parts": [{"text": "Hello there"}]}],
        "generationConfig": {"temperature": 0.0},
    });
    let body = serde_json::to_vec(&body).expect("JSON");
    let path = |key: &str| format!("/v1beta/models/gemini-2.5-flash:generateContent?key={key}");
    let headers = [("content-type", "application/json")];

    let daemon = Daemon::start(
        &[
            "record",
            "--cassette",
            cassette_arg,
            "--gemini-upstream",
            &upstream,
        ],
        repo(),
    );
    let url = daemon.url.clone();
    let recorded = tokio::task::spawn_blocking({
        let path = path(GEMINI_KEY);
        let body = body.clone();
        move || http::request(&url, "POST", &path, &headers, &body)
    })
    .await
    .expect("the request thread");
    assert_eq!(recorded.status, 200, "{}", recorded.text());
    let answer = recorded.json()["candidates"][0]["content"]["parts"][0]["text"].clone();
    assert_eq!(answer, "You said: Hello there");
    let (code, stderr) = daemon.interrupt();
    assert_eq!(code, 0, "record daemon: {stderr}");
    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    assert!(
        sent[0]
            .query
            .as_deref()
            .is_some_and(|q| q.contains(GEMINI_KEY)),
        "the query key must reach the upstream: {:?}",
        sent[0].query
    );
    fake.stop().await;
    let written = std::fs::read_to_string(&cassette).expect("record wrote no cassette");
    assert!(
        !written.contains(GEMINI_KEY),
        "the key leaked into the cassette:\n{written}"
    );

    // Another key (the replay's placeholder, a colleague's) is served the same recording.
    let daemon = Daemon::start(&["replay", "--cassette", cassette_arg], repo());
    let url = daemon.url.clone();
    let served = tokio::task::spawn_blocking({
        let path = path("AIzaSyAnotherKey11111111111111111111111");
        move || http::request(&url, "POST", &path, &headers, &body)
    })
    .await
    .expect("the request thread");
    assert_eq!(served.status, 200, "{}", served.text());
    assert_eq!(
        served.json()["candidates"][0]["content"]["parts"][0]["text"],
        answer
    );
    let (code, stderr) = daemon.interrupt();
    assert_eq!(code, 0, "replay daemon: {stderr}");
}

/// Gemini Live with the real SDK (`client.aio.live.connect`), which dials `wss://` on the
/// base URL's host: TLS on the session's port, a tool call and a text answer on one
/// socket, each turn an interaction, replayed with the upstream stopped and no key.
#[tokio::test(flavor = "multi_thread")]
async fn gemini_live_records_and_replays() {
    let Some(python) = python() else { return };
    let fake = FakeGemini::start().await;
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let cassette = dir.path().join("c.json");
    let live = repo().join("tests/e2e/gemini_live.py").into_os_string();
    let mut record: Vec<OsString> = vec![
        "record".into(),
        "--cassette".into(),
        cassette.clone().into(),
    ];
    record.extend(["--gemini-upstream".into(), fake.url().into(), "--".into()]);
    record.extend([python.clone().into_os_string(), live.clone()]);
    let recording = agentproxy(record, true).await;
    assert!(recording.status.success(), "record failed: {recording}");
    for line in [
        "tool call: get_weather {\"city\": \"Paris\"",
        "piece: ",
        "reply: ",
    ] {
        assert!(recording.stdout.contains(line), "no {line:?}: {recording}");
    }
    let upgrade = &fake.requests()[0];
    assert_eq!(upgrade.header("x-goog-api-key"), Some(GEMINI_KEY));
    let written = std::fs::read_to_string(&cassette).expect("record wrote no cassette");
    assert!(!written.contains(GEMINI_KEY), "the key leaked:\n{written}");
    let parsed: Value = serde_json::from_str(&written).expect("the cassette is JSON");
    let turns = vec![("gemini.live".to_owned(), true); 2];
    assert_eq!(interactions(&parsed), turns, "what was recorded");
    // Both turns name the model, though only the first carries the setup.
    for it in parsed["interactions"].as_array().unwrap() {
        let model = it["response"]["body"]["json"]["model"]
            .as_str()
            .unwrap_or_default();
        assert!(model.starts_with("gemini"), "{model:?}");
    }
    fake.stop().await;

    let mut replay: Vec<OsString> = vec![
        "replay".into(),
        "--cassette".into(),
        cassette.into(),
        "--".into(),
    ];
    replay.extend([python.into_os_string(), live]);
    let replayed = agentproxy(replay, false).await;
    assert!(replayed.status.success(), "replay failed: {replayed}");
    assert_eq!(
        replayed.stdout, recording.stdout,
        "the replay printed something else"
    );
}
