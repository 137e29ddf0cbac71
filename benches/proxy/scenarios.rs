//! The scenarios, each a function that prints its table: replay throughput beside the
//! canned server, record's added latency, streaming time to first chunk, start-up time; and
//! what they share (medians, CPU accounting, the context of one bench run).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::daemon::{self, Daemon};
use super::load::{self, percentile, Load, Measure, Run};
use super::{servers, workload, Config, SEED};

/// Median of per-round values.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// One measured run with the CPU each party used during it.
pub struct Sample {
    pub run: Run,
    /// CPU time other processes on the machine used during the run.
    others: Duration,
    /// CPU µs per request: the server under test, the load generator.
    pub server_cpu: f64,
    client_cpu: f64,
}

/// Whose CPU time a run charges to the server.
#[derive(Clone, Copy)]
pub enum Server<'a> {
    /// The canned server's threads in this process.
    Canned,
    /// An agentproxy daemon.
    Proxy(&'a Daemon),
}

impl Server<'_> {
    fn cpu(self) -> Duration {
        match self {
            Server::Canned => daemon::threads_cpu(servers::THREAD_NAME),
            Server::Proxy(d) => d.cpu(),
        }
    }
}

/// Run `load` against `server` and account for the CPU each party used.
pub fn measure(
    rt: &tokio::runtime::Runtime,
    client: &load::HttpClient,
    l: &Load,
    server: Server,
) -> Sample {
    // Everything this process's threads and the daemon used; the rest of the machine's busy
    // time was other processes (the machine is shared).
    let ours = || {
        let proxy = match server {
            Server::Proxy(d) => d.cpu(),
            Server::Canned => Duration::ZERO,
        };
        daemon::threads_cpu(load::THREAD_NAME) + daemon::threads_cpu(servers::THREAD_NAME) + proxy
    };
    let (s0, c0, o0, b0) = (
        server.cpu(),
        daemon::threads_cpu(load::THREAD_NAME),
        ours(),
        daemon::machine_busy(),
    );
    let run = rt.block_on(load::run(client, l));
    let (s1, c1, o1, b1) = (
        server.cpu(),
        daemon::threads_cpu(load::THREAD_NAME),
        ours(),
        daemon::machine_busy(),
    );
    let n = run.ok.max(1) as f64;
    let others = b1.saturating_sub(b0).saturating_sub(o1.saturating_sub(o0));
    Sample {
        others,
        server_cpu: us(s1.saturating_sub(s0)) / n,
        client_cpu: us(c1.saturating_sub(c0)) / n,
        run,
    }
}

/// How busy the rest of the machine was during a scenario's runs, in CPUs: the bench shares
/// its 2 CPUs with whatever else runs, and a busy machine slows both sides of a comparison.
pub fn others_line(samples: &[&Sample]) -> String {
    let others: Duration = samples.iter().map(|s| s.others).sum();
    let wall: Duration = samples.iter().map(|s| s.run.elapsed).sum();
    // /proc/stat counts in 10 ms ticks: shorter runs cannot tell.
    if wall < Duration::from_secs(1) {
        return "(runs too short to tell how busy the rest of the machine was)".into();
    }
    let worst = samples
        .iter()
        .filter(|s| s.run.elapsed >= Duration::from_millis(500))
        .map(|s| s.others.as_secs_f64() / s.run.elapsed.as_secs_f64())
        .fold(0.0, f64::max);
    format!(
        "other processes on the machine used {:.2} CPUs on average during these runs (busiest run: {:.2})",
        others.as_secs_f64() / wall.as_secs_f64(),
        worst
    )
}

pub struct Ctx<'a> {
    pub cfg: &'a Config,
    pub rt: tokio::runtime::Runtime,
    pub servers: servers::Servers,
    pub dir: tempfile::TempDir,
    pub exchanges: Vec<workload::Exchange>,
    pub bodies: Arc<Vec<Bytes>>,
    /// The compact response each body is answered with on replay.
    pub response_lens: Arc<Vec<usize>>,
    /// The canned server's fixed answer: the median-sized recorded response.
    pub canned: Bytes,
    pub failures: usize,
}

