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
    /// Serve named the cassette (from a directory and the test's name), so no other test
    /// of the session may have it.
    pub(super) derived: bool,
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

/// The session's mode: the one asked, else replay under CI and auto elsewhere. Under CI a
/// configuration (`from`) may not choose a mode that records.
pub(super) fn session_mode(
    asked: Option<Mode>,
    from: Option<&str>,
    ci: bool,
) -> crate::error::Result<Mode> {
    match (asked, from) {
        (Some(mode), Some(from)) if ci && mode != Mode::Replay => {
            Err(crate::error::Error::CiRecording {
                from: from.to_owned(),
                mode: mode.as_str(),
            })
        }
        (Some(mode), _) => Ok(mode),
        (None, _) if ci => Ok(Mode::Replay),
        (None, _) => Ok(Mode::Auto),
    }
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

/// A test's start request ([`control::Start`]), in the protocol version this binary
/// speaks; a test that names no mode starts in the session's `mode`.
pub(super) fn test_spec(body: &Value, mode: Mode) -> std::result::Result<TestSpec, String> {
    // A client of another version is told so, whatever else it sent.
    let start: control::Start = match control::read("start", body) {
        Ok(start) => start,
        Err(e) => return Err(control::refuse_version(&body["protocol"]).unwrap_or(e)),
    };
    if let Some(why) = control::refuse_version(&start.protocol) {
        return Err(why);
    }
    let non_empty = |key: &str, value: String| match value.is_empty() {
        true => Err(format!("`{key}` must be a non-empty string")),
        false => Ok(value),
    };
    let mode = match start.mode {
        None => mode,
        Some(asked) => Mode::ALL
            .into_iter()
            .find(|m| m.as_str() == asked)
            .ok_or_else(|| {
                format!("unknown mode `{asked}`; expected replay, record, auto or update")
            })?,
    };
    let (match_rules, repeat) = match &start.match_rules {
        None | Some(Value::Null) => Default::default(),
        Some(m) => crate::spec::match_from_json(m)?,
    };
    let (cassette, derived) = match (start.cassette, start.cassette_dir, start.cassette_name) {
        (Some(path), None, None) => (PathBuf::from(non_empty("cassette", path)?), false),
        (None, Some(dir), Some(name)) => (control::cassette_of(&dir, &name), true),
        _ => {
            return Err(
                "give `cassette` (a path), or `cassette_dir` and `cassette_name` (serve names the file)"
                    .to_owned(),
            )
        }
    };
    Ok(TestSpec {
        name: non_empty("name", start.name)?,
        cassette,
        derived,
        mode,
        tools: match &start.mocks {
            None | Some(Value::Null) => Default::default(),
            Some(m) => tools_from_json(m)?,
        },
        match_rules,
        repeat,
        rerecord: match start.rerecord {
            None => None,
            Some(r) if r.is_empty() => return Err(
                "`rerecord` must be a non-empty string (the command that records the test again)"
                    .to_owned(),
            ),
            Some(r) => Some(r),
        },
        runner: match start.runner.as_deref() {
            None => Runner::Cli,
            Some(name) => Runner::named(name).ok_or_else(|| {
                format!("unknown runner \"{name}\"; expected \"pytest\", \"vitest\" or \"jest\"")
            })?,
        },
    })
}

/// Why the test failed in its own code, from an end request ([`control::End`]; an empty
/// body is one with no failure).
pub(super) fn failure(body: &Value) -> std::result::Result<Option<String>, String> {
    if body.is_null() {
        return Ok(None);
    }
    let end: control::End = control::read("end", body)?;
    Ok(end.failure.filter(|f| !f.is_empty()))
}
