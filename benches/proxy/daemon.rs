//! The real agentproxy binary in daemon mode: start it, read its URL from the `export`
//! lines, read its CPU time and peak RSS from /proc, stop it with SIGINT like a user.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test: the one cargo built for this bench target (release under
/// `cargo bench`, debug under `cargo test`), or `$AGENTPROXY_BENCH_BIN` to compare builds.
pub fn bin() -> String {
    std::env::var("AGENTPROXY_BENCH_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_agentproxy").to_owned())
}

/// The API key the client sends and the proxy sees in its environment, so redaction is on
/// (one secret, as in a real session) without ever matching the generated bodies.
pub const API_KEY: &str = "bench-not-a-real-key-0123456789";

pub struct Daemon {
    child: Child,
    pub url: String,
    pub addr: String,
    /// Kept open: closing it could make the daemon's later prints fail.
    _stdout: BufReader<ChildStdout>,
    stderr_path: std::path::PathBuf,
    /// Time from spawning to the `export AGENTPROXY_URL=` line.
    pub ready_after: Duration,
}

impl Daemon {
    /// Start `agentproxy ARGS` with a clean environment; `dir` receives its stderr.
    pub fn start(args: &[&str], dir: &Path) -> Result<Daemon, String> {
        let stderr_path = dir.join(format!(
            "agentproxy-{}.stderr",
            args.first().copied().unwrap_or("x")
        ));
        let stderr = std::fs::File::create(&stderr_path)
            .map_err(|e| format!("failed to create {}: {e}", stderr_path.display()))?;
        let started = Instant::now();
        let mut child = Command::new(bin())
            .args(args)
            .current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("OPENAI_API_KEY", API_KEY)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn()
            .map_err(|e| format!("failed to start {}: {e}", bin()))?;
        let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut url = None;
        let mut line = String::new();
        for _ in 0..20 {
            line.clear();
            match stdout.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if let Some(v) = line.trim_end().strip_prefix("export AGENTPROXY_URL=") {
                url = Some(v.trim_matches('\'').to_owned());
                break;
            }
        }
        let ready_after = started.elapsed();
        let Some(url) = url else {
            let _ = child.kill();
            let _ = child.wait();
            let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            return Err(format!(
                "agentproxy {args:?} printed no AGENTPROXY_URL; stderr:\n{err}"
            ));
        };
        let addr = url.trim_start_matches("http://").to_owned();
        Ok(Daemon {
            child,
            url,
            addr,
            _stdout: stdout,
            stderr_path,
            ready_after,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Peak resident set size so far (VmHWM), in bytes.
    pub fn peak_rss(&self) -> u64 {
        peak_rss(self.pid())
    }

    /// User + system CPU time the daemon has used so far.
    pub fn cpu(&self) -> Duration {
        proc_cpu(&format!("/proc/{}/stat", self.pid())).unwrap_or_default()
    }

    /// SIGINT, then wait (bounded: SIGKILL after `grace`). Returns the exit code, the time
    /// from the signal to exit, stderr, and the peak RSS up to the exit (`VmHWM` read every
    /// 2 ms while it shuts down: what writing a cassette costs shows here).
    pub fn interrupt(mut self, grace: Duration) -> (Option<i32>, Duration, String, u64) {
        let sent = Instant::now();
        // SAFETY: kill(2) on the pid of a child this struct owns and has not yet reaped.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGINT);
        }
        let deadline = sent + grace;
        let mut peak = 0;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s.code(),
                Ok(None) if Instant::now() < deadline => {
                    peak = peak.max(self.peak_rss());
                    std::thread::sleep(Duration::from_millis(2))
                }
                _ => {
                    let _ = self.child.kill();
                    break self.child.wait().ok().and_then(|s| s.code());
                }
            }
        };
        let took = sent.elapsed();
        let err = std::fs::read_to_string(&self.stderr_path).unwrap_or_default();
        (status, took, err, peak)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The environment variable that makes this bench binary a measuring helper.
const MEASURE: &str = "AGENTPROXY_BENCH_MEASURE";

/// Run agentproxy with `args` in `dir` to its end, output discarded: whether it exited 0,
/// its wall time and its peak RSS in bytes. The kernel's `ru_maxrss` of a process counts
/// the memory of the process it was forked from until it execs, so the run is started
/// from a fresh, small helper (this binary again, see [`measuring_helper`]) rather than
/// from the bench, whose workload would be counted.
pub fn run_to_end(args: &[&str], dir: &Path) -> Result<(bool, Duration, u64), String> {
    let me = std::env::current_exe().map_err(|e| format!("the bench's own path: {e}"))?;
    let out = std::process::Command::new(me)
        .env(MEASURE, "1")
        .arg(bin())
        .args(args)
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("failed to start agentproxy {}: {e}", args.join(" ")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = text.split_whitespace().collect();
    match fields[..] {
        [ok, secs, bytes] => Ok((
            ok == "ok",
            Duration::from_secs_f64(secs.parse().map_err(|_| format!("helper said {text}"))?),
            bytes.parse().map_err(|_| format!("helper said {text}"))?,
        )),
        _ => Err(format!(
            "agentproxy {}: the helper said {text:?}",
            args.join(" ")
        )),
    }
}

/// When this binary was started as [`run_to_end`]'s helper: run the command of its
/// arguments, output discarded, and print `ok|failed SECONDS PEAK_RSS_BYTES`.
pub fn measuring_helper() -> Option<std::process::ExitCode> {
    std::env::var_os(MEASURE)?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (program, rest) = args.split_first()?;
    let started = Instant::now();
    let child = std::process::Command::new(program)
        .args(rest)
        .env_remove(MEASURE)
        .stdout(std::process::Stdio::null())
        .spawn();
    let Ok(child) = child else {
        return Some(std::process::ExitCode::FAILURE);
    };
    let (mut status, mut usage) = (0, std::mem::MaybeUninit::<libc::rusage>::zeroed());
    // SAFETY: wait4(2) on the pid of the child just spawned, which nothing else reaps;
    // the kernel writes `usage` (zeroed before in any case).
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, usage.as_mut_ptr()) };
    if pid < 0 {
        return Some(std::process::ExitCode::FAILURE);
    }
    // SAFETY: zero-initialized, and filled by wait4.
    let usage = unsafe { usage.assume_init() };
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    println!(
        "{} {} {}",
        if ok { "ok" } else { "failed" },
        started.elapsed().as_secs_f64(),
        usage.ru_maxrss as u64 * 1024
    );
    Some(std::process::ExitCode::SUCCESS)
}

pub fn peak_rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// utime + stime of a /proc `stat` file (a process or one thread).
pub fn proc_cpu(stat_path: &str) -> Option<Duration> {
    let s = std::fs::read_to_string(stat_path).ok()?;
    // Fields after the `(comm)`, which may contain spaces: state is field 3, utime 14, stime 15.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(Duration::from_micros(ticks * 1_000_000 / hz))
}

/// CPU time all processes have used so far, summed over CPUs (from /proc/stat).
pub fn machine_busy() -> Duration {
    let Some(line) = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| s.lines().next().map(str::to_owned))
    else {
        return Duration::ZERO;
    };
    // cpu user nice system idle iowait irq softirq steal ...: busy is all but idle and iowait.
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let busy: u64 = f
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4 && *i < 8)
        .map(|(_, v)| v)
        .sum();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_micros(busy * 1_000_000 / hz)
}

/// CPU time used so far by this process's threads whose name starts with `prefix`.
pub fn threads_cpu(prefix: &str) -> Duration {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    dir.flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.trim_end().starts_with(&prefix[..prefix.len().min(15)]))
        })
        .filter_map(|t| proc_cpu(&t.path().join("stat").to_string_lossy()))
        .sum()
}

/// One blocking HTTP/1.1 POST on a fresh connection: the status code. Used to time the very
/// first answer of a daemon, with nothing (no pool, no runtime) warmed up in between.
pub fn post_once(addr: &str, path: &str, body: &[u8]) -> Result<u16, String> {
    post_text_once(addr, path, body).map(|(status, _)| status)
}

/// [`post_once`], with the whole response (head and body) as text.
pub fn post_text_once(addr: &str, path: &str, body: &[u8]) -> Result<(u16, String), String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    let _ = s.set_nodelay(true);
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\nauthorization: Bearer {API_KEY}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    s.write_all(body).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = (text.lines().next().unwrap_or_default())
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status line in {} bytes", raw.len()))?;
    Ok((status, text))
}
