//! Command-line types (clap) and the parsing of flag values; no I/O.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::cassette::format::{Hole, Upstreams};
use crate::dialect::{Fallback, Provider, PROVIDERS};
use crate::matching::index::Repeat;
use crate::proxy::upstream::InvalidUpstream;
use crate::runner::upstreams;

/// `0.1.0 (COMMIT, built DATE)`: `--version`'s line after the name, and doctor's.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("AGENTPROXY_COMMIT"),
    ", built ",
    env!("AGENTPROXY_BUILD_DATE"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "agentproxy",
    version = VERSION,
    about = "Record and replay the model traffic of LLM agents, so they can be tested deterministically",
    long_about = "Record and replay the model traffic of LLM agents, so they can be tested deterministically.\n\n\
agentproxy is a local HTTP proxy on the model API boundary. `record` runs a program against the real model and \
writes every exchange to a cassette (secrets redacted); `replay` serves the cassette offline, and a request that was \
not recorded fails loudly with a diff against the nearest recording.\n\n\
Exit codes: 0 success; 1 a replayed request missed the cassette; 2 usage or configuration error \
(bad flag, unreadable cassette); 3 execution error (upstream unreachable while recording, nothing recorded, \
cassette refused by the secret scan). With `-- COMMAND`, a command that exits non-zero passes its status through \
(128+N when killed by signal N).",
    after_help = "Getting started: `agentproxy docs getting-started` (record, write a spec, replay in CI). \
Every format and flag is documented: `agentproxy docs` lists the pages, built into this binary. Run \
`agentproxy COMMAND --help` for each command."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a program against the real model through the proxy and write a cassette.
    #[command(
        long_about = record_about(),
        after_help = "Examples:\n  agentproxy record --cassette cassettes/demo.json -- python app.py\n  agentproxy record --upstream https://openrouter.ai/api -- node agent.js"
    )]
    Record(RecordArgs),
    /// Serve a cassette to a program: offline, deterministic, free.
    #[command(
        long_about = "Serve a cassette to a program: offline, deterministic, free.\n\n\
No network is used. Each request is matched by a hash of its normalized body (keys sorted, `stream` and \
`stream_options` removed, the cassette's and the flags' match rules applied); identical requests are served \
their recordings in order. A request with no recording gets an HTTP 400 in the provider's error shape (type \
agentproxy_cassette_miss, not retried by SDKs) and a report on stderr naming the nearest recorded request and \
the first difference; the run then exits 1. Streamed recordings are served as streams, and converted when the \
program asks for the other kind. Placeholder API keys are injected when the program has none, and known SDK \
side traffic (tracing upload, price-map download) and telemetry are switched off; -v lists what was set.\n\n\
A program it starts also gets the proxy as its HTTPS and HTTP proxy: a provider's host is intercepted and \
served from the cassette, as is another host whose traffic was recorded (record --record-other-hosts); a \
connection to any other host is refused, named, and fails the run (exit 1) unless --allow-host allows it. On \
Linux the program runs contained (--contain), in a network namespace where the proxy is its only way out \
(`agentproxy docs egress`).",
        after_help = "Examples:\n  agentproxy replay --cassette cassettes/demo.json -- python app.py\n  agentproxy replay --match-ignore /user --repeat last -- pytest tests/"
    )]
    Replay(ReplayArgs),
    /// Run the cases of YAML specs: drive the program, mock tools, assert calls and replies.
    #[command(
        long_about = "Run the cases of one or more YAML specs (files, or directories of *.yaml / *.yml).\n\n\
Each case starts the program (`app.command`) with the proxy injected, or drives a running service \
(`app.url`), through its turns; its model traffic is served from, or recorded into, one cassette per case \
(`cassettes:`/<case>.json). Tool mocks (`tools:`) replace the tool results the model is told. Each turn's \
and each case's `expect:` is checked: tool calls (ordered subsequence by default, `order: exact | unordered`, \
`strict` + `allow`, `never`, `count`, argument matchers), what MCP servers `executed`, `requests`, \
`exit`, `reply` and `output`. What goes wrong is declared on top of the recording: `faults:` (rate limits, \
5xx, cut streams, spoiled tool calls), `fuzz:` (the case again with arguments made from a tool's schema) \
and `crash:` (the program killed at a point and started again; no tool may run twice).\n\n\
Modes: replay (cassettes only, never the network; the default when CI is set), record (always re-record), \
auto (record what has no cassette, replay the rest; the default otherwise), update (replay what matches, \
record what misses). A `command:` program gets the proxy as its HTTPS and HTTP proxy too (a provider's host \
is intercepted; other hosts are named, and refused in replay unless recorded with egress.record or \
--record-other-hosts) and on Linux runs contained (--contain), \
where the proxy is its only way out; each case records the level reached (`agentproxy docs egress`). \
Settings come from the flags, then the spec's `execution:`, then AGENTPROXY_MODE, \
AGENTPROXY_PARALLEL, AGENTPROXY_TIMEOUT, AGENTPROXY_VERBOSITY and AGENTPROXY_CASSETTE_DIR, then defaults.\n\n\
Exit codes: 0 all cases passed; 1 an assertion failed or a request missed its cassette; 2 a spec or flag \
is invalid (file:line:column and a hint); 3 a program crashed or timed out, or the upstream failed while \
recording. The grammar is in `agentproxy docs spec-reference`.",
        after_help = "Examples:\n  agentproxy test specs/\n  agentproxy test weather.yaml --case paris --report junit -o junit.xml\n  agentproxy test specs/ --mode record --parallel 4"
    )]
    Test(TestArgs),
    /// Trajectory diff of two cassettes: what the agent did, apart from what it was told.
    #[command(
        long_about = "Trajectory diff of two cassettes: what the agent did, apart from what it was told.\n\n\
Not a JSON diff. Turn by turn, what the agent *did*: tool calls added, removed or moved, arguments changed \
(by path, old → new), the reply, the number of model calls. Then what it was *told*: system prompt, user \
messages, tool definitions and tool results (as line diffs), model, request parameters. Volatile values \
(ids, timestamps, fingerprints, usage, latency) are never reported, and the cassettes' match rules \
(ignored fields, holes) are applied first.\n\n\
With --spec (and --case, unless the spec has a single case), each change is tagged asserted (a spec \
assertion depends on it) or incidental; without a spec every change in what the agent did counts as \
asserted. The last line is the verdict: identical, benign (only incidental changes) or regression.\n\n\
Exit codes: 0 done (whatever the verdict, unless --check); 1 the verdict is regression and --check was \
given; 2 a cassette or the spec cannot be read. Format: `agentproxy docs trajectory-diff`.",
        after_help = "Examples:\n  agentproxy diff cassettes/paris.json /tmp/paris.json\n  \
agentproxy diff old.json new.json --spec weather.yaml --case paris --check\n  \
agentproxy diff a.json b.json --spec s.yaml --format markdown > pr.md\n  \
agentproxy diff HEAD:cassettes/paris.json cassettes/paris.json"
    )]
    Diff(DiffArgs),
    /// Show a cassette's trajectory: turns, model calls, tool calls, results, replies.
    #[command(
        long_about = "Show a cassette's trajectory, readable: turn by turn, each model call with only what it \
added to the conversation (the system prompt, tools and parameters when they first appear or change; new user \
messages; the tool results it sends back, as the model was told them, mocks included), the tool calls the model \
asked for with their arguments, its reply, token usage and latency. Calls the upstream did not answer (a 429 \
that was retried) and plain HTTP requests are listed where they happened.\n\n\
Exit codes: 0 shown; 2 the cassette cannot be read.",
        after_help = "Examples:\n  agentproxy show cassettes/paris.json\n  agentproxy show cassettes/paris.json --json | jq '.totals'"
    )]
    Show(ShowArgs),
    /// Check that a program honours the injected URL; with no program, what a bug report needs.
    #[command(
        long_about = "Check that a program honours the injected URL, before recording it.\n\n\
The proxy starts in doctor mode: every model request, in each dialect agentproxy speaks (OpenAI chat and \
Responses, Anthropic Messages, Gemini, Ollama), gets a canned reply in that dialect (streamed when \
asked), any other path a 404, and nothing is forwarded or recorded. COMMAND runs once, with the same \
variables record and replay inject (one per provider, see record --help), each pointing at its own path \
prefix (OPENAI_BASE_URL at /v1, every other one under /_via/NAME: ANTHROPIC_BASE_URL at \
/_via/ANTHROPIC_BASE_URL, OLLAMA_HOST at /_via/OLLAMA_HOST, …) so the report can tell which one the \
program read. It gets --input as a line on stdin and as AGENTPROXY_INPUT; its output is captured.\n\n\
The report lists the requests by route, the client that sent them and which credential header they \
carried (never its value), which variables were honoured, and the program's exit status. When nothing \
arrived it says which SDK reads which variable and what to map in a spec's app.env.\n\n\
With no COMMAND it checks agentproxy itself and prints what a bug report needs: the version with its \
commit and build date, the platform, the binary's path, whether this shell is inside an agentproxy \
session (AGENTPROXY_URL), and the upstream each provider would record from and what set it.\n\n\
Exit codes: 0 at least one model request arrived (with no COMMAND: always); 1 none did; 2 usage error; \
3 the program could not be started.",
        after_help = "Examples:\n  agentproxy doctor\n  agentproxy doctor -- python app.py\n  agentproxy doctor --input 'Weather in Paris?' --timeout 2m -- node agent.js\n  agentproxy doctor --json -- python app.py"
    )]
    Doctor(DoctorArgs),
    /// Print a page of the documentation (built in); with no topic, the list of pages.
    #[command(
        long_about = "Print a page of the documentation, in Markdown, on stdout: the same pages as docs/ \
of the source repository, built into this binary so every install has them. With no TOPIC, the list of \
pages with their titles.\n\n\
Exit codes: 0 printed; 2 no such page.",
        after_help = "Examples:\n  agentproxy docs\n  agentproxy docs spec-reference | less"
    )]
    Docs(DocsArgs),
    /// Stand in for a stdio MCP server: record its traffic, or answer in its place in replay.
    #[command(
        long_about = "Stand in for a stdio MCP server. In the agent's MCP configuration, replace the server \
command `python server.py` with `agentproxy mcp --name weather -- python server.py`.\n\n\
Under an agentproxy session (record, replay, test, serve) it finds the session through AGENTPROXY_URL, in \
its own environment or, since MCP hosts often start servers with a bare environment, in that of the \
program agentproxy started, among its ancestor processes. Recording, it starts COMMAND, relays every \
JSON-RPC line both ways unchanged (COMMAND's stderr passes through) and stores each request with its \
response in the session's cassette (route mcp, with the server's name). Replaying (also under `test --mode update`, which refreshes model calls only), it never starts \
COMMAND: requests are answered from the cassette (FIFO per server, method and params without _meta; ids \
are the client's own), notifications are not answered, and a request with no recording gets a JSON-RPC \
error whose message starts with agentproxy_cassette_miss (the session reports the miss and exits 1). \
In every mode, a `tools/call` of a tool the spec mocks (`tools:`) is answered with the mock and \
never reaches COMMAND.\n\n\
With no session among its ancestors it runs COMMAND unchanged, so a configuration can keep it. When it \
cannot rule out a session (an ancestor of the same user whose environment it cannot read, or no /proc) \
it refuses to start COMMAND, in case this is a replay: exit 2.\n\n\
Guide: `agentproxy docs mcp`. Format of the recorded interactions: `agentproxy docs cassette-format` (MCP).",
        after_help = "Example (an MCP host's server entry):\n  \
\"command\": \"agentproxy\",\n  \
\"args\": [\"mcp\", \"--name\", \"weather\", \"--\", \"python\", \"server.py\"]"
    )]
    Mcp(McpArgs),
    /// One proxy for a whole test session, each test switching its cassette (pytest plugin).
    #[command(
        long_about = "One proxy for a whole test session whose cassette, mode and tool mocks each test switches \
through a control endpoint under /_agentproxy/, so that SDK clients made once (at import time) keep going \
through it. The pytest plugin of the Python package starts it; other harnesses can too (`agentproxy docs pytest` has \
the protocol).\n\n\
It prints one JSON line on stdout, {\"url\": ..., \"env\": {NAME: value}}, with the variables a program needs \
(the same record and replay inject), then serves until its stdin is closed, or SIGTERM or SIGINT. Between \
tests every request misses. A test still active at the end keeps what it recorded.\n\n\
Exit codes: 0 stopped; 2 a bad flag or listen address.",
        after_help = "Example:\n  agentproxy serve --replay-env < /dev/null"
    )]
    Serve(ServeArgs),
    /// Work with JSON reports of `agentproxy test`: merge the reports of a sharded run.
    #[command(subcommand)]
    Report(ReportCommand),
    /// Export cassettes' trajectories as OpenTelemetry traces (OTLP/HTTP, JSON).
    #[command(
        long_about = "Export the trajectory of each cassette as an OpenTelemetry trace, following the GenAI \
semantic conventions: an invoke_agent span over the run, a chat span per model request (model, provider, \
token usage, and the messages it added and the answer, unless --no-content), an execute_tool span per tool \
call with its arguments and result, a span per MCP and plain HTTP request. The document is an OTLP \
ExportTraceServiceRequest in JSON: written to FILE (`-`: stdout), or posted to an OTLP/HTTP endpoint \
(http:// or https://; `/v1/traces` is added to a URL with no path), such as an OpenTelemetry Collector, \
Jaeger, Phoenix or Langfuse. A cassette keeps latencies, not clock times: spans start at its recording time \
and follow each other. The mapping is in `agentproxy docs reports`.\n\n\
Exit codes: 0 exported; 2 a cassette cannot be read; 3 the file cannot be written or the endpoint did not \
accept the traces.",
        after_help = "Examples:\n  agentproxy export --otlp traces.json cassettes/*.json\n  agentproxy export --otlp http://localhost:4318 cassettes/paris.json"
    )]
    Export(ExportArgs),
}

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

