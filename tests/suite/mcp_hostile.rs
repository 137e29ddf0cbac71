//! The MCP stand-in against hostile input, with a raw JSON-RPC peer (no SDK,
//! tests/e2e/mcp_raw.py): requests in flight at once answered out of order and no
//! `initialize`; a line that is not JSON; a result of 8 MB; a server that dies mid-call.
//! Each records, then replays with the server command replaced by one that fails if
//! started: the same answers, except that what the dead server never answered is a miss.

use crate::support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn raw() -> String {
    repo().join("tests/e2e/mcp_raw.py").display().to_string()
}

/// `agentproxy ARGS -- python3 mcp_raw.py client SCENARIO`, the stand-in wrapping `server`.
fn run(dir: &Path, args: &[&str], scenario: &str, server: &[&str]) -> Output {
    let mut standin = vec![support::proxy::bin(), "mcp", "--name", "raw", "--"];
    standin.extend(server);
    Command::new(support::proxy::bin())
        .args(args)
        .args(["--", "python3", &raw(), "client", scenario])
        .current_dir(dir)
        .env("MCP_STANDIN", serde_json::to_string(&standin).unwrap())
        .env_remove("AGENTPROXY_URL")
        .output()
        .unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const NEVER: [&str; 3] = [
    "python3",
    "-c",
    "import sys; sys.exit('the MCP server was started in replay')",
];

/// Record then replay `scenario` (its record exiting `recorded_code`); the two outputs and
/// the replay's exit status.
fn record_then_replay_exiting(
    scenario: &str,
    recorded_code: i32,
) -> (String, String, Option<i32>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let recorded = run(
        dir.path(),
        &[
            "record",
            "--cassette",
            "c.json",
            "--upstream",
            "http://127.0.0.1:9",
        ],
        scenario,
        &["python3", &raw(), "server"],
    );
    let (first, err) = text(&recorded);
    assert_eq!(
        recorded.status.code(),
        Some(recorded_code),
        "{first}\n{err}"
    );
    assert!(
        err.contains("interaction(s) (0 streamed) from MCP server raw to c.json"),
        "{err}"
    );
    let cassette: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("c.json")).unwrap()).unwrap();
    let replayed = run(
        dir.path(),
        &["replay", "--cassette", "c.json"],
        scenario,
        &NEVER,
    );
    let (second, err) = text(&replayed);
    assert!(!err.contains("started in replay"), "{err}");
    (first, second, replayed.status.code(), cassette)
}

/// `agentproxy record` of `scenario` against the raw server, with `extra` flags: its exit
/// code, stdout and stderr.
fn record(dir: &Path, scenario: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec![
        "record",
        "--cassette",
        "c.json",
        "--upstream",
        "http://127.0.0.1:9",
    ];
    args.extend_from_slice(extra);
    let out = run(dir, &args, scenario, &["python3", &raw(), "server"]);
    let (stdout, stderr) = text(&out);
    (out.status.code(), stdout, stderr)
}

/// [`record_then_replay_exiting`] a record that succeeds.
fn record_then_replay(scenario: &str) -> (String, String, Option<i32>, Value) {
    record_then_replay_exiting(scenario, 0)
}

