//! `agentproxy test` end to end: example specs replayed offline, a broken expectation, a
//! cassette miss, spec errors, crashes, reports (and unwritable ones), filters, record runs
//! against the fake upstream, and the `url:` driver.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::fake_openai::FakeOpenAi;
use support::proxy::bin;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run_in(dir: &Path, args: &[&str]) -> Run {
    let out: Output = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env_remove("CI")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// [`run_in`] off the async runtime, which a fake upstream of the test runs on.
async fn run_off_runtime(dir: &Path, args: &[&str]) -> Run {
    let dir = dir.to_owned();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_in(&dir, &args)
    })
    .await
    .unwrap()
}

/// A spec in a temp dir that drives the stdlib weather agent of the README example.
fn weather_spec(dir: &Path, cases: &str) -> PathBuf {
    let agent = repo().join("examples/weather-agent/agent.py");
    let path = dir.join("weather.yaml");
    std::fs::write(
        &path,
        format!(
            "name: weather\napp:\n  command: [python3, {agent}]\ncassettes: cassettes\ntools:\n  get_weather:\n    - when: {{city: Paris}}\n      result: {{city: Paris, temp_c: 21, sky: windy}}\n    - result: {{city: elsewhere, temp_c: 0, sky: grey}}\ncases:\n{cases}",
            agent = agent.display()
        ),
    )
    .unwrap();
    path
}

/// A temp dir with the weather spec, its `paris` case recorded against `fake`.
async fn recorded_paris(fake: &FakeOpenAi) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_owned();
    weather_spec(&d, PARIS);
    let url = fake.url();
    let rec = run_off_runtime(
        &d,
        &[
            "test",
            "weather.yaml",
            "--mode",
            "record",
            "--upstream",
            &url,
        ],
    )
    .await;
    assert_eq!(rec.code, 0, "{}", rec.stderr);
    (dir, d)
}

const PARIS: &str = "  - name: paris\n    input: What's the weather in Paris?\n    expect:\n      calls:\n        - get_weather: {city: Paris}\n      reply: '21°C'\n";

#[tokio::test(flavor = "multi_thread")]
async fn record_then_replay_with_mocks_and_a_broken_expectation() {
    let fake = FakeOpenAi::start().await;
    // The directory lives as long as `_dir`.
    let (_dir, d) = recorded_paris(&fake).await;
    // The model was told the mock (21°C, windy), not what the program's tool returned (18°C).
    let cassette = std::fs::read_to_string(d.join("cassettes/paris.json")).unwrap();
    assert!(cassette.contains(r#"\"temp_c\":21"#), "{cassette}");
    assert!(cassette.contains("\"turn\": 0"));

    // Re-recording the same behaviour: the trajectory diff says so.
    let url = fake.url();
    let again = run_off_runtime(
        &d,
        &[
            "test",
            "weather.yaml",
            "--mode",
            "record",
            "--upstream",
            &url,
            "--report",
            "json",
            "-o",
            "rerecord.json",
        ],
    )
    .await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    let rerecord: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("rerecord.json")).unwrap()).unwrap();
    let diff = rerecord["cases"][0]["diff"]
        .as_str()
        .expect("a diff after a re-record");
    assert!(diff.contains("identical"), "{diff}");

    let count = fake.request_count();
    let replay = run_in(&d, &["test", "weather.yaml", "--mode", "replay"]);
    assert_eq!(replay.code, 0, "{}", replay.stderr);
    assert!(
        replay.stderr.contains("1 passed, 0 failed"),
        "{}",
        replay.stderr
    );
    assert_eq!(
        fake.request_count(),
        count,
        "replay must not reach the upstream"
    );

    // The same recording, asserted wrongly: exit 1 and a readable failure.
    weather_spec(&d, &PARIS.replace("city: Paris}", "city: London}"));
    let broken = run_in(
        &d,
        &[
            "test",
            "weather.yaml",
            "--mode",
            "replay",
            "--report",
            "junit",
            "-o",
            "out/junit.xml",
            "--report",
            "json",
            "-o",
            "out/report.json",
            "--report",
            "markdown",
            "-o",
            "out/report.md",
        ],
    );
    assert_eq!(broken.code, 1, "{}", broken.stderr);
    assert!(broken.stderr.contains("FAIL"), "{}", broken.stderr);
    assert!(
        broken.stderr.contains("London") && broken.stderr.contains("Paris"),
        "{}",
        broken.stderr
    );
    assert!(
        broken.stderr.contains("0 passed, 1 failed"),
        "{}",
        broken.stderr
    );

    let junit = std::fs::read_to_string(d.join("out/junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).expect("JUnit output is XML");
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].attribute("name"), Some("paris"));
    assert!(cases[0].children().any(|n| n.has_tag_name("failure")));
    let suites = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuites"))
        .unwrap();
    assert_eq!(suites.attribute("failures"), Some("1"));

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("out/report.json")).unwrap()).unwrap();
    assert_eq!(json["summary"]["failed"], 1);
    assert_eq!(
        json["cases"][0]["turns"][0]["tool_calls"][0]["arguments"]["city"],
        "Paris"
    );
    assert!(json["cases"][0]["usage"]["prompt"].as_u64().unwrap() > 0);
    let md = std::fs::read_to_string(d.join("out/report.md")).unwrap();
    assert!(md.contains("paris") && md.contains("London"), "{md}");

    // `-o -` is stdout.
    let to_stdout = run_in(
        &d,
        &[
            "test",
            "weather.yaml",
            "--mode",
            "replay",
            "--report",
            "json",
            "-o",
            "-",
        ],
    );
    assert_eq!(to_stdout.code, 1, "{}", to_stdout.stderr);
    let json: serde_json::Value = serde_json::from_str(&to_stdout.stdout).expect("JSON on stdout");
    assert_eq!(json["summary"]["failed"], 1);
    assert!(!d.join("-").exists());
    fake.stop().await;
}

