//! agentproxy's benchmark: drives the real binary over 127.0.0.1 and prints a table.
//!
//! `cargo bench --bench proxy` runs every scenario at full size (a few minutes);
//! `cargo bench --bench proxy -- --quick` runs them all small, in seconds. Under
//! `cargo test --all-targets` (no `--bench` argument) it runs `--quick` against the debug
//! binary, so the test suite keeps the bench working, and prints its tables only if it
//! fails; a timing is never a pass/fail: the run fails only when a request fails. docs/benchmarks.md explains every figure.
//!
//! 0. replay's per-request work, step by step, in process (where the time goes);
//! 1. replay throughput and latency at concurrency 1, 8, 64, beside a canned-reply server
//!    on the same HTTP stack, in the same run (interleaved);
//! 2. record-mode added latency against the canned server as upstream;
//! 3. streaming time to first chunk, through record and direct;
//! 4. time to start replaying a 1,000- and a 10,000-interaction cassette; 4b. `show` and
//!    `diff` of those cassettes, time and peak RSS;
//! 5. peak RSS (VmHWM) of the proxy in each;
//! 6. replay throughput and latency of streamed replies in the three dialects (chat,
//!    Responses, Messages), beside a canned server answering the same kind of stream.

// The binary's allocator, so the in-process figures (scenario 0) are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../support/smoke.rs"]
mod smoke;

mod daemon;
mod dialects;
mod egress;
mod load;
mod miss;
mod scenarios;
mod servers;
mod socket;
mod stages;
mod streams;
mod workload;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use scenarios::{mb, Ctx};

const SCENARIOS: [&str; 9] = [
    "stages", "replay", "record", "stream", "startup", "streams", "miss", "egress", "socket",
];
const SEED: u64 = 0x00A6_E7B0_0C5E;
const USAGE: &str = "usage: cargo bench --bench proxy [-- OPTIONS]
  --quick                small sizes, one round (what `cargo test --all-targets` runs)
  --scenario NAME        stages | replay | record | stream | startup | streams | miss | egress
                         | socket
                         (repeatable; default all)
  --rounds N             interleaved rounds per scenario; figures are medians (default 3)
  --requests N           distinct requests in the replay cassette (default 1000)
  --duration SECS        length of each throughput run (default 3; 1.5 in streams)
  --concurrency LIST     e.g. 1,8,64 (default)
  --client-threads N     load generator worker threads (default 1)
  --startup LIST         start-up cassettes as COUNT[@MAX_KB] (default 1000,10000,10000@4;
                         MAX_KB caps request bodies, 40 unless given)
  --keep-files           keep the generated cassettes and daemon logs (path printed at the end)
  AGENTPROXY_BENCH_BIN   environment: run this agentproxy binary instead (compare builds)";

struct Config {
    quick: bool,
    scenarios: Vec<String>,
    rounds: usize,
    requests: usize,
    max_kb: usize,
    duration: Duration,
    concurrency: Vec<usize>,
    client_threads: usize,
    record_requests: usize,
    streams: usize,
    chunk_gap: Duration,
    /// Distinct requests per dialect in the streams scenario, and its run length.
    stream_requests: usize,
    stream_duration: Duration,
    /// (interactions, largest request body in KB) per start-up cassette.
    startup_sizes: Vec<(usize, usize)>,
    startup_runs: usize,
    /// Keep the temp dir (cassettes, daemon stderr) for profiling by hand.
    keep_files: bool,
}

