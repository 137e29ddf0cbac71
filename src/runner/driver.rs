//! Driving a `command:` program through the turns of a case: input on stdin (and as
//! `AGENTPROXY_INPUT` and `{input}`), a turn's output read from stdout up to its reply line,
//! stderr kept as a tail for error reports, and a deadline for the whole case.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use regex::Regex;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::time::Instant;

use super::contain::{self, Contain, Level};
use super::reap;
use crate::proxy::Session;

/// How long an exited program's stdout and stderr may take to reach their end of file.
const STDERR_DRAIN: Duration = Duration::from_millis(500);

/// Where the process table is.
const PROC: &str = "/proc";

/// How long killed processes may take to die before they count as survivors.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// Lines of stderr kept for the report of a crashed or timed-out program.
const STDERR_TAIL: usize = 40;
/// How a timeout names the deadline of the whole case.
const CASE_LIMIT: &str = "the case timeout";
/// What a program is waited for once its turns are done.
const EXIT: &str = "the program to exit";

/// The instant `limit` from now, at most a century away: a limit past what an instant
/// holds (a timeout typed as `300000000000y`) is a deadline nothing reaches, not a panic.
pub fn deadline_after(limit: Duration) -> Instant {
    Instant::now() + limit.min(Duration::from_secs(100 * 365 * 86_400))
}

/// How to start the program of a case.
#[derive(Debug, Clone)]
pub struct CommandApp {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// A turn ends at the first stdout line matching this; without it, at the first line.
    pub reply_until: Option<Regex>,
    /// How to contain it when its session intercepts.
    pub contain: Contain,
}

/// Why a case's program could not be driven to the end.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    #[error("failed to start `{program}`{}: {source}", in_dir(.cwd.as_deref()))]
    Spawn {
        program: String,
        /// The directory it was started in, when the case names one.
        cwd: Option<PathBuf>,
        source: std::io::Error,
    },
    #[error("the program timed out after {secs:.1}s ({limit}) waiting for {waiting}; {}", last_seen(.last_line.as_deref()))]
    Timeout {
        secs: f64,
        /// Which limit expired, e.g. `the case timeout` or `app.timeout of turn 2`.
        limit: String,
        /// What the program owed: `the reply of turn 2`, `the program to exit`.
        waiting: String,
        /// The last line it printed on stdout, if any.
        last_line: Option<String>,
        stderr: String,
    },
    #[error("the program exited before answering turn {turn}")]
    EndedEarly { turn: usize, stderr: String },
    #[error("failed to talk to the program: {0}")]
    Io(#[from] std::io::Error),
}

/// ` in DIR`, for a start that failed in `cwd`: a relative program path is resolved there.
fn in_dir(cwd: Option<&std::path::Path>) -> String {
    let absolute = |d: &std::path::Path| std::path::absolute(d).unwrap_or_else(|_| d.to_owned());
    cwd.map(|d| format!(" in {}", absolute(d).display()))
        .unwrap_or_default()
}

/// The end of a timeout message: the last output line, or a hint when there was none (a
/// program writing to a pipe often buffers its output).
fn last_seen(line: Option<&str>) -> String {
    match line {
        Some(l) => format!("its last output line was `{}`", l.trim_end()),
        None => "it printed nothing on stdout: if it did print, its output is buffered; \
                 flush after each reply (agentproxy sets PYTHONUNBUFFERED=1 for Python \
                 unless app.env sets it)"
            .to_owned(),
    }
}

impl DriveError {
    /// The tail of the program's stderr, when there is one.
    pub fn stderr(&self) -> Option<&str> {
        match self {
            DriveError::Timeout { stderr, .. } | DriveError::EndedEarly { stderr, .. } => {
                Some(stderr)
            }
            _ => None,
        }
    }
}

/// A running program.
pub struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// The task filling `stderr`; ends when the program's stderr closes.
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
    deadline: Instant,
    reply_until: Option<Regex>,
    started: std::time::Instant,
    /// The last line read from stdout, for a timeout's report.
    last_line: Option<String>,
    /// What it printed since the last reply line (kept when a read is cancelled).
    printed: String,
    /// The mark of its processes ([`reap::MARK`]).
    mark: String,
    /// How far it was contained (`None` without interception).
    pub level: Option<Level>,
}

/// What a killed program had printed: since its last reply line, and the tail of stderr;
/// and its processes still running after the kill, as `PID (command)`.
#[derive(Debug, Clone, Default)]
pub struct Killed {
    pub output: String,
    pub stderr: String,
    pub survivors: Vec<String>,
}

