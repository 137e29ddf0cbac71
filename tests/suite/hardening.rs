//! Adversarial probes kept as tests: each once lost data, leaked a secret or hid a failure
//! (see docs/security.md for the behaviour each one pins).

use crate::support;

use std::path::Path;
use std::process::Command;

use support::proxy::{bin, Daemon};

struct Run {
    code: i32,
    stderr: String,
}

fn run(args: &[&str], cwd: &Path) -> Run {
    let out = Command::new(bin())
        .args(args)
        .current_dir(cwd)
        .env_remove("CI")
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `agentproxy record --cassette c.json` in `dir` as a daemon, its upstream a closed port.
fn record_daemon(dir: &Path) -> Daemon {
    Daemon::start(
        &[
            "record",
            "--cassette",
            "c.json",
            "--upstream",
            "http://127.0.0.1:9",
        ],
        dir,
    )
}

/// `agentproxy record --cassette CASSETTE -- sh -c 'touch started'` in `cwd`: a program
/// whose start leaves a trace.
fn record_touching(cassette: &str, cwd: &Path) -> Run {
    run(
        &[
            "record",
            "--cassette",
            cassette,
            "--upstream",
            "http://127.0.0.1:9",
            "--",
            "sh",
            "-c",
            "touch started",
        ],
        cwd,
    )
}

/// A cassette with these interactions (JSON objects, comma-separated).
fn cassette_with(interactions: &str) -> String {
    format!(
        r#"{{"format": "1.2", "recorder": "t", "recorded_at": "2026-01-01T00:00:00Z", "upstreams": {{"openai": "http://127.0.0.1:1", "anthropic": "http://127.0.0.1:2"}}, "interactions": [{interactions}]}}"#
    )
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: creating a FIFO at a path the test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

#[test]
fn a_cassette_path_that_is_not_a_regular_file_is_refused_before_the_program_starts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mkfifo(&d.join("node"));
    for cassette in ["node", "/dev/null"] {
        let r = record_touching(cassette, d);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
        assert!(!d.join("started").exists(), "the program must not run");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(d.join("node"))
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
}

/// `record --cassette` through a committed link to a file that is not a cassette (a
/// `.bashrc`) refuses before the program starts and leaves the file as it was; an existing
/// cassette, or an empty file, is recorded over.
#[test]
fn record_never_replaces_a_file_that_is_not_a_cassette() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("bashrc"), "export PATH=$HOME/bin:$PATH\n").unwrap();
    std::os::unix::fs::symlink(d.join("bashrc"), d.join("c.json")).unwrap();
    let r = record_touching("c.json", d);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("exists and is not a cassette this agentproxy reads"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("`git checkout -- "), "{}", r.stderr);
    assert!(!d.join("started").exists(), "the program must not run");
    assert_eq!(
        std::fs::read_to_string(d.join("bashrc")).unwrap(),
        "export PATH=$HOME/bin:$PATH\n"
    );
    std::fs::write(d.join("empty.json"), "").unwrap();
    let r = record_touching("empty.json", d);
    assert!(d.join("started").exists(), "{}", r.stderr);
}

/// Replay, show and diff read a cassette only when it is a regular file (after links),
/// with a ceiling on its size: a device is never read (it could be endless), a FIFO never
/// waited on (it could block forever), and the hint never says to record there.
#[test]
fn a_cassette_that_is_not_a_regular_file_is_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mkfifo(&d.join("fifo.json"));
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.json")).unwrap();
    std::fs::create_dir(d.join("dir.json")).unwrap();
    // Sparse: no disk used, and never read, since its size alone refuses it.
    let huge = std::fs::File::create(d.join("huge.json")).unwrap();
    huge.set_len((2 << 30) + 1).unwrap();
    for (cassette, what) in [
        ("fifo.json", "it is a FIFO"),
        ("zero.json", "it is a device"),
        ("dir.json", "it is a directory"),
        (
            "huge.json",
            "2147483649 bytes, over the 2147483648-byte ceiling",
        ),
    ] {
        for args in [
            vec!["replay", "--cassette", cassette, "--", "true"],
            vec!["show", cassette],
            vec!["diff", cassette, cassette],
        ] {
            let r = run(&args, d);
            assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
            assert!(r.stderr.contains(what), "{args:?}: {}", r.stderr);
            assert!(
                !r.stderr.contains("agentproxy record --cassette"),
                "{}",
                r.stderr
            );
        }
    }
}

/// The MCP stand-ins' endpoint of a session answers only a request that presents the
/// session's secret, which only the program agentproxy started is given: another local
/// process cannot plant recordings in it.
#[test]
fn the_stand_ins_endpoint_asks_for_the_sessions_secret() {
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path());
    assert_eq!(d.secret.len(), 32, "a 128-bit secret in hex");
    let pair = br#"{"request": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}}, "response": {"jsonrpc": "2.0", "id": 1, "result": {}}, "latency_ms": 1}"#;
    let path = "/_agentproxy/mcp/mail/record";
    for wrong in [None, Some("0".repeat(32))] {
        let headers: Vec<(&str, &str)> = wrong
            .as_deref()
            .map(|w| ("x-agentproxy-secret", w))
            .into_iter()
            .collect();
        let r = support::http::request(&d.url, "POST", path, &headers, pair);
        assert_eq!(r.status, 403, "{}", r.text());
        assert!(
            r.text().contains("needs this session's secret"),
            "{}",
            r.text()
        );
    }
    let r = support::http::request(
        &d.url,
        "POST",
        path,
        &[("x-agentproxy-secret", &d.secret)],
        pair,
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn an_unwritable_cassette_directory_is_found_before_the_program_starts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("plain-file"), "").unwrap();
    let r = record_touching("plain-file/c.json", d);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("cannot be written"), "{}", r.stderr);
    assert!(!d.join("started").exists(), "the program must not run");
}

#[test]
fn a_second_record_daemon_on_the_same_cassette_fails_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "record",
        "--cassette",
        "c.json",
        "--upstream",
        "http://127.0.0.1:9",
    ];
    let first = Daemon::start(&args, d);
    let second = run(&args, d);
    assert_eq!(second.code, 2, "{}", second.stderr);
    assert!(
        second
            .stderr
            .contains("being written by another agentproxy"),
        "{}",
        second.stderr
    );
    let (code, stderr) = first.interrupt();
    // The first daemon recorded nothing: that is its own error, and it releases the lock.
    assert_eq!(code, 3, "{stderr}");
    assert!(!d.join(".c.json.lock").exists());
}

#[test]
fn two_specs_whose_cases_share_a_cassette_are_refused_before_any_case_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spec = "app:\n  command: [sh, -c, 'touch ran']\ncassettes: shared\ncases:\n  - name: same name\n    input: hi\n";
    std::fs::write(d.join("a.yaml"), spec).unwrap();
    std::fs::write(d.join("b.yaml"), spec).unwrap();
    let r = run(&["test", "a.yaml", "b.yaml", "--parallel", "2"], d);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("share the cassette"), "{}", r.stderr);
    assert!(r.stderr.contains("a.yaml::same name"), "{}", r.stderr);
    assert!(r.stderr.contains("b.yaml::same name"), "{}", r.stderr);
    assert!(!d.join("ran").exists());
}