fn parse_args() -> Result<Config, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes --bench; `cargo test` does not: then this is a smoke test.
    let quick = args.iter().any(|a| a == "--quick") || !args.iter().any(|a| a == "--bench");
    let mut c = if quick {
        Config {
            quick,
            scenarios: vec![],
            rounds: 1,
            requests: 100,
            max_kb: 40,
            duration: Duration::from_millis(300),
            concurrency: vec![1, 8, 64],
            client_threads: 1,
            record_requests: 100,
            streams: 5,
            chunk_gap: Duration::from_millis(20),
            stream_requests: 20,
            stream_duration: Duration::from_millis(50),
            startup_sizes: vec![(100, 40), (500, 4)],
            startup_runs: 1,
            keep_files: false,
        }
    } else {
        Config {
            quick,
            scenarios: vec![],
            rounds: 3,
            requests: 1000,
            max_kb: 40,
            duration: Duration::from_secs(3),
            concurrency: vec![1, 8, 64],
            client_threads: 1,
            record_requests: 2000,
            streams: 40,
            chunk_gap: Duration::from_millis(20),
            stream_requests: 300,
            stream_duration: Duration::from_millis(1500),
            startup_sizes: vec![(1000, 40), (10_000, 40), (10_000, 4)],
            startup_runs: 5,
            keep_files: false,
        }
    };
    let list = |v: &str| -> Result<Vec<usize>, String> {
        v.split(',')
            .map(|x| {
                x.trim()
                    .parse()
                    .map_err(|_| format!("not a number list: {v}"))
            })
            .collect()
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value\n{USAGE}"))
        };
        match a.as_str() {
            "--quick" | "--bench" => {}
            "--keep-files" => c.keep_files = true,
            "--scenario" => c.scenarios.extend(val()?.split(',').map(str::to_owned)),
            "--rounds" => c.rounds = val()?.parse().map_err(|_| "bad --rounds")?,
            "--requests" => c.requests = val()?.parse().map_err(|_| "bad --requests")?,
            "--duration" => {
                c.duration = Duration::from_secs_f64(val()?.parse().map_err(|_| "bad --duration")?);
                c.stream_duration = c.duration;
            }
            "--concurrency" => c.concurrency = list(&val()?)?,
            "--client-threads" => {
                c.client_threads = val()?.parse().map_err(|_| "bad --client-threads")?
            }
            "--startup" => {
                c.startup_sizes = val()?
                    .split(',')
                    .map(|x| {
                        let (n, kb) = x.split_once('@').unwrap_or((x, "40"));
                        Some((n.trim().parse().ok()?, kb.trim().parse().ok()?))
                    })
                    .collect::<Option<_>>()
                    .ok_or(format!("bad --startup\n{USAGE}"))?
            }
            "-h" | "--help" => return Err(USAGE.into()),
            // cargo test may pass test-harness flags (filters, --nocapture): not ours.
            other => eprintln!("bench: ignoring argument {other}"),
        }
    }
    if c.scenarios.is_empty() {
        c.scenarios = SCENARIOS.map(String::from).to_vec();
    }
    for s in &c.scenarios {
        if !SCENARIOS.contains(&s.as_str()) {
            return Err(format!("unknown scenario {s}\n{USAGE}"));
        }
    }
    c.rounds = c.rounds.max(1);
    c.requests = c.requests.max(1);
    Ok(c)
}

fn main() -> std::process::ExitCode {
    if let Some(code) = daemon::measuring_helper() {
        return code;
    }
    if let Some(code) = smoke::quiet_unless_asked("proxy") {
        return code;
    }
    let cfg = match parse_args() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    match run(&cfg) {
        Ok(0) => std::process::ExitCode::SUCCESS,
        Ok(failures) => {
            eprintln!("bench: {failures} request(s) failed; the figures above are not valid");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(1);
        }
    }
}

