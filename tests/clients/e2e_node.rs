//! End-to-end tests with Node.js clients (Node 24, from `tests/node`, installed by
//! `scripts/setup-node.sh`): each is recorded through the `agentproxy` binary against a
//! fake upstream, then replayed from the cassette with the fake stopped, and must print
//! the same thing.
//!
//! A missing install fails these tests (a silent skip would let CI go green without
//! them); `AGENTPROXY_SKIP_NODE_E2E=1` skips them on purpose.

use crate::support;

use std::path::Path;

use support::fake_openai::FakeOpenAi;
use support::npm::{copy_dir, fresh_project, no_cargo_path, node};
use support::run::{agentproxy, session};

const API_KEY: &str = "sk-e2e-not-a-real-key-000000000000000000";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Node's own fetch to a hard-coded `https://api.openai.com/v1` goes through the proxy
/// because of `NODE_USE_ENV_PROXY`, trusting the session's CA through
/// `NODE_EXTRA_CA_CERTS`: recorded against the fake (`--upstream`), replayed with it
/// stopped. Run contained, so that a Node that ignored the variable would be seen (its
/// own name lookup, named) and could reach nothing; where the machine cannot contain,
/// `--contain on` says why and nothing runs.
#[tokio::test(flavor = "multi_thread")]
async fn node_fetch_through_node_use_env_proxy_records_and_replays() {
    let Some(node) = node() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.json");
    let fake = FakeOpenAi::start().await;
    let script = repo().join("tests/node/hardcoded_fetch.mjs");
    let program = [node.as_os_str(), script.as_os_str()];
    let run = |mode: &str, upstream: Option<String>| {
        let mut flags = vec!["--contain", "on"];
        flags.extend((upstream.iter()).flat_map(|u| ["--upstream", u.as_str()]));
        agentproxy(
            session(mode, &cassette, &flags, &program),
            &[("OPENAI_API_KEY", API_KEY)],
        )
    };
    let recorded = run("record", Some(fake.url())).await;
    if recorded.stderr.contains("--contain on: ") {
        assert_eq!(recorded.status.code(), Some(2), "{recorded}");
        assert!(recorded.stdout.is_empty(), "{recorded}");
        eprintln!("this machine cannot contain a program: {}", recorded.stderr);
        return;
    }
    assert_eq!(recorded.status.code(), Some(0), "{recorded}");
    assert!(
        recorded.stdout.contains("status: 200\nreply: "),
        "{recorded}"
    );
    assert_eq!(fake.requests().len(), 1, "{recorded}");
    assert!(
        recorded
            .stderr
            .contains("agentproxy: intercepted api.openai.com:443 ×1"),
        "{recorded}"
    );
    // Through the proxy variable: Node looked nothing up itself.
    assert!(!recorded.stderr.contains("looked up"), "{recorded}");
    let written = std::fs::read_to_string(&cassette).unwrap();
    assert!(!written.contains(API_KEY), "{written}");
    fake.stop().await;
    let replayed = run("replay", None).await;
    assert_eq!(replayed.status.code(), Some(0), "{replayed}");
    assert_eq!(replayed.stdout, recorded.stdout, "{replayed}");
    assert!(!replayed.stderr.contains("looked up"), "{replayed}");
}

/// The suites a runner of the fresh project records and replays.
fn suites(runner: &str) -> &'static [&'static str] {
    match runner {
        "vitest" => &["vitest/agent", "vitest/sdks", "vitest/concurrent"],
        _ => &["jest/"],
    }
}

