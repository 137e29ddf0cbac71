//! Why a case ends in error rather than passing or failing: what could not be set up, the
//! program that could not be driven to a clean end, a record run that saw nothing.

use std::path::PathBuf;

use super::driver::DriveError;
use super::plan::PlanError;
use super::url::UrlError;
use crate::cassette::CassetteError;
use crate::proxy::BindError;

/// Why a case could not be run to a verdict; its message is the case report's error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CaseError {
    #[error(transparent)]
    Cassette(#[from] CassetteError),

    #[error("no cassette at {}; record it with `agentproxy test {} --mode record --case {}`", path.display(), shell_words::quote(&spec.display().to_string()), shell_words::quote(case))]
    NoCassette {
        path: PathBuf,
        spec: PathBuf,
        case: String,
    },

    #[error(transparent)]
    Plan(#[from] PlanError),

    #[error(transparent)]
    Bind(#[from] BindError),

    #[error(transparent)]
    Program(#[from] ProgramError),

    #[error("the program made no request through the proxy, so no cassette was written; {} must read one of {} (run `agentproxy doctor -- COMMAND` to check)", spec.display(), super::env::url_var_names())]
    NoRequest { spec: PathBuf },

    #[error("the upstream failed while recording: {}", errors.join("; "))]
    UpstreamFailed { errors: Vec<String> },
}

/// Why the program of a case did not run to a clean end, with the tail of its stderr.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProgramError {
    /// A `url:` app could not be reached or answered badly.
    #[error(transparent)]
    Url(#[from] UrlError),

    /// A command could not be started, timed out, or ended before its turns were done.
    #[error("{source}{}", stderr_tail(.source.stderr()))]
    Drive { source: DriveError },

    /// A command exited with a non-zero status.
    #[error("the program exited with status {code}{}", stderr_tail(Some(.stderr)))]
    Exited { code: i32, stderr: String },
}

impl From<DriveError> for ProgramError {
    fn from(source: DriveError) -> ProgramError {
        ProgramError::Drive { source }
    }
}

/// The tail of the program's stderr under a separator line, or nothing when it is empty.
fn stderr_tail(stderr: Option<&str>) -> String {
    stderr
        .filter(|t| !t.is_empty())
        .map(|t| format!("\n--- stderr (tail) ---\n{t}"))
        .unwrap_or_default()
}