#[test]
fn a_cassette_that_parses_but_cannot_be_served_is_refused_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (response, pointer) in [
        (
            r#"{"status": 200, "body": {"base64": "!!!notbase64"}}"#,
            "/interactions/0/response/body/base64",
        ),
        (r#"{"status": 99}"#, "/interactions/0/response/status"),
    ] {
        let text = cassette_with(&format!(
            r#"{{"route": "http", "key": "k", "request": {{"method": "GET", "path": "/v1/models"}},
              "response": {response}, "latency_ms": 1}}"#
        ));
        std::fs::write(d.join("c.json"), text).unwrap();
        let r = run(
            &[
                "replay",
                "--cassette",
                "c.json",
                "--",
                "sh",
                "-c",
                "touch started",
            ],
            d,
        );
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("c.json is invalid at"), "{}", r.stderr);
        assert!(r.stderr.contains(pointer), "{}", r.stderr);
        assert!(!d.join("started").exists());
    }
}

/// Record one request through a daemon with `env` in its environment; the cassette.
async fn record_one(
    env: &[(&str, &str)],
    path: &'static str,
    body: serde_json::Value,
) -> (serde_json::Value, String) {
    let fake = support::fake_openai::FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let url = fake.url();
    let d = Daemon::start_with_env(
        &["record", "--cassette", "c.json", "--upstream", url.as_str()],
        dir.path(),
        env,
    );
    let base = d.url.clone();
    let reply =
        tokio::task::spawn_blocking(move || support::http::post_json(&base, path, &body).text())
            .await
            .unwrap();
    let (code, stderr) = d.interrupt();
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(dir.path().join("c.json")).unwrap();
    (serde_json::from_str(&text).unwrap(), reply)
}

fn chat(content: &str, stream: bool) -> serde_json::Value {
    serde_json::json!({
        "model": "gpt-4o-mini",
        "stream": stream,
        "messages": [{"role": "user", "content": content}],
        "tools": [{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_in_the_query_string_are_never_stored() {
    const GOOGLE_KEY: &str = "AIzaSyA1234567890abcdefghijklmnopqrstuv";
    const PASSWORD: &str = "p@ss/word-0042";
    let (cassette, _) = record_one(
        &[("GEMINI_API_KEY", GOOGLE_KEY), ("DB_PASSWORD", PASSWORD)],
        // `?key=` is a credential parameter; `pw` is not, but holds a secret's value,
        // percent-encoded as a client would send it.
        "/v1/chat/completions?key=AIzaSyA1234567890abcdefghijklmnopqrstuv&pw=p%40ss%2Fword-0042&x=1",
        chat("hello", false),
    )
    .await;
    let text = cassette.to_string();
    assert!(!text.contains(GOOGLE_KEY), "{text}");
    assert!(!text.contains("p%40ss%2Fword-0042"), "{text}");
    assert_eq!(
        cassette["interactions"][0]["request"]["path"],
        "/v1/chat/completions?pw=${DB_PASSWORD}&x=1"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_split_over_streamed_deltas_is_stored_in_neither_form() {
    // The fake model calls get_weather with this word as the city, streaming the
    // arguments in fragments of 1 to 5 characters.
    const PASSWORD: &str = "Huntersecretpass";
    let (cassette, reply) = record_one(
        &[("DB_PASSWORD", PASSWORD)],
        "/v1/chat/completions",
        chat(&format!("What's the weather in {PASSWORD}?"), true),
    )
    .await;
    // The program got the real stream, the secret split over several events.
    assert!(reply.contains("data: "), "{reply}");
    assert!(
        reply.split("\n\n").all(|e| !e.contains(PASSWORD)),
        "the test needs the value split over events: {reply}"
    );
    let arguments: String = reply
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .filter_map(|c| {
            c.pointer("/choices/0/delta/tool_calls/0/function/arguments")
                .and_then(|a| a.as_str())
                .map(str::to_owned)
        })
        .collect();
    assert!(arguments.contains(PASSWORD), "{arguments}");
    let response = &cassette["interactions"][0]["response"];
    let body = response["body"].to_string();
    assert!(body.contains("${DB_PASSWORD}"), "{body}");
    let events = response["events"].as_array().unwrap();
    let joined: String = events
        .iter()
        .map(|e| e["data"].as_str().unwrap_or_default())
        .collect();
    assert!(joined.contains("${DB_PASSWORD}"), "{joined}");
    // No piece of it either: the fragments that carried it are gone.
    for piece in ["Hunt", "ecretp", "pass\""] {
        assert!(!joined.contains(piece), "{piece} in {joined}");
    }
    assert!(!cassette.to_string().contains(PASSWORD));
}

/// Read one HTTP/1.1 request (its head and its `content-length` body) from `conn`.
fn read_request(conn: &std::net::TcpStream) {
    use std::io::{BufRead, BufReader, Read};
    let mut reader = BufReader::new(conn);
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
        if line == "\r\n" {
            break;
        }
    }
    reader.read_exact(&mut vec![0; length]).unwrap();
}

/// A one-connection upstream on 127.0.0.1 that reads one request, then sends `head` and
/// `chunks` (HTTP/1.1 chunked) and does `end`: cut the connection, or stall.
fn raw_upstream(chunks: Vec<&'static str>, stall: bool) -> String {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        read_request(&conn);
        let mut out = String::from(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        );
        for c in chunks {
            out.push_str(&format!("{:x}\r\n{c}\r\n", c.len()));
        }
        conn.write_all(out.as_bytes()).unwrap();
        conn.flush().unwrap();
        if stall {
            std::thread::sleep(std::time::Duration::from_secs(20));
        }
        // Dropping the socket without the last chunk is the abort.
    });
    url
}

/// POST a streaming chat request and read the raw HTTP response to its end.
fn raw_post(base: &str) -> (Vec<u8>, std::time::Duration) {
    use std::io::{Read, Write};
    let body = chat("hello", true).to_string();
    let mut s = std::net::TcpStream::connect(base.trim_start_matches("http://")).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(15)))
        .unwrap();
    let started = std::time::Instant::now();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    (raw, started.elapsed())
}

const TWO_CHUNKS: [&str; 2] = [
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":null}]}\n\n",
];

/// A complete HTTP/1.1 chunked body ends with the zero-length chunk.
fn ended_cleanly(raw: &[u8]) -> bool {
    raw.ends_with(b"0\r\n\r\n")
}

#[test]
fn an_upstream_that_aborts_mid_stream_is_an_abort_in_record_and_in_replay() {
    let upstream = raw_upstream(TWO_CHUNKS.to_vec(), false);
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(
        &[
            "record",
            "--cassette",
            "c.json",
            "--upstream",
            upstream.as_str(),
        ],
        dir.path(),
    );
    let (raw, _) = raw_post(&d.url);
    let text = String::from_utf8_lossy(&raw).into_owned();
    assert!(text.contains("Hel"), "{text}");
    assert!(
        !ended_cleanly(&raw),
        "the program must see the abort: {text}"
    );
    let (code, stderr) = d.interrupt();
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("broke off"), "{stderr}");
    assert!(stderr.contains("recorded as aborted"), "{stderr}");
    let cassette: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("c.json")).unwrap()).unwrap();
    let response = &cassette["interactions"][0]["response"];
    assert!(
        response["aborted"]
            .as_str()
            .unwrap()
            .contains("after 2 events"),
        "{response}"
    );
    assert_eq!(response["events"].as_array().unwrap().len(), 2);
    assert!(
        response.get("body").is_none(),
        "no whole message: {response}"
    );

    let replay = Daemon::start(&["replay", "--cassette", "c.json"], dir.path());
    let (raw, _) = raw_post(&replay.url);
    let text = String::from_utf8_lossy(&raw).into_owned();
    assert!(text.contains(r#""content":"Hel""#), "{text}");
    assert!(text.contains(r#""content":"lo""#), "{text}");
    assert!(!ended_cleanly(&raw), "replay must abort too: {text}");
}

/// A Bedrock event stream whose second frame fails its CRC: record relays what came and
/// cuts the program's stream there, keeps the frames before it, and names the broken frame;
/// replay serves the kept frame and cuts the stream the same way.
#[test]
fn a_broken_event_stream_frame_is_an_abort_in_record_and_in_replay() {
    use agentproxy::sse::{eventstream, SseEvent};
    use std::io::{Read, Write};
    let frame = |name: &str, data: &str| {
        eventstream::encode(&SseEvent {
            event: Some(name.into()),
            id: None,
            data: data.into(),
        })
    };
    let good = frame("messageStart", r#"{"role":"assistant"}"#);
    let mut broken = frame(
        "contentBlockDelta",
        r#"{"contentBlockIndex":0,"delta":{"text":"Hi"}}"#,
    )
    .to_vec();
    let last = broken.len() - 1;
    broken[last] ^= 0xff;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = format!("bedrock=http://{}", listener.local_addr().unwrap());
    let wire = [good.to_vec(), broken].concat();
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        read_request(&conn);
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {}\r\ncontent-length: {}\r\n\r\n",
            eventstream::CONTENT_TYPE,
            wire.len()
        );
        conn.write_all(head.as_bytes()).unwrap();
        conn.write_all(&wire).unwrap();
        conn.flush().unwrap();
    });
    let post = |base: &str| {
        let body = r#"{"messages":[{"role":"user","content":[{"text":"hi"}]}]}"#;
        let mut s = std::net::TcpStream::connect(base.trim_start_matches("http://")).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(15)))
            .unwrap();
        write!(
            s,
            "POST /model/m/converse-stream HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw);
        raw
    };
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(
        &["record", "--cassette", "c.json", "--upstream", &upstream],
        dir.path(),
    );
    let raw = post(&d.url);
    assert!(
        raw.windows(good.len()).any(|w| w == &good[..]),
        "the good frame is relayed"
    );
    assert!(!ended_cleanly(&raw), "the program must see the abort");
    let (code, stderr) = d.interrupt();
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("an event-stream frame is broken"),
        "{stderr}"
    );
    let cassette: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("c.json")).unwrap()).unwrap();
    let response = &cassette["interactions"][0]["response"];
    assert_eq!(cassette["interactions"][0]["route"], "bedrock.converse");
    assert_eq!(
        response["events"],
        serde_json::json!([{"event": "messageStart", "data": "{\"role\":\"assistant\"}"}])
    );
    assert!(
        response["aborted"].as_str().unwrap().contains("broken"),
        "{response}"
    );

    let replay = Daemon::start(&["replay", "--cassette", "c.json"], dir.path());
    let raw = post(&replay.url);
    assert!(
        raw.windows(good.len()).any(|w| w == &good[..]),
        "replay serves the kept frame"
    );
    assert!(!ended_cleanly(&raw), "replay must abort too");
}