/// The providers' base URLs a recording forwards to.
#[derive(Debug, Args)]
pub struct UpstreamArgs {
    /// Upstream base URL a provider records from: `URL` for the OpenAI-compatible API,
    /// `PROVIDER=URL` for any (repeat for several).
    #[arg(long, value_name = "[PROVIDER=]URL", long_help = upstream_help())]
    pub upstream: Vec<String>,

    /// The same as `--upstream anthropic=URL`.
    #[arg(long, value_name = "URL")]
    pub anthropic_upstream: Option<String>,

    /// The same as `--upstream gemini=URL`.
    #[arg(long, value_name = "URL")]
    pub gemini_upstream: Option<String>,
}

impl UpstreamArgs {
    /// Every provider's upstream, from these flags and agentproxy's environment.
    pub fn upstreams(&self) -> Result<Upstreams, InvalidUpstream> {
        let mut given = Vec::new();
        for value in &self.upstream {
            given.push(upstreams::parse(value)?);
        }
        given.extend(
            self.anthropic_upstream
                .clone()
                .map(|u| (Provider::Anthropic, u)),
        );
        given.extend(self.gemini_upstream.clone().map(|u| (Provider::Gemini, u)));
        Ok(upstreams::resolve(&given, &|name| std::env::var(name).ok()))
    }
}

