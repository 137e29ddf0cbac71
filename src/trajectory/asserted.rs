//! What a spec case asserts, in the terms of a trajectory diff: which tools' presence,
//! position and argument paths, which turns' replies, which tools' schemas. A change the
//! case depends on is *asserted*; any other change is *incidental*. `spec::asserted` builds
//! one from a spec case.

use std::collections::BTreeMap;

/// The assertions of one spec case, or of none (see [`Asserted::everything`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Asserted {
    /// The spec case these come from; `None` when built without a spec.
    pub case: Option<String>,
    /// With no spec, nothing says a change is incidental: every change in what the agent
    /// did (calls, order, arguments, replies) counts as asserted. What it was told never
    /// does, unless a spec depends on it (`schema_valid`).
    pub everything: bool,
    /// The assertions in force in each turn (0-based), the case-level `expect` merged in.
    pub turns: Vec<Scope>,
    /// The case-level assertions alone, for turns the spec does not list.
    pub rest: Scope,
}

/// The assertions over one turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Tools named in `calls` or `never`.
    pub tools: BTreeMap<String, ToolScope>,
    /// `strict`, `calls: []` or `count`: any call added or removed is asserted.
    pub any_call: bool,
    /// `order: exact`: any call that moved is asserted.
    pub exact_order: bool,
    /// `reply` or `output` is asserted (the recording holds no program output, and a
    /// program's output is usually made of the reply).
    pub reply: bool,
}

/// What a turn asserts about one tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolScope {
    /// Named in `calls` in `subsequence` or `exact` order: its position matters.
    pub ordered: bool,
    /// The argument paths its matchers check (segments; `[]` is all the arguments).
    pub paths: Vec<Vec<String>>,
    /// A matcher uses `schema_valid`: the tool's schema matters.
    pub schema: bool,
}

impl Asserted {
    /// Nothing asserted: every change is incidental.
    #[cfg(test)]
    pub fn none() -> Asserted {
        Asserted::default()
    }

    /// No spec: every change in what the agent did counts as asserted.
    pub fn everything() -> Asserted {
        Asserted {
            everything: true,
            ..Asserted::default()
        }
    }

    fn scope(&self, turn: usize) -> &Scope {
        self.turns.get(turn).unwrap_or(&self.rest)
    }

    /// A call to `tool` added or removed in `turn`.
    pub fn presence(&self, turn: usize, tool: &str) -> bool {
        let s = self.scope(turn);
        self.everything || s.any_call || s.tools.contains_key(tool)
    }

    /// A call to `tool` that moved in `turn`.
    pub fn position(&self, turn: usize, tool: &str) -> bool {
        let s = self.scope(turn);
        self.everything || s.exact_order || s.tools.get(tool).is_some_and(|t| t.ordered)
    }

    /// An argument of a call to `tool` changed at `path`: asserted when a matcher checks
    /// that path, a prefix of it (the value around it), or a path under it (the change
    /// replaced what the matcher checks).
    pub fn argument(&self, turn: usize, tool: &str, path: &[String]) -> bool {
        self.everything
            || self.scope(turn).tools.get(tool).is_some_and(|t| {
                t.paths
                    .iter()
                    .any(|p| path.starts_with(p) || p.starts_with(path))
            })
    }

    /// The reply of `turn` changed.
    pub fn reply(&self, turn: usize) -> bool {
        self.everything || self.scope(turn).reply
    }

    /// The schema of `tool` changed: asserted when any `schema_valid` matcher checks it.
    pub fn schema(&self, tool: &str) -> bool {
        self.turns
            .iter()
            .chain([&self.rest])
            .any(|s| s.tools.get(tool).is_some_and(|t| t.schema))
    }
}