/// While recording, a program that hangs up mid-stream ends the upstream's stream too (a
/// real model would go on generating, and billing): the upstream sees its connection
/// closed at once, not when the shutdown drain cuts it, and what was relayed is recorded
/// as aborted, which is no failure of the upstream.
#[test]
fn a_program_that_hangs_up_mid_stream_stops_the_upstream() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = format!("http://{}", listener.local_addr().unwrap());
    let (closed_tx, closed) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        read_request(&conn);
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        conn.write_all(head.as_bytes()).unwrap();
        // A chunk every 50 ms for up to 20 s, until a write fails: the proxy hung up.
        let started = std::time::Instant::now();
        for _ in 0..400 {
            let c = TWO_CHUNKS[0];
            if conn
                .write_all(format!("{:x}\r\n{c}\r\n", c.len()).as_bytes())
                .and_then(|()| conn.flush())
                .is_err()
            {
                let _ = closed_tx.send(started.elapsed());
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(
        &["record", "--cassette", "c.json", "--upstream", &upstream],
        dir.path(),
    );
    let body = chat("hello", true).to_string();
    let mut s = std::net::TcpStream::connect(d.url.trim_start_matches("http://")).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut first = [0u8; 512];
    let n = s.read(&mut first).unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).contains("200 OK"));
    drop(s);
    let noticed = closed
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the upstream's connection was closed");
    assert!(noticed < std::time::Duration::from_secs(10), "{noticed:?}");
    let (code, stderr) = d.interrupt();
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("the program hung up mid-stream"),
        "{stderr}"
    );
    let cassette: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("c.json")).unwrap()).unwrap();
    let response = &cassette["interactions"][0]["response"];
    assert!(
        (response["aborted"].as_str().unwrap()).starts_with("the program hung up mid-stream"),
        "{response}"
    );
}

#[test]
fn an_upstream_that_stalls_after_the_head_times_out_and_fails_the_record() {
    let upstream = raw_upstream(TWO_CHUNKS[..1].to_vec(), true);
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(
        &[
            "record",
            "--cassette",
            "c.json",
            "--upstream",
            upstream.as_str(),
            "--upstream-timeout",
            "1s",
        ],
        dir.path(),
    );
    let (raw, took) = raw_post(&d.url);
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    assert!(!ended_cleanly(&raw));
    let (code, stderr) = d.interrupt();
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("sent nothing for 1s"), "{stderr}");
}

#[test]
fn nothing_recorded_says_what_happened_to_the_requests_that_came() {
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path());
    // The base URL without /v1: a common misconfiguration.
    let reply = support::http::post_json(&d.url, "/chat/completions", &chat("hi", false));
    assert_eq!(reply.status, 404);
    // An unreachable upstream, with a key in the URL: named, the key never shown.
    let keyed = "/v1/chat/completions?key=AIzaSyA1234567890abcdefghijklmnopqrstuv";
    let reply = support::http::post_json(&d.url, keyed, &chat("hi", false));
    assert_eq!(reply.status, 502);
    let (code, stderr) = d.interrupt();
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("  - POST /v1/chat/completions: failed to reach upstream"),
        "{stderr}"
    );
    assert!(!stderr.contains("AIzaSy"), "{stderr}");
    assert!(
        stderr.contains("  - POST /chat/completions: 404"),
        "{stderr}"
    );
    assert!(!stderr.contains("made no request"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_sigint_stops_at_once_and_keeps_what_was_recorded() {
    let fake = support::fake_openai::FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let url = fake.url();
    let d = Daemon::start(
        &["record", "--cassette", "c.json", "--upstream", url.as_str()],
        dir.path(),
    );
    let base = d.url.clone();
    let done = tokio::task::spawn_blocking(move || {
        support::http::post_json(&base, "/v1/chat/completions", &chat("first", false)).status
    })
    .await
    .unwrap();
    assert_eq!(done, 200);
    fake.set_latency(std::time::Duration::from_secs(20));
    let base = d.url.clone();
    let _stuck = std::thread::spawn(move || {
        support::http::post_json(&base, "/v1/chat/completions", &chat("second", false))
    });
    support::until("the second request to reach the upstream", || {
        fake.request_count() == 2
    })
    .await;
    let started = std::time::Instant::now();
    let (code, stderr) = tokio::task::spawn_blocking(move || {
        d.interrupt_again_after(Some(std::time::Duration::from_millis(300)))
    })
    .await
    .unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}: {stderr}",
        started.elapsed()
    );
    assert!(stderr.contains("stopping now"), "{stderr}");
    assert_eq!(code, 0, "{stderr}");
    let cassette: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("c.json")).unwrap()).unwrap();
    assert_eq!(cassette["interactions"].as_array().unwrap().len(), 1);
}