impl Ctx<'_> {
    pub fn check(&mut self, what: &str, s: &Run) {
        if s.errors > 0 {
            self.failures += s.errors;
            eprintln!(
                "bench: {what}: {} error(s), first: {}",
                s.errors,
                s.first_error.as_deref().unwrap_or("?")
            );
        }
    }
}

/// What one replay-throughput column serves: the canned server, or a replay daemon.
struct Target<'a> {
    url: String,
    bodies: Arc<Vec<Bytes>>,
    lens: Arc<Vec<usize>>,
    client: load::HttpClient,
    server: Server<'a>,
}

pub fn replay(ctx: &mut Ctx, rss: &mut Vec<(String, u64)>) -> Result<(), String> {
    let cfg = ctx.cfg;
    // The same recordings twice: with the request digests a recording stores (the
    // requests below are byte-identical to them, as a program's are on replay), and
    // without, sent the same requests spelled otherwise (keys in another order, spaces),
    // so every one is keyed.
    let exact = ctx.dir.path().join("replay.json");
    let size = workload::write_cassette(&exact, &ctx.exchanges, true)?;
    let keyed = ctx.dir.path().join("replay-keyed.json");
    workload::write_cassette(&keyed, &ctx.exchanges, false)?;
    let canned_addr = ctx
        .servers
        .start(servers::Reply::Json(ctx.canned.clone()))?;
    let daemon = |file: &str| {
        Daemon::start(
            &["replay", "--cassette", file, "--repeat", "last", "-q"],
            ctx.dir.path(),
        )
    };
    let (de, dk) = (daemon("replay.json")?, daemon("replay-keyed.json")?);
    let targets = [
        Target {
            url: format!("http://{canned_addr}"),
            bodies: ctx.bodies.clone(),
            lens: Arc::new(vec![ctx.canned.len()]),
            client: load::client(),
            server: Server::Canned,
        },
        Target {
            url: de.url.clone(),
            bodies: ctx.bodies.clone(),
            lens: ctx.response_lens.clone(),
            client: load::client(),
            server: Server::Proxy(&de),
        },
        Target {
            url: dk.url.clone(),
            bodies: Arc::new(
                ctx.exchanges
                    .iter()
                    .map(|e| workload::respelled(&e.request))
                    .collect(),
            ),
            lens: ctx.response_lens.clone(),
            client: load::client(),
            server: Server::Proxy(&dk),
        },
    ];
    let n = ctx.bodies.len();
    // Warm-up: every distinct request once (fills replay's encoded-response cache and takes
    // the first pass of each FIFO queue), then enough concurrency to open 64 connections.
    let cmax = cfg.concurrency.iter().copied().max().unwrap_or(1);
    for t in &targets {
        for (c, count) in [(8, n), (cmax, cmax * 4)] {
            let l = Load::new(&t.url, t.bodies.clone(), t.lens.clone(), Measure::Whole)?.with(
                c,
                count,
                Duration::from_secs(60),
            );
            let r = ctx.rt.block_on(load::run(&t.client, &l));
            ctx.check("warm-up", &r);
        }
    }
    // Per concurrency, per target: one sample per round.
    let mut results: Vec<(usize, [Vec<Sample>; 3])> = cfg
        .concurrency
        .iter()
        .map(|&c| (c, Default::default()))
        .collect();
    for round in 0..cfg.rounds {
        for (c, samples) in results.iter_mut() {
            // Rotate which goes first, so a slow moment of the machine hits all alike.
            for k in 0..targets.len() {
                let i = (k + round) % targets.len();
                let t = &targets[i];
                let l = Load::new(&t.url, t.bodies.clone(), t.lens.clone(), Measure::Whole)?.with(
                    *c,
                    1_000_000,
                    cfg.duration,
                );
                samples[i].push(measure(&ctx.rt, &t.client, &l, t.server));
            }
        }
    }
    rss.push((
        format!(
            "replay, {n} interactions ({:.1} MB cassette), after all loads",
            mb(size)
        ),
        de.peak_rss(),
    ));
    drop(targets);
    for d in [de, dk] {
        let (code, _, err, _) = d.interrupt(Duration::from_secs(60));
        if code != Some(0) {
            ctx.failures += 1;
            eprintln!("bench: replay daemon exited {code:?}:\n{err}");
        }
    }
    for (_, samples) in &results {
        for s in samples.iter().flatten() {
            ctx.check("replay throughput", &s.run);
        }
    }

    println!(
        "\n1. replay throughput, {n} distinct requests, {:.1} s per run, keep-alive, 1 load thread",
        cfg.duration.as_secs_f64()
    );
    println!("   identical: requests byte-identical to their recordings (found by digest); keyed: the same requests spelled otherwise (keys reversed, spaces), keyed");
    println!("   conc | req/s canned / identical / keyed | identical/canned [min-max] | keyed/canned | p50 µs canned / identical / keyed | p99 µs canned / identical / keyed | CPU µs/req canned / identical / keyed, client");
    for (c, [canned, exact, keyed]) in &results {
        let rps = |v: &[Sample]| median(v.iter().map(|s| s.run.rps()).collect());
        let pct = |v: &[Sample], q| {
            median(
                v.iter()
                    .map(|s| us(percentile(&s.run.latency, q)))
                    .collect(),
            )
        };
        let cpu = |v: &[Sample], f: fn(&Sample) -> f64| median(v.iter().map(f).collect());
        let ratios = |v: &[Sample]| -> Vec<f64> {
            canned
                .iter()
                .zip(v)
                .map(|(a, b)| b.run.rps() / a.run.rps())
                .collect()
        };
        let exact_ratios = ratios(exact);
        let (lo, hi) = exact_ratios
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
        println!(
            "   {c:>4} | {:>6.0} / {:>6.0} / {:>6.0} | {:>5.1}% [{:.0}-{:.0}%] | {:>5.1}% | {:.0} / {:.0} / {:.0} | {:.0} / {:.0} / {:.0} | {:.0} / {:.0} / {:.0}, {:.0}",
            rps(canned),
            rps(exact),
            rps(keyed),
            median(exact_ratios) * 100.0,
            lo * 100.0,
            hi * 100.0,
            median(ratios(keyed)) * 100.0,
            pct(canned, 0.5),
            pct(exact, 0.5),
            pct(keyed, 0.5),
            pct(canned, 0.99),
            pct(exact, 0.99),
            pct(keyed, 0.99),
            cpu(canned, |s| s.server_cpu),
            cpu(exact, |s| s.server_cpu),
            cpu(keyed, |s| s.server_cpu),
            cpu(exact, |s| s.client_cpu),
        );
    }
    let all: Vec<&Sample> = results
        .iter()
        .flat_map(|(_, s)| s.iter().flatten())
        .collect();
    println!("   {}", others_line(&all));
    Ok(())
}

