//! One proxy session as a handle: start it on a listen address, read its address, stop it
//! and take what it did. Record, replay, test and the determinism check all run one.

use std::net::SocketAddr;
use std::sync::Arc;

use super::egress::{self, TRUST_VARS};
use super::google_adc;
use super::options::Options;
use super::outcome::Outcome;
use super::server::{self, BindError, Running};
use super::stack::{self, Arrival};
use super::state::Proxy;

/// A proxy serving in the background, from [`Session::start`] until [`Session::stop`].
pub(crate) struct Session {
    proxy: Arc<Proxy>,
    running: Running,
    /// With interception: the file of certificates the program trusts, removed with the
    /// session.
    bundle: Option<tempfile::NamedTempFile>,
    /// In a session that cannot record: Google credentials whose token refresh it answers
    /// (see `google_adc`), removed with the session.
    google: Option<tempfile::NamedTempFile>,
    /// Listeners inside contained programs' namespaces (see `runner::contain`).
    more: std::sync::Mutex<Vec<Running>>,
    /// Relays from inside those namespaces to ports of the host's loopback.
    relays: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Session {
    /// Bind `listen` and serve a proxy built from `options` on it.
    pub(crate) async fn start(options: Options, listen: SocketAddr) -> Result<Session, BindError> {
        let bundle = match &options.egress.authority {
            Some(ca) => {
                // The trust stores agentproxy's own environment names stay trusted.
                let own: Vec<std::path::PathBuf> = (TRUST_VARS.iter())
                    .filter_map(std::env::var_os)
                    .map(std::path::PathBuf::from)
                    .collect();
                let (pem, roots) = ca.bundle(&own);
                if roots.is_none() {
                    tracing::warn!("no system root certificates found: the program trusts only the session's CA and the files {} name, so TLS to hosts it does not intercept fails", TRUST_VARS.join(", "));
                }
                Some(write_bundle(&pem).map_err(|source| BindError {
                    addr: listen,
                    source,
                })?)
            }
            None => None,
        };
        let replay_only = options.upstream.is_none();
        let proxy = Arc::new(Proxy::new(options));
        let serving = proxy.clone();
        let running = Running::start(listen, move |listener, stop, hurry| {
            server::serve(
                listener,
                serving,
                async move {
                    let _ = stop.await;
                },
                hurry,
            )
        })
        .await?;
        proxy.egress.set_port(running.addr().port());
        let google = match replay_only {
            true => Some(
                google_adc::write(&format!("http://{}", running.addr())).map_err(|source| {
                    BindError {
                        addr: listen,
                        source,
                    }
                })?,
            ),
            false => None,
        };
        Ok(Session {
            proxy,
            running,
            bundle,
            google,
            more: std::sync::Mutex::default(),
            relays: std::sync::Mutex::default(),
        })
    }

    /// The ports of the host's loopback a contained program may reach as its own: those
    /// the run allows (`--allow-host 127.0.0.1:PORT`, a spec's `egress.allow`).
    pub(crate) fn relayed_ports(&self) -> Vec<u16> {
        self.proxy.egress.loopback_ports(self.addr().port())
    }

    /// Relay each connection to `listener` (inside a contained program's namespace) to
    /// `port` of the host's loopback, until the session stops.
    pub(crate) fn relay(&self, listener: std::net::TcpListener, port: u16) -> std::io::Result<()> {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let task = tokio::spawn(async move {
            while let Ok((mut inside, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if let Ok(mut host) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await
                    {
                        let _ = tokio::io::copy_bidirectional(&mut inside, &mut host).await;
                    }
                });
            }
        });
        self.relays
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(task);
        Ok(())
    }

    /// Watch what a contained program does around the proxy variables (see `direct`): its
    /// name lookups, on `names`, and its direct connections, on each listener's port,
    /// until the session stops.
    pub(crate) fn watch_direct(
        &self,
        names: Option<std::net::UdpSocket>,
        direct: Vec<(u16, std::net::TcpListener)>,
    ) -> std::io::Result<()> {
        let mut tasks = Vec::new();
        if let Some(names) = names {
            let names = tokio::net::UdpSocket::from_std(names)?;
            tasks.push(tokio::spawn(egress::answer_names(
                self.proxy.egress.clone(),
                names,
            )));
        }
        for (port, listener) in direct {
            let listener = tokio::net::TcpListener::from_std(listener)?;
            let serve = stack::stack(&self.proxy, Arrival::Program);
            let watch = egress::watch(self.proxy.egress.clone(), listener, port, serve);
            tasks.push(tokio::spawn(watch));
        }
        (self.relays.lock().unwrap_or_else(|p| p.into_inner())).extend(tasks);
        Ok(())
    }

