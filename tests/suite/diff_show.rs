//! `agentproxy diff` and `agentproxy show` as a user runs them: verdicts, `--check`, the
//! three formats, spec selection, and exit code 2 for what cannot be read.

use crate::support;

use std::path::Path;
use std::process::Command;

use agentproxy::cassette::{
    format, store, Body, Cassette, Interaction, RecordedRequest, RecordedResponse,
};
use serde_json::{json, Value};
use support::proxy::bin;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str], cwd: &Path) -> Out {
    let out = Command::new(bin())
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A one-turn weather conversation: a call to get_weather with `args`, then `reply`.
/// `salt` changes every volatile value (ids, timestamps, usage, latency, keys).
fn weather(path: &Path, salt: u64, system: &str, args: Value, reply: &str) {
    let tools = json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
    let mut messages = vec![
        json!({"role": "system", "content": system}),
        json!({"role": "user", "content": "Weather in Paris?"}),
    ];
    let call_id = format!("call_{salt}");
    let ask = json!({"role": "assistant", "content": null, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": args.to_string()}}]});
    let mut interactions = Vec::new();
    let mut push = |request: Value, message: Value, n: u64| {
        interactions.push(Interaction {
            route: "openai.chat".into(),
            key: format!("{:064x}", salt * 10 + n),
            turn: Some(0),
            request: RecordedRequest { method: "POST".into(), path: "/v1/chat/completions".into(), body: Some(Body::Json(request.into())), body_xxh3: None },
            response: RecordedResponse {
                status: 200,
                headers: [("content-type".to_owned(), "application/json".to_owned())].into(),
                body: Some(Body::Json(json!({"id": format!("chatcmpl-{salt}{n}"), "object": "chat.completion", "created": 1_764_500_000 + salt,
                    "system_fingerprint": format!("fp_{salt}"), "model": "gpt-4o-mini-2024-07-18",
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100 + salt, "completion_tokens": 10 + salt, "total_tokens": 110 + 2 * salt}}).into())),
                events: None,
                aborted: None,
                encoded: Default::default(),
                encoded_events: Default::default(),
                event_ms: Vec::new(),
            },
            latency_ms: 200 + salt * 13,
            mocked: Vec::new(),
            spoiled: None,
        });
    };
    let request = |messages: &Vec<Value>| json!({"model": "gpt-4o-mini", "messages": messages, "tools": tools});
    push(request(&messages), ask.clone(), 0);
    messages.push(ask);
    messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": "{\"temp_c\":18}"}));
    push(
        request(&messages),
        json!({"role": "assistant", "content": reply}),
        1,
    );
    let c = Cassette {
        format: format::format_version(),
        recorder: "agentproxy 0.1.0".into(),
        recorded_at: format!("2026-11-{:02}T10:00:00Z", salt),
        recorded_by: None,
        upstreams: format::Upstreams(std::collections::BTreeMap::from([
            ("openai".into(), "https://api.openai.com".into()),
            ("anthropic".into(), "https://api.anthropic.com".into()),
        ])),
        match_rules: Default::default(),
        interactions,
    };
    store::save(path, &c).unwrap();
}

const SYSTEM: &str = "You are a weather assistant.";

const SPEC: &str = r#"
app: {command: python agent.py}
cases:
  - name: paris
    input: Weather in Paris?
    expect:
      calls:
        - get_weather: {city: Paris}
  - name: anything
    input: Weather in Paris?
    expect: {reply: "°C"}
