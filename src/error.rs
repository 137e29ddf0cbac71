//! The error type of every command, and the one place that maps errors to exit codes.

use crate::cassette::CassetteError;
use crate::proxy::upstream::InvalidUpstream;
use crate::proxy::BindError;
use crate::runner::child::ChildError;

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

    #[error(transparent)]
    Cassette(#[from] CassetteError),

    #[error(transparent)]
    Bind(#[from] BindError),

    #[error(transparent)]
    Child(#[from] ChildError),

    #[error(transparent)]
    Upstream(#[from] InvalidUpstream),

    #[error("the program made no request through the proxy, so no cassette was written\n  the proxy injected: {injected}\n  hint: make the program read one of these variables for its API base URL (run `agentproxy doctor -- COMMAND` to check)")]
    NothingRecorded { injected: String },

    #[error(transparent)]
    Spec(#[from] crate::spec::SpecError),
}

impl Error {
    /// The documented exit code for this error (see README and docs/).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_)
            | Error::Bind(_)
            | Error::Upstream(_)
            | Error::Child(ChildError::NoCommand)
            | Error::Spec(_) => EXIT_USAGE,
            Error::Cassette(e) => match e {
                CassetteError::Read { .. }
                | CassetteError::Corrupt { .. }
                | CassetteError::Version { .. } => EXIT_USAGE,
                CassetteError::Secret { .. } | CassetteError::Write { .. } => EXIT_EXECUTION,
            },
            Error::Child(ChildError::Spawn { .. } | ChildError::Wait { .. })
            | Error::NothingRecorded { .. } => EXIT_EXECUTION,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
