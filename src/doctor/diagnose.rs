//! The report of `agentproxy doctor`: from what arrived at the doctor and how the program
//! ended, which injected variables the program honours, and concrete advice when none.
//! Pure: the command reads the program's files and output and passes them in.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

use super::server::Arrival;
use crate::runner::env::Injected;

/// Which client reads which variable (SDK_NOTES.md, observed with real clients).
pub const SDK_VARIABLES: [(&str, &str); 14] = [
    ("openai (Python)", "OPENAI_BASE_URL"),
    ("openai (npm)", "OPENAI_BASE_URL only"),
    (
        "langchain-openai",
        "OPENAI_API_BASE first, then OPENAI_BASE_URL",
    ),
    ("litellm", "OPENAI_BASE_URL first, then OPENAI_API_BASE"),
    ("anthropic", "ANTHROPIC_BASE_URL, without /v1"),
    ("google-genai", "GOOGLE_GEMINI_BASE_URL, without /v1"),
    (
        "claude-agent-sdk",
        "ANTHROPIC_BASE_URL, without /v1 (the Claude Code CLI too)",
    ),
    ("AzureOpenAI", "AZURE_OPENAI_ENDPOINT, without /openai"),
    (
        "semantic-kernel",
        "AZURE_OPENAI_BASE_URL with /openai (its endpoint must be https), OLLAMA_HOST",
    ),
    ("ollama", "OLLAMA_HOST"),
    (
        "boto3",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME (bedrock-runtime; strands-agents too)",
    ),
    (
        "AnthropicBedrock",
        "its own host, intercepted (ANTHROPIC_BEDROCK_BASE_URL is left alone)",
    ),
    (
        "genai (Vertex)",
        "GOOGLE_VERTEX_BASE_URL with vertexai=True, project and location passed",
    ),
    ("AnthropicVertex", "ANTHROPIC_VERTEX_BASE_URL, with /v1"),
];

/// Lines of the program's output shown in the report.
const STDERR_LINES: usize = 8;
const STDOUT_LINES: usize = 6;
/// Variable names quoted from the program's files, at most.
const MAX_MENTIONED: usize = 6;

/// How the program ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProgramEnd {
    /// Its exit code (128+N when killed by signal N).
    Exited { code: i32 },
    /// Stopped after `--timeout`.
    TimedOut { after_secs: f64 },
    /// The user interrupted the doctor.
    Interrupted,
}

/// Everything the doctor observed.
#[derive(Debug, Clone)]
pub struct Observed {
    pub command: Vec<String>,
    /// The variables the program was given, with their doctor-mode values.
    pub injected: Vec<Injected>,
    pub arrivals: Vec<Arrival>,
    /// The MCP servers started through `agentproxy mcp --name NAME`, by name.
    pub mcp_servers: Vec<String>,
    pub program: ProgramEnd,
    pub stdout: String,
    pub stderr: String,
    /// The text of the program's files named on its command line (scripts), for the
    /// variable names they mention.
    pub sources: Vec<String>,
    /// The proxy base (`http://127.0.0.1:PORT`), to tell its own URL from others in output.
    pub base: String,
}

/// One URL variable the program was given and how many requests came through it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VariableUse {
    pub name: String,
    pub value: String,
    pub requests: usize,
}

/// The doctor's findings, as data (`--json`) and as text ([`render`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DoctorReport {
    pub command: Vec<String>,
    pub program: ProgramEnd,
    pub arrivals: Vec<Arrival>,
    pub model_calls: usize,
    /// The MCP servers that came through the stand-in (`agentproxy mcp --name NAME`).
    pub mcp_servers: Vec<String>,
    /// The URL variables, in injection order, with the requests that came through each.
    pub variables: Vec<VariableUse>,
    /// The variables at least one request came through.
    pub honoured: Vec<String>,
    /// Other variables set (placeholder keys, side-traffic switches).
    pub also_set: Vec<String>,
    /// At least one model request arrived.
    pub ok: bool,
    /// Problems worth fixing even when requests arrived.
    pub notes: Vec<String>,
    /// Variable names that look like an API URL setting in the program's files.
    pub mentioned: Vec<String>,
    /// URLs other than the proxy's in the program's output (where it went instead).
    pub other_urls: Vec<String>,
    pub stdout_tail: Vec<String>,
    pub stderr_tail: Vec<String>,
}