"#;

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    weather(
        &d.join("old.json"),
        1,
        SYSTEM,
        json!({"city": "Paris"}),
        "18°C in Paris.",
    );
    weather(
        &d.join("same.json"),
        2,
        SYSTEM,
        json!({"city": "Paris"}),
        "18°C in Paris.",
    );
    weather(
        &d.join("city.json"),
        3,
        SYSTEM,
        json!({"city": "Paris, FR"}),
        "18°C in Paris.",
    );
    weather(
        &d.join("units.json"),
        4,
        SYSTEM,
        json!({"city": "Paris", "units": "metric"}),
        "18°C in Paris.",
    );
    weather(
        &d.join("prompt.json"),
        5,
        "You are a concise weather assistant.",
        json!({"city": "Paris"}),
        "18°C in Paris.",
    );
    std::fs::write(d.join("spec.yaml"), SPEC).unwrap();
    dir
}

#[test]
fn a_rerecord_that_changed_only_volatile_values_is_identical() {
    let dir = setup();
    let out = run(&["diff", "old.json", "same.json", "--check"], dir.path());
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.ends_with("verdict: identical\n"),
        "{}",
        out.stdout
    );
}

/// What either cassette declares volatile is left out of both sides, whichever side
/// declares it.
#[test]
fn the_match_rules_of_either_side_apply_to_both() {
    let dir = setup();
    let d = dir.path();
    let tolerant = |from: &str, to: &str| {
        let mut c = store::load(&d.join(from)).unwrap();
        c.match_rules.ignore = vec!["/messages/0/content".into()];
        store::save(&d.join(to), &c).unwrap();
    };
    tolerant("prompt.json", "prompt-tolerant.json");
    tolerant("old.json", "old-tolerant.json");
    let verdict = |old: &str, new: &str| {
        let out = run(&["diff", old, new], d);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout.lines().last().unwrap_or_default().to_owned()
    };
    assert_ne!(verdict("old.json", "prompt.json"), "verdict: identical");
    assert_eq!(
        verdict("old.json", "prompt-tolerant.json"),
        "verdict: identical"
    );
    assert_eq!(
        verdict("old-tolerant.json", "prompt.json"),
        "verdict: identical"
    );
}

