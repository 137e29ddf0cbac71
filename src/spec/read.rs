//! Reading a YAML node tree by hand: typed accessors that turn every mismatch into a
//! `file:line:column` error naming the key path, listing the accepted keys with a "did you
//! mean", and saying where a misplaced key belongs.
//!
//! The tree is read by hand rather than through `#[derive(Deserialize)]` because serde's
//! errors cannot point into values validated after deserializing (a regex inside a matcher)
//! nor suggest where a key belongs. Matchers and regexes are compiled here, once.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::error::{did_you_mean, one_of, SpecError};
use super::model::{Expr, Pattern};
use super::yaml::{Kind, Node};
use crate::assert::Matcher;

/// Which matcher language an expression is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatcherKind {
    /// Tool-call arguments (`calls`, `never`, mock `when`): a bare value means equals.
    Args,
    /// Text (`reply`, `output`): a bare string means contains.
    Text,
}

pub(super) type R<T> = Result<T, SpecError>;

pub(super) const TOP_KEYS: &[&str] = &[
    "version",
    "name",
    "app",
    "cassettes",
    "match",
    "tools",
    "mcp",
    "a2a",
    "agents",
    "execution",
    "egress",
    "cases",
];
pub(super) const APP_KEYS: &[&str] = &["command", "url", "env", "timeout", "reply_until", "cwd"];
pub(super) const MATCH_KEYS: &[&str] = &["ignore", "holes", "repeat"];
pub(super) const HOLE_KEYS: &[&str] = &["name", "regex", "in"];
pub(super) const EGRESS_KEYS: &[&str] = &["allow", "record", "require"];
pub(super) const EXECUTION_KEYS: &[&str] = &[
    "mode",
    "parallel",
    "timeout",
    "verbosity",
    "max_age",
    "replay_timing",
    "reports",
];
pub(super) const CASE_KEYS: &[&str] = &[
    "name", "input", "turns", "expect", "env", "skip", "faults", "fuzz", "crash",
];
pub(super) const CRASH_KEYS: &[&str] = &["after"];
pub(super) const CRASH_POINT_KEYS: &[&str] = &["executed", "request"];
pub(super) const FUZZ_KEYS: &[&str] = &["tool", "valid", "invalid", "seed", "arguments"];
pub(super) const TURN_KEYS: &[&str] = &["input", "expect", "faults"];
pub(super) const EXPECT_KEYS: &[&str] = &[
    "calls",
    "order",
    "strict",
    "allow",
    "never",
    "executed",
    "not_executed",
    "count",
    "requests",
    "exit",
    "reply",
    "output",
];
pub(super) const MOCK_KEYS: &[&str] = &["result", "results"];
pub(super) const RULE_KEYS: &[&str] = &["when", "result"];
pub(super) const COUNT_KEYS: &[&str] = &["min", "max"];
pub(super) const ENV_PLACEHOLDERS: &[&str] = &["url", "base"];

/// Where a key that is unknown here is accepted instead, for the hint.
fn belongs_under(context: &str, key: &str) -> Option<String> {
    let place = if key == "timeout" && context == "the spec" {
        "under `execution:` (for a whole case) or `app:` (for one turn)"
    } else if APP_KEYS.contains(&key) && context == "the spec" {
        "under `app:`"
    } else if EXECUTION_KEYS.contains(&key) && context == "the spec" {
        "under `execution:`"
    } else if MATCH_KEYS.contains(&key) && context == "the spec" {
        "under `match:`"
    } else if CASE_KEYS.contains(&key) && context == "the spec" {
        "in a case, under `cases:`"
    } else if EXPECT_KEYS.contains(&key) && matches!(context, "case" | "turn") {
        "under `expect:`"
    } else if key == "when" && context == "mock" {
        return Some(
            "a mock with `when:` is a list of rules, each starting with `- `: `- when: {...}` then `result: ...`"
                .into(),
        );
    } else if key == "expect" && context == "expect" {
        "one level up: this is already an `expect:` block"
    } else {
        return None;
    };
    Some(format!("`{key}` belongs {place}"))
}