fn run(cfg: &Config) -> Result<usize, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.client_threads.max(1))
        .thread_name(load::THREAD_NAME)
        .enable_all()
        .build()
        .map_err(|e| format!("failed to start the client runtime: {e}"))?;
    let dir = tempfile::tempdir().map_err(|e| format!("failed to create a temp dir: {e}"))?;
    let t = std::time::Instant::now();
    let exchanges = workload::generate(cfg.requests, cfg.max_kb, SEED);
    let bodies: Vec<Bytes> = exchanges.iter().map(|e| e.wire.clone()).collect();
    let response_lens: Vec<usize> = exchanges
        .iter()
        .map(|e| {
            serde_json::to_vec(&e.response)
                .map(|v| v.len())
                .unwrap_or(0)
        })
        .collect();
    let mut by_size: Vec<usize> = (0..exchanges.len()).collect();
    by_size.sort_by_key(|&i| response_lens[i]);
    let canned = Bytes::from(
        serde_json::to_vec(&exchanges[by_size[by_size.len() / 2]].response).unwrap_or_default(),
    );
    let gen_time = t.elapsed();

    print_header(cfg, &bodies, &response_lens, canned.len(), gen_time);
    let mut ctx = Ctx {
        cfg,
        rt,
        servers: servers::Servers::new()?,
        dir,
        exchanges,
        bodies: Arc::new(bodies),
        response_lens: Arc::new(response_lens),
        canned,
        failures: 0,
    };
    let mut rss: Vec<(String, u64)> = vec![];
    for s in &cfg.scenarios {
        match s.as_str() {
            "stages" => {
                let respelled: Vec<Bytes> = (ctx.exchanges.iter())
                    .map(|e| workload::respelled(&e.request))
                    .collect();
                let min_time = match cfg.quick {
                    true => Duration::from_millis(100),
                    false => Duration::from_secs(3),
                };
                if let Err(e) = stages::run(&ctx.bodies, &respelled, min_time) {
                    eprintln!("bench: {e}");
                    ctx.failures += 1;
                }
            }
            "replay" => scenarios::replay(&mut ctx, &mut rss)?,
            "record" => scenarios::record(&mut ctx, &mut rss)?,
            "stream" => scenarios::stream(&mut ctx, &mut rss)?,
            "streams" => streams::run(&mut ctx, &mut rss)?,
            "miss" => miss::run(&mut ctx)?,
            "egress" => egress::run(&mut ctx)?,
            "socket" => socket::run(&mut ctx, &mut rss)?,
            _ => scenarios::startup(&mut ctx, &mut rss)?,
        }
    }
    println!("\n5. peak RSS of the agentproxy process (VmHWM, read before SIGINT)");
    for (what, bytes) in &rss {
        println!("   {what:<58} {:>8.1} MB", mb(*bytes));
    }
    let failures = ctx.failures;
    if cfg.keep_files {
        let kept = ctx.dir.keep();
        println!("\nfiles kept in {}", kept.display());
    }
    Ok(failures)
}

fn print_header(cfg: &Config, bodies: &[Bytes], resp: &[usize], canned: usize, gen: Duration) {
    let mut sizes: Vec<usize> = bodies.iter().map(Bytes::len).collect();
    sizes.sort_unstable();
    let mut rs = resp.to_vec();
    rs.sort_unstable();
    let kb = |b: usize| b as f64 / 1024.0;
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let build = if cfg!(debug_assertions) {
        ", debug build"
    } else {
        ""
    };
    println!(
        "agentproxy bench{}{build}",
        if cfg.quick {
            " (--quick: small sizes, figures not meaningful)"
        } else {
            ""
        }
    );
    println!("  binary   {}", daemon::bin());
    println!("  machine  {cpus} CPU(s), {cpu}; client, canned server and proxy share them");
    println!(
        "  workload {} distinct chat requests, bodies {:.1}-{:.1} KB (median {:.1}, mean {:.1}); responses {:.1}-{:.1} KB; canned reply {:.1} KB; generated in {:.1} s",
        sizes.len(),
        kb(sizes[0]),
        kb(sizes[sizes.len() - 1]),
        kb(sizes[sizes.len() / 2]),
        kb(sizes.iter().sum::<usize>()) / sizes.len() as f64,
        kb(rs[0]),
        kb(rs[rs.len() - 1]),
        kb(canned),
        gen.as_secs_f64()
    );
    println!(
        "  rounds   {} (figures are medians over rounds; [min-max] where shown)",
        cfg.rounds
    );
}
