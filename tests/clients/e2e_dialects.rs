//! End-to-end tests of the Responses and Anthropic dialects with real SDKs: the `anthropic`
//! SDK (tools loop, plain and through its streaming helper), the `openai` SDK's
//! `responses.create` (tools and `previous_response_id`, plain and streamed), the
//! OpenAI Agents SDK running an agent with a function tool, and the Claude Agent SDK (the
//! Claude Code CLI it bundles). Each script in `tests/e2e/` is
//! recorded through the `agentproxy` binary against the fake upstreams (OpenAI and
//! Anthropic), then replayed with no API key and must print exactly the same thing while
//! neither fake receives a request.
//!
//! The SDKs live in `.venv` at the repository root: run `scripts/setup-python.sh` first.
//! A missing venv fails these tests; `AGENTPROXY_SKIP_PYTHON_E2E=1` skips them on purpose.

use crate::support;

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::Value;
use support::fake_anthropic::FakeAnthropic;
use support::fake_openai::FakeOpenAi;

/// The keys of the record runs, in the shapes the secret scan knows (`sk-…`, `sk-ant-…`):
/// the proxy must forward them and never write them.
const OPENAI_KEY: &str = "sk-e2e-not-a-real-key-000000000000000000";
const ANTHROPIC_KEY: &str = "sk-ant-e2e-not-a-real-key-0000000000000000";
/// Generous: Python interpreters of parallel tests share a 2-core CI machine, and the
/// Agents SDK is slow to import.
const CHILD_TIMEOUT: Duration = Duration::from_secs(180);

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

/// One finished `agentproxy` run.
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

