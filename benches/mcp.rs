//! What the MCP stand-in costs per call. A stdio server (tests/e2e/mcp_raw.py, which
//! echoes) is called with N sequential `tools/call` requests, one line out, one line back:
//! - directly, the baseline: the server's own time and the pipes;
//! - through `agentproxy mcp` under `agentproxy record`: relayed, and each exchange
//!   stored in the session;
//! - through `agentproxy mcp` under `agentproxy replay` of that recording, the server
//!   never started: each answer comes from the cassette.
//!
//! Reported: p50 and p90 of each, the stand-in's added p50 while recording (record −
//! direct), and the replayed answer's p50 (which includes no server time at all). Run:
//! `cargo bench --bench mcp` (300 calls); `cargo test --all-targets` runs it with 20,
//! quiet unless it fails. Figures are in docs/benchmarks.md.

mod support {
    pub mod smoke;
}

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_agentproxy");

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn server() -> Vec<String> {
    vec![
        "python3".into(),
        repo().join("tests/e2e/mcp_raw.py").display().to_string(),
        "server".into(),
        "--inline".into(),
    ]
}

/// A stdio peer: its pipes, for one line out and one back.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    fn start(argv: &[String], session: Option<&Session>) -> Peer {
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .env_remove("AGENTPROXY_URL")
            .env_remove("AGENTPROXY_SECRET");
        if let Some(s) = session {
            cmd.env("AGENTPROXY_URL", &s.url)
                .env("AGENTPROXY_SECRET", &s.secret);
        }
        let mut child = cmd.spawn().expect("the peer starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Peer {
            child,
            stdin,
            stdout,
        }
    }

    /// The round trip of each of `n` calls, in order.
    fn calls(&mut self, n: usize) -> Vec<Duration> {
        let mut out = Vec::with_capacity(n);
        let mut line = String::new();
        for i in 0..n {
            let msg = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/call\",\"params\":{{\"name\":\"lookup\",\"arguments\":{{\"n\":{i}}}}}}}\n"
            );
            let started = Instant::now();
            self.stdin.write_all(msg.as_bytes()).unwrap();
            self.stdin.flush().unwrap();
            line.clear();
            self.stdout.read_line(&mut line).unwrap();
            out.push(started.elapsed());
            assert!(
                line.contains(&format!("\"n\":{i}")) || line.contains(&format!("\"n\": {i}")),
                "call {i} got {line}"
            );
        }
        out
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// `agentproxy MODE … -- sh -c 'echo $AGENTPROXY_URL $AGENTPROXY_SECRET > url; exec sleep
/// 600'`: a session whose program only hands its URL and secret over; stopped with SIGTERM.
struct Session {
    child: Child,
    url: String,
    secret: String,
}

impl Session {
    fn start(dir: &Path, args: &[&str]) -> Session {
        let url_file = dir.join("url");
        let _ = std::fs::remove_file(&url_file);
        let child = Command::new(BIN)
            .args(args)
            .args([
                "--",
                "sh",
                "-c",
                "echo $AGENTPROXY_URL $AGENTPROXY_SECRET > url; exec sleep 600",
            ])
            .current_dir(dir)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let (url, secret) = loop {
            if let Ok(u) = std::fs::read_to_string(&url_file) {
                if let Some((url, secret)) = u.strip_suffix('\n').and_then(|u| u.split_once(' ')) {
                    break (url.to_owned(), secret.to_owned());
                }
            }
            assert!(Instant::now() < deadline, "the session did not start");
            std::thread::sleep(Duration::from_millis(20));
        };
        Session { child, url, secret }
    }

    fn stop(mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let _ = self.child.wait();
    }
}

fn standin(inner: &[String]) -> Vec<String> {
    let mut argv: Vec<String> = vec![
        BIN.into(),
        "mcp".into(),
        "--name".into(),
        "bench".into(),
        "--".into(),
    ];
    argv.extend(inner.iter().cloned());
    argv
}

fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut s = samples.to_vec();
    s.sort();
    s[((s.len() - 1) as f64 * p).round() as usize]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// One round: the round trips direct, through the stand-in recording, and replayed.
fn round(dir: &Path, n: usize, k: usize) -> [Vec<Duration>; 3] {
    let cassette = dir.join(format!("mcp-{k}.json")).display().to_string();
    let mut direct = Peer::start(&server(), None);
    let direct_times = direct.calls(n);
    direct.stop();

    let record = Session::start(
        dir,
        &[
            "record",
            "--cassette",
            &cassette,
            "--upstream",
            "http://127.0.0.1:9",
        ],
    );
    let mut through = Peer::start(&standin(&server()), Some(&record));
    let record_times = through.calls(n);
    through.stop();
    record.stop();

    let replay = Session::start(dir, &["replay", "--cassette", &cassette]);
    let never = vec!["false".to_owned()];
    let mut replayed = Peer::start(&standin(&never), Some(&replay));
    let replay_times = replayed.calls(n);
    replayed.stop();
    replay.stop();
    [direct_times, record_times, replay_times]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> ExitCode {
    if let Some(code) = support::smoke::quiet_unless_asked("mcp") {
        return code;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let (n, rounds) = if quick { (20, 1) } else { (500, 5) };
    let dir = tempfile::tempdir().unwrap();
    // Per round, per path: p50 and p90 in µs.
    let mut p50 = [vec![], vec![], vec![]];
    let mut p90 = [vec![], vec![], vec![]];
    let mut added = vec![];
    for k in 0..rounds {
        let times = round(dir.path(), n, k);
        for (i, t) in times.iter().enumerate() {
            p50[i].push(us(percentile(t, 0.5)));
            p90[i].push(us(percentile(t, 0.9)));
        }
        added.push(us(percentile(&times[1], 0.5)) - us(percentile(&times[0], 0.5)));
    }
    println!("MCP stand-in: {n} sequential tools/call requests per path, {rounds} interleaved round(s); medians over rounds (µs)");
    println!("{:<30} {:>8} {:>8}", "", "p50", "p90");
    let names = [
        "direct to the server",
        "through the stand-in, record",
        "replayed (no server)",
    ];
    for (i, name) in names.iter().enumerate() {
        println!(
            "{name:<30} {:>8.0} {:>8.0}",
            median(p50[i].clone()),
            median(p90[i].clone())
        );
    }
    let mut spread = added.clone();
    spread.sort_by(f64::total_cmp);
    println!(
        "added by the stand-in while recording, p50: {:.0} µs (rounds: {})",
        median(added),
        spread
            .iter()
            .map(|a| format!("{a:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    ExitCode::SUCCESS
}
