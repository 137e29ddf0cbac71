//! The near-miss scenario: requests that differ from a recording in their last message
//! (the question edited, as after a prompt change), each answered with the near-miss
//! report (a 400), one at a time on a fresh connection, against the whole replay
//! cassette. A fresh daemon per round, so its first miss is a cold one; the canned server
//! answers the same bodies for scale.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;

use super::daemon::{self, Daemon};
use super::scenarios::{median, us, Ctx};
use super::{servers, workload};

const PATH: &str = "/v1/chat/completions";

/// The body of `wire` with its last message's text edited.
fn edited(wire: &[u8]) -> Result<Bytes, String> {
    let mut body: Value = serde_json::from_slice(wire).map_err(|e| e.to_string())?;
    let last = (body["messages"].as_array_mut())
        .and_then(|m| m.last_mut())
        .ok_or("a workload request has no messages")?;
    let text = last["content"].as_str().unwrap_or_default().to_owned();
    last["content"] = Value::String(format!("{text} Answer in one sentence."));
    serde_json::to_vec(&body)
        .map(Bytes::from)
        .map_err(|e| e.to_string())
}

/// Each body posted once, in order: the latencies, in order, and the responses.
fn post_each(addr: &str, bodies: &[Bytes]) -> Result<(Vec<Duration>, Vec<String>), String> {
    let mut latencies = Vec::with_capacity(bodies.len());
    let mut texts = Vec::with_capacity(bodies.len());
    for body in bodies {
        let sent = Instant::now();
        let (_, text) = daemon::post_text_once(addr, PATH, body)?;
        latencies.push(sent.elapsed());
        texts.push(text);
    }
    Ok((latencies, texts))
}

pub fn run(ctx: &mut Ctx) -> Result<(), String> {
    let cfg = ctx.cfg;
    let n = ctx.exchanges.len();
    let count = if cfg.quick { 5 } else { 40 }.min(n);
    workload::write_cassette(&ctx.dir.path().join("miss.json"), &ctx.exchanges, true)?;
    // Spread over the cassette, so a search that stops early gains nothing.
    let picks: Vec<usize> = (0..count).map(|k| k * n / count + n / count / 2).collect();
    let bodies: Vec<Bytes> = (picks.iter())
        .map(|&i| edited(&ctx.bodies[i]))
        .collect::<Result<_, _>>()?;
    let canned = ctx
        .servers
        .start(servers::Reply::Json(ctx.canned.clone()))?
        .to_string();
    let (mut first, mut rest, mut canned_p50, mut rss) = (vec![], vec![], vec![], vec![]);
    for _ in 0..cfg.rounds {
        let d = Daemon::start(&["replay", "--cassette", "miss.json", "-q"], ctx.dir.path())?;
        let (latencies, texts) = post_each(&d.addr, &bodies)?;
        for (text, pick) in texts.iter().zip(&picks) {
            let nearest = format!("nearest recorded request: interaction #{pick}");
            if !text.starts_with("HTTP/1.1 400") || !text.contains(&nearest) {
                ctx.failures += 1;
                eprintln!("bench: miss: not the near-miss report naming #{pick}:\n{text}");
            }
        }
        first.push(us(latencies[0]));
        let mut later: Vec<f64> = latencies[1..].iter().map(|l| us(*l)).collect();
        later.sort_by(f64::total_cmp);
        rest.push(later.get(later.len() / 2).copied().unwrap_or(f64::NAN));
        rss.push(super::scenarios::mb(d.peak_rss()));
        let _ = d.interrupt(Duration::from_secs(30));
        let (canned_latencies, _) = post_each(&canned, &bodies)?;
        canned_p50.push(median(canned_latencies.iter().map(|l| us(*l)).collect()));
    }
    println!(
        "\n7. near misses: {count} requests whose last message was edited, against {n} recordings, one at a time, fresh connections"
    );
    println!("   path                         | ms");
    println!(
        "   first miss of a daemon       | {:>7.1}",
        median(first) / 1000.0
    );
    println!(
        "   later misses, p50            | {:>7.1}",
        median(rest) / 1000.0
    );
    println!(
        "   canned server, same bodies   | {:>7.2}",
        median(canned_p50) / 1000.0
    );
    println!(
        "   peak RSS of the replay daemon after its misses: {:.1} MB",
        median(rss)
    );
    Ok(())
}