pub fn record(ctx: &mut Ctx, rss: &mut Vec<(String, u64)>) -> Result<(), String> {
    let cfg = ctx.cfg;
    let upstream = ctx
        .servers
        .start(servers::Reply::Json(ctx.canned.clone()))?;
    let up_url = format!("http://{upstream}");
    let d = Daemon::start(
        &[
            "record",
            "--cassette",
            "recorded.json",
            "--upstream",
            &up_url,
            "-q",
        ],
        ctx.dir.path(),
    )?;
    let (cd, cr) = (load::client(), load::client());
    let expect = Arc::new(vec![ctx.canned.len()]);
    let count = cfg.record_requests;
    for (client, url) in [(&cd, &up_url), (&cr, &d.url)] {
        let l = Load::new(url, ctx.bodies.clone(), expect.clone(), Measure::Whole)?.with(
            1,
            50.min(count),
            Duration::from_secs(30),
        );
        let r = ctx.rt.block_on(load::run(client, &l));
        ctx.check("warm-up", &r);
    }
    let (mut direct, mut through) = (vec![], vec![]);
    for round in 0..cfg.rounds {
        let ld = Load::new(&up_url, ctx.bodies.clone(), expect.clone(), Measure::Whole)?.with(
            1,
            count,
            Duration::from_secs(60),
        );
        let lr = Load::new(&d.url, ctx.bodies.clone(), expect.clone(), Measure::Whole)?.with(
            1,
            count,
            Duration::from_secs(60),
        );
        if round % 2 == 0 {
            direct.push(measure(&ctx.rt, &cd, &ld, Server::Canned));
            through.push(measure(&ctx.rt, &cr, &lr, Server::Proxy(&d)));
        } else {
            through.push(measure(&ctx.rt, &cr, &lr, Server::Proxy(&d)));
            direct.push(measure(&ctx.rt, &cd, &ld, Server::Canned));
        }
    }
    let recorded = through.iter().map(|s| s.run.ok).sum::<usize>() + 50.min(count);
    rss.push((
        format!("record, JSON, {recorded} interactions held until SIGINT"),
        d.peak_rss(),
    ));
    let (code, took, err, peak) = d.interrupt(Duration::from_secs(120));
    if code != Some(0) {
        ctx.failures += 1;
        eprintln!("bench: record daemon exited {code:?}:\n{err}");
    }
    let written = std::fs::metadata(ctx.dir.path().join("recorded.json")).map_or(0, |m| m.len());
    for s in direct.iter().chain(&through) {
        ctx.check("record latency", &s.run);
    }
    let pct = |v: &[Sample], q| {
        median(
            v.iter()
                .map(|s| us(percentile(&s.run.latency, q)))
                .collect(),
        )
    };
    let added: Vec<f64> = direct
        .iter()
        .zip(&through)
        .map(|(a, b)| us(percentile(&b.run.latency, 0.5)) - us(percentile(&a.run.latency, 0.5)))
        .collect();
    let added99: Vec<f64> = direct
        .iter()
        .zip(&through)
        .map(|(a, b)| us(percentile(&b.run.latency, 0.99)) - us(percentile(&a.run.latency, 0.99)))
        .collect();
    println!(
        "\n2. record-mode added latency, concurrency 1, {count} requests per run, canned upstream"
    );
    println!("   path           | p50 µs | p99 µs | proxy CPU µs/req");
    println!(
        "   direct         | {:>6.0} | {:>6.0} |",
        pct(&direct, 0.5),
        pct(&direct, 0.99)
    );
    println!(
        "   through record | {:>6.0} | {:>6.0} | {:.0}",
        pct(&through, 0.5),
        pct(&through, 0.99),
        median(through.iter().map(|s| s.server_cpu).collect())
    );
    println!(
        "   added          | {:>6.0} | {:>6.0} |",
        median(added),
        median(added99)
    );
    println!(
        "   SIGINT to exit, writing the {:.1} MB cassette of {recorded} interactions: {:.2} s, peak RSS to exit {:.1} MB",
        mb(written),
        took.as_secs_f64(),
        mb(peak)
    );
    println!(
        "   {}",
        others_line(&direct.iter().chain(&through).collect::<Vec<_>>())
    );
    Ok(())
}

