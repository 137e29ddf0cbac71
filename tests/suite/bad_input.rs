//! Bad input gets a clear error and loses nothing: broken cassettes, bad flags, malformed
//! and oversized bodies, unknown routes, unrecorded requests, programs that bypass the proxy.

use crate::support;

use std::process::Command;

use serde_json::json;
use support::{http, proxy::bin, proxy::Daemon};

fn run(args: &[&str], cwd: &std::path::Path) -> (i32, String) {
    let out = Command::new(bin())
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A one-interaction cassette written through the library, so its key is the real one.
fn write_cassette(path: &std::path::Path, request: serde_json::Value, reply: serde_json::Value) {
    use agentproxy::cassette::{
        format, store, Body, Cassette, Interaction, RecordedRequest, RecordedResponse,
    };
    let body = Body::Json(request.into());
    let rules = agentproxy::matching::normalize::Rules::default();
    let key = agentproxy::matching::request_key(
        "openai.chat",
        "POST",
        "/v1/chat/completions",
        Some(&body),
        &rules,
    );
    let c = Cassette {
        format: format::format_version(),
        recorder: "test".into(),
        recorded_at: "2026-01-01T00:00:00Z".into(),
        recorded_by: None,
        upstreams: format::Upstreams(std::collections::BTreeMap::from([
            ("openai".into(), "http://127.0.0.1:9".into()),
            ("anthropic".into(), "http://127.0.0.1:9".into()),
        ])),
        match_rules: Default::default(),
        interactions: vec![Interaction {
            route: "openai.chat".into(),
            key,
            turn: None,
            request: RecordedRequest {
                method: "POST".into(),
                path: "/v1/chat/completions".into(),
                body: Some(body),
                body_xxh3: None,
            },
            response: RecordedResponse {
                status: 200,
                headers: [("content-type".to_string(), "application/json".to_string())].into(),
                body: Some(Body::Json(reply.into())),
                events: None,
                aborted: None,
                encoded: Default::default(),
                encoded_events: Default::default(),
                event_ms: Vec::new(),
            },
            latency_ms: 5,
            mocked: Vec::new(),
            spoiled: None,
        }],
    };
    store::save(path, &c).unwrap();
}

fn chat(content: &str) -> serde_json::Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}]})
}

fn completion(text: &str) -> serde_json::Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": null}],
           "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})
}

#[test]
fn missing_cassette_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = run(
        &["replay", "--cassette", "nope.json", "--", "true"],
        dir.path(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("failed to read cassette nope.json"), "{err}");
}

