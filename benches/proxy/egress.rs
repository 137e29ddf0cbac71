//! Interception and containment: the latency an intercepted request (HTTPS to
//! api.openai.com through the proxy's tunnel, one TLS session kept alive) adds over the
//! same request by base URL (plain HTTP, one connection kept alive), both replayed by
//! one session; and what containment adds to running a program under `replay`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::daemon::{bin, API_KEY};
use super::scenarios::{median, us, Ctx};
use super::workload;

const PATH: &str = "/v1/chat/completions";
const HOST: &str = "api.openai.com";

/// One request on a kept-alive HTTP/1.1 stream, its answer read whole: the status.
async fn post<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, body: &[u8]) -> Result<u16, String> {
    let head = format!(
        "POST {PATH} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\nAuthorization: Bearer {API_KEY}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    s.write_all(body).await.map_err(|e| e.to_string())?;
    let mut buf = Vec::with_capacity(16 << 10);
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        read_more(s, &mut buf).await?;
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let status: u16 = head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let length = (head.lines())
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .ok_or("an answer without content-length")?;
    while buf.len() < end + length {
        read_more(s, &mut buf).await?;
    }
    Ok(status)
}

async fn read_more<S: AsyncRead + Unpin>(s: &mut S, buf: &mut Vec<u8>) -> Result<(), String> {
    let mut chunk = [0u8; 16 << 10];
    match s.read(&mut chunk).await.map_err(|e| e.to_string())? {
        0 => Err("the proxy closed the connection".to_owned()),
        n => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(())
        }
    }
}

/// `n` requests of `body` on `s`, one after another: their latencies in µs.
async fn latencies<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    body: &[u8],
    n: usize,
    failures: &mut usize,
) -> Result<Vec<f64>, String> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let sent = Instant::now();
        if post(s, body).await? != 200 {
            *failures += 1;
        }
        out.push(us(sent.elapsed()));
    }
    out.sort_by(f64::total_cmp);
    Ok(out)
}

/// A TLS stream to api.openai.com through the proxy at `addr`, trusting `ca`.
async fn tunnel(
    addr: &str,
    ca: CertificateDer<'static>,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    let mut s = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    let connect = format!("CONNECT {HOST}:443 HTTP/1.1\r\nHost: {HOST}:443\r\n\r\n");
    s.write_all(connect.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        read_more(&mut s, &mut buf).await?;
    }
    if !buf.starts_with(b"HTTP/1.1 200") {
        return Err(format!("CONNECT: {}", String::from_utf8_lossy(&buf)));
    }
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca).map_err(|e| e.to_string())?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = ServerName::try_from(HOST).map_err(|e| e.to_string())?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, s)
        .await
        .map_err(|e| format!("TLS through the tunnel: {e}"))
}

/// A replay session whose program only writes down where the proxy is and waits.
struct Session {
    child: std::process::Child,
    addr: String,
    ca: CertificateDer<'static>,
}

