//! The Python wheel, as a user gets it: built by scripts/build-wheel.sh (linked against
//! glibc 2.17 and tagged manylinux2014, as auditwheel confirms), installed into a
//! fresh venv with no cargo on PATH, `agentproxy --version` and `python -m agentproxy`
//! print the crate's version, the pytest plugin is registered, the installed binary
//! replays the committed example and prints the documentation --help points at.

use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_wheel_installs_the_binary_on_the_venv_path() {
    let built = Command::new(repo().join("scripts/build-wheel.sh"))
        // The dev profile builds faster; users get release (the script's default).
        .env("AGENTPROXY_WHEEL_PROFILE", "dev")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&built.stdout).into_owned()
        + &String::from_utf8_lossy(&built.stderr);
    assert!(built.status.success(), "{log}");
    let wheel = log
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("build-wheel: "))
        .map(|w| repo().join(w.trim()))
        .expect("the script names the wheel");
    // The compatibility floor the release wheels have: glibc 2.17, checked by auditwheel.
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let arch = std::env::consts::ARCH;
    assert!(name.contains(&format!("manylinux2014_{arch}")), "{name}");
    assert!(
        log.contains(&format!("build-wheel: auditwheel: manylinux_2_17_{arch}\n")),
        "{log}"
    );

    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let ok = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(ok.success());
    let pip = Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--no-index",
            "--disable-pip-version-check",
        ])
        .arg(&wheel)
        .output()
        .unwrap();
    assert!(
        pip.status.success(),
        "{}",
        String::from_utf8_lossy(&pip.stderr)
    );

    // Only the venv and the system: no cargo, no target/ directory.
    let path = format!("{}:/usr/bin:/bin", venv.join("bin").display());
    let version = format!("agentproxy {}", agentproxy::cli::VERSION);
    let run = |program: &str, args: &[&str]| {
        let out = Command::new(program)
            .args(args)
            .current_dir(repo())
            .env_clear()
            .env("PATH", &path)
            .env("HOME", dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let (ok, out) = run("sh", &["-c", "command -v cargo || echo no cargo"]);
    assert!(ok && out.trim() == "no cargo", "{out}");
    let (ok, out) = run("agentproxy", &["--version"]);
    assert!(ok, "{out}");
    assert_eq!(out.trim(), version);
    let (ok, out) = run("python", &["-m", "agentproxy", "--version"]);
    assert!(ok, "{out}");
    assert_eq!(out.trim(), version);
    // The pytest plugin is registered for pytest to load.
    let (ok, out) = run(
        "python",
        &[
            "-c",
            "from importlib.metadata import entry_points; print([e.value for e in entry_points(group='pytest11')])",
        ],
    );
    assert!(ok && out.contains("agentproxy.pytest_plugin"), "{out}");
    let (ok, out) = run(
        "agentproxy",
        &[
            "replay",
            "--cassette",
            "cassettes/examples/weather-agent.json",
            "--",
            "python",
            "examples/weather-agent/agent.py",
        ],
    );
    assert!(ok, "{out}");
    assert!(out.contains("0 missed"), "{out}");
    // The pages --help points at come with the wheel.
    let (ok, out) = run("agentproxy", &["docs", "getting-started"]);
    assert!(ok && out.starts_with("# Getting started"), "{out}");

    // The release archive of the same build: its checksum holds, and its binary runs.
    let target = format!("{arch}-unknown-linux-gnu");
    let packed = Command::new(repo().join("scripts/release-archive.sh"))
        .arg(&wheel)
        .arg(&target)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&packed.stdout).into_owned()
        + &String::from_utf8_lossy(&packed.stderr);
    assert!(packed.status.success(), "{out}");
    let name = format!("agentproxy-{}-{target}", env!("CARGO_PKG_VERSION"));
    assert!(out.contains(&format!("dist/{name}.tar.gz")), "{out}");
    let (ok, out) = run(
        "sh",
        &[
            "-c",
            &format!("cd dist && sha256sum -c {name}.tar.gz.sha256"),
        ],
    );
    assert!(ok, "{out}");
    let unpacked = dir.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    let tar = Command::new("tar")
        .arg("-xzf")
        .arg(repo().join(format!("dist/{name}.tar.gz")))
        .arg("-C")
        .arg(&unpacked)
        .status()
        .unwrap();
    assert!(tar.success());
    let root = unpacked.join(&name);
    assert!(root.join("LICENSE").is_file() && root.join("README.md").is_file());
    let (ok, out) = run(
        &root.join("agentproxy").display().to_string(),
        &["--version"],
    );
    assert!(ok, "{out}");
    assert_eq!(out.trim(), version);
}