#[test]
fn the_http_edge_refuses_dot_segments_and_oversized_declared_bodies_at_once() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(
        &[
            "record",
            "--cassette",
            "c.json",
            "--upstream",
            "http://127.0.0.1:9",
            "--max-body-size",
            "1K",
        ],
        dir.path(),
    );
    for path in [
        "/v1/../../admin",
        "/v1/%2e%2e/%2E%2E/admin",
        "/v1/./chat/completions",
    ] {
        let r = support::http::post_json(&d.url, path, &chat("hi", false));
        assert_eq!(r.status, 400, "{path}");
        assert!(r.text().contains("agentproxy_bad_path"), "{}", r.text());
    }
    // A head declaring 1 GB, and no body sent: the answer comes without waiting for it.
    let mut s = std::net::TcpStream::connect(d.url.trim_start_matches("http://")).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000000000\r\n\r\n")
        .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).expect("an answer before the body");
    assert_eq!(&head, b"HTTP/1.1 413");
}

#[test]
fn a_half_sent_request_head_does_not_hold_up_a_second_sigint() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(&["replay", "--cassette", "c.json"], {
        std::fs::write(dir.path().join("c.json"), cassette_with("")).unwrap();
        dir.path()
    });
    let mut s = std::net::TcpStream::connect(d.url.trim_start_matches("http://")).unwrap();
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n")
        .unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let started = std::time::Instant::now();
    let (code, stderr) = d.interrupt_again_after(Some(std::time::Duration::from_millis(300)));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "shutdown took {:?}",
        started.elapsed()
    );
    // The connection is gone with the proxy: end of file or a reset (the proxy exited
    // with the half head unread), not a read timeout.
    let mut rest = Vec::new();
    if let Err(e) = s.read_to_end(&mut rest) {
        assert!(
            !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "the connection was left open: {e}"
        );
    }
}

#[test]
fn upstreams_with_a_query_and_zero_timeouts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &[
            "record",
            "--upstream",
            "http://127.0.0.1:9/?x=1",
            "--",
            "true",
        ][..],
        &[
            "record",
            "--upstream",
            "http://127.0.0.1:9/#frag",
            "--",
            "true",
        ][..],
        &["record", "--upstream-timeout", "0s", "--", "true"][..],
    ] {
        let r = run(args, dir.path());
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("query or fragment") || r.stderr.contains("is zero"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn under_ci_a_spec_cannot_choose_to_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("s.yaml"),
        "app:\n  command: [sh, -c, 'touch ran']\nexecution:\n  mode: record\ncases:\n  - name: a\n    input: hi\n",
    )
    .unwrap();
    let out = Command::new(bin())
        .args(["test", "s.yaml"])
        .current_dir(d)
        .env("CI", "true")
        .env_remove("AGENTPROXY_MODE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("may call the real model from CI"),
        "{stderr}"
    );
    assert!(!d.join("ran").exists());
}

#[test]
fn a_case_without_input_runs_the_program_once_with_stdin_closed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("s.yaml"),
        "app:\n  command: [sh, -c, 'if read line; then echo \"got $line\"; else echo \"stdin closed, input=${AGENTPROXY_INPUT-unset}\"; fi']\ncassettes: cas\ncases:\n  - name: built in\n    expect:\n      output: {contains: 'stdin closed, input=unset'}\n",
    )
    .unwrap();
    std::fs::create_dir(d.join("cas")).unwrap();
    std::fs::write(d.join("cas/built-in.json"), cassette_with("")).unwrap();
    let r = run(&["test", "s.yaml", "--mode", "replay"], d);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("PASS"), "{}", r.stderr);
}

#[test]
fn many_unused_recordings_are_summarised_unless_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let interactions: Vec<String> = (0..15)
        .map(|i| {
            format!(
                r#"{{"route": "http", "key": "k{i}", "request": {{"method": "GET", "path": "/v1/models/m{i}"}}, "response": {{"status": 200}}, "latency_ms": 1}}"#
            )
        })
        .collect();
    std::fs::write(d.join("c.json"), cassette_with(&interactions.join(","))).unwrap();
    let r = run(&["replay", "--cassette", "c.json", "--", "true"], d);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stderr.matches("  unused #").count(), 10, "{}", r.stderr);
    assert!(r.stderr.contains("… and 5 more unused"), "{}", r.stderr);
    let r = run(&["replay", "-v", "--cassette", "c.json", "--", "true"], d);
    assert_eq!(r.stderr.matches("  unused #").count(), 15, "{}", r.stderr);
}

/// `agentproxy serve ARGS` with `env`: the process, its URL and its secret.
fn serve(args: &[&str], env: &[(&str, &str)]) -> (std::process::Child, String, String) {
    let (serve, url, secret, _) = serve_hello(args, env);
    (serve, url, secret)
}

/// [`serve`], and its listening line.
fn serve_hello(
    args: &[&str],
    env: &[(&str, &str)],
) -> (std::process::Child, String, String, serde_json::Value) {
    use std::io::{BufRead, BufReader};
    let mut serve = Command::new(bin())
        .arg("serve")
        .args(args)
        .env_remove("AGENTPROXY_SECRET")
        .env_remove("OPENAI_API_KEY")
        .env_remove("CI")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(serve.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let hello: serde_json::Value = serde_json::from_str(&line).unwrap();
    let url = hello["url"].as_str().unwrap().to_owned();
    let secret = hello["env"]["AGENTPROXY_SECRET"]
        .as_str()
        .unwrap()
        .to_owned();
    (serve, url, secret, hello)
}

/// `POST /_agentproxy/test` of a test on `cassette` in `mode`.
fn start_test(
    url: &str,
    cassette: &str,
    mode: &str,
    headers: &[(&str, &str)],
) -> support::http::Reply {
    let body = serde_json::json!({"protocol": agentproxy::commands::serve::PROTOCOL, "name": "t", "cassette": cassette, "mode": mode});
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    support::http::request(
        url,
        "POST",
        "/_agentproxy/test",
        &all,
        body.to_string().as_bytes(),
    )
}

/// Serve decides the session's mode: replay under CI, auto elsewhere, or the one its
/// command line asks (`--mode`); under CI a session that replays replays every test,
/// whatever it asks, and a configuration (`--mode-from`) may not choose to record.
#[test]
fn serve_decides_the_mode_and_under_ci_records_only_when_its_command_line_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let root = format!("--root={}", dir.path().display());
    for (args, ci, session, test) in [
        (vec![root.as_str()], true, "replay", "replay"),
        (vec![root.as_str()], false, "auto", "record"),
        (
            vec![root.as_str(), "--mode", "record"],
            true,
            "record",
            "record",
        ),
    ] {
        let env: &[(&str, &str)] = if ci { &[("CI", "true")] } else { &[] };
        let (mut serve, url, secret, hello) = serve_hello(&args, env);
        assert_eq!(hello["mode"], session, "{args:?} {hello}");
        // Replay's placeholder keys, auto's too; none when the session records.
        let keyed = hello["env"].get("OPENAI_API_KEY").is_some();
        assert_eq!(keyed, session != "record", "{hello}");
        // A replay's Google credentials send their token refresh to serve, which answers.
        let google = hello["env"]["GOOGLE_APPLICATION_CREDENTIALS"].as_str();
        assert_eq!(google.is_some(), session == "replay", "{hello}");
        if let Some(file) = google {
            let creds: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
            let token_url = creds["token_url"].as_str().unwrap();
            assert_eq!(token_url, format!("{url}/_agentproxy/google-token"));
            let r = support::http::request(
                &url,
                "POST",
                "/_agentproxy/google-token",
                &[],
                b"grant_type=refresh_token",
            );
            assert_eq!(r.status, 200, "{}", r.text());
            assert!(r.json()["access_token"].is_string(), "{}", r.text());
        }
        let r = start_test(
            &url,
            "c.json",
            "record",
            &[("x-agentproxy-secret", &secret)],
        );
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["mode"], test, "{args:?}: {}", r.text());
        drop(serve.stdin.take());
        serve.wait().unwrap();
    }
    let out = Command::new(bin())
        .args([
            "serve",
            &root,
            "--mode",
            "auto",
            "--mode-from",
            "agentproxy_mode in the ini file",
        ])
        .env("CI", "true")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("CI is set, and agentproxy_mode in the ini file asks for mode `auto`"),
        "{stderr}"
    );
}

