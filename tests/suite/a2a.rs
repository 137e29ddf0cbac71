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
        r#"v03: True completed ['{"temp_c": -5}']"#,
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
    let failed = &forbidden["turns"][0]["assertions"][0];
    assert_eq!(failed["passed"], false, "{forbidden:#}");
    let said = failed.to_string();
    assert!(
        said.contains("weather on Venus"),
        "the forbidden call is named: {said}"
    );
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
        "stream",
        "a storm in Oslo",
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
        "stream: text/event-stream True ['error']",
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
    assert!(stderr.contains("0 missed; 0 of 6"), "{stderr}");
    // The stream's last event (sent without its blank line) was kept, and the error
    // stream's body is its error.
    let c: serde_json::Value = serde_json::from_str(&cassette).unwrap();
    let streams: Vec<&serde_json::Value> = (c["interactions"].as_array().unwrap().iter())
        .filter(|i| i["request"]["method"] == "SendStreamingMessage")
        .collect();
    assert_eq!(
        streams[0]["response"]["events"].as_array().unwrap().len(),
        3
    );
    assert_eq!(
        streams[1]["response"]["body"]["json"]["error"]["code"],
        -32099
    );

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

/// What is not a call gets a clear refusal: an unknown agent, a body that is not JSON, a
/// request that is not JSON-RPC, a REST-style `GET`, a body past `--max-body-size`.
#[test]
fn bad_requests_to_a_relay_are_refused_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    // An empty cassette: the session serves nothing.
    std::fs::write(
        dir.path().join("none.json"),
        r#"{"format":"2.0","recorder":"t","recorded_at":"2026-01-01T00:00:00Z","upstreams":{},"interactions":[]}"#,
    )
    .unwrap();
    let script = r#"
import json, os, urllib.request as u
base = os.environ["AGENTPROXY_A2A_WEATHER_URL"]
def ask(url, data=None, method="POST"):
    try:
        with u.urlopen(u.Request(url, data=data, method=method), timeout=10) as r:
            return r.status, r.read().decode()
    except u.HTTPError as e:
        return e.code, e.read().decode()
print(ask(os.environ["AGENTPROXY_URL"] + "/a2a/other/", b"{}"))
print(ask(base + "/", b"not json"))
print(ask(base + "/", b'{"jsonrpc": "2.0", "result": 1, "id": 1}'))
print(ask(base + "/v1/tasks", method="GET"))
print(ask(base + "/", b"x" * 4096))
"#;
    let args = [
        "replay",
        "--cassette",
        "none.json",
        "--max-body-size",
        "1K",
        "--a2a",
        "weather=http://127.0.0.1:9",
        "--",
        "python3",
        "-c",
        script,
    ];
    let out = std::process::Command::new(crate::support::proxy::bin())
        .args(args)
        .current_dir(dir.path())
        .env_remove("AGENTPROXY_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}\n{stderr}");
    assert!(
        lines[0].starts_with("(404") && lines[0].contains("--a2a other=URL"),
        "{stdout}"
    );
    assert!(
        lines[1].starts_with("(200") && lines[1].contains("-32700"),
        "{stdout}"
    );
    assert!(
        lines[2].starts_with("(200") && lines[2].contains("-32600"),
        "{stdout}"
    );
    assert!(
        lines[3].starts_with("(405") && lines[3].contains("JSON-RPC calls (POST) only"),
        "{stdout}"
    );
    assert!(
        lines[4].starts_with("(413") && lines[4].contains("--max-body-size"),
        "{stdout}"
    );
}
