//! Start the real agentproxy binary in daemon mode for a test, and stop it like a user would;
//! or run `agentproxy test` in a clean environment.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_agentproxy")
}

/// `agentproxy test ARGS` in `dir`, with none of the caller's provider or agentproxy
/// variables and not as CI, the providers' keys set to test values.
pub fn test_in(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut command = Command::new(bin());
    command.arg("test").args(args).current_dir(dir);
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if ["OPENAI_", "ANTHROPIC_", "AGENTPROXY_"]
            .iter()
            .any(|p| text.starts_with(p))
        {
            command.env_remove(&name);
        }
    }
    command
        .env_remove("CI")
        .env("OPENAI_API_KEY", "sk-test")
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .output()
        .unwrap()
}

/// `agentproxy test spec.yaml ARGS --report json -o report.json` in `dir` ([`test_in`]),
/// which must exit with `code`: its stderr and its JSON report.
pub fn test_report(dir: &Path, args: &[&str], code: i32) -> (String, serde_json::Value) {
    let mut all = vec!["spec.yaml", "--report", "json", "-o", "report.json"];
    all.extend(args);
    let out = test_in(dir, &all);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    let report = std::fs::read_to_string(dir.join("report.json")).unwrap();
    (stderr, serde_json::from_str(&report).unwrap())
}

/// The case named `name` in a JSON report.
pub fn case<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    (report["cases"].as_array().unwrap().iter())
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no case `{name}` in {report}"))
}

/// A daemon started with `agentproxy ARGS` and its URL, read from its `export` lines.
pub struct Daemon {
    child: Child,
    pub url: String,
    /// The session's secret, as the daemon exports it (`AGENTPROXY_SECRET`).
    pub secret: String,
}

impl Daemon {
    pub fn start(args: &[&str], cwd: &Path) -> Daemon {
        Daemon::start_with_env(args, cwd, &[])
    }

    /// Start with extra environment variables in the proxy's own environment.
    pub fn start_with_env(args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Daemon {
        let mut child = Command::new(bin())
            .args(args)
            .envs(env.iter().copied())
            .current_dir(cwd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start agentproxy");
        let stdout = child.stdout.take().unwrap();
        let (mut url, mut secret) = (None, String::new());
        for line in BufReader::new(stdout).lines().take(20) {
            let line = line.unwrap();
            if let Some(v) = line.strip_prefix("export AGENTPROXY_URL=") {
                url = Some(v.trim_matches('\'').to_owned());
            }
            if let Some(v) = line.strip_prefix("export AGENTPROXY_SECRET=") {
                // The line after AGENTPROXY_URL's.
                secret = v.trim_matches('\'').to_owned();
                break;
            }
        }
        let url = url.unwrap_or_else(|| {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("daemon printed no AGENTPROXY_URL; stderr:\n{err}")
        });
        Daemon { child, url, secret }
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGINT, then wait: returns (exit code, stderr).
    pub fn interrupt(self) -> (i32, String) {
        self.interrupt_again_after(None)
    }

    /// SIGINT, and with `again`, a second SIGINT that long after the first; then wait.
    pub fn interrupt_again_after(mut self, again: Option<std::time::Duration>) -> (i32, String) {
        let pid = self.child.id() as i32;
        unsafe {
            libc::kill(pid, libc::SIGINT);
        }
        if let Some(gap) = again {
            std::thread::sleep(gap);
            unsafe {
                libc::kill(pid, libc::SIGINT);
            }
        }
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status.code().unwrap_or(-1), err)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
