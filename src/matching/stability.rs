//! Determinism: compare the requests of two runs of one case against the same recording,
//! find every value that differed, and suggest what would make it stable — a tool mock
//! when the value sits in a tool result, a `match.holes` entry when only a date, time,
//! uuid, id or number inside a string changed, a `match.ignore` pointer otherwise.
//!
//! Requests are aligned by order within their turn and route (the n-th chat request of
//! turn 1 in run 1 with the n-th of run 2). Bodies are compared normalized, so tolerance
//! the spec already declares is not reported again.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use crate::dialect::Route;
use crate::neutral::ToolCall;

/// Volatile spans a hole can stand for, tried in this order: the first whose matches,
/// replaced in both strings, leaves them equal wins. Each is a kind name (the hole's
/// suggested name) and its regex.
pub const VOLATILE_SPANS: [(&str, &str); 6] = [
    (
        "uuid",
        r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    ),
    (
        "datetime",
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
    ),
    ("date", r"\d{4}-\d{2}-\d{2}"),
    ("time", r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?"),
    ("number", r"\d+(?:\.\d+)?"),
    ("hex", r"[0-9a-fA-F]{8,}"),
];

/// One request of a run.
#[derive(Debug, Clone)]
pub struct Sample {
    pub route: String,
    /// The test runner's turn (0-based), when known.
    pub turn: Option<usize>,
    /// The body as sent (redacted), where tool result values are read for mocks.
    pub raw: Value,
    /// The normalized body: what is compared.
    pub body: Value,
    /// Where the body carries tool results, and which call each answers.
    pub tool_results: Vec<ToolResultAt>,
}

/// A tool result inside a request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResultAt {
    /// JSON pointer segments of the result's content.
    pub pointer: Vec<String>,
    pub tool: String,
    /// The 0-based occurrence of the call among calls to that tool, as mocks count them.
    pub nth: usize,
}

impl Sample {
    /// A sample of a request; `normalized` is `raw` normalized under the case's rules, and
    /// `lookup` finds calls the request answers but does not carry (Responses chains).
    pub fn new(
        route: &str,
        turn: Option<usize>,
        raw: Value,
        normalized: Value,
        lookup: &dyn Fn(&str) -> Option<ToolCall>,
    ) -> Sample {
        let tool_results = tool_results_at(Route::from_name(route), &raw, lookup);
        Sample {
            route: route.to_owned(),
            turn,
            raw,
            body: normalized,
            tool_results,
        }
    }
}

/// Where the tool results of a request are, in any dialect: each result is swapped for a
/// unique marker by the dialect's own mock rewriting, then the markers are found.
pub fn tool_results_at(
    route: Route,
    request: &Value,
    lookup: &dyn Fn(&str) -> Option<ToolCall>,
) -> Vec<ToolResultAt> {
    const MARK: &str = "\u{1}agentproxy-tool-result\u{1}";
    let mut marked = request.clone();
    let mut found: Vec<(String, usize)> = vec![];
    route.rewrite_tool_results(&mut marked, lookup, &mut |call, nth| {
        found.push((call.name.clone(), nth));
        Some(Value::String(format!("{MARK}{}", found.len() - 1)))
    });
    let mut out = vec![];
    walk_strings(&marked, &mut vec![], &mut |path, s| {
        if let Some(i) = s.strip_prefix(MARK).and_then(|i| i.parse::<usize>().ok()) {
            if let Some((tool, nth)) = found.get(i) {
                out.push(ToolResultAt {
                    pointer: path.to_vec(),
                    tool: tool.clone(),
                    nth: *nth,
                });
            }
        }
    });
    out
}

fn walk_strings(v: &Value, path: &mut Vec<String>, f: &mut dyn FnMut(&[String], &str)) {
    match v {
        Value::String(s) => f(path, s),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                walk_strings(item, path, f);
                path.pop();
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                path.push(k.clone());
                walk_strings(item, path, f);
                path.pop();
            }
        }
        _ => {}
    }
}

/// One value that differed between the two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub route: String,
    pub turn: Option<usize>,
    /// The request's 1-based position among the requests of its route and turn.
    pub call: usize,
    /// JSON pointer segments; empty for a whole request present in one run only.
    pub pointer: Vec<String>,
    pub first: Option<Value>,
    pub second: Option<Value>,
    /// Index into [`Findings::fixes`]; `None` for a request present in one run only.
    pub fix: Option<usize>,
}

