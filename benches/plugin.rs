//! The pytest plugin's own cost per test: switching the proxy to the test's cassette,
//! ending it, and fetching its trajectory.
//!
//! A module of N tests (300 with `--bench`), each making one chat request through an
//! openai client made at import time and reading `agentproxy.requests` once, is recorded
//! once against the test suite's fake upstream. Then, in the same run, interleaved:
//! - with the plugin: `pytest` replaying every test from its own cassette;
//! - without: the same module against the fake upstream directly, the `agentproxy` fixture
//!   replaced by a stand-in from a conftest that does nothing.
//!
//! Cost per test = (with − without) / N: the control requests, the cassette loads, and the
//! proxy hop (the fake answers as fast as a replay). Run: `cargo bench --bench plugin`;
//! `cargo test --all-targets` runs it with 5 tests, quiet unless it fails. Figures are in
//! docs/benchmarks.md; this is a measurement, never a pass/fail test.

#[allow(dead_code)]
#[path = "../tests/support/fake_openai.rs"]
mod fake_openai;
#[allow(dead_code)]
#[path = "../tests/support/server.rs"]
mod server;
mod support {
    pub mod smoke;
}

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const TEST: &str = r#"
def test_IDX(agentproxy):
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hello IDX"}])
    assert reply.choices[0].message.content == "You said: hello IDX"
    assert agentproxy.requests in (1, None)
"#;

/// The stand-in fixture of the run without the plugin.
const NO_PLUGIN: &str = r#"
import pytest

class Nothing:
    requests = None

@pytest.fixture
def agentproxy():
    return Nothing()
"#;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn pytest(dir: &Path, plugin: bool, env: &[(&str, &str)]) -> Duration {
    let mut cmd = Command::new(repo().join(".venv/bin/python"));
    cmd.args([
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
    ]);
    if plugin {
        cmd.args(["-p", "agentproxy.pytest_plugin", "-c", "plugin.ini"]);
    } else {
        cmd.args(["-c", "plain.ini"]);
    }
    cmd.current_dir(dir)
        .env("PYTHONPATH", repo().join("python"))
        .env("AGENTPROXY_BIN", env!("CARGO_BIN_EXE_agentproxy"))
        .env_remove("CI")
        .envs(env.iter().copied());
    let started = Instant::now();
    let out = cmd.output().unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "pytest failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn main() -> std::process::ExitCode {
    if let Some(code) = support::smoke::quiet_unless_asked("plugin") {
        return code;
    }
    let full = std::env::args().any(|a| a == "--bench");
    let (tests, rounds) = if full { (300, 3) } else { (5, 1) };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(fake_openai::FakeOpenAi::start());
    let dir = tempfile::tempdir().unwrap();
    let mut module = String::from("from openai import OpenAI\n\nclient = OpenAI()\n");
    for i in 0..tests {
        module.push_str(&TEST.replace("IDX", &i.to_string()));
    }
    // Two test directories with the same module: one with the stand-in fixture.
    for (sub, conftest) in [("with", None), ("without", Some(NO_PLUGIN))] {
        let d = dir.path().join(sub);
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("test_many.py"), &module).unwrap();
        if let Some(c) = conftest {
            std::fs::write(d.join("conftest.py"), c).unwrap();
        }
    }
    std::fs::write(
        dir.path().join("plugin.ini"),
        "[pytest]\ntestpaths = with\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("plain.ini"),
        "[pytest]\ntestpaths = without\n",
    )
    .unwrap();
    let upstream = fake.url();
    let key = [("OPENAI_API_KEY", "sk-bench")];
    let record = [
        ("AGENTPROXY_UPSTREAM", upstream.as_str()),
        ("OPENAI_API_KEY", "sk-bench"),
    ];
    pytest(dir.path(), true, &record);
    let direct = format!("{upstream}/v1");
    let plain = [("OPENAI_BASE_URL", direct.as_str()), key[0]];
    let (mut with, mut without) = (vec![], vec![]);
    for _ in 0..rounds {
        with.push(pytest(dir.path(), true, &[("CI", "true")]));
        without.push(pytest(dir.path(), false, &plain));
    }
    rt.block_on(fake.stop());
    let best = |v: &[Duration]| v.iter().min().copied().unwrap_or_default();
    let (w, wo) = (best(&with), best(&without));
    let per_test = (w.as_secs_f64() - wo.as_secs_f64()) * 1000.0 / tests as f64;
    println!(
        "pytest plugin cost, {tests} tests of one replayed chat request each (best of {rounds})"
    );
    println!(
        "  without the plugin (fake upstream direct): {:>7.2} s",
        wo.as_secs_f64()
    );
    println!(
        "  with the plugin (replay, a cassette each): {:>7.2} s",
        w.as_secs_f64()
    );
    println!("  cost per test:                             {per_test:>7.2} ms");
    std::process::ExitCode::SUCCESS
}