/// `record`'s long help; the variables it sets come from the provider table.
fn record_about() -> String {
    let vars: Vec<&str> = (PROVIDERS.iter().flat_map(|r| r.vars.iter()))
        .map(|v| v.name)
        .chain(["AGENTPROXY_URL"])
        .collect();
    format!(
        "Run a program against the real model through the proxy and write a cassette.\n\n\
With `-- COMMAND`, the proxy listens on 127.0.0.1 (a free port), starts COMMAND with {} pointing at it \
(every provider's base-URL variable; -v lists them with what each is for), waits for it, writes the cassette \
atomically and exits with the command's status. Without a command it runs as a daemon: it prints the URL and \
the `export` lines, and on SIGINT/SIGTERM drains in-flight requests and writes the cassette.\n\n\
A program it starts also gets the proxy as its HTTPS and HTTP proxy: HTTPS to a provider's host (a hard-coded \
https://api.openai.com/v1) is intercepted with a certificate authority made for the session and recorded as \
base-URL traffic is; other hosts are passed through and named, or recorded as plain HTTP with \
--record-other-hosts. On Linux the program runs contained (--contain), \
in a network namespace where the proxy is its only way out (`agentproxy docs egress`).\n\n\
The program's own credentials are forwarded upstream and never written; values of environment variables whose \
names contain KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL are written as ${{NAME}}; a cassette that still holds \
a key-shaped string is refused. A run that sent no request through the proxy fails and writes nothing.\n\n\
A recording that replaces a cassette says on stderr what changed in the trajectory against it, as \
`agentproxy diff OLD NEW` of the two would (what the agent did, what it was told, a verdict; `--json` adds \
the verdict as `trajectory`).",
        vars.join(", ")
    )
}

