//! Snapshots of the text and Markdown renderings of the trajectory diff, one per kind of
//! change, and the properties behind them.

use serde_json::{json, Value};

use super::{case, tool, weather_tools, Rec, TRAVEL_SYSTEM};
use crate::cassette::format::Hole;
use crate::cassette::{Body, Cassette, Interaction};
use crate::spec::asserted;
use crate::trajectory::{
    diff_cassettes, render_json, render_markdown, render_text, Asserted, Verdict,
};

const BOOKING_INPUT: &str = "Book me a flight to Zürich tomorrow for Zoë Martin (French passport)";

/// The booking spec: search, then book; nothing else (`strict`).
const BOOKING_SPEC: &str = r#"
  - name: book flight
    input: Book me a flight to Zürich tomorrow for Zoë Martin (French passport)
    expect:
      calls:
        - search_flights: {to: ZRH}
        - create_booking: {passengers.0.name: Zoë Martin, passengers.0.passport.country: FR}
      strict: true
      reply: BK-7Q2
"#;

struct Booking {
    system: &'static str,
    visa: bool,
    passport: Value,
}

impl Default for Booking {
    fn default() -> Booking {
        Booking {
            system: TRAVEL_SYSTEM,
            visa: false,
            passport: json!({"country": "FR", "number": "19AB12345", "expires": "2031-04-30"}),
        }
    }
}

fn booking(salt: u64, b: Booking) -> Cassette {
    let mut r = Rec::travel(salt);
    r.system = b.system.into();
    r.turn(0, BOOKING_INPUT).calls(&[(
        "search_flights",
        json!({"to": "ZRH", "date": "2026-12-01"}),
        json!([{"flight": "LX345", "departs": "07:10", "price_eur": 214}, {"flight": "AF1114", "departs": "09:35", "price_eur": 189}]),
    )]);
    if b.visa {
        r.calls(&[(
            "check_visa",
            json!({"country": "CH", "nationality": "FR"}),
            json!({"visa_required": false}),
        )]);
    }
    r.calls(&[(
        "create_booking",
        json!({"flight": "LX345", "passengers": [{"name": "Zoë Martin", "passport": b.passport, "seat": "window"}]}),
        json!({"booking": "BK-7Q2", "status": "confirmed"}),
    )])
    .reply("Booked! Zoë Martin flies LX345 to Zürich tomorrow at 07:10. Your booking reference is BK-7Q2.");
    r.cassette()
}

fn weather(salt: u64, time_first: bool, tools: Vec<Value>) -> Cassette {
    let mut r = Rec::weather(salt);
    r.tools = tools;
    r.turn(0, "What's the weather in Paris and the time in Tokyo?");
    let weather = (
        "get_weather",
        json!({"city": "Paris"}),
        json!({"temp_c": 18, "sky": "sunny"}),
    );
    let time = ("get_time", json!({"city": "Tokyo"}), json!("09:00"));
    if time_first {
        r.calls(std::slice::from_ref(&time))
            .calls(std::slice::from_ref(&weather));
    } else {
        r.calls(std::slice::from_ref(&weather))
            .calls(std::slice::from_ref(&time));
    }
    r.reply("It's 18°C and sunny in Paris; in Tokyo it is 09:00.");
    r.cassette()
}

const WEATHER_SPEC: &str = r#"
  - name: weather and time
    input: What's the weather in Paris and the time in Tokyo?
    expect:
      calls:
        - get_weather: {city: Paris}
        - get_time
"#;

fn snapshots(name: &str, old: &Cassette, new: &Cassette, a: &Asserted) -> Verdict {
    let mut d = diff_cassettes(old, new, a);
    // As in `git show HEAD:cassettes/x.json > old.json; agentproxy diff old.json cassettes/x.json`.
    d.old_name = Some(format!("HEAD:cassettes/{name}.json"));
    d.new_name = Some(format!("cassettes/{name}.json"));
    insta::assert_snapshot!(format!("{name}_text"), render_text(&d));
    insta::assert_snapshot!(format!("{name}_markdown"), render_markdown(&d));
    d.verdict
}

#[test]
fn tool_added_in_the_middle() {
    let old = booking(1, Booking::default());
    let new = booking(
        2,
        Booking {
            visa: true,
            ..Booking::default()
        },
    );
    let v = snapshots("tool_added", &old, &new, &asserted(&case(BOOKING_SPEC)));
    assert_eq!(v, Verdict::Regression, "strict: a new call is asserted");
    // Without `strict`, nothing asserts check_visa: the same change is benign.
    let lenient = case(&BOOKING_SPEC.replace("      strict: true\n", ""));
    assert_eq!(
        diff_cassettes(&old, &new, &asserted(&lenient)).verdict,
        Verdict::Benign
    );
}