/// How the program ended.
pub struct Finished {
    pub code: i32,
    /// Whatever it printed after the last turn's reply line.
    pub trailing_output: String,
    pub stderr: String,
}

impl CommandApp {
    /// Start the program; `first_input` is also given as `AGENTPROXY_INPUT` and `{input}`.
    /// Without one (a case with no `input`), stdin is closed at once and
    /// `AGENTPROXY_INPUT` is not set.
    /// With `session` (one that intercepts), it starts as its `contain` asks.
    pub fn start(
        &self,
        first_input: Option<&str>,
        deadline: Instant,
        session: Option<&Session>,
    ) -> Result<Running, DriveError> {
        let argv: Vec<String> = self
            .argv
            .iter()
            .map(|a| a.replace("{input}", first_input.unwrap_or_default()))
            .collect();
        let (program, args) = argv.split_first().ok_or_else(|| DriveError::Spawn {
            program: String::new(),
            cwd: self.cwd.clone(),
            source: std::io::Error::other("empty command"),
        })?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(if first_input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so a timeout can stop the program and its children.
            .process_group(0)
            .kill_on_drop(true);
        crate::proxy::pages::as_before(&mut cmd);
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(cwd);
        }
        if let Some(input) = first_input {
            cmd.env("AGENTPROXY_INPUT", input);
        }
        let mark = reap::new_mark();
        cmd.env(reap::MARK, &mark);
        let spawned = match session.filter(|s| s.ca_bundle().is_some()) {
            Some(session) => contain::spawn(&mut cmd, session, self.contain)
                .map(|(child, level)| (child, Some(level))),
            None => crate::os::spawn_bound(&mut cmd).map(|child| (child, None)),
        };
        let (mut child, level) = spawned.map_err(|source| DriveError::Spawn {
            program: program.clone(),
            cwd: self.cwd.clone(),
            source,
        })?;
        let (stderr_tail, stderr_reader) = stderr_tail(&mut child);
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        Ok(Running {
            stdin: child.stdin.take(),
            child,
            stdout: BufReader::new(stdout).lines(),
            stderr: stderr_tail,
            stderr_reader,
            deadline,
            reply_until: self.reply_until.clone(),
            started: std::time::Instant::now(),
            last_line: None,
            printed: String::new(),
            mark,
            level,
        })
    }
}

impl Running {
    /// Send one turn's input line and read the output up to the reply line (inclusive),
    /// within `limit` (`app.timeout`) and the case deadline, whichever ends first.
    pub async fn turn(
        &mut self,
        index: usize,
        input: &str,
        limit: Option<Duration>,
    ) -> Result<String, DriveError> {
        let (until, which) = match limit.map(deadline_after) {
            Some(t) if t < self.deadline => (t, format!("app.timeout of turn {}", index + 1)),
            _ => (self.deadline, CASE_LIMIT.to_owned()),
        };
        self.send(input).await?;
        self.printed.clear();
        loop {
            let line = match tokio::time::timeout_at(until, self.stdout.next_line()).await {
                Err(_) => {
                    return Err(self.timeout(which, format!("the reply of turn {}", index + 1)))
                }
                Ok(r) => r?,
            };
            let Some(line) = line else {
                return Err(DriveError::EndedEarly {
                    turn: index + 1,
                    stderr: self.drained_stderr().await,
                });
            };
            self.printed.push_str(&line);
            self.printed.push('\n');
            let reply = (self.reply_until.as_ref()).is_none_or(|re| re.is_match(&line));
            self.last_line = Some(line);
            if reply {
                return Ok(std::mem::take(&mut self.printed));
            }
        }
    }

    /// Send the only input of a single-turn case; its output is everything up to the exit.
    pub async fn send(&mut self, input: &str) -> Result<(), DriveError> {
        if let Some(stdin) = &mut self.stdin {
            // A program that does not read stdin may have closed it: that is fine.
            let line = format!("{}\n", input.replace('\n', " "));
            if stdin.write_all(line.as_bytes()).await.is_ok() {
                let _ = stdin.flush().await;
            }
        }
        Ok(())
    }

