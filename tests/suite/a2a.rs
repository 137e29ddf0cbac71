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