impl Difference {
    pub fn pointer(&self) -> String {
        pointer_string(&self.pointer)
    }

    /// `openai.chat call 2 of turn 1` (turns counted from 1, like reports).
    pub fn request_label(&self) -> String {
        match self.turn {
            Some(t) => format!("{} call {} of turn {}", self.route, self.call, t + 1),
            None => format!("{} call {}", self.route, self.call),
        }
    }
}

/// A spec change that would make differences stable.
#[derive(Debug, Clone, PartialEq)]
pub enum Fix {
    /// `tools.<tool>`: mock the tool with what it returned in run 1, by call occurrence.
    Mock { tool: String, results: Vec<Value> },
    /// `match.holes`: `{name, regex, in?}`.
    Hole {
        name: String,
        regex: String,
        within: Option<String>,
    },
    /// `match.ignore`: a pointer, `*` where the array index varied.
    Ignore { pointer: String },
}

impl Fix {
    /// One line of spec YAML, e.g. `match.holes: {name: date, regex: '\d{4}-…'}`.
    pub fn one_line(&self) -> String {
        match self {
            Fix::Mock { tool, .. } => format!("tools.{tool}: {}", mock_body_flow(self)),
            Fix::Hole { .. } => format!("match.holes: {}", hole_flow(self)),
            Fix::Ignore { pointer } => format!("match.ignore: {}", yaml_quote(pointer)),
        }
    }
}

/// Everything the comparison found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Findings {
    pub differences: Vec<Difference>,
    pub fixes: Vec<Fix>,
}

impl Findings {
    pub fn is_stable(&self) -> bool {
        self.differences.is_empty()
    }

    /// The fixes as a spec fragment (`match:` and `tools:` blocks), ready to paste.
    pub fn spec_yaml(&self) -> String {
        let mut holes = vec![];
        let mut ignores = vec![];
        let mut mocks = vec![];
        for f in &self.fixes {
            match f {
                Fix::Hole { .. } => holes.push(format!("    - {}", hole_flow(f))),
                Fix::Ignore { pointer } => ignores.push(format!("    - {}", yaml_quote(pointer))),
                Fix::Mock { tool, results } => {
                    let what = if results.len() == 1 {
                        "result"
                    } else {
                        "results"
                    };
                    mocks.push(format!(
                        "  {tool}:   # what the program's tool returned in run 1\n    {what}: {}",
                        mock_value_flow(results)
                    ));
                }
            }
        }
        let mut out = String::new();
        if !holes.is_empty() || !ignores.is_empty() {
            out.push_str("match:\n");
            if !holes.is_empty() {
                let _ = writeln!(out, "  holes:\n{}", holes.join("\n"));
            }
            if !ignores.is_empty() {
                let _ = writeln!(out, "  ignore:\n{}", ignores.join("\n"));
            }
        }
        if !mocks.is_empty() {
            let _ = writeln!(out, "tools:\n{}", mocks.join("\n"));
        }
        out
    }
}

/// Compare two runs' requests and suggest fixes.
pub fn compare(first: &[Sample], second: &[Sample]) -> Findings {
    let mut raw_diffs: Vec<(Difference, Option<Kind>)> = vec![];
    for (slot, a, b) in align(first, second) {
        let (route, turn, call) = slot;
        match (a, b) {
            (Some(a), Some(b)) => {
                for (pointer, x, y) in leaf_differences(&a.body, &b.body) {
                    let kind = classify(&pointer, x, y, a, b);
                    raw_diffs.push((
                        Difference {
                            route: route.clone(),
                            turn,
                            call,
                            pointer,
                            first: x.cloned(),
                            second: y.cloned(),
                            fix: None,
                        },
                        Some(kind),
                    ));
                }
            }
            (a, b) => raw_diffs.push((
                Difference {
                    route: route.clone(),
                    turn,
                    call,
                    pointer: vec![],
                    first: a.map(|s| s.body.clone()),
                    second: b.map(|s| s.body.clone()),
                    fix: None,
                },
                None,
            )),
        }
    }
    let (fixes, assignment) = fixes_for(&raw_diffs, first);
    let differences = raw_diffs
        .into_iter()
        .zip(assignment)
        .map(|((mut d, _), fix)| {
            d.fix = fix;
            d
        })
        .collect();
    Findings { differences, fixes }
}

