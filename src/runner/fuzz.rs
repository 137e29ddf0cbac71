//! A case's fuzz runs (`fuzz:`): the case again, once per set of arguments, each time with
//! the first call to the tool the program gets carrying them. The arguments are the spec's
//! own (`arguments:`), then generated from the tool's schema as the recorded request
//! declares it: valid ones, then near misses.

use std::path::Path;

use serde_json::Value;

use super::case::{run_inner, Settings};
use crate::cassette::{store, Cassette};
use crate::fuzz::Run;
use crate::proxy::FuzzCall;
use crate::report::{CaseReport, FuzzKind, FuzzReport, FuzzRun, Status};
use crate::spec::{Case, Fuzz, Spec};

/// Run the fuzz runs of `case` after its own run (reported in `report`), from the cassette
/// at `path`; a failing run fails the case.
pub async fn run(
    spec: &Spec,
    case: &Case,
    s: &Settings,
    fuzz: &Fuzz,
    path: &Path,
    report: &mut CaseReport,
) {
    let runs = match store::load(path) {
        Ok(cassette) => runs(fuzz, &cassette),
        Err(e) => Err(format!("the cassette could not be read: {e}")),
    };
    let runs = match runs {
        Ok(r) => r,
        Err(why) => {
            report
                .warnings
                .push(format!("fuzz `{}`: no run: {why}", fuzz.tool));
            report.status = Status::Failed;
            return;
        }
    };
    let asked = fuzz.valid + fuzz.invalid + fuzz.arguments.len();
    if runs.len() < asked {
        report.warnings.push(format!(
            "fuzz `{}`: {} runs of the {asked} asked: the schema allows no more distinct arguments",
            fuzz.tool,
            runs.len()
        ));
    }
    let mut out = FuzzReport {
        tool: fuzz.tool.clone(),
        seed: fuzz.seed,
        runs: Vec::with_capacity(runs.len()),
    };
    for (i, (kind, run)) in runs.into_iter().enumerate() {
        let call = FuzzCall {
            tool: fuzz.tool.clone(),
            arguments: run.arguments,
        };
        let mut r = CaseReport::new(&spec.file, &case.name, "replay", path);
        if let Err(e) = run_inner(spec, case, s, path.to_owned(), &mut r, Some(&call)).await {
            r.status = Status::Error;
            r.error = Some(e.to_string());
        }
        out.runs.push(FuzzRun {
            index: i + 1,
            kind,
            violation: run.violation,
            arguments: call.arguments,
            passed: r.status == Status::Passed,
            failures: failures(&r),
        });
    }
    if out.failed().next().is_some() {
        report.status = Status::Failed;
    }
    report.fuzz = Some(out);
}

/// The arguments of every run: the spec's, then those generated from the tool's schema,
/// which the first recorded request whose answer calls the tool declares.
fn runs(fuzz: &Fuzz, cassette: &Cassette) -> Result<Vec<(FuzzKind, Run)>, String> {
    let given = fuzz.arguments.iter().map(|a| {
        let run = Run {
            arguments: a.clone(),
            violation: None,
        };
        (FuzzKind::Given, run)
    });
    let mut out: Vec<(FuzzKind, Run)> = given.collect();
    if fuzz.valid + fuzz.invalid == 0 {
        return Ok(out);
    }
    let schema = schema_of(&fuzz.tool, cassette)?;
    let made = crate::fuzz::runs(&schema, fuzz.valid, fuzz.invalid, fuzz.seed)?;
    out.extend(made.into_iter().map(|r| {
        let kind = match r.violation {
            Some(_) => FuzzKind::Invalid,
            None => FuzzKind::Valid,
        };
        (kind, r)
    }));
    Ok(out)
}

/// The schema `tool` is declared with in the first recorded request whose answer calls it.
fn schema_of(tool: &str, cassette: &Cassette) -> Result<Value, String> {
    let call = cassette
        .interactions
        .iter()
        .filter_map(|it| it.model_call())
        .find(|c| c.tool_calls.iter().any(|t| t.name == tool))
        .ok_or_else(|| {
            format!("no recorded answer calls `{tool}`, so there is no call to give arguments to")
        })?;
    call.tools
        .into_iter()
        .find(|t| t.name == tool)
        .map(|t| t.parameters)
        .filter(Value::is_object)
        .ok_or_else(|| format!("the recorded request declares no schema for `{tool}`"))
}

/// Why a run failed, one line each.
fn failures(r: &CaseReport) -> Vec<String> {
    if r.status == Status::Passed {
        return vec![];
    }
    let mut out = Vec::new();
    for (turn, a) in r.failures() {
        let at = turn.map(|t| format!("turn {t}: ")).unwrap_or_default();
        out.push(format!("{at}{}: {}", a.what, a.message));
        // The last line of what was seen: for `exit:`, the program's last word on stderr.
        let last =
            (a.actual.as_deref()).and_then(|t| t.lines().rev().find(|l| !l.trim().is_empty()));
        out.extend(last.map(|l| format!("  {}", l.trim())));
    }
    let first_line = |s: &String| s.lines().next().unwrap_or_default().to_owned();
    out.extend(r.misses.iter().map(first_line));
    out.extend(r.warnings.iter().cloned());
    // What went wrong, and the last line of the program's stderr (its exception).
    if let Some(e) = &r.error {
        let mut lines = e.lines().map(str::trim).filter(|l| !l.is_empty());
        out.extend(lines.next().map(str::to_owned));
        out.extend(lines.next_back().map(str::to_owned));
    }
    out
}
