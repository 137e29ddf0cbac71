//! Injected faults against real SDKs (`openai`, `anthropic`): a spec's `faults:` recorded
//! against the fakes, then replayed with the fakes stopped. The SDKs react as they do to
//! the real APIs: they retry a rate limit, a 5xx, an overload and a dropped connection
//! (twice by default), and raise past their retries, on a cut stream and on an error event
//! inside a stream. The reports count every request, faulted ones included, and list the
//! faults; `exit:` judges the programs that gave up.

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::fake_anthropic::FakeAnthropic;
use support::fake_openai::FakeOpenAi;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

const SPEC: &str = r#"
app:
  command: [PYTHON, SCRIPT]
  timeout: 60s
execution: {parallel: 4}
cases:
  - name: two rate limits are retried
    env: {CLIENT: openai}
    faults: [{request: 1, kind: rate_limit, times: 2}]
    expect: {requests: 3, output: "reply: You said: Say hello"}
  - name: a third rate limit exhausts the retries
    env: {CLIENT: openai}
    faults: [{request: 1, kind: rate_limit, times: 3}]
    expect: {requests: 3, exit: 1, output: "error: RateLimitError"}
  - name: a bad gateway is retried
    env: {CLIENT: openai}
    faults: [{request: 1, kind: server_error, status: 502}]
    expect: {requests: 2, output: "reply: You said"}
  - name: a dropped connection is retried
    env: {CLIENT: openai}
    faults: [{request: 1, kind: disconnect}]
    expect: {requests: 2, output: "reply: You said"}
  - name: a cut stream raises
    env: {CLIENT: openai-stream}
    faults: [{request: 1, kind: truncate_stream, after_events: 2}]
    expect: {requests: 1, exit: 1, output: "error: APIConnectionError"}
  - name: an overloaded Anthropic gives up after its retries
    env: {CLIENT: anthropic}
    faults: [{request: 1, kind: overloaded, times: 3}]
    expect: {requests: 3, exit: 1, output: "error: OverloadedError"}
  - name: an error event inside an Anthropic stream raises
    env: {CLIENT: anthropic-stream}
    faults: [{request: 1, kind: stream_error}]
    expect: {requests: 1, exit: 1, output: "error: APIStatusError"}
"#;

/// Each case's turn: its requests and the faults injected, as `kind@request`.
fn requests_and_faults(report: &Value) -> Vec<(String, u64, Vec<String>)> {
    let mut out: Vec<_> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let turn = &c["turns"][0];
            let faults = turn["faults"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| format!("{}@{}", f["kind"].as_str().unwrap(), f["request"]))
                .collect();
            (
                c["name"].as_str().unwrap().to_owned(),
                turn["requests"].as_u64().unwrap(),
                faults,
            )
        })
        .collect();
    out.sort();
    out
}

/// Run `spec` (its `PYTHON` and `SCRIPT]` filled in) in record mode against the fakes,
/// check what reached them (`forwarded`: openai's and anthropic's request counts), stop
/// them, replay, and return both JSON reports. Both runs must pass all `cases` cases.
async fn record_then_replay(
    spec: &str,
    script: &str,
    cases: usize,
    forwarded: (usize, usize),
) -> (Value, Value) {
    let python = repo().join(".venv/bin/python");
    assert!(python.exists(), "run scripts/setup-python.sh first");
    let (openai, anthropic) = (FakeOpenAi::start().await, FakeAnthropic::start().await);
    let dir = tempfile::tempdir().unwrap();
    let spec = spec
        .replace("PYTHON", &python.display().to_string())
        .replace(
            "SCRIPT]",
            &format!("{}]", repo().join("tests/e2e").join(script).display()),
        );
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    let run = |args: Vec<String>| {
        let d = dir.path().to_owned();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            support::proxy::test_in(&d, &args)
        })
    };
    let passed = format!("{cases} passed, 0 failed");
    let record = ["spec.yaml", "--mode", "record", "--upstream", &openai.url()]
        .into_iter()
        .map(str::to_owned)
        .chain(["--anthropic-upstream".into(), anthropic.url()])
        .chain(["--report", "json", "-o", "record.json"].map(str::to_owned))
        .collect();
    let recorded = run(record).await.unwrap();
    let stderr = String::from_utf8_lossy(&recorded.stderr);
    assert!(recorded.status.success(), "{stderr}");
    assert!(stderr.contains(&passed), "{stderr}");
    assert_eq!(
        (openai.request_count(), anthropic.request_count()),
        forwarded
    );
    openai.stop().await;
    anthropic.stop().await;

    let replay = [
        "spec.yaml",
        "--mode",
        "replay",
        "--report",
        "json",
        "-o",
        "replay.json",
    ];
    let replayed = run(replay.map(str::to_owned).to_vec()).await.unwrap();
    let stderr = String::from_utf8_lossy(&replayed.stderr);
    assert!(replayed.status.success(), "{stderr}");
    assert!(stderr.contains(&passed), "{stderr}");
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap()
    };
    (read("record.json"), read("replay.json"))
}