    /// Serve on `listener` too (one a contained program made in its namespace) until the
    /// session stops.
    pub(crate) fn serve_also(&self, listener: std::net::TcpListener) -> std::io::Result<()> {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let proxy = self.proxy.clone();
        proxy.egress.set_contained();
        let running = Running::on(listener, move |listener, stop, hurry| {
            server::serve_more(
                listener,
                proxy,
                async move {
                    let _ = stop.await;
                },
                hurry,
            )
        })?;
        self.more
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(running);
        Ok(())
    }

    /// With interception, the file of certificates the program is to trust.
    pub(crate) fn ca_bundle(&self) -> Option<&std::path::Path> {
        self.bundle.as_ref().map(|b| b.path())
    }

    /// In a session that cannot record, the Google credentials file the program is given.
    pub(crate) fn google_credentials(&self) -> Option<&std::path::Path> {
        self.google.as_ref().map(|f| f.path())
    }

    /// The address the proxy listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.running.addr()
    }

    /// What a request to the control prefix must present; the program is given it.
    pub(crate) fn secret(&self) -> &str {
        &self.proxy.opts.secret
    }

    /// Stamp the exchanges that arrive from now on with this turn (see [`Proxy::set_turn`]).
    pub(crate) fn set_turn(&self, turn: usize) {
        self.proxy.set_turn(turn);
    }

    /// Resolves once a crash test's point has passed and the program's next request is
    /// held: the program is to be killed, then [`Session::release_crash`] called.
    pub(crate) async fn crash_held(&self) {
        self.proxy.crash.held().await;
    }

    /// The crashed program is dead: its held request may end.
    pub(crate) fn release_crash(&self) {
        self.proxy.crash.release();
    }

    /// Stop accepting, drain in-flight exchanges, and take what the session recorded,
    /// served and missed.
    pub(crate) async fn stop(self) -> Outcome {
        self.stop_unless(std::future::pending()).await
    }

    /// [`Session::stop`], but once `hurry` resolves the drain is cut short: the outcome
    /// holds what had finished by then.
    pub(crate) async fn stop_unless(self, hurry: impl std::future::Future<Output = ()>) -> Outcome {
        // A request still held would keep its connection, and the drain, waiting.
        self.proxy.crash.release();
        for relay in std::mem::take(&mut *self.relays.lock().unwrap_or_else(|p| p.into_inner())) {
            relay.abort();
        }
        // The contained programs are gone by now: their listeners close at once, together
        // (the exchanges still in flight are the main listener's drain to wait for).
        let more = std::mem::take(&mut *self.more.lock().unwrap_or_else(|p| p.into_inner()));
        futures_util::future::join_all(
            (more.into_iter()).map(|r| r.stop_unless(std::future::ready(()))),
        )
        .await;
        self.running.stop_unless(hurry).await;
        self.proxy.outcome()
    }
}

/// The certificates the program trusts, in a file of their own (no key is in it), named
/// for this process (`agentproxy-ca-PID-….pem`); the bundles of sessions killed before
/// they could remove theirs are swept first.
fn write_bundle(pem: &str) -> std::io::Result<tempfile::NamedTempFile> {
    use std::io::Write;
    sweep(&std::env::temp_dir(), std::path::Path::new("/proc"));
    let mut f = tempfile::Builder::new()
        .prefix(&format!("{BUNDLE}{}-", std::process::id()))
        .suffix(".pem")
        .tempfile()?;
    f.write_all(pem.as_bytes())?;
    f.flush()?;
    Ok(f)
}

/// How a session's CA bundle is named, before its process id.
const BUNDLE: &str = "agentproxy-ca-";

/// Remove from `dir` the CA bundles of sessions whose process no longer runs (`kill -9`
/// left them): those of this user whose name's process id is not in `proc`. Nothing is
/// swept where there is no `proc` to tell.
fn sweep(dir: &std::path::Path, proc: &std::path::Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(me) = std::fs::metadata(proc.join("self")).map(|m| m.uid()) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = (name.to_str())
            .and_then(|n| n.strip_prefix(BUNDLE))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let mine = entry.metadata().is_ok_and(|m| m.uid() == me && m.is_file());
        if mine && !proc.join(pid.to_string()).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod bundle_tests {
    use super::*;

    #[test]
    fn the_bundles_of_sessions_gone_are_swept_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, "-----BEGIN CERTIFICATE-----").unwrap();
            path
        };
        // 4194304 is above Linux's largest process id: no process has it.
        let gone = file("agentproxy-ca-4194305-abc.pem");
        let live = file(&format!("agentproxy-ca-{}-abc.pem", std::process::id()));
        let other = file("agentproxy-ca-notapid.pem");
        let unrelated = file("ca-4194305.pem");
        sweep(dir.path(), std::path::Path::new("/proc"));
        assert!(!gone.exists());
        assert!(live.exists() && other.exists() && unrelated.exists());
        // Without /proc to tell, nothing goes.
        let gone = file("agentproxy-ca-4194305-abd.pem");
        sweep(dir.path(), &dir.path().join("no-proc"));
        assert!(gone.exists());
    }
}