pub fn stream(ctx: &mut Ctx, rss: &mut Vec<(String, u64)>) -> Result<(), String> {
    let cfg = ctx.cfg;
    let events = workload::sse_events(4);
    let total_len = events.iter().map(Bytes::len).sum::<usize>();
    let nevents = events.len();
    let upstream = ctx.servers.start(servers::Reply::Sse {
        events,
        gap: cfg.chunk_gap,
    })?;
    let up_url = format!("http://{upstream}");
    let d = Daemon::start(
        &[
            "record",
            "--cassette",
            "streamed.json",
            "--upstream",
            &up_url,
            "-q",
        ],
        ctx.dir.path(),
    )?;
    let bodies: Vec<Bytes> = ctx
        .exchanges
        .iter()
        .map(|e| {
            let mut v = e.request.clone();
            v["stream"] = true.into();
            v["stream_options"] = serde_json::json!({"include_usage": true});
            Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
        })
        .collect();
    let bodies = Arc::new(bodies);
    let expect = Arc::new(vec![total_len]);
    let (cd, cr) = (load::client(), load::client());
    let limit = Duration::from_secs(120);
    for (client, url) in [(&cd, &up_url), (&cr, &d.url)] {
        let l =
            Load::new(url, bodies.clone(), expect.clone(), Measure::FirstChunk)?.with(1, 3, limit);
        let r = ctx.rt.block_on(load::run(client, &l));
        ctx.check("warm-up", &r);
    }
    let (mut direct, mut through) = (vec![], vec![]);
    for round in 0..cfg.rounds {
        let ld = Load::new(&up_url, bodies.clone(), expect.clone(), Measure::FirstChunk)?.with(
            1,
            cfg.streams,
            limit,
        );
        let lr = Load::new(&d.url, bodies.clone(), expect.clone(), Measure::FirstChunk)?.with(
            1,
            cfg.streams,
            limit,
        );
        if round % 2 == 0 {
            direct.push(measure(&ctx.rt, &cd, &ld, Server::Canned));
            through.push(measure(&ctx.rt, &cr, &lr, Server::Proxy(&d)));
        } else {
            through.push(measure(&ctx.rt, &cr, &lr, Server::Proxy(&d)));
            direct.push(measure(&ctx.rt, &cd, &ld, Server::Canned));
        }
    }
    rss.push(("record, SSE streams".into(), d.peak_rss()));
    let (code, _, err, _) = d.interrupt(Duration::from_secs(60));
    if code != Some(0) {
        ctx.failures += 1;
        eprintln!("bench: stream record daemon exited {code:?}:\n{err}");
    }
    for s in direct.iter().chain(&through) {
        ctx.check("stream", &s.run);
    }
    let first = |v: &[Sample], q| {
        median(
            v.iter()
                .map(|s| us(percentile(&s.run.latency, q)))
                .collect(),
        )
    };
    let whole = |v: &[Sample]| {
        median(
            v.iter()
                .map(|s| us(percentile(&s.run.total, 0.5)))
                .collect(),
        ) / 1000.0
    };
    let added: Vec<f64> = direct
        .iter()
        .zip(&through)
        .map(|(a, b)| us(percentile(&b.run.latency, 0.5)) - us(percentile(&a.run.latency, 0.5)))
        .collect();
    println!(
        "\n3. streaming time to first chunk, concurrency 1, {} streams per run; upstream sends {nevents} SSE events, the first at once, then one every {} ms",
        cfg.streams,
        cfg.chunk_gap.as_millis()
    );
    println!("   path           | first chunk p50 µs | p99 µs | whole stream p50 ms");
    println!(
        "   direct         | {:>18.0} | {:>6.0} | {:>8.1}",
        first(&direct, 0.5),
        first(&direct, 0.99),
        whole(&direct)
    );
    println!(
        "   through record | {:>18.0} | {:>6.0} | {:>8.1}",
        first(&through, 0.5),
        first(&through, 0.99),
        whole(&through)
    );
    println!("   added p50      | {:>18.0} |", median(added));
    println!(
        "   {}",
        others_line(&direct.iter().chain(&through).collect::<Vec<_>>())
    );
    Ok(())
}

