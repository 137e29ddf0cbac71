//! What a case's fuzz runs (`fuzz:`) are made of, and what a run's report says: the
//! arguments are the spec's own (`arguments:`), then generated from the tool's schema as
//! the recorded request declares it, valid ones then near misses. `case.rs` runs them.

use serde_json::Value;

use crate::cassette::Cassette;
use crate::fuzz::Run;
use crate::report::{CaseReport, FuzzKind, Status};
use crate::spec::Fuzz;

/// The arguments of every run: the spec's, then those generated from the tool's schema,
/// which the first recorded request whose answer calls the tool declares.
pub(super) fn runs(fuzz: &Fuzz, cassette: &Cassette) -> Result<Vec<(FuzzKind, Run)>, String> {
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
    (call.tools.iter())
        .find(|t| t.name == tool)
        .map(|t| t.parameters.clone())
        .filter(Value::is_object)
        .ok_or_else(|| format!("the recorded request declares no schema for `{tool}`"))
}

/// Why a run failed, one line each.
pub(super) fn failures(r: &CaseReport) -> Vec<String> {
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
    out.extend(r.problems.iter().cloned());
    // What went wrong, and the last line of the program's stderr (its exception).
    if let Some(e) = &r.error {
        let mut lines = e.lines().map(str::trim).filter(|l| !l.is_empty());
        out.extend(lines.next().map(str::to_owned));
        out.extend(lines.next_back().map(str::to_owned));
    }
    out
}
