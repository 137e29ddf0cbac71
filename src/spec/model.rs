//! The spec model: what a loaded, validated spec file says, with no YAML left in it.
//!
//! Every value here has been checked at load time (types, regexes, durations, matcher
//! syntax), so the runner never meets a spec error halfway through a run. Matcher
//! expressions and regexes are kept compiled ([`Expr`], [`Pattern`]): nothing compiles
//! them again.
//!
//! The doc comments on these types are the reference for `docs/spec-reference.md`: each
//! field says its YAML key, its type, its default and its meaning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use crate::assert::Matcher;
use crate::cassette::format::MatchRules;
use crate::fault::Fault;
use crate::matching::index::Repeat;

pub use super::yaml::Pos;

/// The spec format version this build reads (`version:` at the top of a spec, optional).
pub const SPEC_VERSION: u32 = 1;

/// One spec file.
///
/// Top-level keys: `version`, `name`, `app` (required), `cassettes`, `match`, `tools`,
/// `mcp`, `a2a`, `agents`, `execution`, `egress`, `cases` (required, at least one).
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The file the spec was read from, as given (used in messages and reports).
    pub file: PathBuf,
    /// `name:` (string). Default: the file name without its extension.
    pub name: String,
    /// `app:` (required): the program under test and how to drive it.
    pub app: App,
    /// `cassettes:` (string): the directory that holds one cassette per case,
    /// `<dir>/<case slug>.json`. A relative path is relative to the spec file's directory
    /// (already joined here). `None` when the key is absent; see
    /// `resolve` for the default and the CLI/env overrides.
    pub cassettes: Option<PathBuf>,
    /// `match.ignore` and `match.holes`: the tolerance used to compute request keys; it is
    /// written into every cassette recorded from this spec.
    pub match_rules: MatchRules,
    /// `match.repeat` (`none` | `last`, default `none`): what a replayed request gets once
    /// every recording of its key has been served: a miss, or the last recording again.
    pub repeat: Repeat,
    /// `tools:`: mocks by tool name (a mapping). What the *model* is told a function tool
    /// returned, and what a `tools/call` of an MCP server's tool is answered with (the
    /// server is not called).
    pub tools: BTreeMap<String, ToolMock>,
    /// `mcp:` streamable HTTP MCP servers by name (NAME → URL).
    pub mcp: BTreeMap<String, String>,
    /// `a2a:` remote agents over A2A by name (NAME → base URL).
    pub a2a: BTreeMap<String, String>,
    /// `agents:`: mocks of remote agents by name. A delegation is matched as the call of a
    /// tool named after the agent with `{message: text}` as its arguments; a result is the
    /// agent's reply text, or `{reply, state, artifacts}`, or `{error}`.
    pub agents: BTreeMap<String, ToolMock>,
    /// `execution:`: run settings that the command line and the environment can override.
    pub execution: Execution,
    /// `egress:`: the traffic around the model APIs a case's program may have.
    pub egress: Egress,
    /// `cases:` (required, a non-empty list), in file order.
    pub cases: Vec<Case>,
}

impl Spec {
    /// The directory of the spec file, against which its relative paths were resolved.
    pub fn dir(&self) -> &Path {
        spec_dir(&self.file)
    }
}

/// The directory relative paths in a spec are resolved against: the file's parent, or `.`.
pub(crate) fn spec_dir(file: &Path) -> &Path {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `app:` — the program under test. Exactly one of `command` and `url`.
///
/// Keys: `command`, `url`, `env`, `timeout`, `reply_until`, `cwd`.
#[derive(Debug, Clone, PartialEq)]
pub struct App {
    /// `command:` or `url:`.
    pub target: Target,
    /// `env:` (mapping of name to scalar): variables set for the program, applied after the
    /// ones agentproxy injects. Numbers and booleans are taken as their text (`8080`,
    /// `true`). Values may contain `${agentproxy.url}` (the proxy's base URL with `/v1`)
    /// and `${agentproxy.base}` (without it); see [`expand_env_value`](super::expand_env_value).
    /// Any other `${agentproxy.…}` is a load error; other `${…}` text is left as it is.
    /// For `url:` apps the program is already running, so `env` is refused there.
    pub env: BTreeMap<String, String>,
    /// `timeout:` (duration such as `30s`, `2m`, `1m30s`): the longest the runner waits for
    /// the program's answer to one turn. `None`: only the case timeout
    /// ([`Resolved::timeout`](super::Resolved)) applies.
    pub timeout: Option<Duration>,
    /// `reply_until:` (regex, `command:` apps only): a turn ends at the first stdout line
    /// that matches it. `None`: a turn ends at the program's next stdout line.
    pub reply_until: Option<Pattern>,
    /// `cwd:` (string): the directory the program runs in. Relative to the spec file's
    /// directory; default: the spec file's directory (already resolved here). `command:`
    /// apps only.
    pub cwd: PathBuf,
}

/// How the program under test is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `command:` — started once per case with the proxy injected.
    ///
    /// A string is split like a POSIX shell would (quotes and backslashes; no variables,
    /// globs, pipes or redirections: write `[sh, -c, "..."]` for those). A list is taken
    /// as the argument vector, numbers and booleans as their text. Never empty. An
    /// argument containing `{input}` has it replaced by the turn's input.
    Command(Vec<String>),
    /// `url:` (an `http://` or `https://` URL) — a running service, sent one
    /// `POST {"input": ..., "session": ...}` per turn; the response body is the turn's output.
    Url(String),
}

