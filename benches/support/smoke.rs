//! Under `cargo test --all-targets` a bench runs as a smoke test (no `--bench` argument):
//! small, and quiet unless it fails, so its tables do not fill the test output.

use std::process::{Command, ExitCode};

/// When this run was not asked for figures (no `--bench`, no `--quick`), run this binary
/// again with `--quick`, print its output only if it fails, and return the exit code for
/// `main` to end with. `None`: the run was asked for; go on and print.
pub fn quiet_unless_asked(name: &str) -> Option<ExitCode> {
    let asked = std::env::args().any(|a| a == "--bench" || a == "--quick");
    if asked {
        return None;
    }
    let exe = std::env::current_exe().expect("the bench binary's own path");
    let out = Command::new(exe)
        .arg("--quick")
        .output()
        .expect("the bench binary runs itself");
    if out.status.success() {
        println!("bench {name}: the quick run passed (to see its tables: cargo test --bench {name} -- --quick)");
        return Some(ExitCode::SUCCESS);
    }
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    Some(ExitCode::FAILURE)
}
