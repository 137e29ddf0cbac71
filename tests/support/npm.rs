//! Node and npm for the tests and benches of the npm package: Node 24 from `tests/node`
//! (installed by `scripts/setup-node.sh`), and a fresh project with the packages
//! `scripts/build-npm.sh` makes from this build's binary, installed from npm's cache.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Node 24 from `tests/node`, or `None` when the tests are skipped on purpose.
pub fn node() -> Option<PathBuf> {
    if std::env::var_os("AGENTPROXY_SKIP_NODE_E2E").is_some_and(|v| v == "1") {
        eprintln!("AGENTPROXY_SKIP_NODE_E2E=1: skipping the Node end-to-end test");
        return None;
    }
    let node = repo().join("tests/node/node_modules/.bin/node");
    assert!(
        node.exists(),
        "{} is missing: run scripts/setup-node.sh (or set AGENTPROXY_SKIP_NODE_E2E=1 to skip these tests)",
        node.display()
    );
    Some(node)
}

/// The project at `source` (a directory with its package.json) copied into a temporary
/// directory (`app/` in it) and installed from npm's cache (`--offline`: the setup
/// script's install filled it; no network), its `agentproxy` being the npm packages made
/// from this binary by `scripts/build-npm.sh`. Its other dependencies must be the
/// versions `tests/node` pins (the ones in the cache).
pub fn fresh_project(node: &Path, source: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let packs = dir.path().join("packs");
    let binary = format!("linux-x64={}", env!("CARGO_BIN_EXE_agentproxy"));
    let built = std::process::Command::new(repo().join("scripts/build-npm.sh"))
        .arg(&packs)
        .arg(&binary)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let read = |path: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let pinned = read(&repo().join("tests/node/package.json"));
    let pack = |name: &str| {
        let mut packs = std::fs::read_dir(&packs)
            .unwrap()
            .map(|e| e.unwrap().path());
        let found = packs.find(|p| p.file_name().unwrap().to_string_lossy().starts_with(name));
        format!("file:{}", found.unwrap().display())
    };
    let app = dir.path().join("app");
    copy_dir(source, &app);
    let mut manifest = read(&app.join("package.json"));
    let deps = manifest["devDependencies"].as_object_mut().unwrap();
    for (name, version) in deps.iter() {
        if name != "agentproxy" {
            assert_eq!(
                Some(version),
                pinned["devDependencies"].get(name),
                "{}: {name} must be the version tests/node/package.json pins",
                source.display()
            );
        }
    }
    deps.insert("agentproxy".into(), pack("agentproxy-0").into());
    deps.insert(
        "@agentproxy/linux-x64".into(),
        pack("agentproxy-linux-x64").into(),
    );
    std::fs::write(app.join("package.json"), manifest.to_string()).unwrap();
    let installed = std::process::Command::new("npm")
        .args([
            "install",
            "--offline",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ])
        .current_dir(&app)
        .env("PATH", no_cargo_path(node))
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "npm install --offline (run scripts/setup-node.sh to fill npm's cache): {}",
        String::from_utf8_lossy(&installed.stderr)
    );
    dir
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A PATH with Node 24 and the system's tools, and no cargo: the package must not need a
/// Rust toolchain.
pub fn no_cargo_path(node: &Path) -> OsString {
    let mut path = OsString::from(node.parent().unwrap());
    path.push(":/usr/local/bin:/usr/bin:/bin");
    path
}
