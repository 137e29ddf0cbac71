//! The committed examples replay offline from their committed cassettes, exactly as the
//! README tells a new user to run them.
//!
//! The cassettes were recorded against the test suite's scripted upstream; to re-record
//! them after changing an example: `cargo test --test suite examples:: -- --ignored` (with
//! `RERECORD=crash.yaml`, only the specs whose path contains that).

use crate::support;

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
const SPECS: [&str; 6] = [
    "examples/travel-agent/travel.yaml",
    "examples/chat/chat.yaml",
    "examples/mcp-agent/mail.yaml",
    "examples/travel-agent/faults.yaml",
    "examples/travel-agent/fuzz.yaml",
    "examples/mcp-agent/crash.yaml",
];
/// The chat example's spec, whose cassette names are checked below.
const CHAT_SPEC: &str = SPECS[1];

/// The binary, with its directory first on PATH: the MCP example's agent starts its
/// server through `agentproxy mcp`, as a user's configuration would.
fn agentproxy() -> Command {
    let dir = Path::new(bin()).parent().unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    let mut cmd = Command::new(bin());
    cmd.env("PATH", format!("{}:{path}", dir.display()));
    cmd
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn examples_replay_offline_without_a_key() {
    for (cassette, command) in EXAMPLES {
        let out = agentproxy()
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
        let out = agentproxy()
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
    let out = agentproxy()
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
        let out = agentproxy()
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
    // The MCP example's mail goes here, not into the repository.
    let outbox = tempfile::NamedTempFile::new().unwrap();
    let only = std::env::var("RERECORD").unwrap_or_default();
    for spec in SPECS.iter().filter(|s| s.contains(&only)) {
        let mut cmd = agentproxy();
        cmd.args(["test", spec, "--mode", "record", "--upstream", &fake.url()])
            .current_dir(repo())
            .env("OUTBOX", outbox.path())
            .env(
                "OPENAI_API_KEY",
                "sk-example-not-a-real-key-0000000000000000",
            );
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for &(cassette, command) in EXAMPLES.iter().filter(|(c, _)| c.contains(&only)) {
        let mut cmd = agentproxy();
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

/// A run split in shards (by flag, and by CI_NODE_INDEX / CI_NODE_TOTAL), each shard's JSON
/// report merged back into the whole run's reports.
#[test]
fn sharded_runs_merge_into_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let spec = "examples/travel-agent/travel.yaml";
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let out = agentproxy()
            .args(args)
            .current_dir(repo())
            .env_remove("CI_NODE_INDEX")
            .env_remove("CI_NODE_TOTAL")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let report = |k: usize| dir.path().join(format!("shard-{k}.json"));
    let shard = |k: usize, flag: Option<&str>, env: &[(&str, &str)]| {
        let out = report(k);
        let mut args = vec!["test", spec, "--mode", "replay", "--report", "json", "-o"];
        args.push(out.to_str().unwrap());
        args.extend(flag.map(|f| ["--shard", f]).into_iter().flatten());
        run(&args, env)
    };
    // count:K/3 deals the two cases to shards 1 and 2: shard 3 is empty, and exits 0.
    let (code, err) = shard(1, Some("count:1/3"), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("agentproxy: shard count:1/3: 1 of the 2 selected case(s) run here; the others are reported skipped"), "{err}");
    assert!(err.contains("1 passed, 0 failed, 1 skipped"), "{err}");
    let (code, err) = shard(2, None, &[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "3")]);
    // Read from the environment when no flag is given: 1-based, by hash.
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("agentproxy: shard hash:2/3: "), "{err}");
    let (code, err) = shard(2, Some("count:2/3"), &[]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = shard(3, Some("count:3/3"), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("0 of the 2 selected case(s) run here; nothing to run"),
        "{err}"
    );

    let merged_json = dir.path().join("merged.json");
    let junit = dir.path().join("junit.xml");
    let (code, err) = run(
        &[
            "report",
            "merge",
            report(3).to_str().unwrap(),
            report(1).to_str().unwrap(),
            report(2).to_str().unwrap(),
            "--report",
            "json",
            "-o",
            merged_json.to_str().unwrap(),
            "--report",
            "junit",
            "-o",
            junit.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged_json).unwrap()).unwrap();
    assert_eq!(merged["summary"]["passed"], 2, "{merged}");
    assert_eq!(merged["summary"]["skipped"], 0, "{merged}");
    assert_eq!(merged["shard"], serde_json::Value::Null);
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("the merged JUnit is XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(
        (root.attribute("tests"), root.attribute("skipped")),
        (Some("2"), Some("0")),
        "{xml}"
    );
    let names: Vec<&str> = (root.descendants())
        .filter(|n| n.has_tag_name("testcase"))
        .filter_map(|n| n.attribute("name"))
        .collect();
    assert_eq!(
        names,
        ["paris weather", "weather and time in two cities"],
        "{xml}"
    );

    // A shard left out is refused.
    let (code, err) = run(
        &[
            "report",
            "merge",
            report(1).to_str().unwrap(),
            report(3).to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("shard(s) 2 of 3 missing"), "{err}");
}

/// `--max-age` (and `execution.max_age`) warn of a cassette recorded longer ago; the run
/// still passes.
#[test]
fn an_old_cassette_is_named_with_its_age() {
    let out = agentproxy()
        .args([
            "replay",
            "--max-age",
            "1s",
            "--cassette",
            EXAMPLES[0].0,
            "--",
        ])
        .args(EXAMPLES[0].1)
        .current_dir(repo())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "agentproxy: warning: cassette cassettes/examples/weather-agent.json was recorded "
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("more than the maximum age of 1s; re-record it"),
        "{stderr}"
    );

    let out = agentproxy()
        .args(["test", CHAT_SPEC, "--mode", "replay", "--max-age", "1s"])
        .current_dir(repo())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("    warning: cassette cassettes/examples/chat/greeting-then-follow-up.json was recorded "),
        "{stderr}"
    );
    let fresh = agentproxy()
        .args(["test", CHAT_SPEC, "--mode", "replay", "--max-age", "100y"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&fresh.stderr).contains("warning"));
}

/// Run as a path (`target/debug/agentproxy`, `cargo run`) with no `agentproxy` on PATH,
/// the MCP example still finds its stand-in: agentproxy puts its own directory last on
/// the program's PATH, and the agent's MCP host starts `agentproxy mcp` by name.
#[test]
fn the_mcp_example_finds_agentproxy_mcp_without_it_on_path() {
    let out = Command::new(bin())
        .args(["test", "examples/mcp-agent/mail.yaml", "-q"])
        .current_dir(repo())
        .env("PATH", "/usr/bin:/bin")
        .env_remove("CI")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("2 passed, 0 failed"), "{text}");
}
