//! `agentproxy test --check-determinism` end to end: a stdlib agent that puts
//! `datetime.now()` in its system prompt and a fresh id in its tool's result is recorded
//! against the fake upstream, checked (two differences, a hole and a mock suggested), fixed
//! with exactly the suggested spec entries, re-recorded and checked again (stable).

use crate::support;

use std::path::Path;
use std::process::Command;

use support::fake_openai::FakeOpenAi;
use support::proxy::bin;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

struct Run {
    code: i32,
    stderr: String,
}

fn run_in(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env_remove("CI")
        .env_remove("AGENTPROXY_MODE")
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

async fn run_async(dir: &Path, args: &[&str]) -> Run {
    let dir = dir.to_owned();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        run_in(&dir, &args.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap()
}

fn spec(extra: &str) -> String {
    let agent = repo().join("tests/fixtures/clock_agent.py");
    format!(
        "name: clock\napp:\n  command: [python3, {}]\ncassettes: cassettes\n{extra}cases:\n  - name: paris\n    input: What's the weather in Paris?\n",
        agent.display()
    )
}

/// The spec fragment printed after a case's block: the lines under the `to stabilise`
/// heading, without their indentation.
fn suggested_yaml(stderr: &str) -> String {
    let mut lines = stderr
        .lines()
        .skip_while(|l| !l.starts_with("    to stabilise "))
        .skip(1);
    let mut out = String::new();
    for line in lines.by_ref() {
        match line.strip_prefix("    ") {
            Some(rest) => {
                out.push_str(rest);
                out.push('\n');
            }
            None => break,
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timestamp_and_a_random_tool_result_are_found_and_the_suggestions_fix_them() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("clock.yaml"), spec("")).unwrap();
    let url = fake.url();
    let rec = run_async(
        d,
        &["test", "clock.yaml", "--mode", "record", "--upstream", &url],
    )
    .await;
    assert_eq!(rec.code, 0, "{}", rec.stderr);
    let recorded = fake.request_count();

    let check = run_async(
        d,
        &[
            "test",
            "clock.yaml",
            "--check-determinism",
            "--report",
            "json",
            "-o",
            "report.json",
        ],
    )
    .await;
    assert_eq!(check.code, 1, "{}", check.stderr);
    assert_eq!(
        fake.request_count(),
        recorded,
        "the check must not reach the upstream"
    );
    for expected in [
        "FAIL  clock.yaml::paris",
        "determinism)",
        "✗ case: same request in both runs: openai.chat /messages/0/content",
        "(2 requests: openai.chat call 1 of turn 1, openai.chat call 2 of turn 1)",
        "fix:   match.holes: {name: datetime, regex: ",
        "✗ case: same request in both runs: openai.chat /messages/3/content",
        "fix:   tools.get_weather: {result: {",
        "0 passed, 1 failed",
    ] {
        assert!(
            check.stderr.contains(expected),
            "missing {expected:?} in:\n{}",
            check.stderr
        );
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap();
    let case = &report["cases"][0];
    assert_eq!(case["mode"], "determinism");
    assert_eq!(case["assertions"].as_array().unwrap().len(), 2, "{case}");
    assert!(
        case["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("not deterministic: 3 request value(s) in 2 place(s) differed"),
        "{case}"
    );

    // Paste exactly what was suggested into the spec, re-record, check again: stable.
    let yaml = suggested_yaml(&check.stderr);
    assert!(
        yaml.starts_with("match:\n  holes:\n    - {name: datetime, regex: '"),
        "{yaml}"
    );
    assert!(yaml.contains("in: '/messages/0/content'}"), "{yaml}");
    assert!(yaml.contains("tools:\n  get_weather:"), "{yaml}");
    std::fs::write(d.join("clock.yaml"), spec(&yaml)).unwrap();
    let rec = run_async(
        d,
        &["test", "clock.yaml", "--mode", "record", "--upstream", &url],
    )
    .await;
    assert_eq!(rec.code, 0, "{}", rec.stderr);
    let check = run_async(d, &["test", "clock.yaml", "--check-determinism"]).await;
    assert_eq!(
        check.code,
        0,
        "{}\n--- spec ---\n{}",
        check.stderr,
        spec(&yaml)
    );
    assert!(
        check.stderr.contains("PASS  clock.yaml::paris"),
        "{}",
        check.stderr
    );
    // And the ordinary replay of that recording passes too, run after run.
    let replay = run_async(d, &["test", "clock.yaml", "--mode", "replay"]).await;
    assert_eq!(replay.code, 0, "{}", replay.stderr);
    fake.stop().await;
}

#[test]
fn a_deterministic_program_passes_and_a_case_without_cassette_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("cassettes")).unwrap();
    std::fs::copy(
        repo().join("cassettes/examples/weather-agent.json"),
        d.join("cassettes/paris.json"),
    )
    .unwrap();
    let agent = repo().join("examples/weather-agent/agent.py");
    std::fs::write(
        d.join("w.yaml"),
        format!(
            "app:\n  command: [python3, {}]\ncassettes: cassettes\ncases:\n  - name: paris\n    input: What's the weather in Paris?\n  - name: lyon\n    input: And in Lyon?\n",
            agent.display()
        ),
    )
    .unwrap();
    let r = run_in(d, &["test", "w.yaml", "--check-determinism"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("PASS  w.yaml::paris"), "{}", r.stderr);
    assert!(r.stderr.contains("SKIP  w.yaml::lyon"), "{}", r.stderr);
    assert!(r.stderr.contains("no cassette at"), "{}", r.stderr);
    let r = run_in(
        d,
        &["test", "w.yaml", "--check-determinism", "--mode", "record"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
}
