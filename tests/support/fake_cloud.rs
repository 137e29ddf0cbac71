//! The fake clouds of `tests/e2e` (`fake_bedrock.py`, `fake_vertex.py`): Python
//! processes, because what they check (a SigV4 signature) is best recomputed by the
//! service's own SDK. Each prints `port N`, serves until its standard input closes, and
//! logs each request it got as a JSON line.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fake cloud: `python tests/e2e/SCRIPT LOG`, its log in `dir`.
pub struct Fake {
    child: tokio::process::Child,
    pub url: String,
    log: PathBuf,
}

impl Fake {
    pub async fn start(python: &Path, script: &str, dir: &Path) -> Fake {
        let log = dir.join("fake.log");
        let mut child = tokio::process::Command::new(python)
            .arg(repo().join("tests/e2e").join(script))
            .arg(&log)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("failed to start the fake");
        let stdout = child.stdout.take().expect("piped");
        let mut line = String::new();
        let mut stdout = BufReader::new(stdout);
        let read = stdout.read_line(&mut line);
        tokio::time::timeout(std::time::Duration::from_secs(60), read)
            .await
            .expect("the fake did not start within a minute")
            .expect("the fake's output");
        let port = line.trim().strip_prefix("port ").expect("`port N`");
        Fake {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
        }
    }

    /// Every request the fake got: its path, and whether its credential held (`signed`
    /// and `host` for Bedrock, `token` for Vertex).
    pub fn requests(&self) -> Vec<Value> {
        (std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
    }

    pub async fn stop(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait().await;
    }
}
