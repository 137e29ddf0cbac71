//! A harness's test (pytest, vitest, jest through `agentproxy serve`) as a case of the run
//! report, so its run gets the same reports as `agentproxy test`: what the model was asked
//! and said, beside what failed it. Pure: serve gathers the facts, this judges them.

use std::collections::BTreeSet;

use crate::cassette::Interaction;
use crate::report::{AssertionResult, CaseReport, Status};

/// The longest file stem of a harness's cassette: a test's name holds its parameters (or
/// its describe blocks), which may be longer than a file name may be.
const STEM_MAX: usize = 80;

/// The file stem of the cassette of a harness's test `name`: every run of characters
/// that is not an ASCII letter, digit, `.`, `_` or `-` becomes one `-`, none at either
/// end (`test` for a name with nothing else); a stem longer than [`STEM_MAX`] is cut and
/// told apart from the other names of that beginning by a hash of the whole.
pub fn file_stem(name: &str) -> String {
    let mut stem = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        let kept = c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        match (kept, in_run) {
            (true, _) => stem.push(c),
            (false, false) => stem.push('-'),
            (false, true) => {}
        }
        in_run = !kept;
    }
    let stem = stem.trim_matches('-');
    if stem.is_empty() {
        return "test".to_owned();
    }
    if stem.len() <= STEM_MAX {
        return stem.to_owned();
    }
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(stem.as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    // ASCII only by now: any byte is a char boundary.
    let cut = stem[..STEM_MAX - hex.len() - 1].trim_end_matches('-');
    format!("{cut}-{hex}")
}

/// What serve knows of a test when it ends.
pub struct Ended<'a> {
    /// The harness's name for it (`pytest`, `vitest`, `jest`), shown where a spec's file is.
    pub runner: &'a str,
    pub name: &'a str,
    pub mode: &'a str,
    pub cassette: &'a str,
    pub duration_ms: u64,
    pub exchanges: &'a [Interaction],
    /// Model requests that reached the proxy, missed ones included.
    pub requests: usize,
    /// The tools the test mocked.
    pub mocked: &'a BTreeSet<String>,
    pub misses: &'a [String],
    /// Failed upstream requests and mocks that could not answer: each fails the test.
    pub problems: Vec<String>,
    /// Recordings the test did not use.
    pub unused: &'a [String],
    /// How the trajectory changed against the cassette a recording replaced.
    pub diff: Option<String>,
    /// Why the test failed in its own code, as its harness says (an assertion, an error).
    pub failure: Option<&'a str>,
}

/// The test as a one-turn case: failed when it missed, had a problem, or failed in its
/// own code.
pub fn case(t: Ended<'_>) -> CaseReport {
    let turn =
        super::evaluate::harness_turn(t.exchanges, t.requests, !t.misses.is_empty(), t.mocked);
    let assertions = (t.failure.iter())
        .map(|message| AssertionResult {
            passed: false,
            what: format!("the test's own code ({})", t.runner),
            message: message.to_string(),
            expected: None,
            actual: None,
            path: None,
            nearest: None,
        })
        .collect::<Vec<_>>();
    let failed = !(assertions.is_empty() && t.misses.is_empty() && t.problems.is_empty());
    CaseReport {
        spec: t.runner.to_owned(),
        name: t.name.to_owned(),
        status: if failed {
            Status::Failed
        } else {
            Status::Passed
        },
        mode: t.mode.to_owned(),
        cassette: t.cassette.to_owned(),
        containment: None,
        duration_ms: t.duration_ms,
        usage: turn.usage,
        turns: vec![turn],
        assertions,
        misses: t.misses.to_vec(),
        near_misses: vec![],
        problems: t.problems,
        warnings: t.unused.iter().map(|u| format!("not used: {u}")).collect(),
        error: None,
        diff: t.diff,
        fuzz: None,
        crash: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended<'a>(mocked: &'a BTreeSet<String>) -> Ended<'a> {
        Ended {
            runner: "pytest",
            name: "test_agent.py::test_paris",
            mode: "replay",
            cassette: "cassettes/test_paris.json",
            duration_ms: 12,
            exchanges: &[],
            requests: 0,
            mocked,
            misses: &[],
            problems: vec![],
            unused: &[],
            diff: None,
            failure: None,
        }
    }

    #[test]
    fn a_test_name_is_a_file_stem_the_harnesses_always_gave() {
        for (name, stem) in [
            ("test_paris", "test_paris"),
            ("test_ask[what?]", "test_ask-what"),
            (
                "weather agent > asks for the weather in Paris",
                "weather-agent-asks-for-the-weather-in-Paris",
            ),
            ("a-?b", "a--b"),
            ("--x--", "x"),
            ("???", "test"),
            ("été.v1", "t-.v1"),
        ] {
            assert_eq!(file_stem(name), stem, "{name}");
        }
        // Long names keep a hash of the whole, as the plugin's and the helpers' did.
        let long = format!("test_q[{}]", "x".repeat(100));
        let stem = file_stem(&long);
        assert_eq!(stem.len(), 80, "{stem}");
        assert_eq!(stem, format!("test_q-{}-f8b24316", "x".repeat(64)));
        assert_ne!(file_stem(&format!("{long}y")), stem);
    }

    #[test]
    fn a_test_fails_by_its_own_code_a_miss_or_a_problem() {
        let mocked = BTreeSet::new();
        let passed = case(ended(&mocked));
        assert_eq!(
            (passed.status, passed.spec.as_str()),
            (Status::Passed, "pytest")
        );
        assert_eq!(passed.turns.len(), 1);
        let own = case(Ended {
            failure: Some("assert 'rain' in reply"),
            ..ended(&mocked)
        });
        assert_eq!(own.status, Status::Failed);
        assert_eq!(own.assertions[0].message, "assert 'rain' in reply");
        let missed = [String::from("cassette miss: POST /v1/chat/completions")];
        let miss = case(Ended {
            misses: &missed,
            requests: 1,
            ..ended(&mocked)
        });
        assert_eq!(miss.status, Status::Failed);
        assert!(miss.turns[0].missed);
        let problem = case(Ended {
            problems: vec!["mock get_weather: results used up".into()],
            ..ended(&mocked)
        });
        assert_eq!(problem.status, Status::Failed);
    }
}
