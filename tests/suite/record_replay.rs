//! The real binary recording against the fake OpenAI upstream, then replaying with the
//! upstream unused: streams, conversions between streamed and whole bodies, recorded
//! errors, FIFO repeats, secrets, compression, timeouts, signals and concurrency.

use crate::support;

use std::path::Path;
use std::time::Duration;

use agentproxy::cassette::Body;
use agentproxy::matching::{key::KeyHash, normalize::Rules, request_key};
use serde_json::{json, Value};
use support::fake_openai::FakeOpenAi;
use support::{http, proxy::Daemon};

const CHAT: &str = "/v1/chat/completions";

fn weather_request(city: &str, stream: bool) -> Value {
    let mut body = json!({
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are a weather bot."},
            {"role": "user", "content": format!("What's the weather in {city} and Tokyo?")}
        ],
        "tools": [
            {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
        ]
    });
    if stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

fn record_daemon(dir: &Path, fake: &FakeOpenAi, extra: &[&str]) -> Daemon {
    let url = fake.url();
    let mut args = vec!["record", "--cassette", "c.json", "--upstream", url.as_str()];
    args.extend_from_slice(extra);
    Daemon::start(&args, dir)
}

fn replay_daemon(dir: &Path) -> Daemon {
    Daemon::start(&["replay", "--cassette", "c.json"], dir)
}

fn cassette(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("c.json")).expect("cassette written")).unwrap()
}

/// Run blocking client code off the runtime that drives the fake upstream.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// The SSE events of a body, as (event, data) pairs.
fn events(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| e.trim_start_matches("data: ").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_replays_byte_for_byte_and_converts_both_ways() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake, &[]);
    let url = d.url.clone();
    let (streamed, whole) = blocking(move || {
        (
            http::post_json(&url, CHAT, &weather_request("Paris", true)),
            http::post_json(&url, CHAT, &weather_request("Oslo", false)),
        )
    })
    .await;
    assert_eq!(streamed.status, 200);
    assert!(streamed
        .header("content-type")
        .unwrap()
        .starts_with("text/event-stream"));
    let recorded_stream = streamed.text();
    assert!(events(&recorded_stream).len() > 10, "{recorded_stream}");
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
    let c = cassette(dir.path());
    let it = &c["interactions"][0];
    // The assembled message carries both parallel tool calls with whole arguments.
    let calls = &it["response"]["body"]["json"]["choices"][0]["message"]["tool_calls"];
    assert_eq!(calls.as_array().unwrap().len(), 2, "{it}");
    let args: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args["city"], "Paris");
    assert_eq!(
        it["response"]["events"].as_array().unwrap().last().unwrap()["data"],
        "[DONE]"
    );

    let before = fake.request_count();
    // One recording per key here, each asked for twice (streamed and whole).
    let d = Daemon::start(
        &["replay", "--cassette", "c.json", "--repeat", "last"],
        dir.path(),
    );
    let url = d.url.clone();
    let (same, assembled, whole_again, synthesized) = blocking(move || {
        (
            http::post_json(&url, CHAT, &weather_request("Paris", true)),
            http::post_json(&url, CHAT, &weather_request("Paris", false)),
            http::post_json(&url, CHAT, &weather_request("Oslo", false)),
            http::post_json(&url, CHAT, &weather_request("Oslo", true)),
        )
    })
    .await;
    // A streaming client gets the recorded events, boundaries and bytes intact.
    assert_eq!(same.text(), recorded_stream);
    // A non-streaming client gets the assembled message.
    assert_eq!(assembled.status, 200);
    assert_eq!(assembled.json(), it["response"]["body"]["json"]);
    // A whole recording serves a whole reply, and a stream synthesized from it.
    assert_eq!(whole_again.json(), whole.json());
    let synth = events(&synthesized.text());
    assert_eq!(synth.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = synth[..synth.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert!(chunks.iter().all(|c| c["id"] == whole.json()["id"]));
    assert!(
        chunks.last().unwrap()["usage"].is_object(),
        "include_usage honoured"
    );
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        fake.request_count(),
        before,
        "replay must not touch the upstream"
    );
    fake.stop().await;
}

