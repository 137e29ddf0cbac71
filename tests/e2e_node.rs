//! End-to-end tests with Node.js clients (Node 24, from `tests/node`, installed by
//! `scripts/setup-node.sh`): each is recorded through the `agentproxy` binary against a
//! fake upstream, then replayed from the cassette with the fake stopped, and must print
//! the same thing.
//!
//! A missing install fails these tests (a silent skip would let CI go green without
//! them); `AGENTPROXY_SKIP_NODE_E2E=1` skips them on purpose.

mod support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use support::fake_openai::FakeOpenAi;
use support::run::agentproxy;

const API_KEY: &str = "sk-e2e-not-a-real-key-000000000000000000";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Node 24 from `tests/node`, or `None` when the tests are skipped on purpose.
fn node() -> Option<PathBuf> {
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

/// Node's own fetch to a hard-coded `https://api.openai.com/v1` goes through the proxy
/// because of `NODE_USE_ENV_PROXY`, trusting the session's CA through
/// `NODE_EXTRA_CA_CERTS`: recorded against the fake (`--upstream`), replayed with it
/// stopped. Run contained, so that a Node that ignored the variable would be seen (its
/// own name lookup, named) and could reach nothing; where the machine cannot contain,
/// `--contain on` says why and nothing runs.
#[tokio::test(flavor = "multi_thread")]
async fn node_fetch_through_node_use_env_proxy_records_and_replays() {
    let Some(node) = node() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.json");
    let fake = FakeOpenAi::start().await;
    let run = |mode: &str, upstream: Option<String>| {
        let mut args: Vec<OsString> = vec![
            mode.into(),
            "--contain".into(),
            "on".into(),
            "--cassette".into(),
            cassette.clone().into_os_string(),
        ];
        if let Some(u) = upstream {
            args.extend(["--upstream".into(), u.into()]);
        }
        args.extend([
            "--".into(),
            node.clone().into_os_string(),
            repo()
                .join("tests/node/hardcoded_fetch.mjs")
                .into_os_string(),
        ]);
        agentproxy(args, &[("OPENAI_API_KEY", API_KEY)])
    };
    let recorded = run("record", Some(fake.url())).await;
    if recorded.stderr.contains("--contain on: ") {
        assert_eq!(recorded.status.code(), Some(2), "{recorded}");
        assert!(recorded.stdout.is_empty(), "{recorded}");
        eprintln!("this machine cannot contain a program: {}", recorded.stderr);
        return;
    }
    assert_eq!(recorded.status.code(), Some(0), "{recorded}");
    assert!(
        recorded.stdout.contains("status: 200\nreply: "),
        "{recorded}"
    );
    assert_eq!(fake.requests().len(), 1, "{recorded}");
    assert!(
        recorded
            .stderr
            .contains("agentproxy: intercepted api.openai.com:443 ×1"),
        "{recorded}"
    );
    // Through the proxy variable: Node looked nothing up itself.
    assert!(!recorded.stderr.contains("looked up"), "{recorded}");
    let written = std::fs::read_to_string(&cassette).unwrap();
    assert!(!written.contains(API_KEY), "{written}");
    fake.stop().await;
    let replayed = run("replay", None).await;
    assert_eq!(replayed.status.code(), Some(0), "{replayed}");
    assert_eq!(replayed.stdout, recorded.stdout, "{replayed}");
    assert!(!replayed.stderr.contains("looked up"), "{replayed}");
}
