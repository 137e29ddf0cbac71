//! Spec loading: a realistic spec parses to the expected model, and every kind of error
//! renders with the right file, line and column.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::model::{App, Count, Egress, Execution, MockRule, Pos, Require, Turn};
use super::*;
use crate::cassette::format::{Hole, MatchRules};
use crate::fault::CrashPoint;
use crate::matching::index::Repeat;

/// An argument matcher written in code.
fn arg_expr(source: Value) -> Expr {
    let matcher = crate::assert::Matcher::compile(&source).unwrap();
    Expr { source, matcher }
}

/// A text matcher written in code.
fn text_expr(source: Value) -> Expr {
    let matcher = crate::assert::Matcher::compile_text(&source).unwrap();
    Expr { source, matcher }
}

fn load_str(src: &str) -> Result<Spec, SpecError> {
    parse(src, Path::new("specs/weather.yaml"))
}

/// The error text for `src`, or a panic if it loads.
fn error(src: &str) -> String {
    match load_str(src) {
        Ok(spec) => panic!("expected an error, got {spec:#?}"),
        Err(e) => e.to_string(),
    }
}

const FULL: &str = r#"
version: 1
name: Weather assistant
app:
  command: python app.py --model "gpt 4o"
  env: {LOG_LEVEL: warning, PORT: 8080, BASE: "${agentproxy.base}/x"}
  timeout: 30s
  reply_until: '^DONE'
cassettes: cassettes/weather
match:
  ignore: [/user, /messages/*/name]
  holes: [{name: today, regex: '\d{4}-\d{2}-\d{2}'}, {name: id, regex: 'req_\w+', in: /metadata}]
  repeat: last
tools:
  get_weather:
    - when: {city: Paris}
      result: {temp_c: 18, sky: sunny}
    - result: {temp_c: 20, sky: cloudy}
  get_time:
    results: ["09:00", "09:05"]
  get_user:
    result: {id: 7}
execution:
  mode: replay
  parallel: 4
  timeout: 2m
  verbosity: verbose
cases:
  - name: paris
    input: What's the weather in Paris?
    expect:
      calls:
        - get_weather: {city: {contains: Paris}}
      strict: true
      allow: [get_time]
      never: [delete_account, {transfer: {amount: {gt: 100}}}]
      count: {min: 1, max: 3}
      reply: {contains: "18"}
  - name: Follow up, twice!
    env: {LOG_LEVEL: debug}
    skip: flaky upstream
    turns:
      - input: Weather in Paris?
        expect: {calls: [get_weather], order: exact}
      - input: And in Fahrenheit?
        expect: {calls: [], reply: {regex: '6[0-9]'}, output: done}
    expect:
      count: 1
"#;

#[test]
fn a_full_spec_parses_to_the_model() {
    let spec = load_str(FULL).unwrap();
    let expected = Spec {
        file: "specs/weather.yaml".into(),
        name: "Weather assistant".into(),
        app: App {
            target: Target::Command(vec![
                "python".into(),
                "app.py".into(),
                "--model".into(),
                "gpt 4o".into(),
            ]),
            env: BTreeMap::from([
                ("BASE".into(), "${agentproxy.base}/x".into()),
                ("LOG_LEVEL".into(), "warning".into()),
                ("PORT".into(), "8080".into()),
            ]),
            timeout: Some(Duration::from_secs(30)),
            reply_until: Some(Pattern::new("^DONE")),
            cwd: "specs".into(),
        },
        cassettes: Some("specs/cassettes/weather".into()),
        match_rules: MatchRules {
            ignore: vec!["/user".into(), "/messages/*/name".into()],
            holes: vec![
                Hole {
                    name: "today".into(),
                    regex: r"\d{4}-\d{2}-\d{2}".into(),
                    within: None,
                },
                Hole {
                    name: "id".into(),
                    regex: r"req_\w+".into(),
                    within: Some("/metadata".into()),
                },
            ],
        },
        repeat: Repeat::Last,
        tools: BTreeMap::from([
            (
                "get_weather".into(),
                ToolMock {
                    at: Pos::new(15, 3),
                    kind: MockKind::Rules(vec![
                        MockRule {
                            at: Pos::new(16, 7),
                            when: Some(arg_expr(json!({"city": "Paris"}))),
                            result: json!({"temp_c": 18, "sky": "sunny"}),
                        },
                        MockRule {
                            at: Pos::new(18, 7),
                            when: None,
                            result: json!({"temp_c": 20, "sky": "cloudy"}),
                        },
                    ]),
                },
            ),
            (
                "get_time".into(),
                ToolMock {
                    at: Pos::new(19, 3),
                    kind: MockKind::Sequence(vec![json!("09:00"), json!("09:05")]),
                },
            ),
            (
                "get_user".into(),
                ToolMock {
                    at: Pos::new(21, 3),
                    kind: MockKind::Fixed(json!({"id": 7})),
                },
            ),
        ]),
        mcp: BTreeMap::new(),
        a2a: BTreeMap::new(),
        agents: BTreeMap::new(),
        execution: Execution {
            mode: Some(Mode::Replay),
            parallel: Some(4),
            timeout: Some(Duration::from_secs(120)),
            verbosity: Some(Verbosity::Verbose),
            max_age: None,
            replay_timing: None,
            reports: vec![],
        },
        egress: Egress::default(),
        cases: vec![
            Case {
                at: Pos::new(29, 5),
                name: "paris".into(),
                slug: "paris".into(),
                turns: vec![Turn {
                    at: Pos::new(29, 5),
                    input: Some("What's the weather in Paris?".into()),
                    expect: Some(Expect {
                        at: Pos::new(32, 7),
                        calls: Some(vec![CallExpr {
                            at: Pos::new(33, 11),
                            tool: "get_weather".into(),
                            args: Some(arg_expr(json!({"city": {"contains": "Paris"}}))),
                        }]),
                        order: Order::Subsequence,
                        strict: true,
                        allow: vec!["get_time".into()],
                        never: vec![
                            CallExpr {
                                at: Pos::new(36, 15),
                                tool: "delete_account".into(),
                                args: None,
                            },
                            CallExpr {
                                at: Pos::new(36, 31),
                                tool: "transfer".into(),
                                args: Some(arg_expr(json!({"amount": {"gt": 100}}))),
                            },
                        ],
                        executed: None,
                        not_executed: vec![],
                        count: Some(Count {
                            min: Some(1),
                            max: Some(3),
                        }),
                        requests: None,
                        exit: None,
                        exit_at: None,
                        reply: Some(text_expr(json!({"contains": "18"}))),
                        output: None,
                    }),
                    faults: vec![],
                }],
                expect: None,
                env: BTreeMap::new(),
                skip: None,
                faults: vec![],
                fuzz: None,
                crash: None,
            },
            Case {
                at: Pos::new(39, 5),
                name: "Follow up, twice!".into(),
                slug: "follow-up-twice".into(),
                turns: vec![
                    Turn {
                        at: Pos::new(43, 9),
                        input: Some("Weather in Paris?".into()),
                        expect: Some(Expect {
                            at: Pos::new(44, 17),
                            calls: Some(vec![CallExpr {
                                at: Pos::new(44, 26),
                                tool: "get_weather".into(),
                                args: None,
                            }]),
                            order: Order::Exact,
                            ..Expect::default()
                        }),
                        faults: vec![],
                    },
                    Turn {
                        at: Pos::new(45, 9),
                        input: Some("And in Fahrenheit?".into()),
                        expect: Some(Expect {
                            at: Pos::new(46, 17),
                            calls: Some(vec![]),
                            reply: Some(text_expr(json!({"regex": "6[0-9]"}))),
                            output: Some(text_expr(json!("done"))),
                            ..Expect::default()
                        }),
                        faults: vec![],
                    },
                ],
                expect: Some(Expect {
                    at: Pos::new(48, 7),
                    count: Some(Count {
                        min: Some(1),
                        max: Some(1),
                    }),
                    ..Expect::default()
                }),
                env: BTreeMap::from([("LOG_LEVEL".into(), "debug".into())]),
                skip: Some("flaky upstream".into()),
                faults: vec![],
                fuzz: None,
                crash: None,
            },
        ],
    };
    assert_eq!(spec, expected);
    assert_eq!(spec.dir(), Path::new("specs"));
    assert_eq!(
        spec.cases[1].cassette_path(Path::new("specs/cassettes/weather")),
        PathBuf::from("specs/cassettes/weather/follow-up-twice.json")
    );
}

