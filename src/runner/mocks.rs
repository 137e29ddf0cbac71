//! Tool mocks compiled from a spec's `tools:`: which result the model is told for a call.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde_json::Value;

use crate::assert::{MatchContext, Matcher};
use crate::neutral::ToolCall;
use crate::proxy::Mocked;
use crate::spec::{Expr, MockKind, MockRule, Pos, ToolMock};

/// Tool mocks given as JSON (by `agentproxy serve`'s control endpoint): each tool maps to
/// `{"result": v}`, `{"results": [v, …]}` (not empty) or `{"rules": [{"when": m, "result":
/// v}, …]}` (`when` optional), the forms of a spec's `tools:`.
pub fn tools_from_json(value: &Value) -> Result<BTreeMap<String, ToolMock>, String> {
    let tools = value
        .as_object()
        .ok_or("mocks must be an object of tool names")?;
    let mut out = BTreeMap::new();
    for (name, mock) in tools {
        let bad = |why: &str| format!("mock of `{name}`: {why}");
        let fields = mock.as_object().ok_or_else(|| bad("expected an object"))?;
        let kind = match (
            fields.get("result"),
            fields.get("results"),
            fields.get("rules"),
        ) {
            (Some(v), None, None) => MockKind::Fixed(v.clone()),
            (None, Some(Value::Array(vs)), None) if !vs.is_empty() => {
                MockKind::Sequence(vs.clone())
            }
            (None, Some(_), None) => return Err(bad("`results` must be a non-empty list")),
            (None, None, Some(Value::Array(rules))) if !rules.is_empty() => MockKind::Rules(
                rules
                    .iter()
                    .map(|r| {
                        let result = r
                            .get("result")
                            .ok_or_else(|| bad("each rule needs a `result`"))?;
                        let when = r.get("when").filter(|w| !w.is_null());
                        let when = when.map(|source| {
                            let matcher = Matcher::compile(source)
                                .map_err(|e| format!("tools.{name}: {e}"))?;
                            Ok::<_, String>(Expr {
                                source: source.clone(),
                                matcher,
                            })
                        });
                        Ok(MockRule {
                            at: Pos::default(),
                            when: when.transpose()?,
                            result: result.clone(),
                        })
                    })
                    .collect::<Result<_, String>>()?,
            ),
            _ => {
                return Err(bad(
                    "give exactly one of `result`, `results` or `rules` (a non-empty list)",
                ))
            }
        };
        out.insert(
            name.clone(),
            ToolMock {
                at: Pos::default(),
                kind,
            },
        );
    }
    Ok(out)
}

enum Compiled {
    Fixed(Value),
    Sequence(Vec<Value>),
    Rules(Vec<(Option<Matcher>, Value)>),
}

pub struct MockSet {
    tools: BTreeMap<String, Compiled>,
    /// Calls past the end of a `results:` list: the case fails with these.
    problems: Mutex<BTreeSet<String>>,
}

impl MockSet {
    /// The mocks of `tools`, their matchers compiled when they were read.
    pub(crate) fn new(tools: &BTreeMap<String, ToolMock>) -> MockSet {
        let mut out = BTreeMap::new();
        for (name, mock) in tools {
            let compiled = match &mock.kind {
                MockKind::Fixed(v) => Compiled::Fixed(v.clone()),
                MockKind::Sequence(vs) => Compiled::Sequence(vs.clone()),
                MockKind::Rules(rules) => Compiled::Rules(
                    (rules.iter())
                        .map(|r| (r.when.as_ref().map(|w| w.matcher.clone()), r.result.clone()))
                        .collect(),
                ),
            };
            out.insert(name.clone(), compiled);
        }
        MockSet {
            tools: out,
            problems: Mutex::default(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Names of the mocked tools.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// The mocked result for the `nth` call (0-based) to `call.name`.
    pub fn result_for(&self, call: &ToolCall, nth: usize) -> Mocked {
        let Some(mock) = self.tools.get(&call.name) else {
            return Mocked::Unmocked;
        };
        match mock {
            Compiled::Fixed(v) => Mocked::Result(v.clone()),
            Compiled::Sequence(vs) => {
                let Some(v) = vs.get(nth) else {
                    self.problems.lock().unwrap_or_else(|p| p.into_inner()).insert(format!(
                        "tool `{}` was called {} times but `results:` has {} value(s); add values or use `when:` rules",
                        call.name,
                        nth + 1,
                        vs.len()
                    ));
                    return Mocked::Exhausted;
                };
                Mocked::Result(v.clone())
            }
            Compiled::Rules(rules) => rules
                .iter()
                .find(|(when, _)| {
                    when.as_ref().is_none_or(|m| {
                        m.check(Some(&call.arguments), &MatchContext::default())
                            .is_ok()
                    })
                })
                .map_or(Mocked::Unmocked, |(_, v)| Mocked::Result(v.clone())),
        }
    }

    pub fn problems(&self) -> Vec<String> {
        self.problems
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}

/// A run's mocks: its tools' (`tools:`) and its remote agents' (`agents:`).
pub struct RunMocks {
    pub tools: std::sync::Arc<MockSet>,
    pub agents: std::sync::Arc<MockSet>,
}

impl RunMocks {
    /// Names of the mocked tools.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.names()
    }

    /// What the mocks could not answer, the tools' then the agents'.
    pub fn problems(&self) -> Vec<String> {
        let mut out = self.tools.problems();
        out.extend(self.agents.problems());
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments: args,
        }
    }

    #[test]
    fn json_mocks_take_the_three_forms_of_a_spec() {
        let tools = tools_from_json(&json!({
            "get_time": {"result": "09:00"},
            "get_weather": {"rules": [
                {"when": {"city": "Oslo"}, "result": {"temp_c": -5}},
                {"result": {"temp_c": 20}}
            ]},
            "roll": {"results": [1, 2]}
        }))
        .unwrap();
        let set = MockSet::new(&tools);
        let weather = |city: &str| set.result_for(&call("get_weather", json!({"city": city})), 0);
        assert_eq!(weather("Oslo"), Mocked::Result(json!({"temp_c": -5})));
        assert_eq!(weather("Lima"), Mocked::Result(json!({"temp_c": 20})));
        assert_eq!(
            set.result_for(&call("get_time", json!({})), 0),
            Mocked::Result(json!("09:00"))
        );
        let roll = |n| set.result_for(&call("roll", json!({})), n);
        assert_eq!(roll(1), Mocked::Result(json!(2)));
        assert_eq!(roll(2), Mocked::Exhausted);
        assert_eq!(set.problems().len(), 1);
        assert_eq!(
            set.result_for(&call("send_email", json!({})), 0),
            Mocked::Unmocked
        );
    }

    #[test]
    fn malformed_json_mocks_say_which_tool() {
        for (mocks, want) in [
            (json!([]), "mocks must be an object of tool names"),
            (json!({"t": 1}), "mock of `t`: expected an object"),
            (json!({"t": {"results": []}}), "mock of `t`: `results` must be a non-empty list"),
            (json!({"t": {"rules": [{"when": {}}]}}), "mock of `t`: each rule needs a `result`"),
            (
                json!({"t": {"result": 1, "results": [1]}}),
                "mock of `t`: give exactly one of `result`, `results` or `rules` (a non-empty list)",
            ),
        ] {
            assert_eq!(tools_from_json(&mocks).unwrap_err(), want);
        }
    }
}
