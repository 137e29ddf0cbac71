//! The arguments of the test runner: `test` and `serve`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::parse::{parse_a2a_agent, parse_duration, parse_mcp_server, parse_otlp, parse_size};
use super::session::UpstreamArgs;
use crate::report::Format as ReportFormat;
use crate::runner::contain::Contain;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where the proxy listens (loopback only).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,

    /// The session's mode, as the harness's user chose it: replay | record | auto |
    /// update (default: replay when CI is set, else auto). Serve gives the programs what
    /// it needs (in replay, placeholder API keys and the switches that stop SDK side
    /// traffic; in auto, the keys only; each unless already set), names it in its
    /// listening line, and starts each test in it unless the test asks for another. Under
    /// CI, a session in replay replays every test.
    #[arg(long, value_enum)]
    pub mode: Option<crate::spec::Mode>,

    /// Where `--mode` came from when it is a configuration's (pytest's ini: `agentproxy_mode
    /// in the ini file`), not this run's own command line or environment: under CI a
    /// configuration may not choose a mode that records, and serve refuses to start,
    /// naming it.
    #[arg(long, value_name = "WHERE", requires = "mode")]
    pub mode_from: Option<String>,

    /// Print the control protocol's JSON Schema (every message, generated from serve's
    /// own types; docs/serve-protocol.schema.json) and exit.
    #[arg(long)]
    pub schema: bool,

    /// The directory every cassette a control request names must be in (after its links
    /// are followed); relative cassette paths are taken from here. Default: the current
    /// directory.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// Write each test, when it ends, as a case of the JSON report into DIR (a file per
    /// test), for `agentproxy report cases DIR` to render the whole run; the harnesses'
    /// HTML report (pytest --agentproxy-html, AGENTPROXY_HTML) sets it.
    #[arg(long, value_name = "DIR", env = "AGENTPROXY_CASES_DIR")]
    pub cases_dir: Option<PathBuf>,

    #[command(flatten)]
    pub upstreams: UpstreamArgs,

    /// How long to wait for the upstream when recording (e.g. 30s, 10m).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub upstream_timeout: Duration,

    /// Larger request bodies get HTTP 413.
    #[arg(long, value_name = "SIZE", default_value = "32M", value_parser = parse_size)]
    pub max_body_size: usize,
}

#[derive(Debug, Args)]
pub struct TestArgs {
    /// Spec files, or directories of *.yaml / *.yml specs.
    #[arg(value_name = "SPEC|DIR", required = true)]
    pub specs: Vec<PathBuf>,

    /// replay | record | auto | update (default: auto, or replay when CI is set).
    #[arg(long, value_enum)]
    pub mode: Option<crate::spec::Mode>,

    /// Run only the case with this name (repeatable).
    #[arg(long = "case", value_name = "NAME")]
    pub cases: Vec<String>,

    /// Run only the cases whose name matches this glob (`*`, `?`, `[...]`).
    #[arg(long, value_name = "GLOB")]
    pub filter: Option<String>,

    /// Run one shard of the selected cases, for a run split across CI machines: K/N
    /// (1-based) deals cases by a hash of spec path and case name, stable when cases are
    /// added; count:K/N by position, round robin. The other cases are reported skipped.
    /// Without it, CI_NODE_INDEX (1-based, as GitLab sets it) and CI_NODE_TOTAL are read.
    #[arg(long, value_name = "K/N", value_parser = crate::spec::Shard::parse)]
    pub shard: Option<crate::spec::Shard>,

    /// A host the program may reach through the proxy in a replay too (a tool's web API
    /// that needs no recording): `api.example.com`, `*.example.com`, `host:port`
    /// (repeatable).
    #[arg(long = "allow-host", value_name = "HOST", value_parser = crate::spec::HostPattern::parse)]
    pub allow_hosts: Vec<crate::spec::HostPattern>,

    /// While recording, record the program's traffic to other hosts too (a tool's web
    /// API), as plain HTTP under its whole URL, so a replay serves it; as a spec's
    /// `egress.record: true` does.
    #[arg(long)]
    pub record_other_hosts: bool,

