//! The Responses API's WebSocket mode through the real binary: recorded against the fake
//! upstream's socket (which checks the handshake and the bearer token), replayed with the
//! upstream stopped, served to an HTTP client from a socket's recording and the other way
//! round, and a miss answered in the protocol's own way. A real SDK's socket is in
//! `tests/clients/e2e_websocket.rs`.

use crate::support;

use std::path::Path;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use support::fake_openai::FakeOpenAi;
use support::{http, proxy::Daemon};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

type Socket = WebSocketStream<TcpStream>;

/// A socket to `base` (`http://127.0.0.1:PORT`) at `/v1/responses`, as the openai SDK
/// opens one.
async fn connect(base: &str) -> Socket {
    let addr = base.trim_start_matches("http://");
    let mut req = format!("ws://{addr}/v1/responses")
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("authorization", "Bearer sk-test-socket".parse().unwrap());
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (ws, answer) = tokio_tungstenite::client_async(req, tcp).await.unwrap();
    assert_eq!(answer.status(), 101);
    ws
}

/// Send one turn and read its frames up to the one that ends it (or the socket's end).
async fn turn(ws: &mut Socket, frame: &Value) -> Vec<Value> {
    ws.send(Message::text(frame.to_string())).await.unwrap();
    let mut frames = Vec::new();
    while let Some(Ok(msg)) = ws.next().await {
        let Message::Text(t) = msg else { continue };
        let v: Value = serde_json::from_str(t.as_str()).unwrap();
        let kind = v["type"].as_str().unwrap_or_default().to_owned();
        frames.push(v);
        if ["response.completed", "response.failed", "error"].contains(&kind.as_str()) {
            break;
        }
    }
    frames
}

fn ask(city: &str) -> Value {
    json!({"type": "response.create", "model": "gpt-4o-mini",
           "input": [{"role": "user", "content": format!("What's the weather in {city}?")}],
           "tools": [{"type": "function", "name": "get_weather",
                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]})
}

/// The follow-up that answers the call the last frame of `answer` asks for.
fn follow_up(answer: &[Value]) -> Value {
    let response = &answer.last().unwrap()["response"];
    let call = (response["output"].as_array().unwrap().iter())
        .find(|i| i["type"] == "function_call")
        .unwrap_or_else(|| panic!("no call in {response}"));
    json!({"type": "response.create", "model": "gpt-4o-mini",
           "previous_response_id": response["id"],
           "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "{\"temp_c\": 21}"}]})
}

fn kinds(frames: &[Value]) -> Vec<&str> {
    frames
        .iter()
        .map(|f| f["type"].as_str().unwrap_or_default())
        .collect()
}