type Slot = (String, Option<usize>, usize);

/// Pair the n-th request of each (turn, route) of one run with the n-th of the other, in
/// the order of the first run (then requests only the second run made).
fn align<'a>(
    first: &'a [Sample],
    second: &'a [Sample],
) -> Vec<(Slot, Option<&'a Sample>, Option<&'a Sample>)> {
    fn slots(run: &[Sample]) -> Vec<Slot> {
        let mut seen: BTreeMap<(String, Option<usize>), usize> = BTreeMap::new();
        run.iter()
            .map(|s| {
                let n = seen.entry((s.route.clone(), s.turn)).or_default();
                *n += 1;
                (s.route.clone(), s.turn, *n)
            })
            .collect()
    }
    let (sa, sb) = (slots(first), slots(second));
    let mut out: Vec<(Slot, Option<&Sample>, Option<&Sample>)> = sa
        .iter()
        .zip(first)
        .map(|(slot, a)| {
            let b = sb.iter().position(|s| s == slot).map(|i| &second[i]);
            (slot.clone(), Some(a), b)
        })
        .collect();
    for (slot, b) in sb.iter().zip(second) {
        if !sa.contains(slot) {
            out.push((slot.clone(), None, Some(b)));
        }
    }
    out
}

/// Every leaf where two values differ: pointer segments and the value on each side
/// (`None` where absent). Objects are compared key by key, arrays index by index; a value
/// whose type changed is one difference.
fn leaf_differences<'a>(
    a: &'a Value,
    b: &'a Value,
) -> Vec<(Vec<String>, Option<&'a Value>, Option<&'a Value>)> {
    fn walk<'a>(
        a: Option<&'a Value>,
        b: Option<&'a Value>,
        path: &mut Vec<String>,
        out: &mut Vec<(Vec<String>, Option<&'a Value>, Option<&'a Value>)>,
    ) {
        match (a, b) {
            (Some(Value::Object(x)), Some(Value::Object(y))) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    path.push(k.clone());
                    walk(x.get(k), y.get(k), path, out);
                    path.pop();
                }
            }
            (Some(Value::Array(x)), Some(Value::Array(y))) => {
                for i in 0..x.len().max(y.len()) {
                    path.push(i.to_string());
                    walk(x.get(i), y.get(i), path, out);
                    path.pop();
                }
            }
            (x, y) if x == y => {}
            (x, y) => out.push((path.clone(), x, y)),
        }
    }
    let mut out = vec![];
    walk(Some(a), Some(b), &mut vec![], &mut out);
    out
}

/// What kind of fix a difference needs.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// Inside the result of this tool.
    ToolResult(String),
    /// Strings equal once these volatile spans are holes (indices into [`VOLATILE_SPANS`]).
    Holes(Vec<usize>),
    Ignore,
}

fn classify(
    pointer: &[String],
    x: Option<&Value>,
    y: Option<&Value>,
    a: &Sample,
    b: &Sample,
) -> Kind {
    let in_result = a
        .tool_results
        .iter()
        .chain(&b.tool_results)
        .find(|r| pointer.starts_with(&r.pointer));
    if let Some(r) = in_result {
        return Kind::ToolResult(r.tool.clone());
    }
    match (x, y) {
        (Some(Value::String(x)), Some(Value::String(y))) => match volatile_spans(x, y) {
            Some(kinds) => Kind::Holes(kinds),
            None => Kind::Ignore,
        },
        _ => Kind::Ignore,
    }
}

fn span_regexes() -> &'static [Regex] {
    static RES: OnceLock<Vec<Regex>> = OnceLock::new();
    RES.get_or_init(|| {
        VOLATILE_SPANS
            .iter()
            .map(|(_, re)| Regex::new(re).expect("valid volatile-span regex"))
            .collect()
    })
}

/// How many kinds at the start of [`VOLATILE_SPANS`] are specific (uuid, dates, times);
/// the rest (numbers, hex) are generic and tried only when those do not explain a change.
const SPECIFIC_SPANS: usize = 4;

