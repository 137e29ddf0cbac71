//! The pytest plugin end to end: a test module whose openai client is made at import
//! time records one cassette per test against the fake upstream, then replays with the
//! upstream stopped, under CI, with `-k`, with pytest-xdist `-n 2`, and fails a test whose
//! request drifted with the near-miss report.

mod support;

use std::path::Path;
use std::process::Command;

use support::fake_openai::FakeOpenAi;

const TESTS: &str = r#"
import json
import pytest
from openai import OpenAI

client = OpenAI()  # at import time, before any test has switched the proxy

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


def ask(question):
    messages = [{"role": "user", "content": question}]
    while True:
        m = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS).choices[0].message
        messages.append(m.model_dump(exclude_none=True))
        if not m.tool_calls:
            return m.content
        for c in m.tool_calls:
            city = json.loads(c.function.arguments)["city"]
            result = {"city": city, "temp_c": 18, "sky": "sunny"}  # the real tool
            messages.append({"role": "tool", "tool_call_id": c.id, "content": json.dumps(result)})


def test_paris(agentproxy):
    reply = ask("What's the weather in QUESTION?")
    assert reply == "It is 18°C and sunny in Paris."
    agentproxy.assert_called("get_weather", city="Paris")
    agentproxy.assert_not_called("get_time")
    assert [c.name for c in agentproxy.calls()] == ["get_weather"]
    assert agentproxy.requests == 2
    assert agentproxy.reply == reply


@pytest.mark.agentproxy
def test_marked_without_the_fixture():
    assert ask("What's the weather in London?") == "It is 18°C and sunny in London."


def test_mocked_tool(agentproxy):
    agentproxy.mock_tool("get_weather", result={"city": "Oslo", "temp_c": -5, "sky": "snowy"})
    assert ask("What's the weather in Oslo?") == "It is -5°C and snowy in Oslo."


@pytest.mark.parametrize("city", ["Rome", "Lima"])
def test_parametrized(agentproxy, city):
    assert ask(f"What's the weather in {city}?").endswith(f"in {city}.")
    assert agentproxy.calls("get_weather")[0].arguments["city"] == city
"#;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Run pytest on the project in `dir` with the plugin from this checkout.
fn pytest(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = Command::new(repo().join(".venv/bin/python"))
        .args([
            "-m",
            "pytest",
            "-p",
            "agentproxy.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "-q",
        ])
        .args(args)
        .current_dir(dir)
        .env("PYTHONPATH", repo().join("python"))
        .env("AGENTPROXY_BIN", support::proxy::bin())
        .env_remove("CI")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

#[tokio::test(flavor = "multi_thread")]
async fn tests_record_a_cassette_each_and_replay_offline() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().to_owned();
    std::fs::create_dir(project.join("tests")).unwrap();
    let module = project.join("tests/test_agent.py");
    std::fs::write(&module, TESTS.replace("QUESTION", "Paris")).unwrap();

    let upstream = fake.url();
    let p = project.clone();
    let (code, out) = tokio::task::spawn_blocking(move || {
        pytest(
            &p,
            &[
                "--agentproxy-mode=record",
                "--agentproxy-upstream",
                &upstream,
            ],
            &[("OPENAI_API_KEY", "sk-test-secret-0123456789")],
        )
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("5 passed"), "{out}");
    let cassettes = project.join("tests/cassettes/test_agent");
    let mut names: Vec<String> = std::fs::read_dir(&cassettes)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "test_marked_without_the_fixture.json",
            "test_mocked_tool.json",
            "test_parametrized-Lima.json",
            "test_parametrized-Rome.json",
            "test_paris.json"
        ]
    );
    let paris = std::fs::read_to_string(cassettes.join("test_paris.json")).unwrap();
    assert!(
        !paris.contains("sk-test-secret"),
        "the key is never written"
    );
    // The mock reached the model, and so the cassette: the real tool said 18.
    let mocked = std::fs::read_to_string(cassettes.join("test_mocked_tool.json")).unwrap();
    assert!(
        mocked.contains("snowy") && !mocked.contains("sunny"),
        "{mocked}"
    );
    let requests = fake.request_count();
    fake.stop().await;

    // Replay, the upstream gone: under CI, with -k, and with two xdist workers.
    for args in [&[][..], &["-k", "paris"][..], &["-n", "2"][..]] {
        let p = project.clone();
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (code, out) = tokio::task::spawn_blocking(move || {
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            pytest(&p, &a, &[("CI", "true")])
        })
        .await
        .unwrap();
        assert_eq!(code, Some(0), "{args:?}: {out}");
        let want = if args.is_empty() || args[0] == "-n" {
            "5 passed"
        } else {
            "1 passed"
        };
        assert!(out.contains(want), "{args:?}: {out}");
    }
    assert_eq!(
        requests, 10,
        "two model requests per test, all while recording"
    );

    // A drifted prompt fails its test with the near-miss report, not the SDK's error.
    std::fs::write(&module, TESTS.replace("QUESTION", "Paris today")).unwrap();
    let p = project.clone();
    let (code, out) =
        tokio::task::spawn_blocking(move || pytest(&p, &["-k", "paris"], &[("CI", "1")]))
            .await
            .unwrap();
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("agentproxy:\n"), "{out}");
    assert!(
        out.contains("cassette miss: POST /v1/chat/completions (openai.chat) has no recording"),
        "{out}"
    );
    assert!(out.contains("Paris today"), "{out}");
    assert!(
        !out.contains("recordings not used"),
        "not after a miss: {out}"
    );

    // A test without a cassette in replay says how to record it.
    std::fs::remove_file(cassettes.join("test_paris.json")).unwrap();
    let p = project.clone();
    let (code, out) =
        tokio::task::spawn_blocking(move || pytest(&p, &["-k", "paris"], &[("CI", "1")]))
            .await
            .unwrap();
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("no cassette"), "{out}");
    assert!(out.contains("--agentproxy-mode=record"), "{out}");
}