#[test]
fn a_minimal_spec_gets_defaults() {
    let spec = parse(
        "app: {url: 'http://127.0.0.1:8088/chat'}\ncases: [{name: a, input: hi}]\n",
        Path::new("s.yaml"),
    )
    .unwrap();
    assert_eq!(spec.name, "s");
    assert_eq!(
        spec.app.target,
        Target::Url("http://127.0.0.1:8088/chat".into())
    );
    assert_eq!(spec.app.cwd, PathBuf::from("."));
    assert_eq!(spec.cassettes, None);
    assert_eq!(spec.repeat, Repeat::None);
    assert!(spec.match_rules.is_empty() && spec.tools.is_empty());
    assert_eq!(spec.execution, Execution::default());
    assert_eq!(spec.cases[0].turns[0].expect, None);
}

#[test]
fn command_lists_placeholders_skip_and_empty_blocks() {
    let spec = load_str(
        "app:\n  command: [node, agent.js, --retries, 3, '{input}']\n  cwd: ../app\nmatch:\ntools:\nexecution:\ncases:\n  - name: a\n    input: hi\n    skip: true\n    expect:\n  - name: b\n    input: hi\n    skip: false\n    expect: {calls: [{x: null}]}\n",
    )
    .unwrap();
    assert_eq!(
        spec.app.target,
        Target::Command(vec![
            "node".into(),
            "agent.js".into(),
            "--retries".into(),
            "3".into(),
            "{input}".into()
        ])
    );
    assert_eq!(spec.app.cwd, PathBuf::from("specs/../app"));
    assert_eq!(spec.cases[0].skip, Some(String::new()));
    assert_eq!(spec.cases[0].turns[0].expect, None);
    assert_eq!(spec.cases[1].skip, None);
    let calls = spec.cases[1].turns[0]
        .expect
        .as_ref()
        .unwrap()
        .calls
        .as_ref()
        .unwrap();
    assert_eq!((calls[0].tool.as_str(), &calls[0].args), ("x", &None));
}

#[test]
fn slugs_are_lowercase_dashed_and_bounded() {
    assert_eq!(slug("Paris: 3-day trip!"), "paris-3-day-trip");
    assert_eq!(slug("  --Hello__World--  "), "hello-world");
    assert_eq!(slug("café au lait"), "caf-au-lait");
    assert_eq!(slug("天気"), "");
    assert_eq!(slug(&"ab-".repeat(50)).len(), 80);
    assert!(!slug(&"a ".repeat(100)).ends_with('-'));
}

#[test]
fn env_placeholders_expand() {
    assert_eq!(
        expand_env_value(
            "${agentproxy.url}|${agentproxy.base}|${HOME}",
            "http://h/v1",
            "http://h"
        ),
        "http://h/v1|http://h|${HOME}"
    );
}