/// Which volatile spans, made holes, would make two differing strings equal: a single
/// specific kind, else specific kinds together, else a single generic kind, else any
/// kinds together (the fewest needed). A single kind must also stand alone (not inside a
/// longer word), so a number is not found inside an id.
fn volatile_spans(a: &str, b: &str) -> Option<Vec<usize>> {
    let specific: Vec<usize> = (0..SPECIFIC_SPANS).collect();
    let all: Vec<usize> = (0..VOLATILE_SPANS.len()).collect();
    let single = |kinds: &[usize]| {
        kinds.iter().copied().find(|&k| {
            let re = &span_regexes()[k];
            fill_all(a, &[k]) == fill_all(b, &[k]) && stands_alone(a, re) && stands_alone(b, re)
        })
    };
    single(&specific)
        .map(|k| vec![k])
        .or_else(|| together(a, b, &specific))
        .or_else(|| single(&all[SPECIFIC_SPANS..]).map(|k| vec![k]))
        .or_else(|| together(a, b, &all))
}

/// Every match of the given kinds replaced by a marker, in order.
fn fill_all(s: &str, kinds: &[usize]) -> String {
    let mut out = s.to_owned();
    for &k in kinds {
        out = span_regexes()[k].replace_all(&out, "\u{0}").into_owned();
    }
    out
}

/// The kinds among `kinds` that, applied together, make the strings equal, with the ones
/// not needed dropped; `None` when even all of them do not.
fn together(a: &str, b: &str, kinds: &[usize]) -> Option<Vec<usize>> {
    if fill_all(a, kinds) != fill_all(b, kinds) {
        return None;
    }
    let mut used = kinds.to_vec();
    for k in kinds.iter().rev() {
        let without: Vec<usize> = used.iter().copied().filter(|u| u != k).collect();
        if fill_all(a, &without) == fill_all(b, &without) {
            used = without;
        }
    }
    Some(used)
}

/// Every match of `re` in `s` is bounded by non-alphanumeric characters.
fn stands_alone(s: &str, re: &Regex) -> bool {
    re.find_iter(s).all(|m| {
        let before = s[..m.start()].chars().next_back();
        let after = s[m.end()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric()) && !after.is_some_and(|c| c.is_alphanumeric())
    })
}