/// The JSON of each `data:` line of an SSE body.
fn data_lines(sse: &str) -> Vec<Value> {
    (sse.split("\n\n"))
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn cassette(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("c.json")).expect("cassette written")).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_socket_is_recorded_by_turn_and_replayed_without_the_upstream() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake);
    let mut ws = connect(&d.url).await;
    let first = turn(&mut ws, &ask("Paris")).await;
    assert_eq!(
        kinds(&first).last(),
        Some(&"response.completed"),
        "{first:?}"
    );
    let second = turn(&mut ws, &follow_up(&first)).await;
    let text = &second.last().unwrap()["response"]["output"][0]["content"][0]["text"];
    assert!(text.as_str().unwrap().contains("21"), "{second:?}");
    ws.close(None).await.unwrap();
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
    // Both turns reached the upstream as frames on one socket, the token with them.
    assert_eq!(fake.frames().len(), 2);
    let upgrade = &fake.requests()[0];
    assert_eq!(
        upgrade.header("authorization"),
        Some("Bearer sk-test-socket")
    );

    let c = cassette(dir.path());
    let its = c["interactions"].as_array().unwrap();
    assert_eq!(its.len(), 2, "{c:#}");
    for (it, frames) in its.iter().zip([&first, &second]) {
        assert_eq!(it["route"], "openai.responses");
        assert_eq!(it["request"]["path"], "/v1/responses");
        let body = &it["request"]["body"]["json"];
        assert!(
            body.get("type").is_none() && body["model"] == "gpt-4o-mini",
            "{body}"
        );
        // Each server frame is an event, its text exactly as sent.
        let events = it["response"]["events"].as_array().unwrap();
        let data: Vec<Value> = events
            .iter()
            .map(|e| serde_json::from_str(e["data"].as_str().unwrap()).unwrap())
            .collect();
        assert_eq!(&data, frames);
        assert_eq!(events[0]["event"], "response.created");
        // And when each came, in order.
        let at: Vec<u64> = (it["response"]["event_ms"].as_array().unwrap().iter())
            .map(|t| t.as_u64().unwrap())
            .collect();
        assert_eq!(at.len(), events.len());
        assert!(at.windows(2).all(|w| w[0] <= w[1]), "{at:?}");
        // The assembled response, as for an SSE recording.
        assert_eq!(
            it["response"]["body"]["json"]["object"], "response",
            "{it:#}"
        );
    }
    assert!(!std::fs::read_to_string(dir.path().join("c.json"))
        .unwrap()
        .contains("sk-test-socket"));
    fake.stop().await;

    // Replayed with the upstream gone: the same frames, turn by turn.
    let d = Daemon::start(&["replay", "--cassette", "c.json"], dir.path());
    let mut ws = connect(&d.url).await;
    let again = turn(&mut ws, &ask("Paris")).await;
    assert_eq!(again, first);
    let again = turn(&mut ws, &follow_up(&first)).await;
    assert_eq!(again, second);
    ws.close(None).await.unwrap();
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_socket_and_a_stream_serve_each_others_recordings() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake);
    let mut ws = connect(&d.url).await;
    let over_socket = turn(&mut ws, &ask("Paris")).await;
    ws.close(None).await.unwrap();
    let mut streamed = ask("Oslo");
    streamed.as_object_mut().unwrap().remove("type");
    streamed["stream"] = json!(true);
    let url = d.url.clone();
    let body = streamed.clone();
    let sse = tokio::task::spawn_blocking(move || http::post_json(&url, "/v1/responses", &body))
        .await
        .unwrap();
    assert_eq!(sse.status, 200);
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
    fake.stop().await;

    let d = Daemon::start(&["replay", "--cassette", "c.json"], dir.path());
    // The HTTP stream's recording, to a socket: its events as frames.
    let mut ws = connect(&d.url).await;
    let mut frame = streamed.clone();
    frame.as_object_mut().unwrap().remove("stream");
    frame["type"] = json!("response.create");
    let served = turn(&mut ws, &frame).await;
    let sse_data = data_lines(&sse.text());
    assert_eq!(served, sse_data);
    ws.close(None).await.unwrap();
    // The socket's recording, to an HTTP stream: its frames as events.
    let url = d.url.clone();
    let mut body = ask("Paris");
    body.as_object_mut().unwrap().remove("type");
    body["stream"] = json!(true);
    let reply = tokio::task::spawn_blocking(move || http::post_json(&url, "/v1/responses", &body))
        .await
        .unwrap();
    let data = data_lines(&reply.text());
    assert_eq!(data, over_socket);
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_that_misses_is_an_error_frame_then_a_close() {
    let dir = recorded_paris().await;
    let before = std::fs::read(dir.path().join("c.json")).unwrap();

    let d = Daemon::start(&["replay", "--cassette", "c.json"], dir.path());
    let mut ws = connect(&d.url).await;
    let frames = turn(&mut ws, &ask("Lima")).await;
    assert_eq!(kinds(&frames), ["error"], "{frames:?}");
    assert_eq!(frames[0]["status"], 400);
    assert_eq!(frames[0]["error"]["code"], "agentproxy_cassette_miss");
    assert_eq!(next_close(&mut ws).await, Ok(CloseCode::Error));
    let (code, err) = d.interrupt();
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("Paris"),
        "the near miss names the nearest recording: {err}"
    );
    assert_eq!(std::fs::read(dir.path().join("c.json")).unwrap(), before);
}

