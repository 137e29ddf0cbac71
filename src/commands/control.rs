//! The control protocol of `agentproxy serve`, typed: the line it prints when it listens,
//! the request that starts a test, and the answers. docs/pytest.md documents it field by
//! field; the pytest plugin (`python/agentproxy/pytest_plugin.py`) speaks it.
//!
//! [`PROTOCOL`] is its version. The listening line carries it, a client names the version
//! it speaks when it starts a test, and either side refuses the other's with a message
//! that says what to install: a plugin from another release than the binary fails at its
//! first test, not somewhere in a key it does not know.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::cassette::Interaction;
use crate::report::Status;

/// The version of the control protocol. It grows when a request or an answer changes.
pub const PROTOCOL: u64 = 4;

/// The line `serve` prints on stdout once it listens.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Listening {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The variables a program needs to reach the proxy (in a session that replays, the
    /// placeholder keys and side-traffic switches too; in auto, the keys),
    /// `AGENTPROXY_SECRET` among them: every control request presents it in
    /// `x-agentproxy-secret` (protocol 2 on).
    pub env: BTreeMap<String, String>,
    pub protocol: u64,
    /// The session's mode (`replay`, `record`, `auto` or `update`): what serve was asked
    /// (`--mode`), else `replay` under CI and `auto` elsewhere. A test starts in it
    /// unless it asks for another.
    pub mode: &'static str,
}

/// `POST test`: a test starts.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Start {
    /// The version of this protocol the client speaks.
    #[schemars(with = "u64")]
    #[serde(default)]
    pub protocol: Value,
    /// The test's name, unique among the tests running at once (and the name each request
    /// gives in `x-agentproxy-test`).
    pub name: String,
    /// Its cassette's path, relative to serve's `--root` (or inside it), when the harness
    /// names the file (tests may share one on purpose).
    pub cassette: Option<String>,
    /// Else the directory of its cassette (relative to `--root`, or inside it) and the
    /// name serve makes the file's of (`runner::harness::file_stem`); no two tests of the
    /// session get one cassette this way.
    pub cassette_dir: Option<String>,
    pub cassette_name: Option<String>,
    /// `replay`, `record`, `auto` or `update`; none: the session's mode. Under CI a
    /// session in replay starts every test in replay.
    pub mode: Option<String>,
    /// Tool mocks, a spec's `tools:` block.
    pub mocks: Option<Value>,
    /// The test's tolerances, a spec's `match:` block.
    #[serde(rename = "match")]
    pub match_rules: Option<Value>,
    /// The command that records the test again, for the miss report's hint.
    pub rerecord: Option<String>,
    /// The harness (`pytest`, `vitest` or `jest`), whose words the hints speak.
    pub runner: Option<String>,
}

/// `POST cassettes`: the cassettes serve would name for tests (a harness finds the tests
/// that would share one before any runs).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Name {
    pub tests: Vec<CassetteOf>,
}

/// A test's cassette as a start request gives it by directory and name.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CassetteOf {
    pub dir: String,
    pub name: String,
}

/// The answer to `POST cassettes`: each test's cassette, in the request's order.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Named {
    pub cassettes: Vec<PathBuf>,
}

/// `PUT test/mocks`: the test's tool mocks replaced.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PutMocks {
    /// A spec's `tools:` block.
    pub mocks: Value,
}

/// `PUT test/match`: the test's tolerances replaced.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PutMatch {
    /// A spec's `match:` block.
    #[serde(rename = "match")]
    pub rules: Value,
}

/// `DELETE test`: the test ends.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct End {
    /// Why it failed in its own code, as its harness says; none when it did not.
    pub failure: Option<String>,
}

/// The answer to `POST test`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Started {
    /// `replay`, `record` or `update`: what the test does with its cassette.
    pub mode: &'static str,
    pub cassette: PathBuf,
}

/// The answer to `GET test`: what the test's model traffic says so far.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SoFar {
    /// The requests the proxy answered from the cassette or the upstream, in order (one
    /// that missed is in `misses` instead).
    pub requests: Vec<Request>,
    /// The tool calls the model asked for, in order.
    pub calls: Vec<Call>,
    /// The tool calls MCP servers executed (through `agentproxy mcp` or `--mcp`), in order.
    pub executions: Vec<Executed>,
    /// The last reply text, if the model gave one.
    pub reply: Option<String>,
}

/// One request the proxy answered, as it is stored (secrets redacted).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Dialect and endpoint (`openai.chat`, …), `mcp`, or `http`.
    pub route: String,
    /// The body: JSON as it is, anything else as text; `null` when there was none.
    pub body: Option<Value>,
}