/// Serve names a test's cassette from its directory and the test's name, as it answers
/// `POST cassettes` for a harness's collection, and refuses a second test on that file.
#[test]
fn serve_names_the_cassettes_and_refuses_two_tests_on_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = format!("--root={}", dir.path().display());
    let (mut serve, url, secret) = serve(&[&root], &[]);
    let post = |path: &str, body: serde_json::Value| {
        let headers = [
            ("x-agentproxy-secret", secret.as_str()),
            ("content-type", "application/json"),
        ];
        support::http::request(&url, "POST", path, &headers, body.to_string().as_bytes())
    };
    let named = post(
        "/_agentproxy/cassettes",
        serde_json::json!({"tests": [{"dir": "cassettes/agent.test", "name": "weather > paris?"}]}),
    );
    assert_eq!(named.status, 200, "{}", named.text());
    assert_eq!(
        named.json()["cassettes"],
        serde_json::json!(["cassettes/agent.test/weather-paris.json"])
    );
    let start = |name: &str, test: &str| {
        let body = serde_json::json!({"protocol": agentproxy::commands::serve::PROTOCOL,
            "name": name, "cassette_dir": "cassettes/agent.test", "cassette_name": test});
        post("/_agentproxy/test", body)
    };
    let r = start("a", "weather > paris?");
    assert_eq!(r.status, 200, "{}", r.text());
    let path = r.json()["cassette"].as_str().unwrap().to_owned();
    assert!(
        path.ends_with("cassettes/agent.test/weather-paris.json"),
        "{path}"
    );
    let r = start("b", "weather > paris!");
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(
        r.text()
            .contains("tests `a` and `b` would share the cassette"),
        "{}",
        r.text()
    );
    drop(serve.stdin.take());
    serve.wait().unwrap();
}

/// `serve`'s control endpoint answers only a request presenting the secret of its
/// listening line; the cassettes it names stay inside `--root` (a `..` or a link out is
/// refused); and an unreadable cassette's error does not quote the file.
#[test]
fn serves_control_asks_for_its_secret_and_keeps_cassettes_in_its_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(dir.path().join("outside.json"), "{}").unwrap();
    std::os::unix::fs::symlink(dir.path(), root.join("escape")).unwrap();
    std::fs::write(
        root.join("notes.json"),
        r#"{"format": "TOPSECRET-VALUE", "interactions": "PRIVATE-NOTE"}"#,
    )
    .unwrap();
    let (mut serve, url, secret) = serve(&[&format!("--root={}", root.display())], &[]);
    let start =
        |cassette: &str, headers: &[(&str, &str)]| start_test(&url, cassette, "replay", headers);
    let r = start("c.json", &[]);
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("needs the secret"), "{}", r.text());
    let with = [("x-agentproxy-secret", secret.as_str())];
    for outside in ["../outside.json", "escape/outside.json", "/etc/hostname"] {
        let r = start(outside, &with);
        assert_eq!(r.status, 400, "{outside}: {}", r.text());
        assert!(
            r.text().contains("is outside serve's root"),
            "{outside}: {}",
            r.text()
        );
    }
    let r = start("notes.json", &with);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.text()
            .contains("notes.json has a format this agentproxy does not read"),
        "{}",
        r.text()
    );
    assert!(
        !r.text().contains("TOPSECRET") && !r.text().contains("PRIVATE-NOTE"),
        "{}",
        r.text()
    );
    std::fs::write(
        root.join("notes.json"),
        r#"{"format": "1.3", "interactions": "PRIVATE-NOTE"}"#,
    )
    .unwrap();
    let r = start("notes.json", &with);
    assert!(r.text().contains("is not a cassette"), "{}", r.text());
    assert!(!r.text().contains("PRIVATE-NOTE"), "{}", r.text());
    drop(serve.stdin.take());
    serve.wait().unwrap();
}

/// A check (`POST test/check`) and a start's tolerances (`match`) are read with the
/// spec's rules: a mistake is a 400 naming it, and what only a started program has
/// (`exit`, `output`) is refused.
#[test]
fn serves_checks_and_tolerances_are_read_as_a_spec_and_refused_when_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let root = format!("--root={}", dir.path().display());
    let (mut serve, url, secret) = serve(&[&root], &[]);
    let with = [
        ("x-agentproxy-secret", secret.as_str()),
        ("content-type", "application/json"),
    ];
    let post = |path: &str, body: serde_json::Value| {
        support::http::request(&url, "POST", path, &with, body.to_string().as_bytes())
    };
    let bad_match = serde_json::json!({"protocol": agentproxy::commands::serve::PROTOCOL, "name": "t", "cassette": "c.json",
        "mode": "record", "match": {"ignore": ["user"]}});
    let r = post("/_agentproxy/test", bad_match);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("match.ignore[0]"), "{}", r.text());
    let r = start_test(&url, "c.json", "record", &with[..1]);
    assert_eq!(r.status, 200, "{}", r.text());
    for (check, error) in [
        (serde_json::json!({"cals": ["x"]}), "unknown key `cals`"),
        (
            serde_json::json!({"exit": 0}),
            "`exit` and `output` are about a program",
        ),
    ] {
        let r = post("/_agentproxy/test/check", check);
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.text().contains(error), "{}", r.text());
    }
    // Nothing happened yet: `calls: []` holds, a call asked for fails in the runner's words.
    let r = post("/_agentproxy/test/check", serde_json::json!({"calls": []}));
    assert_eq!(r.json()["failures"], serde_json::json!([]), "{}", r.text());
    let r = post(
        "/_agentproxy/test/check",
        serde_json::json!({"calls": ["get_weather"]}),
    );
    let failures = r.json()["failures"].clone();
    assert!(
        failures[0]
            .as_str()
            .unwrap()
            .contains("missing call: get_weather"),
        "{failures}"
    );
    drop(serve.stdin.take());
    serve.wait().unwrap();
}