/// `tools.<name>:` — the mock of one tool. Three forms:
///
/// ```yaml
/// tools:
///   get_weather:                 # rules: the first whose `when` matches wins
///     - when: {city: Paris}
///       result: {temp_c: 18}
///     - result: {temp_c: 20}     # no `when`: the fallback, only allowed last
///   get_time:
///     results: ["09:00", "09:05"]   # one per call, in order
///   get_user:
///     result: {id: 7}             # the same for every call
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolMock {
    /// Where the tool's key is, for warnings such as "mocked tool never called".
    pub at: Pos,
    pub kind: MockKind,
}

/// The three forms of a tool mock. A result is any YAML value: a string is given to the
/// model as it is, any other value as its JSON text.
#[derive(Debug, Clone, PartialEq)]
pub enum MockKind {
    /// `{result: value}`: every call gets `value`.
    Fixed(Value),
    /// `{results: [v1, v2, ...]}` (non-empty): the n-th call in a case gets the n-th value;
    /// a call past the end fails the case (add a value, or use rules).
    Sequence(Vec<Value>),
    /// A list of rules `{when?, result}`. Each call gets the result of the first rule whose
    /// `when` matcher matches the call's arguments; a rule without `when` matches anything
    /// and may only be the last one. When no rule matches, the program's own tool result
    /// is passed on unchanged.
    Rules(Vec<MockRule>),
}

/// One `- when: ... result: ...` rule of a tool mock.
#[derive(Debug, Clone, PartialEq)]
pub struct MockRule {
    /// Where the rule starts.
    pub at: Pos,
    /// `when:` (argument matcher, optional): which calls this rule answers. The same matcher
    /// language as call arguments; validated at load.
    pub when: Option<Expr>,
    /// `result:` (required, any value).
    pub result: Value,
}

/// `execution:` — run settings. Each is `None` when the spec does not set it; the command
/// line beats these and these beat `AGENTPROXY_*` variables (see `resolve`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Execution {
    /// `mode:` (`replay` | `record` | `auto` | `update`).
    pub mode: Option<Mode>,
    /// `parallel:` (integer ≥ 1): how many cases run at once.
    pub parallel: Option<usize>,
    /// `timeout:` (duration): the longest one case may take, all turns included; the
    /// program is then stopped and the case fails with an execution error.
    pub timeout: Option<Duration>,
    /// `verbosity:` (`quiet` | `normal` | `verbose` | `debug`).
    pub verbosity: Option<Verbosity>,
    /// `max_age:` (duration such as `30d`): a replayed cassette recorded longer ago than
    /// this gets a warning.
    pub max_age: Option<Duration>,
    /// `replay_timing:` (`instant` | `recorded`): a replay answers at once, or paced as
    /// recorded (each stream event and socket frame at its time), as `replay --realtime`.
    pub replay_timing: Option<bool>,
    /// `reports:` (a mapping from a report format to a file, relative to the spec's
    /// directory): after each run, the report of this spec's cases in each format.
    pub reports: Vec<(ReportFormat, PathBuf)>,
}

/// `egress:` — what a program may reach besides the model APIs the proxy serves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Egress {
    /// `allow:` (list of host patterns): hosts a replay still lets the program reach
    /// through the proxy (a tool's web API that needs no recording).
    pub allow: Vec<HostPattern>,
    /// `record:` (boolean, default false): while recording, record the traffic to other
    /// hosts too, as plain HTTP under its whole URL, so a replay serves it.
    pub record: bool,
    /// `require:` (`contained` | `intercepted`): the level a run must reach, or it cannot
    /// certify anything and fails.
    pub require: Option<Require>,
}

