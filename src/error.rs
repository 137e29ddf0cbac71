//! The error type of every command, how a command that ran to its end came out, and the
//! one place that maps both to the documented exit codes.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::cassette::CassetteError;
use crate::matching::normalize::RuleError;
use crate::proxy::upstream::InvalidUpstream;
use crate::proxy::BindError;
use crate::report::Status;
use crate::runner::child::ChildError;
use crate::runner::plan::PlanError;

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: a test failed or a replayed request missed the cassette.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code: usage or configuration error (bad flag, bad spec, unreadable cassette).
pub const EXIT_USAGE: i32 = 2;
/// Exit code: execution error (program crashed or timed out, upstream unreachable).
pub const EXIT_EXECUTION: i32 = 3;

/// How a command that ran to its end came out (an error is an [`Error`] instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything passed, was served, or was recorded.
    Ok,
    /// A test or check failed, or a replayed request missed the cassette.
    Failed,
    /// The run finished but something in it could not be executed: a case errored, or a
    /// request could not reach the upstream while recording.
    Execution,
    /// The program under test exited non-zero (`128+N` when killed by signal `N`): its
    /// code passes through.
    Program(i32),
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{what} `{first}` and `{second}` would both be given as ${var}\n  hint: rename one of them (`-` and `_` are the same in a variable name, and case does not count)")]
    NameClash {
        /// `MCP servers`, `agents`.
        what: &'static str,
        first: String,
        second: String,
        var: String,
    },

    #[error("CI is set, and {from} asks for mode `{mode}`, which may call the real model from CI\n  hint: in CI only the command line (or this run's environment) may choose a mode that records")]
    CiRecording { from: String, mode: &'static str },

    #[error("refusing to listen on {addr}: {why}")]
    NotLoopback { addr: SocketAddr, why: &'static str },

    #[error(transparent)]
    Rules(#[from] RuleError),

    #[error("invalid --filter: {0}")]
    Filter(#[source] globset::Error),

    #[error("more -o files than --report formats; give one --report per -o")]
    OutputWithoutReport,

    #[error("cases {first} and {second} share the cassette {}\n  hint: give one of the specs its own `cassettes:` directory, or rename one of the cases", path.display())]
    CassetteCollision {
        path: PathBuf,
        first: String,
        second: String,
    },

    #[error("no case matches --case / --filter")]
    NoCaseMatches,

    /// `CI_NODE_INDEX` / `CI_NODE_TOTAL` do not name a shard.
    #[error("invalid shard from the environment: {0}")]
    ShardEnv(String),

    #[error("failed to read report {}: {source}", path.display())]
    ReadReport {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(transparent)]
    Merge(#[from] crate::report::merge::MergeError),

    /// `agentproxy mcp` cannot rule out running under a replay.
    #[error("agentproxy mcp: {why}; not starting the server, in case this is a replay\n  hint: give the server AGENTPROXY_URL in its environment (the MCP host's `env`), or run its command without agentproxy mcp")]
    McpUnsure { why: String },

    /// `agentproxy mcp` found a session that does not answer as one.
    #[error("agentproxy mcp: the session at {url} cannot serve MCP: {why}")]
    McpSession { url: String, why: String },

    #[error("agentproxy mcp: failed to start `{command}`: {source}")]
    McpSpawn {
        command: String,
        #[source]
        source: std::io::Error,
    },

    #[error("agentproxy mcp: {0}")]
    McpIo(#[source] std::io::Error),

    /// `diff --spec --case NAME` names a case the spec does not have.
    #[error("{} has no case named `{name}`\n  hint: its cases are {}", spec.display(), quoted(cases))]
    NoSuchCase {
        spec: PathBuf,
        name: String,
        cases: Vec<String>,
    },

    /// `diff --spec` without `--case` on a spec of several cases.
    #[error("{} has {} cases; say which one the cassettes belong to with --case NAME\n  hint: its cases are {}", spec.display(), cases.len(), quoted(cases))]
    WhichCase { spec: PathBuf, cases: Vec<String> },

    /// A cassette to read (`show`, `diff`) that does not exist.
    #[error("cassette {}: no such file\n  hint: check the path; `HEAD:PATH` reads the cassette a commit has (`agentproxy diff HEAD:{} {}`)", path.display(), path.display(), path.display())]
    NoCassette { path: PathBuf },

    /// A cassette named `REVISION:PATH` that is no file and that git cannot read.
    #[error("cassette {spec}: there is no such file, and git cannot read it as REVISION:PATH: {why}\n  hint: `REVISION:PATH` names a cassette as a commit has it (`HEAD:cassettes/x.json`, the path from the repository's root); run it inside the repository")]
    GitCassette { spec: String, why: String },

    /// `agentproxy docs TOPIC` of no page.
    #[error("no documentation page `{topic}`\n  hint: the topics are {}", topics.join(", "))]
    NoSuchTopic {
        topic: String,
        topics: Vec<&'static str>,
    },

    #[error(transparent)]
    Cassette(#[from] CassetteError),

    #[error(transparent)]
    Bind(#[from] BindError),

    #[error("failed to listen for SIGINT: {0}")]
    Signal(#[source] std::io::Error),

    #[error(transparent)]
    Child(#[from] ChildError),

    #[error(transparent)]
    Upstream(#[from] InvalidUpstream),

    #[error("the program made no request through the proxy{elsewhere}, so no cassette was written\n  the proxy injected: {injected}\n  hint: make the program read one of these variables for its API base URL (run `agentproxy doctor -- COMMAND` to check)")]
    NothingRecorded {
        injected: String,
        /// `` but to other hosts (…), which are not recorded``, or nothing.
        elsewhere: String,
    },

    /// Requests arrived, but each failed at the upstream or was refused by the proxy.
    #[error("nothing was recorded, so no cassette was written: every request that reached the proxy failed\n{}\n  hint: the errors above say why: an unreachable or failing --upstream, a path that is not a provider API path, or a body over --max-body-size", failures.iter().map(|f| format!("  - {f}")).collect::<Vec<_>>().join("\n"))]
    NothingRecordable { failures: Vec<String> },

    #[error(transparent)]
    Spec(#[from] crate::spec::SpecError),

    #[error("a case panicked: {0}")]
    CasePanicked(#[source] tokio::task::JoinError),

    #[error("failed to create {}: {source}", dir.display())]
    ReportDir {
        dir: PathBuf,
        source: std::io::Error,
    },

    #[error("failed to write report {}: {source}", path.display())]
    WriteReport {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("failed to write to standard output: {0}")]
    Stdout(std::io::Error),

    /// Traces that could not be written or posted.
    #[error("failed to export the traces to {to}: {why}")]
    Export { to: String, why: String },

    #[error("failed to render the report: {0}")]
    RenderReport(#[source] serde_json::Error),

    #[error("failed to make the session's secret from the system's random source: {0}")]
    Secret(#[source] std::io::Error),

    #[error("failed to write the replay's Google credentials file: {0}")]
    GoogleCredentials(#[source] std::io::Error),

    #[error("failed to make the session's certificate authority: {0}")]
    Ca(#[source] crate::proxy::egress::CaError),

    #[error("serve's --root {root} cannot be used: {source}", root = .root.display())]
    ServeRoot {
        root: PathBuf,
        source: std::io::Error,
    },
}

impl From<PlanError> for Error {
    fn from(e: PlanError) -> Error {
        match e {
            PlanError::Cassette(e) => Error::Cassette(e),
            PlanError::Rules(e) => Error::Rules(e),
            PlanError::Upstream(e) => Error::Upstream(e),
            PlanError::Secret(e) => Error::Secret(e),
            PlanError::Ca(e) => Error::Ca(e),
        }
    }
}

/// `` `a`, `b` ``
fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Exit {
    /// The documented exit code (see README and docs/).
    /// The one rule from how a run came out to its exit, for every command: the status
    /// of each of its parts (a session's one, each case of a test run), and the program's
    /// own failing exit code when it is to pass through. An error anywhere is an
    /// execution failure; else a failure exits with the program's code when given, else
    /// 1; a run that passed (or was skipped) exits 0.
    pub fn of(statuses: impl IntoIterator<Item = Status>, program: Option<i32>) -> Exit {
        let (mut failed, mut errored) = (false, false);
        for status in statuses {
            match status {
                Status::Error => errored = true,
                Status::Failed => failed = true,
                Status::Passed | Status::Skipped => {}
            }
        }
        match (errored, failed, program) {
            (true, _, _) => Exit::Execution,
            (false, true, Some(code)) => Exit::Program(code),
            (false, true, None) => Exit::Failed,
            (false, false, _) => Exit::Ok,
        }
    }

    pub fn code(self) -> i32 {
        match self {
            Exit::Ok => EXIT_OK,
            Exit::Failed => EXIT_FAILURE,
            Exit::Execution => EXIT_EXECUTION,
            Exit::Program(code) => code,
        }
    }
}

impl Error {
    /// The documented exit code for this error (see README and docs/).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::NotLoopback { .. }
            | Error::CiRecording { .. }
            | Error::NameClash { .. }
            | Error::Rules(_)
            | Error::Filter(_)
            | Error::OutputWithoutReport
            | Error::NoCaseMatches
            | Error::ShardEnv(_)
            | Error::ReadReport { .. }
            | Error::Merge(_)
            | Error::McpUnsure { .. }
            | Error::CassetteCollision { .. }
            | Error::NoSuchCase { .. }
            | Error::WhichCase { .. }
            | Error::GitCassette { .. }
            | Error::NoSuchTopic { .. }
            | Error::NoCassette { .. }
            | Error::ServeRoot { .. }
            | Error::Bind(_)
            | Error::Signal(_)
            | Error::Upstream(_)
            | Error::Child(ChildError::NoCommand)
            | Error::Spec(_) => EXIT_USAGE,
            Error::Cassette(e) => match e {
                CassetteError::Read { .. }
                | CassetteError::NotAFile { .. }
                | CassetteError::TooLarge { .. }
                | CassetteError::Corrupt { .. }
                | CassetteError::Invalid { .. }
                | CassetteError::Version { .. }
                | CassetteError::Refused { .. }
                | CassetteError::NotACassette { .. }
                | CassetteError::Unwritable { .. }
                | CassetteError::Locked { .. } => EXIT_USAGE,
                CassetteError::Secret { .. }
                | CassetteError::Write { .. }
                | CassetteError::Changed { .. } => EXIT_EXECUTION,
            },
            Error::Child(ChildError::Spawn { .. } | ChildError::Wait { .. })
            | Error::NothingRecorded { .. }
            | Error::NothingRecordable { .. }
            | Error::McpSession { .. }
            | Error::McpSpawn { .. }
            | Error::McpIo(_)
            | Error::CasePanicked(_)
            | Error::ReportDir { .. }
            | Error::WriteReport { .. }
            | Error::Stdout(_)
            | Error::Export { .. }
            | Error::RenderReport(_)
            | Error::Secret(_)
            | Error::GoogleCredentials(_)
            | Error::Ca(_) => EXIT_EXECUTION,
        }
    }
}

/// The exit code of a command's result: the one mapping of outcomes to exit codes.
pub fn exit_code(result: &Result<Exit>) -> i32 {
    match result {
        Ok(exit) => exit.code(),
        Err(e) => e.exit_code(),
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::{Exit, Status};

    #[test]
    fn one_rule_from_statuses_to_the_exit() {
        use Status::{Error, Failed, Passed, Skipped};
        assert_eq!(Exit::of([Passed, Skipped], Some(2)), Exit::Ok);
        assert_eq!(Exit::of([Passed, Failed], None), Exit::Failed);
        assert_eq!(Exit::of([Failed], Some(2)), Exit::Program(2));
        assert_eq!(Exit::of([Failed, Error], Some(2)), Exit::Execution);
        assert_eq!(Exit::of([], None), Exit::Ok);
    }
}
