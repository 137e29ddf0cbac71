//! `--report junit`: the run as JUnit XML, for CI systems that show test results.
//!
//! Written with `quick-junit`, the writer nextest uses: one `<testsuite>` per spec file, one
//! `<testcase>` per case (`classname` = the spec file, `name` = the case name, `time`). A
//! failed case has a `<failure>` whose `message` names its first cause (a miss, a failed
//! assertion, a problem, failed fuzz runs: [`CaseReport::first_cause`]) and whose text is
//! every failure, miss report and problem; an erroring case an `<error>`
//! with the error text; a skipped case `<skipped>`, and so does each turn the program never
//! reached (its own `<testcase>`, `name` = `case › turn N`). `<system-out>` holds the turn
//! transcript, headed by the case's mode, cassette and token usage. `quick-junit` drops escape sequences and characters XML cannot carry, so a
//! coloured stderr tail still gives a valid document.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::console::transcript;
use super::text::{self, clean};
use super::{AssertionResult, CaseReport, Cause, RunReport, Status};

/// A case's miss reports, then every failure with its values, the expectations that
/// could not be judged likewise, the problems and the warnings.
fn failure_body(c: &CaseReport) -> String {
    let mut out = String::new();
    for m in &c.misses {
        out.push_str(m);
        out.push('\n');
    }
    failure_lines(&mut out, c.failures());
    if c.unjudged().next().is_some() {
        out.push_str("not judged (the program did not get its answers):\n");
        failure_lines(&mut out, c.unjudged());
    }
    for p in &c.problems {
        out.push_str(&format!("problem: {p}\n"));
    }
    for w in &c.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    if let Some(crash) = &c.crash {
        out.push_str(&text::crash_summary(crash));
        out.push('\n');
        for r in &crash.repeated {
            out.push_str(&format!("  executed again: {r}\n"));
        }
    }
    if let Some(f) = &c.fuzz {
        out.push_str(&text::fuzz_summary(f));
        out.push('\n');
        for run in f.failed() {
            out.push_str(&format!("  {}: {}\n", run.title(), run.arguments));
            for why in &run.failures {
                out.push_str(&format!("    {why}\n"));
            }
            out.push_str(&format!("    keep it: {}\n", text::fuzz_keep(&f.tool, run)));
        }
    }
    out
}

fn failure_lines<'a>(
    out: &mut String,
    failures: impl Iterator<Item = (Option<usize>, &'a AssertionResult)>,
) {
    for (turn, a) in failures {
        out.push_str(&text::cause(&Cause::Assertion(turn, a)));
        out.push('\n');
        out.push_str(&text::details(a));
    }
}

fn status(c: &CaseReport) -> TestCaseStatus {
    match c.status {
        Status::Passed => TestCaseStatus::success(),
        Status::Skipped => {
            let mut s = TestCaseStatus::skipped();
            // Why: the spec's `skip:` reason, or what was missing (a warning).
            if let Some(why) = c.error.as_ref().or(c.warnings.first()) {
                s.set_message(clean(why));
            }
            s
        }
        Status::Failed => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let (message, ty) = match c.first_cause() {
                Some(cause) => (text::cause(&cause), cause.kind()),
                None => (text::reason(c), "failure"),
            };
            s.set_message(clean(&message));
            s.set_type(ty);
            s.set_description(clean(&failure_body(c)));
            s
        }
        Status::Error => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            let error = c.error.as_deref().unwrap_or("the case could not run");
            s.set_message(clean(error.lines().next().unwrap_or_default()));
            s.set_type("error");
            let mut body = clean(error);
            let failures = failure_body(c);
            if !failures.is_empty() {
                body.push_str("\n\n");
                body.push_str(&clean(&failures));
            }
            s.set_description(body);
            s
        }
    }
}

