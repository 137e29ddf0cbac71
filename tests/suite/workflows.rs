//! The GitHub workflows cannot run here; what can be checked is: `actionlint` (with
//! `shellcheck` on their scripts) passes on `.github/workflows/` (the release pipeline and
//! the examples' workflow, which runs this repository's action as `uses: ./`, so its
//! inputs are checked too), on every workflow shown in the docs, and `shellcheck` passes
//! on each script of `action.yml`, whose every `inputs.NAME` is declared. Both linters
//! come from the venv (tests/e2e/requirements.txt).

use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;
use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The venv's bin directory, or `None` when the Python tests are skipped on purpose.
fn venv_bin() -> Option<PathBuf> {
    if std::env::var_os("AGENTPROXY_SKIP_PYTHON_E2E").is_some_and(|v| v == "1") {
        eprintln!("AGENTPROXY_SKIP_PYTHON_E2E=1: skipping the workflow linters");
        return None;
    }
    let bin = repo().join(".venv/bin");
    assert!(
        bin.join("actionlint").exists() && bin.join("shellcheck").exists(),
        "actionlint or shellcheck missing from .venv: run scripts/setup-python.sh"
    );
    Some(bin)
}

/// Run `program` from `bin` in `dir` with `bin` first on PATH; its merged output.
fn lint(bin: &Path, program: &str, dir: &Path, args: &[&str]) -> (bool, String) {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(bin.join(program))
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn the_repository_workflows_pass_actionlint() {
    let Some(bin) = venv_bin() else { return };
    let (ok, out) = lint(&bin, "actionlint", repo(), &["-no-color"]);
    assert!(ok, "{out}");
    let names: Vec<String> = std::fs::read_dir(repo().join(".github/workflows"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.contains(&"release.yml".to_owned()), "{names:?}");
}

/// Each fenced YAML block of the README and docs/ that is a workflow (it has `jobs:`).
fn documented_workflows() -> Vec<(String, String)> {
    let fence = Regex::new(r"(?s)```yaml\n(.*?)```").unwrap();
    let mut files = vec![repo().join("README.md")];
    for e in std::fs::read_dir(repo().join("docs")).unwrap() {
        files.push(e.unwrap().path());
    }
    let mut out = Vec::new();
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "md"))
    {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, block) in fence.captures_iter(&text).enumerate() {
            let body = &block[1];
            if body.lines().any(|l| l.starts_with("jobs:")) {
                let name = file.file_stem().unwrap().to_string_lossy();
                out.push((format!("{name}-{n}.yml"), body.to_owned()));
            }
        }
    }
    out
}

#[test]
fn the_workflows_in_the_docs_pass_actionlint() {
    let Some(bin) = venv_bin() else { return };
    let workflows = documented_workflows();
    let names: Vec<&str> = workflows.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.iter().any(|n| n.starts_with("ci-"))
            && names.iter().any(|n| n.starts_with("getting-started-")),
        "{names:?}"
    );
    // actionlint needs a repository around the files it checks.
    let dir = tempfile::tempdir().unwrap();
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(ok.success());
    let workflows_dir = dir.path().join(".github/workflows");
    std::fs::create_dir_all(&workflows_dir).unwrap();
    for (name, body) in &workflows {
        std::fs::write(workflows_dir.join(name), body).unwrap();
    }
    let (ok, out) = lint(&bin, "actionlint", dir.path(), &["-no-color"]);
    assert!(ok, "{out}");
}

