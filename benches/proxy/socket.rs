//! Scenario 9: the Responses API's WebSocket mode beside the same turns over SSE, served
//! by one replay daemon in the same run (interleaved rounds); what record adds per frame,
//! against a canned socket upstream in this process; and what an open socket costs in
//! memory.
//!
//! The cassette is the `streams` scenario's Responses recordings (dialects.rs), written
//! once. Each round sends every turn, one at a time, over one kept-alive HTTP connection
//! (`POST /v1/responses`, `"stream": true`, read to the end) and over one socket (the same
//! body as a `response.create` frame, read up to `response.completed`); the two alternate
//! which goes first. A turn counts only when it got every event of its recording. Then
//! [`IDLE_SOCKETS`] sockets are opened and left idle: the daemon's resident memory before
//! and after, per socket.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::Request;
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use super::daemon::{self, Daemon};
use super::dialects::{self, DIALECTS};
use super::load::{self, percentile, HttpClient};
use super::scenarios::{median, us, Ctx};

/// Sockets held open for the memory figure.
const IDLE_SOCKETS: usize = 200;

type Socket = tokio_tungstenite::WebSocketStream<TcpStream>;

pub fn run(ctx: &mut Ctx, rss: &mut Vec<(String, u64)>) -> Result<(), String> {
    let dialect = DIALECTS[1];
    let turns = ctx
        .exchanges
        .len()
        .min(if ctx.cfg.quick { 50 } else { 500 });
    let streams = dialects::streamed(dialect, &ctx.exchanges[..turns]);
    let dir = ctx.dir.path().join("socket");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    dialects::write_cassette(&dir.join("socket.json"), dialect, &streams)?;
    let daemon = Daemon::start(
        &["replay", "--cassette", "socket.json", "--repeat", "last"],
        &dir,
    )?;
    // Each turn: the HTTP body (streamed) and the frame, and how many events it must get.
    let work: Vec<(Bytes, String, usize)> = (streams.iter())
        .map(|s| {
            let mut frame = s.request.clone();
            if let Some(f) = frame.as_object_mut() {
                f.remove("stream");
                f.remove("stream_options");
                f.insert("type".into(), "response.create".into());
            }
            (s.wire.clone(), frame.to_string(), s.frames.len())
        })
        .collect();
    let client = load::client();
    let (mut sse, mut ws) = (Vec::new(), Vec::new());
    let rounds = ctx.cfg.rounds.max(1);
    let outcome = ctx.rt.block_on(async {
        let mut socket = connect(&daemon.addr).await?;
        for round in 0..rounds {
            for first in [round % 2 == 0, round % 2 == 1] {
                match first {
                    true => sse.push(over_http(&client, &daemon.url, &work).await?),
                    false => ws.push(over_socket(&mut socket, &work).await?),
                }
            }
        }
        let before = daemon::peak_rss(daemon.pid());
        let now = current_rss(daemon.pid());
        let mut idle = Vec::with_capacity(IDLE_SOCKETS);
        for _ in 0..IDLE_SOCKETS {
            idle.push(connect(&daemon.addr).await?);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let per_socket = current_rss(daemon.pid()).saturating_sub(now) / IDLE_SOCKETS as u64;
        Ok::<_, String>((before, per_socket))
    });
    let (peak, per_socket) = outcome?;
    let answers: HashMap<String, Vec<String>> = (work.iter().zip(&streams))
        .map(|((_, frame, _), s)| (frame.clone(), s.frames.iter().map(data_of).collect()))
        .collect();
    let overhead = record_overhead(ctx.dir.path(), &work, Arc::new(answers), rounds);
    let (per_frame, direct, through) = ctx.rt.block_on(overhead)?;
    let p50 =
        |runs: &[Vec<Duration>]| median(runs.iter().map(|r| us(percentile(r, 0.5))).collect());
    let p99 =
        |runs: &[Vec<Duration>]| median(runs.iter().map(|r| us(percentile(r, 0.99))).collect());
    let events: usize = work.iter().map(|w| w.2).sum();
    println!("\n9. the Responses API over a WebSocket beside SSE ({turns} recorded turns, {} events each on average, {rounds} rounds, one at a time)", events / turns.max(1));
    println!("   {:<44} {:>10} {:>10}", "", "p50 µs", "p99 µs");
    println!(
        "   {:<44} {:>10.0} {:>10.0}",
        "turn over SSE (POST, stream read to the end)",
        p50(&sse),
        p99(&sse)
    );
    println!(
        "   {:<44} {:>10.0} {:>10.0}",
        "turn over a socket (frame, frames to the end)",
        p50(&ws),
        p99(&ws)
    );
    println!("   socket / SSE, p50: {:.2}×", p50(&ws) / p50(&sse));
    println!("   record, turn p50: {direct:.0} µs straight to a canned socket upstream, {through:.0} µs through record");
    println!("   record adds per frame, p50: {per_frame:.1} µs");
    println!(
        "   memory per open idle socket: {:.1} KB ({IDLE_SOCKETS} sockets)",
        per_socket as f64 / 1024.0
    );
    rss.push(("replay, Responses turns over SSE and a socket".into(), peak));
    let (_, _, err, _) = daemon.interrupt(Duration::from_secs(10));
    if err.contains("missed") && !err.contains("0 missed") {
        ctx.failures += 1;
        eprintln!("bench: socket: the daemon missed:\n{err}");
    }
    Ok(())
}

/// A canned Responses socket upstream on `127.0.0.1:0`: each `response.create` frame it
/// knows is answered with its recorded frames, at once. Its address.
async fn canned_upstream(answers: Arc<HashMap<String, Vec<String>>>) -> Result<String, String> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener
        .local_addr()
        .map_err(|e| e.to_string())?
        .to_string();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let _ = tcp.set_nodelay(true);
            let answers = answers.clone();
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                    return;
                };
                while let Some(Ok(Message::Text(t))) = ws.next().await {
                    for frame in answers.get(t.as_str()).into_iter().flatten() {
                        if ws.send(Message::text(frame.clone())).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    Ok(addr)
}

/// What record adds per frame: every turn over a socket straight to the canned upstream
/// and through `agentproxy record`, one at a time, `rounds` times alternating. The
/// median over rounds of (p50 turn through record - p50 turn direct) / mean frames per
/// turn, in µs, and the two p50s.
async fn record_overhead(
    dir: &std::path::Path,
    work: &[(Bytes, String, usize)],
    answers: Arc<HashMap<String, Vec<String>>>,
    rounds: usize,
) -> Result<(f64, f64, f64), String> {
    let upstream = canned_upstream(answers).await?;
    let dir = dir.join("socket-record");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let url = format!("http://{upstream}");
    let args = [
        "record",
        "--cassette",
        "socket-record.json",
        "--upstream",
        &url,
    ];
    let daemon = Daemon::start(&args, &dir)?;
    let mut direct = connect(&upstream).await?;
    let mut through = connect(&daemon.addr).await?;
    let (mut d, mut t) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for first in [round % 2 == 0, round % 2 == 1] {
            match first {
                true => d.push(over_socket(&mut direct, work).await?),
                false => t.push(over_socket(&mut through, work).await?),
            }
        }
    }
    drop(through);
    let _ = daemon.interrupt(Duration::from_secs(30));
    let p50 =
        |runs: &[Vec<Duration>]| median(runs.iter().map(|r| us(percentile(r, 0.5))).collect());
    let frames = work.iter().map(|w| w.2).sum::<usize>() as f64 / work.len().max(1) as f64;
    let (pd, pt) = (p50(&d), p50(&t));
    Ok(((pt - pd) / frames, pd, pt))
}

