//! What a comparison found: the values that differed, the spec changes that would make
//! them stable, and those changes written as spec YAML.

use std::fmt::Write as _;

use serde_json::Value;

/// One value that differed between the two runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Difference {
    pub(crate) route: String,
    pub(crate) turn: Option<usize>,
    /// The request's 1-based position among the requests of its route and turn.
    pub(crate) call: usize,
    /// JSON pointer segments; empty for a whole request present in one run only.
    pub(crate) pointer: Vec<String>,
    pub(crate) first: Option<Value>,
    pub(crate) second: Option<Value>,
    /// Index into [`Findings::fixes`]; `None` for a request present in one run only.
    pub(crate) fix: Option<usize>,
}

impl Difference {
    pub(crate) fn pointer(&self) -> String {
        pointer_string(&self.pointer)
    }

    /// `openai.chat call 2 of turn 1` (turns counted from 1, like reports).
    pub(crate) fn request_label(&self) -> String {
        match self.turn {
            Some(t) => format!("{} call {} of turn {}", self.route, self.call, t + 1),
            None => format!("{} call {}", self.route, self.call),
        }
    }
}

/// A spec change that would make differences stable.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Fix {
    /// `tools.<tool>`: mock the tool with what it returned in run 1, by call occurrence.
    Mock { tool: String, results: Vec<Value> },
    /// `match.holes`: `{name, regex, in?}`.
    Hole {
        name: String,
        regex: String,
        within: Option<String>,
    },
    /// `match.ignore`: a pointer, `*` where the array index varied.
    Ignore { pointer: String },
}

impl Fix {
    /// One line of spec YAML, e.g. `match.holes: {name: date, regex: '\d{4}-…'}`.
    pub(crate) fn one_line(&self) -> String {
        match self {
            Fix::Mock { tool, .. } => format!("tools.{tool}: {}", mock_body_flow(self)),
            Fix::Hole { .. } => format!("match.holes: {}", hole_flow(self)),
            Fix::Ignore { pointer } => format!("match.ignore: {}", yaml_quote(pointer)),
        }
    }
}

/// Everything the comparison found.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Findings {
    pub(crate) differences: Vec<Difference>,
    pub(crate) fixes: Vec<Fix>,
}

impl Findings {
    pub(crate) fn is_stable(&self) -> bool {
        self.differences.is_empty()
    }

    /// The fixes as a spec fragment (`match:` and `tools:` blocks), ready to paste.
    pub(crate) fn spec_yaml(&self) -> String {
        let mut holes = vec![];
        let mut ignores = vec![];
        let mut mocks = vec![];
        for f in &self.fixes {
            match f {
                Fix::Hole { .. } => holes.push(format!("    - {}", hole_flow(f))),
                Fix::Ignore { pointer } => ignores.push(format!("    - {}", yaml_quote(pointer))),
                Fix::Mock { tool, results } => {
                    let what = if results.len() == 1 {
                        "result"
                    } else {
                        "results"
                    };
                    mocks.push(format!(
                        "  {tool}:   # what the program's tool returned in run 1\n    {what}: {}",
                        mock_value_flow(results)
                    ));
                }
            }
        }
        let mut out = String::new();
        if !holes.is_empty() || !ignores.is_empty() {
            out.push_str("match:\n");
            if !holes.is_empty() {
                let _ = writeln!(out, "  holes:\n{}", holes.join("\n"));
            }
            if !ignores.is_empty() {
                let _ = writeln!(out, "  ignore:\n{}", ignores.join("\n"));
            }
        }
        if !mocks.is_empty() {
            let _ = writeln!(out, "tools:\n{}", mocks.join("\n"));
        }
        out
    }
}

/// A JSON pointer from its segments (`~` and `/` escaped).
pub(crate) fn pointer_string(segments: &[String]) -> String {
    segments
        .iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// A YAML single-quoted scalar (backslashes stay literal, as a regex wants).
fn yaml_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn hole_flow(f: &Fix) -> String {
    let Fix::Hole {
        name,
        regex,
        within,
    } = f
    else {
        return String::new();
    };
    let mut s = format!("{{name: {name}, regex: {}", yaml_quote(regex));
    if let Some(p) = within {
        let _ = write!(s, ", in: {}", yaml_quote(p));
    }
    s.push('}');
    s
}

fn mock_body_flow(f: &Fix) -> String {
    let Fix::Mock { results, .. } = f else {
        return String::new();
    };
    let what = if results.len() == 1 {
        "result"
    } else {
        "results"
    };
    format!("{{{what}: {}}}", mock_value_flow(results))
}

/// JSON is YAML flow syntax, so a mock value is written as JSON.
fn mock_value_flow(results: &[Value]) -> String {
    match results {
        [one] => serde_json::to_string(one).unwrap_or_default(),
        many => serde_json::to_string(many).unwrap_or_default(),
    }
}
