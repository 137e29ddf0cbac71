//! The top of a spec: `app`, `match`, `tools` and `execution`, read from the node tree.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::error::Errors;
use super::model::*;
use super::read::*;
use super::yaml::{Kind, Node, Pos};
use crate::cassette::format::{Hole, MatchRules};
use crate::matching::index::Repeat;

/// A section of the spec read by `read` when it is there (empty when not), its error kept
/// in `errors` (and the section empty).
fn section<T: Default>(
    errors: &mut Errors,
    node: Option<&Node>,
    read: impl FnOnce(&Node) -> R<T>,
) -> T {
    node.map(|n| errors.take(read(n)).unwrap_or_default())
        .unwrap_or_default()
}

impl Builder<'_> {
    // ---------------------------------------------------------------- the spec

    pub(crate) fn spec(&self, root: &Node) -> R<Spec> {
        if root.is_null() {
            return Err(self.err_hint(
                root.at,
                "the spec is empty",
                "a spec is a mapping with at least `app:` and `cases:`",
            ));
        }
        let top = self.fields(root, root.at, "", "the spec", TOP_KEYS)?;
        if let Some(v) = top.get("version") {
            self.version(v)?;
        }
        let name = self.name(top.get("name"))?;
        let dir = spec_dir(self.file);
        // The sections are read apart, so a run reports every one that is wrong.
        let mut errors = Errors::default();
        let app = match top.entry("app") {
            Some((app_key, app_node)) => errors.take(self.app(app_node, app_key.at, dir)),
            None => {
                errors.push(self.err_hint(
                    root.at,
                    "the spec has no `app:`",
                    "add `app: {command: ...}` to start a program, or `app: {url: ...}` to drive a running service",
                ));
                None
            }
        };
        let cassettes = errors
            .take(
                top.get("cassettes")
                    .map(|n| self.non_empty_string(n, "cassettes").map(|s| dir.join(s)))
                    .transpose(),
            )
            .flatten();
        let (match_rules, repeat) = match top.entry("match") {
            Some((k, v)) if !v.is_null() => errors.take(self.match_block(v, k.at)),
            _ => None,
        }
        .unwrap_or((MatchRules::default(), Repeat::None));
        let tools = section(&mut errors, top.get("tools"), |n| self.tools(n));
        let mcp = section(&mut errors, top.get("mcp"), |n| self.mcp_servers(n));
        let a2a = section(&mut errors, top.get("a2a"), |n| self.a2a_agents(n));
        let agents = section(&mut errors, top.get("agents"), |n| self.agents(n));
        let execution = match top.entry("execution") {
            Some((k, v)) if !v.is_null() => errors.take(self.execution(v, k.at, dir)),
            _ => None,
        }
        .unwrap_or_default();
        let egress = match top.entry("egress") {
            Some((k, v)) if !v.is_null() => errors.take(self.egress(v, k.at)),
            _ => None,
        }
        .unwrap_or_default();
        let cases = match (top.get("cases"), &app) {
            (None, _) => {
                errors.push(self.err_hint(
                    root.at,
                    "the spec has no `cases:`",
                    "add `cases:` with at least one `- name: ...` and `input: ...`",
                ));
                None
            }
            (Some(cases_node), Some(app)) => errors.take(self.cases(cases_node, app)),
            // Without a valid app, the cases are still checked, against a command app
            // (the only app-dependent checks are for `url:` apps and `{input}`).
            (Some(cases_node), None) => {
                let _ = errors.take(self.cases(cases_node, &placeholder_app()));
                None
            }
        };
        // Each `None` above kept its error, so `errors` is not empty then.
        match (app, cases) {
            (Some(app), Some(cases)) => errors.into_result(Spec {
                file: self.file.to_path_buf(),
                name,
                app,
                cassettes,
                match_rules,
                repeat,
                tools,
                mcp,
                a2a,
                agents,
                execution,
                egress,
                cases,
            }),
            _ => errors
                .into_result(())
                .and(Err(self.err(root.at, "the spec could not be read"))),
        }
    }

    /// `name:`, or the file's name without its extension.
    fn name(&self, node: Option<&Node>) -> R<String> {
        match node {
            Some(n) => self.non_empty_string(n, "name"),
            None => Ok((self.file.file_stem())
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()),
        }
    }

    /// `version:`, which must be the one this agentproxy reads.
    fn version(&self, v: &Node) -> R<()> {
        let write = format!("write `version: {SPEC_VERSION}`");
        match &v.kind {
            Kind::Number(n) if n.as_u64() == Some(u64::from(SPEC_VERSION)) => Ok(()),
            // Whole numbers past u64 too (`99999999999999999999`).
            Kind::Number(n)
                if n.as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f > f64::from(SPEC_VERSION)) =>
            {
                let why = format!(
                    "spec version {n} is newer than this agentproxy reads ({SPEC_VERSION})"
                );
                Err(self.err_hint(v.at, why, "upgrade agentproxy"))
            }
            Kind::Str(s) => Err(self.err_hint(
                v.at,
                format!("the spec version is the string \"{s}\"; it is a number"),
                format!("{write}, without quotes"),
            )),
            _ => Err(self.err_hint(
                v.at,
                format!(
                    "unknown spec version {}; this agentproxy reads version {SPEC_VERSION}",
                    display_scalar(v)
                ),
                write,
            )),
        }
    }

    pub(super) fn app(&self, node: &Node, owner: Pos, dir: &Path) -> R<App> {
        if let Kind::Str(s) = &node.kind {
            return Err(self.err_hint(
                node.at,
                format!("expected a mapping for `app`, found {}", node.describe()),
                format!("to start a program for each case, write `app: {{command: {s}}}`"),
            ));
        }
        let f = self.fields(node, owner, "app", "app", APP_KEYS)?;
        let target = match (f.entry("command"), f.entry("url")) {
            (Some((ck, _)), Some((uk, _))) => {
                let later = if uk.at > ck.at { uk.at } else { ck.at };
                return Err(self.err_hint(
                    later,
                    "`app` has both `command` and `url`; it needs exactly one",
                    "`command` starts the program for each case; `url` drives a service that is already running",
                ));
            }
            (None, None) => {
                return Err(self.err_hint(
                    f.owner,
                    "`app` needs `command` or `url`",
                    "`command: python app.py` starts the program for each case; `url: http://127.0.0.1:8080/chat` drives a running service",
                ))
            }
            (Some((_, c)), None) => Target::Command(self.command(c)?),
            (None, Some((_, u))) => Target::Url(self.url(u)?),
        };
        let is_url = matches!(target, Target::Url(_));
        for key in ["env", "reply_until", "cwd"] {
            if let (true, Some((k, _))) = (is_url, f.entry(key)) {
                return Err(self.err_hint(
                    k.at,
                    format!("`app.{key}` only applies to `command:` apps"),
                    "a `url:` app is already running: configure it where it is started",
                ));
            }
        }
        let env = match f.get("env") {
            Some(n) => self.env(n, "app.env")?,
            None => BTreeMap::new(),
        };
        let timeout = f
            .get("timeout")
            .map(|n| self.duration(n, "app.timeout"))
            .transpose()?;
        let reply_until = f
            .get("reply_until")
            .map(|n| self.regex(n, "app.reply_until"))
            .transpose()?;
        let cwd = match f.get("cwd") {
            Some(n) => dir.join(self.non_empty_string(n, "app.cwd")?),
            None => dir.to_path_buf(),
        };
        Ok(App {
            target,
            env,
            timeout,
            reply_until,
            cwd,
        })
    }

    pub(super) fn command(&self, node: &Node) -> R<Vec<String>> {
        let argv = match &node.kind {
            Kind::Str(s) => shell_words::split(s).map_err(|e| {
                self.err_hint(
                    node.at,
                    format!("cannot split `app.command` into arguments: {e}"),
                    "check the quotes, or write the command as a list: [python, app.py]",
                )
            })?,
            Kind::Seq(items) => items
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    n.scalar_text()
                        .ok_or_else(|| self.wrong_type(n, "a string", &index("app.command", i)))
                })
                .collect::<R<Vec<_>>>()?,
            _ => return Err(self.wrong_type(node, "a string or a list of strings", "app.command")),
        };
        if argv.first().is_none_or(|p| p.is_empty()) {
            return Err(self.err(node.at, "`app.command` is empty"));
        }
        Ok(argv)
    }

    pub(super) fn url(&self, node: &Node) -> R<String> {
        let s = self.string(node, "app.url")?;
        let ok = s.parse::<http::Uri>().ok().is_some_and(|u| {
            matches!(u.scheme_str(), Some("http" | "https")) && u.authority().is_some()
        });
        if !ok {
            return Err(self.err_hint(
                node.at,
                format!("invalid URL `{s}` for `app.url`"),
                "write an http:// or https:// URL such as http://127.0.0.1:8080/chat",
            ));
        }
        Ok(s)
    }

    pub(super) fn match_block(&self, node: &Node, owner: Pos) -> R<(MatchRules, Repeat)> {
        let f = self.fields(node, owner, "match", "match", MATCH_KEYS)?;
        let mut rules = MatchRules::default();
        if let Some(n) = f.get("ignore") {
            for (i, p) in self
                .list(n, "match.ignore", "JSON pointers")?
                .iter()
                .enumerate()
            {
                rules
                    .ignore
                    .push(self.pointer(p, &index("match.ignore", i))?);
            }
        }
        if let Some(n) = f.get("holes") {
            let mut seen: HashMap<String, u32> = HashMap::new();
            for (i, h) in self.list(n, "match.holes", "holes")?.iter().enumerate() {
                let path = index("match.holes", i);
                let hole = self.hole(h, &path)?;
                let name_at = h.child("name").map_or(h.at, |n| n.at);
                if let Some(line) = seen.insert(hole.name.clone(), name_at.line) {
                    return Err(self.err(
                        name_at,
                        format!("duplicate hole name `{}` (also at line {line})", hole.name),
                    ));
                }
                rules.holes.push(hole);
            }
        }
        let repeat = match f.get("repeat") {
            Some(n) => self.word(
                n,
                "match.repeat",
                &[("none", Repeat::None), ("last", Repeat::Last)],
            )?,
            None => Repeat::None,
        };
        Ok((rules, repeat))
    }

    pub(super) fn hole(&self, node: &Node, path: &str) -> R<Hole> {
        let f = self.fields(node, node.at, path, "hole", HOLE_KEYS)?;
        let (Some(name_node), Some(regex_node)) = (f.get("name"), f.get("regex")) else {
            let missing = if f.get("name").is_none() {
                "name"
            } else {
                "regex"
            };
            return Err(self.err_hint(
                f.owner,
                format!("`{path}` is missing `{missing}`"),
                r"a hole is `{name: today, regex: '\d{4}-\d{2}-\d{2}'}`, optionally with `in: /pointer`",
            ));
        };
        let name = self.string(name_node, &f.path("name"))?;
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(self.err(
                name_node.at,
                format!("invalid hole name `{name}`: use letters, digits, `_` or `-`"),
            ));
        }
        // Kept as written: a cassette stores its match rules as text.
        let regex = self.regex(regex_node, &f.path("regex"))?.source;
        let within = f
            .get("in")
            .map(|n| self.pointer(n, &f.path("in")))
            .transpose()?;
        Ok(Hole {
            name,
            regex,
            within,
        })
    }

    /// `mcp:`: server names (as `--mcp NAME=URL` takes them) to http(s) URLs.
    pub(super) fn mcp_servers(&self, node: &Node) -> R<BTreeMap<String, String>> {
        self.named_urls(node, ("mcp", "MCP server"), crate::dialect::mcp::url_var)
    }

    /// `a2a:`: agent names (as `--a2a NAME=URL` takes them) to their base URLs.
    pub(super) fn a2a_agents(&self, node: &Node) -> R<BTreeMap<String, String>> {
        self.named_urls(node, ("a2a", "agent"), crate::dialect::a2a::url_var)
    }

    /// A mapping of names (each given to the program as `var` makes it) to http(s) URLs,
    /// under `key`, of `what`s.
    fn named_urls(
        &self,
        node: &Node,
        (key, what): (&str, &str),
        var: fn(&str) -> String,
    ) -> R<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        if node.is_null() {
            return Ok(out);
        }
        let Kind::Map(entries) = &node.kind else {
            return Err(self.wrong_type(node, &format!("a mapping of {what} names to URLs"), key));
        };
        for (k, v) in entries {
            let name = k.as_str().unwrap_or_default();
            if !crate::dialect::mcp::is_server_name(name) {
                return Err(self.err(
                    k.at,
                    format!(
                        "`{name}` is not an {what} name in `{key}` (letters, digits, `-` and `_`)"
                    ),
                ));
            }
            let path = join(key, name);
            let url = self.non_empty_string(v, &path)?;
            if let Err(why) = crate::dialect::mcp::check_server_url(&url) {
                return Err(self.err(v.at, format!("`{path}`: {why}")));
            }
            let with: Vec<String> = out.keys().cloned().chain([name.to_owned()]).collect();
            if let Some((other, _, var)) = crate::dialect::mcp::var_clash_by(&with, var) {
                return Err(self.err_hint(
                    k.at,
                    format!("{what}s `{other}` and `{name}` in `{key}` would both be given as ${var}"),
                    "rename one of them (`-` and `_` are the same in a variable name, and case does not count)",
                ));
            }
            out.insert(name.to_owned(), url);
        }
        Ok(out)
    }

    /// `agents:`: mocks of remote agents by name: a tool mock's forms, where a call's
    /// arguments are `{message: text}`, or the reply itself (`{reply, state, artifacts}` or
    /// `{error}`) for every delegation.
    pub(super) fn agents(&self, node: &Node) -> R<BTreeMap<String, ToolMock>> {
        let mut out = BTreeMap::new();
        if node.is_null() {
            return Ok(out);
        }
        let Kind::Map(entries) = &node.kind else {
            return Err(self.wrong_type(node, "a mapping of agent names to mocks", "agents"));
        };
        for (k, v) in entries {
            let name = k.as_str().unwrap_or_default();
            if !crate::dialect::a2a::is_agent_name(name) {
                return Err(self.err(
                    k.at,
                    format!(
                        "`{name}` is not an agent name in `agents` (letters, digits, `-` and `_`)"
                    ),
                ));
            }
            let path = join("agents", name);
            let keys = crate::dialect::a2a::MOCK_KEYS;
            let reply =
                matches!(&v.kind, Kind::Map(_)) && keys.iter().any(|key| v.child(key).is_some());
            let kind = match reply {
                true => MockKind::Fixed(self.json(v, &path)?),
                false => self.mock(v, k.at, &path, name)?,
            };
            let results: Vec<&serde_json::Value> = match &kind {
                MockKind::Fixed(r) => vec![r],
                MockKind::Sequence(rs) => rs.iter().collect(),
                MockKind::Rules(rules) => rules.iter().map(|r| &r.result).collect(),
            };
            if let Some(why) = results
                .into_iter()
                .find_map(|r| crate::dialect::a2a::check_mock(r).err())
            {
                return Err(self.err(v.at, format!("`{path}`: {why}")));
            }
            out.insert(name.to_owned(), ToolMock { at: k.at, kind });
        }
        Ok(out)
    }

    pub(super) fn tools(&self, node: &Node) -> R<BTreeMap<String, ToolMock>> {
        let mut out = BTreeMap::new();
        if node.is_null() {
            return Ok(out);
        }
        let Kind::Map(entries) = &node.kind else {
            return Err(self.wrong_type(node, "a mapping of tool names to mocks", "tools"));
        };
        for (k, v) in entries {
            let Some(name) = k.as_str().filter(|s| !s.is_empty()) else {
                return Err(self.err(
                    k.at,
                    format!("expected a tool name in `tools`, found {}", k.describe()),
                ));
            };
            let path = join("tools", name);
            let kind = self.mock(v, k.at, &path, name)?;
            out.insert(name.to_owned(), ToolMock { at: k.at, kind });
        }
        Ok(out)
    }

    pub(super) fn mock(&self, node: &Node, owner: Pos, path: &str, tool: &str) -> R<MockKind> {
        match &node.kind {
            Kind::Seq(items) => {
                if items.is_empty() {
                    return Err(self.err(node.at, format!("`{path}` has no rules")));
                }
                let mut rules: Vec<MockRule> = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    if let Some(prev) = rules.last().filter(|r| r.when.is_none()) {
                        return Err(self.err_hint(
                            item.at,
                            format!(
                                "this rule of `{path}` can never match: the rule at line {} has no `when` and answers every call",
                                prev.at.line
                            ),
                            "the fallback rule (the one without `when`) must be the last",
                        ));
                    }
                    rules.push(self.rule(item, &index(path, i))?);
                }
                Ok(MockKind::Rules(rules))
            }
            Kind::Map(_) => {
                let f = self.fields(node, owner, path, "mock", MOCK_KEYS)?;
                match (f.get("result"), f.entry("results")) {
                    (Some(_), Some((k, _))) => Err(self.err(
                        k.at,
                        format!("`{path}` has both `result` and `results`; use one"),
                    )),
                    (Some(r), None) => Ok(MockKind::Fixed(self.json(r, &f.path("result"))?)),
                    (None, Some((_, rs))) => {
                        let items = self.list(rs, &f.path("results"), "results, one per call")?;
                        if items.is_empty() {
                            return Err(self.err(rs.at, format!("`{}` is empty", f.path("results"))));
                        }
                        let values = items
                            .iter()
                            .enumerate()
                            .map(|(i, n)| self.json(n, &index(&f.path("results"), i)))
                            .collect::<R<_>>()?;
                        Ok(MockKind::Sequence(values))
                    }
                    (None, None) => Err(self.err_hint(
                        f.owner,
                        format!("`{path}` needs `result` or `results`"),
                        "`result: ...` answers every call; `results: [...]` answers one call each, in order",
                    )),
                }
            }
            _ => Err(self.err_hint(
                node.at,
                format!(
                    "expected a list of rules or a mapping with `result` or `results` for `{path}`, found {}",
                    node.describe()
                ),
                format!("to answer every call the same way, write `{tool}: {{result: ...}}`"),
            )),
        }
    }

    pub(super) fn rule(&self, node: &Node, path: &str) -> R<MockRule> {
        let f = self.fields(node, node.at, path, "mock rule", RULE_KEYS)?;
        let when = match f.get("when") {
            Some(w) if w.is_null() => {
                return Err(self.err_hint(
                    w.at,
                    format!("`{}` is empty", f.path("when")),
                    "remove `when:` to make this rule the fallback",
                ))
            }
            Some(w) => Some(self.matcher(w, &f.path("when"), MatcherKind::Args)?),
            None => None,
        };
        let Some(result) = f.get("result") else {
            return Err(self.err(f.owner, format!("`{path}` is missing `result`")));
        };
        Ok(MockRule {
            at: node.at,
            when,
            result: self.json(result, &f.path("result"))?,
        })
    }

    pub(super) fn execution(&self, node: &Node, owner: Pos, dir: &Path) -> R<Execution> {
        let f = self.fields(node, owner, "execution", "execution", EXECUTION_KEYS)?;
        let modes: Vec<(&str, Mode)> = Mode::ALL.iter().map(|m| (m.as_str(), *m)).collect();
        let levels: Vec<(&str, Verbosity)> =
            Verbosity::ALL.iter().map(|v| (v.as_str(), *v)).collect();
        Ok(Execution {
            mode: f
                .get("mode")
                .map(|n| self.word(n, "execution.mode", &modes))
                .transpose()?,
            parallel: f
                .get("parallel")
                .map(|n| self.positive(n, "execution.parallel"))
                .transpose()?,
            timeout: f
                .get("timeout")
                .map(|n| self.duration(n, "execution.timeout"))
                .transpose()?,
            verbosity: f
                .get("verbosity")
                .map(|n| self.word(n, "execution.verbosity", &levels))
                .transpose()?,
            max_age: f
                .get("max_age")
                .map(|n| self.duration(n, "execution.max_age"))
                .transpose()?,
            replay_timing: f
                .get("replay_timing")
                .map(|n| {
                    let timings = [("instant", false), ("recorded", true)];
                    self.word(n, "execution.replay_timing", &timings)
                })
                .transpose()?,
            reports: match f.entry("reports") {
                Some((k, v)) => self.reports(v, k.at, dir)?,
                None => Vec::new(),
            },
        })
    }

    fn egress(&self, node: &Node, owner: Pos) -> R<Egress> {
        let f = self.fields(node, owner, "egress", "`egress`", EGRESS_KEYS)?;
        let mut allow = Vec::new();
        if let Some(list) = f.get("allow") {
            for (i, n) in self
                .list(list, "egress.allow", "host patterns")?
                .iter()
                .enumerate()
            {
                let path = index("egress.allow", i);
                let text = self.non_empty_string(n, &path)?;
                allow.push(
                    HostPattern::parse(&text)
                        .map_err(|e| self.err(n.at, format!("`{path}`: {e}")))?,
                );
            }
        }
        let levels: Vec<(&str, Require)> = Require::ALL.iter().map(|r| (r.as_str(), *r)).collect();
        Ok(Egress {
            allow,
            record: match f.get("record") {
                Some(n) => self.boolean(n, "egress.record")?,
                None => false,
            },
            require: f
                .get("require")
                .map(|n| self.word(n, "egress.require", &levels))
                .transpose()?,
        })
    }

    /// `execution.reports`: each format once, its file relative to the spec's directory.
    fn reports(&self, node: &Node, owner: Pos, dir: &Path) -> R<Vec<(ReportFormat, PathBuf)>> {
        let names = ReportFormat::ALL.map(ReportFormat::as_str);
        let f = self.fields(
            node,
            owner,
            "execution.reports",
            "`execution.reports`",
            &names,
        )?;
        let mut out = Vec::new();
        for format in ReportFormat::ALL {
            if let Some(v) = f.get(format.as_str()) {
                let file = self.non_empty_string(v, &f.path(format.as_str()))?;
                out.push((format, dir.join(file)));
            }
        }
        Ok(out)
    }
}

/// The app cases are checked against when the spec's own `app:` is invalid.
fn placeholder_app() -> App {
    App {
        target: Target::Command(vec![]),
        env: BTreeMap::new(),
        timeout: None,
        reply_until: None,
        cwd: std::path::PathBuf::new(),
    }
}
