//! The `cases:` of a spec: cases, turns, expectations and call expressions.

use std::collections::{BTreeMap, HashMap};

use super::error::Errors;
use super::model::*;
use super::read::*;
use super::yaml::{Kind, Node, Pos};
use crate::fault::{CrashPoint, Fault};

impl Builder<'_> {
    // ---------------------------------------------------------------- cases

    pub(super) fn cases(&self, node: &Node, app: &App) -> R<Vec<Case>> {
        let items = self.list(node, "cases", "cases")?;
        if items.is_empty() {
            return Err(self.err_hint(
                node.at,
                "`cases` is empty",
                "add at least one `- name: ...` with `input: ...`",
            ));
        }
        let mut names: HashMap<String, u32> = HashMap::new();
        let mut slugs: HashMap<String, (String, u32)> = HashMap::new();
        let mut cases = Vec::with_capacity(items.len());
        let mut errors = Errors::default();
        for (i, item) in items.iter().enumerate() {
            let Some((case, name_at)) = errors.take(self.case(item, &index("cases", i), app))
            else {
                continue;
            };
            if let Some(line) = names.insert(case.name.clone(), name_at.line) {
                errors.push(self.err_hint(
                    name_at,
                    format!("duplicate case name `{}` (also at line {line})", case.name),
                    "each case records its own cassette, named after the case: make the names unique",
                ));
                continue;
            }
            if case.slug.is_empty() {
                errors.push(self.err_hint(
                    name_at,
                    format!(
                        "case name `{}` has no ASCII letter or digit to name its cassette file",
                        case.name
                    ),
                    "add a few letters or digits to the name",
                ));
                continue;
            }
            if let Some((other, line)) =
                slugs.insert(case.slug.clone(), (case.name.clone(), name_at.line))
            {
                errors.push(self.err_hint(
                    name_at,
                    format!(
                        "case `{}` would share the cassette file `{}.json` with case `{other}` (line {line})",
                        case.name, case.slug
                    ),
                    "cassette file names keep only letters and digits of the case name, lowercased: rename one of the cases",
                ));
                continue;
            }
            cases.push(case);
        }
        errors.into_result(cases)
    }

    /// The case and the position of its name (for duplicate reports).
    pub(super) fn case(&self, node: &Node, path: &str, app: &App) -> R<(Case, Pos)> {
        let f = self.fields(node, node.at, path, "case", CASE_KEYS)?;
        let Some(name_node) = f.get("name") else {
            return Err(self.err(f.owner, format!("`{path}` is missing `name`")));
        };
        let name = self.non_empty_string(name_node, &f.path("name"))?;
        let expect = match f.get("expect") {
            Some(e) => self.expect(e, &f.path("expect"))?,
            None => None,
        };
        let (turns, expect) = self.case_turns(&f, node, &name, app, expect)?;
        let env = match f.entry("env") {
            Some((k, _)) if matches!(app.target, Target::Url(_)) => {
                return Err(self.err_hint(
                    k.at,
                    format!("`{}` only applies to `command:` apps", f.path("env")),
                    "a `url:` app is already running: configure it where it is started",
                ))
            }
            Some((_, v)) => self.env(v, &f.path("env"))?,
            None => BTreeMap::new(),
        };
        let skip = match f.get("skip") {
            Some(s) => self.skip(s, &f.path("skip"))?,
            None => None,
        };
        let faults = match f.get("faults") {
            Some(n) => self.faults(n, &f.path("faults"))?,
            None => vec![],
        };
        let fuzz = match f.get("fuzz") {
            Some(n) => Some(self.fuzz(n, &f.path("fuzz"))?),
            None => None,
        };
        let crash = self.case_crash(&f, &name, app, fuzz.is_some())?;
        let exits = turns
            .iter()
            .filter_map(|t| t.expect.as_ref())
            .chain(&expect);
        if let Some(at) = exits.filter_map(|e| e.exit_at).next() {
            if matches!(app.target, Target::Url(_)) {
                return Err(self.err_hint(
                    at,
                    "`exit:` only applies to `command:` apps",
                    "a `url:` app is a running service: judge its answers with `output:`",
                ));
            }
        }
        let slug = super::slug(&name);
        Ok((
            Case {
                at: node.at,
                name,
                slug,
                turns,
                expect,
                env,
                skip,
                faults,
                fuzz,
                crash,
            },
            name_node.at,
        ))
    }

    /// A case's turns: one from `input` (with the case's `expect`), or its `turns`; the
    /// case-level `expect` that is left.
    fn case_turns(
        &self,
        f: &Fields,
        node: &Node,
        name: &str,
        app: &App,
        expect: Option<Expect>,
    ) -> R<(Vec<Turn>, Option<Expect>)> {
        match (f.entry("input"), f.entry("turns")) {
            (Some((ik, _)), Some((tk, _))) => Err(self.err_hint(
                ik.at.max(tk.at),
                format!("case `{name}` has both `input` and `turns`"),
                "use `input` for a single turn, or `turns: [{input: ...}, ...]` for several",
            )),
            (None, None) if matches!(app.target, Target::Url(_)) => Err(self.err_hint(
                f.owner,
                format!("case `{name}` has no `input` or `turns`"),
                "a `url:` app is driven by its input: add `input: ...` for a single turn, or `turns: [{input: ...}, ...]` for several",
            )),
            (input, None) => {
                let input = match input {
                    Some((_, node)) => Some(self.input(node, &f.path("input"))?),
                    // A program with its task built in: it runs once, stdin closed.
                    None => {
                        if let Target::Command(argv) = &app.target {
                            if argv.iter().any(|a| a.contains("{input}")) {
                                return Err(self.err_hint(
                                    f.owner,
                                    format!("case `{name}` has no `input`, but `app.command` uses `{{input}}`"),
                                    "add `input: ...` to the case, or take `{input}` out of the command",
                                ));
                            }
                        }
                        None
                    }
                };
                let turn = Turn {
                    at: node.at,
                    input,
                    expect,
                    faults: vec![],
                };
                Ok((vec![turn], None))
            }
            (None, Some((_, t))) => Ok((self.turns(t, &f.path("turns"))?, expect)),
        }
    }

    /// `skip:`: `true`, `false` or a reason.
    fn skip(&self, s: &Node, path: &str) -> R<Option<String>> {
        match &s.kind {
            Kind::Bool(true) => Ok(Some(String::new())),
            Kind::Bool(false) => Ok(None),
            Kind::Str(reason) => Ok(Some(reason.clone())),
            _ => Err(self.wrong_type(s, "`true`, `false` or a reason (a string)", path)),
        }
    }

    /// `crash:`, for a `command:` app and not beside `fuzz:`.
    fn case_crash(&self, f: &Fields, name: &str, app: &App, fuzz: bool) -> R<Option<Crash>> {
        match f.entry("crash") {
            Some((k, _)) if matches!(app.target, Target::Url(_)) => Err(self.err_hint(
                k.at,
                format!("`{}` only applies to `command:` apps", f.path("crash")),
                "a `url:` app is a running service that agentproxy cannot kill and start again",
            )),
            Some((k, _)) if fuzz => Err(self.err_hint(
                k.at,
                format!("case `{name}` has both `fuzz` and `crash`"),
                "test them in two cases (each with its own cassette)",
            )),
            Some((_, n)) => Ok(Some(self.crash(n, &f.path("crash"))?)),
            None => Ok(None),
        }
    }

    /// A tool both listed (under `keys.0`) and forbidden outright (under `keys.1`, without
    /// arguments): an expectation that can never hold.
    fn never_both(
        &self,
        f: &Fields,
        listed: Option<&[CallExpr]>,
        forbidden: &[CallExpr],
        keys: (&str, &str),
        what: &str,
    ) -> R<()> {
        let Some(listed) = listed else {
            return Ok(());
        };
        let both = (forbidden.iter())
            .find(|n| n.args.is_none() && listed.iter().any(|c| c.tool == n.tool));
        match both {
            None => Ok(()),
            Some(both) => Err(self.err_hint(
                both.at,
                format!(
                    "`{}` is both in `{}` and in `{}`: the expectation can never hold",
                    both.tool,
                    f.path(keys.0),
                    f.path(keys.1)
                ),
                format!(
                    "keep it in one of them; to forbid only some {what}, give `{}` arguments (`- tool: {{arg: value}}`)",
                    keys.1
                ),
            )),
        }
    }

    pub(super) fn input(&self, node: &Node, path: &str) -> R<String> {
        self.string(node, path)
    }

    pub(super) fn turns(&self, node: &Node, path: &str) -> R<Vec<Turn>> {
        let items = self.list(node, path, "turns")?;
        if items.is_empty() {
            return Err(self.err_hint(
                node.at,
                format!("`{path}` is empty"),
                "add at least one `- input: ...`",
            ));
        }
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let tpath = index(path, i);
                let f = self.fields(item, item.at, &tpath, "turn", TURN_KEYS)?;
                let Some(input) = f.get("input") else {
                    return Err(self.err(f.owner, format!("`{tpath}` is missing `input`")));
                };
                let expect = match f.get("expect") {
                    Some(e) => self.expect(e, &f.path("expect"))?,
                    None => None,
                };
                if let Some(exit) = expect.as_ref().and_then(|e| e.exit_at) {
                    return Err(self.err_hint(
                        exit,
                        format!(
                            "`{}` judges the whole run, not one turn",
                            f.path("expect.exit")
                        ),
                        "move `exit:` to the case's `expect:`, next to `turns:`",
                    ));
                }
                let faults = match f.get("faults") {
                    Some(n) => self.faults(n, &f.path("faults"))?,
                    None => vec![],
                };
                Ok(Turn {
                    at: item.at,
                    input: Some(self.input(input, &f.path("input"))?),
                    expect,
                    faults,
                })
            })
            .collect()
    }

    pub(super) fn expect(&self, node: &Node, path: &str) -> R<Option<Expect>> {
        if node.is_null() {
            return Ok(None);
        }
        let f = self.fields(node, node.at, path, "expect", EXPECT_KEYS)?;
        let calls = f
            .get("calls")
            .map(|n| self.calls(n, &f.path("calls")))
            .transpose()?;
        let orders: Vec<(&str, Order)> = Order::ALL.iter().map(|o| (o.as_str(), *o)).collect();
        let order = f
            .get("order")
            .map(|n| self.word(n, &f.path("order"), &orders))
            .transpose()?
            .unwrap_or_default();
        let strict = f
            .get("strict")
            .map(|n| self.boolean(n, &f.path("strict")))
            .transpose()?
            .unwrap_or(false);
        let mut allow = Vec::new();
        if let Some((k, n)) = f.entry("allow") {
            for (i, item) in self
                .list(n, &f.path("allow"), "tool names")?
                .iter()
                .enumerate()
            {
                allow.push(self.non_empty_string(item, &index(&f.path("allow"), i))?);
            }
            if !strict {
                return Err(self.err_hint(
                    k.at,
                    format!("`{}` has no effect without `strict: true`", f.path("allow")),
                    "add `strict: true` to forbid calls that are neither listed nor allowed",
                ));
            }
        }
        let never = f
            .get("never")
            .map(|n| self.calls(n, &f.path("never")))
            .transpose()?
            .unwrap_or_default();
        self.never_both(&f, calls.as_deref(), &never, ("calls", "never"), "calls")?;
        let executed = f
            .get("executed")
            .map(|n| self.calls(n, &f.path("executed")))
            .transpose()?;
        let not_executed = f
            .get("not_executed")
            .map(|n| self.calls(n, &f.path("not_executed")))
            .transpose()?
            .unwrap_or_default();
        let keys = ("executed", "not_executed");
        self.never_both(&f, executed.as_deref(), &not_executed, keys, "executions")?;
        let count = f
            .get("count")
            .map(|n| self.count(n, &f.path("count")))
            .transpose()?;
        let requests = f
            .get("requests")
            .map(|n| self.count(n, &f.path("requests")))
            .transpose()?;
        let exit = f
            .get("exit")
            .map(|n| self.exit(n, &f.path("exit")))
            .transpose()?;
        let reply = f
            .get("reply")
            .map(|n| self.matcher(n, &f.path("reply"), MatcherKind::Text))
            .transpose()?;
        let output = f
            .get("output")
            .map(|n| self.matcher(n, &f.path("output"), MatcherKind::Text))
            .transpose()?;
        Ok(Some(Expect {
            at: node.at,
            calls,
            order,
            strict,
            allow,
            never,
            executed,
            not_executed,
            count,
            requests,
            exit,
            exit_at: f.entry("exit").map(|(k, _)| k.at),
            reply,
            output,
        }))
    }

    fn exit(&self, node: &Node, path: &str) -> R<i32> {
        let n = self.unsigned(node, path)?;
        i32::try_from(n).ok().filter(|n| *n <= 255).ok_or_else(|| {
            self.err(
                node.at,
                format!("`{path}` must be an exit status, 0 to 255"),
            )
        })
    }

    /// `faults:` — a list of `{request, kind, times?, …}` (see [`crate::fault`]).
    pub(super) fn faults(&self, node: &Node, path: &str) -> R<Vec<Fault>> {
        let items = self.list(node, path, "faults (`{request: N, kind: KIND}`)")?;
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let ipath = index(path, i);
            let f = self.fields(item, item.at, &ipath, "fault", &crate::fault::KEYS)?;
            let mut draft = crate::fault::Draft::default();
            for (k, v) in f.entries {
                let key = k.as_str().unwrap_or_default();
                let Some(text) = v.scalar_text() else {
                    return Err(self.wrong_type(v, "a number, a word or a duration", &f.path(key)));
                };
                draft
                    .set(key, &text)
                    .map_err(|why| self.err(v.at, format!("`{}`: {why}", f.path(key))))?;
            }
            out.push(
                draft
                    .done()
                    .map_err(|why| self.err(item.at, format!("`{ipath}`: {why}")))?,
            );
        }
        Ok(out)
    }

    /// `fuzz:` — `{tool, valid?, invalid?, seed?, arguments?}`.
    pub(super) fn fuzz(&self, node: &Node, path: &str) -> R<Fuzz> {
        let f = self.fields(node, node.at, path, "fuzz", FUZZ_KEYS)?;
        let tool = match f.get("tool") {
            Some(t) => self.non_empty_string(t, &f.path("tool"))?,
            None => return Err(self.err_hint(
                f.owner,
                format!("`{path}` is missing `tool`"),
                "name the tool whose call gets generated arguments: `fuzz: {tool: send_email, valid: 16, invalid: 16}`",
            )),
        };
        let how_many = |key: &str| -> R<usize> {
            f.get(key).map_or(Ok(0), |n| {
                let n = self.unsigned(n, &f.path(key))?;
                Ok(usize::try_from(n).unwrap_or(usize::MAX))
            })
        };
        let (valid, invalid) = (how_many("valid")?, how_many("invalid")?);
        let seed = match f.get("seed") {
            Some(n) => self.unsigned(n, &f.path("seed"))?,
            None => 1,
        };
        let mut arguments = Vec::new();
        if let Some(list) = f.get("arguments") {
            let apath = f.path("arguments");
            for (i, item) in self
                .list(list, &apath, "argument mappings")?
                .iter()
                .enumerate()
            {
                let ipath = index(&apath, i);
                let value = self.json(item, &ipath)?;
                if !value.is_object() {
                    return Err(self.wrong_type(item, "a mapping of arguments", &ipath));
                }
                arguments.push(value);
            }
        }
        let runs = valid
            .saturating_add(invalid)
            .saturating_add(arguments.len());
        if runs == 0 {
            return Err(self.err_hint(
                f.owner,
                format!("`{path}` asks for no run"),
                "give `valid:` or `invalid:` (how many runs of each), or `arguments:`",
            ));
        }
        if runs > Fuzz::MAX_RUNS {
            return Err(self.err(
                f.owner,
                format!(
                    "`{path}` asks for {runs} runs; at most {} are allowed",
                    Fuzz::MAX_RUNS
                ),
            ));
        }
        Ok(Fuzz {
            at: node.at,
            tool,
            valid,
            invalid,
            seed,
            arguments,
        })
    }

    /// `crash:` — `{after: {executed: TOOL} | {request: N}}`.
    pub(super) fn crash(&self, node: &Node, path: &str) -> R<Crash> {
        const EXAMPLE: &str =
            "write `crash: {after: {executed: send_email}}` or `crash: {after: {request: 2}}`";
        let f = self.fields(node, node.at, path, "crash", CRASH_KEYS)?;
        let Some(after) = f.get("after") else {
            return Err(self.err_hint(f.owner, format!("`{path}` is missing `after`"), EXAMPLE));
        };
        let apath = f.path("after");
        let a = self.fields(after, after.at, &apath, "crash.after", CRASH_POINT_KEYS)?;
        let point = match (a.get("executed"), a.get("request")) {
            (Some(tool), None) => {
                CrashPoint::Executed(self.non_empty_string(tool, &a.path("executed"))?)
            }
            (None, Some(n)) => CrashPoint::Request(self.positive(n, &a.path("request"))?),
            (Some(_), Some(_)) => {
                return Err(self.err_hint(
                    after.at,
                    format!("`{apath}` has both `executed` and `request`"),
                    "a crash has one point: keep one of them",
                ))
            }
            (None, None) => {
                return Err(self.err_hint(after.at, format!("`{apath}` names no point"), EXAMPLE))
            }
        };
        Ok(Crash {
            at: node.at,
            after: point,
        })
    }

    pub(super) fn calls(&self, node: &Node, path: &str) -> R<Vec<CallExpr>> {
        let items = self.list(node, path, "calls (tool names, or `{tool: arguments}`)")?;
        items
            .iter()
            .enumerate()
            .map(|(i, n)| self.call(n, &index(path, i)))
            .collect()
    }

    pub(super) fn call(&self, node: &Node, path: &str) -> R<CallExpr> {
        match &node.kind {
            Kind::Str(tool) if !tool.is_empty() => Ok(CallExpr {
                at: node.at,
                tool: tool.clone(),
                args: None,
            }),
            Kind::Map(entries) if entries.len() == 1 => {
                let (k, v) = &entries[0];
                let Some(tool) = k.as_str().filter(|s| !s.is_empty()) else {
                    return Err(self.err(
                        k.at,
                        format!("expected a tool name in `{path}`, found {}", k.describe()),
                    ));
                };
                let args = if v.is_null() {
                    None
                } else {
                    Some(self.matcher(v, &join(path, tool), MatcherKind::Args)?)
                };
                Ok(CallExpr {
                    at: node.at,
                    tool: tool.to_owned(),
                    args,
                })
            }
            Kind::Map(entries) if entries.len() > 1 => {
                let keys: Vec<String> = entries
                    .iter()
                    .map(|(k, _)| format!("`{}`", k.scalar_text().unwrap_or_default()))
                    .collect();
                Err(self.err_hint(
                    entries[1].0.at,
                    format!("`{path}` has {} keys ({}); a call is one tool name with its arguments", keys.len(), keys.join(", ")),
                    "write each call as its own list item, and all of one call's arguments in one mapping: `- get_weather: {city: Paris, unit: c}`",
                ))
            }
            _ => Err(self.wrong_type(node, "a tool name or `{tool: arguments}`", path)),
        }
    }

    pub(super) fn count(&self, node: &Node, path: &str) -> R<Count> {
        match &node.kind {
            Kind::Number(_) => {
                let n = self.unsigned(node, path)?;
                Ok(Count {
                    min: Some(n),
                    max: Some(n),
                })
            }
            Kind::Map(_) => {
                let f = self.fields(node, node.at, path, "count", COUNT_KEYS)?;
                let min = f
                    .get("min")
                    .map(|n| self.unsigned(n, &f.path("min")))
                    .transpose()?;
                let max = f
                    .get("max")
                    .map(|n| self.unsigned(n, &f.path("max")))
                    .transpose()?;
                match (min, max) {
                    (None, None) => {
                        Err(self.err(node.at, format!("`{path}` needs `min`, `max` or both")))
                    }
                    (Some(lo), Some(hi)) if lo > hi => Err(self.err(
                        node.at,
                        format!("`{path}` has `min` {lo} greater than `max` {hi}"),
                    )),
                    _ => Ok(Count { min, max }),
                }
            }
            _ => Err(self.wrong_type(node, "a number or `{min, max}`", path)),
        }
    }
}