/// Each error kind: (spec text, exact message). Line and column are the point of the test.
#[test]
fn errors_point_at_file_line_and_column() {
    let app = "app: {command: a}\n";
    let cases: &[(&str, String)] = &[
        // YAML syntax, located by the parser.
        ("app: {command: a\n", "specs/weather.yaml:1:6: invalid YAML: unclosed bracket '{'".into()),
        ("app: {command: a}\napp: {command: b}\ncases: []\n", "specs/weather.yaml:2:1: invalid YAML: duplicate mapping key `app` is not allowed here".into()),
        ("", "specs/weather.yaml:1:1: the spec is empty\n  hint: a spec is a mapping with at least `app:` and `cases:`".into()),
        ("- a\n", "specs/weather.yaml:1:1: expected a mapping at the top of the spec, found a list".into()),
        // A tool both expected and forbidden outright.
        (
            &format!("{app}cases:\n  - name: a\n    input: x\n    expect:\n      calls: [get_weather]\n      never: [get_weather]\n"),
            "specs/weather.yaml:7:15: `get_weather` is both in `cases[0].expect.calls` and in `cases[0].expect.never`: the expectation can never hold\n  hint: keep it in one of them; to forbid only some calls, give `never` arguments (`- tool: {arg: value}`)".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    input: x\n    expect:\n      executed: [send]\n      not_executed: [send]\n"),
            "specs/weather.yaml:7:22: `send` is both in `cases[0].expect.executed` and in `cases[0].expect.not_executed`: the expectation can never hold\n  hint: keep it in one of them; to forbid only some executions, give `not_executed` arguments (`- tool: {arg: value}`)".into(),
        ),
        // Unknown keys, with suggestions and places.
        (
            &format!("{app}cases:\n  - name: a\n    input: hi\n    expct: {{}}\n"),
            "specs/weather.yaml:5:5: unknown key `expct` in case; expected one of: name, input, turns, expect, env, skip, faults, fuzz, crash (did you mean `expect`?)".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    input: hi\n    reply: x\n"),
            "specs/weather.yaml:5:5: unknown key `reply` in case; expected one of: name, input, turns, expect, env, skip, faults, fuzz, crash\n  hint: `reply` belongs under `expect:`".into(),
        ),
        (
            "command: python app.py\n",
            "specs/weather.yaml:1:1: unknown key `command` in the spec; expected one of: version, name, app, cassettes, match, tools, mcp, a2a, agents, execution, egress, cases\n  hint: `command` belongs under `app:`".into(),
        ),
        (
            &format!("{app}execution: {{mdoe: replay}}\n"),
            "specs/weather.yaml:2:13: unknown key `mdoe` in execution; expected one of: mode, parallel, timeout, verbosity, max_age, replay_timing, reports (did you mean `mode`?)".into(),
        ),
        (
            &format!("{app}tools:\n  t: {{when: {{a: 1}}, result: 2}}\n"),
            "specs/weather.yaml:3:7: unknown key `when` in mock; expected one of: result, results\n  hint: a mock with `when:` is a list of rules, each starting with `- `: `- when: {...}` then `result: ...`".into(),
        ),
        (
            "app: {command: a}\ntimeout: 5s\n",
            "specs/weather.yaml:2:1: unknown key `timeout` in the spec; expected one of: version, name, app, cassettes, match, tools, mcp, a2a, agents, execution, egress, cases\n  hint: `timeout` belongs under `execution:` (for a whole case) or `app:` (for one turn)".into(),
        ),
        (
            "app: python app.py\n",
            "specs/weather.yaml:1:6: expected a mapping for `app`, found a string\n  hint: to start a program for each case, write `app: {command: python app.py}`".into(),
        ),
        // Missing keys and exclusive keys.
        ("name: x\n", "specs/weather.yaml:1:1: the spec has no `app:`\n  hint: add `app: {command: ...}` to start a program, or `app: {url: ...}` to drive a running service".into()),
        (app, "specs/weather.yaml:1:1: the spec has no `cases:`\n  hint: add `cases:` with at least one `- name: ...` and `input: ...`".into()),
        (
            "app:\n  command: a\n  url: http://x\n",
            "specs/weather.yaml:3:3: `app` has both `command` and `url`; it needs exactly one\n  hint: `command` starts the program for each case; `url` drives a service that is already running".into(),
        ),
        (
            "app:\n  env: {A: b}\n",
            "specs/weather.yaml:1:1: `app` needs `command` or `url`\n  hint: `command: python app.py` starts the program for each case; `url: http://127.0.0.1:8080/chat` drives a running service".into(),
        ),
        (
            "app: {url: 'http://x', env: {A: b}}\n",
            "specs/weather.yaml:1:24: `app.env` only applies to `command:` apps\n  hint: a `url:` app is already running: configure it where it is started".into(),
        ),
        (&format!("{app}cases:\n  - input: hi\n"), "specs/weather.yaml:3:5: `cases[0]` is missing `name`".into()),
        (
            "app: {url: 'http://127.0.0.1:8088/chat'}\ncases:\n  - name: a\n",
            "specs/weather.yaml:3:5: case `a` has no `input` or `turns`\n  hint: a `url:` app is driven by its input: add `input: ...` for a single turn, or `turns: [{input: ...}, ...]` for several".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    input: hi\n    turns: []\n"),
            "specs/weather.yaml:5:5: case `a` has both `input` and `turns`\n  hint: use `input` for a single turn, or `turns: [{input: ...}, ...]` for several".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    turns: []\n"),
            "specs/weather.yaml:4:12: `cases[0].turns` is empty\n  hint: add at least one `- input: ...`".into(),
        ),
        (&format!("{app}cases: []\n"), "specs/weather.yaml:2:8: `cases` is empty\n  hint: add at least one `- name: ...` with `input: ...`".into()),
        (&format!("{app}cases:\n  - name: a\n    turns: [{{expect: {{}}}}]\n"), "specs/weather.yaml:4:13: `cases[0].turns[0]` is missing `input`".into()),
        // Wrong types.
        (
            &format!("{app}cases:\n  - name: a\n    input: 42\n"),
            "specs/weather.yaml:4:12: expected a string for `cases[0].input`, found a number\n  hint: quote it to make it a string: \"42\"".into(),
        ),
        ("app: {command: {a: b}}\n", "specs/weather.yaml:1:16: expected a string or a list of strings for `app.command`, found a mapping".into()),
        (&format!("{app}execution: {{parallel: 0}}\n"), "specs/weather.yaml:2:23: `execution.parallel` must be a whole number of at least 1, found 0".into()),
        (&format!("{app}execution: {{parallel: many}}\n"), "specs/weather.yaml:2:23: expected a whole number for `execution.parallel`, found a string".into()),
        (
            &format!("{app}cases:\n  - {{name: a, input: b, expect: {{strict: yes}}}}\n"),
            "specs/weather.yaml:3:42: expected `true` or `false` for `cases[0].expect.strict`, found a string".into(),
        ),
        (&format!("{app}cases:\n  - {{name: a, input: b, skip: 1}}\n"), "specs/weather.yaml:3:31: expected `true`, `false` or a reason (a string) for `cases[0].skip`, found a number".into()),
        // Values: durations, modes, regexes, pointers, URLs, commands.
        (
            "app: {command: a, timeout: 60}\n",
            "specs/weather.yaml:1:28: expected a duration like 30s, 2m or 1m30s for `app.timeout`, found a number\n  hint: add a unit: `60s` for seconds".into(),
        ),
        (
            "app: {command: a, timeout: soon}\n",
            "specs/weather.yaml:1:28: invalid duration `soon` for `app.timeout`: expected number at 0; expected a duration like 30s, 2m or 1m30s".into(),
        ),
        (&format!("{app}execution:\n  timeout: 0s\n"), "specs/weather.yaml:3:12: `execution.timeout` must be longer than zero".into()),
        (
            &format!("{app}execution:\n  mode: replya\n"),
            "specs/weather.yaml:3:9: unknown value `replya` for `execution.mode`; expected one of replay, record, auto, update (did you mean `replay`?)".into(),
        ),
        (&format!("{app}match: {{repeat: always}}\n"), "specs/weather.yaml:2:17: unknown value `always` for `match.repeat`; expected one of none, last".into()),
        ("app: {command: a, reply_until: '(done'}\n", "specs/weather.yaml:1:32: invalid regex `(done` in `app.reply_until`: unclosed group".into()),
        (
            &format!("{app}match:\n  holes:\n    - name: d\n      regex: '[0-9'\n"),
            "specs/weather.yaml:5:14: invalid regex `[0-9` in `match.holes[0].regex`: unclosed character class".into(),
        ),
        (
            &format!("{app}match:\n  holes: [{{name: 'a b', regex: x}}]\n"),
            "specs/weather.yaml:3:18: invalid hole name `a b`: use letters, digits, `_` or `-`".into(),
        ),
        (
            &format!("{app}match:\n  holes: [{{name: a, regex: x}}, {{name: a, regex: y}}]\n"),
            "specs/weather.yaml:3:39: duplicate hole name `a` (also at line 3)".into(),
        ),
        (
            &format!("{app}match:\n  holes: [{{name: a}}]\n"),
            "specs/weather.yaml:3:11: `match.holes[0]` is missing `regex`\n  hint: a hole is `{name: today, regex: '\\d{4}-\\d{2}-\\d{2}'}`, optionally with `in: /pointer`".into(),
        ),
        (
            &format!("{app}match:\n  ignore: [/a, user]\n"),
            "specs/weather.yaml:3:16: invalid JSON pointer `user` in `match.ignore[1]`: it must start with `/`\n  hint: write a path into the request body such as `/user` or `/messages/*/name`".into(),
        ),
        (
            "app: {url: 'ftp://x/y'}\n",
            "specs/weather.yaml:1:12: invalid URL `ftp://x/y` for `app.url`\n  hint: write an http:// or https:// URL such as http://127.0.0.1:8080/chat".into(),
        ),
        (
            "app: {command: 'python \"app.py'}\n",
            "specs/weather.yaml:1:16: cannot split `app.command` into arguments: missing closing quote\n  hint: check the quotes, or write the command as a list: [python, app.py]".into(),
        ),
        ("app: {command: ''}\n", "specs/weather.yaml:1:16: `app.command` is empty".into()),
        (
            "app:\n  command: a\n  env: {URL: '${agentproxy.uri}'}\n",
            "specs/weather.yaml:3:14: unknown placeholder `${agentproxy.uri}` in `app.env.URL`; expected `${agentproxy.url}` or `${agentproxy.base}` (did you mean `${agentproxy.url}`?)".into(),
        ),
        (
            "app:\n  command: a\n  env: {EMPTY: }\n",
            "specs/weather.yaml:3:14: expected a string, number or boolean for `app.env.EMPTY`, found nothing (null)\n  hint: write `\"\"` for an empty value".into(),
        ),
        ("version: 2\n", "specs/weather.yaml:1:10: spec version 2 is newer than this agentproxy reads (1)\n  hint: upgrade agentproxy".into()),
        ("version: 0.5\n", "specs/weather.yaml:1:10: unknown spec version 0.5; this agentproxy reads version 1\n  hint: write `version: 1`".into()),
        ("version: 1.0\n", "specs/weather.yaml:1:10: unknown spec version 1.0; this agentproxy reads version 1\n  hint: write `version: 1`".into()),
        ("version: \"1\"\n", "specs/weather.yaml:1:10: the spec version is the string \"1\"; it is a number\n  hint: write `version: 1`, without quotes".into()),
        ("version: 99999999999999999999\n", "specs/weather.yaml:1:10: spec version 1e+20 is newer than this agentproxy reads (1)\n  hint: upgrade agentproxy".into()),
        // Cases: duplicates and cassette names.
        (
            &format!("{app}cases:\n  - {{name: a, input: x}}\n  - {{name: a, input: y}}\n"),
            "specs/weather.yaml:4:12: duplicate case name `a` (also at line 3)\n  hint: each case records its own cassette, named after the case: make the names unique".into(),
        ),
        (
            &format!("{app}cases:\n  - {{name: Paris trip, input: x}}\n  - {{name: paris-trip, input: y}}\n"),
            "specs/weather.yaml:4:12: case `paris-trip` would share the cassette file `paris-trip.json` with case `Paris trip` (line 3)\n  hint: cassette file names keep only letters and digits of the case name, lowercased: rename one of the cases".into(),
        ),
        (
            &format!("{app}cases:\n  - {{name: '???', input: x}}\n"),
            "specs/weather.yaml:3:12: case name `???` has no ASCII letter or digit to name its cassette file\n  hint: add a few letters or digits to the name".into(),
        ),
        // Expectations.
        (
            &format!("{app}cases:\n  - name: a\n    input: x\n    expect:\n      calls:\n        - get_weather: {{city: {{regex: '(x'}}}}\n"),
            "specs/weather.yaml:7:32: invalid matcher in `cases[0].expect.calls[0].get_weather.city.regex`: regex `(x` does not compile: unclosed group\n  hint: regexes use Rust `regex` syntax (no look-around or backreferences); escape special characters such as `(`, `[`, `.`, `?` with `\\`".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    input: x\n    expect:\n      reply:\n        any_of:\n          - {{contains: a}}\n          - {{contain: a}}\n"),
            "specs/weather.yaml:9:14: invalid matcher in `cases[0].expect.reply.any_of[1].contain`: unknown operator `contain`; did you mean `contains`?\n  hint: to match a field named `contain`, wrap the fields: {fields: {contain: ...}}".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    input: x\n    expect: {{calls: [{{a: 1, b: 2}}]}}\n"),
            "specs/weather.yaml:5:29: `cases[0].expect.calls[0]` has 2 keys (`a`, `b`); a call is one tool name with its arguments\n  hint: write each call as its own list item, and all of one call's arguments in one mapping: `- get_weather: {city: Paris, unit: c}`".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    input: x\n    expect: {{calls: [1]}}\n"),
            "specs/weather.yaml:5:22: expected a tool name or `{tool: arguments}` for `cases[0].expect.calls[0]`, found a number".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    input: x\n    expect: {{allow: [t]}}\n"),
            "specs/weather.yaml:5:14: `cases[0].expect.allow` has no effect without `strict: true`\n  hint: add `strict: true` to forbid calls that are neither listed nor allowed".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    input: x\n    expect: {{count: {{min: 3, max: 1}}}}\n"),
            "specs/weather.yaml:5:21: `cases[0].expect.count` has `min` 3 greater than `max` 1".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    input: x\n    expect: {{count: -1}}\n"),
            "specs/weather.yaml:5:21: `cases[0].expect.count` must be a whole number of at least 0, found -1".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    input: x\n    expect: {{order: random}}\n"),
            "specs/weather.yaml:5:21: unknown value `random` for `cases[0].expect.order`; expected one of subsequence, exact, unordered".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    turns:\n      - input: x\n        expect: {{calls: [t], expect: {{}}}}\n"),
            "specs/weather.yaml:6:30: unknown key `expect` in expect; expected one of: calls, order, strict, allow, never, executed, not_executed, count, requests, exit, reply, output\n  hint: `expect` belongs one level up: this is already an `expect:` block".into(),
        ),
        // Faults, `requests:` and `exit:`.
        (
            &format!("{app}cases:\n  - name: a\n    faults: [{{request: 1, kind: slow}}]\n"),
            "specs/weather.yaml:4:33: `cases[0].faults[0].kind`: unknown fault kind `slow`; expected one of rate_limit, server_error, overloaded, timeout, disconnect, truncate_stream, stream_error, malformed_tool_args, schema_violation, unknown_tool, length".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    faults:\n      - kind: rate_limit\n"),
            "specs/weather.yaml:5:9: `cases[0].faults[0]`: a fault needs `request` (from 1)".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    faults:\n      - {{request: 1, kind: rate_limit, status: 503}}\n"),
            "specs/weather.yaml:5:9: `cases[0].faults[0]`: `status` is for `server_error` faults, not `rate_limit`".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    faults:\n      - {{request: 1, kind: timeout, every: 2}}\n"),
            "specs/weather.yaml:5:37: unknown key `every` in fault; expected one of: request, kind, times, status, retry_after, for, after_events, tool, violation".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    turns:\n      - input: x\n        faults: [{{request: 0, kind: disconnect}}]\n"),
            "specs/weather.yaml:6:28: `cases[0].turns[0].faults[0].request`: `request` must be a whole number of at least 1, not `0`".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    turns:\n      - input: x\n        expect: {{exit: 1}}\n"),
            "specs/weather.yaml:6:18: `cases[0].turns[0].expect.exit` judges the whole run, not one turn\n  hint: move `exit:` to the case's `expect:`, next to `turns:`".into(),
        ),
        (
            &format!("{app}cases:\n  - name: a\n    expect: {{exit: 300}}\n"),
            "specs/weather.yaml:4:20: `cases[0].expect.exit` must be an exit status, 0 to 255".into(),
        ),
        (
            "app: {url: 'http://127.0.0.1:9/'}\ncases:\n  - name: a\n    input: x\n    expect: {exit: 0}\n",
            "specs/weather.yaml:5:14: `exit:` only applies to `command:` apps\n  hint: a `url:` app is a running service: judge its answers with `output:`".into(),
        ),
        // Mocks.
        (
            &format!("{app}tools:\n  t:\n    - result: 1\n    - when: {{a: 1}}\n      result: 2\n"),
            "specs/weather.yaml:5:7: this rule of `tools.t` can never match: the rule at line 4 has no `when` and answers every call\n  hint: the fallback rule (the one without `when`) must be the last".into(),
        ),
        (&format!("{app}tools:\n  t:\n    - when: {{a: 1}}\n"), "specs/weather.yaml:4:7: `tools.t[0]` is missing `result`".into()),
        (
            &format!("{app}tools:\n  t:\n    - when: {{a: {{startsWith: x}}}}\n      result: 1\n"),
            "specs/weather.yaml:4:18: invalid matcher in `tools.t[0].when.a.startsWith`: unknown operator `startsWith`; did you mean `starts_with`?\n  hint: to match a field named `startsWith`, wrap the fields: {fields: {startsWith: ...}}".into(),
        ),
        (
            &format!("{app}tools:\n  t: [{{when: , result: 1}}]\n"),
            "specs/weather.yaml:3:12: `tools.t[0].when` is empty\n  hint: remove `when:` to make this rule the fallback".into(),
        ),
        (&format!("{app}tools:\n  t: {{results: []}}\n"), "specs/weather.yaml:3:16: `tools.t.results` is empty".into()),
        (&format!("{app}tools:\n  t: {{result: 1, results: [2]}}\n"), "specs/weather.yaml:3:18: `tools.t` has both `result` and `results`; use one".into()),
        (
            &format!("{app}tools:\n  t: {{}}\n"),
            "specs/weather.yaml:3:3: `tools.t` needs `result` or `results`\n  hint: `result: ...` answers every call; `results: [...]` answers one call each, in order".into(),
        ),
        (
            &format!("{app}tools:\n  get_time: '09:00'\n"),
            "specs/weather.yaml:3:13: expected a list of rules or a mapping with `result` or `results` for `tools.get_time`, found a string\n  hint: to answer every call the same way, write `get_time: {result: ...}`".into(),
        ),
    ];
    let mut failures = Vec::new();
    for (src, want) in cases {
        // Most of these specs lack `cases:` too: the error under test comes first.
        let got = match load_str(src) {
            Err(SpecError::Many { errors }) => errors[0].to_string(),
            Err(e) => e.to_string(),
            Ok(_) => "loaded".into(),
        };
        if &got != want {
            failures.push(format!("spec:\n{src}\n  want: {want}\n  got:  {got}\n"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} wrong:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn files_and_directories_load_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let spec = "app: {command: a}\ncases: [{name: a, input: x}]\n";
    for f in ["b.yaml", "a.yml", "notes.txt"] {
        std::fs::write(dir.path().join(f), spec).unwrap();
    }
    std::fs::create_dir(dir.path().join("sub.yaml")).unwrap();
    let b = dir.path().join("b.yaml");
    let empty = tempfile::tempdir().unwrap();
    let files = spec_files(&[
        dir.path().to_path_buf(),
        empty.path().to_path_buf(),
        b.clone(),
    ])
    .unwrap();
    assert_eq!(
        files,
        SpecFiles {
            files: vec![dir.path().join("a.yml"), b.clone()],
            without_specs: vec![empty.path().to_path_buf()],
        }
    );
    let specs = load_all(std::slice::from_ref(&b)).unwrap().specs;
    assert_eq!(specs[0].name, "b");
    assert_eq!(specs[0].app.cwd, dir.path());

    let e = spec_files(&[empty.path().to_path_buf()]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "no spec in {}: it has no *.yaml or *.yml file",
            empty.path().display()
        )
    );
    let missing = dir.path().join("nope.yaml");
    let e = load(&missing).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("failed to read spec {}: ", missing.display())),
        "{e}"
    );
    assert!(e.to_string().ends_with(
        "\n  hint: `agentproxy test` takes spec files (*.yaml) or directories that hold them"
    ));

    std::fs::write(
        dir.path().join("c.yaml"),
        "app: {command: a}\ncases: [{name: a, input: x, expct: 1}]\n",
    )
    .unwrap();
    let e = load_all(&[dir.path().to_path_buf()]).unwrap_err();
    assert!(
        e.to_string().starts_with(&format!(
            "{}:2:29: unknown key `expct`",
            dir.path().join("c.yaml").display()
        )),
        "{e}"
    );
}