/// Every turn once over HTTP; each turn's time.
async fn over_http(
    client: &HttpClient,
    base: &str,
    work: &[(Bytes, String, usize)],
) -> Result<Vec<Duration>, String> {
    let mut times = Vec::with_capacity(work.len());
    for (body, _, events) in work {
        let req = Request::post(format!("{base}/v1/responses"))
            .header("content-type", "application/json")
            .header("authorization", "Bearer sk-bench")
            .body(Full::new(body.clone()))
            .map_err(|e| e.to_string())?;
        let started = Instant::now();
        let resp = client.request(req).await.map_err(|e| e.to_string())?;
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        times.push(started.elapsed());
        let got = bytes
            .windows(7)
            .filter(|w| w == b"\ndata: " || w == b"\ndata:{")
            .count()
            + usize::from(bytes.starts_with(b"data") || bytes.starts_with(b"event"));
        if got < *events {
            return Err(format!("an SSE turn got {got} of {events} events"));
        }
    }
    times.sort();
    Ok(times)
}

/// Every turn once over `socket`; each turn's time.
async fn over_socket(
    socket: &mut Socket,
    work: &[(Bytes, String, usize)],
) -> Result<Vec<Duration>, String> {
    let mut times = Vec::with_capacity(work.len());
    for (_, frame, events) in work {
        let started = Instant::now();
        socket
            .send(Message::text(frame.clone()))
            .await
            .map_err(|e| e.to_string())?;
        let mut got = 0;
        loop {
            let Some(Ok(Message::Text(t))) = socket.next().await else {
                return Err("the socket ended mid-turn".into());
            };
            got += 1;
            let v: Value = serde_json::from_str(t.as_str()).unwrap_or(Value::Null);
            if v["type"] == "response.completed" || v["type"] == "error" {
                break;
            }
        }
        times.push(started.elapsed());
        if got != *events {
            return Err(format!("a socket turn got {got} of {events} frames"));
        }
    }
    times.sort();
    Ok(times)
}

async fn connect(addr: &str) -> Result<Socket, String> {
    let mut req = format!("ws://{addr}/v1/responses")
        .into_client_request()
        .map_err(|e| e.to_string())?;
    req.headers_mut().insert(
        "authorization",
        http::HeaderValue::from_static("Bearer sk-bench"),
    );
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    let (ws, _) = tokio_tungstenite::client_async(req, tcp)
        .await
        .map_err(|e| e.to_string())?;
    Ok(ws)
}

/// The `data:` of one SSE-encoded frame.
fn data_of(frame: &Bytes) -> String {
    let text = String::from_utf8_lossy(frame);
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    data.join("\n")
}

/// The resident memory of `pid` now (VmRSS), in bytes.
fn current_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
    kb.unwrap_or(0) * 1024
}