/// One run of a test runner of the fresh project (`vitest run ARGS` or `jest ARGS`), with
/// `env` and nothing of the developer's shell that could steer it.
fn run_tests(
    app: &Path,
    node: &Path,
    runner: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String) {
    let script = match runner {
        "vitest" => vec!["node_modules/vitest/vitest.mjs", "run"],
        _ => vec!["node_modules/jest/bin/jest.js", "--ci"],
    };
    let mut command = std::process::Command::new(node);
    command.args(script).args(args).current_dir(app);
    for (name, _) in std::env::vars_os() {
        let upper = name.to_string_lossy().to_ascii_uppercase();
        if ["OPENAI_", "AGENTPROXY_", "CI", "NODE_", "VITEST", "JEST"]
            .iter()
            .any(|p| upper.starts_with(p))
        {
            command.env_remove(&name);
        }
    }
    // The Agents SDK uploads traces to api.openai.com unless told not to.
    command
        .env("PATH", no_cargo_path(node))
        .env("NO_COLOR", "1")
        .env("OPENAI_AGENTS_DISABLE_TRACING", "1")
        .envs(env.iter().copied());
    let out = command.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

/// `npm install agentproxy` with no Rust toolchain: vitest and jest suites of an agent on
/// the openai Node SDK record against the fake and replay with it stopped; a changed
/// question fails its test with the near-miss report; two tests of one cassette name are
/// refused; tests that run concurrently in one file each get their own; under CI a test without a cassette fails saying how to record it (and one that asks the model nothing passes without one); and
/// `npx agentproxy` runs the binary.
#[tokio::test(flavor = "multi_thread")]
async fn vitest_and_jest_helpers_from_the_packed_tarball_record_and_replay() {
    let Some(node) = node() else { return };
    let project = fresh_project(&node, &repo().join("tests/node/project"));
    let app = project.path().join("app");
    // Under AGENTPROXY_CASSETTE_DIR a test file keeps its directory: files of one name in
    // two directories (run by workers that cannot see each other) get two cassettes.
    let paths = std::process::Command::new(&node)
        .arg("-e")
        .arg(
            r#"const { cassetteDir } = require("agentproxy");
            const env = { AGENTPROXY_CASSETTE_DIR: "cass" };
            for (const dir of ["t/a", "t/b"]) {
              console.log(cassetteDir("/p", `/p/${dir}/agent.test.mjs`, env));
            }"#,
        )
        .current_dir(&app)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&paths.stdout),
        "/p/cass/t/a/agent.test\n/p/cass/t/b/agent.test\n",
        "{}",
        String::from_utf8_lossy(&paths.stderr)
    );
    let fake = FakeOpenAi::start().await;
    let upstream = fake.url();
    let record = [
        ("AGENTPROXY_MODE", "record"),
        ("AGENTPROXY_UPSTREAM", upstream.as_str()),
        ("OPENAI_API_KEY", API_KEY),
        ("RUN_ID", "run-1"),
    ];
    for runner in ["vitest", "jest"] {
        let (code, out) = run_tests(&app, &node, runner, suites(runner), &record);
        assert_eq!(code, Some(0), "{runner} record: {out}");
        let all = match runner {
            "vitest" => "Tests  11 passed (11)",
            _ => "Tests:       1 passed, 1 total",
        };
        assert!(out.contains(all), "{runner} record: {out}");
    }
    for cassette in [
        "vitest/cassettes/agent.test/weather-paris.json",
        "vitest/cassettes/agent.test/weather-mocked.json",
        "vitest/cassettes/sdks.test/ai-sdk-chat-tool-loop.json",
        "vitest/cassettes/sdks.test/ai-sdk-responses-streamed-tool-loop.json",
        "vitest/cassettes/sdks.test/openai-agents-tool-loop.json",
        "vitest/cassettes/concurrent.test/weather-in-Tokyo.json",
        "jest/cassettes/agent.test/weather-paris.json",
    ] {
        let text = std::fs::read_to_string(app.join(cassette))
            .unwrap_or_else(|e| panic!("{cassette}: {e}"));
        assert!(!text.contains(API_KEY), "{text}");
    }
    // `show --format html` gives a mocked result open, under the tool call it answers,
    // not folded into the next request's additions.
    let shown = std::process::Command::new(env!("CARGO_BIN_EXE_agentproxy"))
        .args(["show", "--format", "html"])
        .arg(app.join("vitest/cassettes/agent.test/weather-mocked.json"))
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&shown.stdout);
    let call = page.find("→ tool call").expect("a tool call");
    let mocked = page.find("mocked</span>").expect("a mocked result");
    let fold = page[call..]
        .find("<details")
        .map_or(usize::MAX, |at| call + at);
    assert!(call < mocked && mocked < fold, "{page}");
    // Each concurrent test's requests went to its own cassette.
    for (city, others) in [("Paris", ["Tokyo", "Lima"]), ("Tokyo", ["Paris", "Lima"])] {
        let cassette = format!("vitest/cassettes/concurrent.test/weather-in-{city}.json");
        let text = std::fs::read_to_string(app.join(cassette)).unwrap();
        assert!(
            text.contains(&format!("What's the weather in {city}?")),
            "{text}"
        );
        assert!(others.iter().all(|o| !text.contains(o)), "{text}");
    }
    // A re-record with another question says how the trajectory changed; recording the
    // question again puts the cassette back (and says so).
    let today = "\"What's the weather in Paris today?\"";
    for (question, change) in [(today, format!("→ {today}")), ("", format!("{today} →"))] {
        let env = [&record[..], &[("QUESTION", question.trim_matches('"'))]].concat();
        let env: Vec<_> = env.into_iter().filter(|(_, v)| !v.is_empty()).collect();
        for (runner, args, test) in [
            (
                "vitest",
                ["vitest/agent", "-t", "paris"],
                "vitest/agent.test.mjs > weather > paris",
            ),
            (
                "jest",
                ["jest/", "-t", "paris"],
                "jest/agent.test.js > weather paris",
            ),
        ] {
            let (code, out) = run_tests(&app, &node, runner, &args, &env);
            assert_eq!(code, Some(0), "{out}");
            let told = format!(
                "agentproxy: {test}: trajectory changed by re-recording (benign):\n    what the agent was told\n"
            );
            assert!(
                out.contains(&told) && out.contains(&change),
                "{change}: {out}"
            );
        }
    }
    fake.stop().await;
    // CI, no key, the fake stopped, another run id (tolerated): every test replays.
    let ci = [("CI", "true"), ("RUN_ID", "run-2")];
    for runner in ["vitest", "jest"] {
        let (code, out) = run_tests(&app, &node, runner, suites(runner), &ci);
        assert_eq!(code, Some(0), "{runner} replay: {out}");
    }
    // A changed question: the test fails with the near-miss report and how to re-record.
    let changed = [
        ("CI", "true"),
        ("QUESTION", "What's the weather in Paris today?"),
    ];
    let (code, out) = run_tests(
        &app,
        &node,
        "vitest",
        &["vitest/agent", "-t", "paris"],
        &changed,
    );
    assert_eq!(code, Some(1), "{out}");
    for line in [
        "cassette miss: POST /v1/chat/completions (openai.chat) has no recording",
        "+ What's the weather in Paris today?",
        "AGENTPROXY_MODE=record npx vitest run vitest/agent.test.mjs -t '^weather > paris$'",
        // In the helpers' words, not a CLI flag or a spec block.
        "`agentproxy.tolerate(...)`, the AGENTPROXY_MATCH variable, or `agentproxy.mockTool(...)`",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    assert!(!out.contains("--match-ignore"), "{out}");
    // Reported once: the helper's report, not the SDK's error about the same miss too.
    assert_eq!(out.matches("cassette miss: POST").count(), 1, "{out}");
    // The run as one HTML page, in either runner: the failure first, the mock beside its
    // tool call; in a real browser, with nothing logged.
    for runner in ["vitest", "jest"] {
        let page = project.path().join(format!("{runner}.html"));
        let page_env = [&changed[..], &[("AGENTPROXY_HTML", page.to_str().unwrap())]].concat();
        let args: &[&str] = match runner {
            "vitest" => &["vitest/agent"],
            _ => &["jest/"],
        };
        let (code, out) = run_tests(&app, &node, runner, args, &page_env);
        assert_eq!(code, Some(1), "{out}");
        html_page_of_a_run(&page, runner);
    }
    let (code, out) = run_tests(&app, &node, "jest", &["jest/", "-t", "paris"], &changed);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("cassette miss: POST /v1/chat/completions"),
        "{out}"
    );
    assert_eq!(out.matches("cassette miss: POST").count(), 1, "{out}");
    assert!(out.contains("`agentproxy.tolerate(...)`"), "{out}");
    assert!(
        out.contains("AGENTPROXY_MODE=record npx jest jest/agent.test.js -t '^weather paris$'"),
        "{out}"
    );
    // The hints' patterns select exactly their test.
    let (code, out) = run_tests(&app, &node, "vitest", &["-t", "^weather > paris$"], &ci);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("Tests  1 passed | 13 skipped (14)"), "{out}");
    let (code, out) = run_tests(&app, &node, "jest", &["-t", "^weather paris$"], &ci);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("Tests:       1 passed, 1 total"), "{out}");
    // Two tests, one cassette name: the second is refused, naming both.
    let (code, out) = run_tests(&app, &node, "vitest", &["vitest/collide"], &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("would share the cassette"), "{out}");
    // Under CI, a test without a cassette fails saying how to record it, in this
    // runner's words; one that asks the model nothing needs none.
    std::fs::remove_dir_all(app.join("vitest/cassettes")).unwrap();
    let (code, out) = run_tests(&app, &node, "vitest", &["vitest/agent", "-t", "paris"], &ci);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("to replay, and the test made 1 request(s) that needed one; record it with `AGENTPROXY_MODE=record npx vitest run vitest/agent.test.mjs -t '^weather > paris$'`"),
        "{out}"
    );
    let (code, out) = run_tests(&app, &node, "vitest", &["vitest/plain"], &ci);
    assert_eq!(code, Some(0), "{out}");
    // The launcher runs the binary.
    let version = std::process::Command::new(&node)
        .arg(app.join("node_modules/agentproxy/bin/agentproxy.js"))
        .arg("--version")
        .env("PATH", no_cargo_path(&node))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&version.stdout).starts_with("agentproxy "),
        "{version:?}"
    );
}

