//! End-to-end tests with the real `openai` Python SDK (also its Azure OpenAI clients), the
//! `ollama` client and Semantic Kernel (in `.venv-sk`): each agent in `tests/e2e/` is recorded through the `agentproxy`
//! binary against a fake upstream, then replayed from the cassette with no upstream and no
//! API key, and must print exactly the same thing.
//!
//! The SDK lives in `.venv` at the repository root: run `scripts/setup-python.sh` first.
//! A missing venv fails these tests (a silent skip would let CI go green without them);
//! `AGENTPROXY_SKIP_PYTHON_E2E=1` skips them on purpose.

use crate::support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use support::fake_ollama::FakeOllama;
use support::fake_openai::FakeOpenAi;
use support::run::{agentproxy, session, Run};

/// The key the record runs use. It has the `sk-` shape on purpose: the proxy must redact
/// it, and the tests check that it never reaches the cassette.
const API_KEY: &str = "sk-e2e-not-a-real-key-000000000000000000";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The main venv's interpreter, or `None` when the tests are skipped on purpose.
fn python() -> Option<PathBuf> {
    python_in(".venv")
}

/// The interpreter of the venv `venv` at the repository root (see scripts/setup-python.sh).
fn python_in(venv: &str) -> Option<PathBuf> {
    if std::env::var_os("AGENTPROXY_SKIP_PYTHON_E2E").is_some_and(|v| v == "1") {
        eprintln!("AGENTPROXY_SKIP_PYTHON_E2E=1: skipping the Python end-to-end test");
        return None;
    }
    let python = repo().join(venv).join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-python.sh to install the openai SDK \
         (or set AGENTPROXY_SKIP_PYTHON_E2E=1 to skip these tests)",
        python.display()
    );
    Some(python)
}

fn script(name: &str) -> OsString {
    repo().join("tests/e2e").join(name).into_os_string()
}

/// A recorded cassette, and the fake that served it (still running, to catch a replay
/// that reaches it).
struct Recording {
    _dir: tempfile::TempDir,
    cassette: PathBuf,
    fake: FakeOpenAi,
    run: Run,
}

async fn record(python: &Path, name: &str) -> Recording {
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let cassette = dir.path().join("c.json");
    let fake = FakeOpenAi::start().await;
    let args = vec![
        "record".into(),
        "--cassette".into(),
        cassette.clone().into_os_string(),
        "--upstream".into(),
        fake.url().into(),
        "--".into(),
        python.into(),
        script(name),
    ];
    let run = agentproxy(args, &[("OPENAI_API_KEY", API_KEY)]).await;
    assert!(run.status.success(), "record of {name} failed: {run}");
    let requests = fake.requests();
    assert!(
        !requests.is_empty(),
        "record of {name} sent nothing upstream: {run}"
    );
    let bearer = format!("Bearer {API_KEY}");
    assert!(
        requests
            .iter()
            .all(|r| r.header("authorization") == Some(bearer.as_str())),
        "the proxy must forward the credential upstream"
    );
    let written = std::fs::read_to_string(&cassette).expect("record wrote no cassette");
    assert!(
        !written.contains(API_KEY),
        "the API key leaked into the cassette:\n{written}"
    );
    Recording {
        _dir: dir,
        cassette,
        fake,
        run,
    }
}

async fn replay(python: &Path, recording: &Recording, name: &str, question: Option<&str>) -> Run {
    let mut args = vec![
        "replay".into(),
        "--cassette".into(),
        recording.cassette.clone().into_os_string(),
        "--".into(),
        python.into(),
        script(name),
    ];
    args.extend(question.map(OsString::from));
    let served = recording.fake.request_count();
    // No key at all: replay must start the SDK with its placeholder.
    let run = agentproxy(args, &[]).await;
    assert_eq!(
        recording.fake.request_count(),
        served,
        "replay reached the upstream: {run}"
    );
    run
}

