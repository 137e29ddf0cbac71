//! Codex CLI (npm `@openai/codex`: its own binary, installed into tests/node by
//! scripts/setup-node.sh) recorded against the fake OpenAI upstream over the Responses
//! API's WebSocket mode, then replayed with the fake stopped, no key and no configuration.
//!
//! While recording, Codex's home holds `features.plugins = false`: its plugin sync would
//! otherwise reach GitHub and chatgpt.com, and no test sends a packet off loopback. The
//! replay runs it in a new home with no configuration at all, as a CI machine would.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::fake_openai::FakeOpenAi;
use crate::support::npm::node;
use crate::support::run::{agentproxy, Run};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The Codex binary the npm package installed, or `None` when the Node tests are skipped.
fn codex() -> Option<PathBuf> {
    node()?;
    let bin = repo().join(
        "tests/node/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    );
    assert!(
        bin.exists(),
        "{} is missing: run scripts/setup-node.sh",
        bin.display()
    );
    Some(bin)
}

/// How Codex is pointed at the model.
#[derive(Clone, Copy)]
enum Pointed {
    /// `-c openai_base_url=…`, the proxy's URL (Codex reads no base URL from its
    /// environment).
    BaseUrl,
    /// Not at all: it dials `wss://api.openai.com`, through the proxy variables.
    Nowhere,
}

/// `agentproxy MODE --cassette CASSETTE FLAGS -- codex exec --json PROMPT` with Codex's
/// home at `home`, run as a user's script runs it.
async fn session(
    (mode, cassette, flags): (&str, &Path, &[OsString]),
    codex: &Path,
    home: &Path,
    (pointed, prompt): (Pointed, &str),
    key: Option<&str>,
) -> Run {
    let base_url = match pointed {
        Pointed::BaseUrl => "-c \"openai_base_url=\\\"$AGENTPROXY_URL/v1\\\"\"",
        Pointed::Nowhere => "",
    };
    let script =
        format!("exec \"$0\" exec {base_url} --skip-git-repo-check --json \"$1\" </dev/null");
    let mut args: Vec<OsString> = vec![mode.into(), "--cassette".into(), cassette.into()];
    args.extend(flags.iter().cloned());
    args.extend(["--".into(), "sh".into(), "-c".into(), script.into()]);
    args.extend([codex.into(), OsString::from(prompt)]);
    // Its home is the user's too: the commands it runs in a login shell then read no
    // profile of the machine's (one that prints now and then would change their output).
    let home = home.to_string_lossy().into_owned();
    let mut env = vec![("CODEX_HOME", home.as_str()), ("HOME", home.as_str())];
    env.extend(key.map(|k| ("CODEX_API_KEY", k)));
    agentproxy(args, &env).await
}

/// A Codex home: with `config` as its config.toml, when given.
fn home(dir: &Path, name: &str, config: Option<&str>) -> PathBuf {
    let home = dir.join(name);
    std::fs::create_dir_all(&home).unwrap();
    if let Some(config) = config {
        std::fs::write(home.join("config.toml"), config).unwrap();
    }
    home
}

/// Codex's `--json` events but the thread's id, new on every run.
fn events(stdout: &str) -> Vec<String> {
    (stdout.lines())
        .filter(|l| l.starts_with('{') && !l.contains("\"thread.started\""))
        .map(str::to_owned)
        .collect()
}

/// Records `codex exec PROMPT` pointed as `pointed`, then replays it in a new home with no
/// configuration, the fake stopped and no key; checks Codex answered `answer` and made
/// `turns` model calls; returns the replay's stderr and the cassette (`None`: the Node tests
/// are skipped).
async fn records_and_replays(
    pointed: Pointed,
    prompt: &str,
    answer: &str,
    turns: usize,
) -> Option<(String, Value)> {
    let codex = codex()?;
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("codex.json");
    let recording_home = home(dir.path(), "home", Some("[features]\nplugins = false\n"));
    let upstream: Vec<OsString> = vec!["--upstream".into(), fake.url().into()];
    let recorded = session(
        ("record", &cassette, &upstream),
        &codex,
        &recording_home,
        (pointed, prompt),
        Some("sk-test-codex"),
    )
    .await;
    assert!(recorded.status.success(), "record: {recorded}");
    let said = events(&recorded.stdout);
    let wanted = format!(r#""type":"agent_message","text":"{answer}""#);
    assert!(
        said.iter().any(|l| l.contains(&wanted)),
        "Codex printed no {answer:?}: {recorded}"
    );
    for unwanted in ["Falling back", "other hosts the program reached"] {
        assert!(
            !recorded.stderr.contains(unwanted),
            "{unwanted}: {recorded}"
        );
    }
    // Over the socket: Codex's warm-up (`generate: false`), then its turns, and no POST.
    let frames = fake.frames();
    assert_eq!(frames.len(), turns, "{recorded}");
    assert!(frames.iter().all(|f| f["type"] == "response.create"));
    assert_eq!(frames[0]["generate"], false);
    let requests = fake.requests();
    assert!(
        requests.iter().all(|r| r.method == "GET"),
        "Codex fell back to HTTP: {:?}",
        requests.iter().map(|r| &r.method).collect::<Vec<_>>()
    );
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&cassette).unwrap()).unwrap();
    let routes: Vec<&str> = (written["interactions"].as_array().unwrap().iter())
        .map(|i| i["route"].as_str().unwrap())
        .collect();
    assert_eq!(routes, vec!["openai.responses"; turns]);
    let holes: Vec<&str> = (written["match"]["holes"].as_array().unwrap().iter())
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert!(
        holes.contains(&"codex_date"),
        "Codex's tolerances: {holes:?}"
    );
    assert!(!written.to_string().contains("sk-test-codex"));
    fake.stop().await;

    let fresh = home(dir.path(), "fresh-home", None);
    let replayed = session(
        ("replay", &cassette, &[]),
        &codex,
        &fresh,
        (pointed, prompt),
        None,
    )
    .await;
    assert!(replayed.status.success(), "replay: {replayed}");
    assert_eq!(events(&replayed.stdout), said, "replay: {replayed}");
    assert!(!replayed.stderr.contains("Falling back"), "{replayed}");
    Some((replayed.stderr, written))
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_exec_records_and_replays_over_a_websocket() {
    let Some((stderr, _)) =
        records_and_replays(Pointed::BaseUrl, "Say hello", "You said: Say hello", 2).await
    else {
        return;
    };
    // With no configuration, Codex's plugin sync and analytics start; the replay refuses
    // them without failing.
    assert!(
        stderr.contains("refused a known client's side traffic")
            && stderr.contains("github.com:443"),
        "{stderr}"
    );
}

/// Codex with no base URL at all dials `wss://api.openai.com`: interception takes it, the
/// session's CA is trusted through `SSL_CERT_FILE`.
#[tokio::test(flavor = "multi_thread")]
async fn codex_with_no_configuration_is_recorded_and_replayed_through_interception() {
    let Some((stderr, _)) =
        records_and_replays(Pointed::Nowhere, "Say hello", "You said: Say hello", 2).await
    else {
        return;
    };
    assert!(
        stderr.contains("intercepted api.openai.com:443"),
        "{stderr}"
    );
}

/// A command Codex runs: its output reaches the model with a chunk id and a wall time
/// that differ on every run, which Codex's tolerances let a replay match.
#[tokio::test(flavor = "multi_thread")]
async fn codex_runs_a_command_and_replays_with_its_volatile_output_tolerated() {
    let prompt = "Run `echo hello` and tell me what it printed";
    let answer = "The command printed: hello";
    let Some((_, written)) = records_and_replays(Pointed::BaseUrl, prompt, answer, 3).await else {
        return;
    };
    let told = written["interactions"][2]["request"]["body"]["json"]["input"].to_string();
    // What the model was told holds the run's chunk id and wall times, new on the
    // replay's run of the command: the replay matched it through Codex's tolerances.
    assert!(
        told.contains("chunk_id")
            && told.contains("wall_time_seconds")
            && told.contains("Wall time"),
        "{told}"
    );
}
