//! The test helpers' own cost per test (the pytest plugin, then the vitest helper of the
//! npm package): switching the proxy to the test's cassette, ending it, and fetching its
//! trajectory.
//!
//! A module of N tests (300 with `--bench`), each making one chat request through an
//! openai client made at import time and reading `agentproxy.requests` once, is recorded
//! once against the test suite's fake upstream. Then, in the same run, interleaved:
//! - with the plugin: `pytest` replaying every test from its own cassette;
//! - without: the same module against the fake upstream directly, the `agentproxy` fixture
//!   replaced by a stand-in from a conftest that does nothing.
//!
//! Cost per test = (with − without) / N: the control requests, the cassette loads, and the
//! proxy hop (the fake answers as fast as a replay). The same for vitest: a file of N
//! tests on the openai Node SDK, in a fresh project with the npm packages made from this
//! build (installed from npm's cache), with `agentproxy/vitest` replaying and without it
//! against the fake directly. Run: `cargo bench --bench plugin`;
//! `cargo test --all-targets` runs it with 5 tests, quiet unless it fails. Figures are in
//! docs/benchmarks.md; this is a measurement, never a pass/fail test.

#[allow(dead_code)]
#[path = "../tests/support/fake_openai.rs"]
mod fake_openai;
#[allow(dead_code)]
#[path = "../tests/support/npm.rs"]
mod npm;
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
    assert agentproxy.requests is None or len(agentproxy.requests) == 1
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
    timed(cmd, "pytest")
}

/// How long `cmd` (a test runner, `what`) took to pass; it must pass.
fn timed(mut cmd: Command, what: &str) -> Duration {
    let started = Instant::now();
    let out = cmd.output().unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
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
    report("pytest plugin", tests, rounds, &with, &without);
    let (with, without) = vitest(&upstream, tests, rounds);
    rt.block_on(fake.stop());
    report("vitest helper", tests, rounds, &with, &without);
    std::process::ExitCode::SUCCESS
}

/// Print one helper's figures: the best round with it and without it, and the difference
/// per test.
fn report(what: &str, tests: usize, rounds: usize, with: &[Duration], without: &[Duration]) {
    let best = |v: &[Duration]| v.iter().min().copied().unwrap_or_default();
    let (w, wo) = (best(with), best(without));
    let per_test = (w.as_secs_f64() - wo.as_secs_f64()) * 1000.0 / tests as f64;
    println!("{what} cost, {tests} tests of one replayed chat request each (best of {rounds})");
    println!(
        "  without it (fake upstream direct):         {:>7.2} s",
        wo.as_secs_f64()
    );
    println!(
        "  with it (replay, a cassette each):         {:>7.2} s",
        w.as_secs_f64()
    );
    println!("  cost per test:                             {per_test:>7.2} ms");
}

/// A vitest test of the bench: one chat request, and (with the helper) one trajectory read.
const VITEST_TEST: &str = r#"
test("t IDX", async () => {
  const reply = await client.chat.completions.create({
    model: "gpt-4o-mini", messages: [{ role: "user", content: "hello IDX" }] });
  expect(reply.choices[0].message.content).toBe("You said: hello IDX");
  READ
});
"#;

/// The vitest rounds with the helper (replaying) and without it (the fake direct), after
/// one recording run: the time of each.
fn vitest(upstream: &str, tests: usize, rounds: usize) -> (Vec<Duration>, Vec<Duration>) {
    let node = npm::node().expect("the bench needs Node 24 from tests/node");
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(
        empty.path().join("package.json"),
        r#"{"name": "bench", "private": true, "type": "module",
            "devDependencies": {"agentproxy": "*", "openai": "7.60.0", "vitest": "5.1.2"}}"#,
    )
    .unwrap();
    let project = npm::fresh_project(&node, empty.path());
    let app = project.path().join("app");
    for (sub, helper) in [("with", true), ("without", false)] {
        let mut file = String::from(
            "import { expect, test } from \"vitest\";\nimport OpenAI from \"openai\";\n",
        );
        if helper {
            file.push_str("import { agentproxy } from \"agentproxy/vitest\";\n");
        }
        file.push_str("const client = new OpenAI({ maxRetries: 0 });\n");
        let read = match helper {
            true => "expect((await agentproxy.requests()).length).toBe(1);",
            false => "",
        };
        for i in 0..tests {
            file.push_str(
                &VITEST_TEST
                    .replace("IDX", &i.to_string())
                    .replace("READ", read),
            );
        }
        std::fs::create_dir(app.join(sub)).unwrap();
        std::fs::write(app.join(sub).join("many.test.mjs"), file).unwrap();
        let setup = if helper {
            r#"setupFiles: ["agentproxy/vitest"], "#
        } else {
            ""
        };
        let config = format!(
            "export default {{ test: {{ {setup}include: [\"{sub}/**/*.test.mjs\"] }} }};\n"
        );
        std::fs::write(app.join(format!("{sub}.config.mjs")), config).unwrap();
    }
    let run = |sub: &str, env: &[(&str, &str)]| {
        let mut cmd = Command::new(&node);
        cmd.args(["node_modules/vitest/vitest.mjs", "run", "--config"])
            .arg(format!("{sub}.config.mjs"))
            .current_dir(&app)
            .env("PATH", npm::no_cargo_path(&node))
            .env_remove("CI")
            .env_remove("AGENTPROXY_MODE")
            .envs(env.iter().copied());
        timed(cmd, "vitest")
    };
    let key = ("OPENAI_API_KEY", "sk-bench");
    run(
        "with",
        &[
            ("AGENTPROXY_MODE", "record"),
            ("AGENTPROXY_UPSTREAM", upstream),
            key,
        ],
    );
    let direct = format!("{upstream}/v1");
    let (mut with, mut without) = (vec![], vec![]);
    for _ in 0..rounds {
        with.push(run("with", &[("CI", "true")]));
        without.push(run("without", &[("OPENAI_BASE_URL", direct.as_str()), key]));
    }
    (with, without)
}
