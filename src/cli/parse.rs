//! The parsers of flag values: each takes the flag's text and gives its value or why not.

use std::time::Duration;

use crate::cassette::format::Hole;

pub(super) fn parse_mcp_name(s: &str) -> Result<String, String> {
    crate::dialect::mcp::is_server_name(s)
        .then(|| s.to_owned())
        .ok_or_else(|| format!("`{s}` is not a server name: use letters, digits, - and _"))
}

/// `NAME=URL` of a streamable HTTP MCP server.
pub fn parse_mcp_server(s: &str) -> Result<(String, String), String> {
    named_url(s, "MCP server")
}

/// `NAME=URL` of a remote agent over A2A (its base URL, where its card is).
pub fn parse_a2a_agent(s: &str) -> Result<(String, String), String> {
    named_url(s, "agent")
}

/// `NAME=URL` of a `what`: a name of letters, digits, `-` and `_`, an http(s) URL.
fn named_url(s: &str, what: &str) -> Result<(String, String), String> {
    let (name, url) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=URL"))?;
    if !crate::dialect::mcp::is_server_name(name) {
        return Err(format!(
            "{what} name `{name}` must be letters, digits, `-` and `_`"
        ));
    }
    crate::dialect::mcp::check_server_url(url)?;
    Ok((name.to_owned(), url.to_owned()))
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
