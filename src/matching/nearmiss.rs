//! The near-miss report: when a replayed request has no recording, find the nearest recorded
//! request and explain the difference, envelope first (model, messages, roles, tools), then
//! the first differing JSON path with a text diff of that value.

use std::fmt::Write as _;

use serde_json::Value;

use super::sketch::Sketch;
use crate::dialect::Route;

/// A recorded request the miss is compared against.
pub struct Candidate<'a> {
    /// Position in the cassette.
    pub pos: usize,
    pub route: &'a str,
    /// The normalized recorded body (what its key was computed from).
    pub body: &'a Value,
}

/// How many recordings, the nearest by sketch, a miss measures exactly.
pub const SHORTLIST: usize = 8;

/// The recordings worth measuring for a miss on `route` whose sketch is `now`, from each
/// recording's route and sketch (in cassette order): among those [`comparable`], the
/// [`SHORTLIST`] nearest by sketch, earliest first on a tie; their positions, nearest
/// first.
pub fn shortlist(route: &str, now: &Sketch, recorded: &[(&str, Option<&Sketch>)]) -> Vec<usize> {
    let same_route = recorded.iter().any(|(r, _)| *r == route);
    let mut ranked: Vec<(usize, usize)> = (recorded.iter().enumerate())
        .filter(|(_, (r, _))| comparable(route, r, same_route))
        .map(|(pos, (_, s))| (s.map_or(usize::MAX, |s| s.distance(now)), pos))
        .collect();
    if ranked.len() > SHORTLIST {
        ranked.select_nth_unstable(SHORTLIST - 1);
        ranked.truncate(SHORTLIST);
    }
    ranked.sort_unstable();
    ranked.into_iter().map(|(_, pos)| pos).collect()
}

/// Which recorded request is nearest: fewest differing leaves among those
/// [`comparable`], earliest on a tie.
pub fn nearest(route: &str, body: &Value, candidates: &[Candidate<'_>]) -> Option<usize> {
    let same_route = candidates.iter().any(|c| c.route == route);
    candidates
        .iter()
        .filter(|c| comparable(route, c.route, same_route))
        .map(|c| (distance(body, c.body, DISTANCE_CAP), c.pos))
        .min()
        .map(|(_, pos)| pos)
}

/// Whether a recording on route `recorded` is compared with a miss on `route`: those on
/// its own route when the cassette has any (`same_route`); else any model route for a
/// model request (a program moved from chat completions to Responses), but never plain
/// HTTP beside a model call, either way: their bodies have nothing to compare.
fn comparable(route: &str, recorded: &str, same_route: bool) -> bool {
    let http = Route::Http.name();
    recorded == route || (!same_route && route != http && recorded != http)
}

/// Stop counting differences past this: the nearest candidate is rarely that far, and a
/// capped count keeps a miss against a large cassette cheap.
const DISTANCE_CAP: usize = 10_000;

/// Number of differing leaves between two values, up to `cap`.
fn distance(a: &Value, b: &Value, cap: usize) -> usize {
    fn walk(a: &Value, b: &Value, acc: &mut usize, cap: usize) {
        if *acc >= cap {
            return;
        }
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for (k, va) in x {
                    match y.get(k) {
                        Some(vb) => walk(va, vb, acc, cap),
                        None => *acc += 1,
                    }
                }
                *acc += y.keys().filter(|k| !x.contains_key(*k)).count();
            }
            (Value::Array(x), Value::Array(y)) => {
                for (va, vb) in x.iter().zip(y) {
                    walk(va, vb, acc, cap);
                }
                *acc += x.len().abs_diff(y.len());
            }
            _ if a == b => {}
            _ => *acc += 1,
        }
    }
    let mut acc = 0;
    walk(a, b, &mut acc, cap);
    acc
}

