//! `agentproxy report merge`: read the shards' JSON reports, merge, render.

use crate::cli::{MergeArgs, ReportCommand, ReportFormat};
use crate::error::{Error, Exit, Result};
use crate::report::merge;

pub fn run(command: ReportCommand) -> Result<Exit> {
    match command {
        ReportCommand::Merge(args) => run_merge(args),
    }
}

fn run_merge(args: MergeArgs) -> Result<Exit> {
    if args.outputs.len() > args.reports.len() {
        return Err(Error::OutputWithoutReport);
    }
    let mut reports = Vec::with_capacity(args.files.len());
    for path in &args.files {
        let text = std::fs::read_to_string(path).map_err(|source| Error::ReadReport {
            path: path.clone(),
            source,
        })?;
        reports.push(merge::parse(path.clone(), &text)?);
    }
    let run = merge::merge(reports)?;
    let formats = if args.reports.is_empty() {
        vec![ReportFormat::Json]
    } else {
        args.reports
    };
    super::output::write_reports(&formats, &args.outputs, &run)?;
    Ok(Exit::Ok)
}
