//! The HTML report in a real browser: headless Chromium (Debian's `chromium`, installed by
//! scripts/setup-browser.sh) loads reports written by `agentproxy test --html` from real
//! runs, and the page as the browser built it (`--dump-dom`, after its script ran) and the
//! browser's console (every script error and Content-Security-Policy violation is logged
//! there) are checked: the examples' report with a failing case, its filters driven by the
//! address (`#status=failed`, `#q=…`), and a run whose cassette holds hostile text and a
//! 10 MB reply, in the test report and in `show --format html`.
//!
//! A missing Chromium fails these tests; `AGENTPROXY_SKIP_BROWSER=1` skips them on purpose.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::browser::{browse, chromium};
use support::proxy::bin;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The console is read: a page that logs, and one whose policy blocks a script, are
/// heard (so an empty console below means a quiet page, not a deaf browser).
#[test]
fn the_browser_console_is_heard() {
    let Some(chromium) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("probe.html");
    std::fs::write(
        &page,
        "<!doctype html><html><head><meta http-equiv=\"Content-Security-Policy\" \
         content=\"script-src 'sha256-AAAA'\"></head><body><script>x()</script></body></html>",
    )
    .unwrap();
    let (_, console) = browse(&chromium, &page, "");
    assert!(
        console
            .iter()
            .any(|l| l.contains("Content Security Policy")),
        "{console:#?}"
    );
    std::fs::write(
        &page,
        "<!doctype html><script>console.error('probe')</script>",
    )
    .unwrap();
    let (_, console) = browse(&chromium, &page, "");
    assert!(console.iter().any(|l| l.contains("probe")), "{console:#?}");
}

