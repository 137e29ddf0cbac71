use serde_json::json;

use super::*;
use crate::matching::nearmiss::NearMiss;
use crate::report::sample;

/// Every element the page has, by its opening tag name.
fn tags(html: &str) -> Vec<String> {
    let re = regex::Regex::new(r"<([a-zA-Z][a-zA-Z0-9]*)").unwrap();
    re.captures_iter(html)
        .map(|c| c[1].to_ascii_lowercase())
        .collect()
}

#[test]
fn failures_come_first_with_their_first_cause_and_the_summary_counts() {
    let html = render(&sample::run());
    let failed = html.find("class=\"case failed\"").unwrap();
    let passed = html.find("class=\"case passed\"").unwrap();
    let skipped = html.find("class=\"case skipped\"").unwrap();
    assert!(failed < passed && passed < skipped);
    // The first cause in the summary line of the case: the miss before its assertions.
    let causes: Vec<&str> = html
        .match_indices("<div class=\"cause\">")
        .map(|(i, _)| &html[i..i + 120])
        .collect();
    assert!(
        causes.iter().any(|c| c
            .contains(">cassette miss: POST /v1/chat/completions (openai.chat) has no recording<")),
        "{causes:#?}"
    );
    assert!(html.contains("<title>agentproxy test: "));
    assert!(html.contains("data-filter=\"failed\""));
    // A failing or erroring case is open, the others collapsed.
    assert_eq!(html.matches("<details open>").count(), 3);
}

/// A case whose values are hostile: markup, a closing script tag, a `javascript:` link,
/// an attribute breakout and a 10 MB tool result. All of it is text in the page: no element
/// but the page's own, one script (the page's), no link, no image, and a page of a
/// reasonable size.
#[test]
fn untrusted_values_stay_text() {
    let hostile = [
        "<script>document.title='pwned'</script>",
        "</script><script>alert(1)</script>",
        "<a href=\"javascript:alert(1)\">click</a>",
        "\"><img src=x onerror=alert(1)>",
        "'><svg onload=alert(1)>",
    ]
    .join(" ");
    let mut run = sample::run();
    let case = &mut run.cases[0];
    case.name = hostile.clone();
    case.misses.push(hostile.clone());
    let big = "x".repeat(10 << 20);
    let near = NearMiss::of(
        case.misses.len() - 1,
        (0, json!({ "messages": [hostile, big] })),
        &json!({ "messages": [format!("{hostile}!"), format!("{big}!")] }),
    );
    case.near_misses.extend(near);
    case.warnings.push(hostile.clone());
    let turn = &mut case.turns[0];
    turn.reply = Some(hostile.clone());
    turn.output = hostile.clone();
    turn.input = Some(hostile.clone());
    turn.tool_calls[0].arguments = json!({ "q": hostile });
    turn.tool_calls[0].result = Some(json!("x".repeat(10 << 20)));
    case.diff = Some(hostile.clone());
    let html = render(&run);

    let own = tags(&render(&sample::run()));
    for tag in tags(&html) {
        assert!(own.contains(&tag), "an element <{tag}> came from a value");
    }
    assert_eq!(html.matches("<script").count(), 1);
    // `onerror=` and the like remain, as text: with `<` and `"` escaped they start nothing.
    for never in ["<img", "<svg", "<a ", "\"javascript:"] {
        assert!(!html.contains(never), "{never}");
    }
    assert!(html.contains("&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
    assert!(html.len() < 1 << 20, "{} bytes", html.len());
    assert!(html.contains("more characters</span>"));
}

/// A miss with a nearest recording shows the two bodies side by side under the first
/// differing path, the changed lines marked, the unchanged ones around them kept short.
#[test]
fn a_near_miss_is_shown_beside_its_nearest_recording() {
    let html = render(&sample::run());
    let at = html.find("<details class=\"near\" open><summary>Beside the nearest recording: first difference at <code>/messages/3/content</code></summary>").expect("the near miss");
    let table = &html[at..at + html[at..].find("</table>").unwrap()];
    assert!(table.contains("<th>recorded (interaction #3)</th><th>now (missed)</th>"));
    assert!(table.contains("<td class=\"del\"><pre>      &quot;content&quot;: &quot;And in Fahrenheit?&quot;,</pre></td><td class=\"ins\"><pre>      &quot;content&quot;: &quot;And in Fahrenheit, please?&quot;,</pre></td>"), "{table}");
    assert!(table.contains("get_time"));
    // The miss's text report comes first, the side by side under it.
    assert!(
        html.find("nearest recorded request: interaction #3")
            .unwrap()
            < at
    );
}

/// `show --format html` lists a delegation to a remote agent with its message and answer,
/// every recorded value escaped.
#[test]
fn the_show_page_lists_delegations() {
    let path = format!(
        "{}/cassettes/examples/a2a-agent/paris-weather-asked-of-the-weather-agent.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let cassette: crate::cassette::Cassette =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let page = show::render("paris", &crate::trajectory::show::read(&cassette));
    assert!(
        page.contains("weather <code>SendStreamingMessage</code>: weather in Paris, celsius → <code>TASK_STATE_COMPLETED</code> {&quot;city&quot;: &quot;Paris&quot;"),
        "{page}"
    );
    assert!(page.contains("weather <code>agent-card</code>"), "{page}");
}
