//! `agentproxy test --check-determinism`: run a case twice against its recording, served by
//! position (so a program whose requests drift still runs to its end), and report every
//! request value that differed between the two runs, with the spec entry that would make
//! it stable (see `matching::stability`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::case::{drive, Settings, Use};
use super::mocks::MockSet;
use crate::cassette::{store, Body, Interaction};
use crate::dialect::Route;
use crate::matching::normalize::{normalize, Rules};
use crate::matching::stability::{compare, Difference, Findings, Sample};
use crate::neutral::ToolCall;
use crate::proxy::{Mocks, Options, Replay, Session};
use crate::redact::Secrets;
use crate::report::{AssertionResult, CaseReport, Status};
use crate::spec::{Case, Spec};

/// The mode a checked case reports.
pub const MODE: &str = "determinism";

/// Characters of context shown around a change in a long string.
const CONTEXT: usize = 40;
/// The longest rendering of a non-string value.
const MAX_VALUE: usize = 200;

/// A checked case: its report, and the spec fragment that would stabilise it, if any.
pub struct Checked {
    pub report: CaseReport,
    pub suggestion: Option<String>,
}

/// Check one case. Every outcome becomes a report: passed (stable), failed (values
/// differed, or a request missed), error (the program failed), skipped (no cassette).
pub async fn check(spec: &Spec, case: &Case, s: &Settings) -> Checked {
    let started = Instant::now();
    let cassette_path = case.cassette_path(&s.cassette_dir);
    let mut report = CaseReport::new(&spec.file, &case.name, MODE, &cassette_path);
    let mut suggestion = None;
    if let Some(reason) = &case.skip {
        report.skip(reason);
    } else if !cassette_path.exists() {
        report.status = Status::Skipped;
        report.warnings.push(format!(
            "no cassette at {}, so nothing to check against; record it first with `agentproxy test --mode record`",
            cassette_path.display()
        ));
    } else {
        match check_twice(spec, case, s, &cassette_path, &mut report).await {
            Ok(findings) => suggestion = conclude(&findings, &mut report),
            Err(message) => {
                report.status = Status::Error;
                report.error = Some(message);
            }
        }
    }
    report.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Checked { report, suggestion }
}

async fn check_twice(
    spec: &Spec,
    case: &Case,
    s: &Settings,
    cassette_path: &std::path::Path,
    report: &mut CaseReport,
) -> Result<Findings, String> {
    let cassette = store::load(cassette_path).map_err(|e| e.to_string())?;
    let match_rules = cassette.match_rules.merged(&spec.match_rules);
    let rules = Rules::compile(&match_rules).map_err(|e| e.to_string())?;
    let mut runs = vec![];
    for n in 1..=2 {
        let (samples, misses) = run_once(spec, case, s, cassette.interactions.clone(), &rules)
            .await
            .map_err(|e| format!("run {n} of 2: {e}"))?;
        report
            .misses
            .extend(misses.into_iter().map(|m| format!("run {n} of 2: {m}")));
        runs.push(samples);
    }
    Ok(compare(&runs[0], &runs[1]))
}

/// One run in lenient replay: the requests it made, as samples, and its miss reports.
async fn run_once(
    spec: &Spec,
    case: &Case,
    s: &Settings,
    interactions: Vec<Interaction>,
    rules: &Rules,
) -> Result<(Vec<Sample>, Vec<String>), String> {
    let mocks = Arc::new(MockSet::compile(&spec.tools)?);
    let options = Options {
        rules: rules.clone(),
        secrets: Secrets::from_vars(std::env::vars()),
        max_body: s.max_body,
        upstream: None,
        replay: Some(Replay::new(interactions, spec.repeat, false).lenient()),
        print_misses: false,
        mocks: (!mocks.is_empty()).then(|| {
            let m = mocks.clone();
            Arc::new(move |c: &ToolCall, n: usize| m.result_for(c, n)) as Mocks
        }),
        log_exchanges: true,
    };
    let session = Session::start(options, s.listen)
        .await
        .map_err(|e| e.to_string())?;
    let base = format!("http://{}", session.addr());
    let driven = drive(spec, case, s, &session, &base, Use::Replay).await;
    let outcome = session.stop().await;
    if let Err((_, e)) = driven {
        if outcome.misses.is_empty() {
            return Err(e);
        }
    }
    Ok((samples(&outcome.exchanges, rules), outcome.misses))
}

