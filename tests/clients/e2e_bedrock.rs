//! End-to-end tests of AWS Bedrock with the real clients (`tests/e2e/bedrock_agent.py`:
//! boto3's converse and converse_stream in a tool loop, invoke_model_with_response_stream,
//! and the Anthropic SDK's AnthropicBedrock), recorded through the `agentproxy` binary
//! against a fake Bedrock (`tests/e2e/fake_bedrock.py`) that recomputes every request's
//! SigV4 signature with botocore and refuses one that does not hold, then replayed with
//! the fake stopped and no AWS credentials at all.
//!
//! boto3 is given the proxy as its endpoint (`AWS_ENDPOINT_URL_BEDROCK_RUNTIME`), so its
//! requests are signed for the proxy and signed again for the upstream; AnthropicBedrock
//! (and boto3 in `intercept` mode) goes to `bedrock-runtime.us-east-1.amazonaws.com`
//! through the session's forward proxy, so its own signature reaches the fake untouched.

use crate::support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::run::{agentproxy, Run};
use tokio::io::{AsyncBufReadExt, BufReader};

const KEY_ID: &str = "AKIDAGENTPROXYTEST01";
const SECRET: &str = "e2e/secret/key/not/a/real/one/000000000";
const REAL_HOST: &str = "bedrock-runtime.us-east-1.amazonaws.com";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> Option<PathBuf> {
    if std::env::var_os("AGENTPROXY_SKIP_PYTHON_E2E").is_some_and(|v| v == "1") {
        eprintln!("AGENTPROXY_SKIP_PYTHON_E2E=1: skipping the Python end-to-end test");
        return None;
    }
    let python = repo().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-python.sh",
        python.display()
    );
    Some(python)
}

/// The fake Bedrock, a Python process: it serves until its standard input closes.
struct Fake {
    child: tokio::process::Child,
    url: String,
    log: PathBuf,
}

impl Fake {
    async fn start(python: &Path, dir: &Path) -> Fake {
        let log = dir.join("fake.log");
        let mut child = tokio::process::Command::new(python)
            .arg(repo().join("tests/e2e/fake_bedrock.py"))
            .arg(&log)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("failed to start the fake Bedrock");
        let stdout = child.stdout.take().expect("piped");
        let mut line = String::new();
        let mut stdout = BufReader::new(stdout);
        let read = stdout.read_line(&mut line);
        tokio::time::timeout(std::time::Duration::from_secs(60), read)
            .await
            .expect("the fake Bedrock did not start within a minute")
            .expect("the fake Bedrock's output");
        let port = line.trim().strip_prefix("port ").expect("`port N`");
        Fake {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log,
        }
    }

    /// Every request the fake got: its path, `Host` and whether its signature held.
    fn requests(&self) -> Vec<Value> {
        (std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
    }

    async fn stop(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait().await;
    }
}

fn session(
    mode: &str,
    cassette: &Path,
    upstream: Option<&str>,
    python: &Path,
    args: &[&str],
) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec![mode.into(), "--cassette".into(), cassette.into()];
    if let Some(url) = upstream {
        out.extend(["--upstream".into(), format!("bedrock={url}").into()]);
    }
    out.extend([
        "--".into(),
        python.into(),
        repo().join("tests/e2e/bedrock_agent.py").into(),
    ]);
    out.extend(args.iter().map(OsString::from));
    out
}

/// What the script prints in every mode.
const LINES: [&str; 4] = [
    "tool call: get_weather {\"city\": \"Paris\"}\n",
    "reply: It is 18C and sunny in Paris.\n",
    "usage: 28\n",
    "invoke stream: Bonjour from Claude on Bedrock.\n",
];

/// Records `bedrock_agent.py ARGS` against a fresh fake with credentials, checks every
/// request reached it with a signature that holds (from `hosts`) and nothing of the
/// signature or the keys was written, then replays with the fake stopped and no AWS
/// variable set: the same output.
async fn record_then_replay(args: &[&str], requests: usize, hosts: &[&str]) -> Option<Run> {
    let python = python()?;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("bedrock.json");
    let fake = Fake::start(&python, dir.path()).await;
    let creds = [
        ("AWS_ACCESS_KEY_ID", KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
    ];
    let record = agentproxy(
        session("record", &cassette, Some(&fake.url), &python, args),
        &creds,
    )
    .await;
    assert!(record.status.success(), "record failed: {record}");
    for line in LINES {
        assert!(record.stdout.contains(line), "no {line:?}: {record}");
    }
    let seen = fake.requests();
    assert_eq!(seen.len(), requests, "{seen:?}\n{record}");
    assert!(
        seen.iter().all(|r| r["signed"] == true),
        "a signature did not hold upstream: {seen:?}"
    );
    for host in hosts {
        let local = *host == "127.0.0.1";
        assert!(
            seen.iter().any(|r| r["host"]
                .as_str()
                .is_some_and(|h| h == *host || (local && h.starts_with("127.0.0.1:")))),
            "no request came with Host {host}: {seen:?}"
        );
    }
    let written = std::fs::read_to_string(&cassette).unwrap();
    for secret in [KEY_ID, SECRET, "Signature=", "X-Amz-Date", "x-amz-date"] {
        assert!(
            !written.contains(secret),
            "{secret} was written to the cassette"
        );
    }
    fake.stop().await;
    let replay = agentproxy(session("replay", &cassette, None, &python, args), &[]).await;
    assert!(replay.status.success(), "replay failed: {replay}");
    assert_eq!(
        replay.stdout, record.stdout,
        "the replay must print what the record printed"
    );
    assert!(replay.stderr.contains("0 missed"), "{replay}");
    Some(record)
}

#[tokio::test(flavor = "multi_thread")]
async fn boto3_and_anthropic_bedrock_record_signed_and_replay_without_credentials() {
    let Some(record) = record_then_replay(&[], 7, &["127.0.0.1", REAL_HOST]).await else {
        return;
    };
    assert!(
        record
            .stdout
            .contains("anthropic: Bonjour from Claude on Bedrock.\n"),
        "{record}"
    );
    assert!(
        record
            .stdout
            .contains("anthropic stream: Bonjour from Claude on Bedrock.\n"),
        "{record}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn boto3_to_the_real_host_is_intercepted_with_its_signature_intact() {
    let Some(record) = record_then_replay(&["intercept"], 5, &[REAL_HOST]).await else {
        return;
    };
    assert!(
        record
            .stderr
            .contains(&format!("intercepted {REAL_HOST}:443")),
        "{record}"
    );
}