/// Records `name`, checks its output contains `expected`, replays it and compares.
async fn record_then_replay(name: &str, expected: &[&str]) {
    let Some(python) = python() else { return };
    let recording = record(&python, name).await;
    for line in expected {
        assert!(
            recording.run.stdout.contains(line),
            "record of {name} did not print {line:?}: {}",
            recording.run
        );
    }
    let replayed = replay(&python, &recording, name, None).await;
    assert!(
        replayed.status.success(),
        "replay of {name} failed: {replayed}"
    );
    assert_eq!(
        replayed.stdout, recording.run.stdout,
        "replay of {name} printed something else"
    );
    recording.fake.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_tools_records_and_replays() {
    record_then_replay(
        "chat_tools.py",
        &[
            "finish: tool_calls\n",
            r#"tool call: get_weather {"city": "Paris", "unit": "celsius"}"#,
            "reply: It is 18°C and sunny in Paris.\n",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_stream_records_and_replays() {
    record_then_replay(
        "chat_stream.py",
        &[
            r#"tool call: get_weather {"city": "Paris", "unit": "celsius"}"#,
            r#"tool call: get_weather {"city": "Tokyo", "unit": "celsius"}"#,
            "delta: '°C'\n",
            "reply: It is 18°C and sunny in Paris. It is 22°C and cloudy in Tokyo.\n",
            "usage: ",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn plain_http_records_and_replays() {
    record_then_replay(
        "plain_http.py",
        &[
            "models: gpt-4o gpt-4o-mini text-embedding-3-small\n",
            "embedding 1: dims=8 ",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn replay_of_an_edited_prompt_misses_and_names_the_nearest_recording() {
    let Some(python) = python() else { return };
    let recording = record(&python, "chat_tools.py").await;
    let replayed = replay(
        &python,
        &recording,
        "chat_tools.py",
        Some("What's the weather in Berlin?"),
    )
    .await;
    assert_eq!(
        replayed.status.code(),
        Some(1),
        "a miss must exit 1: {replayed}"
    );
    assert!(
        replayed.stderr.contains("nearest recorded request"),
        "no miss report: {replayed}"
    );
    recording.fake.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_openai_records_and_replays_deployments_streams_and_the_v1_form() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let cassette = dir.path().join("c.json");
    let fake = FakeOpenAi::start().await;
    let args = vec![
        "record".into(),
        "--cassette".into(),
        cassette.clone().into_os_string(),
        "--upstream".into(),
        format!("azure={}", fake.url()).into(),
        "--".into(),
        python.clone().into(),
        script("azure_tools.py"),
    ];
    let recorded = agentproxy(args, &[("AZURE_OPENAI_API_KEY", API_KEY)]).await;
    assert!(recorded.status.success(), "record failed: {recorded}");
    for line in [
        "deployment finish: tool_calls\n",
        "deployment reply: It is 18°C and sunny in Paris.\n",
        "deployment stream reply: It is 18°C and sunny in Paris.\n",
        "v1 reply: It is 18°C and sunny in Paris.\n",
    ] {
        assert!(recorded.stdout.contains(line), "no {line:?}: {recorded}");
    }
    // What reached the upstream is what Azure gets: the deployment and api-version in the
    // URL, the key in `api-key` (the v1 form: a bearer token).
    let requests = fake.requests();
    let deployment = (requests.iter())
        .filter(|r| r.path == "/openai/deployments/weather-prod/chat/completions")
        .collect::<Vec<_>>();
    let v1 = (requests.iter())
        .filter(|r| r.path == "/openai/v1/chat/completions")
        .collect::<Vec<_>>();
    assert_eq!(deployment.len() + v1.len(), requests.len(), "{requests:?}");
    assert!(deployment.len() >= 4 && v1.len() >= 2, "{requests:?}");
    assert!(deployment
        .iter()
        .all(|r| r.query.as_deref() == Some("api-version=2024-10-21")
            && r.header("api-key") == Some(API_KEY)));
    let bearer = format!("Bearer {API_KEY}");
    assert!(v1
        .iter()
        .all(|r| r.header("authorization") == Some(bearer.as_str())));
    let written = std::fs::read_to_string(&cassette).expect("record wrote no cassette");
    assert!(!written.contains(API_KEY), "the key leaked:\n{written}");
    assert!(
        written.contains(&format!("\"azure\": \"{}\"", fake.url())),
        "{written}"
    );
    assert!(
        written
            .contains("/openai/deployments/weather-prod/chat/completions?api-version=2024-10-21"),
        "the path is stored with its api-version"
    );
    // Replayed with no key and the fake stopped: the same output.
    fake.stop().await;
    let args = vec![
        "replay".into(),
        "--cassette".into(),
        cassette.into_os_string(),
        "--".into(),
        python.into(),
        script("azure_tools.py"),
    ];
    let replayed = agentproxy(args, &[]).await;
    assert!(replayed.status.success(), "replay failed: {replayed}");
    assert_eq!(replayed.stdout, recorded.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn recording_azure_without_an_endpoint_names_the_flag() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let args = vec![
        "record".into(),
        "--cassette".into(),
        dir.path().join("c.json").into_os_string(),
        "--".into(),
        python.into(),
        script("azure_tools.py"),
    ];
    let run = agentproxy(args, &[("AZURE_OPENAI_API_KEY", API_KEY)]).await;
    assert_eq!(run.status.code(), Some(3), "{run}");
    assert!(
        run.stderr.contains(
            "no Azure OpenAI upstream to record from: pass --upstream azure=URL or set AZURE_OPENAI_ENDPOINT"
        ),
        "{run}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ollama_records_and_replays_tools_streams_and_plain_http() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let cassette = dir.path().join("c.json");
    let fake = FakeOllama::start().await;
    let program = |cassette: &Path| -> Vec<OsString> {
        vec![
            "--cassette".into(),
            cassette.into(),
            "--".into(),
            python.clone().into(),
            script("ollama_tools.py"),
        ]
    };
    let mut args: Vec<OsString> = vec!["record".into(), "--upstream".into()];
    args.push(format!("ollama={}", fake.url()).into());
    args.extend(program(&cassette));
    let recorded = agentproxy(args, &[]).await;
    assert!(recorded.status.success(), "record failed: {recorded}");
    for line in [
        "whole done: stop, ",
        r#"tool call: get_weather {"city": "Tokyo", "unit": "celsius"}"#,
        "whole reply: It is 18°C and sunny in Paris. It is 22°C and cloudy in Tokyo.\n",
        "stream delta: 'sunny '\n",
        "stream reply: It is 18°C and sunny in Paris. It is 22°C and cloudy in Tokyo.\n",
        "generate whole: You said: Why is the sky blue? (stop, 10 tokens)\n",
        "generate stream: ['You ', 'said: ', 'Say ', 'hi', '']\n",
        "models: llama3.2:latest\n",
        "embedding dims: 3\n",
    ] {
        assert!(recorded.stdout.contains(line), "no {line:?}: {recorded}");
    }
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cassette).expect("no cassette")).unwrap();
    let interactions = written["interactions"].as_array().unwrap();
    let routes: Vec<(&str, bool)> = (interactions.iter())
        .map(|i| {
            (
                i["route"].as_str().unwrap(),
                i["response"]["events"].is_array(),
            )
        })
        .collect();
    assert_eq!(
        routes,
        [
            ("ollama.chat", false),
            ("ollama.chat", false),
            ("ollama.chat", true),
            ("ollama.chat", true),
            ("ollama.generate", false),
            ("ollama.generate", true),
            ("http", false),
            ("http", false)
        ]
    );
    // A stream is kept line by line, each line an event's data, with its content type.
    let stream = &interactions[2]["response"];
    assert_eq!(stream["headers"]["content-type"], "application/x-ndjson");
    assert!(stream["events"][0]["data"]
        .as_str()
        .unwrap()
        .starts_with('{'));
    assert_eq!(
        stream["body"]["json"]["message"]["tool_calls"][1]["function"]["arguments"]["city"],
        "Tokyo",
        "{stream}\n{recorded}"
    );
    // Replayed with the fake stopped: the same output.
    fake.stop().await;
    let mut args: Vec<OsString> = vec!["replay".into()];
    args.extend(program(&cassette));
    let replayed = agentproxy(args, &[]).await;
    assert!(replayed.status.success(), "replay failed: {replayed}");
    assert_eq!(replayed.stdout, recorded.stdout);
}

/// Semantic Kernel's OpenAI, Azure OpenAI and Ollama connectors, the kernel calling the
/// tool itself (automatic function calling), streamed and not: recorded against the
/// fakes, replayed with them stopped and no key, the same output. One Azure connector
/// has an `https://…openai.azure.com` endpoint of its own (as HoloDeck gives it), which
/// the proxy intercepts as the program's HTTPS proxy.
#[tokio::test(flavor = "multi_thread")]
async fn semantic_kernel_connectors_record_and_replay() {
    let Some(python) = python_in(".venv-sk") else {
        return;
    };
    let dir = tempfile::tempdir().expect("failed to create a temp dir");
    let cassette = dir.path().join("c.json");
    let (openai, ollama) = (FakeOpenAi::start().await, FakeOllama::start().await);
    let program: Vec<OsString> = vec![
        "--cassette".into(),
        cassette.clone().into(),
        "--".into(),
        python.into(),
        script("sk_agent.py"),
    ];
    let mut args: Vec<OsString> = vec!["record".into(), "--upstream".into(), openai.url().into()];
    for upstream in [
        format!("azure={}", openai.url()),
        format!("ollama={}", ollama.url()),
    ] {
        args.extend(["--upstream".into(), upstream.into()]);
    }
    args.extend(program.clone());
    let keys = [
        ("OPENAI_API_KEY", API_KEY),
        ("AZURE_OPENAI_API_KEY", API_KEY),
    ];
    let recorded = agentproxy(args, &keys).await;
    assert!(recorded.status.success(), "record failed: {recorded}");
    for connector in ["openai", "azure", "azure-https", "ollama"] {
        for how in ["whole", "stream"] {
            let line = format!("{connector} {how} reply: It is 18°C and sunny in Paris.\n");
            assert!(recorded.stdout.contains(&line), "no {line:?}: {recorded}");
        }
    }
    let call = r#"tool call: get_weather {"city": "Paris", "unit": "celsius"}"#;
    assert_eq!(recorded.stdout.matches(call).count(), 8, "{recorded}");
    let text = std::fs::read_to_string(&cassette).expect("no cassette");
    assert!(!text.contains(API_KEY), "the key reached the cassette");
    let written: serde_json::Value = serde_json::from_str(&text).unwrap();
    let paths: Vec<(&str, &str)> = (written["interactions"].as_array().unwrap().iter())
        .map(|i| {
            let path = i["request"]["path"].as_str().unwrap();
            (
                i["route"].as_str().unwrap(),
                path.split('?').next().unwrap(),
            )
        })
        .collect();
    let chat = ("openai.chat", "/v1/chat/completions");
    let azure = (
        "openai.chat",
        "/openai/deployments/weather-gpt-4o/chat/completions",
    );
    let native = ("ollama.chat", "/api/chat");
    assert_eq!(
        paths,
        [
            chat, chat, chat, chat, azure, azure, azure, azure, azure, azure, azure, azure, native,
            native, native, native
        ]
    );
    openai.stop().await;
    ollama.stop().await;
    let mut args: Vec<OsString> = vec!["replay".into()];
    args.extend(program);
    let replayed = agentproxy(args, &[]).await;
    assert!(replayed.status.success(), "replay failed: {replayed}");
    assert_eq!(replayed.stdout, recorded.stdout);
}

/// A client whose base URL is hard-coded to `https://api.openai.com/v1` reaches the proxy
/// as its HTTPS forward proxy: the provider's host is intercepted with the session's
/// certificate authority, recorded against the fake (`--upstream`), and replayed with the
/// same output once the fake is stopped.
#[tokio::test(flavor = "multi_thread")]
async fn a_hard_coded_provider_host_is_intercepted_recorded_and_replayed() {
    let Some(python) = python() else { return };
    let recording = record(&python, "hardcoded_host.py").await;
    let replayed = replay(&python, &recording, "hardcoded_host.py", None).await;
    assert!(replayed.status.success(), "{replayed}");
    assert_eq!(replayed.stdout, recording.run.stdout);
    assert!(
        recording.run.stdout.contains("reply: "),
        "{}",
        recording.run
    );
    for run in [&recording.run, &replayed] {
        assert!(
            run.stderr
                .contains("agentproxy: intercepted api.openai.com:443 ×"),
            "{run}"
        );
    }
    recording.fake.stop().await;
}

/// A server on the host's loopback answering every connection with one line, for as long
/// as the returned task runs: another host, as the program sees it.
async fn other_host() -> (u16, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        // Bounded: the test makes two connections per run.
        for _ in 0..16 {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await;
            let body = "hello from the other host";
            let _ = s
                .write_all(
                    format!(
                        "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                )
                .await;
        }
    });
    (port, task)
}

/// Traffic to another host goes through while recording and is named; a replay refuses
/// it, names it and fails; allowed, a replay lets it through. Contained (where the machine
/// allows it), the program reaches that host (on the host's loopback) neither directly
/// (the host's loopback is not its loopback) nor through the proxy while recording,
/// unless it is allowed: an allowed loopback port is relayed.
#[tokio::test(flavor = "multi_thread")]
async fn another_host_is_named_while_recording_and_refused_in_a_replay() {
    let Some(python) = python() else { return };
    let (port, server) = other_host().await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.json");
    let fake = FakeOpenAi::start().await;
    let port_arg = OsString::from(port.to_string());
    let program = [python.as_os_str(), &script("egress.py"), &port_arg];
    let run = |mode: &str, upstream: Option<String>| {
        let flags: Vec<&str> = (upstream.iter()).flat_map(|u| ["--upstream", u]).collect();
        let args = session(mode, &cassette, &flags, &program);
        agentproxy(args, &[("OPENAI_API_KEY", API_KEY)])
    };
    let recorded = run("record", Some(fake.url())).await;
    // Each run reaches it twice: a tunnel, and a plain request.
    let other = format!("127.0.0.1:{port} ×2");
    if recorded
        .stderr
        .contains("agentproxy: egress: contained (network namespace)")
    {
        // The program's own exit: its tunnel was refused.
        assert_eq!(recorded.status.code(), Some(1), "{recorded}");
        // Contained, the host's own loopback is refused through the proxy too (a
        // database, a Docker port, another agentproxy there): the program reaches none
        // of the host's services, whatever way it asks.
        for line in [
            "through the proxy: Tunnel connection failed: 403".to_owned(),
            format!("plain through the proxy: 403 agentproxy: 127.0.0.1:{port} is the host's own loopback: a contained program does not reach the host's services through the proxy (allow it with --allow-host 127.0.0.1:{port}"),
            "directly: Connection refused".to_owned(),
        ] {
            assert!(recorded.stdout.contains(&line), "{line}: {recorded}");
        }
        assert!(
            recorded.stderr.contains(&format!("agentproxy: refused the host's own loopback (contained, the program reaches none of the host's services through the proxy; --allow-host HOST:PORT lets one through): {other}")),
            "{recorded}"
        );
    } else {
        assert!(recorded.status.success(), "{recorded}");
        for line in [
            "through the proxy: hello from the other host",
            "plain through the proxy: 200 hello from the other host",
        ] {
            assert!(recorded.stdout.contains(line), "{line}: {recorded}");
        }
        assert!(
            recorded.stderr.contains(&format!("agentproxy: other hosts the program reached through the proxy (not recorded, so a replay refuses them; --record-other-hosts records them): {other}")),
            "{recorded}"
        );
        // The machine cannot contain: the level says why, and the program goes around.
        assert!(
            recorded
                .stderr
                .contains("agentproxy: egress: not contained: "),
            "{recorded}"
        );
        assert!(
            recorded
                .stdout
                .contains("directly: hello from the other host"),
            "{recorded}"
        );
    }
    fake.stop().await;
    let replayed = run("replay", None).await;
    assert_eq!(replayed.status.code(), Some(1), "{replayed}");
    assert!(
        replayed
            .stdout
            .contains("through the proxy: Tunnel connection failed: 403"),
        "{replayed}"
    );
    assert!(
        replayed.stdout.contains(&format!(
            "plain through the proxy: 403 agentproxy: 127.0.0.1:{port} is outside the cassette"
        )),
        "{replayed}"
    );
    assert!(
        replayed.stderr.contains(&format!(
            "agentproxy: refused: {other} outside the cassette"
        )),
        "{replayed}"
    );
    // Allowed, the host is reached in a replay too, and listed as allowed.
    let mut args: Vec<OsString> = vec![
        "replay".into(),
        "--cassette".into(),
        cassette.clone().into_os_string(),
    ];
    // With its port, a loopback host is also relayed into a contained program's network.
    args.extend(["--allow-host".into(), format!("127.0.0.1:{port}").into()]);
    args.extend([
        "--".into(),
        python.clone().into_os_string(),
        script("egress.py"),
        port.to_string().into(),
    ]);
    let allowed = agentproxy(args, &[]).await;
    assert!(allowed.status.success(), "{allowed}");
    assert!(
        allowed
            .stdout
            .contains("through the proxy: hello from the other host"),
        "{allowed}"
    );
    assert!(
        allowed
            .stdout
            .contains("plain through the proxy: 200 hello from the other host"),
        "{allowed}"
    );
    assert!(
        allowed.stderr.contains(&format!(
            "agentproxy: allowed hosts the program reached through the proxy: {other}"
        )),
        "{allowed}"
    );
    assert!(
        allowed
            .stdout
            .contains("directly: hello from the other host"),
        "{allowed}"
    );
    server.abort();
}

/// With `--record-other-hosts`, another host's traffic (through a tunnel and as plain
/// HTTP) is recorded under its whole URL and a replay serves it with the host stopped;
/// a request the cassette does not hold is a miss that fails the replay.
#[tokio::test(flavor = "multi_thread")]
async fn other_hosts_are_recorded_and_replayed_with_record_other_hosts() {
    let Some(python) = python() else { return };
    let (port, server) = other_host().await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.json");
    let fake = FakeOpenAi::start().await;
    let egress = script("egress.py");
    let run = |mode: &str, flags: &[&str], port: u16| {
        let port = OsString::from(port.to_string());
        let args = session(
            mode,
            &cassette,
            flags,
            &[python.as_os_str(), &egress, &port],
        );
        agentproxy(args, &[("OPENAI_API_KEY", API_KEY)])
    };
    let upstream = fake.url();
    // Uncontained: the only other host a test may reach is on the host's loopback, which
    // a contained program is refused while recording.
    let extra = [
        "--record-other-hosts",
        "--contain",
        "off",
        "--upstream",
        upstream.as_str(),
    ];
    let recorded = run("record", &extra, port).await;
    assert!(recorded.status.success(), "{recorded}");
    for line in [
        "through the proxy: hello from the other host",
        "plain through the proxy: 200 hello from the other host",
    ] {
        assert!(recorded.stdout.contains(line), "{recorded}");
    }
    let other = format!("127.0.0.1:{port}");
    assert!(
        recorded
            .stderr
            .contains(&format!("{other} ×2 (recorded and replayed")),
        "{recorded}"
    );
    assert!(!recorded.stderr.contains("not recorded"), "{recorded}");
    let text = std::fs::read_to_string(&cassette).unwrap();
    let c: serde_json::Value = serde_json::from_str(&text).unwrap();
    let paths: Vec<&str> = (c["interactions"].as_array().unwrap().iter())
        .filter(|i| i["route"] == "http")
        .map(|i| i["request"]["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [format!("http://{other}/"), format!("http://{other}/")],
        "{text}"
    );
    // The host is gone: the replay serves both requests from the cassette.
    server.abort();
    fake.stop().await;
    let replayed = run("replay", &[], port).await;
    assert!(replayed.status.success(), "{replayed}");
    for line in [
        "through the proxy: hello from the other host",
        "plain through the proxy: 200 hello from the other host",
    ] {
        assert!(replayed.stdout.contains(line), "{replayed}");
    }
    assert!(!replayed.stderr.contains("refused"), "{replayed}");
    // Another host the cassette does not hold is still refused (the program names the
    // port to the model too: that is tolerated here).
    let tolerate = ["--match-ignore", "/messages/1/content"];
    let elsewhere = run("replay", &tolerate, port + 1).await;
    assert_eq!(elsewhere.status.code(), Some(1), "{elsewhere}");
    assert!(
        elsewhere.stderr.contains("outside the cassette"),
        "{elsewhere}"
    );
}

/// An HTTPS server on the host's loopback, its certificate (for 127.0.0.1) signed by a CA
/// of its own whose PEM is returned, answering each request with a forecast for as long
/// as the returned task runs: another host with a private CA.
async fn other_https_host() -> (u16, String, tokio::task::JoinHandle<()>) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // Bounded: the test makes one connection.
        for _ in 0..8 {
            let Ok((s, _)) = listener.accept().await else {
                return;
            };
            let Ok(mut s) = acceptor.accept(s).await else {
                continue;
            };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            let body = "sunny in Paris";
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(format!("{head}{body}").as_bytes()).await;
            let _ = s.shutdown().await;
        }
    });
    (port, ca.pem(), task)
}

/// With `--record-other-hosts`, another host's HTTPS is intercepted with the session's CA
/// and recorded from that host (whose private CA agentproxy trusts through its own
/// `SSL_CERT_FILE`); a replay serves it with the host stopped.
#[tokio::test(flavor = "multi_thread")]
async fn another_hosts_https_is_recorded_and_replayed_with_record_other_hosts() {
    let Some(python) = python() else { return };
    let (port, ca, server) = other_https_host().await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.json");
    let trusted = dir.path().join("ca.pem");
    std::fs::write(&trusted, ca).unwrap();
    let (client, port_arg) = (script("other_https.py"), OsString::from(port.to_string()));
    let run = |mode: &str, extra: &[&str]| {
        let program = [python.as_os_str(), &client, &port_arg];
        let args = session(mode, &cassette, extra, &program);
        let trusted = trusted.to_str().unwrap().to_owned();
        async move { agentproxy(args, &[("SSL_CERT_FILE", &trusted)]).await }
    };
    // Uncontained: a contained program is refused the host's loopback while recording.
    let recorded = run("record", &["--record-other-hosts", "--contain", "off"]).await;
    assert!(recorded.status.success(), "{recorded}");
    assert!(
        recorded.stdout.contains("forecast: 200 sunny in Paris"),
        "{recorded}"
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        text.contains(&format!("\"https://127.0.0.1:{port}/forecast?city=Paris\"")),
        "{text}"
    );
    server.abort();
    let replayed = run("replay", &[]).await;
    assert!(replayed.status.success(), "{replayed}");
    assert_eq!(replayed.stdout, recorded.stdout, "{replayed}");
    assert!(
        replayed
            .stderr
            .contains(&format!("agentproxy: intercepted 127.0.0.1:{port} ×1")),
        "{replayed}"
    );
}

/// Contained, a program that ignores the proxy variables is still seen: its name lookups
/// are answered with its own loopback and named, its HTTPS to a provider's host is
/// intercepted by server name (recorded, then replayed with the fake stopped), its HTTPS
/// to another host is refused and named (a replay fails for it), and a server on the
/// host's loopback stays out of reach. Where the machine cannot contain, `--contain on`
/// says why and the program never starts.
#[tokio::test(flavor = "multi_thread")]
async fn a_contained_program_that_ignores_the_proxy_is_intercepted_or_named() {
    let Some(python) = python() else { return };
    let (port, server) = other_host().await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.json");
    let fake = FakeOpenAi::start().await;
    let port_arg = OsString::from(port.to_string());
    let program = [python.as_os_str(), &script("direct.py"), &port_arg];
    let run = |mode: &str, upstream: Option<String>| {
        let mut flags = vec!["--contain", "on"];
        flags.extend((upstream.iter()).flat_map(|u| ["--upstream", u.as_str()]));
        agentproxy(
            session(mode, &cassette, &flags, &program),
            &[("OPENAI_API_KEY", API_KEY)],
        )
    };
    let recorded = run("record", Some(fake.url())).await;
    if recorded.stderr.contains("--contain on: ") {
        // The machine cannot contain: said, and nothing ran.
        assert_eq!(recorded.status.code(), Some(2), "{recorded}");
        assert!(recorded.stdout.is_empty(), "{recorded}");
        eprintln!("this machine cannot contain a program: {}", recorded.stderr);
        return;
    }
    assert!(recorded.status.success(), "{recorded}");
    for line in [
        "reply: ",
        "weather: ConnectError",
        "other host: Connection refused",
    ] {
        assert!(recorded.stdout.contains(line), "{line}: {recorded}");
    }
    assert!(!fake.requests().is_empty(), "{recorded}");
    for line in [
        "agentproxy: intercepted api.openai.com:443 ×",
        "agentproxy: refused direct connections (the program ignored the proxy variables; contained, it reaches only the proxy): api.weather.test:443 ×1",
        "agentproxy: names the program looked up itself (ignoring the proxy variables; contained, each was answered with its own loopback): api.openai.com ×",
        "api.weather.test ×",
        "other-host.test ×",
    ] {
        assert!(recorded.stderr.contains(line), "{line}: {recorded}");
    }
    fake.stop().await;
    server.abort();
    let replayed = run("replay", None).await;
    // The model's part replays as recorded; the refused connection fails the run.
    assert_eq!(replayed.status.code(), Some(1), "{replayed}");
    assert_eq!(replayed.stdout, recorded.stdout, "{replayed}");
    assert!(
        replayed
            .stderr
            .contains("agentproxy: refused direct connections"),
        "{replayed}"
    );
}

/// HTTP/2 through an intercepted tunnel (its TLS offers `h2`): httpx records and replays.
#[tokio::test(flavor = "multi_thread")]
async fn http2_through_an_intercepted_tunnel_records_and_replays() {
    record_then_replay("http2_client.py", &["HTTP/2: "]).await;
}

/// The forward proxy's edge, probed by the program itself (`tests/e2e/tunnels.py`): plain
/// HTTP in a tunnel is answered as the host's, a client certificate is not asked for, a WebSocket upgrade refused with a message, a client that
/// trusts only its own roots fails with a word on pinning, and the open tunnels are
/// bounded.
#[tokio::test(flavor = "multi_thread")]
async fn the_forward_proxy_refuses_what_it_cannot_serve_and_bounds_its_tunnels() {
    let Some(python) = python() else { return };
    let cassette = repo().join("cassettes/examples/travel-agent/paris-weather.json");
    // A client certificate of the program's own (for the probe that presents one).
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["client.test".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert_file, key_file) = (dir.path().join("client.pem"), dir.path().join("client.key"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let (cert_file, key_file) = (
        cert_file.to_str().unwrap().to_owned(),
        key_file.to_str().unwrap().to_owned(),
    );
    let probe = |name: &str| {
        let args: Vec<OsString> = vec![
            "replay".into(),
            "--cassette".into(),
            cassette.clone().into_os_string(),
            "--".into(),
            python.clone().into_os_string(),
            script("tunnels.py"),
            name.into(),
        ];
        let env = [
            ("CLIENT_CERT", cert_file.clone()),
            ("CLIENT_KEY", key_file.clone()),
        ];
        async move {
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            agentproxy(args, &env).await
        }
    };
    let plain = probe("plain").await;
    assert!(
        plain
            .stdout
            .contains("plain text in a tunnel: HTTP/1.1 200 OK; then HTTP/1.1 400 Bad Request"),
        "{plain}"
    );
    assert!(
        plain
            .stderr
            .contains("agentproxy: cassette miss: GET /v1/models (http) has no recording"),
        "{plain}"
    );
    assert_eq!(plain.status.code(), Some(1), "{plain}");
    let websocket = probe("websocket").await;
    assert!(
        websocket.stdout.contains("websocket: 501 agentproxy: GET /v1/chat/completions asks to switch to a WebSocket: agentproxy records and replays the sockets of"),
        "{websocket}"
    );
    let pinned = probe("pinned").await;
    assert!(
        pinned
            .stdout
            .contains("pinned client: CERTIFICATE_VERIFY_FAILED"),
        "{pinned}"
    );
    assert!(
        pinned
            .stderr
            .contains("(does it trust the session's CA, or pin certificates?)"),
        "{pinned}"
    );
    let client = probe("client_certificate").await;
    // Answered (here a miss: the cassette holds no `GET /v1/models`).
    assert!(
        client.stdout.contains("client certificate: 400"),
        "{client}"
    );
    let bounded = probe("bounded").await;
    assert!(
        bounded
            .stdout
            .contains("tunnels: 512 open, the next: HTTP/1.1 503 Service Unavailable"),
        "{bounded}"
    );
}
