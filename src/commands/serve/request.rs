//! What serve reads from a control request: a test's start request as a [`TestSpec`],
//! an end request's failure, and the cassette path it names, kept inside serve's root.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::super::control;
use crate::cassette::CassetteError;
use crate::matching::nearmiss::Runner;
use crate::runner::mocks::tools_from_json;
use crate::spec::{Mode, ToolMock};

/// What a test asked for when it started.
#[derive(Clone)]
pub(super) struct TestSpec {
    pub(super) name: String,
    pub(super) cassette: PathBuf,
    pub(super) mode: Mode,
    pub(super) tools: std::collections::BTreeMap<String, ToolMock>,
    /// Its tolerances (`match`, the spec's grammar).
    pub(super) match_rules: crate::cassette::MatchRules,
    pub(super) repeat: crate::matching::index::Repeat,
    /// The command that records this test again, for the miss report's hint.
    pub(super) rerecord: Option<String>,
    /// The harness that runs it, whose words the hints speak (`Cli` when it names none).
    pub(super) runner: Runner,
}

/// `asked` resolved against `root`, if it stays inside it once the links of the part that
/// exists are followed (a link out of the root is refused like a `..`).
pub(super) fn confined(root: &Path, asked: &Path) -> std::result::Result<PathBuf, String> {
    let joined = path_clean::clean(root.join(asked));
    let mut existing = joined.as_path();
    let mut rest = Vec::new();
    let real = loop {
        match existing.canonicalize() {
            Ok(real) => break real,
            Err(_) => match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_owned());
                    existing = parent;
                }
                _ => break existing.to_owned(),
            },
        }
    };
    let resolved = rest.iter().rev().fold(real, |p, name| p.join(name));
    if resolved.starts_with(root) {
        Ok(joined)
    } else {
        Err(format!(
            "cassette {} is outside serve's root {}; give a path inside it, or start serve with another --root",
            asked.display(),
            root.display()
        ))
    }
}

/// Why a cassette could not be loaded, without quoting the file: a control request may
/// name any file the server can read, and its answer must not show what is in it.
pub(super) fn load_error(e: CassetteError) -> String {
    match e {
        CassetteError::Corrupt {
            path, line, column, ..
        } => format!(
            "cassette {} is not a cassette: not JSON, or not the cassette format, at line {line}, column {column}",
            path.display()
        ),
        CassetteError::Invalid { path, pointer, .. } => {
            format!("cassette {} is invalid at {pointer}", path.display())
        }
        CassetteError::Version { path, supported, .. } => format!(
            "cassette {} has a format this agentproxy does not read (it reads {supported}.x)",
            path.display()
        ),
        other => other.to_string(),
    }
}

/// Why the test failed in its own code, from an end request's `{"failure": "…"}`.
pub(super) fn failure(body: &Value) -> Option<&str> {
    body["failure"].as_str().filter(|f| !f.is_empty())
}

/// A test's start request: `{"protocol", "name", "cassette", "mode", "mocks"?, "match"?,
/// "rerecord"?, "runner"?}`, in the protocol version this binary speaks.
pub(super) fn test_spec(body: &Value) -> std::result::Result<TestSpec, String> {
    if let Some(why) = control::refuse_version(&body["protocol"]) {
        return Err(why);
    }
    let text = |key: &str| {
        body[key]
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("`{key}` must be a non-empty string"))
    };
    let mode = text("mode")?;
    let mode = Mode::ALL
        .into_iter()
        .find(|m| m.as_str() == mode)
        .ok_or_else(|| format!("unknown mode `{mode}`; expected replay, record, auto or update"))?;
    let (match_rules, repeat) = match &body["match"] {
        Value::Null => Default::default(),
        m => crate::spec::match_from_json(m)?,
    };
    Ok(TestSpec {
        name: text("name")?.to_owned(),
        cassette: PathBuf::from(text("cassette")?),
        mode,
        tools: match body.get("mocks") {
            None | Some(Value::Null) => Default::default(),
            Some(m) => tools_from_json(m)?,
        },
        match_rules,
        repeat,
        rerecord: match &body["rerecord"] {
            Value::Null => None,
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            _ => return Err(
                "`rerecord` must be a non-empty string (the command that records the test again)"
                    .to_owned(),
            ),
        },
        runner: match &body["runner"] {
            Value::Null => Runner::Cli,
            v => v.as_str().and_then(Runner::named).ok_or_else(|| {
                format!("unknown runner {v}; expected \"pytest\", \"vitest\" or \"jest\"")
            })?,
        },
    })
}