    /// Close stdin and wait for the program to exit, collecting what it still prints.
    /// Cancelled, it loses nothing: what it had read is in [`Running::kill`]'s output.
    pub async fn finish(&mut self) -> Result<Finished, DriveError> {
        drop(self.stdin.take());
        loop {
            match tokio::time::timeout_at(self.deadline, self.stdout.next_line()).await {
                Err(_) => return Err(self.timeout(CASE_LIMIT.to_owned(), EXIT.to_owned())),
                Ok(Ok(Some(line))) => {
                    self.printed.push_str(&line);
                    self.printed.push('\n');
                    self.last_line = Some(line);
                }
                Ok(Ok(None)) => break,
                Ok(Err(e)) => return Err(e.into()),
            }
        }
        let status = match tokio::time::timeout_at(self.deadline, self.child.wait()).await {
            Err(_) => return Err(self.timeout(CASE_LIMIT.to_owned(), EXIT.to_owned())),
            Ok(s) => s?,
        };
        Ok(Finished {
            code: super::child::exit_code(status),
            trailing_output: std::mem::take(&mut self.printed),
            stderr: self.drained_stderr().await,
        })
    }

    /// Kill the program and every process it left, and wait for them to die: what it
    /// had printed, and what did not die.
    pub async fn kill(&mut self) -> Killed {
        let signalled = self.kill_all();
        let _ = self.child.wait().await;
        let proc = std::path::Path::new(PROC);
        let until = Instant::now() + KILL_WAIT;
        let mut survivors = reap::alive(proc, &signalled);
        while !survivors.is_empty() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
            survivors = reap::alive(proc, &signalled);
        }
        // What it wrote before it died and was not read yet: the kill closed the pipe.
        let rest = async {
            while let Ok(Some(line)) = self.stdout.next_line().await {
                self.printed.push_str(&line);
                self.printed.push('\n');
            }
        };
        let _ = tokio::time::timeout(STDERR_DRAIN, rest).await;
        Killed {
            output: std::mem::take(&mut self.printed),
            stderr: self.drained_stderr().await,
            survivors,
        }
    }

    /// Stop and kill the program's processes (see [`reap`]); what was signalled.
    fn kill_all(&mut self) -> std::collections::BTreeSet<u32> {
        reap::kill(std::path::Path::new(PROC), self.child.id(), &self.mark)
    }

    fn timeout(&mut self, limit: String, waiting: String) -> DriveError {
        self.kill_all();
        DriveError::Timeout {
            secs: self.started.elapsed().as_secs_f64(),
            limit,
            waiting,
            last_line: self.last_line.take(),
            stderr: self.stderr_tail(),
        }
    }

    /// The stderr tail once the reader has read to the end, so the last lines the program
    /// wrote before exiting are in it. A child of the program that keeps stderr open would
    /// hold the reader forever: it gets `STDERR_DRAIN`, then the tail is taken as it is.
    async fn drained_stderr(&mut self) -> String {
        if let Some(reader) = self.stderr_reader.take() {
            let _ = tokio::time::timeout(STDERR_DRAIN, reader).await;
        }
        self.stderr_tail()
    }

    fn stderr_tail(&self) -> String {
        let t = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        t.iter().map(|l| format!("{l}\n")).collect()
    }
}