/// Turn what was observed into findings.
pub fn diagnose(o: Observed) -> DoctorReport {
    let url_vars: Vec<&Injected> = o
        .injected
        .iter()
        .filter(|v| v.value.starts_with(&o.base))
        .collect();
    let variables: Vec<VariableUse> = url_vars
        .iter()
        .map(|v| VariableUse {
            name: v.name.clone(),
            value: v.value.clone(),
            requests: o.arrivals.iter().filter(|a| a.via == v.name).count(),
        })
        .collect();
    // Injected variables in injection order, then any other name a `/_via/NAME` prefix
    // carried (a variable the user pointed at the doctor by hand).
    let mut honoured: Vec<String> = variables
        .iter()
        .filter(|v| v.requests > 0)
        .map(|v| v.name.clone())
        .collect();
    for a in &o.arrivals {
        if !honoured.contains(&a.via) {
            honoured.push(a.via.clone());
        }
    }
    let also_set = o
        .injected
        .iter()
        .filter(|v| !v.value.starts_with(&o.base))
        .map(|v| v.name.clone())
        .collect();
    let model_calls = o.arrivals.iter().filter(|a| a.is_model_call()).count();
    let injected_names: BTreeSet<&str> = o.injected.iter().map(|v| v.name.as_str()).collect();
    let mentioned = mentioned_variables(
        o.sources
            .iter()
            .map(String::as_str)
            .chain(o.command.iter().map(String::as_str)),
    )
    .into_iter()
    .filter(|n| !injected_names.contains(n.as_str()))
    .take(MAX_MENTIONED)
    .collect();
    let other_urls = other_urls(&format!("{}\n{}", o.stdout, o.stderr), &o.base);
    let mentions_mcp = o.sources.iter().any(|s| mentions_mcp(s));
    let mentions_a2a = o.sources.iter().any(|s| mentions_a2a(s));
    let mut report = DoctorReport {
        command: o.command,
        program: o.program,
        model_calls,
        mcp_servers: o.mcp_servers,
        variables,
        honoured,
        also_set,
        ok: model_calls > 0,
        notes: vec![],
        mentioned,
        other_urls,
        stdout_tail: tail(&o.stdout, STDOUT_LINES),
        stderr_tail: tail(&o.stderr, STDERR_LINES),
        arrivals: o.arrivals,
    };
    report.notes = notes(&report);
    report.notes.extend(boundary_notes(
        mentions_mcp && report.mcp_servers.is_empty(),
        mentions_a2a,
    ));
    report
}

/// What a program whose files speak of MCP (`mcp`: and no server came through the
/// stand-in) or of A2A (`a2a`) is told about wiring those boundaries.
fn boundary_notes(mcp: bool, a2a: bool) -> Vec<String> {
    let mut out = Vec::new();
    if mcp {
        out.push(
            "the program's files mention MCP, but no MCP server came through `agentproxy mcp`: the tools of a server it starts \
             would run in replay too. Start each stdio server as `agentproxy mcp --name NAME -- COMMAND`, and give a streamable HTTP one with `--mcp NAME=URL` \
             (its URL for the program in AGENTPROXY_MCP_<NAME>_URL); see `agentproxy docs mcp`."
                .into(),
        );
    }
    if a2a {
        out.push(
            "the program's files mention A2A: a remote agent it calls would run in replay too. Give each one with `--a2a NAME=URL` \
             (its base URL, where its card is) and have the program read the agent's URL from AGENTPROXY_A2A_<NAME>_URL; see `agentproxy docs a2a`."
                .into(),
        );
    }
    out
}

