//! Headless Chromium (Debian's `chromium`, installed by scripts/setup-browser.sh) for the
//! tests of the HTML pages: the page as the browser built it (`--dump-dom`, after its
//! script ran) and what the browser logged to its console (every script error and
//! Content-Security-Policy violation). A missing Chromium fails these tests;
//! `AGENTPROXY_SKIP_BROWSER=1` skips them on purpose.

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn chromium() -> Option<PathBuf> {
    if std::env::var_os("AGENTPROXY_SKIP_BROWSER").is_some_and(|v| v == "1") {
        eprintln!("AGENTPROXY_SKIP_BROWSER=1: skipping the browser test");
        return None;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file());
    assert!(
        found.is_some(),
        "no chromium on PATH: run scripts/setup-browser.sh (or set AGENTPROXY_SKIP_BROWSER=1)"
    );
    found
}

/// The page at `file` with `fragment` after `#`, as the browser built it, and what it
/// logged to its console.
pub fn browse(chromium: &Path, file: &Path, fragment: &str) -> (String, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}#{fragment}", file.display());
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}