/// Turn each difference's kind into fixes, merged: one mock per tool, one hole per span
/// kind, one ignore pointer per pointer shape. Returns the fixes and, per difference, the
/// index of its fix.
fn fixes_for(
    diffs: &[(Difference, Option<Kind>)],
    first: &[Sample],
) -> (Vec<Fix>, Vec<Option<usize>>) {
    let mut fixes: Vec<Fix> = vec![];
    let mut assignment = vec![None; diffs.len()];
    // Group differences by the fix they need, keeping first-seen order.
    let mut groups: Vec<(GroupKey, Vec<usize>)> = vec![];
    for (i, (d, kind)) in diffs.iter().enumerate() {
        let key = match kind {
            None => continue,
            Some(Kind::ToolResult(tool)) => GroupKey::Tool(tool.clone()),
            Some(Kind::Holes(kinds)) => GroupKey::Holes(kinds.clone()),
            Some(Kind::Ignore) => GroupKey::Ignore(shape(&d.pointer)),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    for (key, members) in groups {
        let pointers: Vec<&[String]> = members
            .iter()
            .map(|i| diffs[*i].0.pointer.as_slice())
            .collect();
        let fix_index = fixes.len();
        match key {
            GroupKey::Tool(tool) => fixes.push(Fix::Mock {
                results: tool_results_of(&tool, first),
                tool,
            }),
            GroupKey::Holes(kinds) => {
                let within = generalize(&pointers).map(|p| pointer_string(&p));
                for k in kinds {
                    let (name, regex) = VOLATILE_SPANS[k];
                    let taken = fixes
                        .iter()
                        .filter(|f| matches!(f, Fix::Hole { name: n, .. } if n == name || n.starts_with(&format!("{name}_"))))
                        .count();
                    let name = if taken == 0 {
                        name.to_owned()
                    } else {
                        format!("{name}_{}", taken + 1)
                    };
                    fixes.push(Fix::Hole {
                        name,
                        regex: regex.to_owned(),
                        within: within.clone(),
                    });
                }
            }
            GroupKey::Ignore(_) => {
                let pointer = generalize(&pointers).unwrap_or_else(|| pointers[0].to_vec());
                fixes.push(Fix::Ignore {
                    pointer: pointer_string(&pointer),
                });
            }
        }
        for i in members {
            assignment[i] = Some(fix_index);
        }
    }
    (fixes, assignment)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum GroupKey {
    Tool(String),
    Holes(Vec<usize>),
    Ignore(Vec<String>),
}

/// A pointer with its array indices replaced by `*`.
fn shape(pointer: &[String]) -> Vec<String> {
    pointer
        .iter()
        .map(|s| {
            if s.parse::<usize>().is_ok() {
                "*".to_owned()
            } else {
                s.clone()
            }
        })
        .collect()
}

/// One pointer covering all of `pointers`: segments they agree on kept, array indices that
/// vary made `*`. `None` when they differ in length or in a key.
fn generalize(pointers: &[&[String]]) -> Option<Vec<String>> {
    let first = pointers.first()?;
    if pointers.iter().any(|p| shape(p) != shape(first)) {
        return None;
    }
    Some(
        (0..first.len())
            .map(|i| {
                if pointers.iter().all(|p| p[i] == first[i]) {
                    first[i].clone()
                } else {
                    "*".to_owned()
                }
            })
            .collect(),
    )
}

/// What the program's tool `tool` returned in the first run, by call occurrence: a result
/// that is JSON text becomes that JSON, so the mock reads naturally in YAML.
fn tool_results_of(tool: &str, first: &[Sample]) -> Vec<Value> {
    let mut by_nth: BTreeMap<usize, Value> = BTreeMap::new();
    for s in first {
        for r in s.tool_results.iter().filter(|r| r.tool == tool) {
            if let Some(v) = s.raw.pointer(&pointer_string(&r.pointer)) {
                by_nth.entry(r.nth).or_insert_with(|| as_mock_value(v));
            }
        }
    }
    let mut values: Vec<Value> = by_nth.into_values().collect();
    if values.windows(2).all(|w| w[0] == w[1]) {
        values.truncate(1);
    }
    values
}

fn as_mock_value(v: &Value) -> Value {
    match v {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(parsed @ (Value::Object(_) | Value::Array(_))) => parsed,
            _ => v.clone(),
        },
        other => other.clone(),
    }
}

/// A JSON pointer from its segments (`~` and `/` escaped).
pub fn pointer_string(segments: &[String]) -> String {
    segments
        .iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// A YAML single-quoted scalar (backslashes stay literal, as a regex wants).
fn yaml_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn hole_flow(f: &Fix) -> String {
    let Fix::Hole {
        name,
        regex,
        within,
    } = f
    else {
        return String::new();
    };
    let mut s = format!("{{name: {name}, regex: {}", yaml_quote(regex));
    if let Some(p) = within {
        let _ = write!(s, ", in: {}", yaml_quote(p));
    }
    s.push('}');
    s
}

fn mock_body_flow(f: &Fix) -> String {
    let Fix::Mock { results, .. } = f else {
        return String::new();
    };
    let what = if results.len() == 1 {
        "result"
    } else {
        "results"
    };
    format!("{{{what}: {}}}", mock_value_flow(results))
}

/// JSON is YAML flow syntax, so a mock value is written as JSON.
fn mock_value_flow(results: &[Value]) -> String {
    match results {
        [one] => serde_json::to_string(one).unwrap_or_default(),
        many => serde_json::to_string(many).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_lookup(_: &str) -> Option<ToolCall> {
        None
    }

    fn sample(route: &str, turn: usize, body: Value) -> Sample {
        Sample::new(route, Some(turn), body.clone(), body, &no_lookup)
    }

    fn chat(system: &str, rest: Vec<Value>) -> Value {
        let mut messages = vec![
            json!({"role": "system", "content": system}),
            json!({"role": "user", "content": "Book it"}),
        ];
        messages.extend(rest);
        json!({"model": "gpt-4o-mini", "messages": messages})
    }

    #[test]
    fn a_timestamp_in_the_system_prompt_gets_a_datetime_hole_in_that_message() {
        let run1 = [sample(
            "openai.chat",
            0,
            chat("You are a clerk. Now: 2026-11-30 20:01:33.123456.", vec![]),
        )];
        let run2 = [sample(
            "openai.chat",
            0,
            chat("You are a clerk. Now: 2026-11-30 20:01:34.009871.", vec![]),
        )];
        let f = compare(&run1, &run2);
        assert_eq!(f.differences.len(), 1);
        let d = &f.differences[0];
        assert_eq!(d.pointer(), "/messages/0/content");
        assert_eq!(d.request_label(), "openai.chat call 1 of turn 1");
        assert_eq!(
            f.fixes,
            vec![Fix::Hole {
                name: "datetime".into(),
                regex: VOLATILE_SPANS[1].1.into(),
                within: Some("/messages/0/content".into()),
            }]
        );
        // The suggested hole, applied, makes the two requests equal.
        let rules = crate::matching::normalize::Rules::compile(&crate::cassette::MatchRules {
            ignore: vec![],
            holes: vec![crate::cassette::format::Hole {
                name: "datetime".into(),
                regex: VOLATILE_SPANS[1].1.into(),
                within: Some("/messages/0/content".into()),
            }],
        })
        .unwrap();
        let n = |s: &Sample| crate::matching::normalize::normalize(&s.raw, &rules);
        assert_eq!(n(&run1[0]), n(&run2[0]));
        insta::assert_snapshot!(f.spec_yaml(), @r"
        match:
          holes:
            - {name: datetime, regex: '\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?', in: '/messages/0/content'}
        ");
    }

    #[test]
    fn a_random_id_in_a_tool_result_gets_a_mock_of_that_tool() {
        let turn = |id: &str| {
            chat(
                "You book flights.",
                vec![
                    json!({"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "create_booking", "arguments": "{\"flight\":\"LX345\"}"}}]}),
                    json!({"role": "tool", "tool_call_id": "call_1", "content": format!("{{\"booking\":\"{id}\",\"ok\":true}}")}),
                ],
            )
        };
        let run1 = [
            sample("openai.chat", 0, chat("You book flights.", vec![])),
            sample("openai.chat", 0, turn("bk_8f3a2c")),
        ];
        let run2 = [
            sample("openai.chat", 0, chat("You book flights.", vec![])),
            sample("openai.chat", 0, turn("bk_1d9e07")),
        ];
        assert_eq!(
            run1[1].tool_results,
            vec![ToolResultAt {
                pointer: vec!["messages".into(), "3".into(), "content".into()],
                tool: "create_booking".into(),
                nth: 0
            }]
        );
        let f = compare(&run1, &run2);
        assert_eq!(f.differences.len(), 1);
        assert_eq!(f.differences[0].call, 2);
        assert_eq!(
            f.fixes,
            vec![Fix::Mock {
                tool: "create_booking".into(),
                results: vec![json!({"booking": "bk_8f3a2c", "ok": true})],
            }]
        );
        assert_eq!(
            f.fixes[0].one_line(),
            r#"tools.create_booking: {result: {"booking":"bk_8f3a2c","ok":true}}"#
        );
        assert!(
            f.spec_yaml().contains("tools:\n  create_booking:"),
            "{}",
            f.spec_yaml()
        );
    }

    #[test]
    fn tool_results_are_found_in_every_dialect() {
        let anthropic = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "09:00"}]}]});
        let at = tool_results_at(Route::AnthropicMessages, &anthropic, &no_lookup);
        assert_eq!(
            pointer_string(&at[0].pointer),
            "/messages/2/content/0/content"
        );
        assert_eq!(at[0].tool, "get_time");
        // Responses chains: the call is known from an earlier response only.
        let responses = json!({"previous_response_id": "resp_1", "input": [{"type": "function_call_output", "call_id": "call_9", "output": "x"}]});
        let lookup = |id: &str| {
            (id == "call_9").then(|| ToolCall {
                id: id.into(),
                name: "lookup".into(),
                arguments: json!({}),
            })
        };
        let at = tool_results_at(Route::OpenAiResponses, &responses, &lookup);
        assert_eq!(
            (pointer_string(&at[0].pointer).as_str(), at[0].tool.as_str()),
            ("/input/0/output", "lookup")
        );
        assert!(tool_results_at(Route::Http, &responses, &lookup).is_empty());
    }

    #[test]
    fn a_uuid_gets_a_uuid_hole_and_one_hole_covers_every_place() {
        let body = |id: &str| json!({"model": "m", "messages": [{"role": "user", "content": format!("session {id}: hello")}], "metadata": {"trace": format!("t-{id}")}});
        let run1 = [sample(
            "openai.chat",
            0,
            body("3f2b9c1e-8a4d-4e2f-9b1a-0c5d7e6f8a9b"),
        )];
        let run2 = [sample(
            "openai.chat",
            0,
            body("a1b2c3d4-e5f6-4789-8abc-def012345678"),
        )];
        let f = compare(&run1, &run2);
        assert_eq!(f.differences.len(), 2);
        // Two places of different shapes: one hole, without `in:`.
        assert_eq!(
            f.fixes,
            vec![Fix::Hole {
                name: "uuid".into(),
                regex: VOLATILE_SPANS[0].1.into(),
                within: None
            }]
        );
        assert!(f.differences.iter().all(|d| d.fix == Some(0)));
    }

    #[test]
    fn volatile_spans_pick_the_narrowest_kind_that_explains_the_change() {
        let kind = |a: &str, b: &str| {
            volatile_spans(a, b)
                .map(|ks| ks.iter().map(|k| VOLATILE_SPANS[*k].0).collect::<Vec<_>>())
        };
        assert_eq!(
            kind("today is 2026-11-30.", "today is 2026-12-01."),
            Some(vec!["date"])
        );
        assert_eq!(kind("at 09:00:01", "at 09:00:07"), Some(vec!["time"]));
        assert_eq!(
            kind("ts=1764532893.1", "ts=1764532894.7"),
            Some(vec!["number"])
        );
        assert_eq!(
            kind("req a8f3c2d1e4b5", "req 07b1e9ff23c4"),
            Some(vec!["hex"])
        );
        // A number inside an id is not a number: the id's letters differ too.
        assert_eq!(kind("id ab12x", "id cd34x"), None);
        // Date and time changed in separate places: both holes.
        assert_eq!(
            kind("on 2026-11-30, at 23:59", "on 2026-12-01, at 00:00"),
            Some(vec!["date", "time"])
        );
        assert_eq!(kind("Paris", "Lyon"), None);
    }

    #[test]
    fn other_changes_get_ignore_pointers_with_stars_where_indices_vary() {
        let body = |n: u64, names: [&str; 2]| {
            json!({"seed": n, "messages": [
            {"role": "user", "name": names[0], "content": "a"},
            {"role": "user", "name": names[1], "content": "b"}]})
        };
        let run1 = [sample("openai.chat", 0, body(1, ["x", "y"]))];
        let run2 = [sample("openai.chat", 0, body(2, ["p", "q"]))];
        let f = compare(&run1, &run2);
        assert_eq!(
            f.fixes,
            vec![
                Fix::Ignore {
                    pointer: "/messages/*/name".into()
                },
                Fix::Ignore {
                    pointer: "/seed".into()
                },
            ]
        );
        insta::assert_snapshot!(f.spec_yaml(), @r"
        match:
          ignore:
            - '/messages/*/name'
            - '/seed'
        ");
    }

    #[test]
    fn requests_one_run_made_and_the_other_did_not_are_differences_without_a_fix() {
        let run1 = [
            sample("openai.chat", 0, json!({"a": 1})),
            sample("openai.chat", 1, json!({"a": 1})),
        ];
        let run2 = [
            sample("openai.chat", 0, json!({"a": 1})),
            sample("http", 0, json!({})),
        ];
        let f = compare(&run1, &run2);
        assert_eq!(f.differences.len(), 2);
        assert!(f
            .differences
            .iter()
            .all(|d| d.fix.is_none() && d.pointer.is_empty()));
        assert!(f.differences[0].second.is_none() && f.differences[1].first.is_none());
        assert!(f.fixes.is_empty());
        assert!(compare(&run1, &run1).is_stable());
    }
}