/// Whether a program's source speaks of A2A (the `a2a` SDK, an agent card).
fn mentions_a2a(source: &str) -> bool {
    static A2A: OnceLock<Regex> = OnceLock::new();
    let re = A2A.get_or_init(|| {
        Regex::new(
            r"(?i)\bfrom a2a\b|\bimport a2a\b|@a2a-js/|A2AClient|A2ACardResolver|agent-card\.json",
        )
        .expect("valid regex")
    });
    re.is_match(source)
}

/// Whether a program's source speaks of MCP (an import, `MCPServerStdio`, `mcp_servers`).
fn mentions_mcp(source: &str) -> bool {
    static MCP: OnceLock<Regex> = OnceLock::new();
    let re = MCP.get_or_init(|| Regex::new(r"(?i)\bmcp").expect("valid regex"));
    re.is_match(source)
}

/// Problems with what did arrive.
fn notes(r: &DoctorReport) -> Vec<String> {
    let mut notes = vec![];
    let mut seen = BTreeSet::new();
    for a in &r.arrivals {
        if !a.api_path.starts_with("/v1/") && seen.insert((&a.via, &a.api_path)) {
            notes.push(format!(
                "{} {} (via {}) is not under /v1/: record and replay refuse such paths. Keep the /v1 that {} ends with in the base URL the program builds.",
                a.method, a.api_path, a.via, a.via
            ));
        }
    }
    if !r.arrivals.is_empty() && r.model_calls == 0 {
        notes.push(
            "requests arrived but none was a model call: the doctor answers other paths with 404, so the program may have stopped there. \
             Record and replay pass such paths through, so it probably works with them; check its output below."
                .into(),
        );
    }
    if r.model_calls > 0 && !matches!(r.program, ProgramEnd::Exited { code: 0 }) {
        notes.push(
            "the program did not exit cleanly after the canned reply. A canned reply asks for no tool call, \
             so an agent that expects one may fail; that does not matter for this check."
                .into(),
        );
    }
    notes
}

/// Names like `MY_LLM_URL` or `LLM_API_BASE`: upper-case identifiers that look like the
/// setting of an API location, in order of first mention.
fn mentioned_variables<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    static NAME: OnceLock<Regex> = OnceLock::new();
    let re =
        NAME.get_or_init(|| Regex::new(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b").expect("valid regex"));
    const HINTS: [&str; 5] = ["URL", "BASE", "ENDPOINT", "HOST", "URI"];
    let mut seen = BTreeSet::new();
    let mut out = vec![];
    for text in texts {
        for m in re.find_iter(text) {
            let name = m.as_str();
            let looks_like_location = name.split('_').any(|part| HINTS.contains(&part));
            if looks_like_location && seen.insert(name.to_owned()) {
                out.push(name.to_owned());
            }
        }
    }
    out
}

/// `scheme://host[:port]` of the URLs in `text` that are not the proxy's, in order.
fn other_urls(text: &str, base: &str) -> Vec<String> {
    static URL: OnceLock<Regex> = OnceLock::new();
    let re =
        URL.get_or_init(|| Regex::new(r"https?://[A-Za-z0-9.\-]+(?::\d+)?").expect("valid regex"));
    let mut seen = BTreeSet::new();
    re.find_iter(text)
        .map(|m| m.as_str().to_owned())
        .filter(|u| u != base && seen.insert(u.clone()))
        .take(3)
        .collect()
}

fn tail(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.to_string())
        .collect()
}

/// One kind of request that arrived, `n` times: where it went and what it carried.
fn arrival_line(a: &Arrival, n: usize) -> String {
    let mut line = format!("{} {}  → {} ({}", a.method, a.api_path, a.route, a.status);
    if a.stream {
        line.push_str(", stream");
    }
    line.push(')');
    if n > 1 {
        let _ = write!(line, " ×{n}");
    }
    let _ = write!(line, "  via {}", a.via);
    if let Some(model) = &a.model {
        let _ = write!(line, "  model: {model}");
    }
    let _ = write!(
        line,
        "  client: {}",
        a.client.as_deref().unwrap_or("(no user-agent)")
    );
    let _ = write!(
        line,
        "  auth: {}",
        if a.auth.is_empty() {
            "none".to_owned()
        } else {
            a.auth.join(", ")
        }
    );
    line
}

