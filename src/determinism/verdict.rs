//! The verdict of a determinism check, from its findings: one failed assertion per place
//! that differed (the two values around their first change, and the fix), a warning, and
//! the spec fragment to suggest.

use std::path::Path;

use serde_json::Value;

use super::findings::{Difference, Findings};
use crate::report::{AssertionResult, CaseReport};

/// Characters of context shown around a change in a long string.
const CONTEXT: usize = 40;
/// The longest rendering of a non-string value.
const MAX_VALUE: usize = 200;

/// Fill the report from the findings: one failed assertion per differing place, one
/// warning with the suggested entries. Returns the spec fragment to print, if any.
pub(super) fn conclude(f: &Findings, report: &mut CaseReport) -> Option<String> {
    if f.is_stable() {
        report.conclude();
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
    report.conclude();
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

/// The note printed after a case's block: where the spec fragment `yaml` goes.
pub(crate) fn suggestion_note(spec_file: &Path, case_name: &str, yaml: &str) -> String {
    let indented: String = yaml.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "    to stabilise {}::{case_name}, add to the spec (a new tools: mock needs a re-record, since it changes what the model is told):\n{}",
        spec_file.display(),
        indented.trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::determinism::compare::compare;
    use crate::determinism::driver::MODE;
    use crate::determinism::sample::Sample;
    use crate::report::Status;
    use serde_json::json;

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
