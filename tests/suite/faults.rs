//! `--fault` on the real binary, the bytes on the wire: a replay daemon over the committed
//! example cassette answers its requests with each fault in turn, and the recording they
//! displaced is still there for the request after them.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::proxy::Daemon;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The first request the example recorded, as JSON.
fn first_request() -> Value {
    let cassette: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("cassettes/examples/weather-agent.json")).unwrap(),
    )
    .unwrap();
    cassette["interactions"][0]["request"]["body"]["json"].clone()
}

/// POST `body` to the chat route and read whatever comes back until the connection
/// closes: the raw bytes, and how long it took.
fn raw_post(base: &str, body: &Value) -> (String, Duration) {
    raw_post_bytes(base, &serde_json::to_vec(body).unwrap())
}

/// [`raw_post`] of any bytes.
fn raw_post_bytes(base: &str, body: &[u8]) -> (String, Duration) {
    let addr = base.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let started = Instant::now();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut raw = Vec::new();
    // A cut body ends in a reset or an early close; either way, what came is what counts.
    let _ = s.read_to_end(&mut raw);
    (
        String::from_utf8_lossy(&raw).into_owned(),
        started.elapsed(),
    )
}

#[test]
fn each_fault_kind_on_the_wire_and_the_recording_left_for_the_retry() {
    let faults = [
        "request=1,kind=rate_limit,retry_after=2s",
        "request=2,kind=disconnect",
        "request=3,kind=truncate_stream,after_events=2",
        "request=4,kind=stream_error",
        "request=5,kind=timeout,for=300ms",
        "request=6,kind=overloaded",
        "request=7,kind=server_error,status=502",
    ];
    let mut args = vec![
        "replay",
        "--cassette",
        "cassettes/examples/weather-agent.json",
    ];
    for f in &faults {
        args.extend(["--fault", f]);
    }
    let daemon = Daemon::start(&args, repo());
    let whole = first_request();
    let mut streamed = whole.clone();
    streamed["stream"] = Value::Bool(true);

    let (limited, _) = raw_post(&daemon.url, &whole);
    assert!(limited.starts_with("HTTP/1.1 429"), "{limited}");
    assert!(limited.contains("retry-after: 2\r\n"), "{limited}");
    assert!(limited.contains("retry-after-ms: 2000\r\n"), "{limited}");
    assert!(
        limited.contains("\"code\":\"rate_limit_exceeded\""),
        "{limited}"
    );

    let (dropped, _) = raw_post(&daemon.url, &whole);
    assert_eq!(dropped, "", "closed before the first byte");

    let (cut, _) = raw_post(&daemon.url, &streamed);
    assert!(cut.starts_with("HTTP/1.1 200"), "{cut}");
    assert!(cut.contains("text/event-stream"), "{cut}");
    assert_eq!(cut.matches("data: ").count(), 2, "{cut}");
    assert!(!cut.contains("[DONE]"), "{cut}");
    assert!(!cut.ends_with("0\r\n\r\n"), "no last chunk: {cut}");

    let (errored, _) = raw_post(&daemon.url, &streamed);
    assert!(errored.starts_with("HTTP/1.1 200"), "{errored}");
    assert_eq!(errored.matches("data: ").count(), 2, "{errored}");
    assert!(
        errored.contains("data: {\"error\":{\"code\":null,\"message\":\"The server had an error"),
        "{errored}"
    );

    let (held, waited) = raw_post(&daemon.url, &whole);
    assert_eq!(held, "");
    assert!(waited >= Duration::from_millis(300), "{waited:?}");

    let (overloaded, _) = raw_post(&daemon.url, &whole);
    assert!(overloaded.starts_with("HTTP/1.1 503"), "{overloaded}");
    let (bad_gateway, _) = raw_post(&daemon.url, &whole);
    assert!(bad_gateway.starts_with("HTTP/1.1 502"), "{bad_gateway}");

    // Seven faulted requests used up nothing: the first recording answers the eighth.
    let (served, _) = raw_post(&daemon.url, &whole);
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    assert!(served.contains("get_weather"), "{served}");

    let (_, stderr) = daemon.interrupt();
    assert!(
        stderr.contains(
            "agentproxy: 7 fault(s) injected: request 1: rate_limit (429), request 2: disconnect (no answer), \
             request 3: truncate_stream (200), request 4: stream_error (200), request 5: timeout (no answer), \
             request 6: overloaded (503), request 7: server_error (502)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("served 1 request(s)"),
        "faults are not counted as served: {stderr}"
    );
}

/// A model request whose body is not JSON still is the program's next request after a
/// fault: it goes on as plain HTTP (a miss in this replay), and the report says so.
#[test]
fn a_request_that_is_not_json_is_what_came_after_a_fault() {
    let args = [
        "replay",
        "--cassette",
        "cassettes/examples/weather-agent.json",
        "--fault",
        "request=1,kind=rate_limit",
    ];
    let daemon = Daemon::start(&args, repo());
    let (limited, _) = raw_post(&daemon.url, &first_request());
    assert!(limited.starts_with("HTTP/1.1 429"), "{limited}");
    let (missed, _) = raw_post_bytes(&daemon.url, b"{not json");
    assert!(missed.starts_with("HTTP/1.1 400"), "{missed}");
    let (served, _) = raw_post(&daemon.url, &first_request());
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    let (_, stderr) = daemon.interrupt();
    assert!(
        stderr.contains(
            "agentproxy: 1 fault(s) injected: request 1: rate_limit (429); then request 2: 400\n"
        ),
        "{stderr}"
    );
}

/// The JSON of a whole answer, or the data of each event of a streamed one.
fn answer_of(raw: &str) -> Vec<Value> {
    let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    if raw.contains("text/event-stream") {
        body.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    } else {
        // A whole answer comes in one piece, or chunked: its JSON is the line that is one.
        body.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// The tool call fields of the first choice of a whole answer, or joined from a stream's
/// deltas: (name, arguments, finish_reason).
fn chat_call(answer: &[Value]) -> (String, String, String) {
    let (mut name, mut args, mut finish) = (String::new(), String::new(), String::new());
    for v in answer {
        let choice = &v["choices"][0];
        let calls = choice["message"]["tool_calls"]
            .as_array()
            .or(choice["delta"]["tool_calls"].as_array());
        for c in calls.into_iter().flatten() {
            name.push_str(c["function"]["name"].as_str().unwrap_or_default());
            args.push_str(c["function"]["arguments"].as_str().unwrap_or_default());
        }
        if let Some(f) = choice["finish_reason"].as_str() {
            finish = f.to_owned();
        }
    }
    (name, args, finish)
}

#[test]
fn tool_call_faults_spoil_the_recorded_call_on_the_wire_whole_and_streamed() {
    let whole = first_request();
    let mut streamed = whole.clone();
    streamed["stream"] = Value::Bool(true);
    let args = r#"{"city":"Paris","unit":"celsius"}"#;
    let cases = [
        (
            "kind=malformed_tool_args",
            "get_weather",
            r#"{"city":"Paris","#,
            "tool_calls",
        ),
        (
            "kind=unknown_tool",
            "get_weather_unknown",
            args,
            "tool_calls",
        ),
        (
            "kind=schema_violation",
            "get_weather",
            r#"{"unit":"celsius"}"#,
            "tool_calls",
        ),
        (
            "kind=schema_violation,violation=enum_outsider",
            "get_weather",
            r#"{"city":"Paris","unit":"celsius_x"}"#,
            "tool_calls",
        ),
        (
            "kind=length",
            "get_weather",
            r#"{"city":"Paris","#,
            "length",
        ),
    ];
    for (fault, name, want_args, finish) in cases {
        for body in [&whole, &streamed] {
            let flag = format!("request=1,{fault}");
            let daemon = Daemon::start(
                &[
                    "replay",
                    "--cassette",
                    "cassettes/examples/weather-agent.json",
                    "--fault",
                    &flag,
                ],
                repo(),
            );
            let (raw, _) = raw_post(&daemon.url, body);
            assert!(raw.starts_with("HTTP/1.1 200"), "{fault}: {raw}");
            assert_eq!(
                raw.contains("text/event-stream"),
                body == &streamed,
                "{fault}: {raw}"
            );
            let got = chat_call(&answer_of(&raw));
            assert_eq!(
                got,
                (name.into(), want_args.into(), finish.into()),
                "{fault}: {raw}"
            );
            // The spoiled answer used up its recording, as the real answer would have.
            let (again, _) = raw_post(&daemon.url, body);
            assert!(
                again.contains("agentproxy_cassette_miss"),
                "{fault}: {again}"
            );
            let (_, stderr) = daemon.interrupt();
            assert!(
                stderr.contains(&format!(
                    "agentproxy: 1 fault(s) injected: request 1: {} (200): ",
                    fault.split(',').next().unwrap().trim_start_matches("kind=")
                )),
                "{stderr}"
            );
        }
    }
}

#[test]
fn a_tool_call_fault_on_an_answer_without_one_is_a_warning_and_the_answer_goes_unchanged() {
    let daemon = Daemon::start(
        &[
            "replay",
            "--cassette",
            "cassettes/examples/weather-agent.json",
            "--fault",
            "request=1,kind=unknown_tool,tool=get_time",
        ],
        repo(),
    );
    let (raw, _) = raw_post(&daemon.url, &first_request());
    let (name, args, _) = chat_call(&answer_of(&raw));
    assert_eq!(
        (name.as_str(), args.as_str()),
        ("get_weather", r#"{"city":"Paris","unit":"celsius"}"#)
    );
    let (_, stderr) = daemon.interrupt();
    assert!(
        stderr.contains("agentproxy: warning: fault request 1: unknown_tool did not fire: the answer has no call to `get_time`; the program got the answer as it was"),
        "{stderr}"
    );
    assert!(!stderr.contains("injected"), "{stderr}");
}

#[test]
fn a_bad_fault_flag_says_what_to_write() {
    let out = std::process::Command::new(support::proxy::bin())
        .args(["replay", "--fault", "request=1,kind=slow", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown fault kind `slow`; expected one of rate_limit, server_error"),
        "{stderr}"
    );
}

/// Replay `case` (a `cases:` item, indented as one) of a spec for the travel example's
/// agent over its committed cassettes under `agentproxy test`: the exit code and stderr.
fn test_travel_case(case: &str) -> (Option<i32>, String) {
    let agent = repo().join("examples/travel-agent/agent.py");
    test_case_on_travel_cassettes(&agent.display().to_string(), case)
}

/// [`test_travel_case`] with another program: `python ARGS` (YAML flow items).
fn test_case_on_travel_cassettes(args: &str, case: &str) -> (Option<i32>, String) {
    let python = repo().join(".venv/bin/python");
    assert!(python.exists(), "run scripts/setup-python.sh first");
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        "app:\n  command: [{python}, {args}]\ncassettes: {cassettes}\ncases:\n{case}",
        python = python.display(),
        cassettes = repo().join("cassettes/examples/travel-agent").display(),
    );
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    let out = std::process::Command::new(support::proxy::bin())
        .args(["test", "spec.yaml", "--mode", "replay"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr)
}

/// Under `agentproxy test`, a tool-call fault that cannot fire fails its case: the spec
/// says the agent meets a spoiled call, and it never did. Replayed from the travel
/// example's committed cassette.
#[test]
fn a_tool_call_fault_that_cannot_fire_fails_its_case() {
    let (code, stderr) = test_travel_case(
        r#"  - name: paris weather
    input: What's the weather in Paris?
    faults: [{request: 1, kind: unknown_tool, tool: get_time}]
    expect: {reply: 18°C}
"#,
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("FAIL  spec.yaml::paris weather"),
        "{stderr}"
    );
    assert!(
        stderr.contains("problem: fault request 1: unknown_tool did not fire: the answer has no call to `get_time`; the program got the answer as it was"),
        "{stderr}"
    );
    assert!(stderr.contains("0 passed, 1 failed"), "{stderr}");
}

/// A fault on a request that never comes fails its case too, under a turn or over the
/// case, saying how many came.
#[test]
fn a_fault_no_request_reached_fails_its_case() {
    let (code, stderr) = test_travel_case(
        r#"  - name: paris weather
    turns:
      - input: What's the weather in Paris?
        faults: [{request: 5, kind: server_error}]
    faults: [{request: 9, kind: rate_limit}]
    expect: {reply: 18°C}
"#,
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "problem: fault request 9: rate_limit did not fire: only 2 model requests came\n"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("problem: fault turn 1 request 5: server_error did not fire: only 2 model requests came in turn 1\n"),
        "{stderr}"
    );
}

/// A replay the program made no request of tested nothing, whatever it printed.
#[test]
fn a_program_that_asks_the_model_nothing_fails_its_replayed_case() {
    let (code, stderr) = test_case_on_travel_cassettes(
        r#"-c, 'print("18°C")'"#,
        "  - name: paris weather\n    input: What's the weather in Paris?\n    expect: {reply: 18°C}\n",
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("problem: the program made no request through the proxy, so none of the cassette's 2 recording(s) was served: nothing was tested"),
        "{stderr}"
    );
}

#[test]
fn a_fuzz_with_no_call_to_give_arguments_to_fails_its_case() {
    let (code, stderr) = test_travel_case(
        r#"  - name: paris weather
    input: What's the weather in Paris?
    fuzz: {tool: get_time, valid: 2}
"#,
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("problem: fuzz `get_time`: no run: no recorded answer calls `get_time`, so there is no call to give arguments to"),
        "{stderr}"
    );
    assert!(stderr.contains("0 passed, 1 failed"), "{stderr}");
}

/// `--fault` on `agentproxy test` adds a fault to every case, counted over the case after
/// its own `faults:`: the example's case that expects four requests meets a fifth.
#[test]
fn a_fault_flag_on_test_joins_the_cases_own_faults() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let out = std::process::Command::new(support::proxy::bin())
        .args([
            "test",
            "examples/travel-agent/faults.yaml",
            "--mode",
            "replay",
        ])
        .args(["--case", "rate limited twice, then answered"])
        .args([
            "--fault",
            "request=4,kind=rate_limit",
            "--report",
            "json",
            "-o",
        ])
        .arg(&report)
        .current_dir(repo())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("✗ turn 1: requests 4"), "{stderr}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    let turn = &report["cases"][0]["turns"][0];
    assert_eq!(turn["requests"], 5, "{turn}");
    let fired: Vec<u64> = (turn["faults"].as_array().unwrap().iter())
        .map(|f| f["request"].as_u64().unwrap())
        .collect();
    assert_eq!(fired, [1, 2, 4]);
    // The retry after the flag's fault got the recorded answer.
    assert_eq!(
        turn["faults"][2]["next"],
        serde_json::json!({"request": 5, "status": 200})
    );
}

/// A `timeout` fault whose client gives up before the hold ends still counts as fired:
/// the summary lists it, never "served 1 request(s)" with no fault.
#[test]
fn a_timeout_the_client_gave_up_on_is_listed() {
    let daemon = Daemon::start(
        &[
            "replay",
            "--cassette",
            "cassettes/examples/weather-agent.json",
            "--fault",
            "request=1,kind=timeout,for=20s",
        ],
        repo(),
    );
    let addr = daemon.url.trim_start_matches("http://").to_owned();
    let body = serde_json::to_vec(&first_request()).unwrap();
    let mut s = TcpStream::connect(&addr).unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body).unwrap();
    // The client waits half a second for an answer, gets none (the hold is on), and
    // gives up long before the 20 s hold ends.
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    assert!(s.read(&mut [0; 1]).is_err(), "answered during the hold");
    drop(s);
    let started = std::time::Instant::now();
    let (code, stderr) = daemon.interrupt();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("agentproxy: 1 fault(s) injected: request 1: timeout (no answer)"),
        "{stderr}"
    );
}