/// A case's end, however it ends, stops whatever its program left running: a worker or a
/// daemon it detached would otherwise outlive the run.
impl Drop for Running {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// What driving the program gave: each turn's output, the program's exit status with the
/// tail of its stderr (command apps), and what a crash test's killed program had printed.
#[derive(Debug, Default)]
pub(crate) struct Driven {
    /// How far the program was contained, as it last started.
    pub level: Option<Level>,
    pub outputs: Vec<String>,
    pub exit: Option<(i32, String)>,
    pub killed: Option<Killed>,
}

/// The last [`STDERR_TAIL`] lines of the child's stderr, kept as they come by the task
/// that reads them.
fn stderr_tail(
    child: &mut tokio::process::Child,
) -> (
    Arc<Mutex<VecDeque<String>>>,
    Option<tokio::task::JoinHandle<()>>,
) {
    let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
    let stderr_reader = child.stderr.take().map(|err| {
        let tail = stderr_tail.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(err).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                if t.len() == STDERR_TAIL {
                    t.pop_front();
                }
                t.push_back(line);
            }
        })
    });
    (stderr_tail, stderr_reader)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn app(script: &str, reply_until: Option<&str>) -> CommandApp {
        CommandApp {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            env: vec![],
            contain: Contain::Off,
            cwd: None,
            reply_until: reply_until.map(|r| Regex::new(r).unwrap()),
        }
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    #[tokio::test]
    async fn turns_read_up_to_the_reply_line() {
        let script = r#"while read line; do echo "tool: x"; echo "bot: got $line"; done; echo bye"#;
        let mut r = app(script, Some("^bot:"))
            .start(Some("first"), soon(), None)
            .unwrap();
        assert_eq!(
            r.turn(0, "first", None).await.unwrap(),
            "tool: x\nbot: got first\n"
        );
        assert_eq!(
            r.turn(1, "second", None).await.unwrap(),
            "tool: x\nbot: got second\n"
        );
        let f = r.finish().await.unwrap();
        assert_eq!((f.code, f.trailing_output.as_str()), (0, "bye\n"));
    }

    #[tokio::test]
    async fn input_reaches_env_and_arguments() {
        let a = CommandApp {
            argv: vec![
                "sh".into(),
                "-c".into(),
                r#"echo "$AGENTPROXY_INPUT|$0""#.into(),
                "{input}".into(),
            ],
            ..app("", None)
        };
        let mut r = a.start(Some("hello there"), soon(), None).unwrap();
        r.send("hello there").await.unwrap();
        let f = r.finish().await.unwrap();
        assert_eq!(f.trailing_output, "hello there|hello there\n");
    }

    #[tokio::test]
    async fn a_hung_program_times_out_with_its_stderr() {
        let mut r = app("echo starting >&2; sleep 30", None)
            .start(Some("x"), Instant::now() + Duration::from_millis(300), None)
            .unwrap();
        let err = r.turn(0, "x", None).await.unwrap_err();
        assert!(matches!(err, DriveError::Timeout { .. }), "{err}");
        assert!(err.to_string().contains("the case timeout"), "{err}");
        assert!(err.stderr().unwrap().contains("starting"));
        // Nothing on stdout: the message says so and how output gets through.
        assert!(
            err.to_string()
                .contains("waiting for the reply of turn 1; it printed nothing on stdout"),
            "{err}"
        );
        assert!(err.to_string().contains("PYTHONUNBUFFERED=1"), "{err}");
    }

    #[tokio::test]
    async fn a_turn_that_outlasts_app_timeout_stops_before_the_case_deadline() {
        let script = "read a; echo one; read b; sleep 30";
        let mut r = app(script, None).start(Some("x"), soon(), None).unwrap();
        let limit = Some(Duration::from_millis(300));
        assert_eq!(r.turn(0, "a", limit).await.unwrap(), "one\n");
        let started = std::time::Instant::now();
        let err = r.turn(1, "b", limit).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            err.to_string()
                .contains("(app.timeout of turn 2) waiting for the reply of turn 2; its last output line was `one`"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_killed_program_and_its_children_die_with_what_they_printed() {
        let script = "echo one; echo oops >&2; sleep 30 & echo $! > child.pid; wait";
        let dir = tempfile::tempdir().unwrap();
        let a = CommandApp {
            cwd: Some(dir.path().to_owned()),
            ..app(script, Some("^never$"))
        };
        let mut r = a.start(Some("x"), soon(), None).unwrap();
        let pid_file = dir.path().join("child.pid");
        // The first line is read, then the read waits for a reply line that never comes.
        let read = tokio::time::timeout(Duration::from_millis(500), r.turn(0, "x", None));
        assert!(read.await.is_err());
        let killed = r.kill().await;
        assert_eq!(killed.output, "one\n");
        assert!(killed.stderr.contains("oops"), "{}", killed.stderr);
        let child: i32 = std::fs::read_to_string(pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The child was in the process group: it is gone too (or a zombie about to go).
        let started = std::time::Instant::now();
        let pid = rustix::process::Pid::from_raw(child).unwrap();
        while rustix::process::test_kill_process(pid).is_ok()
            && started.elapsed() < Duration::from_secs(5)
        {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            if stat.split_whitespace().nth(2) == Some("Z") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the child outlived the kill"
        );
    }

    #[tokio::test]
    async fn a_program_that_dies_mid_conversation_is_reported() {
        let mut r = app("read a; echo one; echo boom >&2; exit 3", None)
            .start(Some("x"), soon(), None)
            .unwrap();
        assert_eq!(r.turn(0, "a", None).await.unwrap(), "one\n");
        let err = r.turn(1, "b", None).await.unwrap_err();
        assert!(
            matches!(err, DriveError::EndedEarly { turn: 2, .. }),
            "{err}"
        );
    }
}