#[test]
fn tool_added_without_a_spec() {
    let old = booking(1, Booking::default());
    let new = booking(
        2,
        Booking {
            visa: true,
            ..Booking::default()
        },
    );
    let d = diff_cassettes(&old, &new, &Asserted::everything());
    assert_eq!(d.verdict, Verdict::Regression);
    insta::assert_snapshot!(render_text(&d));
}

#[test]
fn argument_changed_deep_in_a_nested_object() {
    let old = booking(1, Booking::default());
    let new = booking(
        2,
        Booking {
            passport: json!({"country": "DE", "number": "19AB12345", "expires": "2031-04-30", "issued": {"by": "Berlin", "on": "2021-05-01"}}),
            ..Booking::default()
        },
    );
    let a = asserted(&case(BOOKING_SPEC));
    let v = snapshots("argument_deep", &old, &new, &a);
    assert_eq!(
        v,
        Verdict::Regression,
        "passengers.0.passport.country is asserted"
    );
    insta::assert_snapshot!(
        "argument_deep_json",
        render_json(&diff_cassettes(&old, &new, &a))
    );
}

#[test]
fn tool_removed() {
    let old = booking(
        1,
        Booking {
            visa: true,
            ..Booking::default()
        },
    );
    let new = booking(2, Booking::default());
    let spec = BOOKING_SPEC.replace(
        "        - create_booking",
        "        - check_visa\n        - create_booking",
    );
    let v = snapshots("tool_removed", &old, &new, &asserted(&case(&spec)));
    assert_eq!(v, Verdict::Regression);
}

#[test]
fn calls_reordered() {
    let v = snapshots(
        "reorder",
        &weather(1, false, weather_tools()),
        &weather(2, true, weather_tools()),
        &asserted(&case(WEATHER_SPEC)),
    );
    assert_eq!(
        v,
        Verdict::Regression,
        "calls in subsequence order: their order is asserted"
    );
    let unordered = case(&format!("{WEATHER_SPEC}      order: unordered\n"));
    let d = diff_cassettes(
        &weather(1, false, weather_tools()),
        &weather(2, true, weather_tools()),
        &asserted(&unordered),
    );
    assert_eq!(d.verdict, Verdict::Benign);
}

#[test]
fn system_prompt_edited() {
    let old = booking(1, Booking::default());
    let new = booking(
        2,
        Booking {
            system: "You are a travel agent for Acme Travel.\nBook flights only after the traveller confirms.\nCheck the visa rules before any international booking.\nAnswer in the traveller's language, briefly.",
            ..Booking::default()
        },
    );
    let v = snapshots("system_prompt", &old, &new, &asserted(&case(BOOKING_SPEC)));
    assert_eq!(
        v,
        Verdict::Benign,
        "what the agent was told is never asserted by calls"
    );
}

#[test]
fn tool_schema_changed() {
    let mut tools = weather_tools();
    tools[0] = tool(
        "get_weather",
        "Current weather for a city, in the unit asked for.",
        json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]
        }),
    );
    tools.push(tool("get_forecast", "Forecast for the next days.", json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}})));
    let v = snapshots(
        "tool_schema",
        &weather(1, false, weather_tools()),
        &weather(2, false, tools),
        &asserted(&case(WEATHER_SPEC)),
    );
    assert_eq!(v, Verdict::Benign);
}

fn paris_then_lyon(salt: u64, fahrenheit: bool) -> Cassette {
    let mut r = Rec::weather(salt);
    r.turn(0, "What's the weather in Paris?")
        .calls(&[(
            "get_weather",
            json!({"city": "Paris"}),
            json!({"temp_c": 18, "sky": "sunny"}),
        )])
        .reply("It's 18°C and sunny in Paris.");
    r.turn(1, "And in Lyon?");
    if fahrenheit {
        r.calls(&[(
            "get_weather",
            json!({"city": "Lyon", "unit": "fahrenheit"}),
            json!({"temp_f": 70, "sky": "cloudy"}),
        )])
        .reply(
            "It's 70°F and cloudy in Lyon this afternoon, with a light breeze from the north-west.",
        );
    } else {
        r.calls(&[(
            "get_weather",
            json!({"city": "Lyon", "unit": "celsius"}),
            json!({"temp_c": 21, "sky": "cloudy"}),
        )])
        .reply(
            "It's 21°C and cloudy in Lyon this afternoon, with a light breeze from the north-west.",
        );
    }
    r.turn(2, "Thanks!")
        .reply("You're welcome! Enjoy your trip.");
    r.cassette()
}