/// The least containment a spec accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Require {
    Contained,
    Intercepted,
}

impl Require {
    pub const ALL: [Require; 2] = [Require::Contained, Require::Intercepted];

    pub fn as_str(self) -> &'static str {
        match self {
            Require::Contained => "contained",
            Require::Intercepted => "intercepted",
        }
    }
}

/// A host a program may reach: `api.example.com`, `api.example.com:8443` (that port
/// only), `*.example.com` (any host under the domain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    /// Lowercase; `*.` kept for a domain.
    host: String,
    port: Option<u16>,
}

impl HostPattern {
    pub fn parse(text: &str) -> Result<HostPattern, String> {
        let lower = text.trim().to_ascii_lowercase();
        let (host, port) = match lower.rsplit_once(':') {
            Some((h, p)) => (
                h.to_owned(),
                Some(
                    p.parse::<u16>()
                        .map_err(|_| format!("`{text}`: the port must be a number up to 65535"))?,
                ),
            ),
            None => (lower, None),
        };
        let name = host.strip_prefix("*.").unwrap_or(&host);
        let valid = !name.is_empty()
            && name.split('.').all(|label| {
                !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            });
        if !valid {
            return Err(format!(
                "`{text}` is not a host: give a name like api.example.com, *.example.com or api.example.com:8443"
            ));
        }
        Ok(HostPattern { host, port })
    }

    /// The port of the host's loopback this pattern names (`127.0.0.1:5432`,
    /// `localhost:5432`), which a contained program reaches through a relay.
    pub fn loopback_port(&self) -> Option<u16> {
        self.port
            .filter(|_| matches!(self.host.as_str(), "127.0.0.1" | "localhost"))
    }

    /// Does `host:port` fall under this pattern?
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let by_name = match self.host.strip_prefix('*') {
            Some(domain) => host.ends_with(domain) && host.len() > domain.len(),
            None => host == self.host,
        };
        by_name && self.port.is_none_or(|p| p == port)
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.port {
            Some(p) => write!(f, "{}:{p}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

/// A report file's format (`--report`, `execution.reports`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Json,
    Markdown,
    Junit,
    /// One self-contained HTML page.
    Html,
}

impl ReportFormat {
    pub const ALL: [ReportFormat; 4] = [
        ReportFormat::Json,
        ReportFormat::Markdown,
        ReportFormat::Junit,
        ReportFormat::Html,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReportFormat::Json => "json",
            ReportFormat::Markdown => "markdown",
            ReportFormat::Junit => "junit",
            ReportFormat::Html => "html",
        }
    }
}

/// How cassettes are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Mode {
    /// Serve cassettes only; never touch the network. A missing cassette fails the case.
    Replay,
    /// Always run against the real model and (re)write every cassette.
    Record,
    /// Record the cases that have no cassette, replay the others.
    Auto,
    /// Replay what matches; record the requests that miss into the case's cassette.
    Update,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Replay, Mode::Record, Mode::Auto, Mode::Update];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Replay => "replay",
            Mode::Record => "record",
            Mode::Auto => "auto",
            Mode::Update => "update",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much the runner prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Verbosity {
    /// One line per case (`-q`).
    Quiet,
    /// Progress and failures.
    #[default]
    Normal,
    /// Also every turn, tool call and injected variable (`-v`).
    Verbose,
    /// Also debug logs (`-vv`).
    Debug,
}

impl Verbosity {
    pub const ALL: [Verbosity; 4] = [
        Verbosity::Quiet,
        Verbosity::Normal,
        Verbosity::Verbose,
        Verbosity::Debug,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verbosity::Quiet => "quiet",
            Verbosity::Normal => "normal",
            Verbosity::Verbose => "verbose",
            Verbosity::Debug => "debug",
        }
    }
}