/// The report as text.
pub fn render(r: &DoctorReport) -> String {
    let mut out = String::new();
    let command = shell_words::join(&r.command);
    let _ = writeln!(out, "agentproxy doctor: {command}");
    let _ = writeln!(out, "  program: {}", program_line(&r.program));
    let others = r.arrivals.len() - r.model_calls;
    let _ = writeln!(
        out,
        "  requests: {} model {}, {} other",
        r.model_calls,
        if r.model_calls == 1 { "call" } else { "calls" },
        others
    );
    for (a, n) in grouped(&r.arrivals) {
        let _ = writeln!(out, "    {}", arrival_line(a, n));
    }
    if !r.mcp_servers.is_empty() {
        let _ = writeln!(
            out,
            "  MCP servers through `agentproxy mcp` (run as they are in doctor mode): {}",
            r.mcp_servers.join(", ")
        );
    }
    variables(&mut out, r);
    for note in &r.notes {
        let _ = writeln!(out, "\n  note: {note}");
    }
    out.push('\n');
    if r.ok {
        if !matches!(r.program, ProgramEnd::Exited { code: 0 }) {
            output_tails(&mut out, r);
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "ok: the program honours {}. `agentproxy record -- {command}` will capture its model traffic \
             (record and replay set the same variables, without the /_via/ paths).",
            r.honoured.join(" and ")
        );
        return out;
    }
    if r.arrivals.is_empty() {
        let _ = writeln!(
            out,
            "no request reached the proxy: the program read none of the injected variables, or never called the model."
        );
    } else {
        let _ = writeln!(
            out,
            "no model call reached the proxy, although the program honours {}.",
            r.honoured.join(" and ")
        );
    }
    output_tails(&mut out, r);
    if !r.other_urls.is_empty() {
        let _ = writeln!(
            out,
            "\n  its output mentions {}: it may be calling that directly, from a URL in its code or configuration.",
            r.other_urls.join(", ")
        );
    }
    if r.arrivals.is_empty() {
        advice(&mut out, r, &command);
    }
    out
}

/// The injected variables, each with how many requests came through it.
fn variables(out: &mut String, r: &DoctorReport) {
    let _ = writeln!(
        out,
        "\n  injected variables (doctor mode: each points at its own path, so its use shows):"
    );
    let width = r.variables.iter().map(|v| v.name.len()).max().unwrap_or(0);
    let value_width = r.variables.iter().map(|v| v.value.len()).max().unwrap_or(0);
    for v in &r.variables {
        let (mark, used) = match v.requests {
            0 => ("·", "not used".to_owned()),
            1 => ("✓", "1 request".to_owned()),
            n => ("✓", format!("{n} requests")),
        };
        let _ = writeln!(
            out,
            "    {mark} {:width$}  {:value_width$}  {used}",
            v.name, v.value
        );
    }
    if !r.also_set.is_empty() {
        let _ = writeln!(out, "    also set: {}", r.also_set.join(", "));
    }
}

fn program_line(end: &ProgramEnd) -> String {
    match end {
        ProgramEnd::Exited { code: 0 } => "exited with status 0".into(),
        ProgramEnd::Exited { code } => format!("exited with status {code}"),
        ProgramEnd::TimedOut { after_secs } => {
            format!("stopped after {after_secs:.1}s (--timeout)")
        }
        ProgramEnd::Interrupted => "interrupted".into(),
    }
}

