//! `agentproxy doctor`: run a program once against a proxy in doctor mode (canned replies,
//! nothing forwarded or recorded) and report which injected variables it honours.

use std::path::Path;

use tokio::time::Instant;

use crate::cli::DoctorArgs;
use crate::doctor::about;
use crate::doctor::diagnose::{diagnose, render, Observed, ProgramEnd};
use crate::doctor::server::{via_prefix, Doctor, Session};
use crate::error::{Error, Exit, Result};
use crate::runner::child::ChildError;
use crate::runner::driver::{CommandApp, DriveError};
use crate::runner::env::{self, Injected};

/// The variable whose URL keeps the plain `/v1` path (the one most clients read); every
/// other URL variable gets its own `/_via/NAME` prefix.
const PLAIN_VAR: &str = "OPENAI_BASE_URL";
/// Largest request body the doctor reads (to see `model` and `stream`).
const MAX_BODY: usize = 32 << 20;
/// Largest file on the command line scanned for variable names.
const MAX_SOURCE: u64 = 1 << 20;

pub async fn run(args: DoctorArgs) -> Result<Exit> {
    if args.command.is_empty() {
        return about(args.json);
    }
    if !args.listen.ip().is_loopback() {
        return Err(Error::NotLoopback {
            addr: args.listen,
            why: "doctor mode listens on loopback only",
        });
    }
    let session = Session::start(Doctor::new(MAX_BODY, PLAIN_VAR), args.listen).await?;
    let base = format!("http://{}", session.addr());
    let injected = doctor_variables(&base);
    if !args.json {
        tell!(
            "agentproxy doctor: canned replies on {base}; running `{}` once (timeout {})",
            shell_words::join(&args.command),
            humantime::format_duration(args.timeout)
        );
    }
    let app = CommandApp {
        argv: args.command.clone(),
        env: injected
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect(),
        cwd: None,
        reply_until: None,
        contain: crate::runner::contain::Contain::Off,
    };
    let deadline = crate::runner::driver::deadline_after(args.timeout);
    let ran = run_program(&app, &args.input, deadline).await;
    let (arrivals, mcp_servers) = session.stop().await;
    let (program, stdout, stderr) = ran?;
    let report = diagnose(Observed {
        sources: read_sources(&args.command),
        command: args.command,
        injected,
        arrivals,
        mcp_servers,
        program,
        stdout,
        stderr,
        base,
    });
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(Error::RenderReport)?;
        super::output::print(&format!("{text}\n"))?;
    } else {
        super::output::print(&render(&report))?;
    }
    Ok(if report.ok { Exit::Ok } else { Exit::Failed })
}

/// `agentproxy doctor` with no command: the facts of this build and system.
fn about(json: bool) -> Result<Exit> {
    let exe = std::env::current_exe().ok();
    let report = about::about(
        crate::cli::VERSION,
        &|name| std::env::var(name).ok(),
        // The kernel's release (`uname -r`).
        Some(
            rustix::system::uname()
                .release()
                .to_string_lossy()
                .into_owned(),
        ),
        exe.map(|p| p.display().to_string()),
        crate::runner::contain::available(),
    );
    if json {
        let text = serde_json::to_string_pretty(&report).map_err(Error::RenderReport)?;
        super::output::print(&format!("{text}\n"))?;
    } else {
        super::output::print(&about::render(&report))?;
    }
    Ok(Exit::Ok)
}

/// What a replay injects, with every URL variable but [`PLAIN_VAR`] moved under its own
/// `/_via/NAME` prefix, so the path a request arrives on names the variable. Every key is
/// a placeholder, set or not: nothing is forwarded, so no real key is needed, and a client
/// that ignores the URL variables (a hard-coded `https://api.openai.com`) cannot take one
/// to the real API.
fn doctor_variables(base: &str) -> Vec<Injected> {
    env::injected(base, None, true, &|_| false)
        .into_iter()
        .map(|mut v| {
            if v.name != PLAIN_VAR {
                if let Some(rest) = v.value.strip_prefix(base) {
                    v.value = format!("{base}{}{rest}", via_prefix(&v.name));
                }
            }
            v
        })
        .collect()
}

/// Run the program to its end (or the deadline, or Ctrl-C): how it ended, its stdout and
/// the tail of its stderr.
async fn run_program(
    app: &CommandApp,
    input: &str,
    deadline: Instant,
) -> Result<(ProgramEnd, String, String)> {
    let mut running = app
        .start(Some(input), deadline, None)
        .map_err(|e| match e {
            DriveError::Spawn {
                program, source, ..
            } => ChildError::Spawn { program, source },
            other => ChildError::Spawn {
                program: app.argv.first().cloned().unwrap_or_default(),
                source: std::io::Error::other(other),
            },
        })?;
    // A program that does not read stdin may have closed it; that is not an error.
    let _ = running.send(input).await;
    // Dropping the running program (on Ctrl-C) kills it.
    tokio::select! {
        finished = running.finish() => Ok(match finished {
            Ok(f) => (ProgramEnd::Exited { code: f.code }, f.trailing_output, f.stderr),
            Err(DriveError::Timeout { secs, stderr, .. }) => (ProgramEnd::TimedOut { after_secs: secs }, String::new(), stderr),
            Err(e) => {
                return Err(ChildError::Wait {
                    program: app.argv.first().cloned().unwrap_or_default(),
                    source: std::io::Error::other(e),
                }
                .into())
            }
        }),
        _ = tokio::signal::ctrl_c() => Ok((ProgramEnd::Interrupted, String::new(), String::new())),
    }
}

/// The text of the files named on the command line (the program's scripts), for the
/// variable names they mention; binaries and large files are skipped.
fn read_sources(command: &[String]) -> Vec<String> {
    command
        .iter()
        .map(Path::new)
        .filter(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.len() <= MAX_SOURCE)
        })
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|bytes| !bytes.contains(&0))
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .collect()
}