/// A recorded stream keeps when each event came; `replay --realtime` sends each then, and
/// a plain replay at once.
#[tokio::test(flavor = "multi_thread")]
async fn a_stream_keeps_when_each_event_came_and_realtime_replays_it_so() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake, &[]);
    let url = d.url.clone();
    blocking(move || http::post_json(&url, CHAT, &weather_request("Paris", true))).await;
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
    fake.stop().await;
    let mut c = cassette(dir.path());
    let response = &mut c["interactions"][0]["response"];
    let n = response["events"].as_array().unwrap().len();
    let at: Vec<u64> = (response["event_ms"].as_array().unwrap().iter())
        .map(|t| t.as_u64().unwrap())
        .collect();
    assert_eq!(at.len(), n);
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "{at:?}");
    // The last event 400 ms in, the rest at once; the whole latency said to be 0.
    let mut at = vec![0; n];
    at[n - 1] = 400;
    response["event_ms"] = json!(at);
    c["interactions"][0]["latency_ms"] = json!(0);
    std::fs::write(dir.path().join("c.json"), c.to_string()).unwrap();
    for (flags, slow) in [(&["--realtime"][..], true), (&[][..], false)] {
        let args = [&["replay", "--cassette", "c.json"][..], flags].concat();
        let d = Daemon::start(&args, dir.path());
        let url = d.url.clone();
        let took = blocking(move || {
            let started = std::time::Instant::now();
            let reply = http::post_json(&url, CHAT, &weather_request("Paris", true));
            assert_eq!(events(&reply.text()).len(), n);
            started.elapsed()
        })
        .await;
        let (code, err) = d.interrupt();
        assert_eq!(code, 0, "{err}");
        let paced = took >= std::time::Duration::from_millis(380);
        assert_eq!(paced, slow, "{flags:?}: {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn identical_requests_replay_in_recorded_order_and_errors_replay_as_recorded() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake, &[]);
    fake.fail_next(500, 1);
    let url = d.url.clone();
    let recorded = blocking(move || {
        (0..3)
            .map(|_| http::post_json(&url, CHAT, &weather_request("Rome", false)))
            .map(|r| (r.status, r.text()))
            .collect::<Vec<_>>()
    })
    .await;
    assert_eq!(recorded[0].0, 500);
    assert_eq!((recorded[1].0, recorded[2].0), (200, 200));
    assert_ne!(recorded[1].1, recorded[2].1, "fresh ids per call");
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");

    let d = replay_daemon(dir.path());
    let url = d.url.clone();
    let replayed = blocking(move || {
        (0..3)
            .map(|_| http::post_json(&url, CHAT, &weather_request("Rome", false)))
            .map(|r| (r.status, r.text()))
            .collect::<Vec<_>>()
    })
    .await;
    assert_eq!(replayed[0].0, 500);
    for (a, b) in recorded.iter().zip(&replayed).skip(1) {
        assert_eq!(
            serde_json::from_str::<Value>(&a.1).unwrap(),
            serde_json::from_str::<Value>(&b.1).unwrap()
        );
    }
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
    fake.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn byte_identical_requests_are_matched_by_digest_and_other_spellings_by_key() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake, &[]);
    let body = serde_json::to_vec(&weather_request("Oslo", false)).unwrap();
    let (url, b) = (d.url.clone(), body.clone());
    let recorded = blocking(move || post_bytes(&url, &b)).await;
    assert_eq!(recorded.status, 200);
    d.interrupt();
    let mut c = cassette(dir.path());
    let it = &mut c["interactions"][0];
    assert_eq!(
        it["request"]["body_xxh3"],
        format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&body)),
        "the digest covers the bytes as sent"
    );
    // Break the recorded key: only the digest can still find this recording.
    it["key"] = json!("0".repeat(64));
    std::fs::write(
        dir.path().join("c.json"),
        serde_json::to_vec_pretty(&c).unwrap(),
    )
    .unwrap();

    let d = replay_daemon(dir.path());
    let url = d.url.clone();
    let (same, respelled, elsewhere) = blocking(move || {
        let respelled = format!(
            "{}\n",
            serde_json::to_string_pretty(&weather_request("Oslo", false)).unwrap()
        );
        // Before the recording's one use is taken.
        let elsewhere = http::request(&url, "POST", "/v1/embeddings", &[], &body);
        (
            post_bytes(&url, &body),
            post_bytes(&url, respelled.as_bytes()),
            elsewhere,
        )
    })
    .await;
    assert_eq!(
        elsewhere.status, 400,
        "the same bytes on another route are another request"
    );
    assert_eq!(same.status, 200, "{}", same.text());
    assert_eq!(same.json(), recorded.json());
    assert_eq!(
        respelled.status, 400,
        "a new spelling is keyed, and the key was broken"
    );
    let (code, err) = d.interrupt();
    assert_eq!(code, 1, "{err}");
    fake.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_spelled_otherwise_are_keyed_from_their_bytes_secrets_and_all() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let env = [("MY_SERVICE_TOKEN", "tok-very-secret-value-42")];
    let url = fake.url();
    let args = ["record", "--cassette", "c.json", "--upstream", url.as_str()];
    let d = Daemon::start_with_env(&args, dir.path(), &env);
    let mut whole = weather_request("Oslo", false);
    whole["messages"][1]["content"] = json!("Oslo, with tok-very-secret-value-42 please");
    let streamed = weather_request("Paris", true);
    let (purl, w, s) = (d.url.clone(), whole.clone(), streamed.clone());
    let recorded = blocking(move || {
        [
            http::post_json(&purl, CHAT, &w),
            http::post_json(&purl, CHAT, &s),
        ]
    })
    .await;
    assert!(recorded.iter().all(|r| r.status == 200));
    d.interrupt();

    let d = Daemon::start_with_env(&["replay", "--cassette", "c.json"], dir.path(), &env);
    let url = d.url.clone();
    let (w, s) = (respelled(&whole), respelled(&streamed));
    let replayed = blocking(move || {
        assert!(
            w.contains("s\\u0065cr\\u0065t"),
            "the secret is spelled with escapes: {w}"
        );
        [w.clone(), s, w].map(|body| post_bytes(&url, body.as_bytes()))
    })
    .await;
    assert_eq!(replayed[0].status, 200, "{}", replayed[0].text());
    assert_eq!(replayed[0].json(), recorded[0].json());
    assert_eq!(
        replayed[1].text(),
        recorded[1].text(),
        "the stream as recorded"
    );
    assert_eq!(replayed[2].status, 400, "the one recording was taken");
    let (code, err) = d.interrupt();
    assert_eq!(code, 1, "{err}");

    // Format 2.0 keys with XXH3-128; a 1.x cassette's SHA-256 keys are kept and matched,
    // and keys of both kinds in one cassette are made anew.
    let mut c = cassette(dir.path());
    assert_eq!(c["format"], "2.1");
    assert!(c["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["key"].as_str().unwrap().len() == 32));
    let sha256 = Rules::default().hashed_with(KeyHash::Sha256);
    c["format"] = json!("1.4");
    for it in c["interactions"].as_array_mut().unwrap() {
        let body = Body::Json(it["request"]["body"]["json"].clone().into());
        let key = request_key(
            it["route"].as_str().unwrap(),
            "POST",
            CHAT,
            Some(&body),
            &sha256,
        );
        it["key"] = json!(key);
        it["request"]["body_xxh3"] = Value::Null;
    }
    // Mixed: the second key is an XXH3-long prefix of its SHA-256, right for neither.
    let one_kind = c.clone();
    let mut mixed = c;
    mixed["interactions"][1]["key"] =
        one_kind["interactions"][1]["key"].as_str().unwrap()[..32].into();
    for (file, c) in [("old.json", &one_kind), ("mixed.json", &mixed)] {
        std::fs::write(dir.path().join(file), serde_json::to_vec(c).unwrap()).unwrap();
        let d = Daemon::start_with_env(&["replay", "--cassette", file], dir.path(), &env);
        let url = d.url.clone();
        let (w, s) = (respelled(&whole), respelled(&streamed));
        let replayed = blocking(move || [w, s].map(|body| post_bytes(&url, body.as_bytes()))).await;
        assert_eq!(replayed[0].json(), recorded[0].json(), "{file}");
        assert_eq!(replayed[1].text(), recorded[1].text(), "{file}");
        let (code, err) = d.interrupt();
        assert_eq!(code, 0, "{file}: {err}");
    }
    fake.stop().await;
}

/// The `THP_enabled` line of a process's status, when the kernel writes one.
fn huge_pages(pid: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("THP_enabled:"))?;
    Some(line.trim().to_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recording_process_takes_no_huge_pages_and_its_program_gets_them_back() {
    let Some(here) = huge_pages("self") else {
        eprintln!("this kernel writes no THP_enabled line; nothing to check");
        return;
    };
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake, &[]);
    assert_eq!(
        huge_pages(&d.pid().to_string()).as_deref(),
        Some("0"),
        "recording"
    );
    let purl = d.url.clone();
    let r = blocking(move || http::post_json(&purl, CHAT, &weather_request("Oslo", false))).await;
    assert_eq!(r.status, 200);
    d.interrupt();
    let d = replay_daemon(dir.path());
    assert_eq!(
        huge_pages(&d.pid().to_string()),
        Some(here.clone()),
        "replaying"
    );
    d.interrupt();
    let url = fake.url();
    let out = std::process::Command::new(support::proxy::bin())
        .args([
            "record",
            "--cassette",
            "c2.json",
            "--upstream",
            &url,
            "--contain",
            "off",
        ])
        .args(["--", "sh", "-c", "grep THP_enabled /proc/self/status"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("THP_enabled:\t{here}")),
        "the program: {stdout}"
    );
    fake.stop().await;
}

/// `v` as JSON text spelled unlike serde_json: each object's keys in reverse order, space
/// after each colon, and every `e` and `/` in strings escaped.
fn respelled(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let members: Vec<String> = (map.iter().rev())
                .map(|(k, v)| format!("{}: {}", respelled(&json!(k)), respelled(v)))
                .collect();
            format!("{{ {} }}", members.join(",\n  "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(respelled).collect();
            format!("[{}]", items.join(", "))
        }
        Value::String(_) => v.to_string().replace('e', "\\u0065").replace('/', "\\/"),
        other => other.to_string(),
    }
}

fn post_bytes(base: &str, body: &[u8]) -> http::Reply {
    http::request(
        base,
        "POST",
        CHAT,
        &[("content-type", "application/json")],
        body,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limits_keep_their_retry_headers() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake, &[]);
    fake.fail_next(429, 1);
    let url = d.url.clone();
    let r = blocking(move || http::post_json(&url, CHAT, &weather_request("Lima", false))).await;
    assert_eq!(r.status, 429);
    d.interrupt();
    let d = replay_daemon(dir.path());
    let url = d.url.clone();
    let r = blocking(move || http::post_json(&url, CHAT, &weather_request("Lima", false))).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(
        r.json()["error"]["code"],
        "rate_limit_exceeded",
        "{}",
        r.text()
    );
    d.interrupt();
    fake.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_never_reach_the_cassette() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let secret = "tok-very-secret-value-42";
    let url = fake.url();
    let d = Daemon::start_with_env(
        &["record", "--cassette", "c.json", "--upstream", url.as_str()],
        dir.path(),
        &[("MY_SERVICE_TOKEN", secret)],
    );
    let mut body = weather_request("Paris", false);
    body["messages"][0]["content"] = json!(format!("Use token {secret} for the calendar."));
    let purl = d.url.clone();
    let b = body.clone();
    let r = blocking(move || http::post_json(&purl, CHAT, &b)).await;
    assert_eq!(r.status, 200);
    // The upstream got the real values, credentials included.
    let logged = fake.requests().pop().unwrap();
    assert!(logged
        .header("authorization")
        .unwrap()
        .starts_with("Bearer sk-test"));
    assert!(String::from_utf8_lossy(&logged.body).contains(secret));
    d.interrupt();
    let text = std::fs::read_to_string(dir.path().join("c.json")).unwrap();
    assert!(!text.contains(secret), "{text}");
    assert!(
        !text.contains("body_xxh3"),
        "no digest of a body that held a secret"
    );
    assert!(text.contains("Use token ${MY_SERVICE_TOKEN} for the calendar."));
    assert!(
        !text.contains("sk-test"),
        "authorization must not be stored"
    );
    assert!(
        !text.to_lowercase().contains("set-cookie"),
        "cookies must not be stored"
    );
    assert!(!text.contains("x-request-id"));
    fake.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn compressed_upstream_answers_are_stored_decoded() {
    let fake = FakeOpenAi::start().await;
    fake.set_gzip(true);
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake, &[]);
    let url = d.url.clone();
    let (r, streamed) = blocking(move || {
        (
            http::post_json(&url, CHAT, &weather_request("Cairo", false)),
            http::post_json(&url, CHAT, &weather_request("Lima", true)),
        )
    })
    .await;
    assert_eq!(r.status, 200);
    assert!(r.header("content-encoding").is_none());
    assert_eq!(r.json()["object"], "chat.completion");
    // A compressed event stream reaches the program decoded, event by event.
    assert!(streamed.header("content-encoding").is_none());
    let evs = events(&streamed.text());
    assert_eq!(evs.last().map(String::as_str), Some("[DONE]"), "{evs:?}");
    assert!(evs.len() > 3, "{evs:?}");
    let (code, stderr) = d.interrupt();
    assert_eq!(code, 0, "{stderr}");
    let c = cassette(dir.path());
    assert_eq!(
        c["interactions"][0]["response"]["body"]["json"]["object"],
        "chat.completion"
    );
    let stream = &c["interactions"][1]["response"];
    assert_eq!(stream["events"].as_array().unwrap().len(), evs.len());
    assert_eq!(stream["body"]["json"]["object"], "chat.completion");
    fake.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_or_missing_upstreams_fail_clearly_and_record_nothing() {
    let fake = FakeOpenAi::start().await;
    fake.set_latency(Duration::from_secs(3));
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake, &["--upstream-timeout", "300ms"]);
    let url = d.url.clone();
    let r = blocking(move || http::post_json(&url, CHAT, &weather_request("Quito", false))).await;
    assert_eq!(r.status, 504);
    assert_eq!(r.json()["error"]["type"], "agentproxy_upstream_error");
    let (code, err) = d.interrupt();
    assert_eq!(code, 3, "{err}");
    assert!(!dir.path().join("c.json").exists());
    // What happened, not "the program made no request".
    assert!(
        err.contains("every request that reached the proxy failed"),
        "{err}"
    );
    assert!(err.contains("did not answer within"), "{err}");
    assert!(!err.contains("made no request"), "{err}");
    fake.stop().await;

    // A refused connection: the fake is gone.
    let gone = FakeOpenAi::start().await;
    let gone_url = gone.url();
    gone.stop().await;
    let d = Daemon::start(
        &[
            "record",
            "--cassette",
            "c.json",
            "--upstream",
            gone_url.as_str(),
        ],
        dir.path(),
    );
    let url = d.url.clone();
    let r = blocking(move || http::post_json(&url, CHAT, &weather_request("Quito", false))).await;
    assert_eq!(r.status, 502);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("failed to reach upstream"));
    let (code, err) = d.interrupt();
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("  - POST /v1/chat/completions"), "{err}");
    assert!(!err.contains("made no request"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_drains_in_flight_requests_into_the_cassette() {
    let fake = FakeOpenAi::start().await;
    fake.set_latency(Duration::from_millis(800));
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake, &[]);
    let url = d.url.clone();
    let pending = tokio::task::spawn_blocking(move || {
        http::post_json(&url, CHAT, &weather_request("Bern", true))
    });
    support::until("the request to reach the upstream", || {
        fake.request_count() == 1
    })
    .await;
    let (code, err) = blocking(move || d.interrupt()).await;
    let r = pending.await.unwrap();
    assert_eq!(r.status, 200);
    assert!(r.text().contains("[DONE]"));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        cassette(dir.path())["interactions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    fake.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_right_after_the_banner_is_handled_not_fatal() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..10 {
        let (code, err) = record_daemon(dir.path(), &fake, &[]).interrupt();
        assert_eq!(
            code, 3,
            "a handled SIGINT ends a zero-request record with 3:\n{err}"
        );
        assert!(err.contains("made no request through the proxy"), "{err}");
    }
    fake.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_during_record_keeps_the_previous_cassette() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake, &[]);
    let url = d.url.clone();
    blocking(move || http::post_json(&url, CHAT, &weather_request("Oslo", false))).await;
    d.interrupt();
    let before = std::fs::read(dir.path().join("c.json")).unwrap();
    let d = record_daemon(dir.path(), &fake, &[]);
    let url = d.url.clone();
    blocking(move || http::post_json(&url, CHAT, &weather_request("Riga", false))).await;
    drop(d); // SIGKILL
    assert_eq!(std::fs::read(dir.path().join("c.json")).unwrap(), before);
    fake.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sixty_four_concurrent_clients_lose_nothing() {
    const N: usize = 64;
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake, &[]);
    let cities: Vec<String> = (0..N).map(|i| format!("City{i}")).collect();
    let fan_out = |url: String, cities: Vec<String>| {
        blocking(move || {
            let handles: Vec<_> = cities
                .into_iter()
                .enumerate()
                .map(|(i, city)| {
                    let url = url.clone();
                    std::thread::spawn(move || {
                        let r = http::post_json(&url, CHAT, &weather_request(&city, i % 2 == 0));
                        (r.status, r.text())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        })
    };
    let recorded = fan_out(d.url.clone(), cities.clone()).await;
    assert!(recorded.iter().all(|(s, _)| *s == 200));
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        cassette(dir.path())["interactions"]
            .as_array()
            .unwrap()
            .len(),
        N
    );

    let d = replay_daemon(dir.path());
    let replayed = fan_out(d.url.clone(), cities).await;
    for ((s1, b1), (s2, b2)) in recorded.iter().zip(&replayed) {
        assert_eq!((*s1, *s2), (200, 200));
        assert_eq!(b1, b2, "every client gets its own recording back");
    }
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("0 missed; 0 of 64 recording(s) unused"),
        "{err}"
    );
    fake.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_with_a_command_stops_the_program_and_keeps_what_was_recorded() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    // One request through the proxy, then the program hangs until it is interrupted.
    let script = r#"
import json, os, sys, time, urllib.request
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
                             headers={"content-type": "application/json"})
print(json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"], flush=True)
time.sleep(60)
"#;
    let mut child = std::process::Command::new(support::proxy::bin())
        .args([
            "record",
            "--cassette",
            "c.json",
            "--upstream",
            &fake.url(),
            "--",
            "python3",
            "-c",
            script,
        ])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let line = blocking(move || {
        let mut l = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut l).unwrap();
        l
    })
    .await;
    assert!(line.contains("You said: hi"), "{line}");
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = blocking(move || child.wait().unwrap()).await;
    // Python dies of the forwarded SIGINT (KeyboardInterrupt, exit 130 or 1), and its status passes through.
    assert_ne!(status.code(), Some(0));
    assert_eq!(
        cassette(dir.path())["interactions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    fake.stop().await;
}

/// One chat request through the proxy; an error (an HTTP 502, say) makes the program exit 1.
const ONE_REQUEST: &str = r#"
import json, os, urllib.request
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
                             headers={"content-type": "application/json"})
print(json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"])
"#;

#[tokio::test(flavor = "multi_thread")]
async fn record_names_its_upstreams_and_an_unreachable_one_is_exit_3_with_the_overridden_base_named(
) {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let record = |upstream: String, preset: Option<&'static str>| {
        let dir = dir.path().to_owned();
        blocking(move || {
            let mut cmd = std::process::Command::new(support::proxy::bin());
            cmd.args(["record", "--cassette", "c.json", "--upstream", &upstream])
                .args(["--", "python3", "-c", ONE_REQUEST])
                .current_dir(dir)
                .env_remove("OPENAI_BASE_URL")
                .env_remove("OPENAI_API_BASE")
                .env_remove("OLLAMA_HOST")
                .env_remove("AZURE_OPENAI_ENDPOINT");
            if let Some(base) = preset {
                cmd.env("OPENAI_BASE_URL", base);
            }
            let out = cmd.output().unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        })
    };
    let (code, err) = record(fake.url(), None).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "recording to c.json from openai {}, anthropic https://api.anthropic.com, gemini https://generativelanguage.googleapis.com, ollama http://127.0.0.1:11434, listening on http://127.0.0.1:",
            fake.url()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "recorded 1 interaction(s) (0 streamed) from {} to c.json",
            fake.url()
        )),
        "{err}"
    );
    assert!(!err.contains("warning"), "{err}");

    // A gateway the user had configured, and an upstream that refuses connections: the
    // program fails with 1, the run with 3, and the warning says how to record through it.
    let gone = fake.url();
    fake.stop().await;
    std::fs::remove_file(dir.path().join("c.json")).unwrap();
    let (code, err) = record(gone.clone(), Some("http://127.0.0.1:9/v1")).await;
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "agentproxy: warning: OPENAI_BASE_URL was set to http://127.0.0.1:9/v1; the program now talks to agentproxy, which records from {gone} (to record through http://127.0.0.1:9, pass --upstream http://127.0.0.1:9)"
        )),
        "{err}"
    );
    assert!(err.contains("failed to reach upstream"), "{err}");
    assert!(!dir.path().join("c.json").exists());
}

