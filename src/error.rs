//! The error type of every command, and the one place that maps errors to exit codes.

use std::path::PathBuf;

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: a test failed or a replayed request missed the cassette.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code: usage or configuration error (bad flag, bad spec, unreadable cassette).
pub const EXIT_USAGE: i32 = 2;
/// Exit code: execution error (program crashed or timed out, upstream unreachable).
pub const EXIT_EXECUTION: i32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),

    #[error("failed to read cassette {path}: {source}\n  hint: record one first with `agentproxy record --cassette {path} -- COMMAND`", path = .path.display())]
    CassetteRead {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("cassette {path} is broken at line {line}, column {column}: {message}\n  hint: a cassette is JSON written by `agentproxy record`; restore it from version control or re-record it", path = .path.display())]
    CassetteCorrupt {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },

    #[error("cassette {path} has format {found}, but this agentproxy reads format {supported}.x only\n  hint: {hint}", path = .path.display())]
    CassetteVersion {
        path: PathBuf,
        found: String,
        supported: u32,
        hint: &'static str,
    },

    #[error("refusing to write cassette {path}: the value at {pointer} looks like a {kind}\n  hint: secrets must never reach a cassette; export the key in a variable whose name contains KEY, TOKEN or SECRET so agentproxy can replace it with ${{NAME}}", path = .path.display())]
    SecretInCassette {
        path: PathBuf,
        pointer: String,
        kind: &'static str,
    },

    #[error("failed to write cassette {path}: {source}", path = .path.display())]
    CassetteWrite {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("failed to listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },

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

    #[error("the program made no request through the proxy, so no cassette was written\n  the proxy injected: {injected}\n  hint: make the program read one of these variables for its API base URL (run `agentproxy doctor -- COMMAND` to check)")]
    NothingRecorded { injected: String },

    #[error("failed to set up the upstream client: {0}")]
    Tls(String),

    #[error(transparent)]
    Spec(#[from] crate::spec::SpecError),
}

impl Error {
    /// The documented exit code for this error (see README and docs/).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_)
            | Error::CassetteRead { .. }
            | Error::CassetteCorrupt { .. }
            | Error::CassetteVersion { .. }
            | Error::Bind { .. }
            | Error::Tls(_)
            | Error::Spec(_) => EXIT_USAGE,
            Error::SecretInCassette { .. }
            | Error::CassetteWrite { .. }
            | Error::Spawn { .. }
            | Error::Wait { .. }
            | Error::NothingRecorded { .. } => EXIT_EXECUTION,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
