//! Tool mocks compiled from a spec's `tools:`: which result the model is told for a call.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde_json::Value;

use crate::assert::{MatchContext, Matcher, MatcherError};
use crate::neutral::ToolCall;
use crate::spec::{MockKind, ToolMock};

/// A `tools:` mock whose `when:` matcher does not compile.
#[derive(Debug, thiserror::Error)]
#[error("tools.{tool}: {source}")]
pub(crate) struct MockError {
    tool: String,
    source: MatcherError,
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
    /// Compile the mocks; matchers were validated when the spec was loaded.
    pub(crate) fn compile(tools: &BTreeMap<String, ToolMock>) -> Result<MockSet, MockError> {
        let mut out = BTreeMap::new();
        for (name, mock) in tools {
            let compiled = match &mock.kind {
                MockKind::Fixed(v) => Compiled::Fixed(v.clone()),
                MockKind::Sequence(vs) => Compiled::Sequence(vs.clone()),
                MockKind::Rules(rules) => Compiled::Rules(
                    rules
                        .iter()
                        .map(|r| {
                            let when = r.when.as_ref().map(Matcher::compile).transpose();
                            when.map(|w| (w, r.result.clone()))
                                .map_err(|source| MockError {
                                    tool: name.clone(),
                                    source,
                                })
                        })
                        .collect::<Result<_, _>>()?,
                ),
            };
            out.insert(name.clone(), compiled);
        }
        Ok(MockSet {
            tools: out,
            problems: Mutex::default(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Names of the mocked tools.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// The mocked result for the `nth` call (0-based) to `call.name`, or `None` to pass the
    /// program's own result through.
    pub fn result_for(&self, call: &ToolCall, nth: usize) -> Option<Value> {
        match self.tools.get(&call.name)? {
            Compiled::Fixed(v) => Some(v.clone()),
            Compiled::Sequence(vs) => {
                let v = vs.get(nth).cloned();
                if v.is_none() {
                    self.problems.lock().unwrap_or_else(|p| p.into_inner()).insert(format!(
                        "tool `{}` was called {} times but `results:` has {} value(s); add values or use `when:` rules",
                        call.name,
                        nth + 1,
                        vs.len()
                    ));
                }
                v
            }
            Compiled::Rules(rules) => rules
                .iter()
                .find(|(when, _)| {
                    when.as_ref().is_none_or(|m| {
                        m.check(Some(&call.arguments), &MatchContext::default())
                            .is_ok()
                    })
                })
                .map(|(_, v)| v.clone()),
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
