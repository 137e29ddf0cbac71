//! Scenario 6: replay throughput and latency of streamed replies in the four dialects,
//! each beside a canned server that answers that dialect's median-sized recorded stream
//! on the same HTTP stack, in the same run (interleaved).
//!
//! Per dialect, one `agentproxy replay --repeat last` daemon serves a cassette of recorded
//! streams (dialects.rs), each from its own directory. Every round runs every concurrency
//! for every dialect, canned and replay one after the other, alternating which goes first.
//! A request counts only when it got a 200 and exactly the bytes of its stream as the
//! upstream sent them; anything else fails the bench.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::daemon::Daemon;
use super::dialects::{self, Dialect, Streamed, DIALECTS};
use super::load::{self, percentile, HttpClient, Load, Measure};
use super::scenarios::{mb, measure, median, others_line, us, Ctx, Sample, Server};
use super::{servers, workload, Config, SEED};

/// One dialect under test.
struct Target {
    dialect: Dialect,
    daemon: Daemon,
    canned_url: String,
    /// Request bodies, and the length of the stream each must get back on replay.
    bodies: Arc<Vec<Bytes>>,
    stream_lens: Arc<Vec<usize>>,
    /// The canned server's stream: its length, and its number of events.
    canned_len: Arc<Vec<usize>>,
    canned_events: usize,
    /// Events per recorded stream, one entry per request.
    events: Vec<usize>,
    cassette_bytes: u64,
    /// One connection pool per server, so connections are never shared.
    canned_client: HttpClient,
    replay_client: HttpClient,
    /// Per concurrency: (concurrency, canned samples, replay samples), one per round.
    results: Vec<(usize, Vec<Sample>, Vec<Sample>)>,
}

impl Target {
    /// Write the dialect's cassette into `dir`, start its replay daemon there and a canned
    /// server answering its median-sized stream.
    fn start(
        ctx: &Ctx,
        dialect: Dialect,
        chat: &[workload::Exchange],
        dir: &Path,
    ) -> Result<Target, String> {
        let streams = dialects::streamed(dialect, chat);
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("failed to create {}: {e}", dir.display()))?;
        let cassette_bytes =
            dialects::write_cassette(&dir.join("streams.json"), dialect, &streams)?;
        let mut by_size: Vec<&Streamed> = streams.iter().collect();
        by_size.sort_by_key(|s| s.len());
        let median = by_size[by_size.len() / 2];
        let canned = ctx
            .servers
            .start(servers::Reply::Events(median.frames.clone()))?;
        let daemon = Daemon::start(
            &[
                "replay",
                "--cassette",
                "streams.json",
                "--repeat",
                "last",
                "-q",
            ],
            dir,
        )?;
        Ok(Target {
            dialect,
            daemon,
            canned_url: format!("http://{canned}"),
            bodies: Arc::new(streams.iter().map(|s| s.wire.clone()).collect()),
            stream_lens: Arc::new(streams.iter().map(Streamed::len).collect()),
            canned_len: Arc::new(vec![median.len()]),
            canned_events: median.frames.len(),
            events: streams.iter().map(|s| s.frames.len()).collect(),
            cassette_bytes,
            canned_client: load::client(),
            replay_client: load::client(),
            results: ctx
                .cfg
                .concurrency
                .iter()
                .map(|&c| (c, vec![], vec![]))
                .collect(),
        })
    }

    /// Every distinct request once (replay takes the first pass of each FIFO queue, and
    /// every recorded stream is checked), then enough concurrency to open `cmax`
    /// connections (4 requests each; 1 under --quick); on both servers.
    fn warm_up(&self, ctx: &mut Ctx, cmax: usize) -> Result<(), String> {
        let n = self.bodies.len();
        let per_connection = if ctx.cfg.quick { 1 } else { 4 };
        for replay in [false, true] {
            for (c, count) in [(8, n), (cmax, cmax * per_connection)] {
                let (client, l) = self.load(replay)?;
                let r = ctx.rt.block_on(load::run(
                    client,
                    &l.with(c, count, Duration::from_secs(60)),
                ));
                ctx.check("streams warm-up", &r);
            }
        }
        Ok(())
    }

    /// The client and a load (of one request, until bounded with `Load::with`) for the
    /// replay daemon or the canned server, on the dialect's path.
    fn load(&self, replay: bool) -> Result<(&HttpClient, Load), String> {
        let (client, url, expect) = if replay {
            (&self.replay_client, &self.daemon.url, &self.stream_lens)
        } else {
            (&self.canned_client, &self.canned_url, &self.canned_len)
        };
        let target = format!("{url}{}", self.dialect.path);
        let l = Load {
            url: target
                .parse()
                .map_err(|e| format!("bad url {target}: {e}"))?,
            ..Load::new(url, self.bodies.clone(), expect.clone(), Measure::Whole)?
        };
        Ok((client, l))
    }

    /// One run each on the canned server and the daemon at the `ci`-th concurrency.
    fn round(&mut self, ctx: &Ctx, ci: usize, canned_first: bool) -> Result<(), String> {
        let c = self.results[ci].0;
        let run = |replay: bool| -> Result<Sample, String> {
            let (client, l) = self.load(replay)?;
            let l = l.with(c, 1_000_000, ctx.cfg.stream_duration);
            let server = if replay {
                Server::Proxy(&self.daemon)
            } else {
                Server::Canned
            };
            Ok(measure(&ctx.rt, client, &l, server))
        };
        // Alternate which goes first, so a slow moment of the machine hits both alike.
        let (canned, replay) = if canned_first {
            let canned = run(false)?;
            (canned, run(true)?)
        } else {
            let replay = run(true)?;
            (run(false)?, replay)
        };
        self.results[ci].1.push(canned);
        self.results[ci].2.push(replay);
        Ok(())
    }

    /// Mean request body in KB.
    fn request_kb(&self) -> f64 {
        self.bodies.iter().map(Bytes::len).sum::<usize>() as f64
            / self.bodies.len().max(1) as f64
            / 1024.0
    }

    /// Mean recorded stream in KB.
    fn stream_kb(&self) -> f64 {
        self.stream_lens.iter().sum::<usize>() as f64
            / self.stream_lens.len().max(1) as f64
            / 1024.0
    }
}

