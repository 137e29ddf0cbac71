//! The committed examples replay offline from their committed cassettes, exactly as the
//! README tells a new user to run them.
//!
//! The cassettes were recorded against the test suite's scripted upstream; to re-record
//! them after changing an example: `cargo test --test examples -- --ignored`.

mod support;

use std::path::Path;
use std::process::Command;

use support::fake_openai::FakeOpenAi;
use support::proxy::bin;

/// (cassette, command) of each example, relative to the repository root.
const EXAMPLES: [(&str, &[&str]); 1] = [(
    "cassettes/examples/weather-agent.json",
    &["python3", "examples/weather-agent/agent.py"],
)];

/// Example specs, run by `agentproxy test`; their cassettes are committed.
const SPECS: [&str; 2] = [
    "examples/travel-agent/travel.yaml",
    "examples/chat/chat.yaml",
];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn examples_replay_offline_without_a_key() {
    for (cassette, command) in EXAMPLES {
        let out = Command::new(bin())
            .args(["replay", "--cassette", cassette, "--"])
            .args(command)
            .current_dir(repo())
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{cassette}: {stdout}\n{stderr}");
        assert!(
            stdout.contains("tool: get_weather {\"city\": \"Paris\""),
            "{stdout}"
        );
        assert!(stdout.contains("assistant: "), "{stdout}");
        assert!(stderr.contains("0 missed; 0 of"), "{stderr}");
    }
}

#[test]
fn example_specs_pass_offline() {
    for spec in SPECS {
        let out = Command::new(bin())
            .args(["test", spec, "--mode", "replay"])
            .current_dir(repo())
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{spec}:\n{stderr}");
        assert!(stderr.contains(" passed, 0 failed"), "{stderr}");
    }
}

/// `agentproxy test examples/*/`: every example directory at once; the one without a spec
/// is skipped with a note.
#[test]
fn all_example_directories_run_together_and_one_without_a_spec_is_skipped() {
    let mut dirs: Vec<String> = std::fs::read_dir(repo().join("examples"))
        .unwrap()
        .map(|e| format!("examples/{}/", e.unwrap().file_name().to_string_lossy()))
        .collect();
    dirs.sort();
    let out = Command::new(bin())
        .arg("test")
        .args(&dirs)
        .args(["--mode", "replay"])
        .current_dir(repo())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "agentproxy: note: skipped examples/weather-agent/: it has no spec (*.yaml or *.yml)"
        ),
        "{stderr}"
    );
    assert!(stderr.contains(" passed, 0 failed"), "{stderr}");
}

#[test]
fn verbosity_comes_from_the_environment_unless_a_flag_says_otherwise() {
    let run = |verbosity: &str, flags: &[&str]| {
        let out = Command::new(bin())
            .args(["test", SPECS[0], "--mode", "replay"])
            .args(flags)
            .current_dir(repo())
            .env("AGENTPROXY_VERBOSITY", verbosity)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let verbose = run("verbose", &[]);
    assert!(
        verbose.contains("input:  What's the weather in Paris?"),
        "{verbose}"
    );
    assert!(!run("verbose", &["-q"]).contains("input:"));
    assert!(!run("normal", &[]).contains("input:"));
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "re-records the committed example cassettes"]
async fn rerecord_examples() {
    let fake = FakeOpenAi::start().await;
    for spec in SPECS {
        let mut cmd = Command::new(bin());
        cmd.args(["test", spec, "--mode", "record", "--upstream", &fake.url()])
            .current_dir(repo())
            .env(
                "OPENAI_API_KEY",
                "sk-example-not-a-real-key-0000000000000000",
            );
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for (cassette, command) in EXAMPLES {
        let mut cmd = Command::new(bin());
        cmd.args([
            "record",
            "--cassette",
            cassette,
            "--upstream",
            &fake.url(),
            "--",
        ])
        .args(command)
        .current_dir(repo())
        .env(
            "OPENAI_API_KEY",
            "sk-example-not-a-real-key-0000000000000000",
        );
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    fake.stop().await;
}