fn methods(cassette: &Value) -> Vec<String> {
    let mut m: Vec<String> = cassette["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["request"]["method"].as_str().unwrap().to_owned())
        .collect();
    m.sort();
    m
}

#[test]
fn concurrent_requests_with_interleaved_ids_and_no_initialize() {
    let (first, second, code, cassette) = record_then_replay("interleaved");
    assert_eq!(
        first,
        "{\"id\": 1, \"jsonrpc\": \"2.0\", \"result\": {\"echo\": {\"ms\": 400}}}\n\
         {\"id\": 2, \"jsonrpc\": \"2.0\", \"result\": {\"echo\": {\"ms\": 0}}}\n\
         {\"id\": \"three\", \"jsonrpc\": \"2.0\", \"result\": {\"echo\": {\"arguments\": {}, \"name\": \"t\"}}}\n\
         stand-in exit: 0\n"
    );
    assert_eq!(second, first);
    assert_eq!(code, Some(0));
    // Each request is stored with its own answer; the notification is not stored.
    assert_eq!(methods(&cassette), ["slow", "slow", "tools/call"]);
}

#[test]
fn a_line_that_is_not_json_gets_a_parse_error_and_the_next_one_is_served() {
    let (first, second, code, _) = record_then_replay("malformed");
    assert!(
        first.contains("{\"error\": -32700, \"id\": null, \"says\": \"(parse error)\"}"),
        "{first}"
    );
    assert!(first.contains("\"id\": 5"), "{first}");
    assert_eq!(second, first);
    assert_eq!(code, Some(0));
}

#[test]
fn a_result_of_many_megabytes_records_and_replays() {
    let (first, second, code, cassette) = record_then_replay("big");
    assert_eq!(
        first,
        "{\"id\": 1, \"text_bytes\": 8388608}\nstand-in exit: 0\n"
    );
    assert_eq!(second, first);
    assert_eq!(code, Some(0));
    assert_eq!(methods(&cassette), ["big"]);
}

#[test]
fn a_server_that_dies_mid_call_leaves_a_consistent_cassette() {
    // The recording is not complete: record says so and exits 3, as for an HTTP server.
    let (first, second, code, cassette) = record_then_replay_exiting("die", 3);
    // The client is answered for the call the server died in, not left waiting.
    assert_eq!(
        first,
        "{\"id\": 1, \"jsonrpc\": \"2.0\", \"result\": {\"echo\": {}}}\n\
         {\"error\": -32603, \"id\": 2, \"says\": \"agentproxy: the MCP server exited before answering\"}\n\
         stand-in exit: 1\n"
    );
    // Only what the server answered is stored; in replay the unanswered call is a miss.
    assert_eq!(methods(&cassette), ["ping"]);
    assert!(second.contains("\"error\": -32001"), "{second}");
    assert_eq!(code, Some(1));
}

#[test]
fn a_result_larger_than_the_body_limit_fails_the_recording_loudly() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &[
            "record",
            "--cassette",
            "c.json",
            "--upstream",
            "http://127.0.0.1:9",
            "--max-body-size",
            "1M",
        ],
        "big",
        &["python3", &raw(), "server"],
    );
    let (stdout, stderr) = text(&out);
    // The client got its answer; the recording lacks it, so the run says so and fails.
    assert!(stdout.contains("\"text_bytes\": 8388608"), "{stdout}");
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("could not be stored") && stderr.contains("--max-body-size"),
        "{stderr}"
    );
}

/// A call past the end of a mock's `results:` is answered with an error and never reaches
/// the server (its side effect would run), and the case fails saying why.
#[test]
fn a_call_past_the_mocked_results_does_not_reach_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let standin = [
        support::proxy::bin(),
        "mcp",
        "--name",
        "raw",
        "--",
        "python3",
        &raw(),
        "server",
    ];
    let spec = format!(
        "app:\n  command: [python3, {raw}, client, mocked]\n  env: {{MCP_STANDIN: '{standin}'}}\n\
         tools:\n  t: {{results: [{{ok: 1}}]}}\ncases:\n  - name: two calls\n",
        raw = raw(),
        standin = serde_json::to_string(&standin).unwrap(),
    );
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
    let out = Command::new(support::proxy::bin())
        .args([
            "test",
            "spec.yaml",
            "-v",
            "--mode",
            "record",
            "--upstream",
            "http://127.0.0.1:9",
        ])
        .current_dir(dir.path())
        .env_remove("AGENTPROXY_URL")
        .env_remove("CI")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("tool `t` was called 2 times but `results:` has 1 value(s)"),
        "{stderr}"
    );
    // The first call got the mock, the second an error; neither reached the server, so
    // the cassette records nothing.
    assert!(
        stderr.contains("\"structuredContent\": {\"ok\": 1}"),
        "{stderr}"
    );
    assert!(
        stderr.contains("\"id\": 2, \"says\": \"agentproxy: tools.t has no mocked result left"),
        "{stderr}"
    );
    let cassette: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("cassettes/spec/two-calls.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cassette["interactions"], serde_json::json!([]));
}

