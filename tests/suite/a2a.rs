//! Remote agents over A2A through the real binary: a spec's `agents:` mocks answer the
//! card and every delegation in the agent's place (none runs, in record as in replay),
//! in each of their forms, and `calls:`/`never:` judge the delegations. The client is
//! plain HTTP (`tests/fixtures/a2a/client.py`); the official SDK's run is in
//! `tests/clients/e2e_a2a.rs`.

use std::path::Path;

use crate::support::proxy::{case, test_report};

const SPEC: &str = r#"name: a2a
app:
  command: python3 CLIENT send 'weather in Oslo' stream 'weather in Oslo' get send 'weather on Mars' send 'weather on Venus' stream 'weather on Pluto' v03 'weather in Oslo' send 'weather on Jupiter'
  timeout: 30s
agents:
  weather:
    - when: {message: {contains: Oslo}}
      result: '{"temp_c": -5}'
    - when: {message: {contains: Mars}}
      result: {state: failed, reply: no forecast for Mars}
    - when: {message: {contains: Venus}}
      result: {error: {code: -32099, message: too hot}}
    - when: {message: {contains: Pluto}}
      result: {cut: true, reply: cold}
    - when: {message: {contains: Jupiter}}
      result: {artifacts: [{artifactId: a1, parts: [{text: storms}, {text: "-110C"}]}]}
cases:
  - name: forms
    input: go
    expect:
      calls:
        - weather: {message: {contains: Oslo}}
        - weather: {message: {contains: Mars}}
      never: [{weather: {message: {contains: Paris}}}]
      output: "card: weather rpc at relay: True"
  - name: a forbidden delegation fails the case
    input: go
    expect:
      never: [{weather: {message: {contains: Venus}}}]
"#;

#[test]
fn mocked_agents_answer_every_form_without_running() {
    let dir = tempfile::tempdir().unwrap();
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/a2a/client.py");
    let spec = SPEC.replace("CLIENT", &client.display().to_string());
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    // Recording, with no model and no agent anywhere: the mocks answer it all.
    let args = ["--mode", "record", "--upstream", "http://127.0.0.1:9"];
    let (stderr, report) = test_report(dir.path(), &args, 1);
    let forms = case(&report, "forms");
    assert_eq!(forms["status"], "passed", "{forms:#}\n{stderr}");
    let out = forms["turns"][0]["output"].as_str().unwrap_or_default();
    for line in [
        "card: weather rpc at relay: True",
        r#"send: True TASK_STATE_COMPLETED ['{"temp_c": -5}']"#,
        "stream: text/event-stream True ['task', 'artifactUpdate', 'statusUpdate']",
        "get: True TASK_STATE_COMPLETED None",
        "send: True TASK_STATE_FAILED ['no forecast for Mars']",
        "send: error -32099 too hot",
        "stream: broken IncompleteRead",
        r#"v03: True TASK_STATE_COMPLETED ['{"temp_c": -5}']"#,
        "send: True TASK_STATE_COMPLETED ['storms', '-110C']",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}\n{stderr}");
    }
    // Each delegation is a call of `weather`, with its answer as the result.
    let calls = forms["turns"][0]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 7, "{forms:#}");
    assert_eq!(
        calls[2]["arguments"]["message"], "weather on Mars",
        "{forms:#}"
    );
    assert_eq!(
        calls[2]["result"],
        "no forecast for Mars (TASK_STATE_FAILED)"
    );
    assert!(
        calls.iter().all(|c| c["result_origin"] == "mocked"),
        "{forms:#}"
    );

    let forbidden = case(&report, "a forbidden delegation fails the case");
    assert_eq!(forbidden["status"], "failed", "{forbidden:#}");
    let message = forbidden["turns"][0]["assertions"][0]["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("weather"), "{forbidden:#}");
}

/// `agentproxy ARGS -- python3 client.py STEPS` in `dir`, in a clean environment.
fn session(dir: &Path, args: &[&str], steps: &[&str]) -> (i32, String, String) {
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/a2a/client.py");
    let mut command = std::process::Command::new(crate::support::proxy::bin());
    command
        .args(args)
        .arg("--")
        .arg("python3")
        .arg(client)
        .args(steps);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("AGENTPROXY_") {
            command.env_remove(&name);
        }
    }
    let out = command.current_dir(dir).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

#[test]
fn a_fake_agent_is_recorded_then_replayed_in_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/a2a");
    let port_file = dir.path().join("port");
    let mut agent = std::process::Command::new("python3")
        .arg(fixtures.join("agent.py"))
        .arg(&port_file)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let port = loop {
        if let Ok(p) = std::fs::read_to_string(&port_file) {
            break p;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the fake agent did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let a2a = format!("weather=http://127.0.0.1:{port}");
    let steps = [
        "send",
        "weather in Oslo",
        "stream",
        "weather in Oslo",
        "get",
        "v03",
        "weather in Oslo",
    ];
    let record = [
        "record",
        "--cassette",
        "c.json",
        "--upstream",
        "http://127.0.0.1:9",
        "--a2a",
        &a2a,
    ];
    let (code, recorded, stderr) = session(dir.path(), &record, &steps);
    let _ = agent.kill();
    let _ = agent.wait();
    assert_eq!(code, 0, "{recorded}\n{stderr}");
    for line in [
        "card: Fake Weather rpc at relay: True",
        "send: True TASK_STATE_COMPLETED ['forecast: weather in Oslo']",
        "stream: text/event-stream True ['task', 'artifactUpdate', 'statusUpdate']",
        "get: True TASK_STATE_COMPLETED None",
        "v03: True completed ['forecast: weather in Oslo']",
    ] {
        assert!(
            recorded.contains(line),
            "missing {line:?} in\n{recorded}\n{stderr}"
        );
    }
    let cassette = std::fs::read_to_string(dir.path().join("c.json")).unwrap();
    assert!(!cassette.contains("suite-token"), "no credential is stored");

    // The agent is gone: the replay, on another port, answers with the client's own ids,
    // the streamed task found again by its recorded id.
    let replay = ["replay", "--cassette", "c.json", "--a2a", &a2a];
    let (code, replayed, stderr) = session(dir.path(), &replay, &steps);
    assert_eq!(code, 0, "{replayed}\n{stderr}");
    assert_eq!(replayed, recorded);
    assert!(stderr.contains("0 missed; 0 of 5"), "{stderr}");

    // Another message misses: a JSON-RPC error to the client, exit 1, the nearest named.
    let (code, missed, stderr) = session(dir.path(), &replay, &["send", "weather in Lima"]);
    assert_eq!(code, 1, "{missed}\n{stderr}");
    assert!(
        missed.contains("send: error -32001 agentproxy_cassette_miss"),
        "{missed}"
    );
    assert!(
        stderr.contains("SendMessage weather (a2a) has no recording"),
        "{stderr}"
    );
    assert!(stderr.contains("weather in Oslo"), "{stderr}");
    let after = std::fs::read_to_string(dir.path().join("c.json")).unwrap();
    assert_eq!(after, cassette, "a replay leaves the cassette as it was");
}