#[test]
fn a_reader_that_goes_away_ends_output_quietly_and_a_full_disk_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    write_cassette(&dir.path().join("c.json"), chat("hi"), completion("hello"));
    let commands: [&[&str]; 4] = [
        &["show", "c.json"],
        &["diff", "c.json", "c.json"],
        &["doctor", "--json"],
        &["docs", "spec-reference"],
    ];
    for args in commands {
        // The reading end is closed before the command writes (`agentproxy show | head`).
        let mut child = Command::new(bin())
            .args(args)
            .current_dir(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
        // A write that fails otherwise says so, with the execution-error exit code.
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(bin())
            .args(args)
            .current_dir(dir.path())
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        assert!(
            err.contains("failed to write to standard output: No space left on device"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn an_error_told_to_a_reader_that_went_away_keeps_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    // Standard error's reader is gone before the error is told (`… 2>&1 | head`).
    let mut child = Command::new(bin())
        .args(["replay", "--cassette", "nope.json", "--", "true"])
        .current_dir(dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    assert_eq!(child.wait().unwrap().code(), Some(2));
}

#[test]
fn odd_environments_and_limits_out_of_reach_get_an_answer_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    write_cassette(&dir.path().join("c.json"), chat("hi"), completion("hello"));
    // A variable that is not UTF-8 is passed over when reading the environment's secrets.
    let out = Command::new(bin())
        .args(["replay", "--cassette", "c.json", "--", "true"])
        .current_dir(dir.path())
        .env("ODD_VALUE", std::ffi::OsStr::from_bytes(b"\xff\xfe"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("unused"), "{err}");
    // A limit no deadline can be computed for is a deadline nothing reaches.
    let (code, err) = run(
        &["doctor", "--timeout", "300000000000y", "--", "true"],
        dir.path(),
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("running `true` once"), "{err}");
    // The same for a case and a turn, and more cases at a time than there are cases (or
    // than a semaphore can count) is all of them.
    std::fs::write(
        dir.path().join("echo.yaml"),
        "app:\n  command: [sh, -c, 'read l; echo got $l; read l; echo got $l']\n  timeout: 300000000000y\nexecution:\n  timeout: 300000000000y\ncases:\n  - name: one\n    turns: [{input: hi}, {input: again}]\n",
    )
    .unwrap();
    let out = Command::new(bin())
        .args([
            "test",
            "echo.yaml",
            "--mode",
            "record",
            "--upstream",
            "http://127.0.0.1:9",
            "-q",
        ])
        .current_dir(dir.path())
        .env("AGENTPROXY_PARALLEL", "3000000000000000000")
        .env_remove("CI")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // The program never calls the model: in record mode, an error of the case, not a panic.
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("0 passed, 0 failed, 1 error"), "{err}");
}

#[test]
fn truncated_cassette_names_path_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    write_cassette(&path, chat("hi"), completion("hello"));
    let full = std::fs::read(&path).unwrap();
    std::fs::write(&path, &full[..full.len() * 2 / 3]).unwrap();
    let (code, err) = run(
        &["replay", "--cassette", "c.json", "--", "true"],
        dir.path(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cassette c.json is broken at line"), "{err}");
}

#[test]
fn newer_major_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.json"),
        r#"{"format": "9.0", "interactions": []}"#,
    )
    .unwrap();
    let (code, err) = run(
        &["replay", "--cassette", "c.json", "--", "true"],
        dir.path(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("has format 9.0") && err.contains("upgrade agentproxy"),
        "{err}"
    );
}

#[test]
fn non_loopback_listen_needs_allow_remote() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = run(
        &["record", "--listen", "0.0.0.0:0", "--", "true"],
        dir.path(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--allow-remote"), "{err}");
}

#[test]
fn mcp_servers_a_program_could_not_tell_apart_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = ("a-b=http://127.0.0.1:9/mcp", "a_b=http://127.0.0.1:9/mcp");
    for args in [
        vec![
            "record",
            "--cassette",
            "c.json",
            "--mcp",
            a,
            "--mcp",
            b,
            "--",
            "true",
        ],
        vec!["test", "spec.yaml", "--mcp", b],
    ] {
        let spec =
            "app: {command: [true]}\nmcp: {a-b: 'http://127.0.0.1:9/mcp'}\ncases:\n  - name: a\n";
        std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();
        let (code, err) = run(&args, dir.path());
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(
                "MCP servers `a-b` and `a_b` would both be given as $AGENTPROXY_MCP_A_B_URL"
            ),
            "{err}"
        );
    }
}

#[test]
fn bad_hole_regex_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = run(
        &["record", "--match-hole", "d=([", "--", "true"],
        dir.path(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("invalid regex for hole `d`"), "{err}");
}

/// A cassette whose own match rules cannot compile names itself, not a flag.
#[test]
fn a_cassettes_broken_match_rules_name_the_cassette() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    write_cassette(&path, chat("hi"), completion("hello"));
    let mut c: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    c["match"] = json!({"holes": [{"name": "d", "regex": "(unclosed"}]});
    std::fs::write(&path, serde_json::to_vec(&c).unwrap()).unwrap();
    let (code, err) = run(
        &["replay", "--cassette", "c.json", "--", "true"],
        dir.path(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cassette c.json is invalid at /match: invalid regex for hole `d`"),
        "{err}"
    );
}

#[test]
fn a_program_that_bypasses_the_proxy_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = run(
        &[
            "record",
            "--upstream",
            "http://127.0.0.1:9",
            "--cassette",
            "c.json",
            "--",
            "true",
        ],
        dir.path(),
    );
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("no request through the proxy") && err.contains("OPENAI_BASE_URL"),
        "{err}"
    );
    assert!(!dir.path().join("c.json").exists());
}

#[test]
fn daemon_replay_answers_bad_requests_in_the_provider_shape() {
    let dir = tempfile::tempdir().unwrap();
    write_cassette(&dir.path().join("c.json"), chat("hi"), completion("hello"));
    let d = Daemon::start(
        &["replay", "--cassette", "c.json", "--max-body-size", "4K"],
        dir.path(),
    );

    let ok = http::post_json(&d.url, "/v1/chat/completions", &chat("hi"));
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert_eq!(ok.json()["choices"][0]["message"]["content"], "hello");

    // Not JSON: a plain HTTP request, which this cassette did not record.
    let bad = http::request(&d.url, "POST", "/v1/chat/completions", &[], b"{\"model\": ");
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["error"]["type"], "agentproxy_cassette_miss");

    let big = json!({"model": "m", "messages": [{"role": "user", "content": "x".repeat(5000)}]});
    let too_big = http::post_json(&d.url, "/v1/chat/completions", &big);
    assert_eq!(too_big.status, 413);
    assert!(too_big.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("--max-body-size"));

    let unknown = http::request(&d.url, "GET", "/favicon.ico", &[], b"");
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json()["error"]["type"], "agentproxy_unknown_route");

    let miss = http::post_json(&d.url, "/v1/chat/completions", &chat("hi there"));
    assert_eq!(miss.status, 400);
    assert_eq!(miss.json()["error"]["type"], "agentproxy_cassette_miss");
    assert_eq!(miss.header("x-should-retry"), Some("false"));

    // None of that disturbed the recording: an extra identical call is an exhausted queue.
    let extra = http::post_json(&d.url, "/v1/chat/completions", &chat("hi"));
    assert_eq!(extra.status, 400);
    assert!(extra.text().contains("extra call"), "{}", extra.text());

    let (code, err) = d.interrupt();
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("nearest recorded request: interaction #0"),
        "{err}"
    );
    assert!(
        err.contains("first difference at /messages/0/content"),
        "{err}"
    );
    assert!(
        err.contains("- hi\n") && err.contains("+ hi there"),
        "{err}"
    );
    // A daemon's hint records the cassette again the same way.
    assert!(
        err.contains(
            "if this change is intended, re-record (`agentproxy record --cassette c.json`)"
        ),
        "{err}"
    );
}