pub fn startup(ctx: &mut Ctx, rss: &mut Vec<(String, u64)>) -> Result<(), String> {
    let cfg = ctx.cfg;
    println!("\n4. time to start replaying: spawn of `agentproxy replay` daemon to the first 200 (warm page cache), {} runs each", cfg.startup_runs);
    println!("   interactions | mean request KB | cassette MB | to export line ms | to first 200 ms [min-max] | MB/s | peak RSS MB");
    let mut inspected = Vec::new();
    for &(n, max_kb) in &cfg.startup_sizes {
        let t = std::time::Instant::now();
        let path = ctx.dir.path().join(format!("startup-{n}-{max_kb}.json"));
        let (size, first_body, mean_kb) = {
            let exchanges = workload::generate(n, max_kb, SEED);
            let wire: usize = exchanges.iter().map(|e| e.wire.len()).sum();
            (
                workload::write_cassette(&path, &exchanges, true)?,
                exchanges[0].wire.clone(),
                wire as f64 / exchanges.len().max(1) as f64 / 1024.0,
            )
        };
        let gen = t.elapsed();
        let name = path
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or("startup.json")
            .to_owned();
        let (mut ready, mut first, mut peak) = (vec![], vec![], vec![]);
        for _ in 0..cfg.startup_runs {
            let spawned = std::time::Instant::now();
            let d = Daemon::start(&["replay", "--cassette", &name, "-q"], ctx.dir.path())?;
            let status = daemon::post_once(&d.addr, "/v1/chat/completions", &first_body)?;
            let took = spawned.elapsed();
            if status != 200 {
                ctx.failures += 1;
                eprintln!("bench: start-up with {n} interactions: first request got {status}");
            }
            ready.push(d.ready_after.as_secs_f64() * 1e3);
            first.push(took.as_secs_f64() * 1e3);
            peak.push(d.peak_rss() as f64);
            // Exit 0: the rest of the recordings are unused, which replay only reports.
            let _ = d.interrupt(Duration::from_secs(30));
        }
        let (lo, hi) = first
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
        let peak_m = median(peak);
        let first_m = median(first);
        println!(
            "   {n:>12} | {mean_kb:>15.1} | {:>11.1} | {:>17.0} | {:>15.0} {:<9} | {:>4.0} | {:>11.1}   (generated and written in {:.1} s)",
            mb(size),
            median(ready),
            first_m,
            format!("[{lo:.0}-{hi:.0}]"),
            mb(size) / (first_m / 1e3),
            peak_m / (1024.0 * 1024.0),
            gen.as_secs_f64()
        );
        rss.push((
            format!(
                "replay start-up, {n} interactions ({:.1} MB cassette)",
                mb(size)
            ),
            peak_m as u64,
        ));
        inspected.push(inspect(ctx, &name, size)?);
        if !cfg.keep_files {
            let _ = std::fs::remove_file(&path);
        }
    }
    println!("\n4b. reading the start-up cassettes: `agentproxy show` of each, `agentproxy diff` of it and a copy; peak RSS over the file(s) read");
    println!("   cassette MB | show s | show peak MB | × file | diff s | diff peak MB | × files");
    for line in inspected {
        println!("{line}");
    }
    Ok(())
}

