//! What `record` and `replay` share: listen, run the program (or wait as a daemon), drain.

use std::sync::Arc;

use tokio::net::TcpListener;

use crate::cassette::MatchRules;
use crate::cli::SessionArgs;
use crate::error::{Error, Result};
use crate::matching::normalize::Rules;
use crate::proxy::{server, Outcome, Proxy};
use crate::runner::{child, env};

/// How a session ended.
pub struct Ended {
    pub outcome: Outcome,
    /// The program's exit code; `None` in daemon mode.
    pub child: Option<i32>,
    /// The variables the program was given, for messages.
    pub injected: Vec<env::Injected>,
}

/// The match rules given as flags.
pub fn flag_rules(args: &SessionArgs) -> MatchRules {
    MatchRules {
        ignore: args.match_ignore.clone(),
        holes: args.match_hole.clone(),
    }
}

pub fn compile_rules(rules: &MatchRules) -> Result<Rules> {
    Rules::compile(rules).map_err(|e| Error::Usage(e.to_string()))
}

pub async fn bind(args: &SessionArgs) -> Result<TcpListener> {
    if !args.listen.ip().is_loopback() && !args.allow_remote {
        return Err(Error::Usage(format!(
            "refusing to listen on {}: it is not a loopback address; pass --allow-remote if you mean it",
            args.listen
        )));
    }
    TcpListener::bind(args.listen)
        .await
        .map_err(|source| Error::Bind {
            addr: args.listen.to_string(),
            source,
        })
}

/// Serve `proxy` on `listener` while the program runs (or until SIGINT/SIGTERM in daemon
/// mode), then drain.
pub async fn run(
    args: &SessionArgs,
    listener: TcpListener,
    proxy: Proxy,
    replay: bool,
    banner: &str,
) -> Result<Ended> {
    let addr = listener.local_addr().map_err(|source| Error::Bind {
        addr: args.listen.to_string(),
        source,
    })?;
    let base = format!("http://{addr}");
    let injected = env::injected(&base, replay, &|name| std::env::var_os(name).is_some());
    let proxy = Arc::new(proxy);
    // Listen for SIGINT/SIGTERM before the banner: a daemon's user (or script) may signal
    // as soon as it reads the URL, and an unhandled SIGINT would lose the recording.
    let shutdown = if args.command.is_empty() {
        Some(
            shutdown_signal()
                .map_err(|e| Error::Usage(format!("failed to listen for SIGINT: {e}")))?,
        )
    } else {
        None
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server::serve(listener, proxy.clone(), async {
        let _ = stop_rx.await;
    }));
    if !args.quiet {
        eprintln!("agentproxy: {banner}, listening on {base}");
        if args.verbose > 0 {
            for v in &injected {
                eprintln!("agentproxy:   {}={}  ({})", v.name, v.value, v.why);
            }
        }
    }
    let child = if let Some(shutdown) = shutdown {
        print!("{}", env::export_lines(&injected));
        use std::io::Write;
        let _ = std::io::stdout().flush();
        shutdown.await;
        if !args.quiet {
            eprintln!("agentproxy: shutting down, draining in-flight requests");
        }
        None
    } else {
        let vars: Vec<(String, String)> = injected
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect();
        Some(child::run(&args.command, &vars).await)
    };
    let _ = stop_tx.send(());
    let _ = server.await;
    let outcome = proxy.outcome();
    let child = child.transpose()?;
    Ok(Ended {
        outcome,
        child,
        injected,
    })
}

/// Resolves at the first SIGINT or SIGTERM; both are caught from the moment this returns.
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    })
}