/// The TypeScript example replays from its committed cassettes, as its README says (CI,
/// no key, no upstream).
#[test]
fn the_typescript_example_replays_its_committed_cassettes() {
    let Some(node) = node() else { return };
    let example = repo().join("examples/ts-agent");
    let project = fresh_project(&node, &example);
    let app = project.path().join("app");
    let (code, out) = run_tests(&app, &node, "vitest", &[], &[("CI", "true")]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("Tests  2 passed (2)"), "{out}");
}

/// Records the TypeScript example's cassettes again, against the scripted upstream:
/// `cargo test --test clients e2e_node:: -- --ignored`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "re-records examples/ts-agent/cassettes"]
async fn re_record_the_typescript_example() {
    let Some(node) = node() else { return };
    let example = repo().join("examples/ts-agent");
    let project = fresh_project(&node, &example);
    let app = project.path().join("app");
    let fake = FakeOpenAi::start().await;
    let upstream = fake.url();
    let env = [
        ("AGENTPROXY_MODE", "record"),
        ("AGENTPROXY_UPSTREAM", upstream.as_str()),
        ("OPENAI_API_KEY", API_KEY),
    ];
    let (code, out) = run_tests(&app, &node, "vitest", &[], &env);
    assert_eq!(code, Some(0), "{out}");
    let _ = std::fs::remove_dir_all(example.join("cassettes"));
    copy_dir(&app.join("cassettes"), &example.join("cassettes"));
    fake.stop().await;
}