/// The first path (JSON pointer) where two values differ, with the value on each side
/// (`None` where absent). `None` when they are equal.
pub fn first_difference<'a>(
    recorded: &'a Value,
    now: &'a Value,
) -> Option<(String, Option<&'a Value>, Option<&'a Value>)> {
    fn walk<'a>(
        a: &'a Value,
        b: &'a Value,
        path: &mut String,
    ) -> Option<(String, Option<&'a Value>, Option<&'a Value>)> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                // Both maps iterate sorted, so walking the union in order finds the first key.
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    let found = match (x.get(k), y.get(k)) {
                        (Some(va), Some(vb)) => walk(va, vb, path),
                        (va, vb) => Some((path.clone(), va, vb)),
                    };
                    if found.is_some() {
                        return found;
                    }
                    path.truncate(len);
                }
                None
            }
            (Value::Array(x), Value::Array(y)) => {
                for i in 0..x.len().max(y.len()) {
                    let len = path.len();
                    let _ = write!(path, "/{i}");
                    let found = match (x.get(i), y.get(i)) {
                        (Some(va), Some(vb)) => walk(va, vb, path),
                        (va, vb) => Some((path.clone(), va, vb)),
                    };
                    if found.is_some() {
                        return found;
                    }
                    path.truncate(len);
                }
                None
            }
            _ if a == b => None,
            _ => Some((path.clone(), Some(a), Some(b))),
        }
    }
    walk(recorded, now, &mut String::new())
}

/// A miss beside its nearest recording, for a report that shows the two side by side.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NearMiss {
    /// The position of the miss among the session's misses.
    pub miss: usize,
    /// The nearest recording's position in the cassette.
    pub interaction: usize,
    /// The first JSON pointer where they differ (`""`: the whole body).
    pub path: String,
    /// The nearest recorded request, normalized.
    pub recorded: Value,
    /// The request that missed, normalized.
    pub now: Value,
}

impl NearMiss {
    /// The near miss of `now` against its nearest recording, if the two differ.
    pub fn of(miss: usize, (interaction, recorded): (usize, Value), now: &Value) -> Option<Self> {
        let (path, ..) = first_difference(&recorded, now)?;
        Some(NearMiss {
            miss,
            interaction,
            path,
            recorded,
            now: now.clone(),
        })
    }
}

/// Why a request missed, for the report.
pub enum MissKind<'a> {
    /// Nothing with this key was recorded; `nearest` is the closest recording, if any.
    Unknown { nearest: Option<(usize, &'a Value)> },
    /// This exact request was recorded `recorded` times and all were served.
    Exhausted { recorded: usize },
}

/// Who runs the session: a miss report's hints name this runner's own ways of recording
/// again and of declaring a volatile value (a pytest user has no `--match-ignore` flag).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// `agentproxy record` / `replay`: flags.
    #[default]
    Cli,
    /// A case of `agentproxy test`: the spec's blocks.
    Spec,
    /// The pytest plugin: its marker, ini option and fixture.
    Pytest,
    /// The vitest and jest helpers: the `agentproxy` object and their variables.
    Vitest,
    Jest,
}

impl Runner {
    /// The runner a harness names in serve's start request.
    pub fn named(name: &str) -> Option<Runner> {
        match name {
            "pytest" => Some(Runner::Pytest),
            "vitest" => Some(Runner::Vitest),
            "jest" => Some(Runner::Jest),
            _ => None,
        }
    }

    /// Its name, as a harness gives it (`agentproxy` for the command line and specs).
    pub fn name(self) -> &'static str {
        match self {
            Runner::Cli | Runner::Spec => "agentproxy",
            Runner::Pytest => "pytest",
            Runner::Vitest => "vitest",
            Runner::Jest => "jest",
        }
    }

    /// How a value that differs on every run is declared.
    fn declare(self) -> &'static str {
        match self {
            Runner::Cli => "declare it with --match-ignore POINTER or --match-hole NAME=REGEX",
            Runner::Spec => {
                "declare it in the spec (its `match:` block, or a `tools:` mock for a tool result)"
            }
            Runner::Pytest => "declare it (`@pytest.mark.agentproxy(match=...)`, `agentproxy_match` in the ini file, or `agentproxy.mock_tool(...)` for a tool result)",
            Runner::Vitest | Runner::Jest => "declare it (`agentproxy.tolerate(...)`, the AGENTPROXY_MATCH variable, or `agentproxy.mockTool(...)` for a tool result)",
        }
    }

    /// How an exhausted recording is served again.
    fn repeat(self) -> &'static str {
        match self {
            Runner::Cli => "pass `--repeat last`",
            Runner::Spec => "set `repeat: last` in the spec's `match:` block",
            Runner::Pytest => {
                "mark the test `@pytest.mark.agentproxy(match={\"repeat\": \"last\"})`"
            }
            Runner::Vitest | Runner::Jest => "call `agentproxy.tolerate({ repeat: \"last\" })`",
        }
    }
}