#[test]
fn the_action_scripts_pass_shellcheck_and_use_declared_inputs() {
    let Some(bin) = venv_bin() else { return };
    let text = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    let action: Value = serde_saphyr::from_str(&text).unwrap();
    let declared = action["inputs"].as_object().unwrap();
    let used = Regex::new(r"inputs\.([A-Za-z0-9_-]+)").unwrap();
    for name in used.captures_iter(&text).map(|c| c[1].to_owned()) {
        assert!(
            declared.contains_key(&name),
            "action.yml uses undeclared input `{name}`"
        );
    }
    // `${{ … }}` is expanded by the runner before bash sees the script.
    let expression = Regex::new(r"\$\{\{[^}]*\}\}").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let steps = action["runs"]["steps"].as_array().unwrap();
    let mut checked = 0;
    for (n, step) in steps.iter().enumerate() {
        let Some(script) = step["run"].as_str() else {
            continue;
        };
        assert_eq!(step["shell"], "bash", "step {n} runs in bash");
        let file = dir.path().join(format!("step-{n}.sh"));
        let body = expression.replace_all(script, "EXPANDED");
        // The step's `env:` is set when the runner starts the script.
        let exports: String = (step["env"].as_object().into_iter().flatten())
            .map(|(name, _)| format!("export {name}=EXPANDED\n"))
            .collect();
        std::fs::write(&file, format!("#!/usr/bin/env bash\n{exports}{body}")).unwrap();
        let (ok, out) = lint(&bin, "shellcheck", dir.path(), &[file.to_str().unwrap()]);
        assert!(ok, "action.yml step {n}:\n{out}");
        checked += 1;
    }
    assert!(checked >= 4, "{checked} scripts");
}

/// A `major.minor[.patch]` version as numbers, for comparing (`1.89` is `1.89.0`).
fn version(text: &str) -> [u32; 3] {
    let mut v = [0; 3];
    for (slot, n) in v.iter_mut().zip(text.split('.')) {
        *slot = n.parse().unwrap();
    }
    v
}

/// No Docker engine runs here, so the image is never built by the suite: its Rust is
/// checked instead. The Dockerfile builds with the Rust that Cargo.toml's `rust-version`
/// names (so the image also proves the stated minimum), and no dependency in Cargo.lock
/// asks for a newer one (a `cargo update` that raised it would break the image unseen).
/// Each dependency's `rust-version` is read from its sources in cargo's registry, where
/// building this test put every one the Linux build uses.
#[test]
fn the_dockerfile_rust_is_the_minimum_and_every_dependency_builds_with_it() {
    let read = |name: &str| std::fs::read_to_string(repo().join(name)).unwrap();
    let docker = Regex::new(r"(?m)^FROM rust:(\d+\.\d+(?:\.\d+)?)-")
        .unwrap()
        .captures(&read("Dockerfile"))
        .map(|c| c[1].to_owned())
        .expect("the Dockerfile builds FROM rust:X.Y-…");
    let msrv = Regex::new(r#"(?m)^rust-version = "([^"]+)""#).unwrap();
    let stated = msrv.captures(&read("Cargo.toml")).unwrap()[1].to_owned();
    assert_eq!(
        docker, stated,
        "the Dockerfile's rust:{docker} is not Cargo.toml's rust-version {stated}"
    );
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    let sources: Vec<PathBuf> = std::fs::read_dir(home.join("registry/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let package =
        Regex::new(r#"(?m)^name = "([^"]+)"\nversion = "([^"]+)"\nsource = "registry\+"#).unwrap();
    let lock = read("Cargo.lock");
    let (mut checked, mut newer) = (0, vec![]);
    for c in package.captures_iter(&lock) {
        let dir = format!("{}-{}", &c[1], &c[2]);
        // Another platform's dependency (Windows, macOS) is not downloaded for this build.
        let Some(manifest) = (sources.iter())
            .map(|s| s.join(&dir).join("Cargo.toml"))
            .find(|m| m.exists())
        else {
            continue;
        };
        checked += 1;
        let text = std::fs::read_to_string(manifest).unwrap();
        if let Some(wanted) = msrv.captures(&text) {
            if version(&wanted[1]) > version(&docker) {
                newer.push(format!("{dir} needs Rust {}", &wanted[1]));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} dependencies found under {}",
        home.display()
    );
    assert!(
        newer.is_empty(),
        "the Dockerfile builds with rust:{docker}, but {}",
        newer.join(", ")
    );
}