/// A fault on a Responses-mode turn in a replay is the HTTP path's, sent as frames: a rate
/// limit is an `error` frame with its status, the socket stays open, and the retry gets the
/// recorded answer; a cut stream is its first events, then a close with 1011.
#[tokio::test(flavor = "multi_thread")]
async fn a_fault_on_a_socket_turn_is_its_error_frame_or_a_cut() {
    // While recording, the rate-limited turn goes no further: the upstream gets the retry
    // only, and the cassette holds it only.
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let up = fake.url();
    let args = ["record", "--cassette", "c.json", "--upstream", up.as_str()];
    let fault = ["--fault", "request=1,kind=rate_limit"];
    let d = Daemon::start(&[&args[..], &fault[..]].concat(), dir.path());
    let mut ws = connect(&d.url).await;
    let refused = turn(&mut ws, &ask("Paris")).await;
    assert_eq!(
        (kinds(&refused), &refused[0]["status"]),
        (vec!["error"], &json!(429))
    );
    let answered = turn(&mut ws, &ask("Paris")).await;
    assert_eq!(kinds(&answered).last(), Some(&"response.completed"));
    ws.close(None).await.unwrap();
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
    assert_eq!(fake.frames().len(), 1);
    assert_eq!(
        cassette(dir.path())["interactions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    fake.stop().await;

    let dir = recorded_paris().await;
    let args = [
        "replay",
        "--cassette",
        "c.json",
        "--fault",
        "request=1,kind=rate_limit",
        "--fault",
        "request=3,kind=truncate_stream,after_events=2",
    ];
    let d = Daemon::start(&args, dir.path());
    let mut ws = connect(&d.url).await;
    let refused = turn(&mut ws, &ask("Paris")).await;
    assert_eq!(kinds(&refused), ["error"], "{refused:?}");
    assert_eq!(refused[0]["status"], 429);
    assert_eq!(refused[0]["error"]["code"], "rate_limit_exceeded");
    let answered = turn(&mut ws, &ask("Paris")).await;
    assert_eq!(kinds(&answered).last(), Some(&"response.completed"));
    ws.close(None).await.unwrap();
    let mut ws = connect(&d.url).await;
    ws.send(Message::text(ask("Paris").to_string()))
        .await
        .unwrap();
    let mut cut = 0;
    let closed = loop {
        match ws.next().await {
            Some(Ok(Message::Text(_))) => cut += 1,
            Some(Ok(Message::Close(f))) => break f.map(|f| f.code),
            other => panic!("{other:?}"),
        }
    };
    let _ = ws.flush().await;
    assert_eq!((cut, closed), (2, Some(CloseCode::Error)));
    let (code, err) = d.interrupt();
    assert!(err.contains("request 1: rate_limit (429)"), "{err}");
    assert!(err.contains("request 3: truncate_stream"), "{err}");
    assert_eq!(code, 0, "{err}");
}

/// A directory whose `c.json` holds one recorded socket turn (the weather in Paris),
/// its upstream stopped.
async fn recorded_paris() -> tempfile::TempDir {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake);
    let mut ws = connect(&d.url).await;
    turn(&mut ws, &ask("Paris")).await;
    ws.close(None).await.unwrap();
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
    fake.stop().await;
    dir
}

fn record_daemon(dir: &Path, fake: &FakeOpenAi) -> Daemon {
    let up = fake.url();
    Daemon::start(
        &["record", "--cassette", "c.json", "--upstream", up.as_str()],
        dir,
    )
}

/// The next close frame on `ws` (text frames before it skipped, the close answered), or
/// what came instead.
async fn next_close(ws: &mut Socket) -> Result<CloseCode, String> {
    while let Some(msg) = ws.next().await {
        match msg {
            Ok(Message::Close(Some(f))) => {
                // The reply to the close (queued by the read) goes out, as a client's does.
                let _ = ws.flush().await;
                return Ok(f.code);
            }
            Ok(Message::Text(_)) => continue,
            other => return Err(format!("{other:?}")),
        }
    }
    Err("the socket ended without a close frame".into())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_the_upstream_cuts_is_recorded_as_aborted() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake);
    fake.cut_next_turns(1);
    let mut ws = connect(&d.url).await;
    ws.send(Message::text(ask("Paris").to_string()))
        .await
        .unwrap();
    // The program sees the upstream's close, code and all.
    assert_eq!(next_close(&mut ws).await, Ok(CloseCode::Error));
    let (code, err) = d.interrupt();
    assert!(
        err.contains("the upstream closed the socket mid-turn (1011)"),
        "{err}"
    );
    assert_eq!(code, 3, "an upstream failure fails the recording: {err}");
    let c = cassette(dir.path());
    let it = &c["interactions"][0];
    let aborted = it["response"]["aborted"].as_str().unwrap_or_default();
    assert!(
        aborted.contains("mid-turn (1011) (after 2 events)"),
        "{it:#}"
    );
    assert_eq!(it["response"]["events"].as_array().unwrap().len(), 2);
    assert!(
        it["response"]["body"].is_null(),
        "no whole answer for a cut turn: {it:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_that_hangs_up_closes_the_upstream_socket() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake);
    let mut ws = connect(&d.url).await;
    turn(&mut ws, &ask("Paris")).await;
    // Gone without a close frame.
    drop(ws);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while fake.sockets_ended() == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        fake.sockets_ended(),
        1,
        "the upstream's socket is still open"
    );
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        cassette(dir.path())["interactions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_frames_and_handshakes_get_a_clear_answer() {
    let dir = recorded_paris().await;

    let args = ["replay", "--cassette", "c.json", "--max-body-size", "2000"];
    let d = Daemon::start(&args, dir.path());
    // A frame that is not a turn: an error event, and the socket stays open.
    let mut ws = connect(&d.url).await;
    let answer = turn(&mut ws, &json!({"type": "response.cancel"})).await;
    assert_eq!(kinds(&answer), ["error"]);
    let message = answer[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("`response.cancel`"), "{message}");
    let not_json = turn_text(&mut ws, "{not json").await;
    assert!(
        not_json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not JSON"),
        "{not_json}"
    );
    let served = turn(&mut ws, &ask("Paris")).await;
    assert_eq!(kinds(&served).last(), Some(&"response.completed"));
    // A binary frame: 1003.
    ws.send(Message::binary(vec![1u8, 2, 3])).await.unwrap();
    assert_eq!(next_close(&mut ws).await, Ok(CloseCode::Unsupported));
    // A message over --max-body-size: 1009.
    let mut ws = connect(&d.url).await;
    let mut big = ask("Paris");
    big["metadata"] = json!({"pad": "x".repeat(4000)});
    ws.send(Message::text(big.to_string())).await.unwrap();
    assert_eq!(next_close(&mut ws).await, Ok(CloseCode::Size));
    // An upgrade to a socket agentproxy does not speak, and one without its key.
    let url = d.url.clone();
    let (unknown, keyless) = tokio::task::spawn_blocking(move || {
        let upgrade = [
            ("upgrade", "websocket"),
            ("connection", "Upgrade"),
            ("sec-websocket-version", "13"),
        ];
        let mut with_key = upgrade.to_vec();
        with_key.push(("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="));
        (
            http::request(&url, "GET", "/v1/chat/completions", &with_key, &[]),
            http::request(&url, "GET", "/v1/responses", &upgrade, &[]),
        )
    })
    .await
    .unwrap();
    assert_eq!(unknown.status, 501, "{}", unknown.text());
    assert!(unknown
        .text()
        .contains("GET /v1/chat/completions asks to switch to a WebSocket"));
    assert_eq!(keyless.status, 400, "{}", keyless.text());
    assert!(keyless.text().contains("Sec-WebSocket-Key"));
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_that_refuses_the_socket_refuses_the_program() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake);
    let addr = d.url.trim_start_matches("http://").to_owned();
    // No bearer token: the fake's 401 is the program's answer.
    let req = format!("ws://{addr}/v1/responses")
        .into_client_request()
        .unwrap();
    let tcp = TcpStream::connect(&addr).await.unwrap();
    match tokio_tungstenite::client_async(req, tcp).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(answer)) => {
            assert_eq!(answer.status(), 401)
        }
        other => panic!("expected a 401, got {:?}", other.map(|(_, r)| r.status())),
    }
    let (code, err) = d.interrupt();
    assert_ne!(code, 0, "nothing was recorded: {err}");
    let why = "GET /v1/responses: the upstream refused the WebSocket: 401 Unauthorized";
    assert!(err.contains(why), "{err}");
}

