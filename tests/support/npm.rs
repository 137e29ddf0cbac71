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
/// directory (`app/` in it) and installed as a user installs from source:
/// `scripts/install-npm.sh` packs this build's binary and installs both tarballs. Its
/// other dependencies must be the versions `tests/node` pins: the copy starts with a
/// hard-linked copy of `tests/node/node_modules`, so npm installs `--offline` and needs
/// nothing from its cache (which a new machine's npm does not hold) or the network.
pub fn fresh_project(node: &Path, source: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let pinned: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("tests/node/package.json")).unwrap(),
    )
    .unwrap();
    let app = dir.path().join("app");
    copy_dir(source, &app);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(app.join("package.json")).unwrap()).unwrap();
    for (name, version) in manifest["devDependencies"].as_object().unwrap() {
        if name != "agentproxy" {
            assert_eq!(
                Some(version),
                pinned["devDependencies"].get(name),
                "{}: {name} must be the version tests/node/package.json pins",
                source.display()
            );
        }
    }
    let linked = std::process::Command::new("cp")
        .arg("-al")
        .arg(repo().join("tests/node/node_modules"))
        .arg(app.join("node_modules"))
        .status()
        .unwrap();
    assert!(linked.success(), "cp -al tests/node/node_modules");
    let installed = std::process::Command::new(repo().join("scripts/install-npm.sh"))
        .arg(&app)
        .current_dir(&app)
        .env("PATH", no_cargo_path(node))
        .env("AGENTPROXY_BINARY", env!("CARGO_BIN_EXE_agentproxy"))
        .env(
            "AGENTPROXY_NPM_FLAGS",
            "--offline --no-audit --no-fund --loglevel=error",
        )
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "scripts/install-npm.sh (offline, over tests/node's packages): {}",
        String::from_utf8_lossy(&installed.stderr)
    );
    dir
}

/// A copy of a project as a fresh clone has it: what an install leaves in a working tree
/// (node_modules, the packed tarballs, a lockfile naming them) is not copied.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if [".agentproxy", "node_modules", "package-lock.json"]
            .iter()
            .any(|skip| entry.file_name() == *skip)
        {
            continue;
        }
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