/// What a session adds to each of its miss reports, fixed when it starts: the command
/// that records the cassette again, a word on a cassette this session does not serve as
/// its recorder did (a spec case's), and the runner whose ways the hints name.
#[derive(Debug, Default, Clone)]
pub struct Advice {
    pub rerecord: Option<String>,
    pub origin: Option<String>,
    pub runner: Runner,
    /// No cassette was there to replay: the test was never recorded.
    pub unrecorded: bool,
}

/// A miss report's hints: the session's [`Advice`] and the match rules in force (what
/// they leave out, said so the reader knows).
#[derive(Debug, Default, Clone, Copy)]
pub struct Hints<'a> {
    pub tolerated: Option<&'a str>,
    pub advice: Option<&'a Advice>,
}

impl Hints<'_> {
    fn runner(&self) -> Runner {
        self.advice.map(|a| a.runner).unwrap_or_default()
    }

    fn origin(&self) -> Option<&str> {
        self.advice.and_then(|a| a.origin.as_deref())
    }

    /// "re-record" (or "record", for what was never recorded), with the command when the
    /// session knows it.
    fn rerecord(&self) -> String {
        let verb = match self.advice.is_some_and(|a| a.unrecorded) {
            true => "record",
            false => "re-record",
        };
        match self.advice.and_then(|a| a.rerecord.as_deref()) {
            Some(command) => format!("{verb} (`{command}`)"),
            None => format!("{verb} (`agentproxy record`)"),
        }
    }
}

/// The human-readable report, one finding per line, indented under a headline.
pub fn report(
    method: &str,
    path: &str,
    route: &str,
    body: &Value,
    kind: &MissKind<'_>,
    hints: &Hints<'_>,
) -> String {
    let mut out = format!("cassette miss: {method} {path} ({route}) has no recording\n");
    match kind {
        MissKind::Exhausted { recorded } => {
            let _ = writeln!(
                out,
                "  this exact request was recorded {recorded} time(s) and each recording was already served: the program made an extra call\n  hint: {}, or {} to serve the last recording again",
                hints.rerecord(),
                hints.runner().repeat()
            );
        }
        // With a word on where the requests should have gone, re-recording is no answer.
        MissKind::Unknown { nearest: None } if hints.origin().is_some() => {
            let _ = writeln!(
                out,
                "  the cassette has no recorded request to compare with"
            );
        }
        MissKind::Unknown { nearest: None } => {
            let _ = writeln!(
                out,
                "  the cassette has no recorded request to compare with\n  hint: {}",
                hints.rerecord()
            );
        }
        MissKind::Unknown {
            nearest: Some((pos, recorded)),
        } => {
            let _ = writeln!(out, "  nearest recorded request: interaction #{pos}");
            let envelope = envelope_diff(route, recorded, body);
            if !envelope.is_empty() {
                let _ = writeln!(out, "  envelope:");
                for line in envelope {
                    let _ = writeln!(out, "    {line}");
                }
            }
            if let Some((at, was, now)) = first_difference(recorded, body) {
                let at = if at.is_empty() { "/".to_owned() } else { at };
                match (was, now) {
                    (None, Some(v)) => {
                        let _ = writeln!(out, "  added at {at}: {}", short(v));
                    }
                    (Some(v), None) => {
                        let _ = writeln!(out, "  removed at {at}: {}", short(v));
                    }
                    (Some(was), Some(now)) => {
                        let _ = writeln!(out, "  first difference at {at}:");
                        for line in value_diff(was, now).lines() {
                            let _ = writeln!(out, "    {line}");
                        }
                    }
                    (None, None) => {}
                }
            }
            if let Some(t) = hints.tolerated {
                let _ = writeln!(out, "  tolerated (the match rules in force): {t}");
            }
            let _ = writeln!(
                out,
                "  hint: if this change is intended, {}; if the value is volatile, {}",
                hints.rerecord(),
                hints.runner().declare()
            );
        }
    }
    if let Some(origin) = hints.origin() {
        let _ = writeln!(out, "  hint: {origin}");
    }
    out
}

/// Envelope fields that differ, as `label: recorded X, now Y` lines.
fn envelope_diff(route: &str, recorded: &Value, now: &Value) -> Vec<String> {
    let route = Route::from_name(route);
    let (Some(a), Some(b)) = (route.envelope(recorded), route.envelope(now)) else {
        return vec![];
    };
    a.into_iter()
        .zip(b)
        .filter(|(x, y)| x.1 != y.1)
        .map(|(x, y)| format!("{}: recorded {}, now {}", x.0, x.1, y.1))
        .collect()
}