/// `--upstream`'s long help: a line per provider, from the provider table.
fn upstream_help() -> String {
    let mut out = String::from(
        "Upstream base URL a provider records from: `URL` for the OpenAI-compatible API, \
         `PROVIDER=URL` for any (repeat for several). Requests keep their path, so a base with \
         a prefix keeps it. Without a flag, each provider's upstream is its variable's value, \
         else:\n",
    );
    for row in &PROVIDERS {
        let fallback = match &row.fallback {
            Fallback::Url(url) => url.to_string(),
            Fallback::Env {
                var, or: Some(or), ..
            } => format!("${var}, else {or}"),
            Fallback::Env { var, or: None, .. } => {
                format!(
                    "${var} (none without it: recording {} needs the flag)",
                    row.title
                )
            }
        };
        let alias = row
            .flag
            .map(|f| format!(" (or {f} URL)"))
            .unwrap_or_default();
        out.push_str(&format!(
            "\n  {:9} {}: {}\n            ${}; default {fallback}{alias}",
            row.name, row.title, row.paths, row.env
        ));
    }
    out
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

fn parse_mcp_name(s: &str) -> Result<String, String> {
    crate::dialect::mcp::is_server_name(s)
        .then(|| s.to_owned())
        .ok_or_else(|| format!("`{s}` is not a server name: use letters, digits, - and _"))
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where the proxy listens (loopback only).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,

    /// Also give the variables replay gives: placeholder API keys and the switches that
    /// stop SDK side traffic (each unless already set).
    #[arg(long)]
    pub replay_env: bool,

    /// Also give placeholder API keys (each unless already set), for a session whose
    /// tests mostly replay but may record (the harnesses' auto mode): an SDK that insists
    /// on a key starts, and a request that would record with a placeholder is not sent
    /// upstream but fails, naming the variable to set.
    #[arg(long)]
    pub placeholder_keys: bool,

    /// Under CI, let a control request pick a mode that records (record, auto, update).
    /// Without it, under CI only replay is served: a harness passes this when its own
    /// command line chose a recording mode (the pytest plugin: --agentproxy-mode).
    #[arg(long)]
    pub allow_ci_recording: bool,

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

pub use crate::report::Format as ReportFormat;
pub use crate::runner::contain::Contain;

/// Options of every proxy session.
#[derive(Debug, Args)]
pub struct SessionArgs {
    /// Cassette file to write (record) or serve (replay).
    #[arg(long, value_name = "PATH", default_value = "cassettes/cassette.json")]
    pub cassette: PathBuf,

    /// Address to listen on; loopback only unless --allow-remote.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,

    /// Allow --listen on a non-loopback address (anyone who reaches it can use your key).
    #[arg(long)]
    pub allow_remote: bool,

    /// JSON pointer removed from request bodies before matching (`*` matches any key or
    /// index), e.g. /user or /messages/*/name. Repeatable.
    #[arg(long = "match-ignore", value_name = "POINTER")]
    pub match_ignore: Vec<String>,

    /// Named hole: every match of REGEX (only under POINTER, when given) becomes ${NAME}
    /// before matching. Repeatable. Example: 'today=\d{4}-\d{2}-\d{2}'.
    #[arg(long = "match-hole", value_name = "NAME[@POINTER]=REGEX", value_parser = parse_hole)]
    pub match_hole: Vec<Hole>,

    /// A host the program may reach through the proxy in a replay too (a tool's web API
    /// that needs no recording): `api.example.com`, `*.example.com`, `host:port`
    /// (repeatable).
    #[arg(long = "allow-host", value_name = "HOST", value_parser = crate::spec::HostPattern::parse)]
    pub allow_hosts: Vec<crate::spec::HostPattern>,

    /// Contain the program on Linux: a network namespace of its own with only loopback,
    /// where the proxy is the only way out (auto: where the system allows it, else say why
    /// and intercept only; on: or fail; off: intercept only). See `agentproxy docs egress`.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    pub contain: Contain,

    /// Do not tolerate the volatile fields of known clients. Recording Claude Code (or the
    /// Claude Agent SDK) otherwise writes its session id, billing header and date line into
    /// the cassette's match block, so a replay on another run or day still matches.
    #[arg(long)]
    pub no_client_tolerances: bool,

    /// Largest request body accepted (bytes, or with a K/M/G suffix); larger gets HTTP 413.
    #[arg(long, value_name = "SIZE", default_value = "32M", value_parser = parse_size)]
    pub max_body_size: usize,

    /// Only errors.
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,

    /// More detail: injected variables, each request (repeat for debug logs).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Print a machine-readable summary on stdout when done.
    #[arg(long)]
    pub json: bool,

    /// A streamable HTTP MCP server (repeatable): served at $AGENTPROXY_URL/mcp/NAME,
    /// whose URL the program gets as AGENTPROXY_MCP_<NAME>_URL. Record forwards to URL;
    /// replay answers from the cassette and never calls it.
    #[arg(long = "mcp", value_name = "NAME=URL", value_parser = parse_mcp_server)]
    pub mcp: Vec<(String, String)>,

    /// Inject a fault into model requests (repeatable), counted from 1 over the session:
    /// 'request=1,kind=rate_limit,times=2'. Kinds: rate_limit (retry_after=0s),
    /// server_error (status=500), overloaded, timeout (for=10s), disconnect,
    /// truncate_stream (after_events=1), stream_error: the request is never forwarded or
    /// recorded and uses up no recording. Kinds that spoil the answer's tool call
    /// (tool=NAME picks it): malformed_tool_args, schema_violation (violation is one of
    /// missing_required, wrong_type, extra_property, enum_outsider), unknown_tool, length:
    /// the request is served as any other, then its tool call spoiled. See `agentproxy docs faults`.
    #[arg(long = "fault", value_name = "SPEC", value_parser = crate::fault::parse_flag)]
    pub fault: Vec<crate::fault::Fault>,

    /// The program to run, after `--`. Without it agentproxy runs as a daemon.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `NAME=URL` of a streamable HTTP MCP server.
pub fn parse_mcp_server(s: &str) -> Result<(String, String), String> {
    let (name, url) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=URL"))?;
    if !crate::dialect::mcp::is_server_name(name) {
        return Err(format!(
            "MCP server name `{name}` must be letters, digits, `-` and `_`"
        ));
    }
    crate::dialect::mcp::check_server_url(url)?;
    Ok((name.to_owned(), url.to_owned()))
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    #[command(flatten)]
    pub upstreams: UpstreamArgs,

    /// How long to wait for the upstream (e.g. 30s, 10m): for its response head, then HTTP
    /// 504; and for each chunk of its body after that, then the stream is cut, recorded as
    /// aborted, and the run exits 3.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub upstream_timeout: Duration,

    /// Record the program's traffic to other hosts too (a tool's web API), as plain HTTP
    /// under its whole URL, so a replay serves it instead of refusing it. Its HTTPS is
    /// intercepted with the session's CA, as a provider's is.
    #[arg(long)]
    pub record_other_hosts: bool,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub session: SessionArgs,

    /// When a request's recordings are all used: `none` misses, `last` serves the last again.
    #[arg(long, value_enum, default_value_t = Repeat::None)]
    pub repeat: Repeat,

    /// Pace replies by their recorded latency instead of answering at once.
    #[arg(long)]
    pub realtime: bool,

    /// Warn when the cassette was recorded longer ago than this (e.g. 30d): the model it
    /// recorded may have changed since.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_age: Option<Duration>,
}

/// `--otlp`: a URL, `-` or a file. An endpoint written without its scheme
/// (`localhost:4318`) is refused: it would be written as a file of that name, and the
/// traces never sent.
pub fn parse_otlp(s: &str) -> Result<String, String> {
    let host_port = regex::Regex::new(r"^[\w.-]+:\d+(/|$)").expect("a valid regex");
    if host_port.is_match(s) {
        return Err(format!(
            "`{s}` looks like an endpoint without its scheme: write `http://{s}` (or `./{s}` for a file of that name)"
        ));
    }
    Ok(s.to_owned())
}

/// `NAME[@POINTER]=REGEX`; the regex is everything after the first `=`.
pub fn parse_hole(s: &str) -> Result<Hole, String> {
    let (head, regex) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=REGEX or NAME@POINTER=REGEX"))?;
    let (name, within) = match head.split_once('@') {
        Some((n, p)) => (n, Some(p.to_owned())),
        None => (head, None),
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "hole name `{name}` must be letters, digits, `_` or `-`"
        ));
    }
    regex::Regex::new(regex).map_err(|e| format!("invalid regex for hole `{name}`: {e}"))?;
    Ok(Hole {
        name: name.to_owned(),
        regex: regex.to_owned(),
        within,
    })
}

/// `1048576`, `512K`, `32M`, `1G` (binary multiples; a trailing `B`/`iB` is accepted).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (digits, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1usize << 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 1 << 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    digits
        .trim()
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{s}` is not a size like 1048576, 512K or 32M"))
}

/// A duration of more than zero: every duration flag is a limit, and a limit of zero
/// would fail everything it bounds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration like 30s or 10m: {e}"))?;
    if d.is_zero() {
        return Err(format!("`{s}` is zero; give a limit like 30s or 10m"));
    }
    Ok(d)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holes() {
        let h = parse_hole(r"today=\d{4}-\d{2}").unwrap();
        assert_eq!(
            (h.name.as_str(), h.regex.as_str(), h.within),
            ("today", r"\d{4}-\d{2}", None)
        );
        let h = parse_hole("id@/messages/0=a=b").unwrap();
        assert_eq!((h.name.as_str(), h.regex.as_str()), ("id", "a=b"));
        assert_eq!(h.within.as_deref(), Some("/messages/0"));
        assert!(parse_hole("noequals").is_err());
        assert!(parse_hole("bad name=x").is_err());
        assert!(parse_hole("x=(").unwrap_err().contains("invalid regex"));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("512K"), Ok(512 * 1024));
        assert_eq!(parse_size("32M"), Ok(32 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
    }

    /// `record --help` names every variable it sets and every provider, from the table.
    #[test]
    fn record_help_names_every_provider_and_variable() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        let record = cli.find_subcommand_mut("record").unwrap();
        let help = record.render_long_help().to_string().replace('\n', " ");
        for row in &PROVIDERS {
            assert!(help.contains(&format!(" {} ", row.name)), "{}", row.name);
            for v in row.vars {
                assert!(help.contains(v.name), "{}", v.name);
            }
        }
    }

    /// `--version` says the commit and the day it was built from (a bug report's first line).
    #[test]
    fn the_version_names_commit_and_build_date() {
        let shape = regex::Regex::new(
            r"^\d+\.\d+\.\d+ \(([0-9a-f]{12}|unknown), built \d{4}-\d{2}-\d{2}\)$",
        )
        .unwrap();
        assert!(shape.is_match(VERSION), "{VERSION}");
        assert!(VERSION.starts_with(env!("CARGO_PKG_VERSION")));
    }

    /// An example that wraps mid-command cannot be pasted: each fits an 80-column terminal.
    #[test]
    fn help_examples_fit_80_columns() {
        use clap::CommandFactory;
        for sub in Cli::command().get_subcommands() {
            let help = sub
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            for line in help.lines().filter(|l| l.starts_with("  ")) {
                assert!(line.chars().count() <= 80, "{}: {line}", sub.get_name());
            }
        }
    }

    #[test]
    fn an_otlp_endpoint_without_its_scheme_is_refused() {
        for ok in [
            "http://localhost:4318",
            "https://otel.test/v1/traces",
            "-",
            "traces.json",
            "out/run:1.json",
        ] {
            assert_eq!(parse_otlp(ok).as_deref(), Ok(ok));
        }
        assert_eq!(
            parse_otlp("localhost:4318").unwrap_err(),
            "`localhost:4318` looks like an endpoint without its scheme: write `http://localhost:4318` (or `./localhost:4318` for a file of that name)"
        );
        assert!(parse_otlp("127.0.0.1:4318/v1/traces").is_err());
        assert!(parse_otlp("otel.test:443").is_err());
    }

    #[test]
    fn clap_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
