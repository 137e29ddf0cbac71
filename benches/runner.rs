//! Runner overhead: what `agentproxy test` adds beyond the program's own run time.
//!
//! A spec of 100 cases, each running a trivial Python program (standard library only) that
//! makes one chat request, is recorded once against the test suite's fake upstream, then
//! replayed serially and with `--parallel 4`. The baseline runs the same program 100 times
//! directly against the fake upstream. Overhead per case = (replay run − baseline) / 100.
//!
//! Run: `cargo bench --bench runner` (`-- --cases N` for another count); `cargo test
//! --all-targets` runs it with 3 cases, quiet unless it fails. Figures are
//! recorded in docs/benchmarks.md. This is a measurement, never a pass/fail test.

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

const PROGRAM: &str = r#"
import json, os, urllib.request
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": os.environ["AGENTPROXY_INPUT"]}]}).encode()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
                             headers={"content-type": "application/json"})
print(json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"])
"#;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_agentproxy")
}

fn agentproxy(dir: &Path, args: &[&str]) -> Duration {
    let started = Instant::now();
    let out = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env_remove("CI")
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "agentproxy {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn main() -> std::process::ExitCode {
    if let Some(code) = support::smoke::quiet_unless_asked("runner") {
        return code;
    }
    let args: Vec<String> = std::env::args().collect();
    let cases: usize = args
        .iter()
        .position(|a| a == "--cases")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        // Under `cargo test --all-targets` (no `--bench` argument): a few cases, to keep it working.
        .unwrap_or(if args.iter().any(|a| a == "--bench") {
            100
        } else {
            3
        });
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(fake_openai::FakeOpenAi::start());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.py"), PROGRAM).unwrap();
    let mut spec =
        String::from("app:\n  command: [python3, app.py]\ncassettes: cassettes\ncases:\n");
    for i in 0..cases {
        spec.push_str(&format!(
            "  - name: case {i}\n    input: hello {i}\n    expect: {{reply: 'hello {i}'}}\n"
        ));
    }
    std::fs::write(dir.path().join("spec.yaml"), spec).unwrap();

    let upstream = fake.url();
    agentproxy(
        dir.path(),
        &[
            "test",
            "spec.yaml",
            "--mode",
            "record",
            "--upstream",
            &upstream,
            "-q",
        ],
    );

    // Baseline: the program alone, calling the fake upstream directly, one after the other.
    let started = Instant::now();
    for i in 0..cases {
        let out = Command::new("python3")
            .arg("app.py")
            .current_dir(dir.path())
            .env("OPENAI_BASE_URL", format!("{upstream}/v1"))
            .env("AGENTPROXY_INPUT", format!("hello {i}"))
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let baseline = started.elapsed();

    let serial = agentproxy(dir.path(), &["test", "spec.yaml", "--mode", "replay", "-q"]);
    let parallel = agentproxy(
        dir.path(),
        &[
            "test",
            "spec.yaml",
            "--mode",
            "replay",
            "-q",
            "--parallel",
            "4",
        ],
    );
    rt.block_on(fake.stop());

    let per_case =
        |total: Duration| (total.as_secs_f64() - baseline.as_secs_f64()) * 1000.0 / cases as f64;
    println!("runner overhead, {cases} replayed cases of a one-request python3 program");
    println!(
        "  program alone, serial:        {:>8.2} s ({:.1} ms/case)",
        baseline.as_secs_f64(),
        baseline.as_secs_f64() * 1000.0 / cases as f64
    );
    println!(
        "  agentproxy test, serial:      {:>8.2} s (+{:.1} ms/case)",
        serial.as_secs_f64(),
        per_case(serial)
    );
    println!(
        "  agentproxy test, --parallel 4:{:>8.2} s ({:.2}x the serial baseline)",
        parallel.as_secs_f64(),
        parallel.as_secs_f64() / baseline.as_secs_f64()
    );
    std::process::ExitCode::SUCCESS
}