/// A temp dir with `s.yaml`: the travel example's agent, the spec lines `top` (each
/// ending in a newline), and one case `paris` whose `input:` is `input` (with what follows
/// it), over a copy of the example's recorded Paris cassette.
fn travel_paris(top: &str, input: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("cassettes")).unwrap();
    std::fs::copy(
        repo().join("cassettes/examples/travel-agent/paris-weather.json"),
        d.join("cassettes/paris.json"),
    )
    .unwrap();
    let agent = repo().join("examples/travel-agent/agent.py");
    let python = repo().join(".venv/bin/python");
    std::fs::write(
        d.join("s.yaml"),
        format!(
            "app:\n  command: [{}, {}]\ncassettes: cassettes\n{top}cases:\n  - name: paris\n    input: {input}\n",
            python.display(),
            agent.display()
        ),
    )
    .unwrap();
    dir
}

#[test]
fn a_changed_input_misses_the_cassette_and_fails_with_the_nearest_recording() {
    let dir = travel_paris(
        "execution:\n  reports: {html: out/report.html, json: out/report.json}\n\
         tools:\n  get_time: {result: {time: noon}}\n",
        "What's the weather in Lyon?\n    expect:\n      calls: [get_weather]\n      reply: '18'",
    );
    let d = dir.path();
    let r = run_in(d, &["test", "s.yaml", "--mode", "replay"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("Lyon"), "{}", r.stderr);
    // The cause first, once; the expectations it left unjudged collapsed after it; no
    // warning about the mock the program never got to call.
    let miss = r.stderr.find("    miss:").expect("a miss block");
    let collapsed = r
        .stderr
        .find("2 expectations not judged: the program did not get its answers (-v shows them)")
        .expect("collapsed expectations");
    assert!(miss < collapsed, "{}", r.stderr);
    assert_eq!(
        r.stderr.matches("nearest recorded request").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("agentproxy: cassette miss (reported above)"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("✗"), "{}", r.stderr);
    assert!(!r.stderr.contains("was never called"), "{}", r.stderr);
    // The spec's own reports: the miss beside its nearest recording, in JSON and HTML.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("out/report.json")).unwrap()).unwrap();
    let near = &json["cases"][0]["near_misses"][0];
    assert_eq!(near["miss"], 0);
    assert_eq!(near["interaction"], 0);
    assert_eq!(near["path"], "/messages/1/content", "{near}");
    assert_eq!(
        near["now"]["messages"][1]["content"],
        "What's the weather in Lyon?"
    );
    let html = std::fs::read_to_string(d.join("out/report.html")).unwrap();
    assert!(
        html.contains(
            "Beside the nearest recording: first difference at <code>/messages/1/content</code>"
        ),
        "{html}"
    );
    assert!(html.contains("<td class=\"ins\"><pre>      &quot;content&quot;: &quot;What&#39;s the weather in Lyon?&quot;"), "{html}");
    // -v shows what was not judged, and the whole stderr tail.
    let v = run_in(d, &["test", "s.yaml", "--mode", "replay", "-v"]);
    assert!(
        v.stderr
            .contains("not judged: a request of this turn missed the cassette"),
        "{}",
        v.stderr
    );
    assert!(v.stderr.contains("✗ calls [get_weather]"), "{}", v.stderr);
    assert!(v.stderr.contains("Traceback"), "{}", v.stderr);
}

#[test]
fn turns_after_the_program_died_are_not_reached_and_counted_apart() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("die.yaml"),
        "app:\n  command: [sh, -c, 'read a; echo one; read b; echo gone >&2; exit 5']\ncases:\n  - name: three turns\n    turns:\n      - input: a\n      - input: b\n        expect: {reply: x}\n      - input: c\n        expect: {reply: y}\n",
    )
    .unwrap();
    let r = run_in(
        dir.path(),
        &[
            "test",
            "die.yaml",
            "--mode",
            "record",
            "--upstream",
            "http://127.0.0.1:9",
            "--report",
            "junit",
            "-o",
            "j.xml",
        ],
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "turn 3 not reached: the program exited before answering turn 2 during turn 2"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("1 error, 1 turn not reached"),
        "{}",
        r.stderr
    );
    let xml = std::fs::read_to_string(dir.path().join("j.xml")).unwrap();
    assert!(xml.contains("name=\"three turns › turn 3\""), "{xml}");
    assert!(xml.contains("skipped=\"1\""), "{xml}");
}

