//! The child process: start it with the injected environment, forward termination signals,
//! and turn its end into an exit code (128+N when killed by signal N).

use rustix::process::{Pid, Signal};
use std::os::unix::process::ExitStatusExt;

use tokio::signal::unix::{signal, SignalKind};

use super::contain::{self, Contain, Level};
use crate::proxy::Session;

/// Why the program could not be run to its end.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error("no command given after `--`")]
    NoCommand,

    #[error("failed to start `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },

    #[error("failed to wait for `{program}`: {source}")]
    Wait {
        program: String,
        source: std::io::Error,
    },
}

/// Run `command` to completion with `env` added, inheriting stdio. SIGTERM and SIGHUP are
/// forwarded; SIGINT too, unless the terminal already delivered it to the child (same
/// foreground process group), so a Ctrl-C is not seen twice.
/// With `confine`, the program starts as its containment asks, its listener served by the
/// session; the level reached comes back with the exit code.
pub async fn run(
    command: &[String],
    env: &[(String, String)],
    confine: Option<(&Session, Contain)>,
) -> Result<(i32, Option<Level>), ChildError> {
    let (program, args) = command.split_first().ok_or(ChildError::NoCommand)?;
    // Handlers go in before the spawn, so a signal in between cannot kill the proxy first.
    let mut sigint = signal(SignalKind::interrupt()).map_err(|e| spawn_err(program, e))?;
    let mut sigterm = signal(SignalKind::terminate()).map_err(|e| spawn_err(program, e))?;
    let mut sighup = signal(SignalKind::hangup()).map_err(|e| spawn_err(program, e))?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
    crate::proxy::pages::as_before(&mut cmd);
    let (mut child, level) = match confine {
        Some((session, contain)) => {
            let (child, level) =
                contain::spawn(&mut cmd, session, contain).map_err(|e| spawn_err(program, e))?;
            (child, Some(level))
        }
        None => (
            crate::os::spawn_bound(&mut cmd).map_err(|e| spawn_err(program, e))?,
            None,
        ),
    };
    let pid = child.id();
    let forward = |sig: Signal| {
        if let Some(pid) = pid
            .and_then(|p| i32::try_from(p).ok())
            .and_then(Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, sig);
        }
    };
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.map_err(|source| ChildError::Wait { program: program.clone(), source })?,
            _ = sigint.recv() => if !terminal_delivers_sigint() { forward(Signal::INT) },
            _ = sigterm.recv() => forward(Signal::TERM),
            _ = sighup.recv() => forward(Signal::HUP),
        }
    };
    Ok((exit_code(status), level))
}

fn spawn_err(program: &str, source: std::io::Error) -> ChildError {
    ChildError::Spawn {
        program: program.to_owned(),
        source,
    }
}

/// The child's exit code, or 128+N when it was killed by signal N (the shell convention).
pub fn exit_code(status: std::process::ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// Is the proxy in the terminal's foreground process group? Then a Ctrl-C reached the child
/// (which shares that group) directly.
fn terminal_delivers_sigint() -> bool {
    let stdin = std::io::stdin();
    rustix::termios::isatty(&stdin)
        && rustix::termios::tcgetpgrp(&stdin).ok() == Some(rustix::process::getpgrp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn passes_exit_status_and_env_through() {
        let code = run(
            &[
                "sh".into(),
                "-c".into(),
                "test \"$X\" = yes && exit 7".into(),
            ],
            &[("X".into(), "yes".into())],
            None,
        )
        .await
        .unwrap();
        assert_eq!(code, (7, None));
    }

    #[tokio::test]
    async fn killed_by_signal_is_128_plus_n() {
        let (code, _) = run(
            &["sh".into(), "-c".into(), "kill -TERM $$".into()],
            &[],
            None,
        )
        .await
        .unwrap();
        assert_eq!(code, 128 + libc::SIGTERM);
    }

    #[tokio::test]
    async fn missing_program_is_a_spawn_error() {
        let err = run(&["/nonexistent/agentproxy-test".into()], &[], None)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("failed to start"), "{err}");
    }
}
