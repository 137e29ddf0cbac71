//! Adversarial probes kept as tests: each once lost data, leaked a secret or hid a failure
//! (see docs/security.md for the behaviour each one pins).

mod support;

use std::path::Path;
use std::process::Command;

use support::proxy::{bin, Daemon};

struct Run {
    code: i32,
    stderr: String,
}

fn run(args: &[&str], cwd: &Path) -> Run {
    let out = Command::new(bin())
        .args(args)
        .current_dir(cwd)
        .env_remove("CI")
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: creating a FIFO at a path the test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

#[test]
fn a_cassette_path_that_is_not_a_regular_file_is_refused_before_the_program_starts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mkfifo(&d.join("node"));
    for cassette in ["node", "/dev/null"] {
        let r = run(
            &[
                "record",
                "--cassette",
                cassette,
                "--upstream",
                "http://127.0.0.1:9",
                "--",
                "sh",
                "-c",
                "touch started",
            ],
            d,
        );
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
        assert!(!d.join("started").exists(), "the program must not run");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(d.join("node"))
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
}

#[test]
fn an_unwritable_cassette_directory_is_found_before_the_program_starts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("plain-file"), "").unwrap();
    let r = run(
        &[
            "record",
            "--cassette",
            "plain-file/c.json",
            "--upstream",
            "http://127.0.0.1:9",
            "--",
            "sh",
            "-c",
            "touch started",
        ],
        d,
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("cannot be written"), "{}", r.stderr);
    assert!(!d.join("started").exists(), "the program must not run");
}

#[test]
fn a_second_record_daemon_on_the_same_cassette_fails_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "record",
        "--cassette",
        "c.json",
        "--upstream",
        "http://127.0.0.1:9",
    ];
    let first = Daemon::start(&args, d);
    let second = run(&args, d);
    assert_eq!(second.code, 2, "{}", second.stderr);
    assert!(
        second
            .stderr
            .contains("being written by another agentproxy"),
        "{}",
        second.stderr
    );
    let (code, stderr) = first.interrupt();
    // The first daemon recorded nothing: that is its own error, and it releases the lock.
    assert_eq!(code, 3, "{stderr}");
    assert!(!d.join(".c.json.lock").exists());
}

#[test]
fn two_specs_whose_cases_share_a_cassette_are_refused_before_any_case_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spec = "app:\n  command: [sh, -c, 'touch ran']\ncassettes: shared\ncases:\n  - name: same name\n    input: hi\n";
    std::fs::write(d.join("a.yaml"), spec).unwrap();
    std::fs::write(d.join("b.yaml"), spec).unwrap();
    let r = run(&["test", "a.yaml", "b.yaml", "--parallel", "2"], d);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("share the cassette"), "{}", r.stderr);
    assert!(r.stderr.contains("a.yaml::same name"), "{}", r.stderr);
    assert!(r.stderr.contains("b.yaml::same name"), "{}", r.stderr);
    assert!(!d.join("ran").exists());
}

#[test]
fn a_cassette_that_parses_but_cannot_be_served_is_refused_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (response, pointer) in [
        (
            r#"{"status": 200, "body": {"base64": "!!!notbase64"}}"#,
            "/interactions/0/response/body/base64",
        ),
        (r#"{"status": 99}"#, "/interactions/0/response/status"),
    ] {
        let text = format!(
            r#"{{"format": "1.1", "recorder": "t", "recorded_at": "2026-01-01T00:00:00Z",
            "upstreams": {{"openai": "http://127.0.0.1:1", "anthropic": "http://127.0.0.1:2"}},
            "interactions": [{{"route": "http", "key": "k",
              "request": {{"method": "GET", "path": "/v1/models"}},
              "response": {response}, "latency_ms": 1}}]}}"#
        );
        std::fs::write(d.join("c.json"), text).unwrap();
        let r = run(
            &[
                "replay",
                "--cassette",
                "c.json",
                "--",
                "sh",
                "-c",
                "touch started",
            ],
            d,
        );
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("c.json is invalid at"), "{}", r.stderr);
        assert!(r.stderr.contains(pointer), "{}", r.stderr);
        assert!(!d.join("started").exists());
    }
}