#[test]
fn a_timed_out_turn_names_the_turn_and_the_last_line_and_python_is_unbuffered() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("slow.yaml"),
        "app:\n  command: [sh, -c, 'read a; echo \"unbuffered=$PYTHONUNBUFFERED\"; read b; echo thinking; sleep 30']\n  reply_until: unbuffered|done\nexecution:\n  timeout: 2s\ncases:\n  - name: slow\n    turns:\n      - input: a\n        expect: {output: unbuffered=1}\n      - input: b\n",
    )
    .unwrap();
    let r = run_in(
        dir.path(),
        &[
            "test",
            "slow.yaml",
            "--mode",
            "record",
            "--upstream",
            "http://127.0.0.1:9",
        ],
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("(the case timeout) waiting for the reply of turn 2; its last output line was `thinking`"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("✗"), "{}", r.stderr);
}

#[test]
fn spec_errors_name_file_line_and_column_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        "app:\n  command: python3 x.py\ncases:\n  - name: a\n    input: hi\n    expct:\n      calls: [x]\n",
    )
    .unwrap();
    let r = run_in(dir.path(), &["test", "bad.yaml"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("bad.yaml:6:5"), "{}", r.stderr);
    assert!(r.stderr.contains("did you mean `expect`"), "{}", r.stderr);

    std::fs::write(
        dir.path().join("regex.yaml"),
        "app:\n  command: python3 x.py\ncases:\n  - name: a\n    input: hi\n    expect:\n      reply: {regex: '(unclosed'}\n",
    )
    .unwrap();
    let r = run_in(dir.path(), &["test", "regex.yaml"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("regex.yaml:7:"), "{}", r.stderr);
}

#[test]
fn a_crashing_program_is_an_execution_error_with_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("crash.yaml"),
        "app:\n  command: [sh, -c, 'echo the agent fell over >&2; exit 4']\ncases:\n  - name: crash\n    input: hi\n",
    )
    .unwrap();
    // Record mode so the missing cassette is not the reason; the program never calls the model.
    let r = run_in(
        dir.path(),
        &[
            "test",
            "crash.yaml",
            "--mode",
            "record",
            "--upstream",
            "http://127.0.0.1:9",
        ],
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("the agent fell over"), "{}", r.stderr);
    assert!(r.stderr.contains("status 4"), "{}", r.stderr);
}

