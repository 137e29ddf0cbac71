//! `agentproxy report merge`: read the shards' JSON reports, merge, render; `agentproxy
//! report cases`: read the cases a harness's serves wrote, render them as one run.

use std::path::{Path, PathBuf};

use crate::cli::{CasesArgs, MergeArgs, ReportCommand, ReportFormat};
use crate::error::{Error, Exit, Result};
use crate::report::{merge, RunReport, Summary};

pub fn run(command: ReportCommand) -> Result<Exit> {
    match command {
        ReportCommand::Merge(args) => run_merge(args),
        ReportCommand::Cases(args) => run_cases(args),
    }
}

fn run_cases(args: CasesArgs) -> Result<Exit> {
    if args.outputs.len() > args.reports.len() {
        return Err(Error::OutputWithoutReport);
    }
    let mut files = vec![];
    for dir in &args.dirs {
        let entries = std::fs::read_dir(dir).map_err(|source| Error::ReadReport {
            path: dir.clone(),
            source,
        })?;
        // A file being written is a dot-file until it is whole.
        files.extend(
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .filter(|p| {
                    !p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                }),
        );
    }
    // Named by the time each test ended: the run in that order.
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    let mut cases = Vec::with_capacity(files.len());
    for path in files {
        let text = read(&path)?;
        cases.push(merge::case(path, &text)?);
    }
    let run = RunReport {
        summary: Summary::of(&cases),
        duration_ms: cases.iter().map(|c| c.duration_ms).sum(),
        cases,
        shard: None,
    };
    write(args.reports, &args.outputs, &run)
}

fn run_merge(args: MergeArgs) -> Result<Exit> {
    if args.outputs.len() > args.reports.len() {
        return Err(Error::OutputWithoutReport);
    }
    let mut reports = Vec::with_capacity(args.files.len());
    for path in &args.files {
        reports.push(merge::parse(path.clone(), &read(path)?)?);
    }
    write(args.reports, &args.outputs, &merge::merge(reports)?)
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| Error::ReadReport {
        path: path.to_owned(),
        source,
    })
}

/// The run in each format asked for (the JSON report on stdout when none is).
fn write(formats: Vec<ReportFormat>, outputs: &[PathBuf], run: &RunReport) -> Result<Exit> {
    let formats = if formats.is_empty() {
        vec![ReportFormat::Json]
    } else {
        formats
    };
    super::output::write_reports(&formats, outputs, run)?;
    Ok(Exit::Ok)
}