/// The HTML page of a harness's run (`AGENTPROXY_HTML`) of the agent tests with the
/// question changed: the miss first and failed, the others passed, a mocked result shown
/// as the mock's beside its call; the browser logs nothing.
fn html_page_of_a_run(page: &Path, runner: &str) {
    let Some(chromium) = support::browser::chromium() else {
        return;
    };
    let (dom, console) = support::browser::browse(&chromium, page, "");
    assert!(console.is_empty(), "{console:#?}");
    let sections: Vec<&str> = dom
        .match_indices("<section class=\"case")
        .map(|(i, _)| &dom[i..i + dom[i..].find('>').unwrap()])
        .collect();
    // jest's project has the one test, vitest's three.
    let tests = if runner == "jest" { 1 } else { 3 };
    assert_eq!(sections.len(), tests, "{runner}: {dom}");
    // Failures first, then what passed; names as the runner shows them (no absolute path).
    let failed = sections
        .iter()
        .take_while(|s| s.contains("data-status=\"failed\""))
        .count();
    assert!(failed >= 1, "{runner}: {sections:#?}");
    assert!(
        sections[failed..]
            .iter()
            .all(|s| s.contains("data-status=\"passed\"")),
        "{runner}: {sections:#?}"
    );
    assert!(!dom.contains("/tmp/"), "{runner}: {sections:#?}");
    assert!(
        dom.contains("cassette miss: POST /v1/chat/completions"),
        "{runner}: {dom}"
    );
    if runner == "vitest" {
        let mocked = &dom[dom.find("weather &gt; mocked").expect("the mocked test")..];
        assert!(mocked.contains("get_weather"), "{mocked}");
        assert!(mocked.contains("mock"), "{mocked}");
    }
}