/// A program that cannot start (a venv not made yet) is the case's only report: the
/// command and where it was started, not a list of expectations it never met.
#[test]
fn a_program_that_cannot_start_is_reported_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.yaml"),
        "app:\n  command: [./.venv/bin/python, agent.py]\ncases:\n  - name: hello\n    input: hi\n    expect:\n      reply: hello\n      calls: [get_weather]\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("cassettes/s")).unwrap();
    std::fs::copy(
        repo().join("cassettes/examples/weather-agent.json"),
        dir.path().join("cassettes/s/hello.json"),
    )
    .unwrap();
    let r = run_in(dir.path(), &["test", "s.yaml", "--mode", "replay"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let cwd = dir.path().canonicalize().unwrap();
    let start = format!(
        "error: failed to start `./.venv/bin/python` in {}",
        cwd.display()
    );
    assert!(r.stderr.contains(&start), "{}", r.stderr);
    assert!(!r.stderr.contains("never called"), "{}", r.stderr);
    assert!(!r.stderr.contains("reply does not match"), "{}", r.stderr);
}

#[test]
fn a_report_that_cannot_be_written_is_an_execution_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("skip.yaml"),
        "app:\n  command: [sh, -c, 'exit 0']\ncases:\n  - name: later\n    input: hi\n    skip: not yet\n",
    )
    .unwrap();
    let report = |out: &str| run_in(d, &["test", "skip.yaml", "--report", "json", "-o", out]);
    let r = report("report.json");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(d.join("report.json").is_file());
    // The report's directory is a regular file.
    std::fs::write(d.join("file"), "not a directory").unwrap();
    let r = report("file/report.json");
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("failed to create file"), "{}", r.stderr);
    // The report's path is a directory.
    std::fs::create_dir(d.join("out")).unwrap();
    let r = report("out");
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("failed to write report out"),
        "{}",
        r.stderr
    );
}

