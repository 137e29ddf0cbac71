//! The report formats `--report` takes, and the one table from a format to its renderer.

use super::{html, json, junit, markdown, RunReport};

/// A report file's format: the spec's word for it (`execution.reports`, `--report`).
pub use crate::spec::ReportFormat as Format;

/// `run` rendered in `format`: the one place a format names its renderer.
pub fn render(format: Format, run: &RunReport) -> String {
    match format {
        Format::Json => json::render(run),
        Format::Markdown => markdown::render(run),
        Format::Junit => junit::render(run),
        Format::Html => html::render(run),
    }
}