/// Several tests at once in one serve (a harness's concurrent tests): each request names
/// its test in `x-agentproxy-test`; one that names none while several run is refused, as
/// is a control request that could be about any of them.
#[test]
fn serve_runs_tests_at_once_each_request_naming_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let root = format!("--root={}", dir.path().display());
    let (mut serve, url, secret) = serve(&[&root, "--upstream", "http://127.0.0.1:9"], &[]);
    let control = |method: &str, path: &str, test: Option<&str>, body: &str| {
        let mut headers = vec![
            ("x-agentproxy-secret", secret.as_str()),
            ("content-type", "application/json"),
        ];
        headers.extend(test.map(|t| ("x-agentproxy-test", t)));
        support::http::request(&url, method, path, &headers, body.as_bytes())
    };
    for name in ["a b", "c"] {
        let body = serde_json::json!({"protocol": agentproxy::commands::serve::PROTOCOL, "name": name,
            "cassette": format!("{name}.json"), "mode": "record"});
        let r = control("POST", "/_agentproxy/test", None, &body.to_string());
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let r = control("GET", "/_agentproxy/test", None, "");
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(
        r.text()
            .contains("2 tests are running and this request names none"),
        "{}",
        r.text()
    );
    let chat = r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#;
    let r = control("POST", "/v1/chat/completions", None, chat);
    assert_eq!(r.status, 409, "{}", r.text());
    // Named (percent-encoded), the request is its test's: here a failed upstream.
    let r = control("POST", "/v1/chat/completions", Some("a%20b"), chat);
    assert_eq!(r.status, 502, "{}", r.text());
    let r = control("GET", "/_agentproxy/test", Some("c"), "");
    assert_eq!(r.json()["requests"], serde_json::json!([]), "{}", r.text());
    let r = control("GET", "/_agentproxy/test", Some("%FF"), "");
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("percent-encoded UTF-8"), "{}", r.text());
    let r = control("GET", "/_agentproxy/test", Some("gone"), "");
    assert_eq!(r.status, 409, "{}", r.text());
    assert!(
        r.text().contains("test `gone` is not running"),
        "{}",
        r.text()
    );
    let r = control("DELETE", "/_agentproxy/test", Some("a%20b"), "");
    assert_eq!(
        r.json()["upstream_errors"].as_array().unwrap().len(),
        1,
        "{}",
        r.text()
    );
    // The verdict is serve's: the failed upstream request fails the test, to be shown.
    assert_eq!(r.json()["status"], "failed", "{}", r.text());
    assert_eq!(
        r.json()["failures"],
        r.json()["upstream_errors"],
        "{}",
        r.text()
    );
    // One left: a request that names none is its; it failed in its own code only.
    let r = control(
        "DELETE",
        "/_agentproxy/test",
        None,
        r#"{"failure": "AssertionError"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], "failed", "{}", r.text());
    assert_eq!(r.json()["failures"], serde_json::json!([]), "{}", r.text());
    assert_eq!(
        r.json()["cassette"].as_str().unwrap().rsplit('/').next(),
        Some("c.json")
    );
    drop(serve.stdin.take());
    serve.wait().unwrap();
}

/// A request carrying agentproxy's placeholder key is never sent upstream: recording it
/// fails at once, naming the variable to set.
#[tokio::test(flavor = "multi_thread")]
async fn a_placeholder_key_is_never_sent_upstream() {
    let fake = support::fake_openai::FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let upstream = fake.url();
    let d = Daemon::start(
        &["record", "--cassette", "c.json", "--upstream", &upstream],
        dir.path(),
    );
    let url = d.url.clone();
    let r = tokio::task::spawn_blocking(move || {
        let body =
            serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        support::http::request(
            &url,
            "POST",
            "/v1/chat/completions",
            &[
                ("content-type", "application/json"),
                ("authorization", "Bearer agentproxy-replay-placeholder"),
            ],
            body.to_string().as_bytes(),
        )
    })
    .await
    .unwrap();
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(
        r.text().contains("placeholder key")
            && r.text()
                .contains("set OPENAI_API_KEY or CODEX_API_KEY to record"),
        "{}",
        r.text()
    );
    assert_eq!(fake.request_count(), 0);
    let (code, stderr) = d.interrupt();
    assert_eq!(code, 3, "{stderr}");
    fake.stop().await;
}

/// With `--record-other-hosts`, a tunnel to another host that does not carry HTTP (a
/// server that speaks first, as mail and databases do) is passed through, not recorded.
#[test]
fn a_tunnel_that_is_not_http_passes_through_while_recording_other_hosts() {
    use std::io::Write;
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let banner = std::thread::spawn(move || {
        let (mut conn, _) = server.accept().unwrap();
        conn.write_all(b"220 mail.test ready\r\n").unwrap();
    });
    let client = format!(
        r#"
import os, socket, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
s = socket.create_connection((proxy.hostname, proxy.port), timeout=10)
s.sendall(b"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
print(s.recv(100).decode().strip())
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin())
        // Uncontained: a contained program is refused the host's loopback while recording.
        .args([
            "record",
            "--record-other-hosts",
            "--contain",
            "off",
            "--cassette",
            "c.json",
            "--upstream",
            "http://127.0.0.1:9",
            "--",
            "python3",
            "-c",
            &client,
        ])
        .current_dir(dir.path())
        .env_remove("CI")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    banner.join().unwrap();
    assert_eq!(stdout.trim(), "220 mail.test ready", "{stderr}");
    // Nothing was recorded of it; it is named as passed through.
    assert!(
        stderr.contains("the program made no request through the proxy"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "--record-other-hosts records them): 127.0.0.1:{port} ×1"
        )),
        "{stderr}"
    );
    assert!(!dir.path().join("c.json").exists());
}

/// An upstream that is the proxy itself: the request that comes back is refused at once
/// (no loop until descriptors run out), and the recording fails naming why.
#[test]
fn an_upstream_pointing_at_the_proxy_itself_is_caught_on_the_first_request() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let upstream = format!("http://127.0.0.1:{port}");
    let post = r#"
import json, os, urllib.request, urllib.error
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
                             headers={"content-type": "application/json"})
try:
    urllib.request.urlopen(req, timeout=20)
except urllib.error.HTTPError as e:
    print("status", e.code)
"#;
    let started = std::time::Instant::now();
    let r = run(
        &[
            "record",
            "--cassette",
            "c.json",
            "--listen",
            &listen,
            "--upstream",
            &upstream,
            "--",
            "python3",
            "-c",
            post,
        ],
        dir.path(),
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("is this proxy itself"), "{}", r.stderr);
    assert!(!dir.path().join("c.json").exists());
}

/// A serve test that ends while one of its exchanges waits for the upstream: the end waits
/// for it, and the cassette has it.
#[tokio::test(flavor = "multi_thread")]
async fn a_serve_test_ending_with_an_exchange_in_flight_records_it() {
    let fake = support::fake_openai::FakeOpenAi::start().await;
    fake.set_latency(std::time::Duration::from_millis(800));
    let dir = tempfile::tempdir().unwrap();
    let root = format!("--root={}", dir.path().display());
    let upstream = fake.url();
    let (mut serve, url, secret) = serve(&[&root, "--upstream", &upstream], &[]);
    let header = [("x-agentproxy-secret", secret.as_str())];
    let r = start_test(&url, "c.json", "record", &header);
    assert_eq!(r.status, 200, "{}", r.text());
    let asking = {
        let url = url.clone();
        tokio::task::spawn_blocking(move || {
            let body =
                serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
            support::http::post_json(&url, "/v1/chat/completions", &body)
        })
    };
    support::until("the request to reach the upstream", || {
        fake.request_count() == 1
    })
    .await;
    let ended = tokio::task::spawn_blocking(move || {
        let header = [("x-agentproxy-secret", secret.as_str())];
        support::http::request(&url, "DELETE", "/_agentproxy/test", &header, b"")
    })
    .await
    .unwrap();
    assert_eq!(asking.await.unwrap().status, 200);
    assert_eq!(ended.status, 200, "{}", ended.text());
    assert_eq!(ended.json()["written"], true, "{}", ended.text());
    let cassette: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("c.json")).unwrap()).unwrap();
    assert_eq!(cassette["interactions"].as_array().unwrap().len(), 1);
    drop(serve.stdin.take());
    serve.wait().unwrap();
    fake.stop().await;
}

/// A server on loopback that reads one request and writes `reply`: its port, and the
/// thread to join once the request was sent.
fn answering_once(reply: &'static [u8]) -> (u16, std::thread::JoinHandle<()>) {
    use std::io::{Read, Write};
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let answering = std::thread::spawn(move || {
        let (mut conn, _) = server.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = conn.read(&mut buf).unwrap();
        conn.write_all(reply).unwrap();
    });
    (port, answering)
}

/// A record daemon relaying `--mcp NAME=http://127.0.0.1:PORT/mcp`, and the answer it
/// relays to one JSON-RPC message posted to `/mcp/NAME`.
fn through_mcp_relay(
    dir: &Path,
    name: &str,
    port: u16,
    msg: &[u8],
) -> (Daemon, support::http::Reply) {
    let mcp = format!("{name}=http://127.0.0.1:{port}/mcp");
    let d = Daemon::start(
        &[
            "record",
            "--cassette",
            "c.json",
            "--upstream",
            "http://127.0.0.1:9",
            "--mcp",
            &mcp,
        ],
        dir,
    );
    let r = support::http::request(
        &d.url,
        "POST",
        &format!("/mcp/{name}"),
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        msg,
    );
    (d, r)
}