#[test]
fn filters_select_cases_and_parallel_runs_all() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = String::new();
    for i in 0..4 {
        cases.push_str(&format!(
            "  - name: case {i}\n    input: hi\n    expect: {{output: 'got hi'}}\n"
        ));
    }
    std::fs::write(
        dir.path().join("echo.yaml"),
        format!("app:\n  command: [sh, -c, 'read l; echo got $l']\ncases:\n{cases}"),
    )
    .unwrap();
    // No model call at all: replay mode needs cassettes, so record against nothing.
    let r = run_in(
        dir.path(),
        &[
            "test",
            "echo.yaml",
            "--mode",
            "record",
            "--upstream",
            "http://127.0.0.1:9",
            "--case",
            "case 1",
            "--case",
            "case 3",
            "-q",
        ],
    );
    // Programs that never call the model are errors in record mode (they bypassed the proxy).
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("0 passed, 0 failed, 2 errors"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("no request through the proxy"),
        "{}",
        r.stderr
    );
    let r = run_in(
        dir.path(),
        &[
            "test",
            "echo.yaml",
            "--filter",
            "case [02]",
            "--mode",
            "record",
            "--upstream",
            "http://127.0.0.1:9",
            "--parallel",
            "4",
            "-q",
        ],
    );
    assert!(r.stderr.contains("2 errors"), "{}", r.stderr);
    let r = run_in(dir.path(), &["test", "echo.yaml", "--case", "nope"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn url_apps_are_driven_turn_by_turn_over_http() {
    let fake = FakeOpenAi::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_owned();
    // A free port for the proxy, which the running service is configured with.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut service = Command::new("python3")
        .arg(repo().join("tests/fixtures/url_app.py"))
        .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(service.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let app_port = line.trim().to_owned();
    std::fs::write(
        d.join("svc.yaml"),
        format!(
            "app:\n  url: http://127.0.0.1:{app_port}/chat\ncassettes: cassettes\ncases:\n  - name: two turns\n    turns:\n      - input: Hello\n        expect: {{output: 'You said: Hello'}}\n      - input: Again\n        expect: {{reply: 'You said: Again', output: {{equals: 'You said: Again'}}}}\n"
        ),
    )
    .unwrap();
    let url = fake.url();
    let listen = format!("127.0.0.1:{port}");
    let r = run_off_runtime(
        &d,
        &[
            "test",
            "svc.yaml",
            "--mode",
            "record",
            "--upstream",
            &url,
            "--listen",
            &listen,
        ],
    )
    .await;
    let _ = service.kill();
    let _ = service.wait();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("cassettes/two-turns.json")).unwrap())
            .unwrap();
    let turns: Vec<_> = c["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["turn"].clone())
        .collect();
    assert_eq!(turns, vec![serde_json::json!(0), serde_json::json!(1)]);
    fake.stop().await;
}

/// Re-record after the model changed (it now also calls get_weather for London): the diff
/// names the new call, and the verdict depends on what the spec asserts and whether it
/// still holds.
#[tokio::test(flavor = "multi_thread")]
async fn rerecord_with_a_changed_model_reports_regression_or_benign() {
    let fake = FakeOpenAi::start().await;
    for (expect, verdict) in [
        (
            "    expect:\n      never:\n        - get_weather: {city: London}\n",
            "regression",
        ),
        // The asserted tool is called anew, and the assertion still holds.
        (
            "    expect:\n      calls:\n        - get_weather: {city: Paris}\n",
            "asserted values changed and every assertion still holds",
        ),
        ("", "benign"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_owned();
        let agent = repo().join("examples/weather-agent/agent.py");
        let spec = |model: &str| {
            format!(
                "app:\n  command: [python3, {}]\n  env: {{AGENT_MODEL: {model}}}\ncassettes: cassettes\ncases:\n  - name: paris\n    input: What's the weather in Paris?\n{expect}",
                agent.display()
            )
        };
        let url = fake.url();
        let record = move |d: PathBuf, text: String| {
            let url = url.clone();
            tokio::task::spawn_blocking(move || {
                std::fs::write(d.join("s.yaml"), text).unwrap();
                run_in(
                    &d,
                    &[
                        "test",
                        "s.yaml",
                        "--mode",
                        "record",
                        "--upstream",
                        &url,
                        "--report",
                        "json",
                        "-o",
                        "r.json",
                    ],
                )
            })
        };
        let first = record.clone()(d.clone(), spec("gpt-4o-mini"))
            .await
            .unwrap();
        assert_eq!(first.code, 0, "{}", first.stderr);
        let second = record(d.clone(), spec("gpt-4o-mini-eager")).await.unwrap();
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
        let diff = report["cases"][0]["diff"]
            .as_str()
            .expect("a diff after the re-record");
        assert!(diff.contains("London"), "{diff}");
        assert!(diff.contains(verdict), "expected {verdict}:\n{diff}");
        // A record run asserts too: the forbidden call fails it, but the cassette is written.
        assert_eq!(
            second.code,
            if verdict == "regression" { 1 } else { 0 },
            "{}",
            second.stderr
        );
        assert!(std::fs::read_to_string(d.join("cassettes/paris.json"))
            .unwrap()
            .contains("London"));
    }
    fake.stop().await;
}

#[test]
fn a_case_without_cassette_in_replay_names_its_mode_and_how_to_record_just_it() {
    let dir = tempfile::tempdir().unwrap();
    weather_spec(
        dir.path(),
        "  - name: tokyo only\n    input: What's the weather in Tokyo?\n",
    );
    let r = run_in(dir.path(), &["test", "weather.yaml", "--mode", "replay"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("ERROR weather.yaml::tokyo only (0.00s, replay)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(
            "record it with `agentproxy test weather.yaml --mode record --case 'tokyo only'`"
        ),
        "{}",
        r.stderr
    );
}

/// A case's cassette says which case recorded it, which results its mocks wrote and
/// which call a fault spoiled; `show` marks them; and a plain `replay` of it, which applies
/// no mocks, misses with a word on why and the command that runs it as the case does.
#[tokio::test(flavor = "multi_thread")]
async fn a_case_cassette_names_its_case_mocks_and_faults_and_plain_replay_points_back() {
    let fake = FakeOpenAi::start().await;
    // The directory lives as long as `_dir`.
    let (_dir, d) = recorded_paris(&fake).await;
    let cassette: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("cassettes/paris.json")).unwrap())
            .unwrap();
    assert_eq!(
        cassette["recorded_by"],
        serde_json::json!({"spec": "weather.yaml", "case": "paris", "mocks": ["get_weather"]})
    );
    let answer = &cassette["interactions"][0]["response"]["body"]["json"];
    let call_id = answer["choices"][0]["message"]["tool_calls"][0]["id"].clone();
    assert_eq!(
        cassette["interactions"][1]["mocked"],
        serde_json::json!([call_id])
    );
    assert!(cassette["interactions"][0].get("mocked").is_none());

    let shown = run_in(&d, &["show", "cassettes/paris.json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    for want in [
        "recorded by the case `paris` of weather.yaml, which mocks get_weather\n",
        "← get_weather (mocked): {\"city\":\"Paris\",\"sky\":\"windy\",\"temp_c\":21}",
    ] {
        assert!(
            shown.stdout.contains(want),
            "{want:?} not in\n{}",
            shown.stdout
        );
    }

    let page = run_in(&d, &["show", "cassettes/paris.json", "--format", "html"]);
    assert_eq!(page.code, 0, "{}", page.stderr);
    assert!(
        page.stdout.contains("<span class=\"mark\">mocked</span>"),
        "{}",
        page.stdout
    );
    assert!(page
        .stdout
        .contains("recorded by the case `paris` of weather.yaml, which mocks get_weather"));

    // Plain replay: the agent's own tool says 18°C, the cassette holds the mock's 21.
    let agent = repo().join("examples/weather-agent/agent.py");
    let agent = agent.to_str().unwrap();
    let plain = run_in(
        &d,
        &[
            "replay",
            "--cassette",
            "cassettes/paris.json",
            "--",
            "python3",
            agent,
        ],
    );
    assert_eq!(plain.code, 1, "{}", plain.stderr);
    for want in [
        "hint: this cassette was recorded by the case `paris` of weather.yaml, which mocks get_weather: a plain replay does not drive the program as the case does or apply its mocks; run it with `agentproxy test weather.yaml --case paris`",
        "re-record (`agentproxy test weather.yaml --case paris --mode record`)",
    ] {
        assert!(plain.stderr.contains(want), "{want:?} not in\n{}", plain.stderr);
    }
    // The case itself replays it; its report says where each result came from.
    let replay = run_in(
        &d,
        &[
            "test",
            "weather.yaml",
            "--mode",
            "replay",
            "--report",
            "json",
            "-o",
            "-",
        ],
    );
    assert_eq!(replay.code, 0, "{}", replay.stderr);
    let report: serde_json::Value = serde_json::from_str(&replay.stdout).unwrap();
    let call = &report["cases"][0]["turns"][0]["tool_calls"][0];
    assert_eq!(call["result_origin"], "mocked", "{call}");
    // With the call spoiled on its way, the result is the program's answer to that.
    let url = fake.url();
    let spoiled = run_off_runtime(
        &d,
        &[
            "test",
            "weather.yaml",
            "--mode",
            "record",
            "--upstream",
            &url,
            "--cassettes",
            "spoiled",
            "--fault",
            "request=1,kind=unknown_tool",
            "--report",
            "json",
            "-o",
            "-",
        ],
    )
    .await;
    let report: serde_json::Value = serde_json::from_str(&spoiled.stdout).unwrap();
    let call = &report["cases"][0]["turns"][0]["tool_calls"][0];
    assert_eq!(
        call["result_origin"], "faulted",
        "{call}\n{}",
        spoiled.stderr
    );

    // A fault that spoils a call while recording: the real call is kept, and marked.
    let url = fake.url();
    let faulted = run_off_runtime(
        &d,
        &[
            "record",
            "--cassette",
            "faulted.json",
            "--upstream",
            &url,
            "--fault",
            "request=1,kind=unknown_tool",
            "--",
            "python3",
            agent,
        ],
    )
    .await;
    assert_eq!(faulted.code, 0, "{}", faulted.stderr);
    assert!(
        faulted.stdout.contains("tool: get_weather_unknown"),
        "{}",
        faulted.stdout
    );
    let cassette: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("faulted.json")).unwrap()).unwrap();
    assert_eq!(
        cassette["interactions"][0]["spoiled"],
        serde_json::json!({"call": 0, "fault": "unknown_tool"})
    );
    assert!(cassette.get("recorded_by").is_none());
    let shown = run_in(&d, &["show", "faulted.json"]);
    assert!(
        shown.stdout.contains(
            "→ get_weather {\"city\":\"Paris\",\"unit\":\"celsius\"}  ⚡ the program got this call spoiled by unknown_tool"
        ),
        "{}",
        shown.stdout
    );
    fake.stop().await;
}

/// `egress.require: contained`: a run that cannot contain its program (here `--contain
/// off`) cannot certify the case, which fails saying so; contained where the machine
/// allows it, the same case passes, and the reports record the level.
#[test]
fn a_required_containment_not_reached_fails_the_case_as_uncertified() {
    let dir = travel_paris(
        "egress:\n  require: contained\n",
        "What's the weather in Paris?",
    );
    let d = dir.path();
    let off = run_in(
        d,
        &[
            "test",
            "s.yaml",
            "--mode",
            "replay",
            "--contain",
            "off",
            "--report",
            "json",
            "-o",
            "off.json",
        ],
    );
    assert_eq!(off.code, 1, "{}", off.stderr);
    assert!(
        off.stderr.contains("cannot certify: the spec requires `egress.require: contained`, and this run reached intercepted (proxy variables; traffic that ignores them is not seen)"),
        "{}",
        off.stderr
    );
    assert!(
        off.stderr
            .contains("; egress: intercepted (proxy variables"),
        "{}",
        off.stderr
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("off.json")).unwrap()).unwrap();
    assert_eq!(
        json["cases"][0]["containment"],
        "intercepted (proxy variables; traffic that ignores them is not seen)"
    );
    let auto = run_in(d, &["test", "s.yaml", "--mode", "replay"]);
    if auto
        .stderr
        .contains("egress: contained (network namespace)")
    {
        assert_eq!(auto.code, 0, "{}", auto.stderr);
    } else {
        // This machine cannot contain: the level says why, and the case cannot pass.
        assert!(
            auto.stderr.contains("egress: not contained: "),
            "{}",
            auto.stderr
        );
        assert_eq!(auto.code, 1, "{}", auto.stderr);
    }
}

