//! The report formats `--report` takes, and the one table from a format to its renderer.

use super::{html, json, junit, markdown, RunReport};

/// A report file's format (`--report`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Json,
    Markdown,
    Junit,
    /// One self-contained HTML file (see [`html`]).
    Html,
}

/// `run` rendered in `format`: the one place a format names its renderer.
pub fn render(format: Format, run: &RunReport) -> String {
    match format {
        Format::Json => json::render(run),
        Format::Markdown => markdown::render(run),
        Format::Junit => junit::render(run),
        Format::Html => html::render(run),
    }
}