/// A value on one line, cut at 120 characters: what an added or removed value shows.
fn short(v: &Value) -> String {
    const MAX: usize = 120;
    let text = serde_json::to_string(v).unwrap_or_default();
    match text.char_indices().nth(MAX) {
        None => text,
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

/// A readable diff of one value: a line diff for multi-line text, `-`/`+` lines otherwise,
/// with long common prefixes and suffixes elided.
fn value_diff(was: &Value, now: &Value) -> String {
    let render = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    let (a, b) = (render(was), render(now));
    if a.contains('\n') || b.contains('\n') {
        let diff = similar::TextDiff::from_lines(&a, &b);
        let mut out = String::new();
        for hunk in diff
            .unified_diff()
            .context_radius(2)
            .missing_newline_hint(false)
            .iter_hunks()
        {
            let _ = write!(out, "{hunk}");
        }
        return format!("--- recorded\n+++ now\n{out}");
    }
    let (a, b) = elide_common(&a, &b);
    format!("- {a}\n+ {b}")
}

/// Keep the differing middle of two one-line strings with some context around it.
fn elide_common(a: &str, b: &str) -> (String, String) {
    const CONTEXT: usize = 30;
    let prefix = a
        .char_indices()
        .zip(b.chars())
        .take_while(|((_, x), y)| x == y)
        .last()
        .map(|((i, c), _)| i + c.len_utf8())
        .unwrap_or(0);
    let suffix = a[prefix..]
        .chars()
        .rev()
        .zip(b[prefix..].chars().rev())
        .take_while(|(x, y)| x == y)
        .map(|(c, _)| c.len_utf8())
        .sum::<usize>();
    let cut = |s: &str| {
        let end = s.len() - suffix;
        let start = floor_char(s, prefix.saturating_sub(CONTEXT));
        let stop = ceil_char(s, (end + CONTEXT).min(s.len()));
        format!(
            "{}{}{}",
            if start > 0 { "…" } else { "" },
            &s[start..stop],
            if stop < s.len() { "…" } else { "" }
        )
    };
    (cut(a), cut(b))
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_shortlist_keeps_the_nearest_by_sketch_on_the_same_route() {
        let now = chat("What is the weather in Paris?", &["get_weather"]);
        let mut bodies: Vec<(String, Value)> = (0..20)
            .map(|i| {
                (
                    "openai.chat".to_owned(),
                    chat(&format!("question {i}"), &["get_time"]),
                )
            })
            .collect();
        // The nearest, late in the cassette; and an identical body on another route.
        bodies[17].1 = chat("What is the weather in Paris today?", &["get_weather"]);
        bodies.push(("anthropic.messages".to_owned(), now.clone()));
        let sketches: Vec<Sketch> = bodies.iter().map(|(_, b)| Sketch::of_value(b)).collect();
        let recorded: Vec<(&str, Option<&Sketch>)> = (bodies.iter().zip(&sketches))
            .map(|((r, _), s)| (r.as_str(), Some(s)))
            .collect();
        let short = shortlist("openai.chat", &Sketch::of_value(&now), &recorded);
        assert_eq!(short.len(), SHORTLIST);
        assert_eq!(short[0], 17);
        assert!(
            !short.contains(&20),
            "another route is not a candidate: {short:?}"
        );
        // Ties are taken earliest first.
        assert_eq!(&short[1..], &[0, 1, 2, 3, 4, 5, 6]);
        // A model route nothing was recorded on: every model recording is a candidate.
        let short = shortlist("gemini.generate", &Sketch::of_value(&now), &recorded);
        assert_eq!(short[0], 20);
        // Plain HTTP and model calls are never compared, either way.
        assert!(shortlist("http", &Sketch::of_value(&now), &recorded).is_empty());
        let plain = Sketch::of_value(&Value::Null);
        let with_http = [("http", Some(&plain)), ("openai.chat", Some(&sketches[0]))];
        assert_eq!(shortlist("http", &plain, &with_http), [0]);
        assert_eq!(shortlist("anthropic.messages", &plain, &with_http), [1]);
        let candidates = [Candidate {
            pos: 0,
            route: "openai.chat",
            body: &now,
        }];
        assert_eq!(nearest("http", &Value::Null, &candidates), None);
        assert_eq!(nearest("anthropic.messages", &now, &candidates), Some(0));
    }

    fn chat(content: &str, tools: &[&str]) -> Value {
        json!({
            "model": "gpt-4o-mini",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": content}],
            "tools": tools.iter().map(|t| json!({"type": "function", "function": {"name": t, "parameters": {}}})).collect::<Vec<_>>()
        })
    }

    #[test]
    fn picks_the_request_with_fewest_differences() {
        let a = chat("weather in Paris", &["get_weather"]);
        let b = chat("weather in Lyon", &["get_weather", "get_time"]);
        let now = chat("weather in Lyon", &["get_weather"]);
        let cands = [
            Candidate {
                pos: 0,
                route: "openai.chat",
                body: &a,
            },
            Candidate {
                pos: 1,
                route: "openai.chat",
                body: &b,
            },
        ];
        // b differs by one added tool (one element), a by one string: tie → earliest.
        assert_eq!(nearest("openai.chat", &now, &cands), Some(0));
        let other = json!({"x": 1});
        let cands = [Candidate {
            pos: 7,
            route: "http",
            body: &other,
        }];
        // Plain HTTP has nothing to compare with a model call.
        assert_eq!(nearest("openai.chat", &now, &cands), None);
        assert_eq!(nearest("openai.chat", &now, &[]), None);
    }

    #[test]
    fn first_difference_finds_the_path() {
        let a = chat("weather in Paris", &["get_weather"]);
        let b = chat("weather in Lyon", &["get_weather"]);
        let (path, was, now) = first_difference(&a, &b).unwrap();
        assert_eq!(path, "/messages/1/content");
        assert_eq!(was, Some(&json!("weather in Paris")));
        assert_eq!(now, Some(&json!("weather in Lyon")));
        assert!(first_difference(&a, &a).is_none());
        let (short, long) = (json!({"a": [1]}), json!({"a": [1, 2]}));
        let (path, was, now) = first_difference(&short, &long).unwrap();
        assert_eq!((path.as_str(), was, now), ("/a/1", None, Some(&json!(2))));
    }

    #[test]
    fn hints_speak_the_runners_words() {
        let recorded = chat("What's the weather in Paris?", &["get_weather"]);
        let now = chat("What's the weather in Lyon?", &["get_weather"]);
        let hint = |runner, unrecorded| {
            let advice = Advice {
                runner,
                unrecorded,
                ..Advice::default()
            };
            let hints = Hints {
                tolerated: None,
                advice: Some(&advice),
            };
            let near = MissKind::Unknown {
                nearest: Some((0, &recorded)),
            };
            let exhausted = MissKind::Exhausted { recorded: 1 };
            let r = |kind| {
                report(
                    "POST",
                    "/v1/chat/completions",
                    "openai.chat",
                    &now,
                    kind,
                    &hints,
                )
            };
            (r(&near), r(&exhausted))
        };
        let (near, exhausted) = hint(Runner::Pytest, false);
        assert!(near.contains("re-record (`agentproxy record`); if the value is volatile, declare it (`@pytest.mark.agentproxy(match=...)`, `agentproxy_match` in the ini file, or `agentproxy.mock_tool(...)`"), "{near}");
        assert!(
            exhausted
                .contains("mark the test `@pytest.mark.agentproxy(match={\"repeat\": \"last\"})`"),
            "{exhausted}"
        );
        for runner in [Runner::Vitest, Runner::Jest] {
            let (near, exhausted) = hint(runner, false);
            assert!(near.contains("`agentproxy.tolerate(...)`, the AGENTPROXY_MATCH variable, or `agentproxy.mockTool(...)`"), "{near}");
            assert!(
                exhausted.contains("call `agentproxy.tolerate({ repeat: \"last\" })`"),
                "{exhausted}"
            );
        }
        let (near, exhausted) = hint(Runner::Spec, false);
        assert!(
            near.contains("declare it in the spec (its `match:` block, or a `tools:` mock"),
            "{near}"
        );
        assert!(
            exhausted.contains("set `repeat: last` in the spec's `match:` block"),
            "{exhausted}"
        );
        let (near, exhausted) = hint(Runner::Cli, false);
        assert!(
            near.contains("declare it with --match-ignore POINTER or --match-hole NAME=REGEX"),
            "{near}"
        );
        assert!(exhausted.contains("pass `--repeat last`"), "{exhausted}");
        // No runner names another's ways.
        for runner in [Runner::Pytest, Runner::Vitest, Runner::Spec] {
            let (near, exhausted) = hint(runner, false);
            assert!(
                !near.contains("--match") && !exhausted.contains("--repeat"),
                "{near}{exhausted}"
            );
        }
        // What was never recorded is recorded, not re-recorded.
        let (near, _) = hint(Runner::Pytest, true);
        assert!(
            near.contains("if this change is intended, record (`agentproxy record`)"),
            "{near}"
        );
    }

    #[test]
    fn report_shows_envelope_then_path_and_diff() {
        let recorded = chat("What's the weather in Paris?", &["get_weather"]);
        let now = chat("What's the weather in Lyon?", &["get_weather", "get_time"]);
        let r = report(
            "POST",
            "/v1/chat/completions",
            "openai.chat",
            &now,
            &MissKind::Unknown {
                nearest: Some((3, &recorded)),
            },
            &Hints::default(),
        );
        insta::assert_snapshot!(r);
    }

    #[test]
    fn report_names_what_the_match_rules_tolerate() {
        let recorded = chat("What's the weather in Paris?", &["get_weather"]);
        let now = chat("What's the weather in Lyon?", &["get_weather"]);
        let kind = MissKind::Unknown {
            nearest: Some((0, &recorded)),
        };
        let r = report(
            "POST",
            "/v1/messages",
            "anthropic.messages",
            &now,
            &kind,
            &Hints {
                tolerated: Some("ignored /metadata/user_id"),
                advice: Some(&Advice {
                    rerecord: Some("agentproxy record --cassette c.json -- claude".to_owned()),
                    ..Advice::default()
                }),
            },
        );
        assert!(
            r.contains(
                "\n  tolerated (the match rules in force): ignored /metadata/user_id\n  hint: if this change is intended, re-record (`agentproxy record --cassette c.json -- claude`); "
            ),
            "{r}"
        );
    }

    #[test]
    fn report_for_an_extra_call() {
        let body = chat("hi", &[]);
        let r = report(
            "POST",
            "/v1/chat/completions",
            "openai.chat",
            &body,
            &MissKind::Exhausted { recorded: 2 },
            &Hints::default(),
        );
        assert!(r.contains("recorded 2 time(s)"), "{r}");
        assert!(r.contains("--repeat last"), "{r}");
    }

    #[test]
    fn long_strings_are_elided_around_the_change() {
        let a = format!("{}Paris{}", "x".repeat(100), "y".repeat(100));
        let b = format!("{}Lyon{}", "x".repeat(100), "y".repeat(100));
        let (ea, eb) = elide_common(&a, &b);
        assert!(ea.starts_with('…') && ea.ends_with('…'), "{ea}");
        assert!(ea.contains("Paris") && eb.contains("Lyon"));
        assert!(ea.len() < 80, "{ea}");
        let (ea, eb) = elide_common("°C", "°F");
        assert_eq!((ea.as_str(), eb.as_str()), ("°C", "°F"));
    }

    #[test]
    fn multiline_values_get_a_line_diff() {
        let d = value_diff(&json!("a\nb\nc"), &json!("a\nB\nc"));
        assert!(d.contains("-b") && d.contains("+B"), "{d}");
        let d = value_diff(&json!({"a": 1}), &json!({"a": 2}));
        assert!(!d.contains("No newline"), "{d}");
    }

    #[test]
    fn an_added_or_removed_value_is_named_as_such() {
        let schema = |props: Value| {
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                   "tools": [{"type": "function", "function": {"name": "get_weather",
                              "parameters": {"type": "object", "properties": props}}}]})
        };
        let recorded = schema(json!({"city": {"type": "string"}}));
        let now = schema(json!({"city": {"type": "string"},
                                "unit": {"type": "string", "enum": ["c", "f"]}}));
        let kind = MissKind::Unknown {
            nearest: Some((0, &recorded)),
        };
        let r = report(
            "POST",
            "/v1/chat/completions",
            "openai.chat",
            &now,
            &kind,
            &Hints::default(),
        );
        assert!(
            r.contains(r#"  added at /tools/0/function/parameters/properties/unit: {"enum":["c","f"],"type":"string"}"#),
            "{r}"
        );
        assert!(!r.contains("<absent>") && !r.contains("No newline"), "{r}");
        let kind = MissKind::Unknown {
            nearest: Some((0, &now)),
        };
        let r = report(
            "POST",
            "/v1/chat/completions",
            "openai.chat",
            &recorded,
            &kind,
            &Hints::default(),
        );
        assert!(
            r.contains("  removed at /tools/0/function/parameters/properties/unit: {"),
            "{r}"
        );
    }
}
