//! The determinism check at the edge: run a case twice against its recording, served by
//! position (so a program whose requests drift still runs to its end), and compare the
//! requests of the two runs.

use std::time::Instant;

use super::compare::compare;
use super::findings::Findings;
use super::sample::{samples, Sample};
use super::verdict::conclude;
use crate::cassette::{store, Cassette};
use crate::proxy::Session;
use crate::report::{CaseReport, Status};
use crate::runner::case::{self, drive, Settings};
use crate::runner::error::CaseError;
use crate::runner::plan::{self, Setup, Use};
use crate::spec::{Case, Spec};

/// The mode a checked case reports.
pub(crate) const MODE: &str = "determinism";

/// A checked case: its report, and the spec fragment that would stabilise it, if any.
pub(crate) struct Checked {
    pub(crate) report: CaseReport,
    pub(crate) suggestion: Option<String>,
}

/// Why a case could not be checked.
#[derive(Debug, thiserror::Error)]
enum CheckError {
    /// Before either run: the cassette or the match rules.
    #[error(transparent)]
    Setup(#[from] CaseError),

    /// One of the two runs.
    #[error("run {run} of 2: {source}")]
    Run { run: usize, source: CaseError },
}

/// Check one case. Every outcome becomes a report: passed (stable), failed (values
/// differed, or a request missed), error (the program failed), skipped (no cassette).
pub(crate) async fn check(spec: &Spec, case: &Case, s: &Settings) -> Checked {
    let started = Instant::now();
    let cassette_path = case.cassette_path(&s.cassette_dir);
    let mut report = CaseReport::new(&spec.file, &case.name, MODE, &cassette_path);
    let mut suggestion = None;
    if let Some(reason) = &case.skip {
        report.skip(reason);
    } else if !cassette_path.exists() {
        report.status = Status::Skipped;
        report.warnings.push(format!(
            "no cassette at {}, so nothing to check against; record it first with `agentproxy test --mode record`",
            cassette_path.display()
        ));
    } else {
        match check_twice(spec, case, s, &cassette_path, &mut report).await {
            Ok(findings) => suggestion = conclude(&findings, &mut report),
            Err(e) => {
                report.status = Status::Error;
                report.error = Some(e.to_string());
            }
        }
    }
    report.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Checked { report, suggestion }
}

async fn check_twice(
    spec: &Spec,
    case: &Case,
    s: &Settings,
    cassette_path: &std::path::Path,
    report: &mut CaseReport,
) -> Result<Findings, CheckError> {
    let cassette = store::load(cassette_path).map_err(CaseError::from)?;
    let mut runs = vec![];
    for n in 1..=2 {
        let (samples, misses) = run_once(spec, case, s, cassette_path, cassette.clone())
            .await
            .map_err(|source| CheckError::Run { run: n, source })?;
        report
            .misses
            .extend(misses.into_iter().map(|m| format!("run {n} of 2: {m}")));
        runs.push(samples);
    }
    Ok(compare(&runs[0], &runs[1]))
}

/// One run of the case as its own replay would be (the same session, MCP servers, mocks
/// and crash point), but served by position: the requests it made, as samples, and its
/// miss reports. A crash case's recording holds both runs: it crashes and restarts as
/// recorded.
async fn run_once(
    spec: &Spec,
    case: &Case,
    s: &Settings,
    cassette_path: &std::path::Path,
    cassette: Cassette,
) -> Result<(Vec<Sample>, Vec<String>), CaseError> {
    let setup = Setup {
        by_position: true,
        ..case::setup(
            spec,
            case,
            s,
            cassette_path,
            Some(cassette),
            Use::Replay,
            None,
        )
    };
    let options = plan::plan(setup, &s.forwarding())?.options;
    let rules = options.rules.clone();
    let session = Session::start(options, s.listen).await?;
    let base = format!("http://{}", session.addr());
    let driven = drive(spec, case, s, &session, &base, Use::Replay).await;
    let outcome = session.stop().await;
    if let Err((_, e)) = driven {
        if outcome.misses.is_empty() {
            return Err(e.into());
        }
    }
    Ok((samples(&outcome.exchanges, &rules), outcome.misses))
}