#[test]
fn check_fails_only_on_regression() {
    let dir = setup();
    let d = dir.path();
    let spec = ["--spec", "spec.yaml", "--case", "paris"];
    // The asserted argument changed.
    let out = run(&[&["diff", "old.json", "city.json"][..], &spec].concat(), d);
    assert_eq!(
        out.code, 0,
        "without --check the verdict does not set the exit code"
    );
    assert!(
        out.stdout
            .contains("city: \"Paris\" → \"Paris, FR\"  [asserted]"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("verdict: regression"), "{}", out.stdout);
    let out = run(
        &[&["diff", "old.json", "city.json", "--check"][..], &spec].concat(),
        d,
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    // An argument the spec does not look at: benign.
    let out = run(
        &[&["diff", "old.json", "units.json", "--check"][..], &spec].concat(),
        d,
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("units: <absent> → \"metric\"  [incidental]"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("verdict: benign"), "{}", out.stdout);
    // Without a spec, any change in what the agent did counts.
    let out = run(&["diff", "old.json", "units.json", "--check"], d);
    assert_eq!(out.code, 1, "{}", out.stdout);
    // ...but a change in what it was told alone does not.
    let out = run(&["diff", "old.json", "prompt.json", "--check"], d);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stdout.contains("system prompt changed"),
        "{}",
        out.stdout
    );
}

#[test]
fn markdown_and_json_formats() {
    let dir = setup();
    let out = run(
        &[
            "diff",
            "old.json",
            "city.json",
            "--spec",
            "spec.yaml",
            "--case",
            "paris",
            "--format",
            "markdown",
        ],
        dir.path(),
    );
    assert_eq!(out.code, 0);
    assert!(
        out.stdout
            .starts_with("### Trajectory diff: ❌ regression\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("`city`: `\"Paris\"` → `\"Paris, FR\"` — **asserted**"),
        "{}",
        out.stdout
    );
    let out = run(
        &["diff", "old.json", "city.json", "--format", "json"],
        dir.path(),
    );
    assert_eq!(out.code, 0);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "regression");
    assert_eq!(v["turns"][0]["changes"][0]["kind"], "arguments_changed");
    assert_eq!(v["turns"][0]["changes"][0]["changes"][0]["path"], "city");
}

/// `--format html`: one page, the verdict on top, the asserted change tagged, a changed
/// prompt old and new side by side; a hostile prompt stays text, and the page has no script.
#[test]
fn the_html_format_is_a_page_with_the_verdict_first_and_recorded_text_escaped() {
    let dir = setup();
    let d = dir.path();
    let out = run(
        &[
            "diff",
            "old.json",
            "city.json",
            "--spec",
            "spec.yaml",
            "--case",
            "paris",
            "--format",
            "html",
        ],
        d,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let page = &out.stdout;
    assert!(page.starts_with("<!doctype html>"), "{page}");
    assert!(page.contains("<title>Trajectory diff: regression</title>"));
    assert!(page.contains(
        "<h1>Trajectory diff: <span class=\"verdict regression\">regression</span></h1>"
    ));
    assert!(
        page.contains("<li class=\"asserted path\"><code>city</code>"),
        "{page}"
    );
    assert!(!page.contains("<script"), "a diff page has no script");
    // Both runs' steps, aligned: the changed call beside its counterpart, the unchanged
    // reply across both columns.
    let sides = &page[page
        .find("<h2>Side by side</h2>")
        .expect("the side-by-side view")..];
    assert!(
        sides.contains("<table class=\"sides\"><tr><th>old.json</th><th>city.json</th></tr>"),
        "{sides}"
    );
    assert!(
        sides.contains("<tr class=\"changed\"><td>call <code>get_weather</code> <code>{&quot;city&quot;:&quot;Paris&quot;}</code><div class=\"result\">→ "),
        "{sides}"
    );
    assert!(
        sides.contains("<td>call <code>get_weather</code> <code>{&quot;city&quot;:&quot;Paris, FR&quot;}</code>"),
        "{sides}"
    );
    assert!(
        sides.contains("<tr class=\"same\"><td colspan=\"2\">reply <code>&quot;18°C in Paris.&quot;</code></td></tr>"),
        "{sides}"
    );

    let hostile =
        "<script>alert(1)</script>\n\"><img src=x onerror=alert(1)>\nYou are a weather assistant.";
    weather(
        &d.join("hostile.json"),
        6,
        hostile,
        json!({"city": "Paris"}),
        "18°C in Paris.",
    );
    let out = run(&["diff", "old.json", "hostile.json", "--format", "html"], d);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let page = &out.stdout;
    assert!(page.contains("What the agent was told"), "{page}");
    assert!(page.contains("<table class=\"diff\">"), "{page}");
    assert!(
        page.contains("<td class=\"ins\"><pre>&lt;script&gt;alert(1)&lt;/script&gt;</pre></td>"),
        "{page}"
    );
    for never in ["<script", "<img"] {
        assert!(!page.contains(never), "{never}");
    }
}

#[test]
fn a_spec_with_one_case_needs_no_case_name() {
    let dir = setup();
    let one = SPEC.split("  - name: anything").next().unwrap();
    std::fs::write(dir.path().join("one.yaml"), one).unwrap();
    let out = run(
        &[
            "diff",
            "old.json",
            "city.json",
            "--spec",
            "one.yaml",
            "--check",
        ],
        dir.path(),
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("spec case \"paris\""), "{}", out.stdout);
}

#[test]
fn unreadable_inputs_exit_2() {
    let dir = setup();
    let d = dir.path();
    let out = run(&["diff", "old.json", "nope.json"], d);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("nope.json"), "{}", out.stderr);
    std::fs::write(
        d.join("broken.json"),
        "{\"format\": \"1.0\", \"interactions\": [",
    )
    .unwrap();
    let out = run(&["diff", "broken.json", "old.json"], d);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("broken.json is broken at line"),
        "{}",
        out.stderr
    );
    let out = run(&["diff", "old.json", "city.json", "--spec", "spec.yaml"], d);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("has 2 cases") && out.stderr.contains("`paris`, `anything`"),
        "{}",
        out.stderr
    );
    let out = run(
        &[
            "diff",
            "old.json",
            "city.json",
            "--spec",
            "spec.yaml",
            "--case",
            "lyon",
        ],
        d,
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("no case named `lyon`"),
        "{}",
        out.stderr
    );
    std::fs::write(
        d.join("bad.yaml"),
        SPEC.replace("{city: Paris}", "{city: {regex: '('}}"),
    )
    .unwrap();
    let out = run(
        &[
            "diff",
            "old.json",
            "city.json",
            "--spec",
            "bad.yaml",
            "--case",
            "paris",
        ],
        d,
    );
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("bad.yaml:"), "{}", out.stderr);
    let out = run(&["diff", "old.json", "city.json", "--case", "paris"], d);
    assert_eq!(out.code, 2, "--case needs --spec: {}", out.stderr);
    let out = run(&["show", "nope.json"], d);
    assert_eq!(out.code, 2);
}