/// Run the scenario and print its table; each daemon's peak RSS goes to `rss`.
pub fn run(ctx: &mut Ctx, rss: &mut Vec<(String, u64)>) -> Result<(), String> {
    let cfg = ctx.cfg;
    let chat = workload::generate(cfg.stream_requests, cfg.max_kb, SEED);
    let root = ctx.dir.path().join("streams");
    let mut targets = DIALECTS
        .iter()
        .map(|&d| Target::start(ctx, d, &chat, &root.join(d.route.name())))
        .collect::<Result<Vec<_>, _>>()?;
    let cmax = cfg.concurrency.iter().copied().max().unwrap_or(1);
    for t in &targets {
        t.warm_up(ctx, cmax)?;
    }
    for round in 0..cfg.rounds {
        for ci in 0..cfg.concurrency.len() {
            for t in targets.iter_mut() {
                t.round(ctx, ci, round % 2 == 0)?;
            }
        }
    }
    for t in &targets {
        rss.push((
            format!(
                "replay, {} {} streams ({:.1} MB)",
                t.bodies.len(),
                t.dialect.route.name(),
                mb(t.cassette_bytes)
            ),
            t.daemon.peak_rss(),
        ));
        for (_, canned, replay) in &t.results {
            for s in canned.iter().chain(replay) {
                ctx.check("streams throughput", &s.run);
            }
        }
    }
    print(cfg, &targets);
    for t in targets {
        let (code, _, err, _) = t.daemon.interrupt(Duration::from_secs(60));
        if code != Some(0) {
            ctx.failures += 1;
            eprintln!(
                "bench: {} replay daemon exited {code:?}:\n{err}",
                t.dialect.route.name()
            );
        }
    }
    Ok(())
}

fn print(cfg: &Config, targets: &[Target]) {
    println!(
        "\n6. replay throughput of streamed replies, {} distinct requests per dialect, {:.2} s per run, keep-alive, 1 load thread",
        cfg.stream_requests,
        cfg.stream_duration.as_secs_f64()
    );
    println!("   dialect            | conc | canned req/s | replay req/s | replay/canned       | p50 µs canned / replay | p99 µs canned / replay | CPU µs/req canned, replay | events/stream | request KB");
    for t in targets {
        let mean = t.events.iter().sum::<usize>() as f64 / t.events.len().max(1) as f64;
        let (lo, hi) = (
            t.events.iter().min().copied().unwrap_or(0),
            t.events.iter().max().copied().unwrap_or(0),
        );
        for (c, canned, replay) in &t.results {
            println!(
                "   {:<18} | {c:>4} | {} | {:>13} | {:>10.1}",
                t.dialect.route.name(),
                row(canned, replay),
                format!("{mean:.0} [{lo}-{hi}]"),
                t.request_kb()
            );
        }
    }
    let canned: Vec<String> = targets
        .iter()
        .map(|t| {
            format!(
                "{} {} events {:.1} KB",
                t.dialect.route.name(),
                t.canned_events,
                t.canned_len[0] as f64 / 1024.0
            )
        })
        .collect();
    println!(
        "   canned server: the median-sized recorded stream, all events at once: {}",
        canned.join("; ")
    );
    let recorded: Vec<String> = targets
        .iter()
        .map(|t| {
            format!(
                "{} {:.1} KB ({:.1} MB cassette)",
                t.dialect.route.name(),
                t.stream_kb(),
                mb(t.cassette_bytes)
            )
        })
        .collect();
    println!("   recorded streams, mean: {}", recorded.join("; "));
    let all: Vec<&Sample> = targets
        .iter()
        .flat_map(|t| t.results.iter())
        .flat_map(|(_, a, b)| a.iter().chain(b))
        .collect();
    println!("   {}", others_line(&all));
}

/// The throughput, latency and CPU columns of one row: medians over rounds, and the
/// replay/canned ratio's spread.
fn row(canned: &[Sample], replay: &[Sample]) -> String {
    let rps = |v: &[Sample]| median(v.iter().map(|s| s.run.rps()).collect());
    let pct = |v: &[Sample], q| {
        median(
            v.iter()
                .map(|s| us(percentile(&s.run.latency, q)))
                .collect(),
        )
    };
    let cpu = |v: &[Sample]| median(v.iter().map(|s| s.server_cpu).collect());
    let ratios: Vec<f64> = canned
        .iter()
        .zip(replay)
        .map(|(a, b)| b.run.rps() / a.run.rps())
        .collect();
    let (lo, hi) = ratios
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
    let ratio = format!(
        "{:>5.1}% [{:.0}-{:.0}%]",
        median(ratios) * 100.0,
        lo * 100.0,
        hi * 100.0
    );
    format!(
        "{:>12.0} | {:>12.0} | {ratio:<19} | {:>9.0} / {:<10.0} | {:>9.0} / {:<10.0} | {:>12.0}, {:<11.0}",
        rps(canned),
        rps(replay),
        pct(canned, 0.5),
        pct(replay, 0.5),
        pct(canned, 0.99),
        pct(replay, 0.99),
        cpu(canned),
        cpu(replay),
    )
}