/// Send a text frame as it is and read the one frame that answers it.
async fn turn_text(ws: &mut Socket, text: &str) -> Value {
    ws.send(Message::text(text.to_owned())).await.unwrap();
    match ws.next().await {
        Some(Ok(Message::Text(t))) => serde_json::from_str(t.as_str()).unwrap(),
        other => panic!("expected a frame, got {other:?}"),
    }
}

/// A Realtime socket to `base` for `model`, with a token.
async fn connect_realtime(base: &str) -> Socket {
    let addr = base.trim_start_matches("http://");
    let url = format!("ws://{addr}/v1/realtime?model=gpt-realtime");
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("authorization", "Bearer sk-test-socket".parse().unwrap());
    let tcp = TcpStream::connect(addr).await.unwrap();
    tokio_tungstenite::client_async(req, tcp).await.unwrap().0
}

/// Frames up to (and with) the first whose type is `last`, or the close.
async fn until(ws: &mut Socket, last: &str) -> Vec<Value> {
    let mut frames = Vec::new();
    while let Some(Ok(Message::Text(t))) = ws.next().await {
        let v: Value = serde_json::from_str(t.as_str()).unwrap();
        let done = v["type"] == last;
        frames.push(v);
        if done {
            break;
        }
    }
    frames
}

/// One Realtime turn: the user's `text`, then `response.create`; its frames.
async fn realtime_turn(ws: &mut Socket, text: &str) -> Vec<Value> {
    let item = json!({"type": "conversation.item.create", "event_id": format!("evt_{text}"),
        "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}});
    ws.send(Message::text(item.to_string())).await.unwrap();
    ws.send(Message::text(
        json!({"type": "response.create"}).to_string(),
    ))
    .await
    .unwrap();
    until(ws, "response.done").await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_realtime_socket_replays_frame_by_frame_and_a_changed_one_misses() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = record_daemon(dir.path(), &fake);
    let mut ws = connect_realtime(&d.url).await;
    let opening = until(&mut ws, "session.created").await;
    let update = json!({"type": "session.update", "session": {"type": "realtime", "output_modalities": ["audio"]}});
    ws.send(Message::text(update.to_string())).await.unwrap();
    let updated = until(&mut ws, "session.updated").await;
    let first = realtime_turn(&mut ws, "hello").await;
    let second = realtime_turn(&mut ws, "again").await;
    ws.close(None).await.unwrap();
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
    fake.stop().await;
    let c = cassette(dir.path());
    let its = c["interactions"].as_array().unwrap();
    assert_eq!(its.len(), 2, "{c:#}");
    assert_eq!(its[0]["route"], "openai.realtime");
    assert_eq!(its[0]["request"]["path"], "/v1/realtime?model=gpt-realtime");
    // The turn keeps the client's frames without their event ids, and every server frame.
    let frames = &its[0]["request"]["body"]["json"]["frames"];
    assert_eq!(frames.as_array().unwrap().len(), 3, "{frames}");
    assert!(frames[1].get("event_id").is_none(), "{frames}");
    let events = its[0]["response"]["events"].as_array().unwrap();
    assert_eq!(events.len(), opening.len() + updated.len() + first.len());
    assert_eq!(events[0]["id"], "0");
    assert_eq!(events[0]["event"], "text");
    let audio = its[0]["response"]["body"]["json"]["audio_bytes"]
        .as_u64()
        .unwrap();
    assert!(audio > 0, "{:#}", its[0]["response"]["body"]);
    // When each server frame came, in the turn.
    let offsets = its[0]["response"]["event_ms"].as_array().unwrap();
    assert_eq!(offsets.len(), events.len());

    // `show` reads each turn as a model call: audio shown by its transcript.
    let show = std::process::Command::new(support::proxy::bin())
        .args(["show", "c.json"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(shown.contains("openai.realtime"), "{shown}");
    assert!(shown.contains("You said: hello"), "{shown}");

    // Replayed with the upstream gone: the same frames, in the same places.
    let d = Daemon::start(&["replay", "--cassette", "c.json"], dir.path());
    let mut ws = connect_realtime(&d.url).await;
    assert_eq!(until(&mut ws, "session.created").await, opening);
    ws.send(Message::text(update.to_string())).await.unwrap();
    assert_eq!(until(&mut ws, "session.updated").await, updated);
    assert_eq!(realtime_turn(&mut ws, "hello").await, first);
    assert_eq!(realtime_turn(&mut ws, "again").await, second);
    ws.close(None).await.unwrap();
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");

    // A turn that says something else: an error event, a close with 1011, exit 1.
    let before = std::fs::read(dir.path().join("c.json")).unwrap();
    let d = Daemon::start(&["replay", "--cassette", "c.json"], dir.path());
    let mut ws = connect_realtime(&d.url).await;
    until(&mut ws, "session.created").await;
    ws.send(Message::text(update.to_string())).await.unwrap();
    until(&mut ws, "session.updated").await;
    let item = json!({"type": "conversation.item.create",
        "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "goodbye"}]}});
    let error = turn_text(&mut ws, &item.to_string()).await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["error"]["code"], "agentproxy_cassette_miss");
    assert_eq!(next_close(&mut ws).await, Ok(CloseCode::Error));
    let (code, err) = d.interrupt();
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("openai.realtime"), "{err}");
    assert_eq!(std::fs::read(dir.path().join("c.json")).unwrap(), before);

    // `--realtime` paces each frame as recorded: the second turn's last frame 400 ms in.
    let mut c = cassette(dir.path());
    let offsets = &mut c["interactions"][1]["response"]["event_ms"];
    let last = offsets.as_array().unwrap().len() - 1;
    offsets[last] = json!(400);
    std::fs::write(dir.path().join("c.json"), c.to_string()).unwrap();
    let args = ["replay", "--cassette", "c.json", "--realtime"];
    let d = Daemon::start(&args, dir.path());
    let mut ws = connect_realtime(&d.url).await;
    until(&mut ws, "session.created").await;
    ws.send(Message::text(update.to_string())).await.unwrap();
    until(&mut ws, "session.updated").await;
    realtime_turn(&mut ws, "hello").await;
    let started = std::time::Instant::now();
    assert_eq!(realtime_turn(&mut ws, "again").await, second);
    let took = started.elapsed();
    // From the client's side the turn began a little after the proxy's clock did.
    assert!(took >= std::time::Duration::from_millis(350), "{took:?}");
    ws.close(None).await.unwrap();
    let (code, err) = d.interrupt();
    assert_eq!(code, 0, "{err}");
}

/// Faults on a Realtime socket, recording and replaying alike: a rate limit is the
/// protocol's `error` event (the `response.create` goes no further, so the retry gets the
/// answer), a cut stream is the answer's first frames, then a close with 1011.
#[tokio::test(flavor = "multi_thread")]
async fn a_realtime_fault_is_an_error_event_or_a_cut_and_replays_the_same() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let up = fake.url();
    let faults = [
        "--fault",
        "request=1,kind=rate_limit",
        "--fault",
        "request=3,kind=truncate_stream,after_events=2",
    ];
    let session = |mode: &str| -> Daemon {
        let mut args = vec![mode, "--cassette", "c.json"];
        if mode == "record" {
            args.extend(["--upstream", up.as_str()]);
        }
        args.extend(faults);
        Daemon::start(&args, dir.path())
    };
    // What the program sees: the error, the retry's answer, the cut turn's frames and
    // the close.
    let run = |d: Daemon| async move {
        let mut ws = connect_realtime(&d.url).await;
        until(&mut ws, "session.created").await;
        let item = json!({"type": "conversation.item.create",
            "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}});
        ws.send(Message::text(item.to_string())).await.unwrap();
        until(&mut ws, "conversation.item.done").await;
        let create = json!({"type": "response.create"}).to_string();
        let error = turn_text(&mut ws, &create).await;
        ws.send(Message::text(create.clone())).await.unwrap();
        let answer = until(&mut ws, "response.done").await;
        ws.send(Message::text(create.clone())).await.unwrap();
        let mut cut = Vec::new();
        let closed = loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => {
                    cut.push(serde_json::from_str::<Value>(t.as_str()).unwrap())
                }
                Some(Ok(Message::Close(f))) => break f.map(|f| f.code),
                other => panic!("{other:?}"),
            }
        };
        let _ = ws.flush().await;
        let (code, err) = d.interrupt();
        (error, answer, cut, closed, code, err)
    };
    let (error, answer, cut, closed, code, err) = run(session("record")).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["error"]["code"], "rate_limit_exceeded", "{error}");
    assert!(error["error"]["message"]
        .as_str()
        .unwrap()
        .ends_with("(injected by agentproxy)"));
    assert!(
        answer.last().unwrap()["response"]["status"] == "completed",
        "{answer:?}"
    );
    assert_eq!(cut.len(), 2, "{cut:?}");
    assert_eq!(closed, Some(CloseCode::Error));
    assert!(
        err.contains("request 1: rate_limit (429)") && err.contains("truncate_stream"),
        "{err}"
    );
    // The rate-limited frame never reached the upstream; the retry and the cut one did.
    let asked = (fake.frames().iter())
        .filter(|f| f["type"] == "response.create")
        .count();
    assert_eq!(asked, 2);
    fake.stop().await;
    let c = cassette(dir.path());
    let its = c["interactions"].as_array().unwrap();
    assert_eq!(its.len(), 2, "{c:#}");
    let creates = |i: usize| {
        let frames = its[i]["request"]["body"]["json"]["frames"]
            .as_array()
            .unwrap();
        frames
            .iter()
            .filter(|f| f["type"] == "response.create")
            .count()
    };
    assert_eq!((creates(0), creates(1)), (1, 1));
    assert!(its[0]["response"].get("aborted").is_none());
    assert!(its[1]["response"]["aborted"]
        .as_str()
        .unwrap()
        .contains("injected truncate_stream"));

    let replayed = run(session("replay")).await;
    let (r_error, r_answer, r_cut, r_closed, r_code, r_err) = replayed;
    assert_eq!(r_code, 0, "{r_err}");
    assert_eq!(
        (r_error, r_answer, r_cut, r_closed),
        (error, answer, cut, closed)
    );
    assert!(r_err.contains("request 1: rate_limit (429)"), "{r_err}");
}

/// A Realtime server that closes mid-turn: the close is kept with its code and reason,
/// the turn stored as aborted, and a replay closes the same way at the same point.
#[tokio::test(flavor = "multi_thread")]
async fn a_realtime_close_is_recorded_with_its_code_and_replayed() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let item = json!({"type": "conversation.item.create",
        "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}});
    let run = |d: Daemon| {
        let item = item.clone();
        async move {
            let mut ws = connect_realtime(&d.url).await;
            until(&mut ws, "session.created").await;
            ws.send(Message::text(item.to_string())).await.unwrap();
            let mut frames = Vec::new();
            let closed = loop {
                match ws.next().await {
                    Some(Ok(Message::Text(t))) => frames.push(t.as_str().to_owned()),
                    Some(Ok(Message::Close(f))) => break f.map(|f| (f.code, f.reason.to_string())),
                    other => panic!("{other:?}"),
                }
            };
            let _ = ws.flush().await;
            let (code, err) = d.interrupt();
            (frames, closed, code, err)
        }
    };
    fake.cut_next_turns(1);
    let (frames, closed, code, err) = run(record_daemon(dir.path(), &fake)).await;
    assert_eq!(code, 3, "the upstream broke off: {err}");
    assert_eq!(frames.len(), 2);
    assert_eq!(
        closed,
        Some((CloseCode::Error, "cut by the test".to_owned()))
    );
    fake.stop().await;
    let c = cassette(dir.path());
    let response = &c["interactions"][0]["response"];
    let last = response["events"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["event"], "close", "{response:#}");
    let kept: Value = serde_json::from_str(last["data"].as_str().unwrap()).unwrap();
    assert_eq!(kept, json!({"code": 1011, "reason": "cut by the test"}));
    assert!(response["aborted"].as_str().unwrap().contains("1011"));

    let replayed = run(Daemon::start(
        &["replay", "--cassette", "c.json"],
        dir.path(),
    ))
    .await;
    assert_eq!((replayed.0, replayed.1), (frames, closed), "{}", replayed.3);
    assert_eq!(
        replayed.2, 0,
        "a recording that broke off replays so: {}",
        replayed.3
    );
}