fn output_tails(out: &mut String, r: &DoctorReport) {
    for (label, lines) in [("stderr", &r.stderr_tail), ("stdout", &r.stdout_tail)] {
        if lines.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n  the program's {label} (last lines):");
        for l in lines {
            let _ = writeln!(out, "    | {l}");
        }
    }
}

/// What to do when nothing arrived: which client reads which variable, and how to map the
/// program's own variable.
fn advice(out: &mut String, r: &DoctorReport, command: &str) {
    let _ = writeln!(out, "\n  Which client reads which variable:");
    let width = SDK_VARIABLES
        .iter()
        .map(|(c, _)| c.len())
        .max()
        .unwrap_or(0);
    for (client, reads) in SDK_VARIABLES {
        let _ = writeln!(out, "    {client:width$}  {reads}");
    }
    let names: Vec<&str> = if r.mentioned.is_empty() {
        vec!["MY_LLM_URL"]
    } else {
        r.mentioned.iter().map(String::as_str).collect()
    };
    match r.mentioned.as_slice() {
        [] => {
            let _ = writeln!(
                out,
                "\n  If the program reads its own variable (say MY_LLM_URL), map it in the spec's app.env:"
            );
        }
        found => {
            let _ = writeln!(
                out,
                "\n  Its files mention {}. If it reads its API URL from there, map it in the spec's app.env:",
                found.join(", ")
            );
        }
    }
    let _ = writeln!(out, "    app:\n      env:");
    for name in &names {
        let _ = writeln!(out, "        {name}: {}", placeholder_for(name));
    }
    let _ = writeln!(
        out,
        "  ${{agentproxy.url}} is the proxy with /v1 (OpenAI-style clients); ${{agentproxy.base}} is without it \
         (clients that add /v1 themselves, like the anthropic SDK)."
    );
    let pinned: Vec<String> = names
        .iter()
        .map(|n| {
            let url = match placeholder_for(n) {
                "${agentproxy.base}" => "http://127.0.0.1:8089".to_owned(),
                _ => "http://127.0.0.1:8089/v1".to_owned(),
            };
            format!("{n}={url}")
        })
        .collect();
    let _ = writeln!(
        out,
        "  Without a spec, pin the port and set it yourself:\n    agentproxy record --listen 127.0.0.1:8089 -- env {} {command}",
        pinned.join(" ")
    );
    let checked: Vec<String> = names
        .iter()
        .map(|n| {
            let v1 = if placeholder_for(n) == "${agentproxy.base}" {
                ""
            } else {
                "/v1"
            };
            format!(
                "{n}=http://127.0.0.1:8089{}{v1}",
                super::server::via_prefix(n)
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "  Check the mapping first (the /_via/NAME path lets the doctor name the variable):\n    agentproxy doctor --listen 127.0.0.1:8089 -- env {} {command}",
        checked.join(" ")
    );
}

/// `${agentproxy.base}` for names that look Anthropic (that SDK adds /v1 itself), else
/// `${agentproxy.url}`.
fn placeholder_for(name: &str) -> &'static str {
    if name.contains("ANTHROPIC") || name.contains("CLAUDE") {
        "${agentproxy.base}"
    } else {
        "${agentproxy.url}"
    }
}

/// Identical arrivals collapsed, with their count, in order of first arrival.
fn grouped(arrivals: &[Arrival]) -> Vec<(&Arrival, usize)> {
    let mut out: Vec<(&Arrival, usize)> = vec![];
    for a in arrivals {
        match out.iter_mut().find(|(b, _)| *b == a) {
            Some((_, n)) => *n += 1,
            None => out.push((a, 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "http://127.0.0.1:4000";

    fn injected() -> Vec<Injected> {
        let var = |name: &str, value: String| Injected {
            name: name.into(),
            value,
            why: "",
        };
        vec![
            var("OPENAI_BASE_URL", format!("{BASE}/v1")),
            var("OPENAI_API_BASE", format!("{BASE}/_via/OPENAI_API_BASE/v1")),
            var(
                "ANTHROPIC_BASE_URL",
                format!("{BASE}/_via/ANTHROPIC_BASE_URL"),
            ),
            var("AGENTPROXY_URL", format!("{BASE}/_via/AGENTPROXY_URL")),
            var("OPENAI_API_KEY", "agentproxy-replay-placeholder".into()),
        ]
    }

    fn arrival(via: &str, method: &str, api_path: &str, route: &str, status: u16) -> Arrival {
        Arrival {
            method: method.into(),
            path: api_path.into(),
            api_path: api_path.into(),
            via: via.into(),
            route: route.into(),
            status,
            stream: false,
            model: Some("gpt-4o-mini".into()),
            client: Some("OpenAI/Python 3.57.0".into()),
            auth: vec!["authorization".into()],
        }
    }

    fn observed(arrivals: Vec<Arrival>, code: i32, stderr: &str, sources: &[&str]) -> Observed {
        Observed {
            command: vec!["python3".into(), "app.py".into()],
            injected: injected(),
            arrivals,
            mcp_servers: vec![],
            program: ProgramEnd::Exited { code },
            stdout: String::new(),
            stderr: stderr.into(),
            sources: sources.iter().map(|s| s.to_string()).collect(),
            base: BASE.into(),
        }
    }

    #[test]
    fn mcp_servers_through_the_stand_in_are_named_and_missing_ones_get_advice() {
        let call = || {
            arrival(
                "OPENAI_BASE_URL",
                "POST",
                "/v1/responses",
                "openai.responses",
                200,
            )
        };
        let source = "from agents.mcp import MCPServerStdio";
        let mut o = observed(vec![call()], 0, "", &[source]);
        o.mcp_servers = vec!["mail".into()];
        let r = diagnose(o);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        assert!(
            render(&r).contains(
                "MCP servers through `agentproxy mcp` (run as they are in doctor mode): mail"
            ),
            "{}",
            render(&r)
        );
        let r = diagnose(observed(vec![call()], 0, "", &[source]));
        assert_eq!(r.notes.len(), 1);
        assert!(r.notes[0].contains("no MCP server came through `agentproxy mcp`"));
        assert!(r.notes[0].contains("agentproxy mcp --name NAME -- COMMAND"));
        // A program that delegates over A2A is told how to give its agents.
        let a2a = "from a2a.client import A2ACardResolver";
        let r = diagnose(observed(vec![call()], 0, "", &[a2a]));
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        assert!(r.notes[0].contains("--a2a NAME=URL"), "{:?}", r.notes);
        // A program that never speaks of MCP gets no advice about it.
        assert!(diagnose(observed(vec![call()], 0, "", &["import openai"]))
            .notes
            .is_empty());
    }

    #[test]
    fn a_program_that_honours_a_variable_is_ok() {
        let a = arrival(
            "OPENAI_API_BASE",
            "POST",
            "/v1/chat/completions",
            "openai.chat",
            200,
        );
        let r = diagnose(observed(vec![a.clone(), a], 0, "", &[]));
        assert!(r.ok);
        assert_eq!(r.honoured, vec!["OPENAI_API_BASE"]);
        assert_eq!(r.model_calls, 2);
        assert_eq!(r.also_set, vec!["OPENAI_API_KEY"]);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        let text = render(&r);
        assert!(
            text.contains("POST /v1/chat/completions  → openai.chat (200) ×2  via OPENAI_API_BASE"),
            "{text}"
        );
        assert!(text.contains("✓ OPENAI_API_BASE "), "{text}");
        assert!(text.contains("· OPENAI_BASE_URL "), "{text}");
        assert!(
            text.contains("ok: the program honours OPENAI_API_BASE."),
            "{text}"
        );
        assert!(!text.contains("Which client reads"), "{text}");
    }

    #[test]
    fn nothing_arrived_gives_the_table_and_an_app_env_mapping() {
        let source = "BASE = os.environ.get('MY_LLM_URL', 'https://api.openai.com/v1')\nLOG_LEVEL = 1\nX = os.environ['LLM_API_BASE']";
        let stderr = "urllib.error.URLError: <urlopen error [Errno 111] Connection refused> calling https://api.openai.com/v1";
        let r = diagnose(observed(vec![], 1, stderr, &[source]));
        assert!(!r.ok);
        assert_eq!(r.mentioned, vec!["MY_LLM_URL", "LLM_API_BASE"]);
        assert_eq!(r.other_urls, vec!["https://api.openai.com"]);
        let text = render(&r);
        for expected in [
            "no request reached the proxy",
            "program: exited with status 1",
            "| urllib.error.URLError",
            "its output mentions https://api.openai.com",
            "langchain-openai  OPENAI_API_BASE first, then OPENAI_BASE_URL",
            "anthropic         ANTHROPIC_BASE_URL, without /v1",
            "Its files mention MY_LLM_URL, LLM_API_BASE.",
            "        MY_LLM_URL: ${agentproxy.url}\n        LLM_API_BASE: ${agentproxy.url}\n",
            "-- env MY_LLM_URL=http://127.0.0.1:8089/v1 LLM_API_BASE=http://127.0.0.1:8089/v1 python3 app.py",
            "doctor --listen 127.0.0.1:8089 -- env MY_LLM_URL=http://127.0.0.1:8089/_via/MY_LLM_URL/v1 LLM_API_BASE=",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
    }

    #[test]
    fn without_mentions_the_mapping_uses_an_example_name() {
        let r = diagnose(observed(vec![], 0, "", &["print('hi')"]));
        let text = render(&r);
        assert!(text.contains("(say MY_LLM_URL)"), "{text}");
        assert!(text.contains("MY_LLM_URL: ${agentproxy.url}"), "{text}");
        assert_eq!(placeholder_for("MY_ANTHROPIC_URL"), "${agentproxy.base}");
    }

    #[test]
    fn paths_without_v1_and_plain_http_only_get_notes() {
        let a = arrival(
            "AGENTPROXY_URL",
            "POST",
            "/chat/completions",
            "openai.chat",
            200,
        );
        let r = diagnose(observed(vec![a], 0, "", &[]));
        assert!(r.ok);
        assert!(
            r.notes[0].contains("/chat/completions (via AGENTPROXY_URL) is not under /v1/"),
            "{:?}",
            r.notes
        );

        let models = arrival("OPENAI_BASE_URL", "GET", "/v1/models", "http", 404);
        let r = diagnose(observed(vec![models], 1, "NotFoundError: 404", &[]));
        assert!(!r.ok);
        assert_eq!(r.honoured, vec!["OPENAI_BASE_URL"]);
        assert!(
            r.notes.iter().any(|n| n.contains("none was a model call")),
            "{:?}",
            r.notes
        );
        let text = render(&r);
        assert!(
            text.contains(
                "no model call reached the proxy, although the program honours OPENAI_BASE_URL"
            ),
            "{text}"
        );
        assert!(!text.contains("Which client reads"), "{text}");
    }

    #[test]
    fn a_failing_program_after_a_canned_reply_is_still_ok_with_a_note() {
        let a = arrival(
            "OPENAI_BASE_URL",
            "POST",
            "/v1/responses",
            "openai.responses",
            200,
        );
        let r = diagnose(observed(vec![a], 2, "KeyError: 'tool_calls'", &[]));
        assert!(r.ok);
        assert!(
            r.notes.iter().any(|n| n.contains("did not exit cleanly")),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn a_variable_pointed_at_the_doctor_by_hand_is_named_from_its_prefix() {
        let a = arrival(
            "MY_LLM_URL",
            "POST",
            "/v1/chat/completions",
            "openai.chat",
            200,
        );
        let r = diagnose(observed(vec![a], 0, "", &[]));
        assert!(r.ok);
        assert_eq!(r.honoured, vec!["MY_LLM_URL"]);
        assert!(r.variables.iter().all(|v| v.requests == 0));
    }
}