/// `parent.key`, or `key` at the top.
pub(super) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

pub(super) fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// The entries of a mapping, checked against the keys allowed in it.
pub(super) struct Fields<'n> {
    pub(super) entries: &'n [(Node, Node)],
    /// Where to report a missing key: the key that introduced this mapping, or its start.
    pub(super) owner: super::yaml::Pos,
    pub(super) path: String,
}

impl<'n> Fields<'n> {
    pub(super) fn get(&self, key: &str) -> Option<&'n Node> {
        self.entry(key).map(|(_, v)| v)
    }

    pub(super) fn entry(&self, key: &str) -> Option<(&'n Node, &'n Node)> {
        self.entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(k, v)| (k, v))
    }

    pub(super) fn path(&self, key: &str) -> String {
        join(&self.path, key)
    }
}

pub(crate) struct Builder<'a> {
    pub(super) file: &'a Path,
}

impl<'a> Builder<'a> {
    pub(crate) fn new(file: &'a Path) -> Self {
        Builder { file }
    }

    pub(super) fn err(&self, at: super::yaml::Pos, message: impl Into<String>) -> SpecError {
        SpecError::Invalid {
            file: self.file.to_path_buf(),
            at: Some(at),
            message: message.into(),
            hint: None,
        }
    }

    pub(super) fn err_hint(
        &self,
        at: super::yaml::Pos,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> SpecError {
        SpecError::Invalid {
            file: self.file.to_path_buf(),
            at: Some(at),
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    pub(super) fn wrong_type(&self, node: &Node, expected: &str, path: &str) -> SpecError {
        let message = format!(
            "expected {expected} for `{path}`, found {}",
            node.describe()
        );
        match &node.kind {
            Kind::Number(_) | Kind::Bool(_) if expected.starts_with("a string") => {
                let text = node.scalar_text().unwrap_or_default();
                self.err_hint(
                    node.at,
                    message,
                    format!("quote it to make it a string: \"{text}\""),
                )
            }
            _ => self.err(node.at, message),
        }
    }

    /// A mapping whose keys are all among `allowed`.
    pub(super) fn fields<'n>(
        &self,
        node: &'n Node,
        owner: super::yaml::Pos,
        path: &str,
        noun: &str,
        allowed: &[&str],
    ) -> R<Fields<'n>> {
        let Kind::Map(entries) = &node.kind else {
            if path.is_empty() {
                return Err(self.err(
                    node.at,
                    format!(
                        "expected a mapping at the top of the spec, found {}",
                        node.describe()
                    ),
                ));
            }
            return Err(self.wrong_type(node, "a mapping", path));
        };
        for (k, _) in entries {
            let Some(key) = k.as_str() else {
                return Err(self.err(
                    k.at,
                    format!("expected a key name in {noun}, found {}", k.describe()),
                ));
            };
            if allowed.contains(&key) {
                continue;
            }
            let mut message = format!(
                "unknown key `{key}` in {noun}; expected one of: {}",
                one_of(allowed)
            );
            if let Some(hint) = belongs_under(noun, key) {
                return Err(self.err_hint(k.at, message, hint));
            }
            if let Some(near) = did_you_mean(key, allowed) {
                message.push_str(&format!(" (did you mean `{near}`?)"));
            }
            return Err(self.err(k.at, message));
        }
        Ok(Fields {
            entries,
            owner,
            path: path.to_owned(),
        })
    }

    pub(super) fn string(&self, node: &Node, path: &str) -> R<String> {
        node.as_str()
            .map(str::to_owned)
            .ok_or_else(|| self.wrong_type(node, "a string", path))
    }

    pub(super) fn non_empty_string(&self, node: &Node, path: &str) -> R<String> {
        let s = self.string(node, path)?;
        if s.trim().is_empty() {
            return Err(self.err(node.at, format!("`{path}` is empty")));
        }
        Ok(s)
    }

    pub(super) fn boolean(&self, node: &Node, path: &str) -> R<bool> {
        match node.kind {
            Kind::Bool(b) => Ok(b),
            _ => Err(self.wrong_type(node, "`true` or `false`", path)),
        }
    }

    pub(super) fn list<'n>(&self, node: &'n Node, path: &str, what: &str) -> R<&'n [Node]> {
        match &node.kind {
            Kind::Seq(items) => Ok(items),
            _ => Err(self.wrong_type(node, &format!("a list of {what}"), path)),
        }
    }

    pub(super) fn word<T: Copy>(&self, node: &Node, path: &str, choices: &[(&str, T)]) -> R<T> {
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        let expected = format!("one of {}", one_of(&names));
        let Some(s) = node.as_str() else {
            return Err(self.wrong_type(node, &expected, path));
        };
        if let Some((_, v)) = choices.iter().find(|(n, _)| *n == s) {
            return Ok(*v);
        }
        let mut message = format!("unknown value `{s}` for `{path}`; expected {expected}");
        if let Some(near) = did_you_mean(s, &names) {
            message.push_str(&format!(" (did you mean `{near}`?)"));
        }
        Err(self.err(node.at, message))
    }

    pub(super) fn duration(&self, node: &Node, path: &str) -> R<Duration> {
        let expected = "a duration like 30s, 2m or 1m30s";
        let Some(s) = node.as_str() else {
            let e = self.wrong_type(node, expected, path);
            return Err(match node.kind {
                Kind::Number(_) => self.err_hint(
                    node.at,
                    e_message(&e),
                    format!(
                        "add a unit: `{}s` for seconds",
                        node.scalar_text().unwrap_or_default()
                    ),
                ),
                _ => e,
            });
        };
        match humantime::parse_duration(s) {
            Ok(d) if d.is_zero() => {
                Err(self.err(node.at, format!("`{path}` must be longer than zero")))
            }
            Ok(d) => Ok(d),
            Err(e) => Err(self.err(
                node.at,
                format!("invalid duration `{s}` for `{path}`: {e}; expected {expected}"),
            )),
        }
    }

    pub(super) fn regex(&self, node: &Node, path: &str) -> R<Pattern> {
        let source = self.string(node, path)?;
        let regex = regex::Regex::new(&source).map_err(|e| {
            self.err(
                node.at,
                format!(
                    "invalid regex `{source}` in `{path}`: {}",
                    regex_message(&e)
                ),
            )
        })?;
        Ok(Pattern { source, regex })
    }

    /// A JSON pointer as `match` uses them: `/a/b`, with `*` for any key or index.
    pub(super) fn pointer(&self, node: &Node, path: &str) -> R<String> {
        let s = self.string(node, path)?;
        if !s.starts_with('/') {
            return Err(self.err_hint(
                node.at,
                format!("invalid JSON pointer `{s}` in `{path}`: it must start with `/`"),
                "write a path into the request body such as `/user` or `/messages/*/name`",
            ));
        }
        Ok(s)
    }

    /// A matcher expression, compiled: an invalid one is an error at the line and column
    /// of the part that is wrong.
    pub(super) fn matcher(&self, node: &Node, path: &str, kind: MatcherKind) -> R<Expr> {
        let value = node.to_json().map_err(|at| {
            self.err(
                at,
                format!("a key in `{path}` must be a string, number or boolean"),
            )
        })?;
        let compiled = match kind {
            MatcherKind::Args => Matcher::compile(&value),
            MatcherKind::Text => Matcher::compile_text(&value),
        };
        let problem = match compiled {
            Ok(matcher) => {
                return Ok(Expr {
                    source: value,
                    matcher,
                })
            }
            Err(problem) => problem,
        };
        let at = node.locate_entry(&problem.path);
        let mut full = path.to_owned();
        let mut cur = Some(node);
        for seg in &problem.path {
            full = match cur.map(|n| &n.kind) {
                Some(Kind::Seq(_)) => format!("{full}[{seg}]"),
                _ => join(&full, seg),
            };
            cur = cur.and_then(|n| n.child(seg));
        }
        let message = format!("invalid matcher in `{full}`: {}", problem.message);
        Err(match problem.hint {
            Some(h) => self.err_hint(at, message, h),
            None => self.err(at, message),
        })
    }

    /// Any value (mock results), as JSON.
    pub(super) fn json(&self, node: &Node, path: &str) -> R<Value> {
        node.to_json().map_err(|at| {
            self.err(
                at,
                format!("a key in `{path}` must be a string, number or boolean"),
            )
        })
    }

    /// `env:` — names to scalar values, with `${agentproxy.*}` placeholders checked.
    pub(super) fn env(&self, node: &Node, path: &str) -> R<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        if node.is_null() {
            return Ok(out);
        }
        let Kind::Map(entries) = &node.kind else {
            return Err(self.wrong_type(node, "a mapping of variable names to values", path));
        };
        for (k, v) in entries {
            let name = k.scalar_text().ok_or_else(|| {
                self.err(
                    k.at,
                    format!(
                        "expected a variable name in `{path}`, found {}",
                        k.describe()
                    ),
                )
            })?;
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(self.err(k.at, format!("invalid variable name `{name}` in `{path}`")));
            }
            let vpath = join(path, &name);
            let value = v.scalar_text().ok_or_else(|| {
                let e = self.wrong_type(v, "a string, number or boolean", &vpath);
                if v.is_null() {
                    self.err_hint(v.at, e_message(&e), "write `\"\"` for an empty value")
                } else {
                    e
                }
            })?;
            self.check_placeholders(&value, v, &vpath)?;
            out.insert(name, value);
        }
        Ok(out)
    }

    pub(super) fn check_placeholders(&self, value: &str, node: &Node, path: &str) -> R<()> {
        let mut rest = value;
        while let Some(start) = rest.find("${agentproxy.") {
            let after = &rest[start + "${agentproxy.".len()..];
            let Some(end) = after.find('}') else {
                return Err(self.err(node.at, format!("unclosed `${{agentproxy.` in `{path}`")));
            };
            let name = &after[..end];
            if !ENV_PLACEHOLDERS.contains(&name) {
                let mut message = format!(
                    "unknown placeholder `${{agentproxy.{name}}}` in `{path}`; expected `${{agentproxy.url}}` or `${{agentproxy.base}}`"
                );
                if let Some(near) = did_you_mean(name, ENV_PLACEHOLDERS) {
                    message.push_str(&format!(" (did you mean `${{agentproxy.{near}}}`?)"));
                }
                return Err(self.err(node.at, message));
            }
            rest = &after[end + 1..];
        }
        Ok(())
    }

    pub(super) fn unsigned(&self, node: &Node, path: &str) -> R<u64> {
        match &node.kind {
            Kind::Number(n) => n.as_u64().ok_or_else(|| {
                self.err(
                    node.at,
                    format!("`{path}` must be a whole number of at least 0, found {n}"),
                )
            }),
            _ => Err(self.wrong_type(node, "a whole number", path)),
        }
    }

    pub(super) fn positive(&self, node: &Node, path: &str) -> R<usize> {
        if !matches!(node.kind, Kind::Number(_)) {
            return Err(self.wrong_type(node, "a whole number", path));
        }
        match self.unsigned(node, path) {
            Ok(n @ 1..) => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => Err(self.err(
                node.at,
                format!(
                    "`{path}` must be a whole number of at least 1, found {}",
                    display_scalar(node)
                ),
            )),
        }
    }
}

pub(super) fn e_message(e: &SpecError) -> String {
    match e {
        SpecError::Invalid { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

pub(super) fn display_scalar(node: &Node) -> String {
    node.scalar_text()
        .unwrap_or_else(|| node.describe().to_owned())
}

/// The one-line reason of a regex error (the crate's message draws a caret diagram).
pub(super) fn regex_message(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map(str::to_owned)
        .unwrap_or_else(|| text.split_whitespace().collect::<Vec<_>>().join(" "))
}