/// A streamable HTTP MCP server that asks for authorization: its `401` and its
/// `WWW-Authenticate` challenge reach the client through the relay (MCP's OAuth flow
/// starts from it).
#[test]
fn an_mcp_servers_authorization_challenge_reaches_the_client() {
    let (port, answering) = answering_once(
        b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer resource_metadata=\"http://auth.test/.well-known/oauth-protected-resource\"\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
    );
    let dir = tempfile::tempdir().unwrap();
    let body = br#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}"#;
    let (_d, r) = through_mcp_relay(dir.path(), "auth", port, body);
    answering.join().unwrap();
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(
        r.header("www-authenticate"),
        Some("Bearer resource_metadata=\"http://auth.test/.well-known/oauth-protected-resource\"")
    );
}

/// A streamable HTTP MCP server that answers a request with an HTTP error: the client gets
/// it, and the recording, which has no answer to replay, says so and exits 3.
#[test]
fn an_mcp_servers_http_error_fails_the_recording_naming_it() {
    let (port, answering) = answering_once(
        b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: 4\r\nconnection: close\r\n\r\noops",
    );
    let dir = tempfile::tempdir().unwrap();
    let body = br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "q"}}"#;
    let (d, r) = through_mcp_relay(dir.path(), "db", port, body);
    answering.join().unwrap();
    assert_eq!(r.status, 500, "{}", r.text());
    let (code, stderr) = d.interrupt();
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains(
            "MCP server `db`: an exchange was not recorded: the server answered HTTP 500"
        ),
        "{stderr}"
    );
}

/// A connection that sends nothing, and one that sends half a body, are closed by the
/// proxy (after its 30 s header timeout) rather than held for ever; meanwhile it answers.
#[test]
fn silent_and_stalled_connections_are_closed() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    // The header timeout (30 s) made short, so the test waits it out in a second.
    let args = [
        "record",
        "--cassette",
        "c.json",
        "--upstream",
        "http://127.0.0.1:9",
    ];
    let d = Daemon::start_with_env(&args, dir.path(), &[("AGENTPROXY_HEADER_TIMEOUT", "1s")]);
    let addr = d.url.trim_start_matches("http://").to_owned();
    // Connected (and the half body sent) before the proxy is asked anything else.
    let probe = |half_body: bool| {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .unwrap();
        if half_body {
            s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"model\":")
                .unwrap();
        }
        let started = std::time::Instant::now();
        std::thread::spawn(move || {
            let mut answer = Vec::new();
            // Ends when the proxy closes the connection (a read timeout is an error).
            let ended = s.read_to_end(&mut answer).is_ok();
            (
                ended,
                started.elapsed(),
                String::from_utf8_lossy(&answer).into_owned(),
            )
        })
    };
    let silent = probe(false);
    let stalled = probe(true);
    let r = support::http::request(&d.url, "GET", "/health", &[], b"");
    assert_eq!(r.status, 404, "the proxy answers meanwhile");
    for (which, probe) in [("silent", silent), ("stalled", stalled)] {
        let (ended, took, answer) = probe.join().unwrap();
        assert!(ended, "{which}: still open after {took:?}");
        assert!(
            took >= std::time::Duration::from_millis(900)
                && took < std::time::Duration::from_secs(15),
            "{which}: {took:?}"
        );
        if which == "stalled" {
            assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        }
    }
}

/// A stand-in started as another user below a replay cannot read the program's
/// environment, but it can read agentproxy's command line above it: it starts nothing.
#[test]
fn a_stand_in_running_as_another_user_below_a_replay_starts_nothing() {
    // SAFETY: geteuid only reads process state.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: switching to another user needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    // A copy the other user can reach, wherever the build directory is.
    let standin = d.join("agentproxy");
    std::fs::hard_link(bin(), &standin)
        .or_else(|_| std::fs::copy(bin(), &standin).map(|_| ()))
        .unwrap();
    std::fs::write(d.join("c.json"), cassette_with("")).unwrap();
    let script = format!(
        "setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin \
         {} mcp --name db -- touch started",
        standin.display()
    );
    let out = Command::new(bin())
        .args(["replay", "--cassette", "c.json", "--", "sh", "-c", &script])
        .current_dir(d)
        .env_remove("AGENTPROXY_URL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!d.join("started").exists(), "the real server ran: {stderr}");
    assert!(
        stderr.contains("is an agentproxy session (`")
            && stderr.contains("not starting the server, in case this is a replay"),
        "{stderr}"
    );
}

/// A crash case whose request is held by a worker that left the program's process group
/// (`setsid`): the kill reaches the worker too, so it neither gets an answer nor outlives
/// the run, recording and replaying.
#[tokio::test(flavor = "multi_thread")]
async fn a_crash_kills_the_worker_that_detached_with_setsid() {
    let fake = support::fake_openai::FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_owned();
    let agent = r#"
import json, os, sys, time, urllib.request
def ask():
    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body.encode(),
        headers={"content-type": "application/json", "authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "k")})
    return urllib.request.urlopen(request, timeout=60).read()
ask()
pid = os.fork()
if pid == 0:
    os.setsid()
    me = os.getpid()
    open(f"worker-{me}", "w").close()
    try:
        ask()
        open(f"answered-{me}", "w").close()
        os._exit(0)
    except Exception:
        time.sleep(60)
        os._exit(1)
os.waitpid(pid, 0)
print("done")
"#;
    std::fs::write(d.join("agent.py"), agent).unwrap();
    std::fs::write(
        d.join("s.yaml"),
        "app:\n  command: [python3, agent.py]\ncases:\n  - name: detached\n    input: go\n    crash: {after: {request: 1}}\n",
    )
    .unwrap();
    let upstream = fake.url();
    let record = [
        "test",
        "s.yaml",
        "--mode",
        "record",
        "--upstream",
        &upstream,
    ];
    for args in [&record[..], &["test", "s.yaml", "--mode", "replay"]] {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let cwd = d.clone();
        let r = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run(&args, &cwd)
        })
        .await
        .unwrap();
        assert_eq!(r.code, 0, "{}", r.stderr);
        let named = |prefix: &str| -> Vec<u32> {
            std::fs::read_dir(&d)
                .unwrap()
                .filter_map(|e| {
                    let name = e.unwrap().file_name().into_string().unwrap();
                    name.strip_prefix(prefix)?.parse().ok()
                })
                .collect()
        };
        let (workers, answered) = (named("worker-"), named("answered-"));
        assert_eq!(workers.len(), 2, "{workers:?}");
        assert_eq!(answered.len(), 1, "only the restart's worker: {answered:?}");
        let killed = workers.iter().find(|w| !answered.contains(w)).unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{killed}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty() || stat.contains(") Z "),
            "the detached worker {killed} outlived the run: {stat}"
        );
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("worker-") || name.starts_with("answered-") {
                std::fs::remove_file(path).unwrap();
            }
        }
    }
    fake.stop().await;
}