/// `agentproxy test SPECS… --html DIR/report.html` in replay; its exit code and the report.
fn report(dir: &Path, specs: &[&Path]) -> (i32, PathBuf) {
    let html = dir.join("report.html");
    let out = Command::new(bin())
        .arg("test")
        .args(specs)
        .arg("--html")
        .arg(&html)
        .args(["--mode", "replay", "-q"])
        .current_dir(repo())
        .env_remove("CI")
        .output()
        .unwrap();
    assert!(html.is_file(), "{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), html)
}

/// The `<section class="case …">` elements of a page: each opening tag.
fn sections(dom: &str) -> Vec<&str> {
    dom.match_indices("<section class=\"case")
        .map(|(i, _)| &dom[i..i + dom[i..].find('>').unwrap()])
        .collect()
}

/// A spec beside the travel example's own, with one expectation the recording breaks
/// (a copy of its cassette: two specs may not share one).
fn failing_travel_spec(dir: &Path) -> PathBuf {
    let r = repo().display();
    let cassettes = dir.join("cassettes");
    std::fs::create_dir(&cassettes).unwrap();
    std::fs::copy(
        repo().join("cassettes/examples/travel-agent/paris-weather.json"),
        cassettes.join("paris-weather.json"),
    )
    .unwrap();
    let spec = dir.join("failing.yaml");
    std::fs::write(
        &spec,
        format!(
            "name: Travel, asserted wrongly\napp:\n  command: [{r}/.venv/bin/python, {r}/examples/travel-agent/agent.py]\n\
             cassettes: {c}\ntools:\n  get_time:\n    - when: {{city: Tokyo}}\n      result: {{city: Tokyo, time: \"09:00:00\"}}\n\
             \x20   - result: {{city: somewhere, time: \"12:00:00\"}}\ncases:\n  - name: paris weather\n    input: What's the weather in Paris?\n    expect:\n      reply: \"31°C\"\n",
            c = cassettes.display()
        ),
    )
    .unwrap();
    spec
}

/// The report of the travel example's two specs and [`failing_travel_spec`], in `dir`.
fn examples_report(dir: &Path) -> (i32, PathBuf) {
    let failing = failing_travel_spec(dir);
    let travel = repo().join("examples/travel-agent/travel.yaml");
    let faults = repo().join("examples/travel-agent/faults.yaml");
    report(dir, &[&travel, &faults, &failing])
}

#[test]
fn the_examples_report_shows_the_failure_first_and_filters_in_a_browser() {
    let Some(chromium) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (code, html) = examples_report(dir.path());
    assert_eq!(code, 1);
    let size = std::fs::metadata(&html).unwrap().len();
    assert!(size < 200_000, "{size} bytes");

    let (dom, console) = browse(&chromium, &html, "");
    assert!(console.is_empty(), "{console:#?}");
    assert!(
        dom.contains("<title>agentproxy test: 6 passed, 1 failed</title>"),
        "{dom}"
    );
    assert!(dom.contains("<b>6</b> passed") && dom.contains("<b>1</b> failed"));
    let all = sections(&dom);
    assert_eq!(all.len(), 7);
    // The failure comes first, open, its cause in its summary line; nothing is hidden.
    assert!(all[0].contains("data-status=\"failed\""), "{}", all[0]);
    assert!(all.iter().all(|s| !s.contains("hidden")), "{all:#?}");
    let first = &dom[dom.find("<section class=\"case failed").unwrap()..];
    assert!(first.contains("<details open=\"\">"), "{}", &first[..400]);
    assert!(
        first.contains(
            "<div class=\"cause\">turn 1: reply contains \"31°C\": reply does not match</div>"
        ),
        "{}",
        &first[..600]
    );
    assert!(dom.contains("7 of 7 shown"));

    let (dom, console) = browse(&chromium, &html, "status=failed");
    assert!(console.is_empty(), "{console:#?}");
    let shown: Vec<&str> = sections(&dom)
        .into_iter()
        .filter(|s| !s.contains("hidden"))
        .collect();
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert!(shown[0].contains("failing.yaml::paris weather"));
    assert!(
        dom.contains("aria-pressed=\"true\">Failed (1)"),
        "the Failed button is pressed"
    );

    let (dom, _) = browse(&chromium, &html, "q=two%20cities");
    let shown: Vec<&str> = sections(&dom)
        .into_iter()
        .filter(|s| !s.contains("hidden"))
        .collect();
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert!(shown[0].contains("weather and time in two cities"));
    assert!(dom.contains("1 of 7 shown"));
}

/// A cassette whose reply is hostile markup and 10 MB long: the page runs no script of
/// it, builds no element of it, logs nothing, and stays small.
#[test]
fn a_hostile_cassette_runs_nothing_in_the_browser() {
    let Some(chromium) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let hostile = "<script>document.title='pwned'</script></script><script>document.title='pwned'</script>\
                   <a href=\"javascript:document.title='pwned'\">x</a>\"><img src=x onerror=\"document.title='pwned'\">";
    let mut cassette: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("cassettes/examples/weather-agent.json")).unwrap(),
    )
    .unwrap();
    let last = cassette["interactions"]
        .as_array_mut()
        .unwrap()
        .last_mut()
        .unwrap();
    let reply = format!("{hostile}{}", "x".repeat(10 << 20));
    last["response"]["body"]["json"]["choices"][0]["message"]["content"] = Value::String(reply);
    std::fs::create_dir(dir.path().join("cassettes")).unwrap();
    std::fs::write(
        dir.path().join("cassettes/hostile.json"),
        serde_json::to_vec(&cassette).unwrap(),
    )
    .unwrap();
    let spec = dir.path().join("hostile.yaml");
    std::fs::write(
        &spec,
        format!(
            "app:\n  command: [python3, {}]\ncassettes: {}\ncases:\n  - name: hostile\n    expect:\n      reply: {{contains: never said}}\n",
            repo().join("examples/weather-agent/agent.py").display(),
            dir.path().join("cassettes").display()
        ),
    )
    .unwrap();
    let (code, html) = report(dir.path(), &[&spec]);
    assert_eq!(code, 1);
    let size = std::fs::metadata(&html).unwrap().len();
    assert!(size < 500_000, "{size} bytes");

    let (dom, console) = browse(&chromium, &html, "");
    assert!(console.is_empty(), "{console:#?}");
    assert!(
        dom.contains("<title>agentproxy test: 0 passed, 1 failed</title>"),
        "{}",
        &dom[..2000]
    );
    // `href=` and `onerror=` are there as text: with `<` escaped they start nothing.
    for never in ["pwned</title>", "<img", "<a "] {
        assert!(!dom.contains(never), "{never}");
    }
    assert!(
        dom.contains("&lt;img src=x onerror="),
        "the markup is there, as text"
    );
    assert_eq!(
        dom.matches("<script").count(),
        1,
        "only the page's own script"
    );

    // `show --format html` of the same cassette: a page with no script at all.
    let out = Command::new(bin())
        .args(["show", "--format", "html"])
        .arg(dir.path().join("cassettes/hostile.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.len() < 500_000, "{} bytes", out.stdout.len());
    let page = dir.path().join("show.html");
    std::fs::write(&page, &out.stdout).unwrap();
    let (dom, console) = browse(&chromium, &page, "");
    assert!(console.is_empty(), "{console:#?}");
    for never in ["pwned</title>", "<img", "<a ", "<script"] {
        assert!(!dom.contains(never), "{never}");
    }
    assert!(
        dom.contains("&lt;img src=x onerror="),
        "the markup is there, as text"
    );
    assert!(dom.contains("model call 2"), "{}", &dom[..3000]);
}

/// Each `eval` of `steps` (see `tests/browser/keys.py`) on the page at `file`, after the
/// keys and text before it, and then what the page logged.
fn keys(chromium: &Path, file: &Path, steps: serde_json::Value) -> Vec<serde_json::Value> {
    let out = Command::new(repo().join(".venv/bin/python"))
        .arg(repo().join("tests/browser/keys.py"))
        .arg(chromium)
        .arg(format!("file://{}", file.display()))
        .arg(steps.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Everything works from the keyboard: Tab reaches the filters, Enter and Space press
/// them, `/` focuses the search and Escape clears it, Tab goes on to the cases, whose
/// summaries Enter opens and closes. The page logs nothing meanwhile (a console line
/// would follow the values).
#[test]
fn the_report_works_from_the_keyboard() {
    let Some(chromium) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_, html) = examples_report(dir.path());
    let focused =
        "(e => e.tagName + ' ' + e.textContent.trim().slice(0, 20))(document.activeElement)";
    let shown = "document.getElementById('shown').textContent";
    let pressed =
        "[...document.querySelectorAll('[aria-pressed=true]')].map(b => b.textContent).join()";
    let open = "document.activeElement.parentElement.open";
    let step = |k: &str, a: &str| serde_json::json!([k, a]);
    let steps = serde_json::Value::Array(vec![
        step("key", "Tab"),
        step("eval", focused),
        step("key", "Tab"),
        step("eval", focused),
        step("key", "Enter"),
        step("eval", shown),
        step("eval", pressed),
        step("key", "Tab"),
        step("key", "Space"),
        step("eval", pressed),
        step("eval", shown),
        step("key", "/"),
        step("eval", "document.activeElement.id"),
        step("type", "two cities"),
        step("eval", shown),
        step("eval", "location.hash"),
        step("key", "Escape"),
        step("eval", shown),
        step("eval", "document.getElementById('search').value"),
        step("key", "Tab"),
        step("eval", focused),
        step("eval", open),
        step("key", "Enter"),
        step("eval", open),
        step("key", "Enter"),
        step("eval", open),
        step("key", "Shift+Tab"),
        step("eval", "document.activeElement.id"),
    ]);
    let got = keys(&chromium, &html, steps);
    let expected = serde_json::json!([
        "BUTTON All (7)",
        "BUTTON Failed (1)",
        "1 of 7 shown",
        "Failed (1)",
        "Passed (6)",
        "6 of 7 shown",
        "search",
        "1 of 7 shown",
        "#status=passed&q=two+cities",
        "6 of 7 shown",
        "",
        "SUMMARY PASSED paris weather",
        false,
        true,
        false,
        "search",
    ]);
    assert_eq!(serde_json::Value::Array(got), expected);
}
