//! The arguments of a proxy session: `record`, `replay` and what they share.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::parse::{parse_a2a_agent, parse_duration, parse_hole, parse_mcp_server, parse_size};
use crate::cassette::format::{Hole, Upstreams};
use crate::dialect::{Fallback, Provider, PROVIDERS};
use crate::matching::index::Repeat;
use crate::proxy::upstream::InvalidUpstream;
use crate::runner::contain::Contain;
use crate::runner::upstreams;

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
pub(super) fn record_about() -> String {
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
            Fallback::Request { says, .. } => format!("each request's own: {says}"),
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
    /// Claude Agent SDK) or Codex CLI otherwise writes their session ids, dates and the like
    /// into the cassette's match block, so a replay on another run or day still matches.
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

    /// A remote agent over A2A (repeatable), URL its base (where its card is): served at
    /// $AGENTPROXY_URL/a2a/NAME/, whose URL the program gets as AGENTPROXY_A2A_<NAME>_URL;
    /// its card's interface URLs are rewritten to it. Record forwards to the agent; replay
    /// answers in its place and never calls it. See `agentproxy docs a2a`.
    #[arg(long = "a2a", value_name = "NAME=URL", value_parser = parse_a2a_agent)]
    pub a2a: Vec<(String, String)>,

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

    /// Pace replies as recorded instead of answering at once: each stream event and socket
    /// frame at its recorded time, a whole reply after its recorded latency.
    #[arg(long)]
    pub realtime: bool,

    /// Warn when the cassette was recorded longer ago than this (e.g. 30d): the model it
    /// recorded may have changed since.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_age: Option<Duration>,
}