fn test_case(c: &CaseReport) -> TestCase {
    let mut tc = TestCase::new(clean(&c.name), status(c));
    tc.set_classname(clean(&c.spec));
    tc.set_time(Duration::from_millis(c.duration_ms));
    tc.set_assertions(
        c.turns.iter().map(|t| t.assertions.len()).sum::<usize>() + c.assertions.len(),
    );
    // Mode, cassette and tokens go in the transcript's first line rather than in
    // `<properties>`: the common JUnit schemas only allow properties on a testsuite.
    let mut out = format!("mode {}, cassette {}, {}\n", c.mode, c.cassette, c.usage);
    out.push_str(&transcript(c));
    if let Some(d) = &c.diff {
        out.push_str("trajectory changed:\n");
        for line in d.lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    tc.set_system_out(out);
    if let Some(level) = &c.containment {
        tc.add_property(("containment", level.as_str()));
    }
    tc
}

/// A skipped `<testcase>` (`name` = `case › turn N`) for each turn the program never
/// reached, so CI counts them apart from the case's own error.
fn not_reached(c: &CaseReport) -> Vec<TestCase> {
    c.turns
        .iter()
        .filter_map(|t| {
            let why = t.not_reached.as_deref()?;
            let mut status = TestCaseStatus::skipped();
            status.set_message(clean(&format!("not reached: {why}")));
            let mut tc = TestCase::new(clean(&format!("{} › turn {}", c.name, t.index)), status);
            tc.set_classname(clean(&c.spec));
            Some(tc)
        })
        .collect()
}

/// The report as JUnit XML, ending with a newline.
pub fn render(report: &RunReport) -> String {
    let mut junit = Report::new("agentproxy");
    junit.set_time(Duration::from_millis(report.duration_ms));
    for spec in text::spec_order(&report.cases) {
        let mut suite = TestSuite::new(clean(spec));
        let cases: Vec<&CaseReport> = report.cases.iter().filter(|c| c.spec == spec).collect();
        suite.set_time(Duration::from_millis(
            cases.iter().map(|c| c.duration_ms).sum(),
        ));
        for c in cases {
            suite.add_test_case(test_case(c));
            suite.add_test_cases(not_reached(c));
        }
        junit.add_test_suite(suite);
    }
    // Cannot fail when writing to memory: quick-xml errs only on I/O.
    let mut xml = junit.to_string().unwrap_or_default();
    if !xml.ends_with('\n') {
        xml.push('\n');
    }
    xml
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample;

    fn attr<'a>(n: roxmltree::Node<'a, '_>, name: &str) -> &'a str {
        n.attribute(name)
            .unwrap_or_else(|| panic!("no {name} on <{}>", n.tag_name().name()))
    }

    #[test]
    fn a_case_failed_only_by_a_problem_names_it_as_the_failure() {
        let case = sample::failed_by_a_problem();
        assert_eq!(case.status, Status::Failed);
        let status = status(&case);
        let TestCaseStatus::NonSuccess {
            message,
            ty,
            description,
            ..
        } = &status
        else {
            panic!("not a failure: {status:?}");
        };
        let problem = "fault request 1: malformed_tool_args did not fire: the answer has no tool call; the program got the answer as it was";
        assert_eq!(message.as_deref(), Some(problem));
        assert_eq!(ty.as_deref(), Some("problem"));
        let body = description.as_deref().unwrap_or_default();
        assert!(body.contains(&format!("problem: {problem}\n")), "{body}");
        assert!(
            body.contains("warning: mocked tool `get_time` was never called"),
            "{body}"
        );
    }

    #[test]
    fn junit_report_snapshot() {
        insta::assert_snapshot!(render(&sample::run()));
    }

    #[test]
    fn junit_parses_as_xml_with_suites_cases_and_counts() {
        let xml = render(&sample::run());
        let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        assert_eq!(attr(root, "tests"), "7");
        assert_eq!(attr(root, "failures"), "2");
        assert_eq!(attr(root, "errors"), "1");
        assert_eq!(attr(root, "skipped"), "3");
        assert_eq!(attr(root, "time"), "5.231");

        let suites: Vec<_> = root
            .children()
            .filter(|n| n.has_tag_name("testsuite"))
            .collect();
        assert_eq!(suites.len(), 2);
        assert_eq!(attr(suites[0], "name"), "specs/weather.yaml");
        assert_eq!(attr(suites[0], "tests"), "3");
        assert_eq!(attr(suites[0], "failures"), "1");
        assert_eq!(attr(suites[0], "errors"), "0");
        assert_eq!(attr(suites[0], "skipped"), "1");
        assert_eq!(attr(suites[1], "name"), "specs/booking.yaml");
        assert_eq!(attr(suites[1], "tests"), "4");
        assert_eq!(attr(suites[1], "failures"), "1");
        assert_eq!(attr(suites[1], "errors"), "1");
        assert_eq!(attr(suites[1], "skipped"), "2");

        let cases: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        assert_eq!(cases.len(), 7);
        for c in &cases {
            let suite = c.parent().expect("parent");
            assert_eq!(attr(*c, "classname"), attr(suite, "name"));
        }
        let by_name = |name: &str| {
            *cases
                .iter()
                .find(|c| attr(**c, "name") == name)
                .expect(name)
        };

        let paris = by_name("paris");
        assert_eq!(attr(paris, "time"), "0.842");
        assert!(paris
            .children()
            .all(|n| !n.has_tag_name("failure") && !n.has_tag_name("error")));
        let out = paris
            .children()
            .find(|n| n.has_tag_name("system-out"))
            .expect("system-out");
        assert!(out
            .text()
            .unwrap_or_default()
            .contains("get_weather {\"city\":\"Paris\"}"));

        let follow = by_name("follow-up | °F");
        let failure = follow
            .children()
            .find(|n| n.has_tag_name("failure"))
            .expect("failure");
        // The miss is the cause; the expectations it left unjudged follow it in the body.
        assert_eq!(
            attr(failure, "message"),
            "cassette miss: POST /v1/chat/completions (openai.chat) has no recording"
        );
        assert_eq!(attr(failure, "type"), "cassette_miss");
        let body = failure.text().unwrap_or_default();
        assert!(body.starts_with("cassette miss: POST /v1/chat/completions"));
        assert!(body.contains("not judged (the program did not get its answers):\nturn 2: reply"));
        assert!(body.contains("\ncase: never: [delete_account]"));

        let unreached = by_name("cancel › turn 2");
        let skipped = unreached
            .children()
            .find(|n| n.has_tag_name("skipped"))
            .expect("skipped");
        assert_eq!(
            attr(skipped, "message"),
            "not reached: the program exited with status 1 during turn 1"
        );

        let book = by_name("book flight");
        let failure = book
            .children()
            .find(|n| n.has_tag_name("failure"))
            .expect("failure");
        assert!(failure
            .text()
            .unwrap_or_default()
            .contains("path: passengers.0.name"));

        let cancel = by_name("cancel");
        let error = cancel
            .children()
            .find(|n| n.has_tag_name("error"))
            .expect("error");
        assert_eq!(
            attr(error, "message"),
            "the program exited with status 1 before replying"
        );
        assert!(error
            .text()
            .unwrap_or_default()
            .contains("KeyError: 'LX345'"));
        assert!(!xml.contains('\u{1b}'));

        let tokyo = by_name("tokyo <later>");
        let skipped = tokyo
            .children()
            .find(|n| n.has_tag_name("skipped"))
            .expect("skipped");
        assert_eq!(attr(skipped, "message"), "skipped: flaky upstream");
    }
}
