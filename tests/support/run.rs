//! The `agentproxy` binary run to its end as a user's shell would run it, for the
//! end-to-end tests with real clients (Python, Node).

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

/// Generous: four interpreters may start at once on a 2-core CI machine.
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

/// One finished `agentproxy` run.
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// The variables of the developer's shell that could steer agentproxy, an SDK or a
/// client's proxy, removed before a run (by prefix).
const STEERING: [&str; 8] = [
    "OPENAI_",
    "AGENTPROXY_",
    "AZURE_",
    "OLLAMA_",
    "NODE_",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "AWS_",
];

/// The arguments of a session of `program`: `MODE --cassette CASSETTE FLAGS... --
/// PROGRAM...`.
pub fn session(mode: &str, cassette: &Path, flags: &[&str], program: &[&OsStr]) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![mode.into(), "--cassette".into(), cassette.into()];
    args.extend(flags.iter().map(OsString::from));
    args.push("--".into());
    args.extend(program.iter().map(OsString::from));
    args
}

/// Runs the agentproxy binary in the repository with `args`, in an environment cleaned of
/// what could steer it or the client from the developer's shell, with `env` (the keys)
/// set.
pub async fn agentproxy(args: Vec<OsString>, env: &[(&str, &str)]) -> Run {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentproxy"));
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    command.args(args).current_dir(repo).kill_on_drop(true);
    for (name, _) in std::env::vars_os() {
        let upper = name.to_string_lossy().to_ascii_uppercase();
        if STEERING.iter().any(|p| upper.starts_with(p)) {
            command.env_remove(&name);
        }
    }
    command.envs(env.iter().copied());
    // Unbuffered, so a child killed by the timeout still shows how far it got; UTF-8,
    // because the replies contain "°"; no bytecode files written into tests/e2e.
    command
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONIOENCODING", "utf-8")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let output = tokio::time::timeout(CHILD_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("agentproxy did not finish within {CHILD_TIMEOUT:?}"))
        .expect("failed to start the agentproxy binary");
    Run {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `command` started with a free loopback port (`with_port` puts it on the command line),
/// once that port accepts connections (within 60 s): an example or fake server.
pub fn serving(
    mut command: std::process::Command,
    with_port: impl FnOnce(&mut std::process::Command, u16),
) -> (std::process::Child, u16) {
    let port = (std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .local_addr()
        .unwrap()
        .port();
    with_port(&mut command, port);
    let child = (command.stdout(std::process::Stdio::null()))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "{command:?} did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, port)
}
