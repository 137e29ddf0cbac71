//! The arguments of the tools around cassettes: `export`, `report`, `diff`, `show`,
//! `mcp`, `docs` and `doctor`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::parse::{parse_duration, parse_mcp_name, parse_otlp};
use crate::report::Format as ReportFormat;

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Where the traces go: a file (`-`: stdout), or an OTLP/HTTP endpoint URL.
    #[arg(long, value_name = "FILE|URL", value_parser = parse_otlp)]
    pub otlp: String,

    /// Leave out message text, tool arguments and results: names, models, tokens and times only.
    #[arg(long)]
    pub no_content: bool,

    /// Cassettes to export: files, or REVISION:PATH read from git.
    #[arg(value_name = "CASSETTE", required = true)]
    pub cassettes: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// The server's name in the cassette: letters, digits, `-` and `_`.
    #[arg(long, value_name = "NAME", value_parser = parse_mcp_name)]
    pub name: String,

    /// The server's own command, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Merge the JSON reports of the shards of one run, and render the whole run.
    #[command(
        long_about = "Merge the JSON reports (--report json) of the shards of one `agentproxy test --shard` \
run into the report of the whole run: each case is taken from the shard that ran it, the summary is counted \
again, and the duration is the longest shard's. Every shard of the run must be given once, and all must have \
been run with the same selection of cases.\n\n\
Exit codes: 0 merged (whatever the cases' statuses); 2 a report cannot be read, a shard is missing or given \
twice, or the reports are not of one run. Formats: `agentproxy docs spec-reference` (Reports).",
        after_help = "Examples:\n  agentproxy report merge shard-*.json --report junit -o junit.xml\n  \
agentproxy report merge a.json b.json --report markdown -o report.md --report json -o all.json"
    )]
    Merge(MergeArgs),
    /// Render the tests a harness's serves wrote (`--cases-dir`) as the report of one run.
    #[command(
        long_about = "Read the cases that `agentproxy serve --cases-dir DIR` wrote, a file per test (the pytest plugin's, vitest's and jest's serves, several processes alike), and render them as the report of one run, failures first in the HTML page: what `pytest --agentproxy-html` and AGENTPROXY_HTML write. Cases are in the order their tests ended.\n\n\
Exit codes: 0 written (whatever the tests' statuses); 2 a directory or a case cannot be read. Formats: `agentproxy docs spec-reference` (Reports).",
        after_help = "Examples:\n  agentproxy report cases /tmp/cases --report html -o report.html"
    )]
    Cases(CasesArgs),
}

#[derive(Debug, Args)]
pub struct CasesArgs {
    /// The directories `serve --cases-dir` wrote.
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,

    /// Write the report: json, markdown, junit or html (repeatable; pair each with -o).
    /// Without it, the JSON report goes to stdout.
    #[arg(long = "report", value_name = "FORMAT")]
    pub reports: Vec<ReportFormat>,

    /// File for the report given at the same position (default, or `-`: stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub outputs: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' JSON reports.
    #[arg(value_name = "REPORT", required = true)]
    pub files: Vec<PathBuf>,

    /// Write the merged report: json, markdown, junit or html (repeatable; pair each with -o).
    /// Without it, the merged JSON goes to stdout.
    #[arg(long = "report", value_name = "FORMAT")]
    pub reports: Vec<ReportFormat>,

    /// File for the report given at the same position (default, or `-`: stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub outputs: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The cassette before (e.g. the committed one): a file, or REVISION:PATH read from
    /// git (HEAD:cassettes/x.json).
    #[arg(value_name = "OLD")]
    pub old: PathBuf,

    /// The cassette after (e.g. the re-recorded one).
    #[arg(value_name = "NEW")]
    pub new: PathBuf,

    /// Spec file whose case says which changes are asserted.
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,

    /// The case of --spec the cassettes belong to (needed when the spec has several).
    #[arg(long, value_name = "NAME", requires = "spec")]
    pub case: Option<String>,

    /// text, markdown (a pull-request comment), json, or html (one self-contained page).
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,

    /// Exit 1 when the verdict is `regression`.
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    Text,
    Markdown,
    Json,
    Html,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The cassette to show: a file, or REVISION:PATH read from git.
    #[arg(value_name = "CASSETTE")]
    pub cassette: PathBuf,

    /// Print the trajectory as JSON instead (the same as `--format json`).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,

    /// text, json, or html (one self-contained page, on stdout: `> trajectory.html`).
    #[arg(long, value_enum, default_value_t = ShowFormat::Text)]
    pub format: ShowFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ShowFormat {
    Text,
    Json,
    Html,
}

#[derive(Debug, Args)]
pub struct DocsArgs {
    /// The page: getting-started, spec-reference, cassette-format, … (`agentproxy docs` lists them).
    #[arg(value_name = "TOPIC")]
    pub topic: Option<String>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The input the program is given: a line on stdin and AGENTPROXY_INPUT.
    #[arg(
        long,
        value_name = "TEXT",
        default_value = "Hello from agentproxy doctor"
    )]
    pub input: String,

    /// The longest the program may run; then it is stopped and the report written.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub timeout: Duration,

    /// Address to listen on (loopback only).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,

    /// Print the report as JSON on stdout instead of text.
    #[arg(long)]
    pub json: bool,

    /// The program to check, after `--`; none: report on agentproxy itself.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}