/// One request shaped as Claude Code sends it: its user agent, its billing header as the
/// first system block, a session id in `metadata.user_id`, the date in its environment
/// block. The session id and the date come from the environment, so each run can differ.
const CLAUDE_CODE_REQUEST: &str = r##"
import json, os, urllib.request
session, day = os.environ["SESSION"], os.environ["DAY"]
body = {
    "model": "claude-opus-5-5", "max_tokens": 1024, "stream": False,
    "system": [
        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.20d; cc_entrypoint=sdk-py; cch=" + session[:5] + ";"},
        {"type": "text", "text": "You are a Claude agent, built on Anthropic's Claude Agent SDK."},
    ],
    "messages": [
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "system", "content": "# Environment\nPlatform: linux\nToday's date is " + day + "."},
    ],
    "metadata": {"user_id": json.dumps({"device_id": "d" * 64, "account_uuid": "", "session_id": session})},
}
req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages?beta=true",
    data=json.dumps(body).encode(),
    headers={"content-type": "application/json", "anthropic-version": "2023-06-01",
             "x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""),
             "user-agent": "claude-cli/2.1.332 (external, sdk-py, agent-sdk/0.2.189)"})
reply = json.load(urllib.request.urlopen(req))
print(reply["content"][0]["text"])
"##;

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_replays_on_another_run_and_day_with_its_tolerances_written_and_shown() {
    let fake = support::fake_anthropic::FakeAnthropic::start().await;
    let dir = tempfile::tempdir().unwrap();
    let run = |args: Vec<String>, session: &'static str, day: &'static str| {
        let dir = dir.path().to_owned();
        blocking(move || {
            let out = std::process::Command::new(support::proxy::bin())
                .args(&args)
                .args(["--", "python3", "-c", CLAUDE_CODE_REQUEST])
                .current_dir(dir)
                .env("SESSION", session)
                .env("DAY", day)
                .env(
                    "ANTHROPIC_API_KEY",
                    "sk-ant-test-not-a-real-key-00000000000",
                )
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                err,
            )
        })
    };
    let args = |words: &str| words.split(' ').map(str::to_owned).collect::<Vec<_>>();
    let record = format!(
        "record --cassette c.json --upstream anthropic={}",
        fake.url()
    );
    let (code, recorded, err) = run(
        args(&record),
        "55c596cf-0b1c-4f4e-9d52-7a1f3c2e9d10",
        "2026-12-05",
    )
    .await;
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("agentproxy: recorded Claude Code: its volatile fields are tolerated"),
        "{err}"
    );
    let cassette: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("c.json")).unwrap()).unwrap();
    assert_eq!(cassette["match"]["ignore"], json!(["/metadata/user_id"]));
    let holes: Vec<&str> = (cassette["match"]["holes"].as_array().unwrap().iter())
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(holes, ["claude_code_billing", "claude_code_date"]);

    // Another session, another day: the same answer, with no upstream.
    fake.stop().await;
    let (code, replayed, err) = run(
        args("replay --cassette c.json"),
        "31fe1523-7a4e-4c1b-8e0f-2b9d6c1a4e77",
        "2027-01-09",
    )
    .await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(replayed, recorded);

    let shown = blocking({
        let dir = dir.path().to_owned();
        move || {
            let out = std::process::Command::new(support::proxy::bin())
                .args(["show", "c.json"])
                .current_dir(dir)
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    })
    .await;
    assert!(
        shown.contains("tolerated: ignored /metadata/user_id; hole ${claude_code_billing} (/x-anthropic-billing-header: [^\\n]*/ under /system/0/text); hole ${claude_code_date} (/Today's date is \\d{4}-\\d{2}-\\d{2}/)"),
        "{shown}"
    );

    // Without the tolerances, the new session misses, and the miss report says so.
    let fake = support::fake_anthropic::FakeAnthropic::start().await;
    let record = format!(
        "record --cassette strict.json --no-client-tolerances --upstream anthropic={}",
        fake.url()
    );
    let (code, _, err) = run(
        args(&record),
        "55c596cf-0b1c-4f4e-9d52-7a1f3c2e9d10",
        "2026-12-05",
    )
    .await;
    assert_eq!(code, Some(0), "{err}");
    fake.stop().await;
    let (code, _, err) = run(
        args("replay --cassette strict.json"),
        "31fe1523-7a4e-4c1b-8e0f-2b9d6c1a4e77",
        "2026-12-05",
    )
    .await;
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("first difference at /metadata/user_id"),
        "{err}"
    );
}