#[test]
fn spec_errors_exit_with_code_2() {
    let e: crate::error::Error = load_str("").unwrap_err().into();
    assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
}

#[test]
fn a_command_case_without_input_is_one_turn_with_stdin_closed() {
    let spec = parse(
        "app: {command: python3 app.py}\ncases:\n  - name: built in\n    expect: {reply: {contains: Paris}}\n",
        Path::new("specs/weather.yaml"))
    .unwrap();
    let case = &spec.cases[0];
    assert_eq!(case.turns.len(), 1);
    assert_eq!(case.turns[0].input, None);
    assert!(
        case.turns[0].expect.is_some(),
        "the case's expect is the turn's"
    );
}

#[test]
fn a_case_without_input_cannot_use_input_in_the_command() {
    let err = parse(
        "app: {command: [python3, app.py, '{input}']}\ncases:\n  - name: a\n",
        Path::new("specs/weather.yaml"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(
            "specs/weather.yaml:3:5: case `a` has no `input`, but `app.command` uses `{input}`"
        ),
        "{err}"
    );
}

#[test]
fn every_error_of_independent_parts_is_reported() {
    let src = "app:\n  command: python3 a.py\n  tiemout: 3s\ncases:\n  - name: a\n    input: hi\n    expct: {}\n  - name: b\n    input: hi\n  - name: c\n    inptu: hi\n  - name: b\n    input: again\n";
    let e = error(src);
    let lines: Vec<&str> = e
        .lines()
        .filter(|l| l.starts_with("specs/weather.yaml:"))
        .collect();
    // The app section, two broken cases and a duplicate name: four errors, in order.
    assert_eq!(e.lines().next(), Some("4 errors in the specs:"), "{e}");
    assert_eq!(lines.len(), 4, "{e}");
    assert!(lines[0].starts_with("specs/weather.yaml:3:3: "), "{e}");
    assert!(lines[1].starts_with("specs/weather.yaml:7:5: "), "{e}");
    assert!(lines[2].starts_with("specs/weather.yaml:11:5: "), "{e}");
    assert!(
        lines[3].starts_with("specs/weather.yaml:12:11: ")
            && lines[3].contains("duplicate case name `b`"),
        "{e}"
    );
    // One error alone reads as before.
    let one =
        error("app:\n  command: python3 a.py\ncases:\n  - name: a\n    input: hi\n    expct: {}\n");
    assert!(one.starts_with("specs/weather.yaml:6:5: "), "{one}");
}

#[test]
fn errors_past_the_limit_are_counted() {
    let mut src = String::from("app:\n  command: python3 a.py\ncases:\n");
    for i in 0..25 {
        src.push_str(&format!("  - name: c{i}\n    inptu: hi\n"));
    }
    let e = error(&src);
    assert!(e.starts_with("25 errors in the specs:"), "{e}");
    assert_eq!(
        e.lines()
            .filter(|l| l.starts_with("specs/weather.yaml:"))
            .count(),
        20,
        "{e}"
    );
    assert!(e.ends_with("… and 5 more"), "{e}");
}

#[test]
fn a_tool_both_required_and_forbidden_is_refused() {
    let e = error("app:\n  command: python3 a.py\ncases:\n  - name: a\n    input: hi\n    expect:\n      calls: [get_weather]\n      never: [get_time, get_weather]\n");
    assert!(e.starts_with("specs/weather.yaml:8:25: `get_weather` is both in `cases[0].expect.calls` and in `cases[0].expect.never`"), "{e}");
    // Forbidding some arguments of a required tool is fine.
    load_str("app:\n  command: python3 a.py\ncases:\n  - name: a\n    input: hi\n    expect:\n      calls: [get_weather]\n      never:\n        - get_weather: {city: London}\n").expect("loads");
}

#[test]
fn execution_max_age_is_a_duration() {
    let spec = |max_age: &str| {
        parse(
            &format!("app: {{command: a}}\nexecution: {{max_age: {max_age}}}\ncases: [{{name: a, input: x}}]\n"),
            Path::new("s.yaml"))
    };
    assert_eq!(
        spec("30d").unwrap().execution.max_age,
        Some(Duration::from_secs(30 * 86_400))
    );
    let e = spec("30").unwrap_err().to_string();
    assert!(e.starts_with("s.yaml:2:22: expected a duration"), "{e}");
}

#[test]
fn execution_replay_timing_is_instant_or_recorded() {
    let spec = |timing: &str| {
        parse(
            &format!("app: {{command: a}}\nexecution: {{replay_timing: {timing}}}\ncases: [{{name: a, input: x}}]\n"),
            Path::new("s.yaml"))
    };
    assert_eq!(
        spec("recorded").unwrap().execution.replay_timing,
        Some(true)
    );
    assert_eq!(
        spec("instant").unwrap().execution.replay_timing,
        Some(false)
    );
    let e = spec("slow").unwrap_err().to_string();
    assert!(e.contains("instant") && e.contains("recorded"), "{e}");
}

#[test]
fn executed_and_not_executed_take_the_grammar_of_calls() {
    let spec = load_str("app:\n  command: python3 a.py\ncases:\n  - name: a\n    input: hi\n    expect:\n      executed: [get_weather, {send_email: {to: ops@example.com}}]\n      not_executed: [delete_account]\n").expect("loads");
    let e = spec.cases[0].turns[0].expect.as_ref().unwrap();
    let executed = e.executed.as_ref().unwrap();
    assert_eq!(executed.len(), 2);
    assert_eq!(executed[1].tool, "send_email");
    assert_eq!(
        executed[1].args,
        Some(arg_expr(json!({"to": "ops@example.com"})))
    );
    assert_eq!(e.not_executed[0].tool, "delete_account");
    let spec = load_str("app:\n  command: python3 a.py\ncases:\n  - name: a\n    input: hi\n    expect: {executed: []}\n").expect("loads");
    assert_eq!(
        spec.cases[0].turns[0].expect.as_ref().unwrap().executed,
        Some(vec![])
    );
    let e = error("app:\n  command: python3 a.py\ncases:\n  - name: a\n    input: hi\n    expect:\n      executed: [send_email]\n      not_executed: [send_email]\n");
    assert!(e.starts_with("specs/weather.yaml:8:22: `send_email` is both in `cases[0].expect.executed` and in `cases[0].expect.not_executed`"), "{e}");
}

#[test]
fn mcp_names_streamable_http_servers() {
    let spec = load_str("app:\n  command: python3 a.py\nmcp:\n  mail: http://127.0.0.1:8000/mcp\ncases:\n  - name: a\n    input: hi\n").expect("loads");
    assert_eq!(
        spec.mcp,
        BTreeMap::from([("mail".to_owned(), "http://127.0.0.1:8000/mcp".to_owned())])
    );
    let e = error("app:\n  command: python3 a.py\nmcp:\n  mail: ftp://x\ncases:\n  - name: a\n    input: hi\n");
    assert!(
        e.starts_with(
            "specs/weather.yaml:4:9: `mcp.mail`: `ftp://x` must be an http:// or https:// URL"
        ),
        "{e}"
    );
    let e = error("app:\n  command: python3 a.py\nmcp:\n  my mail: http://x/mcp\ncases:\n  - name: a\n    input: hi\n");
    assert!(e.contains("`my mail` is not an MCP server name"), "{e}");
}

#[test]
fn faults_on_a_case_and_a_turn_and_what_they_expect() {
    let spec = load_str(
        "app: {command: a}\ncases:\n  - name: a\n    faults:\n      - {request: 1, kind: rate_limit, times: 2, retry_after: 1s}\n    turns:\n      - input: x\n        faults: [{request: 2, kind: truncate_stream, after_events: 0}]\n        expect: {requests: {min: 2}}\n      - input: y\n    expect: {requests: 5, exit: 1}\n",
    )
    .unwrap();
    let case = &spec.cases[0];
    let plan = case.fault_plan();
    assert_eq!(plan.case.len(), 1);
    assert_eq!(plan.case[0].times, 2);
    assert_eq!(plan.case[0].retry_after, Duration::from_secs(1));
    assert_eq!(plan.turns.len(), 1);
    assert_eq!((plan.turns[0].0, plan.turns[0].1.after_events), (0, 0));
    let expect = case.expect.as_ref().unwrap();
    assert_eq!(
        (expect.requests, expect.exit),
        (
            Some(Count {
                min: Some(5),
                max: Some(5)
            }),
            Some(1)
        )
    );
    assert!(case.judges_exit());
    let turn = case.turns[0].expect.as_ref().unwrap();
    assert_eq!(
        turn.requests,
        Some(Count {
            min: Some(2),
            max: None
        })
    );
}

#[test]
fn fuzz_on_a_case_names_its_tool_and_its_runs() {
    let spec = load_str(
        "app: {command: a}\ncases:\n  - name: a\n    fuzz: {tool: send_email, valid: 4, invalid: 2, seed: 9, arguments: [{to: x}]}\n  - name: b\n    fuzz: {tool: send_email, invalid: 3}\n",
    )
    .unwrap();
    let fuzz = spec.cases[0].fuzz.as_ref().unwrap();
    assert_eq!(
        (fuzz.tool.as_str(), fuzz.valid, fuzz.invalid, fuzz.seed),
        ("send_email", 4, 2, 9)
    );
    assert_eq!(fuzz.arguments, [serde_json::json!({"to": "x"})]);
    let fuzz = spec.cases[1].fuzz.as_ref().unwrap();
    assert_eq!((fuzz.valid, fuzz.invalid, fuzz.seed), (0, 3, 1));
    assert!(fuzz.arguments.is_empty());
}

#[test]
fn a_bad_fuzz_says_what_to_write() {
    let case = "app: {command: a}\ncases:\n  - name: a\n    fuzz: ";
    for (fuzz, want) in [
        ("{valid: 2}", "specs/weather.yaml:4:11: `cases[0].fuzz` is missing `tool`\n  hint: name the tool whose call gets generated arguments: `fuzz: {tool: send_email, valid: 16, invalid: 16}`"),
        ("{tool: t}", "specs/weather.yaml:4:11: `cases[0].fuzz` asks for no run\n  hint: give `valid:` or `invalid:` (how many runs of each), or `arguments:`"),
        ("{tool: t, valid: 999, invalid: 2}", "specs/weather.yaml:4:11: `cases[0].fuzz` asks for 1001 runs; at most 1000 are allowed"),
        ("{tool: t, valid: -1}", "specs/weather.yaml:4:28: `cases[0].fuzz.valid` must be a whole number of at least 0, found -1"),
        ("{tool: t, arguments: [[1]]}", "specs/weather.yaml:4:33: expected a mapping of arguments for `cases[0].fuzz.arguments[0]`, found a list"),
        ("{tool: t, runs: 3}", "specs/weather.yaml:4:21: unknown key `runs` in fuzz; expected one of: tool, valid, invalid, seed, arguments"),
    ] {
        assert_eq!(error(&format!("{case}{fuzz}\n")), want, "{fuzz}");
    }
}

#[test]
fn crash_on_a_case_names_its_point() {
    let spec = load_str(
        "app: {command: a}\ncases:\n  - name: a\n    crash: {after: {executed: send_email}}\n  - name: b\n    turns: [{input: x}, {input: y}]\n    crash: {after: {request: 3}}\n",
    )
    .unwrap();
    let after = |i: usize| spec.cases[i].crash.as_ref().unwrap().after.clone();
    assert_eq!(after(0), CrashPoint::Executed("send_email".into()));
    assert_eq!(after(1), CrashPoint::Request(3));
    assert_eq!(after(1).to_string(), "request 3");
}

#[test]
fn a_bad_crash_says_what_to_write() {
    let case = "app: {command: a}\ncases:\n  - name: a\n    crash: ";
    for (crash, want) in [
        ("{}", "specs/weather.yaml:4:12: `cases[0].crash` is missing `after`\n  hint: write `crash: {after: {executed: send_email}}` or `crash: {after: {request: 2}}`"),
        ("{after: {}}", "specs/weather.yaml:4:20: `cases[0].crash.after` names no point\n  hint: write `crash: {after: {executed: send_email}}` or `crash: {after: {request: 2}}`"),
        ("{after: {request: 0}}", "specs/weather.yaml:4:30: `cases[0].crash.after.request` must be a whole number of at least 1, found 0"),
        ("{after: {executed: a, request: 1}}", "specs/weather.yaml:4:20: `cases[0].crash.after` has both `executed` and `request`\n  hint: a crash has one point: keep one of them"),
        ("{after: {tool: a}}", "specs/weather.yaml:4:21: unknown key `tool` in crash.after; expected one of: executed, request"),
        ("{at: 1}", "specs/weather.yaml:4:13: unknown key `at` in crash; expected one of: after (did you mean `after`?)"),
    ] {
        assert_eq!(error(&format!("{case}{crash}\n")), want, "{crash}");
    }
    let both = "app: {command: a}\ncases:\n  - name: a\n    fuzz: {tool: t, valid: 1}\n    crash: {after: {request: 1}}\n";
    assert_eq!(error(both), "specs/weather.yaml:5:5: case `a` has both `fuzz` and `crash`\n  hint: test them in two cases (each with its own cassette)");
    let url = "app: {url: 'http://127.0.0.1:1/x'}\ncases:\n  - name: a\n    input: x\n    crash: {after: {request: 1}}\n";
    assert_eq!(error(url), "specs/weather.yaml:5:5: `cases[0].crash` only applies to `command:` apps\n  hint: a `url:` app is a running service that agentproxy cannot kill and start again");
}

#[test]
fn mcp_servers_that_give_one_variable_are_refused() {
    let src = "app: {command: a}\nmcp:\n  Mail-Box: 'http://127.0.0.1:1/mcp'\n  mail_box: 'http://127.0.0.1:2/mcp'\ncases:\n  - name: a\n";
    assert_eq!(error(src), "specs/weather.yaml:4:3: MCP servers `Mail-Box` and `mail_box` in `mcp` would both be given as $AGENTPROXY_MCP_MAIL_BOX_URL\n  hint: rename one of them (`-` and `_` are the same in a variable name, and case does not count)");
}

#[test]
fn execution_reports_name_a_file_per_format_beside_the_spec() {
    let spec = |reports: &str| {
        parse(
            &format!("app: {{command: a}}\nexecution:\n  reports: {reports}\ncases: [{{name: a, input: x}}]\n"),
            Path::new("specs/s.yaml"),
        )
    };
    let s = spec("{html: out/report.html, junit: /tmp/junit.xml}").unwrap();
    assert_eq!(
        s.execution.reports,
        [
            (ReportFormat::Junit, PathBuf::from("/tmp/junit.xml")),
            (ReportFormat::Html, PathBuf::from("specs/out/report.html")),
        ]
    );
    let e = spec("{pdf: r.pdf}").unwrap_err().to_string();
    assert!(
        e.starts_with("specs/s.yaml:3:13: unknown key `pdf` in `execution.reports`; expected one of: json, markdown, junit, html"),
        "{e}"
    );
    let e = spec("{html: ''}").unwrap_err().to_string();
    assert!(
        e.starts_with("specs/s.yaml:3:19: `execution.reports.html` is empty"),
        "{e}"
    );
    let e = spec("[html]").unwrap_err().to_string();
    assert!(
        e.contains("expected a mapping for `execution.reports`"),
        "{e}"
    );
}

#[test]
fn egress_allows_host_patterns_and_requires_a_level() {
    let spec = |egress: &str| {
        parse(
            &format!("app: {{command: a}}\negress: {egress}\ncases: [{{name: a, input: x}}]\n"),
            Path::new("s.yaml"),
        )
    };
    let s = spec("{allow: [api.example.test, '*.tools.test', 'db.test:5432'], require: contained}")
        .unwrap();
    assert_eq!(s.egress.require, Some(Require::Contained));
    let allowed = |host: &str, port: u16| s.egress.allow.iter().any(|p| p.matches(host, port));
    assert!(allowed("api.example.test", 443) && allowed("API.Example.test.", 80));
    assert!(allowed("a.tools.test", 443) && allowed("x.y.tools.test", 443));
    assert!(!allowed("tools.test", 443) && !allowed("eviltools.test", 443));
    assert!(allowed("db.test", 5432) && !allowed("db.test", 443));
    assert!(!allowed("example.test", 443));
    assert!(!s.egress.record);
    assert!(spec("{record: true}").unwrap().egress.record);
    for (egress, error) in [
        ("{allow: [not a host]}", "s.yaml:2:18: `egress.allow[0]`: `not a host` is not a host"),
        ("{allow: ['db.test:http']}", "s.yaml:2:18: `egress.allow[0]`: `db.test:http`: the port must be a number"),
        ("{require: sealed}", "s.yaml:2:19: unknown value `sealed` for `egress.require`; expected one of contained, intercepted"),
        ("{deny: [x.test]}", "s.yaml:2:10: unknown key `deny` in `egress`; expected one of: allow, record, require"),
        ("{record: yes please}", "s.yaml:2:18: expected `true` or `false` for `egress.record`, found a string"),
    ] {
        let e = spec(egress).unwrap_err().to_string();
        assert!(e.starts_with(error), "{egress}: {e}");
    }
}
