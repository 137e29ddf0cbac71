//! What `record` and `replay` share: the session their flags ask for, then listen, run the
//! program (or wait as a daemon), drain.

use crate::cassette::{Cassette, MatchRules};
use crate::cli::SessionArgs;
use crate::error::{Error, Result};
use crate::proxy::egress;
use crate::proxy::{Options, Outcome, Session};
use crate::report::Status;
use crate::runner::contain::Level;
use crate::runner::plan::{Setup, Use};
use crate::runner::{child, env};

/// How a session ended.
pub struct Ended {
    pub outcome: Outcome,
    /// The program's exit code; `None` in daemon mode.
    pub child: Option<i32>,
    /// How far the program was contained; `None` in daemon mode.
    pub level: Option<Level>,
    /// The variables the program was given, for messages.
    pub injected: Vec<env::Injected>,
}

/// The match rules given as flags.
fn flag_rules(args: &SessionArgs) -> MatchRules {
    MatchRules {
        ignore: args.match_ignore.clone(),
        holes: args.match_hole.clone(),
    }
}

/// The session the flags ask for: the cassette at `--cassette` (`existing`, as read) used
/// as `usage` says, with the flags' tolerances, MCP servers and faults.
pub fn setup(args: &SessionArgs, existing: Option<Cassette>, usage: Use) -> Setup {
    Setup {
        match_rules: flag_rules(args),
        mcp_http: args.mcp.iter().cloned().collect(),
        a2a: crate::proxy::a2a::Setup {
            agents: args.a2a.iter().cloned().collect(),
            mocks: Default::default(),
        },
        faults: crate::fault::Plan {
            case: args.fault.clone(),
            turns: vec![],
        },
        print_misses: !args.quiet,
        known_clients: !args.no_client_tolerances,
        rerecord: Some(rerecord(args)),
        // A program agentproxy starts has the proxy as its only way out; on a listener
        // others can reach, the proxy is no forward proxy (no relay for them).
        egress: egress::Setup {
            intercept: !args.command.is_empty() && args.listen.ip().is_loopback(),
            allow: args.allow_hosts.clone(),
            record_other_hosts: false,
        },
        ..Setup::new(args.cassette.clone(), existing, usage)
    }
}

/// The command that records the session's cassette again.
fn rerecord(args: &SessionArgs) -> String {
    let cassette = args.cassette.display().to_string();
    let mut words = vec!["agentproxy", "record", "--cassette", &cassette];
    if !args.command.is_empty() {
        words.push("--");
        words.extend(args.command.iter().map(String::as_str));
    }
    crate::runner::env::shell_line(&words)
}

/// Listening beyond loopback needs `--allow-remote`.
fn check_listen(args: &SessionArgs) -> Result<()> {
    if !args.listen.ip().is_loopback() && !args.allow_remote {
        return Err(Error::NotLoopback {
            addr: args.listen,
            why: "it is not a loopback address; pass --allow-remote if you mean it",
        });
    }
    Ok(())
}

/// Refuse MCP server names a program could not tell apart by their URL variables.
pub fn check_mcp_names<'a>(names: impl IntoIterator<Item = &'a String>) -> Result<()> {
    check_names(names, "MCP servers", crate::dialect::mcp::url_var)
}

/// Refuse agent names a program could not tell apart by their URL variables.
pub fn check_a2a_names(names: &[String]) -> Result<()> {
    check_names(names, "agents", crate::dialect::a2a::url_var)
}

fn check_names<'a>(
    names: impl IntoIterator<Item = &'a String>,
    what: &'static str,
    var: fn(&str) -> String,
) -> Result<()> {
    match crate::dialect::mcp::var_clash_by(names, var) {
        Some((first, second, var)) => Err(Error::NameClash {
            what,
            first,
            second,
            var,
        }),
        None => Ok(()),
    }
}