/// A re-record that replaced a cassette says what changed against it, as `agentproxy
/// diff` of the two would (stderr; the verdict in `--json`): the same model is the same
/// trajectory, a model that now also asks for London's weather is a regression naming it.
#[tokio::test(flavor = "multi_thread")]
async fn a_rerecord_tells_how_the_trajectory_changed() {
    use support::run::{agentproxy, session};
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.json");
    let agent = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/weather-agent/agent.py");
    let record = |model: &'static str, flags: &'static [&'static str]| {
        let args = session(
            "record",
            &cassette,
            &[&["--upstream", &fake.url()][..], flags].concat(),
            &["python3".as_ref(), agent.as_os_str()],
        );
        async move {
            let run = agentproxy(args, &[("AGENT_MODEL", model)]).await;
            assert!(run.status.success(), "{run}");
            run
        }
    };
    let first = record("gpt-4o-mini", &[]).await;
    assert!(!first.stderr.contains("replaced"), "{first}");
    let same = record("gpt-4o-mini", &[]).await;
    assert!(
        same.stderr.contains("agentproxy: against the recording it replaced:\n  no change in what the agent did or was told\n  verdict: identical\n"),
        "{same}"
    );
    let eager = record("gpt-4o-mini-eager", &["--json"]).await;
    assert!(eager.stderr.contains("London"), "{eager}");
    assert!(eager.stderr.contains("  verdict: regression"), "{eager}");
    let summary: Value = serde_json::from_str(eager.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["trajectory"], "regression", "{eager}");
    let quiet = record("gpt-4o-mini", &["-q"]).await;
    assert!(!quiet.stderr.contains("replaced"), "{quiet}");
    fake.stop().await;
}
