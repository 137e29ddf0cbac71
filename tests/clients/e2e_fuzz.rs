//! Fuzzed tool arguments against the real openai SDK: a mail agent whose `send_email` tool
//! has six properties, recorded against the fake OpenAI upstream, then replayed with it
//! stopped. Every run's arguments reach the program (its outbox says what it got), Python's
//! own `jsonschema` agrees with which are valid, a fragile agent's crashes fail their runs,
//! and the `fuzz:` a failing run prints keeps it as a regression run.

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::fake_openai::FakeOpenAi;
use support::proxy::case;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

const SPEC: &str = r#"
app:
  command: [PYTHON, SCRIPT]
  timeout: 60s
execution: {parallel: 2}
cases:
  - name: a careful agent refuses every bad email
    env: {STREAM: "1", OUTBOX: careful.jsonl}
    fuzz: {tool: send_email, valid: 6, invalid: 6, seed: 3}
    expect:
      requests: 3
      exit: 0
      output: {regex: '(?m)^(sent: ops@example\.com|sent: .+|refused: .+)$'}
  - name: a fragile agent
    env: {FRAGILE: "1", OUTBOX: fragile.jsonl}
    FUZZ
    expect: {exit: 0}
"#;

const FRAGILE_FUZZ: &str = "fuzz: {tool: send_email, invalid: 4, seed: 3}";

/// Write the spec with the fragile case's `fuzz:`, run `agentproxy test` with `args`, and
/// return its stderr and JSON report; the outboxes are emptied first.
fn run(dir: &Path, fuzz: &str, args: &[&str]) -> (String, Value) {
    let python = repo().join(".venv/bin/python");
    assert!(python.exists(), "run scripts/setup-python.sh first");
    let script = repo().join("tests/e2e/fuzz_agent.py");
    let spec = SPEC
        .replace("PYTHON", &python.display().to_string())
        .replace("SCRIPT", &script.display().to_string())
        .replace("FUZZ", fuzz);
    std::fs::write(dir.join("spec.yaml"), spec).unwrap();
    for outbox in ["careful.jsonl", "fragile.jsonl"] {
        let _ = std::fs::remove_file(dir.join(outbox));
    }
    // The fragile agent's failing runs fail the run.
    support::proxy::test_report(dir, args, 1)
}

/// The send_email calls the agent handled, in order: arguments and verdict.
fn outbox(dir: &Path, name: &str) -> Vec<(Value, String)> {
    let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["arguments"].clone(),
                v["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mail_tool_with_six_properties_is_fuzzed_in_record_and_replay() {
    let openai = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_owned();
    let url = openai.url();
    let (rec_err, recorded) = tokio::task::spawn_blocking(move || {
        run(&d, FRAGILE_FUZZ, &["--mode", "record", "--upstream", &url])
    })
    .await
    .unwrap();
    // Each case's own run reached the upstream (three requests); the fuzz runs replayed.
    assert_eq!(openai.request_count(), 6, "{rec_err}");
    openai.stop().await;

    let d = dir.path().to_owned();
    let (stderr, replayed) =
        tokio::task::spawn_blocking(move || run(&d, FRAGILE_FUZZ, &["--mode", "replay"]))
            .await
            .unwrap();
    let careful = case(&replayed, "a careful agent refuses every bad email");
    assert_eq!(careful["status"], "passed", "{stderr}");
    let fuzz = &careful["fuzz"];
    let runs = fuzz["runs"].as_array().unwrap();
    assert_eq!(
        (fuzz["tool"].as_str(), fuzz["seed"].as_u64()),
        (Some("send_email"), Some(3))
    );
    let kinds: Vec<&str> = runs.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, [["valid"; 6], ["invalid"; 6]].concat());
    let ways: Vec<&str> = runs[6..10]
        .iter()
        .map(|r| r["violation"].as_str().unwrap())
        .collect();
    assert_eq!(
        ways,
        [
            "missing_required",
            "wrong_type",
            "extra_property",
            "enum_outsider"
        ]
    );
    assert!(runs.iter().all(|r| r["passed"] == true), "{stderr}");
    // The program got each run's arguments, and Python's jsonschema judged them as the
    // generator meant: the valid ones sent, the near misses refused. The first line is the
    // case's own run, with the recorded call.
    let got = outbox(dir.path(), "careful.jsonl");
    assert_eq!(got.len(), 13, "{got:?}");
    assert_eq!(got[0].0["to"], "ops@example.com");
    for (run, (args, verdict)) in runs.iter().zip(&got[1..]) {
        assert_eq!(&run["arguments"], args);
        let want = if run["kind"] == "valid" {
            "sent"
        } else {
            "refused"
        };
        assert_eq!(verdict, want, "{args}");
        // The report keeps what the program printed in the run.
        let output = run["output"].as_str().unwrap();
        assert!(output.contains(&format!("{want}: ")), "{output}");
    }
    // The same seed made the same arguments when recording.
    let rec_careful = case(&recorded, "a careful agent refuses every bad email");
    assert_eq!(rec_careful["fuzz"], careful["fuzz"]);

    // The fragile agent crashes on a missing or mistyped address.
    let fragile = case(&replayed, "a fragile agent");
    assert_eq!(fragile["status"], "failed", "{stderr}");
    let runs = fragile["fuzz"]["runs"].as_array().unwrap();
    let failed: Vec<&Value> = runs.iter().filter(|r| r["passed"] == false).collect();
    assert!(!failed.is_empty(), "{stderr}");
    for r in &failed {
        let failures = r["failures"].to_string();
        assert!(
            failures.contains("KeyError: 'to'") || failures.contains("AttributeError"),
            "{failures}"
        );
    }
    assert!(
        stderr.contains("FAIL  spec.yaml::a fragile agent"),
        "{stderr}"
    );
    assert!(
        stderr.contains("fuzz send_email: 4 runs (seed 3), "),
        "{stderr}"
    );
    // The printed `fuzz:` keeps the first failing run: pasted in, it fails the same way.
    let keep = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("keep it: "))
        .unwrap()
        .to_owned();
    let d = dir.path().to_owned();
    let (stderr, again) =
        tokio::task::spawn_blocking(move || run(&d, &keep, &["--mode", "replay"]))
            .await
            .unwrap();
    let runs = case(&again, "a fragile agent")["fuzz"]["runs"].clone();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{stderr}");
    assert_eq!(runs[0]["kind"], "given");
    assert_eq!(runs[0]["arguments"], failed[0]["arguments"]);
    assert_eq!(runs[0]["failures"], failed[0]["failures"]);
}