impl Session {
    /// Uncontained: the bench itself is the program's side of the tunnel, from the host,
    /// and a contained session's host listener is no forward proxy.
    fn start(dir: &std::path::Path) -> Result<Session, String> {
        let env = dir.join("egress-env.txt");
        let _ = std::fs::remove_file(&env);
        let script = format!(
            "printf '%s\\n%s\\n' \"$HTTPS_PROXY\" \"$SSL_CERT_FILE\" > {}.tmp && mv {0}.tmp {0}; exec sleep 600",
            env.display()
        );
        let child = std::process::Command::new(bin())
            .args([
                "replay",
                "--cassette",
                "egress.json",
                "-q",
                "--repeat",
                "last",
                "--contain",
                "off",
                "--",
                "sh",
                "-c",
                &script,
            ])
            .current_dir(dir)
            .env("OPENAI_API_KEY", API_KEY)
            .stdin(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("failed to start {}: {e}", bin()))?;
        let deadline = Instant::now() + Duration::from_secs(20);
        let text = loop {
            if let Ok(t) = std::fs::read_to_string(&env) {
                break t;
            }
            if Instant::now() > deadline {
                return Err("the program under replay wrote no proxy address".to_owned());
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let mut lines = text.lines();
        let addr = (lines.next().unwrap_or_default())
            .trim_start_matches("http://")
            .to_owned();
        let bundle = std::fs::read(lines.next().unwrap_or_default()).map_err(|e| e.to_string())?;
        let ca = CertificateDer::from_pem_slice(&bundle).map_err(|e| e.to_string())?;
        Ok(Session { child, addr, ca })
    }

    fn stop(mut self) {
        // SIGTERM goes on to the program; the session then ends as a user's would.
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill(2) of the process we spawned.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let _ = self.child.wait();
    }
}

/// Wall time of `agentproxy replay --contain WHEN -- true`, in ms.
fn run_true(dir: &std::path::Path, contain: &str) -> Result<f64, String> {
    let started = Instant::now();
    let status = std::process::Command::new(bin())
        .args([
            "replay",
            "--cassette",
            "egress.json",
            "-q",
            "--contain",
            contain,
            "--",
            "true",
        ])
        .current_dir(dir)
        .status()
        .map_err(|e| e.to_string())?;
    // `true` makes no request: replay exits 0 and reports the recordings unused.
    if !status.success() {
        return Err(format!("replay --contain {contain} -- true: {status}"));
    }
    Ok(started.elapsed().as_secs_f64() * 1e3)
}

pub fn run(ctx: &mut Ctx) -> Result<(), String> {
    let cfg = ctx.cfg;
    let n = if cfg.quick { 20 } else { 2_000 };
    let starts = if cfg.quick { 2 } else { 15 };
    let dir = ctx.dir.path().to_owned();
    workload::write_cassette(&dir.join("egress.json"), &ctx.exchanges[..1], true)?;
    let body = ctx.bodies[0].clone();
    let (mut base, mut tunneled) = (vec![], vec![]);
    for _ in 0..cfg.rounds {
        let session = Session::start(&dir)?;
        let (addr, ca) = (session.addr.clone(), session.ca.clone());
        let mut failures = 0;
        let measured = ctx.rt.block_on(async {
            let mut plain = TcpStream::connect(&addr).await.map_err(|e| e.to_string())?;
            plain.set_nodelay(true).map_err(|e| e.to_string())?;
            let by_url = latencies(&mut plain, &body, n, &mut failures).await?;
            let mut tls = tunnel(&addr, ca).await?;
            let through = latencies(&mut tls, &body, n, &mut failures).await?;
            Ok::<_, String>((by_url, through))
        });
        session.stop();
        let (by_url, through) = measured?;
        ctx.failures += failures;
        base.push(by_url);
        tunneled.push(through);
    }
    let pct = |runs: &[Vec<f64>], q: f64| {
        median(
            runs.iter()
                .map(|r| r[((r.len() - 1) as f64 * q) as usize])
                .collect(),
        )
    };
    println!("\n8. interception: {n} identical replayed requests one after another on one kept-alive connection, median of {} rounds", cfg.rounds);
    println!("   path                                   | p50 µs | p99 µs");
    println!(
        "   by base URL (plain HTTP)               | {:>6.0} | {:>6.0}",
        pct(&base, 0.5),
        pct(&base, 0.99)
    );
    println!(
        "   intercepted (HTTPS through the tunnel) | {:>6.0} | {:>6.0}",
        pct(&tunneled, 0.5),
        pct(&tunneled, 0.99)
    );
    println!(
        "   added by interception, p50             | {:>6.0} |",
        pct(&tunneled, 0.5) - pct(&base, 0.5)
    );
    let (mut off, mut on) = (vec![], vec![]);
    for _ in 0..starts {
        off.push(run_true(&dir, "off")?);
        on.push(run_true(&dir, "auto")?);
    }
    let (off, on) = (median(off), median(on));
    println!("   `replay -- true`, median of {starts}: {off:.1} ms intercepted only, {on:.1} ms with containment (auto): +{:.1} ms", on - off);
    Ok(())
}
