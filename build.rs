//! Stamps the build with the commit it was built from and the build date, for
//! `agentproxy --version` and `agentproxy doctor` (what a bug report needs).
//!
//! The commit comes from git when the source is a checkout, else from the
//! `.cargo_vcs_info.json` that `cargo package` writes (a crates.io or sdist build), else it
//! is `unknown`. The date is `SOURCE_DATE_EPOCH`'s when set, else the commit's (so every
//! build of one commit says the same date, as reproducible builds want: the wheel and the
//! test binaries built either side of midnight agree), else today's (UTC).

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn main() {
    println!("cargo:rustc-env=AGENTPROXY_COMMIT={}", commit());
    println!("cargo:rustc-env=AGENTPROXY_BUILD_DATE={}", date());
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    // A new commit moves the branch's ref (loose, or packed) or HEAD itself (detached).
    for path in ["HEAD", "packed-refs"]
        .into_iter()
        .map(str::to_owned)
        .chain(head_ref())
    {
        if let Some(p) = git(&["rev-parse", "--git-path", &path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}

fn head_ref() -> Option<String> {
    git(&["symbolic-ref", "-q", "HEAD"])
}

fn commit() -> String {
    if let Some(sha) = git(&["rev-parse", "--short=12", "HEAD"]) {
        return sha;
    }
    std::fs::read_to_string(".cargo_vcs_info.json")
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|info| {
            info["git"]["sha1"]
                .as_str()
                .map(|s| s.chars().take(12).collect())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

fn date() -> String {
    let when = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .or_else(|| git(&["log", "-1", "--format=%ct", "HEAD"]))
        .and_then(|s| s.trim().parse().ok())
        .map_or_else(SystemTime::now, |secs| {
            UNIX_EPOCH + Duration::from_secs(secs)
        });
    humantime::format_rfc3339_seconds(when).to_string()[..10].to_owned()
}