/// The requests of a run, normalized under the case's rules, with their tool results
/// located (calls answered across requests are looked up in the run's responses).
fn samples(exchanges: &[Interaction], rules: &Rules) -> Vec<Sample> {
    let json = |b: &Option<Body>| b.as_ref().and_then(Body::as_json).cloned();
    let mut calls: HashMap<String, ToolCall> = HashMap::new();
    for it in exchanges {
        if let (Some(q), Some(r)) = (json(&it.request.body), json(&it.response.body)) {
            if let Some(call) = Route::from_name(&it.route).extract(&q, &r) {
                calls.extend(call.tool_calls.into_iter().map(|c| (c.id.clone(), c)));
            }
        }
    }
    let lookup = |id: &str| calls.get(id).cloned();
    exchanges
        .iter()
        .map(|it| {
            let raw = json(&it.request.body).unwrap_or(Value::Null);
            let normalized = normalize(&raw, rules);
            Sample::new(&it.route, it.turn, raw, normalized, &lookup)
        })
        .collect()
}

/// Fill the report from the findings: one failed assertion per differing place, one
/// warning with the suggested entries. Returns the spec fragment to print, if any.
fn conclude(f: &Findings, report: &mut CaseReport) -> Option<String> {
    if f.is_stable() {
        if !report.misses.is_empty() {
            report.status = Status::Failed;
        }
        return None;
    }
    // One assertion per place: the same value differing in every request of a
    // conversation (a system prompt) is one finding.
    let mut places: Vec<(&Difference, Vec<&Difference>)> = vec![];
    for d in &f.differences {
        let same_place =
            |p: &Difference| p.route == d.route && p.pointer == d.pointer && p.fix == d.fix;
        match places.iter_mut().find(|(first, _)| same_place(first)) {
            Some((_, all)) => all.push(d),
            None => places.push((d, vec![d])),
        }
    }
    for (d, all) in &places {
        report.assertions.push(assertion(f, d, all));
    }
    let values = f.differences.iter().filter(|d| d.fix.is_some()).count();
    let mut warning = format!(
        "not deterministic: {values} request value(s) in {} place(s) differed between two runs against the same recording",
        places.len()
    );
    if !f.fixes.is_empty() {
        warning.push_str("; each failure names the spec entry that would stabilise it");
    }
    report.warnings.push(warning);
    report.status = Status::Failed;
    (!f.fixes.is_empty()).then(|| f.spec_yaml())
}

fn assertion(f: &Findings, d: &Difference, all: &[&Difference]) -> AssertionResult {
    let requests: Vec<String> = all.iter().map(|d| d.request_label()).collect();
    let Some(fix) = d.fix.and_then(|i| f.fixes.get(i)) else {
        let (made, missing) = if d.first.is_some() { (1, 2) } else { (2, 1) };
        return AssertionResult {
            passed: false,
            what: format!("same requests in both runs: {}", d.request_label()),
            message: format!(
                "run {made} made this request and run {missing} did not: the program took another path; stabilise the values that differed before it"
            ),
            expected: None,
            actual: None,
            path: None,
            nearest: None,
        };
    };
    let (first, second) = show_pair(d.first.as_ref(), d.second.as_ref());
    let where_ = if requests.len() == 1 {
        requests[0].clone()
    } else {
        format!("{} requests: {}", requests.len(), requests.join(", "))
    };
    AssertionResult {
        passed: false,
        what: format!("same request in both runs: {} {}", d.route, d.pointer()),
        message: format!(
            "differs between two runs against the same recording ({where_})\nrun 1: {first}\nrun 2: {second}\nfix:   {}",
            fix.one_line()
        ),
        expected: None,
        actual: None,
        path: Some(d.pointer()),
        nearest: None,
    }
}