const PARIS_LYON_SPEC: &str = r#"
  - name: paris then lyon
    turns:
      - input: What's the weather in Paris?
        expect: {calls: [get_weather: {city: Paris}], reply: "18"}
      - input: And in Lyon?
        expect: {calls: [get_weather: {city: Lyon}]}
      - input: Thanks!
        expect: {calls: []}
"#;

#[test]
fn multi_turn_with_one_turn_changed() {
    let a = asserted(&case(PARIS_LYON_SPEC));
    let v = snapshots(
        "multi_turn",
        &paris_then_lyon(1, false),
        &paris_then_lyon(2, true),
        &a,
    );
    assert_eq!(v, Verdict::Benign);
    let d = diff_cassettes(&paris_then_lyon(1, false), &paris_then_lyon(2, true), &a);
    assert_eq!(d.turns.len(), 1, "turns 1 and 3 did the same");
    assert_eq!(d.turns[0].turn, 1);
}

#[test]
fn identical_rerecord_with_only_volatile_values_changed() {
    let (old, new) = (
        booking(1, Booking::default()),
        booking(2, Booking::default()),
    );
    // The two files differ in every id, timestamp, fingerprint, usage figure, latency and key.
    assert_ne!(
        serde_json::to_string(&old).unwrap(),
        serde_json::to_string(&new).unwrap()
    );
    let v = snapshots("identical", &old, &new, &asserted(&case(BOOKING_SPEC)));
    assert_eq!(v, Verdict::Identical);
    let d = diff_cassettes(&old, &new, &Asserted::everything());
    assert_eq!(
        (d.verdict, d.asserted, d.incidental),
        (Verdict::Identical, 0, 0)
    );
    assert!(render_text(&d).ends_with("verdict: identical\n"));
}

#[test]
fn retries_and_plain_http_are_not_trajectory() {
    let mut r = Rec::weather(3);
    r.turn(0, "What's the weather in Paris?")
        .list_models()
        .rate_limited();
    r.calls(&[(
        "get_weather",
        json!({"city": "Paris"}),
        json!({"temp_c": 18, "sky": "sunny"}),
    )])
    .reply("It's 18°C and sunny in Paris.");
    let mut s = Rec::weather(4);
    s.turn(0, "What's the weather in Paris?")
        .calls(&[(
            "get_weather",
            json!({"city": "Paris"}),
            json!({"temp_c": 18, "sky": "sunny"}),
        )])
        .reply("It's 18°C and sunny in Paris.");
    assert_eq!(
        diff_cassettes(&r.cassette(), &s.cassette(), &Asserted::everything()).verdict,
        Verdict::Identical
    );
}

#[test]
fn match_rules_keep_declared_volatile_values_out() {
    let mut old = booking(1, Booking::default());
    let mut new = booking(2, Booking::default());
    let stamp = |c: &mut Cassette, date: &str, user: &str| {
        for it in &mut c.interactions {
            if let Some(Body::Json(b)) = &mut it.request.body {
                b["user"] = json!(user);
                let sys = format!("Today is {date}.\n{TRAVEL_SYSTEM}");
                b["messages"][0]["content"] = json!(sys);
            }
        }
    };
    stamp(&mut old, "2026-11-30", "session-81");
    stamp(&mut new, "2026-12-01", "session-93");
    let none = Asserted::none();
    let d = diff_cassettes(&old, &new, &none);
    assert_eq!(d.told.len(), 2, "{}", render_text(&d));
    new.match_rules.ignore.push("/user".into());
    new.match_rules.holes.push(Hole {
        name: "today".into(),
        regex: r"\d{4}-\d{2}-\d{2}".into(),
        within: None,
    });
    let d = diff_cassettes(&old, &new, &none);
    assert_eq!(d.verdict, Verdict::Identical, "{}", render_text(&d));
}