/// What only the MCP server holds, its own environment (as an MCP host's configuration
/// gives it) and secrets on its command line, is redacted before it reaches the cassette,
/// though the session's environment has none of it.
#[test]
fn secrets_only_the_mcp_server_holds_never_reach_the_cassette() {
    let dir = tempfile::tempdir().unwrap();
    let token = "tok-server-only-0123456789";
    let url = "postgres://app:s3cret-pass@db.test/app";
    let standin = [
        "env",
        &format!("SERVER_TOKEN={token}"),
        support::proxy::bin(),
        "mcp",
        "--name",
        "db",
        "--",
        "python3",
        &raw(),
        "server",
        "--dsn",
        url,
        "--api-key",
        "key-0123456789abcdef",
    ];
    let out = Command::new(support::proxy::bin())
        .args([
            "record",
            "--cassette",
            "c.json",
            "--upstream",
            "http://127.0.0.1:9",
        ])
        .args(["--", "python3", &raw(), "client", "secrets"])
        .current_dir(dir.path())
        .env("MCP_STANDIN", serde_json::to_string(&standin).unwrap())
        .env_remove("AGENTPROXY_URL")
        .env_remove("SERVER_TOKEN")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(token),
        "the program still gets the real value: {stdout}"
    );
    let written = std::fs::read_to_string(dir.path().join("c.json")).unwrap();
    for secret in [token, "s3cret-pass", "key-0123456789abcdef"] {
        assert!(
            !written.contains(secret),
            "{secret} reached the cassette:\n{written}"
        );
    }
    for placeholder in ["${SERVER_TOKEN}", "${MCP_DB_ARG4}", "${MCP_DB_API_KEY}"] {
        assert!(
            written.contains(placeholder),
            "no {placeholder}:\n{written}"
        );
    }
}

/// A client line that is not UTF-8 is answered like any line that is not JSON (relayed to
/// the server while recording, answered by the stand-in in replay), and the session goes
/// on: it is never the end of the relay.
#[test]
fn a_line_that_is_not_utf8_is_a_parse_error_and_the_session_goes_on() {
    let (first, second, code, _) = record_then_replay("not-utf8");
    assert!(
        first.contains("{\"error\": -32700, \"id\": null, \"says\": \"(parse error)\"}"),
        "{first}"
    );
    assert!(first.contains("\"id\": 5"), "{first}");
    assert!(first.ends_with("stand-in exit: 0\n"), "{first}");
    assert_eq!(second, first);
    assert_eq!(code, Some(0));
}

/// A request whose id is still in flight is refused at once; the first one is answered.
#[test]
fn a_second_request_with_an_id_in_flight_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = record(dir.path(), "same-id", &[]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "{\"error\": -32600, \"id\": 1, \"says\": \"agentproxy: a request with this id is still in flight"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("\"result\": {\"echo\": {\"ms\": 300}}"),
        "{stdout}"
    );
}

/// A JSON-RPC batch in replay gets an error answer, not silence.
#[test]
fn a_batch_in_replay_is_answered_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = record(dir.path(), "malformed", &[]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let out = run(
        dir.path(),
        &["replay", "--cassette", "c.json"],
        "batch",
        &NEVER,
    );
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains(
            "{\"error\": -32600, \"id\": null, \"says\": \"agentproxy: JSON-RPC batches are not supported"
        ),
        "{stdout}\n{stderr}"
    );
}

/// A JSON-RPC batch while recording is refused as in replay, never reaches the server,
/// and fails the recording naming it (it was a silent gap in the cassette).
#[test]
fn a_batch_while_recording_is_refused_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = record(dir.path(), "batch", &[]);
    assert_eq!(code, Some(3), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "{\"error\": -32600, \"id\": null, \"says\": \"agentproxy: JSON-RPC batches are not supported"
        ),
        "{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("MCP server `raw`: the client sent a JSON-RPC batch of "),
        "{stderr}"
    );
}

/// A server that answers with an id no request had: the stand-in says so, the request it
/// left unanswered too, and the recording exits 3 (it is not complete).
#[test]
fn an_answer_to_no_request_fails_the_recording_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = record(dir.path(), "foreign", &[]);
    assert_eq!(code, Some(3), "{stdout}\n{stderr}");
    assert!(
        stderr
            .contains("MCP server `raw`: it answered id \"not-1\", which no request in flight had"),
        "{stderr}"
    );
    assert!(
        stderr.contains("MCP server `raw`: it ended without answering request 1 (foreign)"),
        "{stderr}"
    );
}

/// A recording that kept something and lost a message over the size limit: its summary
/// names what failed (the loss is noted, never printed as it happened).
#[test]
fn the_summary_names_each_failure_it_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = record(dir.path(), "ping-then-big", &["--max-body-size", "1M"]);
    assert_eq!(code, Some(3), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("agentproxy: 1 request(s) failed at the upstream; exit 3:\nagentproxy:   POST /_agentproxy/mcp/raw/record: an MCP message the stand-in relayed could not be stored"),
        "{stderr}"
    );
}