/// Two differing values as short one-line texts: strings around their first change,
/// anything else as compact JSON, cut at [`MAX_VALUE`].
fn show_pair(a: Option<&Value>, b: Option<&Value>) -> (String, String) {
    match (a, b) {
        (Some(Value::String(x)), Some(Value::String(y))) => {
            let prefix: usize = x
                .chars()
                .zip(y.chars())
                .take_while(|(p, q)| p == q)
                .map(|(c, _)| c.len_utf8())
                .sum();
            (around(x, prefix), around(y, prefix))
        }
        _ => (show(a), show(b)),
    }
}

/// `s` from [`CONTEXT`] characters before byte `at` to some after it, newlines shown as `⏎`.
fn around(s: &str, at: usize) -> String {
    let before: Vec<char> = s[..at].chars().collect();
    let start = before.len().saturating_sub(CONTEXT);
    let lead: String = before[start..].iter().collect();
    let rest: String = s[at..].chars().take(CONTEXT).collect();
    let more = s[at..].chars().count() > CONTEXT;
    format!(
        "{}{lead}{rest}{}",
        if start > 0 { "…" } else { "" },
        if more { "…" } else { "" }
    )
    .replace('\n', "⏎")
}

fn show(v: Option<&Value>) -> String {
    match v {
        None => "<absent>".into(),
        Some(v) => {
            let text = v.to_string();
            if text.chars().count() > MAX_VALUE {
                format!("{}…", text.chars().take(MAX_VALUE).collect::<String>())
            } else {
                text
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn changes_are_shown_around_where_they_start() {
        let a = json!(format!(
            "{}Now: 2026-11-30 20:01:33.1\nBe brief.",
            "x".repeat(100)
        ));
        let b = json!(format!(
            "{}Now: 2026-11-30 20:01:34.9\nBe brief.",
            "x".repeat(100)
        ));
        let (x, y) = show_pair(Some(&a), Some(&b));
        assert!(
            x.starts_with('…') && x.contains("20:01:33.1⏎Be brief."),
            "{x}"
        );
        assert!(y.contains("20:01:34.9"), "{y}");
        let (x, y) = show_pair(Some(&json!(1)), None);
        assert_eq!((x.as_str(), y.as_str()), ("1", "<absent>"));
    }

    #[test]
    fn findings_become_one_assertion_per_place_and_a_warning() {
        let body = |t: &str| json!({"model": "m", "messages": [{"role": "system", "content": format!("Now: {t}")}, {"role": "user", "content": "hi"}]});
        let sample =
            |turn, t: &str| Sample::new("openai.chat", Some(turn), body(t), body(t), &|_| None);
        let f = compare(
            &[
                sample(0, "2026-11-30 20:01:33"),
                sample(1, "2026-11-30 20:01:33"),
            ],
            &[
                sample(0, "2026-11-30 20:01:35"),
                sample(1, "2026-11-30 20:01:35"),
            ],
        );
        let mut report = CaseReport::new(Path::new("s.yaml"), "c", MODE, Path::new("c.json"));
        let yaml = conclude(&f, &mut report).expect("a suggestion");
        assert_eq!(report.status, Status::Failed);
        assert_eq!(report.assertions.len(), 1);
        let a = &report.assertions[0];
        assert_eq!(
            a.what,
            "same request in both runs: openai.chat /messages/0/content"
        );
        assert!(
            a.message
                .contains("2 requests: openai.chat call 1 of turn 1, openai.chat call 1 of turn 2"),
            "{}",
            a.message
        );
        assert!(
            a.message.contains("fix:   match.holes: {name: datetime"),
            "{}",
            a.message
        );
        assert!(
            report.warnings[0]
                .starts_with("not deterministic: 2 request value(s) in 1 place(s) differed"),
            "{:?}",
            report.warnings
        );
        assert!(yaml.contains("in: '/messages/0/content'"), "{yaml}");
    }
}