/// Serve a proxy built from `options` while the program runs (or until SIGINT/SIGTERM in
/// daemon mode), then drain.
pub async fn run(
    args: &SessionArgs,
    options: Options,
    replay: bool,
    banner: &str,
) -> Result<Ended> {
    check_listen(args)?;
    let mcp_servers: Vec<String> = options.mcp_http.keys().cloned().collect();
    check_mcp_names(&mcp_servers)?;
    let agents: Vec<String> = options.a2a.urls.keys().cloned().collect();
    check_a2a_names(&agents)?;
    let session = Session::start(options, args.listen).await?;
    let addr = session.addr();
    let base = format!("http://{addr}");
    let injected = injected(args, &session, &base, replay, (&mcp_servers, &agents));
    // Listen for SIGINT/SIGTERM before the banner: a daemon's user (or script) may signal
    // as soon as it reads the URL, and an unhandled SIGINT would lose the recording.
    let mut signals = if args.command.is_empty() {
        Some(Signals::listen().map_err(Error::Signal)?)
    } else {
        None
    };
    if !args.quiet {
        tell!("agentproxy: {banner}, listening on {base}");
        if args.verbose > 0 {
            for line in env::listing(&injected) {
                tell!("agentproxy:   {line}");
            }
        }
    }
    let (child, hurry) = if let Some(mut signals) = signals.take() {
        super::output::print(&env::export_lines(&injected))?;
        signals.next().await;
        if !args.quiet {
            tell!("agentproxy: shutting down, draining in-flight requests (Ctrl-C again to stop at once)");
        }
        // A second signal stops at once; what was recorded is still written.
        (None, Some(signals))
    } else {
        let vars: Vec<(String, String)> = injected
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect();
        let confine = session.ca_bundle().map(|_| (&session, args.contain));
        (Some(child::run(&args.command, &vars, confine).await), None)
    };
    let outcome = match hurry {
        Some(mut signals) => {
            let quiet = args.quiet;
            session
                .stop_unless(async move {
                    signals.next().await;
                    if !quiet {
                        tell!("agentproxy: stopping now; in-flight requests are not recorded");
                    }
                })
                .await
        }
        None => session.stop().await,
    };
    let (child, level) = match child.transpose()? {
        Some((code, level)) => (Some(code), level),
        None => (None, None),
    };
    Ok(Ended {
        outcome,
        child,
        level,
        injected,
    })
}

/// The variables the program is given (or a daemon prints): the base URLs, the MCP
/// servers', agentproxy's own path, and the forward proxy with its CA bundle.
fn injected(
    args: &SessionArgs,
    session: &Session,
    base: &str,
    replay: bool,
    (mcp_servers, agents): (&[String], &[String]),
) -> Vec<env::Injected> {
    let secret = Some(session.secret());
    let mut injected = env::injected(base, secret, replay, &|name| {
        std::env::var_os(name).is_some()
    });
    injected.extend(env::mcp_urls(base, mcp_servers));
    injected.extend(env::a2a_urls(base, agents));
    if !args.command.is_empty() {
        injected.extend(env::self_path());
    }
    injected.extend(session.google_credentials().map(env::google_credentials));
    if let Some(bundle) = session.ca_bundle() {
        let no_proxy = std::env::var("NO_PROXY")
            .or_else(|_| std::env::var("no_proxy"))
            .ok();
        injected.extend(env::forward_proxy(base, bundle, no_proxy.as_deref()));
    }
    injected
}

/// SIGINT and SIGTERM, caught from the moment [`Signals::listen`] returns; one that
/// arrives while nobody waits is kept for the next [`Signals::next`].
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn listen() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    /// The next SIGINT or SIGTERM.
    async fn next(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}

/// How a record or replay session that `ended` came out, as `Exit::of` takes it: its
/// status and the program's own failing exit code. Recording, a failed upstream request
/// is an error (the cause when the program then fails too); replaying, a miss or traffic
/// refused fails it; either way, so does a program that failed.
pub fn status(ended: &Ended, usage: Use) -> (Status, Option<i32>) {
    let out = &ended.outcome;
    let program = ended.child.filter(|c| *c != crate::error::EXIT_OK);
    let failed = program.is_some()
        || (usage == Use::Replay && (!out.misses.is_empty() || out.egress.refused() > 0));
    let status = match (usage, failed) {
        (Use::Record, _) if !out.upstream_errors.is_empty() => Status::Error,
        (_, true) => Status::Failed,
        (_, false) => Status::Passed,
    };
    (status, program)
}

/// The egress summary of a session that `ended` (see `egress::lines`).
pub fn egress_lines(ended: &Ended) -> Vec<egress::Line> {
    let level = ended.level.as_ref().map(|l| l as &dyn std::fmt::Display);
    egress::lines(&ended.outcome.egress, level)
}