/// Containment as an unprivileged user (a user namespace, then the network namespace):
/// the program keeps its own ids (mapped to themselves), its network has only loopback,
/// and a server on the host's loopback is out of its reach. Where the system refuses the
/// namespaces to that user, the run says why and the program still runs.
#[test]
fn an_unprivileged_user_is_contained_in_a_user_namespace_or_told_why_not() {
    // SAFETY: geteuid only reads process state.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: switching to an unprivileged user needs root");
        return;
    }
    let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = host.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    let proxy = d.join("agentproxy");
    std::fs::hard_link(bin(), &proxy)
        .or_else(|_| std::fs::copy(bin(), &proxy).map(|_| ()))
        .unwrap();
    std::fs::write(d.join("c.json"), cassette_with("")).unwrap();
    // The program: its ids inside, its interfaces, then a connection to the host's server.
    let program = format!(
        "cat /proc/self/uid_map; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' '; echo; \
         (exec 3<>/dev/tcp/127.0.0.1/{port} && echo reached || echo unreachable) 2>/dev/null"
    );
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "env",
            "-i",
            "PATH=/usr/bin:/bin",
        ])
        .arg(&proxy)
        .args([
            "replay",
            "--cassette",
            "c.json",
            "--",
            "bash",
            "-c",
            &program,
        ])
        .current_dir(d)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if stderr.contains("agentproxy: egress: contained (network namespace)") {
        assert!(out.status.success(), "{stderr}");
        let ids: Vec<&str> = stdout
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        assert_eq!(ids, ["65534", "65534", "1"], "{stdout}");
        assert!(stdout.contains("\nlo \n"), "only loopback: {stdout}");
        assert!(stdout.contains("unreachable"), "{stdout}");
    } else {
        assert!(
            stderr.contains("agentproxy: egress: not contained: the system does not let this user make a network namespace"),
            "{stderr}"
        );
        assert!(stdout.contains("reached"), "{stdout}");
    }
    drop(host);
}

/// While its program runs contained, a session's own listener on the host is no forward
/// proxy: another process on the host can neither relay through it (CONNECT, absolute
/// form) nor have its traffic named as the program's.
#[test]
fn the_host_listener_of_a_contained_session_relays_for_nobody() {
    use std::io::{Read, Write};
    let target = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let target_port = target.local_addr().unwrap().port();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let listen = format!("127.0.0.1:{port}");
    let child = Command::new(bin())
        .args([
            "record",
            "--cassette",
            "c.json",
            "--upstream",
            "http://127.0.0.1:9",
        ])
        .args([
            "--listen",
            &listen,
            "--",
            "python3",
            "-c",
            // An answer from the proxy inside means the session serves the namespace's
            // listener, which it marks contained first.
            "import os, time, urllib.request as u\n\
             try: u.urlopen(os.environ['AGENTPROXY_URL'] + '/health', timeout=10)\n\
             except Exception: pass\n\
             open('started', 'w').close()\n\
             time.sleep(3)\n",
        ])
        .current_dir(d)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !d.join("started").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for request in [
        format!("CONNECT 127.0.0.1:{target_port} HTTP/1.1\r\nHost: 127.0.0.1:{target_port}\r\n\r\n"),
        format!("GET http://127.0.0.1:{target_port}/ HTTP/1.1\r\nHost: 127.0.0.1:{target_port}\r\nConnection: close\r\n\r\n"),
    ] {
        let mut s = std::net::TcpStream::connect(&listen).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut answer = vec![0; 512];
        let n = s.read(&mut answer).unwrap();
        let answer = String::from_utf8_lossy(&answer[..n]);
        assert!(answer.starts_with("HTTP/1.1 405"), "{request}: {answer}");
        assert!(answer.contains("this listener is not a forward proxy"), "{answer}");
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("egress: contained"), "{stderr}");
    assert!(!stderr.contains(&target_port.to_string()), "{stderr}");
    // Nothing reached the target.
    target.set_nonblocking(true).unwrap();
    assert!(target.accept().is_err());
}

/// A record run whose program reached only another host through the proxy (a tunnel,
/// not recorded) says so instead of "no request": the proxy saw it, and names it.
#[test]
fn a_record_run_that_only_reached_other_hosts_says_so() {
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = other.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        use std::io::{Read, Write};
        if let Ok((mut s, _)) = other.accept() {
            let mut buf = [0; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
        }
    });
    let program = format!(
        "import http.client, os, urllib.parse\n\
         p = urllib.parse.urlsplit(os.environ['HTTPS_PROXY'])\n\
         c = http.client.HTTPConnection(p.hostname, p.port, timeout=10)\n\
         c.set_tunnel('127.0.0.1', {port})\n\
         c.request('GET', '/')\n\
         print(c.getresponse().read().decode())\n"
    );
    let dir = tempfile::tempdir().unwrap();
    // Uncontained: the only other host a test may reach is on the host's loopback, which
    // a contained program is refused while recording.
    let r = run(
        &[
            "record",
            "--cassette",
            "c.json",
            "--upstream",
            "http://127.0.0.1:9",
            "--contain",
            "off",
            "--",
            "python3",
            "-c",
            &program,
        ],
        dir.path(),
    );
    server.join().unwrap();
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("the program made no request through the proxy but to other hosts (127.0.0.1:{port}), which are not recorded (--record-other-hosts records them), so no cassette was written")),
        "{}",
        r.stderr
    );
}

#[test]
fn a_program_that_reaches_hundreds_of_hosts_gets_a_bounded_egress_summary() {
    // 300 tunnels to distinct names, each refused by the replay: stderr names 20 of them,
    // `--json` the first 256 and counts the rest under "*".
    let program = "import http.client, os, urllib.parse\n\
         p = urllib.parse.urlsplit(os.environ['HTTPS_PROXY'])\n\
         for n in range(300):\n    \
             c = http.client.HTTPConnection(p.hostname, p.port, timeout=10)\n    \
             c.set_tunnel(f'h{n:03}.invalid', 443)\n    \
             try:\n        c.connect()\n    except OSError:\n        pass\n    \
             c.close()\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("c.json"), cassette_with("")).unwrap();
    let out = Command::new(bin())
        .args([
            "replay",
            "--cassette",
            "c.json",
            "--json",
            "--contain",
            "off",
        ])
        .args(["--", "python3", "-c", program])
        .current_dir(dir.path())
        .env_remove("CI")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let egress = summary["egress"].as_object().unwrap();
    assert_eq!(egress.len(), 257, "hosts named");
    assert_eq!(egress["h000.invalid:443"]["refused"], 1);
    assert_eq!(egress["*"]["refused"], 44);
    let line = (stderr.lines())
        .find(|l| l.contains("h000.invalid:443"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.len() < 1000, "{line}");
    assert!(
        line.contains("and 236 more hosts, other hosts (beyond the first 256) ×44"),
        "{line}"
    );
}

/// agentproxy killed with SIGKILL (a CI job's timeout) runs no code, yet the program it
/// started goes with it, contained or not.
#[test]
fn a_program_does_not_outlive_a_kill_9_of_agentproxy() {
    for contain in ["off", "auto"] {
        let dir = tempfile::tempdir().unwrap();
        let mut proxy = Command::new(bin())
            .args([
                "record",
                "--cassette",
                "c.json",
                "--upstream",
                "http://127.0.0.1:9",
            ])
            .args([
                "--contain",
                contain,
                "--",
                "sh",
                "-c",
                "echo $$ > pid; exec sleep 60",
            ])
            .current_dir(dir.path())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid_file = dir.path().join("pid");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let pid = loop {
            let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
            if let Ok(pid) = text.trim().parse::<i32>() {
                break pid;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{contain}: the program never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        proxy.kill().unwrap();
        proxy.wait().unwrap();
        let gone = std::time::Instant::now() + std::time::Duration::from_secs(5);
        // Gone, or a zombie its new parent has yet to reap.
        let alive = || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            !stat.is_empty() && stat.split_whitespace().nth(2) != Some("Z")
        };
        while alive() && std::time::Instant::now() < gone {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(!alive(), "{contain}: the program {pid} outlived agentproxy");
    }
}