/// One tool call an MCP server executed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Executed {
    pub server: String,
    pub tool: String,
    pub arguments: Value,
}

/// The answer to `POST test/check`: the expectations that failed, each as the runner
/// words it (what, why, expected, actual, where, nearest); none when all hold.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Checked {
    pub failures: Vec<String>,
}

/// One tool call the model asked for.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Call {
    pub name: String,
    /// Parsed arguments.
    pub arguments: Value,
}

/// The answer to `DELETE test`: what the test did, once its proxy has drained.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Ended {
    #[serde(flatten)]
    pub so_far: SoFar,
    pub mode: &'static str,
    pub cassette: PathBuf,
    /// A cassette was written.
    pub written: bool,
    /// How the trajectory changed against the cassette the test's recording replaced.
    pub trajectory: Option<Drift>,
    /// Near-miss reports, one per request that missed.
    pub misses: Vec<String>,
    /// Recordings the test did not use.
    pub unused: Vec<String>,
    pub upstream_errors: Vec<String>,
    /// Requests the proxy refused (not an API path, too large, not JSON).
    pub rejected: Vec<String>,
    /// Mocks that could not answer (results used up, a result the tool's
    /// `outputSchema` rejects): each fails the test.
    pub mock_problems: Vec<String>,
    /// The test's verdict (`passed` or `failed`), by the runner's rule, its own failure
    /// included: a harness only renders it.
    pub status: Status,
    /// What fails the test besides its own code, to show: each miss's near-miss report,
    /// each failed upstream request, each mock that could not answer.
    pub failures: Vec<String>,
}

/// A re-recorded test's trajectory against the recording it replaced: the verdict, and
/// the diff as `agentproxy diff` prints it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Drift {
    pub verdict: &'static str,
    pub diff: String,
}

/// An error answer: `{"error": "…"}` with a 4xx or 5xx status.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Refused {
    pub error: String,
}

impl SoFar {
    /// What `exchanges` (a test's, in arrival order) say, `requests` having reached the
    /// proxy.
    pub fn of(exchanges: &[Interaction]) -> SoFar {
        let calls: Vec<_> = (exchanges.iter())
            .filter_map(Interaction::model_call)
            .collect();
        let reply = (calls.iter().rev()).find_map(|c| c.reply.clone().filter(|r| !r.is_empty()));
        SoFar {
            requests: (exchanges.iter()).map(Request::of).collect(),
            executions: (exchanges.iter())
                .filter_map(Interaction::execution)
                .map(|x| Executed {
                    server: x.server,
                    tool: x.tool,
                    arguments: x.arguments,
                })
                .collect(),
            calls: (calls.into_iter())
                .flat_map(|c| c.tool_calls)
                .map(|t| Call {
                    name: t.name,
                    arguments: t.arguments,
                })
                .collect(),
            reply,
        }
    }
}

impl Request {
    fn of(it: &Interaction) -> Request {
        let body = it.request.body.as_ref().map(|b| match b {
            crate::cassette::Body::Json(_) => b.as_json().cloned().unwrap_or_default(),
            crate::cassette::Body::Text(t) | crate::cassette::Body::Base64(t) => {
                Value::String(t.clone())
            }
        });
        Request {
            method: it.request.method.clone(),
            path: it.request.path.clone(),
            route: it.route.clone(),
            body,
        }
    }
}

/// A control request's body as `T`, or why it is not one (`what` names the request).
pub fn read<T: serde::de::DeserializeOwned>(what: &str, body: &Value) -> Result<T, String> {
    T::deserialize(body).map_err(|e| format!("the {what} request: {e}"))
}

/// The protocol described once: a JSON Schema of every message, generated from these
/// types (docs/serve-protocol.schema.json is this, kept true by a test).
pub fn schema() -> Value {
    let mut g = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let object = |description: &str| json!({"type": "object", "description": description});
    let messages = json!({
        "listening": g.subschema_for::<Listening>(),
        "POST test": {"request": g.subschema_for::<Start>(), "answer": g.subschema_for::<Started>()},
        "POST cassettes": {"request": g.subschema_for::<Name>(), "answer": g.subschema_for::<Named>()},
        "PUT test/mocks": {"request": g.subschema_for::<PutMocks>(), "answer": object("empty")},
        "PUT test/match": {"request": g.subschema_for::<PutMatch>(), "answer": object("empty")},
        "GET test": {"answer": g.subschema_for::<SoFar>()},
        "POST test/check": {"request": object("a spec's `expect:` block"), "answer": g.subschema_for::<Checked>()},
        "DELETE test": {"request": g.subschema_for::<End>(), "answer": g.subschema_for::<Ended>()},
        "error": g.subschema_for::<Refused>(),
    });
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "agentproxy serve: the control protocol",
        "description": "The line serve prints when it listens, and each control request (under /_agentproxy/) with its answer; docs/pytest.md tells them field by field.",
        "protocol": PROTOCOL,
        "messages": messages,
        "$defs": g.take_definitions(true),
    })
}

