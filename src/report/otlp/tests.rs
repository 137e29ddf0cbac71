use std::time::Duration;

use super::*;

fn cassette(name: &str) -> Cassette {
    let path = format!("{}/cassettes/examples/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn spans(doc: &Value) -> &Vec<Value> {
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap()
}

fn attribute<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

/// The weather example: an agent span, two chat spans, the tool's span between them with
/// its arguments and result; times laid end to end; ids the same on every export.
#[test]
fn a_tool_calling_run_is_an_agent_two_chats_and_a_tool() {
    let c = cassette("weather-agent.json");
    let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let t = Trace {
        name: "weather",
        cassette: &c,
        start,
        case: None,
    };
    let doc = export(&[t], true);
    let s = spans(&doc);
    let names: Vec<&str> = s.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "invoke_agent weather",
            "chat gpt-4o-mini",
            "execute_tool get_weather",
            "chat gpt-4o-mini"
        ]
    );
    let root = s[0]["spanId"].as_str().unwrap();
    assert_eq!(root.len(), 16);
    assert_eq!(s[0]["traceId"].as_str().unwrap().len(), 32);
    for child in &s[1..] {
        assert_eq!(child["parentSpanId"], root);
        assert_eq!(child["traceId"], s[0]["traceId"]);
    }
    assert_eq!(
        attribute(&s[1], "gen_ai.operation.name").unwrap()["stringValue"],
        "chat"
    );
    assert_eq!(
        attribute(&s[1], "gen_ai.provider.name").unwrap()["stringValue"],
        "openai"
    );
    assert!(attribute(&s[1], "gen_ai.usage.input_tokens").unwrap()["intValue"].is_string());
    let tool = &s[2];
    assert_eq!(
        attribute(tool, "gen_ai.tool.name").unwrap()["stringValue"],
        "get_weather"
    );
    let result = attribute(tool, "gen_ai.tool.call.result").unwrap()["stringValue"]
        .as_str()
        .unwrap();
    assert!(result.contains("18"), "{result}");
    // The tool ran after the first answer and before the second request.
    let t = |span: &Value, k: &str| span[k].as_str().unwrap().parse::<u64>().unwrap();
    assert_eq!(t(tool, "startTimeUnixNano"), t(&s[1], "endTimeUnixNano"));
    assert_eq!(t(tool, "endTimeUnixNano"), t(&s[3], "startTimeUnixNano"));
    assert_eq!(t(&s[0], "endTimeUnixNano"), t(&s[3], "endTimeUnixNano"));
    assert_eq!(
        doc,
        export(
            &[Trace {
                name: "weather",
                cassette: &c,
                start,
                case: None
            }],
            true
        )
    );

    // --no-content: no message, argument or result leaves the machine.
    let bare = export(
        &[Trace {
            name: "weather",
            cassette: &c,
            start,
            case: None,
        }],
        false,
    )
    .to_string();
    for key in [
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "Paris",
    ] {
        assert!(!bare.contains(key), "{key}");
    }
}

/// MCP requests are spans of their own, named by method and tool.
#[test]
fn mcp_requests_are_spans_with_their_method() {
    let c = cassette("mcp-agent/mails-the-weather.json");
    let doc = export(
        &[Trace {
            name: "mail",
            cassette: &c,
            start: UNIX_EPOCH,
            case: None,
        }],
        true,
    );
    let calls: Vec<&Value> = spans(&doc)
        .iter()
        .filter(|s| attribute(s, "mcp.method.name").is_some())
        .collect();
    assert!(
        calls.iter().any(|s| s["name"] == "tools/call get_weather"),
        "{calls:#?}"
    );
    let call = calls
        .iter()
        .find(|s| s["name"] == "tools/call get_weather")
        .unwrap();
    assert_eq!(
        attribute(call, "agentproxy.mcp.server").unwrap()["stringValue"],
        "mail"
    );
}

/// A delegation to a remote agent is an `invoke_agent` span named after the agent; its
/// card fetch a span of its own.
#[test]
fn a2a_delegations_are_invoke_agent_spans() {
    let c = cassette("a2a-agent/paris-weather-asked-of-the-weather-agent.json");
    let trace = Trace {
        name: "paris",
        cassette: &c,
        start: UNIX_EPOCH,
        case: None,
    };
    let doc = export(&[trace], true);
    let names: Vec<&str> = (spans(&doc).iter())
        .filter(|s| {
            attribute(s, "gen_ai.agent.name").is_some_and(|a| a["stringValue"] == "weather")
        })
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["agent-card weather", "invoke_agent weather"]);
    let span = (spans(&doc).iter())
        .find(|s| s["name"] == "invoke_agent weather")
        .unwrap();
    assert_eq!(
        attribute(span, "gen_ai.operation.name").unwrap()["stringValue"],
        "invoke_agent"
    );
    let asked = attribute(span, "gen_ai.input.messages").unwrap()["stringValue"]
        .as_str()
        .unwrap();
    assert_eq!(asked, "weather in Paris, celsius");
}