/// One `cases:` item.
///
/// Keys: `name` (required), `input` or `turns` (at most one; neither is a single turn
/// without input, for `command:` apps), `expect`, `env`, `skip`.
/// `input: X` with `expect: E` is short for `turns: [{input: X, expect: E}]`: the
/// expectation then belongs to that single turn and [`Case::expect`] is `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Where the case starts.
    pub at: Pos,
    /// `name:` (string, non-empty, unique in the file).
    pub name: String,
    /// The cassette file stem: see [`slug`](super::slug). Unique in the file.
    pub slug: String,
    /// `turns:` (non-empty list), or the one turn of `input:`.
    pub turns: Vec<Turn>,
    /// `expect:` next to `turns:`: checked against the whole conversation (every turn's
    /// calls in order; `reply` is the last turn's reply, `output` the whole output).
    pub expect: Option<Expect>,
    /// `env:` (mapping): like `app.env`, applied after it (a case's value wins).
    pub env: BTreeMap<String, String>,
    /// `skip:` — `true`, or a string giving the reason. `Some(reason)` when skipped
    /// (`skip: true` gives an empty reason); `skip: false` or absent is `None`.
    pub skip: Option<String>,
    /// `faults:` (list of faults, see [`crate::fault`]): injected into the case's model
    /// requests, counted over the whole case.
    pub faults: Vec<Fault>,
    /// `fuzz:`: the case runs again with generated arguments in the model's call to a tool.
    pub fuzz: Option<Fuzz>,
    /// `crash:`: the program is killed at a point and started again.
    pub crash: Option<Crash>,
}

/// `crash: {after: {executed: TOOL} | {request: N}}` on a case: once the point has passed,
/// the program's next request is held, its process group killed while it waits, and the
/// program started again with the same input against the same session. The case then
/// checks that the run completes and that no tool an MCP server executed before the crash
/// was executed again after it (unless `executed:` lists it that many times).
///
/// Keys: `after` (required), a mapping of exactly one of `executed` (a tool name) and
/// `request` (from 1). `command:` apps only; not with `fuzz:`.
#[derive(Debug, Clone, PartialEq)]
pub struct Crash {
    /// Where the block starts.
    pub at: Pos,
    pub after: crate::fault::CrashPoint,
}

/// `fuzz:` on a case: after the case's own run, it runs again once per set of arguments,
/// each time with the first call to `tool` the program gets carrying them instead of the
/// recorded ones; the case's `expect` applies to every run.
///
/// Keys: `tool` (required), `valid`, `invalid`, `seed`, `arguments`; at least one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Fuzz {
    /// Where the block starts.
    pub at: Pos,
    /// `tool:` (string): the tool whose call carries the arguments; its schema is the one
    /// the recorded request declares it with.
    pub tool: String,
    /// `valid:` (whole number, default 0): runs with arguments that satisfy the schema.
    pub valid: usize,
    /// `invalid:` (whole number, default 0): runs with near misses, each breaking the
    /// schema in one way.
    pub invalid: usize,
    /// `seed:` (whole number, default 1): the same seed makes the same arguments.
    pub seed: u64,
    /// `arguments:` (list of mappings): runs with exactly these arguments, before the
    /// generated ones (a failing run's arguments, pasted to keep them).
    pub arguments: Vec<serde_json::Value>,
}

impl Fuzz {
    /// The most runs one case may ask for.
    pub const MAX_RUNS: usize = 1000;
}

impl Case {
    /// Does an `expect:` judge the program's exit status (`exit:`)?
    pub fn judges_exit(&self) -> bool {
        let turns = self.turns.iter().filter_map(|t| t.expect.as_ref());
        turns.chain(&self.expect).any(|e| e.exit.is_some())
    }

    /// The faults of the case and of its turns.
    pub fn fault_plan(&self) -> crate::fault::Plan {
        crate::fault::Plan {
            case: self.faults.clone(),
            turns: (self.turns.iter().enumerate())
                .flat_map(|(i, t)| t.faults.iter().map(move |f| (i, f.clone())))
                .collect(),
        }
    }

    /// `<dir>/<slug>.json`.
    pub fn cassette_path(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{}.json", self.slug))
    }
}

/// One `turns:` item: `{input, expect?}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Where the turn starts.
    pub at: Pos,
    /// `input:` (string): what the user says. Sent as `AGENTPROXY_INPUT`, as one line on
    /// stdin and in place of `{input}` in the command (command apps), or as the `input` of
    /// the POST body (url apps). Numbers are refused: quote them. Required in `turns:`
    /// items and for `url:` apps; a single-turn case of a `command:` app may leave it out
    /// (`None`): the program, whose task is built in, runs once with stdin closed.
    pub input: Option<String>,
    /// `expect:`: checked against this turn only.
    pub expect: Option<Expect>,
    /// `faults:`: injected into this turn's model requests, counted within the turn.
    pub faults: Vec<Fault>,
}