/// `execution.replay_timing: recorded` (or `--realtime`) replays a case's answers after
/// their recorded latency; by default they come at once.
#[tokio::test(flavor = "multi_thread")]
async fn a_spec_can_replay_at_the_recorded_pace() {
    let fake = FakeOpenAi::start().await;
    let (_dir, d) = recorded_paris(&fake).await;
    fake.stop().await;
    let cassette = d.join("cassettes/paris.json");
    let mut c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cassette).unwrap()).unwrap();
    let its = c["interactions"].as_array_mut().unwrap();
    assert_eq!(its.len(), 2);
    for it in its {
        it["latency_ms"] = serde_json::json!(2000);
    }
    std::fs::write(&cassette, c.to_string()).unwrap();
    let spec = std::fs::read_to_string(d.join("weather.yaml")).unwrap();
    let timed = spec.replace(
        "cases:\n",
        "execution:\n  replay_timing: recorded\ncases:\n",
    );
    std::fs::write(d.join("timed.yaml"), timed).unwrap();
    let replay = |args: &'static [&'static str]| {
        let d = d.clone();
        async move {
            let started = std::time::Instant::now();
            let run = run_off_runtime(&d, args).await;
            assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
            started.elapsed()
        }
    };
    let paced = std::time::Duration::from_secs(4);
    let by_spec = replay(&["test", "timed.yaml", "--mode", "replay"]).await;
    assert!(by_spec >= paced, "replay_timing: recorded took {by_spec:?}");
    let by_flag = replay(&["test", "weather.yaml", "--mode", "replay", "--realtime"]).await;
    assert!(by_flag >= paced, "--realtime took {by_flag:?}");
    let instant = replay(&["test", "weather.yaml", "--mode", "replay"]).await;
    assert!(instant < paced, "the default took {instant:?}");
}
