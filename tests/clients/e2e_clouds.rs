//! End-to-end tests of the clouds with their real clients, each recorded through the
//! `agentproxy` binary against a fake that checks what the service checks first, then
//! replayed with the fake stopped and no credentials at all.
//!
//! - AWS Bedrock (`tests/e2e/bedrock_agent.py`: boto3's converse and converse_stream in a
//!   tool loop, invoke_model_with_response_stream, the Anthropic SDK's AnthropicBedrock)
//!   against `tests/e2e/fake_bedrock.py`, which recomputes every SigV4 signature with
//!   botocore and refuses one that does not hold. boto3 is given the proxy as its endpoint
//!   (`AWS_ENDPOINT_URL_BEDROCK_RUNTIME`), so its requests are signed for the proxy and
//!   signed again for the upstream; AnthropicBedrock (and boto3 in `intercept` mode) goes
//!   to `bedrock-runtime.us-east-1.amazonaws.com` through the session's forward proxy, so
//!   its own signature reaches the fake untouched.
//! - Google Vertex AI (`tests/e2e/vertex_agent.py`: google-genai with `vertexai=True`,
//!   AnthropicVertex) against `tests/e2e/fake_vertex.py`, which refuses a call without its
//!   bearer token; the replay finds its credentials as a program on Google Cloud does,
//!   and gets the session's.

use crate::support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::fake_cloud::Fake;
use support::run::{agentproxy, Run};

const KEY_ID: &str = "AKIDAGENTPROXYTEST01";
const SECRET: &str = "e2e/secret/key/not/a/real/one/000000000";
const REAL_HOST: &str = "bedrock-runtime.us-east-1.amazonaws.com";
/// The bearer token the fake Vertex issues and checks.
const VERTEX_TOKEN: &str = "ya29.e2e-vertex-token-not-a-real-one";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The interpreter of `venv` at the repository root, or `None` when the tests are skipped
/// on purpose.
fn python(venv: &str) -> Option<PathBuf> {
    if std::env::var_os("AGENTPROXY_SKIP_PYTHON_E2E").is_some_and(|v| v == "1") {
        eprintln!("AGENTPROXY_SKIP_PYTHON_E2E=1: skipping the Python end-to-end test");
        return None;
    }
    let python = repo().join(venv).join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-python.sh",
        python.display()
    );
    Some(python)
}

/// `MODE --cassette C [--upstream PROVIDER=URL] -- python tests/e2e/SCRIPT ARGS...`.
fn session(
    mode: &str,
    cassette: &Path,
    upstream: Option<String>,
    python: &Path,
    script: &str,
    args: &[&str],
) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec![mode.into(), "--cassette".into(), cassette.into()];
    if let Some(upstream) = upstream {
        out.extend(["--upstream".into(), upstream.into()]);
    }
    out.extend([
        "--".into(),
        python.into(),
        repo().join("tests/e2e").join(script).into(),
    ]);
    out.extend(args.iter().map(OsString::from));
    out
}

/// One cloud under test: its row's name, its fake and agent scripts, the credentials of
/// the record run, and what must never be written.
struct Cloud {
    /// The venv at the repository root whose interpreter runs the agent.
    venv: &'static str,
    provider: &'static str,
    fake: &'static str,
    agent: &'static str,
    credentials: &'static [(&'static str, &'static str)],
    secrets: &'static [&'static str],
}