/// The cassette of a test named by directory and name: `DIR/STEM.json`.
pub fn cassette_of(dir: &str, name: &str) -> PathBuf {
    Path::new(dir).join(format!("{}.json", crate::runner::harness::file_stem(name)))
}

/// Why a start request's `protocol` is refused, if it is: absent (a client older than
/// the protocol's version) or another version.
pub fn refuse_version(asked: &Value) -> Option<String> {
    let spoken = match asked {
        Value::Null => "no version (a plugin older than this binary)".to_owned(),
        v if v.as_u64() == Some(PROTOCOL) => return None,
        v => format!("version {v}"),
    };
    Some(format!(
        "the client speaks control protocol {spoken}; agentproxy {} speaks version {PROTOCOL}: install the agentproxy wheel of the same release as the binary, or point AGENTPROXY_BIN at a matching binary",
        env!("CARGO_PKG_VERSION")
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The harnesses speak the protocol of this binary: each writes its version once,
    /// as this file does, and never as a bare number elsewhere.
    /// The schema in docs/ is the one this binary generates.
    #[test]
    fn the_documented_schema_is_the_generated_one() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let path = root.join("docs/serve-protocol.schema.json");
        let documented: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(
            documented == schema(),
            "{} is stale: regenerate it with `agentproxy serve --schema > docs/serve-protocol.schema.json`",
            path.display()
        );
    }

    /// The properties of `def` in the schema.
    fn properties(def: &str) -> BTreeSet<String> {
        let schema = schema();
        let props = schema["$defs"][def]["properties"].as_object();
        props
            .unwrap_or_else(|| panic!("no {def}"))
            .keys()
            .cloned()
            .collect()
    }

    /// Every name of `text` the regular expression's first group catches.
    fn caught(text: &str, re: &str) -> BTreeSet<String> {
        let re = regex::Regex::new(re).unwrap();
        re.captures_iter(text).map(|c| c[1].to_owned()).collect()
    }

    /// The harnesses speak the schema: the npm package's types declare what the answers
    /// hold, and every key the plugin and the helpers send or read is one of the protocol.
    #[test]
    fn the_harnesses_speak_the_schema() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let read = |file: &str| std::fs::read_to_string(root.join(file)).unwrap();
        let dts = read("npm/agentproxy/lib/index.d.ts");
        for (interface, def) in [
            ("Trajectory", "SoFar"),
            ("ToolCall", "Call"),
            ("AnsweredRequest", "Request"),
            ("Execution", "Executed"),
        ] {
            let body = dts
                .split(&format!("export interface {interface} {{"))
                .nth(1)
                .and_then(|rest| rest.split("\n}").next())
                .unwrap_or_else(|| panic!("index.d.ts declares no {interface}"));
            let declared = caught(body, r"(?m)^  (\w+)\??:");
            assert_eq!(
                declared,
                properties(def),
                "index.d.ts {interface} against {def}"
            );
        }
        let serve = dts.split("export declare class Serve {").nth(1).unwrap();
        let serve = serve.split("\n}").next().unwrap();
        let readonly = caught(serve, r"readonly (\w+):");
        assert_eq!(
            readonly,
            properties("Listening")
                .into_iter()
                .filter(|p| p != "protocol")
                .collect()
        );
        let answers: BTreeSet<String> = [
            "Listening",
            "Started",
            "Named",
            "SoFar",
            "Checked",
            "Ended",
            "Drift",
            "Refused",
        ]
        .into_iter()
        .flat_map(properties)
        .collect();
        let plugin = read("python/agentproxy/pytest_plugin.py");
        let read_there = caught(
            &plugin,
            r#"(?:hello|ended|started|drift)(?:\["|\.get\(")(\w+)""#,
        );
        let unknown: Vec<&String> = read_there.difference(&answers).collect();
        assert!(
            unknown.is_empty(),
            "the plugin reads {unknown:?}, which no answer has"
        );
        let start = plugin
            .split("start = {")
            .nth(1)
            .unwrap()
            .split('}')
            .next()
            .unwrap();
        let sent = caught(start, r#""(\w+)":"#);
        assert!(
            sent.is_subset(&properties("Start")),
            "the plugin starts a test with {sent:?}"
        );
        let harness = read("npm/agentproxy/lib/harness.js");
        let read_there = caught(&harness, r"(?:hello|ended|started|drift)\.(\w+)");
        let unknown: Vec<&String> = read_there.difference(&answers).collect();
        assert!(
            unknown.is_empty(),
            "harness.js reads {unknown:?}, which no answer has"
        );
        let start = harness
            .split(r#"control("POST", "test", {"#)
            .nth(1)
            .unwrap();
        let sent = caught(start.split('}').next().unwrap(), r"(?m)^\s+(\w+)[:,]");
        assert!(
            sent.is_subset(&properties("Start")),
            "harness.js starts a test with {sent:?}"
        );
        assert!(
            sent.len() >= 6 && read_there.contains("failures"),
            "{sent:?} {read_there:?}"
        );
    }

    #[test]
    fn every_harness_names_this_protocol_version_once() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let version =
            regex::Regex::new(r"(?m)^const PROTOCOL = (\d+);$|^PROTOCOL = (\d+)$").unwrap();
        let bare = regex::Regex::new(r"protocol[\x22']?\s*[:=]\s*\d").unwrap();
        let files = [
            "python/agentproxy/pytest_plugin.py",
            "npm/agentproxy/lib/serve.js",
            "npm/agentproxy/lib/harness.js",
            "npm/agentproxy/lib/jest-global-setup.js",
            "npm/agentproxy/lib/jest.js",
            "npm/agentproxy/lib/vitest.mjs",
        ];
        let mut defined = vec![];
        for file in files {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            for c in version.captures_iter(&text) {
                let n = c.get(1).or(c.get(2)).unwrap().as_str();
                defined.push((file, n.parse::<u64>().unwrap()));
            }
            let stray: Vec<&str> = (text.lines())
                .filter(|l| bare.is_match(l) && !version.is_match(l))
                .collect();
            assert!(
                stray.is_empty(),
                "{file} writes a version literally: {stray:?}"
            );
        }
        assert_eq!(
            defined,
            [
                ("python/agentproxy/pytest_plugin.py", PROTOCOL),
                ("npm/agentproxy/lib/serve.js", PROTOCOL)
            ]
        );
    }

    #[test]
    fn a_start_request_of_another_version_is_refused_saying_what_to_install() {
        assert_eq!(refuse_version(&json!(PROTOCOL)), None);
        let old = refuse_version(&Value::Null).unwrap();
        assert!(
            old.starts_with("the client speaks control protocol no version (a plugin older than this binary); agentproxy "),
            "{old}"
        );
        assert!(old.contains("install the agentproxy wheel"), "{old}");
        let other = refuse_version(&json!(PROTOCOL + 1)).unwrap();
        assert!(
            other.contains(&format!("version {}", PROTOCOL + 1)),
            "{other}"
        );
    }

    #[test]
    fn the_answers_have_the_documented_keys() {
        let ended = Ended {
            so_far: SoFar {
                requests: vec![Request {
                    method: "POST".into(),
                    path: "/v1/chat/completions".into(),
                    route: "openai.chat".into(),
                    body: Some(json!({"model": "m"})),
                }],
                calls: vec![Call {
                    name: "get_weather".into(),
                    arguments: json!({"city": "Paris"}),
                }],
                executions: vec![],
                reply: Some("18°C".into()),
            },
            mode: "record",
            cassette: "c.json".into(),
            written: true,
            trajectory: Some(Drift {
                verdict: "benign",
                diff: "verdict: benign\n".into(),
            }),
            misses: vec![],
            unused: vec![],
            upstream_errors: vec![],
            rejected: vec![],
            mock_problems: vec![],
            status: Status::Passed,
            failures: vec![],
        };
        let v = serde_json::to_value(&ended).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "calls",
                "cassette",
                "executions",
                "failures",
                "misses",
                "mock_problems",
                "mode",
                "rejected",
                "reply",
                "requests",
                "status",
                "trajectory",
                "unused",
                "upstream_errors",
                "written"
            ]
        );
        assert_eq!(
            v["trajectory"],
            json!({"verdict": "benign", "diff": "verdict: benign\n"})
        );
        assert_eq!(
            v["calls"][0],
            json!({"name": "get_weather", "arguments": {"city": "Paris"}})
        );
        assert_eq!(
            v["requests"][0],
            json!({"method": "POST", "path": "/v1/chat/completions", "route": "openai.chat", "body": {"model": "m"}})
        );
        let listening = Listening {
            url: "http://127.0.0.1:1".into(),
            env: BTreeMap::new(),
            protocol: PROTOCOL,
            mode: "replay",
        };
        let v = serde_json::to_value(&listening).unwrap();
        assert_eq!(v["protocol"], json!(PROTOCOL));
        assert_eq!(v["mode"], "replay");
    }
}