#[tokio::test(flavor = "multi_thread")]
async fn real_sdks_meet_injected_faults_in_record_and_replay() {
    // A faulted request is never forwarded: only the retries that got through were.
    let (record, replay) = record_then_replay(SPEC, "faults_client.py", 7, (3, 0)).await;
    let seen = requests_and_faults(&replay);
    assert_eq!(seen, requests_and_faults(&record));
    // What the program did after the last fault of a row: its next request and status.
    for report in [&record, &replay] {
        let faults = |name: &str| {
            let cases = report["cases"].as_array().unwrap();
            let c = cases.iter().find(|c| c["name"] == name).unwrap();
            c["turns"][0]["faults"].clone()
        };
        let retried = faults("two rate limits are retried");
        assert_eq!(retried[0].get("next"), None, "{retried}");
        assert_eq!(
            retried[1]["next"],
            serde_json::json!({"request": 3, "status": 200})
        );
        // Given up: no request came after the third.
        let exhausted = faults("a third rate limit exhausts the retries");
        assert_eq!(exhausted[2].get("next"), None, "{exhausted}");
    }
    let at = |kind: &str, requests: &[u64]| -> Vec<String> {
        requests.iter().map(|r| format!("{kind}@{r}")).collect()
    };
    assert_eq!(
        seen,
        [
            (
                "a bad gateway is retried".into(),
                2,
                at("server_error", &[1])
            ),
            ("a cut stream raises".into(), 1, at("truncate_stream", &[1])),
            (
                "a dropped connection is retried".into(),
                2,
                at("disconnect", &[1])
            ),
            (
                "a third rate limit exhausts the retries".into(),
                3,
                at("rate_limit", &[1, 2, 3])
            ),
            (
                "an error event inside an Anthropic stream raises".into(),
                1,
                at("stream_error", &[1])
            ),
            (
                "an overloaded Anthropic gives up after its retries".into(),
                3,
                at("overloaded", &[1, 2, 3])
            ),
            (
                "two rate limits are retried".into(),
                3,
                at("rate_limit", &[1, 2])
            ),
        ]
    );
}

const TOOL_SPEC: &str = r#"
app:
  command: [PYTHON, SCRIPT]
  timeout: 60s
execution: {parallel: 4}
cases:
  - name: arguments that are not JSON are sent back as the tool's error
    env: {CLIENT: openai}
    faults: [{request: 1, kind: malformed_tool_args}]
    expect:
      requests: 2
      output: 'called: get_weather {"city":"Paris",'
      reply: {contains: "The tool said: error: the arguments are not JSON"}
  - name: an unknown tool in a stream is refused by the agent
    env: {CLIENT: openai-stream}
    faults: [{request: 1, kind: unknown_tool}]
    expect:
      requests: 2
      calls: [get_weather_unknown]
      reply: {contains: "The tool said: error: unknown tool get_weather_unknown"}
  - name: a length stop ends the run
    env: {CLIENT: openai}
    faults: [{request: 1, kind: length}]
    expect: {requests: 1, exit: 1, output: "error: cut short (length)"}
  - name: a unit outside the enum is refused
    env: {CLIENT: anthropic}
    faults: [{request: 1, kind: schema_violation, violation: enum_outsider}]
    expect:
      requests: 2
      calls: [{get_weather: {unit: celsius_x}}]
      reply: {contains: "The tool said: error: unknown unit celsius_x"}
  - name: a missing city in a stream is refused
    env: {CLIENT: anthropic-stream}
    faults: [{request: 1, kind: schema_violation}]
    expect:
      requests: 2
      reply: {contains: "The tool said: error: `city` is required"}
  - name: broken JSON in an Anthropic stream
    env: {CLIENT: anthropic-stream}
    faults: [{request: 1, kind: malformed_tool_args}]
    expect:
      requests: 2
      output: 'called: get_weather {"city": "Paris"}'
      reply: {contains: "It is 18°C"}
  - name: an Anthropic stream cut by max_tokens ends the run
    env: {CLIENT: anthropic-stream}
    faults: [{request: 1, kind: length}]
    expect: {requests: 1, exit: 1, output: "error: cut short (max_tokens)"}
"#;

/// Tool-call faults against real SDKs: the answer's call spoiled as each provider would send
/// it, the agent's checks catching it, recorded against the fakes (a spoiled request is
/// forwarded: its real answer is recorded) and replayed with them stopped.
#[tokio::test(flavor = "multi_thread")]
async fn real_sdks_get_spoiled_tool_calls_in_record_and_replay() {
    // Every request was forwarded, the spoiled ones too.
    let (record, replay) = record_then_replay(TOOL_SPEC, "tool_faults_agent.py", 7, (5, 7)).await;
    assert_eq!(requests_and_faults(&replay), requests_and_faults(&record));
    let details: Vec<String> = replay["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["turns"][0]["faults"][0]["detail"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(
        details,
        [
            "get_weather called as get_weather_unknown",
            r#"get_weather {"city":"Paris","unit":"celsius_x"} (enum_outsider)"#,
            r#"get_weather {"unit":"celsius"} (missing_required)"#,
            "get_weather's arguments are not JSON",
            "get_weather's call cut short by the length limit",
        ]
    );
}