#[test]
fn arrays_align_so_an_insertion_is_one_change() {
    let calls = |ids: Value| {
        let mut r = Rec::weather(1);
        r.turn(0, "Compare these cities")
            .calls(&[(
                "get_weather",
                json!({"city": "Paris", "compare": ids}),
                json!("ok"),
            )])
            .reply("Done.");
        r.cassette()
    };
    let d = diff_cassettes(
        &calls(json!(["Lyon", "Nice", "Lille"])),
        &calls(json!(["Lyon", "Marseille", "Nice", "Lille"])),
        &Asserted::everything(),
    );
    let text = render_text(&d);
    assert!(
        text.contains("compare.1: <absent> → \"Marseille\""),
        "{text}"
    );
    assert_eq!(d.asserted, 1, "{text}");
}

/// One answered model request of `route` at `path`, its volatile values from `salt`.
fn exchange(route: &str, path: &str, request: Value, response: Value, salt: u64) -> Interaction {
    use crate::cassette::{RecordedRequest, RecordedResponse};
    Interaction {
        route: route.into(),
        key: format!("{salt}"),
        turn: None,
        request: RecordedRequest {
            method: "POST".into(),
            path: path.into(),
            body: Some(Body::Json(request.into())),
            body_xxh3: None,
        },
        response: RecordedResponse {
            status: 200,
            headers: Default::default(),
            body: Some(Body::Json(response.into())),
            events: None,
            aborted: None,
            encoded: Default::default(),
            encoded_events: Default::default(),
            event_ms: Vec::new(),
        },
        latency_ms: 100 * salt,
        mocked: Vec::new(),
        spoiled: None,
    }
}