    /// Contain the program on Linux: a network namespace of its own with only loopback,
    /// where the proxy is the only way out (auto: where the system allows it, else say why
    /// and intercept only; on: or fail; off: intercept only). See `agentproxy docs egress`.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    pub contain: Contain,

    /// Warn of each replayed cassette recorded longer ago than this (e.g. 30d); overrides
    /// a spec's execution.max_age.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_age: Option<Duration>,

    /// Replay paced as recorded: each stream event and socket frame at its recorded time,
    /// a whole reply after its recorded latency; overrides a spec's execution.replay_timing.
    #[arg(long)]
    pub realtime: bool,

    /// How many cases run at once (default: the number of cores; turns within a case stay
    /// sequential, and each case's output is printed in case order).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub parallel: Option<u16>,

    /// The longest one case may take, all turns included (e.g. 60s, 5m).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// Directory of the cassettes, instead of each spec's `cassettes:`.
    #[arg(long, value_name = "DIR")]
    pub cassettes: Option<PathBuf>,

    /// Write a report: json, markdown, junit or html (repeatable; pair each with -o).
    #[arg(long = "report", value_name = "FORMAT")]
    pub reports: Vec<ReportFormat>,

    /// File for the report given at the same position (default, or `-`: stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub outputs: Vec<PathBuf>,

    /// Write the HTML report to FILE: one self-contained page (the same as `--report
    /// html -o FILE`).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Export each case's trajectory as an OpenTelemetry trace to an OTLP/HTTP endpoint
    /// (or a file); see `agentproxy export --help`.
    #[arg(long, value_name = "URL|FILE", value_parser = parse_otlp)]
    pub otlp: Option<String>,

    /// With --otlp: leave out message text, tool arguments and results.
    #[arg(long, requires = "otlp")]
    pub otlp_no_content: bool,

    #[command(flatten)]
    pub upstreams: UpstreamArgs,

    /// How long to wait for the upstream when recording: for its response head, and for
    /// each chunk of its body after that (a stalled stream is cut and fails the case).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub upstream_timeout: Duration,

    /// Where the proxy listens. `url:` apps need a fixed port (their service was started
    /// with OPENAI_BASE_URL pointing at it); cases then run one at a time.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,

    /// Largest request body accepted (bytes, or with a K/M/G suffix).
    #[arg(long, value_name = "SIZE", default_value = "32M", value_parser = parse_size)]
    pub max_body_size: usize,

    /// One line per case.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Each turn's input, tool calls and reply (-vv: also tool results and output).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Run each case with a cassette twice against its recording (served by position, so a
    /// drifting program still runs) and report every request value that differed between
    /// the two runs, with the `match.holes`, `match.ignore` or `tools:` entry that would
    /// stabilise it. Expectations are not evaluated; exit 1 if anything differed.
    #[arg(long, conflicts_with = "mode")]
    pub check_determinism: bool,

    /// A streamable HTTP MCP server (repeatable), as a spec's `mcp:` gives them (this
    /// wins for the same name): served at $AGENTPROXY_URL/mcp/NAME, the program gets the
    /// URL as AGENTPROXY_MCP_<NAME>_URL.
    #[arg(long = "mcp", value_name = "NAME=URL", value_parser = parse_mcp_server)]
    pub mcp: Vec<(String, String)>,

    /// A remote agent over A2A (repeatable), as a spec's `a2a:` gives them (this wins for
    /// the same name): served at $AGENTPROXY_URL/a2a/NAME/, the program gets the URL as
    /// AGENTPROXY_A2A_<NAME>_URL. See `agentproxy docs a2a`.
    #[arg(long = "a2a", value_name = "NAME=URL", value_parser = parse_a2a_agent)]
    pub a2a: Vec<(String, String)>,

    /// Inject a fault into every case's model requests (repeatable), counted from 1 over
    /// each case, after the case's own `faults:`: 'request=1,kind=rate_limit,times=2'.
    /// The same grammar as a spec's `faults:` and record's --fault; see `agentproxy docs faults`.
    #[arg(
        long = "fault",
        value_name = "SPEC",
        value_parser = crate::fault::parse_flag,
        conflicts_with = "check_determinism"
    )]
    pub fault: Vec<crate::fault::Fault>,
}