/// `show` of the cassette `name` (of `size` bytes) and `diff` of it against a copy: one
/// line of table 4b.
fn inspect(ctx: &mut Ctx, name: &str, size: u64) -> Result<String, String> {
    let dir = ctx.dir.path();
    let copy = format!("copy-of-{name}");
    std::fs::copy(dir.join(name), dir.join(&copy)).map_err(|e| format!("copy {name}: {e}"))?;
    let (shown, show_took, show_peak) = daemon::run_to_end(&["show", name], dir)?;
    let (diffed, diff_took, diff_peak) = daemon::run_to_end(&["diff", name, &copy], dir)?;
    let _ = std::fs::remove_file(dir.join(&copy));
    for (ok, what) in [(shown, "show"), (diffed, "diff")] {
        if !ok {
            ctx.failures += 1;
            eprintln!("bench: agentproxy {what} of {name} failed");
        }
    }
    let size = size as f64;
    Ok(format!(
        "   {:>11.1} | {:>6.2} | {:>12.1} | {:>6.2} | {:>6.2} | {:>12.1} | {:>7.2}",
        mb(size as u64),
        show_took.as_secs_f64(),
        mb(show_peak),
        show_peak as f64 / size,
        diff_took.as_secs_f64(),
        mb(diff_peak),
        diff_peak as f64 / (2.0 * size),
    ))
}