#[test]
fn show_prints_the_trajectory() {
    let dir = setup();
    let out = run(&["show", "old.json"], dir.path());
    assert_eq!(out.code, 0, "{}", out.stderr);
    for needle in [
        "turn 1",
        "system: You are a weather assistant.",
        "user: Weather in Paris?",
        "→ get_weather {\"city\":\"Paris\"}",
        "← get_weather: {\"temp_c\":18}",
        "reply: 18°C in Paris.",
        "total: 2 model calls, 1 tool call",
    ] {
        assert!(out.stdout.contains(needle), "{needle}\n{}", out.stdout);
    }
    let out = run(&["show", "old.json", "--json"], dir.path());
    assert_eq!(out.code, 0);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["totals"]["model_calls"], 2);
    assert_eq!(v["turns"][0]["steps"][1]["reply"], "18°C in Paris.");
}

#[test]
fn help_has_examples() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in ["diff", "show"] {
        let out = run(&[cmd, "--help"], dir.path());
        assert_eq!(out.code, 0);
        assert!(
            out.stdout.contains("Examples:") && out.stdout.contains("Exit codes"),
            "{}",
            out.stdout
        );
    }
}

/// `REVISION:PATH` reads a cassette as a commit has it, for `diff` and `show`; a missing
/// file's error never says to record to that path.
#[test]
fn a_cassette_at_a_git_revision_is_read_from_git() {
    let dir = setup();
    let d = dir.path();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(d)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.test")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.test")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    std::fs::create_dir(d.join("cassettes")).unwrap();
    std::fs::copy(d.join("old.json"), d.join("cassettes/x.json")).unwrap();
    git(&["init", "-q"]);
    git(&["add", "cassettes/x.json"]);
    git(&["commit", "-q", "-m", "x"]);
    // Re-recorded with another argument: the committed one is the old side.
    std::fs::copy(d.join("city.json"), d.join("cassettes/x.json")).unwrap();
    let out = run(&["diff", "HEAD:cassettes/x.json", "cassettes/x.json"], d);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("old: HEAD:cassettes/x.json\n"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("arguments changed"), "{}", out.stdout);
    let shown = run(&["show", "HEAD:cassettes/x.json"], d);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert_eq!(shown.stdout, run(&["show", "old.json"], d).stdout);
    for (args, says) in [
        (
            &["diff", "HEAD:cassettes/y.json", "cassettes/x.json"][..],
            "git cannot read it as REVISION:PATH: path 'cassettes/y.json' does not exist in 'HEAD'",
        ),
        (
            &["show", "cassettes/y.json"][..],
            "cassette cassettes/y.json: no such file",
        ),
    ] {
        let out = run(args, d);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains(says), "{}", out.stderr);
        assert!(!out.stderr.contains("agentproxy record"), "{}", out.stderr);
    }
}