/// Runs the agentproxy binary in an environment cleaned of anything from the developer's
/// shell that could steer it or the SDKs. `keys`: set the API keys (record) or not (replay).
async fn agentproxy(args: Vec<OsString>, keys: bool) -> Run {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentproxy"));
    command.args(args).current_dir(repo()).kill_on_drop(true);
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if ["OPENAI_", "ANTHROPIC_", "AGENTPROXY_"]
            .iter()
            .any(|prefix| text.starts_with(prefix))
        {
            command.env_remove(&name);
        }
    }
    if keys {
        command
            .env("OPENAI_API_KEY", OPENAI_KEY)
            .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY);
    }
    // The Agents SDK uploads traces to a fixed api.openai.com URL, around the proxy. The
    // test machine must send nothing off loopback, so tracing is off in both runs (replay
    // would switch it off by itself; record, on purpose, does not).
    command.env("OPENAI_AGENTS_DISABLE_TRACING", "1");
    // Unbuffered, so a child killed by the timeout still shows how far it got; UTF-8,
    // because the replies contain "°"; no bytecode files written into tests/e2e.
    command
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONIOENCODING", "utf-8")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let output = tokio::time::timeout(CHILD_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("agentproxy did not finish within {CHILD_TIMEOUT:?}"))
        .expect("failed to start the agentproxy binary");
    Run {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The two fakes, both running for the whole test so a replay that reached either is seen.
struct Fakes {
    openai: FakeOpenAi,
    anthropic: FakeAnthropic,
}

impl Fakes {
    async fn start() -> Fakes {
        Fakes {
            openai: FakeOpenAi::start().await,
            anthropic: FakeAnthropic::start().await,
        }
    }

    fn request_count(&self) -> usize {
        self.openai.request_count() + self.anthropic.request_count()
    }

    async fn stop(self) {
        self.openai.stop().await;
        self.anthropic.stop().await;
    }
}

/// `python tests/e2e/<script> ARGS...`.
fn command(python: &Path, script: &str, args: &[&str]) -> Vec<OsString> {
    let mut command: Vec<OsString> = vec![
        python.into(),
        repo().join("tests/e2e").join(script).into_os_string(),
    ];
    command.extend(args.iter().map(OsString::from));
    command
}

/// Records `script ARGS` against the fakes; checks the credentials were forwarded and
/// never written. Returns the record run and the cassette, parsed.
async fn record(fakes: &Fakes, cassette: &Path, program: Vec<OsString>) -> (Run, Value) {
    let mut args: Vec<OsString> = vec![
        "record".into(),
        "--cassette".into(),
        cassette.into(),
        "--upstream".into(),
        fakes.openai.url().into(),
        "--anthropic-upstream".into(),
        fakes.anthropic.url().into(),
        "--".into(),
    ];
    args.extend(program);
    let run = agentproxy(args, true).await;
    assert!(run.status.success(), "record failed: {run}");
    assert!(
        fakes.request_count() > 0,
        "record sent nothing upstream: {run}"
    );
    let openai_bearer = format!("Bearer {OPENAI_KEY}");
    for request in fakes.openai.requests() {
        assert_eq!(
            request.header("authorization"),
            Some(openai_bearer.as_str()),
            "the proxy must forward the OpenAI credential"
        );
    }
    let anthropic_bearer = format!("Bearer {ANTHROPIC_KEY}");
    for request in fakes.anthropic.requests() {
        // anthropic 2.x sends the key as a bearer token; older SDKs use x-api-key.
        let credential = request
            .header("authorization")
            .or(request.header("x-api-key"));
        assert!(
            credential == Some(anthropic_bearer.as_str()) || credential == Some(ANTHROPIC_KEY),
            "the proxy must forward the Anthropic credential, got {credential:?}"
        );
        assert!(
            request.header("anthropic-version").is_some(),
            "the proxy must forward anthropic-version"
        );
    }
    let written = std::fs::read_to_string(cassette).expect("record wrote no cassette");
    for key in [OPENAI_KEY, ANTHROPIC_KEY] {
        assert!(
            !written.contains(key),
            "{key} leaked into the cassette:\n{written}"
        );
    }
    let parsed = serde_json::from_str(&written).expect("the cassette is JSON");
    (run, parsed)
}

/// Replays `program` from `cassette` with no key and the fakes still up; asserts neither
/// fake was reached.
async fn replay(fakes: &Fakes, cassette: &Path, program: Vec<OsString>) -> Run {
    let mut args: Vec<OsString> = vec![
        "replay".into(),
        "--cassette".into(),
        cassette.into(),
        "--".into(),
    ];
    args.extend(program);
    let served = fakes.request_count();
    let run = agentproxy(args, false).await;
    assert_eq!(
        fakes.request_count(),
        served,
        "replay reached an upstream: {run}"
    );
    run
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

/// Records `script ARGS`, checks what it printed and recorded, replays it and compares.
/// `recorded`: the `(route, streamed)` of each interaction the cassette must hold, in order.
async fn record_then_replay(
    script: &str,
    args: &[&str],
    expected: &[&str],
    recorded: &[(&str, bool)],
) {
    let Some(python) = python() else { return };
    let fakes = Fakes::start().await;
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let cassette = dir.path().join("c.json");
    let (recording, written) = record(&fakes, &cassette, command(&python, script, args)).await;
    for line in expected {
        assert!(
            recording.stdout.contains(line),
            "record of {script} did not print {line:?}: {recording}"
        );
    }
    let want: Vec<(String, bool)> = recorded
        .iter()
        .map(|(route, streamed)| ((*route).to_owned(), *streamed))
        .collect();
    assert_eq!(interactions(&written), want, "what {script} recorded");

    let replayed = replay(&fakes, &cassette, command(&python, script, args)).await;
    assert!(
        replayed.status.success(),
        "replay of {script} failed: {replayed}"
    );
    assert_eq!(
        replayed.stdout, recording.stdout,
        "replay of {script} printed something else"
    );
    fakes.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_tools_records_and_replays() {
    record_then_replay(
        "anthropic_tools.py",
        &[],
        &[
            "stop: tool_use\n",
            "text: I'll look that up.\n",
            r#"tool call: get_weather {"city": "Paris", "unit": "celsius"}"#,
            "stop: end_turn\n",
            "reply: It is 18°C and sunny in Paris.\n",
            "usage: ",
        ],
        &[("anthropic.messages", false), ("anthropic.messages", false)],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_streaming_helper_records_and_replays() {
    record_then_replay(
        "anthropic_tools.py",
        &["--stream"],
        &[
            "input_json: ''\n",
            r#"tool input complete: {"city": "Paris", "unit": "celsius"}"#,
            r#"tool input complete: {"city": "Tokyo", "unit": "celsius"}"#,
            r#"tool call: get_weather {"city": "Tokyo", "unit": "celsius"}"#,
            "delta: '°C'\n",
            "reply: It is 18°C and sunny in Paris. It is 22°C and cloudy in Tokyo.\n",
        ],
        &[("anthropic.messages", true), ("anthropic.messages", true)],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_tools_with_previous_response_id_records_and_replays() {
    record_then_replay(
        "responses_tools.py",
        &[],
        &[
            "status: completed\n",
            r#"tool call: get_weather {"city": "Paris", "unit": "celsius"}"#,
            "reply: It is 18°C and sunny in Paris.\n",
            "usage: ",
        ],
        &[("openai.responses", false), ("openai.responses", false)],
    )
    .await;
}

/// The Responses API's WebSocket mode with the real SDK (`client.responses.connect()`):
/// both turns on one socket, recorded as two streamed Responses interactions, replayed
/// with the upstream stopped.
#[tokio::test(flavor = "multi_thread")]
async fn responses_socket_records_and_replays() {
    record_then_replay(
        "responses_socket.py",
        &[],
        &[
            "event: response.created\n",
            r#"tool call: get_weather {"city": "Paris", "unit": "celsius"}"#,
            "delta: ",
            "reply: It is 18°C and sunny in Paris.\n",
        ],
        &[("openai.responses", true), ("openai.responses", true)],
    )
    .await;
}

/// The Realtime API with the real SDK (`client.realtime.connect()`): a function call, a
/// text answer and an audio answer on one socket, each turn an interaction, replayed with
/// the upstream stopped (the audio's bytes the same).
#[tokio::test(flavor = "multi_thread")]
async fn realtime_records_and_replays() {
    record_then_replay(
        "realtime_agent.py",
        &[],
        &[
            "event: session.created\n",
            r#"tool call: get_weather {"city": "Paris", "unit": "celsius"}"#,
            "reply: It is 18°C and sunny in Paris.\n",
            "audio: ",
            "transcript: ",
        ],
        &[
            ("openai.realtime", true),
            ("openai.realtime", true),
            ("openai.realtime", true),
        ],
    )
    .await;
}

/// A spec's tool mock answers a Realtime function call: the mocked result is what the
/// model is told (the upstream's socket gets it in place of the tool's), recorded, and
/// replayed with the upstream stopped.
#[tokio::test(flavor = "multi_thread")]
async fn a_realtime_function_call_is_answered_by_a_mock() {
    let Some(python) = python() else { return };
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let agent = repo().join("examples/realtime-agent/agent.py");
    let spec = format!(
        r#"name: realtime mocks
app:
  command: ["{}", "{}"]
  reply_until: '^assistant:'
  timeout: 60s
tools:
  get_weather:
    result: {{city: Paris, temp_c: -3, sky: snowy}}
cases:
  - name: mocked weather
    input: What's the weather in Paris?
    expect:
      calls: [{{get_weather: {{city: Paris}}}}]
      reply: "-3°C and snowy"
"#,
        python.display(),
        agent.display()
    );
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    let upstream = fake.url();
    let run = |args: Vec<String>| {
        let dir = dir.path().to_owned();
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_agentproxy"))
                .args(&args)
                .current_dir(dir)
                .env("OPENAI_API_KEY", "sk-test-realtime-mock")
                .env_remove("CI")
                .output()
                .unwrap()
        })
    };
    let args = |mode: &str| -> Vec<String> {
        let mut a = vec![
            "test".into(),
            "spec.yaml".into(),
            "--mode".into(),
            mode.into(),
        ];
        if mode == "record" {
            a.extend(["--upstream".into(), upstream.clone()]);
        }
        a
    };
    let recorded = run(args("record")).await.unwrap();
    let stderr = String::from_utf8_lossy(&recorded.stderr);
    assert!(recorded.status.success(), "{stderr}");
    let outputs: Vec<String> = (fake.frames().iter())
        .filter(|f| f["item"]["type"] == "function_call_output")
        .map(|f| f["item"]["output"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(outputs.len(), 1, "{outputs:?}");
    assert!(
        outputs[0].contains("-3") && outputs[0].contains("snowy"),
        "{outputs:?}"
    );
    fake.stop().await;
    let replayed = run(args("replay")).await.unwrap();
    let stderr = String::from_utf8_lossy(&replayed.stderr);
    assert!(replayed.status.success(), "{stderr}");
    assert!(stderr.contains("1 passed, 0 failed"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_stream_records_and_replays() {
    record_then_replay(
        "responses_tools.py",
        &["--stream"],
        &[
            "item added: function_call\n",
            "arguments delta: ",
            r#"tool call: get_weather {"city": "Paris", "unit": "celsius"}"#,
            r#"tool call: get_time {"city": "Tokyo"}"#,
            "delta: ",
            "reply: It is 18°C and sunny in Paris. It is 09:00 in Tokyo.\n",
        ],
        &[("openai.responses", true), ("openai.responses", true)],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn agents_sdk_records_and_replays() {
    record_then_replay(
        "agents_sdk.py",
        &[],
        &[
            r#"tool call: get_weather {"city": "Paris", "unit": "celsius"}"#,
            "tool output: ",
            "reply: It is 18°C and sunny in Paris.\n",
            "requests: 2 ",
        ],
        &[("openai.responses", false), ("openai.responses", false)],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn agents_sdk_streamed_run_records_and_replays() {
    record_then_replay(
        "agents_sdk.py",
        &["--stream"],
        &[
            r#"tool call: get_weather {"city": "Paris", "unit": "celsius"}"#,
            "delta: 'It '\n",
            "reply: It is 18°C and sunny in Paris.\n",
            "requests: 2 ",
        ],
        &[("openai.responses", true), ("openai.responses", true)],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn replay_of_an_edited_anthropic_question_misses_in_anthropic_shape() {
    let Some(python) = python() else { return };
    let fakes = Fakes::start().await;
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let cassette = dir.path().join("c.json");
    record(
        &fakes,
        &cassette,
        command(&python, "anthropic_tools.py", &[]),
    )
    .await;
    let program = command(
        &python,
        "anthropic_tools.py",
        &["What's the weather in Berlin?"],
    );
    let replayed = replay(&fakes, &cassette, program).await;
    assert_eq!(
        replayed.status.code(),
        Some(1),
        "a miss must exit 1: {replayed}"
    );
    assert!(
        replayed.stderr.contains("nearest recorded request"),
        "no miss report: {replayed}"
    );
    // The SDK raised its own error type for the 4xx, without retrying.
    assert!(
        replayed.stderr.contains("anthropic.BadRequestError")
            || replayed.stderr.contains("BadRequestError"),
        "the SDK did not see an Anthropic-shaped 400: {replayed}"
    );
    assert!(
        replayed.stderr.contains("agentproxy_cassette_miss"),
        "{replayed}"
    );
    fakes.stop().await;
}

/// The lines that do not depend on how the answers were delivered (streamed or whole).
fn outcome_lines(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| {
            ["tool call: ", "reply: ", "usage: ", "stop: ", "status: "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect()
}

/// Records `script` with `record_args`, replays it with `replay_args` (one side streamed,
/// the other not): the proxy converts the recording, the SDK accepts it, the follow-up
/// request it builds from the converted answer matches the recording, and the outcome is
/// the same.
async fn record_then_replay_converted(script: &str, record_args: &[&str], replay_args: &[&str]) {
    let Some(python) = python() else { return };
    let fakes = Fakes::start().await;
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let cassette = dir.path().join("c.json");
    let (recording, _) = record(&fakes, &cassette, command(&python, script, record_args)).await;
    let replayed = replay(&fakes, &cassette, command(&python, script, replay_args)).await;
    assert!(
        replayed.status.success(),
        "converted replay of {script} failed: {replayed}"
    );
    let want = outcome_lines(&recording.stdout);
    assert!(want.iter().any(|l| l.starts_with("reply: ")), "{recording}");
    assert_eq!(
        outcome_lines(&replayed.stdout),
        want,
        "record: {recording}\nreplay: {replayed}"
    );
    fakes.stop().await;
}

const TWO_CITIES: &str = "What's the weather in Paris and the time in Tokyo?";

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_stream_recording_serves_a_plain_client_and_back() {
    record_then_replay_converted(
        "anthropic_tools.py",
        &["--stream", TWO_CITIES],
        &[TWO_CITIES],
    )
    .await;
    record_then_replay_converted(
        "anthropic_tools.py",
        &[TWO_CITIES],
        &["--stream", TWO_CITIES],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_stream_recording_serves_a_plain_client_and_back() {
    record_then_replay_converted(
        "responses_tools.py",
        &["--stream", TWO_CITIES],
        &[TWO_CITIES],
    )
    .await;
    record_then_replay_converted(
        "responses_tools.py",
        &[TWO_CITIES],
        &["--stream", TWO_CITIES],
    )
    .await;
}

/// The Claude Code CLI (run by the Claude Agent SDK) puts a new session id in every run's
/// `metadata.user_id`, a device id per home directory and the date in its system prompt:
/// recorded, it replays in a new session with another home, from the tolerances the
/// recording wrote.
#[tokio::test(flavor = "multi_thread")]
async fn claude_agent_sdk_replays_in_a_new_session() {
    let Some(python) = python() else { return };
    let fakes = Fakes::start().await;
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let cassette = dir.path().join("c.json");
    let program = || command(&python, "claude_agent.py", &[]);
    let (recording, written) = record(&fakes, &cassette, program()).await;
    assert!(recording.stdout.contains("result: ok: "), "{recording}");
    assert!(
        recording
            .stderr
            .contains("recorded Claude Code: its volatile fields are tolerated"),
        "{recording}"
    );
    assert_eq!(written["match"]["ignore"][0], "/metadata/user_id");
    assert_eq!(
        interactions(&written),
        [("anthropic.messages".to_owned(), true)]
    );
    let sent = &fakes.anthropic.requests()[0];
    assert!(sent
        .header("user-agent")
        .is_some_and(|a| a.starts_with("claude-cli/")));
    let replayed = replay(&fakes, &cassette, program()).await;
    assert!(replayed.status.success(), "replay failed: {replayed}");
    assert_eq!(replayed.stdout, recording.stdout);
    fakes.stop().await;
}

/// The Claude Agent SDK's `query` with a tool of an in-process MCP server: the CLI loads
/// it through its `ToolSearch` tool, calls it, and answers from its result. Recorded, it
/// replays in a new session, the tool running again on the replayed calls.
#[tokio::test(flavor = "multi_thread")]
async fn claude_agent_sdk_with_a_tool_records_and_replays() {
    let Some(python) = python() else { return };
    let fakes = Fakes::start().await;
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let cassette = dir.path().join("c.json");
    let program = || command(&python, "claude_agent.py", &["--tool"]);
    let (recording, written) = record(&fakes, &cassette, program()).await;
    for line in [
        r#"tool call: get_weather {"city": "Paris", "unit": "celsius"}"#,
        "result: ok: It is 18°C and sunny in Paris.",
    ] {
        assert!(recording.stdout.contains(line), "no {line:?}: {recording}");
    }
    // Select the tool, call it, answer: three streamed model requests.
    let models: Vec<(String, bool)> = (interactions(&written).into_iter())
        .filter(|(route, _)| route == "anthropic.messages")
        .collect();
    assert_eq!(models.len(), 3, "{written}");
    let replayed = replay(&fakes, &cassette, program()).await;
    assert!(replayed.status.success(), "replay failed: {replayed}");
    assert_eq!(replayed.stdout, recording.stdout);
    fakes.stop().await;
}