#[test]
fn other_dialects_diff_the_same_way() {
    let anthropic = |city: &str, salt: u64| {
        let mut c = booking(salt, Booking::default());
        let request = json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "You are a weather assistant.",
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": "Weather in Paris?"}]});
        let response = json!({"id": format!("msg_{salt}"), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": format!("toolu_{salt}"), "name": "get_weather", "input": {"city": city}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 100 + salt, "output_tokens": 20}});
        c.interactions = vec![exchange(
            "anthropic.messages",
            "/v1/messages",
            request,
            response,
            salt,
        )];
        c
    };
    let all = Asserted::everything();
    assert_eq!(
        diff_cassettes(&anthropic("Paris", 1), &anthropic("Paris", 2), &all).verdict,
        Verdict::Identical
    );
    let d = diff_cassettes(&anthropic("Paris", 1), &anthropic("Paris, FR", 2), &all);
    assert!(
        render_text(&d).contains("city: \"Paris\" → \"Paris, FR\"  [asserted]"),
        "{}",
        render_text(&d)
    );
}

/// Gemini declares its functions inside `tools[*].functionDeclarations`: a change to the
/// second declaration is that tool's, and the first is unchanged.
#[test]
fn a_changed_gemini_function_declaration_is_its_own_tool() {
    let gemini = |salt: u64, forecast: &str| {
        let mut c = booking(salt, Booking::default());
        let request = json!({
            "systemInstruction": {"parts": [{"text": "You are a weather assistant."}]},
            "tools": [{"functionDeclarations": [
                {"name": "get_weather", "description": "Current weather for a city.",
                 "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}, "required": ["city"]}},
                {"name": "get_forecast", "description": forecast,
                 "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}, "days": {"type": "INTEGER"}}}}
            ]}],
            "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}]
        });
        let response = json!({"candidates": [{"content": {"role": "model",
                "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 100 + salt, "candidatesTokenCount": 20},
            "modelVersion": "gemini-2.5-flash", "responseId": format!("resp-{salt}")});
        let path = "/v1beta/models/gemini-2.5-flash:generateContent";
        c.interactions = vec![exchange("gemini.generate", path, request, response, salt)];
        c
    };
    let all = Asserted::everything();
    let same = diff_cassettes(&gemini(1, "Forecast."), &gemini(2, "Forecast."), &all);
    assert_eq!(same.verdict, Verdict::Identical);
    let d = diff_cassettes(
        &gemini(1, "Forecast."),
        &gemini(2, "Forecast for the next days."),
        &all,
    );
    let text = render_text(&d);
    assert!(
        text.contains("tool get_forecast definition changed"),
        "{text}"
    );
    assert!(text.contains("Forecast for the next days."), "{text}");
    assert!(!text.contains("get_weather definition"), "{text}");
}

#[test]
fn markdown_cannot_be_broken_by_recorded_text() {
    let mut r = Rec::weather(1);
    r.turn(0, "hi").reply("plain");
    let mut s = Rec::weather(2);
    s.turn(0, "hi")
        .reply("``` </details> <script>x</script> `code`");
    let md = render_markdown(&diff_cassettes(
        &r.cassette(),
        &s.cassette(),
        &Asserted::none(),
    ));
    assert!(
        md.contains("```` ``` </details> <script>x</script> `code` ````") || md.contains("````"),
        "{md}"
    );
    assert!(!md.contains("\n```\n</details>"), "{md}");
}

/// A mail agent whose MCP server executes `send_email`, or does not (a mock answered it),
/// or executes it with other arguments than the model gave.
fn mailer(salt: u64, execution: Option<Value>) -> Cassette {
    let mut r = super::Rec::weather(salt);
    r.turn(0, "Mail the weather to ops@example.com").mcp(
        "mail",
        "tools/list",
        json!(null),
        json!({"tools": [{"name": "send_email"}]}),
    );
    r.calls(&[(
        "send_email",
        json!({"to": "ops@example.com"}),
        json!("sent"),
    )]);
    if let Some(arguments) = execution {
        r.mcp(
            "mail",
            "tools/call",
            json!({"name": "send_email", "arguments": arguments}),
            json!({"content": []}),
        );
    }
    r.reply("Mailed.");
    r.cassette()
}

#[test]
fn execution_changes_at_the_mcp_boundary() {
    let sent = mailer(1, Some(json!({"to": "ops@example.com"})));
    let mocked = mailer(2, None);
    let redirected = mailer(3, Some(json!({"to": "all@example.com"})));
    let spec = "  - name: mail\n    input: go\n    expect:\n      executed: [send_email]\n";
    let v = snapshots("no_longer_executed", &sent, &mocked, &asserted(&case(spec)));
    assert_eq!(v, Verdict::Regression, "executed: names send_email");
    let d = diff_cassettes(&sent, &redirected, &Asserted::none());
    assert_eq!(d.verdict, Verdict::Benign, "nothing asserts it");
    insta::assert_snapshot!("executed_with_other_arguments", render_text(&d));
}

#[test]
fn a_function_tool_that_moved_to_an_mcp_server_is_a_change() {
    let mut r = super::Rec::weather(4);
    r.turn(0, "Mail the weather to ops@example.com");
    r.calls(&[(
        "send_email",
        json!({"to": "ops@example.com"}),
        json!("sent"),
    )]);
    r.reply("Mailed.");
    let function = r.cassette();
    let sent = mailer(1, Some(json!({"to": "ops@example.com"})));
    let text = render_text(&diff_cassettes(&function, &sent, &Asserted::none()));
    assert!(
        text.contains("⇢ send_email {\"to\":\"ops@example.com\"} (tool call 1): not an MCP tool → executed by mail"),
        "{text}"
    );
    let back = render_text(&diff_cassettes(&sent, &function, &Asserted::none()));
    assert!(
        back.contains("executed by mail → not an MCP tool"),
        "{back}"
    );
}

/// A weather agent that delegates to a remote agent over A2A with `message`, which answers
/// `answer`.
fn delegator(salt: u64, message: Option<&str>, answer: &str) -> Cassette {
    let mut r = super::Rec::weather(salt);
    r.turn(0, "Weather in Paris?");
    if let Some(text) = message {
        r.a2a(
            "forecaster",
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "parts": [{"text": text}]}}),
            json!({"task": {"id": "t1", "status": {"state": "TASK_STATE_COMPLETED"},
                "artifacts": [{"parts": [{"text": answer}]}]}}),
        );
    }
    r.reply("18C in Paris.");
    r.cassette()
}

#[test]
fn delegations_to_remote_agents_diff_like_tool_calls() {
    let asked = delegator(1, Some("weather in Paris"), "18C");
    let other = delegator(2, Some("weather in Lyon"), "18C");
    let none = delegator(3, None, "");
    let text = render_text(&diff_cassettes(&asked, &other, &Asserted::none()));
    assert!(text.contains("forecaster"), "{text}");
    assert!(
        text.contains("weather in Lyon"),
        "a changed message is shown: {text}"
    );
    let gone = render_text(&diff_cassettes(&asked, &none, &Asserted::none()));
    assert!(
        gone.contains("forecaster"),
        "a removed delegation is reported: {gone}"
    );
    let same = diff_cassettes(
        &asked,
        &delegator(4, Some("weather in Paris"), "18C"),
        &Asserted::none(),
    );
    assert!(
        render_text(&same).contains("no change"),
        "{}",
        render_text(&same)
    );
}