const BEDROCK: Cloud = Cloud {
    venv: ".venv",
    provider: "bedrock",
    fake: "fake_bedrock.py",
    agent: "bedrock_agent.py",
    credentials: &[
        ("AWS_ACCESS_KEY_ID", KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
    ],
    secrets: &[KEY_ID, SECRET, "Signature=", "X-Amz-Date", "x-amz-date"],
};

const VERTEX: Cloud = Cloud {
    venv: ".venv",
    provider: "vertex",
    fake: "fake_vertex.py",
    agent: "vertex_agent.py",
    credentials: &[("E2E_VERTEX_TOKEN", VERTEX_TOKEN)],
    secrets: &[VERTEX_TOKEN, "ya29"],
};

const STRANDS: Cloud = Cloud {
    venv: ".venv-strands",
    agent: "strands_agent.py",
    ..BEDROCK
};

/// Records `cloud`'s agent with `args` against a fresh fake with credentials, checks
/// nothing of them was written, then replays with the fake stopped and no credential set:
/// the same output, nothing missed. Returns the record run and the requests the fake got.
async fn record_then_replay(cloud: &Cloud, args: &[&str]) -> Option<(Run, Vec<Value>)> {
    let python = python(cloud.venv)?;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("cloud.json");
    // The fakes run in the main venv (they verify with botocore).
    let fake = Fake::start(&self::python(".venv")?, cloud.fake, dir.path()).await;
    let upstream = Some(format!("{}={}", cloud.provider, fake.url));
    let record = session("record", &cassette, upstream, &python, cloud.agent, args);
    let record = agentproxy(record, cloud.credentials).await;
    assert!(record.status.success(), "record failed: {record}");
    let seen = fake.requests();
    let written = std::fs::read_to_string(&cassette).unwrap();
    for secret in cloud.secrets {
        assert!(
            !written.contains(secret),
            "{secret} was written to the cassette"
        );
    }
    fake.stop().await;
    let replay = session("replay", &cassette, None, &python, cloud.agent, args);
    let replay = agentproxy(replay, &[]).await;
    assert!(replay.status.success(), "replay failed: {replay}");
    assert_eq!(
        replay.stdout, record.stdout,
        "the replay must print what the record printed"
    );
    assert!(replay.stderr.contains("0 missed"), "{replay}");
    Some((record, seen))
}

/// What the Bedrock agent prints in every mode.
const BEDROCK_LINES: [&str; 4] = [
    "tool call: get_weather {\"city\": \"Paris\"}\n",
    "reply: It is 18C and sunny in Paris.\n",
    "usage: 28\n",
    "invoke stream: Bonjour from Claude on Bedrock.\n",
];

/// Every request reached the fake Bedrock with a signature that held, some with each of
/// `hosts` as their `Host`.
fn signed(record: &Run, seen: &[Value], requests: usize, hosts: &[&str]) {
    for line in BEDROCK_LINES {
        assert!(record.stdout.contains(line), "no {line:?}: {record}");
    }
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
}

#[tokio::test(flavor = "multi_thread")]
async fn boto3_and_anthropic_bedrock_record_signed_and_replay_without_credentials() {
    let Some((record, seen)) = record_then_replay(&BEDROCK, &[]).await else {
        return;
    };
    signed(&record, &seen, 7, &["127.0.0.1", REAL_HOST]);
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
    let Some((record, seen)) = record_then_replay(&BEDROCK, &["intercept"]).await else {
        return;
    };
    signed(&record, &seen, 5, &[REAL_HOST]);
    assert!(
        record
            .stderr
            .contains(&format!("intercepted {REAL_HOST}:443")),
        "{record}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn google_genai_and_anthropic_vertex_record_with_a_token_and_replay_with_none() {
    let Some((record, seen)) = record_then_replay(&VERTEX, &[]).await else {
        return;
    };
    for line in [
        "gemini tool call: get_weather {'city': 'Paris'}\n",
        "gemini reply: It is 18C and sunny in Paris.\n",
        "gemini stream: It is 18C and sunny in Paris.\n",
        "claude: Bonjour from Claude on Vertex.\n",
        "claude stream: Bonjour from Claude on Vertex.\n",
    ] {
        assert!(record.stdout.contains(line), "no {line:?}: {record}");
    }
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert!(
        seen.iter().all(|r| r["token"] == true),
        "a call came without the token: {seen:?}"
    );
    let paths: Vec<&str> = seen.iter().filter_map(|r| r["path"].as_str()).collect();
    for (publisher, method) in [
        ("google", ":generateContent"),
        ("google", ":streamGenerateContent?alt=sse"),
        ("anthropic", ":rawPredict"),
        ("anthropic", ":streamRawPredict"),
    ] {
        let under =
            format!("/projects/agentproxy-e2e/locations/us-east5/publishers/{publisher}/models/");
        assert!(
            paths
                .iter()
                .any(|p| p.contains(&under) && p.ends_with(method)),
            "no {publisher} {method}: {paths:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_strands_agent_on_its_default_bedrock_model_records_and_replays() {
    let Some((record, seen)) = record_then_replay(&STRANDS, &[]).await else {
        return;
    };
    for line in [
        "tool call: get_weather Paris\n",
        "reply: It is 18C and sunny in Paris. | stop: end_turn\n",
    ] {
        assert!(record.stdout.contains(line), "no {line:?}: {record}");
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.iter().all(|r| r["signed"] == true), "{seen:?}");
    let path = "/model/global.anthropic.claude-sonnet-4-6/converse-stream";
    assert!(seen.iter().all(|r| r["path"] == path), "{seen:?}");
}