/// A large cassette's bodies are read from its file when served: one replaced on disk
/// (renamed over, as agentproxy and git write) is served as it was loaded; one written in
/// place is refused as a miss that says so, failing the replay, never served as other
/// bytes.
#[test]
fn a_large_cassette_written_in_place_while_replayed_is_refused_and_fails_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    let long = "x".repeat(9 << 20);
    let large = |reply: &str| {
        write_cassette(&path, chat("hi"), completion(&format!("{reply}{long}")));
        assert!(std::fs::metadata(&path).unwrap().len() > 9 << 20);
    };
    let content = |resp: &http::Reply| {
        let text = resp.json()["choices"][0]["message"]["content"].clone();
        text.as_str().unwrap()[..5].to_owned()
    };

    large("first");
    let d = Daemon::start(&["replay", "--cassette", "c.json"], dir.path());
    large("later");
    let ok = http::post_json(&d.url, "/v1/chat/completions", &chat("hi"));
    assert_eq!(ok.status, 200, "{}", ok.status);
    assert_eq!(content(&ok), "first", "served as loaded");
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");

    large("first");
    let d = Daemon::start(&["replay", "--cassette", "c.json"], dir.path());
    // Written in place (`cp` over it): the same file, other bytes, a later time.
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::io::Write::write_all(&mut file, b"{ \"overwritten\": 1 }").unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    file.set_modified(later).unwrap();
    let refused = http::post_json(&d.url, "/v1/chat/completions", &chat("hi"));
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(refused.json()["error"]["type"], "agentproxy_cassette_miss");
    let message = refused.json()["error"]["message"].clone();
    assert!(
        message.as_str().unwrap().contains("changed on disk"),
        "{message}"
    );
    let (code, err) = d.interrupt();
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("matched recording #0, which could not be read: cassette")
            && err.contains("c.json changed on disk while it was in use"),
        "{err}"
    );
}

#[test]
fn unused_recordings_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    write_cassette(&dir.path().join("c.json"), chat("hi"), completion("hello"));
    let (code, err) = run(
        &["replay", "--cassette", "c.json", "--", "true"],
        dir.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 of 1 recording(s) unused"), "{err}");
    assert!(
        err.contains("unused #0 POST /v1/chat/completions (openai.chat)"),
        "{err}"
    );
}

/// A model request whose body its dialect cannot read (Ollama's and Azure's here) is not
/// refused: it reaches the upstream, and is recorded and replayed as plain HTTP, with a
/// warning that says so.
#[tokio::test(flavor = "multi_thread")]
async fn a_model_request_that_is_not_json_is_recorded_and_replayed_as_plain_http() {
    let ollama = support::fake_ollama::FakeOllama::start().await;
    let openai = support::fake_openai::FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_owned();
    let (ollama_up, azure_up) = (
        format!("ollama={}", ollama.url()),
        format!("azure={}", openai.url()),
    );
    let paths = [
        "/api/chat",
        "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
    ];
    let record = [
        "record",
        "--cassette",
        "c.json",
        "--upstream",
        &ollama_up,
        "--upstream",
        &azure_up,
    ];
    let replay = ["replay", "--cassette", "c.json"];
    let mut answers = Vec::new();
    for args in [&record[..], &replay[..]] {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let cwd = d.clone();
        let (got, code, stderr) = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let daemon = Daemon::start(&args, &cwd);
            let got: Vec<(u16, String)> = paths
                .iter()
                .map(|p| {
                    let r = http::request(&daemon.url, "POST", p, &[], b"{\"model\": ");
                    (r.status, r.text())
                })
                .collect();
            let (code, stderr) = daemon.interrupt();
            (got, code, stderr)
        })
        .await
        .unwrap();
        assert_eq!(code, 0, "{stderr}");
        for (path, route) in [
            ("/api/chat", "ollama.chat"),
            ("/openai/deployments/gpt-4o/chat/completions", "openai.chat"),
        ] {
            assert!(
                stderr.contains(&format!("agentproxy: warning: POST {path}"))
                    && stderr.contains(&format!("plain HTTP, not as {route}")),
                "{stderr}"
            );
        }
        answers.push(got);
    }
    assert_eq!(answers[0], answers[1], "replayed as recorded");
    assert_eq!(
        answers[0][0].0, 400,
        "Ollama's own answer: {:?}",
        answers[0]
    );
    assert!(answers[0][0].1.contains("\"error\""), "{:?}", answers[0]);
    let cassette: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("c.json")).unwrap()).unwrap();
    let routes: Vec<&str> = cassette["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["route"].as_str().unwrap())
        .collect();
    assert_eq!(routes, ["http", "http"]);
    assert_eq!(ollama.requests().len(), 1, "the upstream got the request");
    ollama.stop().await;
    openai.stop().await;
}
