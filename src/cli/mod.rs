//! Command-line types (clap) and the parsing of flag values; no I/O. The commands and
//! their help are here; each group's arguments in its own file: the session's (`record`,
//! `replay`) in `session`, the test runner's (`test`, `serve`) in `test`, the tools' in
//! `tools`, the flag values' parsers in `parse`.

use clap::{Parser, Subcommand};

mod parse;
mod session;
mod test;
mod tools;

pub use parse::{parse_duration, parse_hole, parse_mcp_server, parse_otlp, parse_size};
pub use session::{RecordArgs, ReplayArgs, SessionArgs, UpstreamArgs};
pub use test::{ServeArgs, TestArgs};
pub use tools::{
    CasesArgs, DiffArgs, DiffFormat, DocsArgs, DoctorArgs, ExportArgs, McpArgs, MergeArgs,
    ReportCommand, ShowArgs, ShowFormat,
};

pub use crate::report::Format as ReportFormat;
pub use crate::runner::contain::Contain;

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
        long_about = session::record_about(),
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
It prints one JSON line on stdout, {\"url\": ..., \"env\": {NAME: value}, \"protocol\": N, \"mode\": MODE}, with the variables a program needs \
(the same record and replay inject), then serves until its stdin is closed, or SIGTERM or SIGINT. Between \
tests every request misses. A test still active at the end keeps what it recorded.\n\n\
Exit codes: 0 stopped; 2 a bad flag or listen address.",
        after_help = "Example:\n  agentproxy serve --mode replay < /dev/null"
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::PROVIDERS;

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