/// `expect:` — assertions on a turn or, at case level, on the whole conversation.
///
/// Keys: `calls`, `order`, `strict`, `allow`, `never`, `executed`, `not_executed`,
/// `count`, `requests`, `exit`, `reply`, `output`.
/// Every key is optional; an absent key asserts nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expect {
    /// Where the block starts.
    pub at: Pos,
    /// `calls:` (list of [`CallExpr`]): calls that must be made, compared per `order`.
    /// `calls: []` asserts that no tool was called at all, whatever `order` and `strict` say.
    /// `None` when absent.
    pub calls: Option<Vec<CallExpr>>,
    /// `order:` (`subsequence` | `exact` | `unordered`, default `subsequence`).
    pub order: Order,
    /// `strict:` (boolean, default false): no call may be made other than those listed
    /// in `calls` and the tool names in `allow`.
    pub strict: bool,
    /// `allow:` (list of tool names): calls that `strict` tolerates. Only with `strict: true`.
    pub allow: Vec<String>,
    /// `never:` (list of [`CallExpr`]): calls that must not happen. With arguments, only the
    /// calls whose arguments match are forbidden.
    pub never: Vec<CallExpr>,
    /// `executed:` (list of [`CallExpr`]): tool calls an MCP server must have executed (a
    /// `tools/call` through `agentproxy mcp`), in this order, others may come between.
    /// `executed: []` asserts that nothing was executed. `None` when absent.
    pub executed: Option<Vec<CallExpr>>,
    /// `not_executed:` (list of [`CallExpr`]): tool calls no MCP server may have executed,
    /// whether or not the model asked for them (a mocked tool, say).
    pub not_executed: Vec<CallExpr>,
    /// `count:` (integer, or `{min, max}`): how many tool calls in total.
    pub count: Option<Count>,
    /// `requests:` (integer, or `{min, max}`): how many model requests, faulted ones and
    /// retries included.
    pub requests: Option<Count>,
    /// `exit:` (integer): the program's exit status. With it, a program that exits non-zero
    /// is judged by it instead of being an error. Only where the whole run is judged: a
    /// single-turn case's `expect`, or the `expect` next to `turns:`; `command:` apps only.
    pub exit: Option<i32>,
    /// Where `exit:` is written, to refuse it in a turn of several.
    pub exit_at: Option<Pos>,
    /// `reply:` (text matcher): the last assistant message the model produced, read at the
    /// model boundary. A bare string means "contains"; validated at load.
    pub reply: Option<Expr>,
    /// `output:` (text matcher): what the program printed on stdout for the turn (command
    /// apps) or answered (url apps).
    pub output: Option<Expr>,
}

/// How `calls:` are compared with the calls made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Order {
    /// The listed calls appear in this order, other calls may come between them.
    #[default]
    Subsequence,
    /// The calls made are exactly the listed ones, in this order.
    Exact,
    /// Each listed call is matched by a distinct call made, in any order (maximum matching,
    /// so a broad matcher does not steal the only call a narrow one accepts).
    Unordered,
}

impl Order {
    pub const ALL: [Order; 3] = [Order::Subsequence, Order::Exact, Order::Unordered];

    pub fn as_str(self) -> &'static str {
        match self {
            Order::Subsequence => "subsequence",
            Order::Exact => "exact",
            Order::Unordered => "unordered",
        }
    }
}

/// One expected (or forbidden) tool call. In YAML either a bare tool name, meaning any
/// arguments, or a mapping with exactly one key, the tool name, whose value is an argument
/// matcher:
///
/// ```yaml
/// calls:
///   - get_weather                          # any arguments
///   - get_weather: {city: {contains: Paris}}
///   - get_weather: null                    # same as the bare name
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CallExpr {
    /// Where the item is.
    pub at: Pos,
    /// The tool (function) name, compared exactly.
    pub tool: String,
    /// The argument matcher, compiled at load; `None` accepts any arguments.
    pub args: Option<Expr>,
}

/// `count: n` (exactly n, written `min == max`) or `count: {min?, max?}` (at least one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Count {
    pub min: Option<u64>,
    pub max: Option<u64>,
}

/// A matcher expression as the spec wrote it (what reports show), compiled at load.
#[derive(Debug, Clone)]
pub struct Expr {
    pub source: Value,
    pub matcher: Matcher,
}

/// Two expressions are the same when they are written the same.
impl PartialEq for Expr {
    fn eq(&self, other: &Expr) -> bool {
        self.source == other.source
    }
}

/// A regex as the spec wrote it, compiled at load.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub source: String,
    pub regex: Regex,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.source == other.source
    }
}

impl Pattern {
    /// `source` compiled; for specs written in code (tests).
    #[cfg(test)]
    pub fn new(source: &str) -> Pattern {
        Pattern {
            source: source.to_owned(),
            regex: Regex::new(source).expect("a valid regex"),
        }
    }
}
