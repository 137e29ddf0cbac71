//! Test specs: the YAML model of `agentproxy test`, its loading and validation, and the
//! layering of run settings (CLI > spec > `AGENTPROXY_*` env > defaults).
//!
//! Pure but for [`load`] and [`load_all`], which read files: no process, no network, no
//! `std::env` (settings are read through a closure). Every error in a spec is found at load
//! time and reported as `file:line:column: message`, with a hint where one helps; all of
//! them are configuration errors (exit code 2).
//!
//! The text is parsed by `serde-saphyr` into a tree of nodes that keep their positions
//! (`yaml`); `read` has the typed accessors that turn mismatches into located errors, and
//! `build` and `cases` use them to read the tree into the `model` types.

mod asserted;
mod build;
mod cases;
mod error;
mod model;
mod read;
mod resolve;
mod shard;
mod yaml;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub use asserted::asserted;
pub use error::SpecError;
#[cfg(test)]
pub use model::Pattern;
pub use model::{
    CallExpr, Case, Count, Crash, Expect, Expr, Fuzz, HostPattern, MockKind, MockRule, Mode, Order,
    Pos, ReportFormat, Require, Spec, Target, ToolMock, Turn, Verbosity,
};
pub use resolve::{is_ci, resolve, CliOverrides};
pub use shard::{owner as shard_owner, Shard};

/// Parse and validate the text of a spec. `file` is where it came from: it names the file
/// in errors and anchors the spec's relative paths (`cassettes`, `app.cwd`).
pub fn parse(src: &str, file: &Path) -> Result<Spec, SpecError> {
    let root = yaml::parse(src).map_err(|e| SpecError::Invalid {
        file: file.to_path_buf(),
        at: e.at,
        message: format!("invalid YAML: {}", e.message),
        hint: None,
    })?;
    read::Builder::new(file).spec(&root)
}

/// An `expect:` block given as JSON (a test harness's check through `agentproxy serve`),
/// read by the same rules as in a spec; an error names the block and its place in the
/// JSON text.
pub fn expect_from_json(value: &serde_json::Value) -> Result<Expect, String> {
    let (root, file) = json_node(value, "expect")?;
    let expect = read::Builder::new(&file).expect(&root, "expect");
    expect
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "the expectations are empty (null)".to_owned())
}

/// A `match:` block given as JSON (a test's tolerances through `agentproxy serve`), read
/// by the same rules as in a spec.
pub fn match_from_json(
    value: &serde_json::Value,
) -> Result<(crate::cassette::MatchRules, crate::matching::index::Repeat), String> {
    let (root, file) = json_node(value, "match")?;
    (read::Builder::new(&file).match_block(&root, root.at)).map_err(|e| e.to_string())
}

/// The node tree of a JSON value (JSON is YAML), and the name its errors give as file.
fn json_node(value: &serde_json::Value, what: &str) -> Result<(yaml::Node, PathBuf), String> {
    let text = serde_json::to_string(value).map_err(|e| e.to_string())?;
    let root = yaml::parse(&text).map_err(|e| format!("{what}: {}", e.message))?;
    Ok((root, PathBuf::from(what)))
}

/// Read, parse and validate one spec file.
pub fn load(path: &Path) -> Result<Spec, SpecError> {
    let src = std::fs::read_to_string(path).map_err(|e| read_error(path, e))?;
    parse(&src, path)
}

/// The spec files named by `paths`, and the directories among them that held none.
#[derive(Debug, PartialEq, Eq)]
pub struct SpecFiles {
    /// In order: a file as it is, a directory as its `*.yaml` and `*.yml` files (not
    /// recursive), sorted by name. A file named twice is kept once.
    pub files: Vec<PathBuf>,
    /// Directories with no spec file, skipped (`examples/*/` may match a few).
    pub without_specs: Vec<PathBuf>,
}

/// Find the spec files named by `paths` (see [`SpecFiles`]). A directory without specs is
/// skipped; finding no spec at all is an error.
pub fn spec_files(paths: &[PathBuf]) -> Result<SpecFiles, SpecError> {
    let mut found = SpecFiles {
        files: vec![],
        without_specs: vec![],
    };
    let mut seen = HashSet::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| read_error(path, e))?;
        let files = if meta.is_dir() {
            let mut files = Vec::new();
            for entry in std::fs::read_dir(path).map_err(|e| read_error(path, e))? {
                let entry = entry.map_err(|e| read_error(path, e))?;
                let p = entry.path();
                let is_yaml = p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                    e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml")
                });
                if is_yaml && p.is_file() {
                    files.push(p);
                }
            }
            if files.is_empty() {
                found.without_specs.push(path.clone());
            }
            files.sort();
            files
        } else {
            vec![path.clone()]
        };
        for f in files {
            if seen.insert(f.clone()) {
                found.files.push(f);
            }
        }
    }
    if found.files.is_empty() {
        return Err(SpecError::NoSpecs {
            dirs: found.without_specs,
        });
    }
    Ok(found)
}

/// The specs [`load_all`] read, and the directories it skipped.
#[derive(Debug)]
pub struct Loaded {
    pub specs: Vec<Spec>,
    pub without_specs: Vec<PathBuf>,
}

/// Load every spec named by `paths` (see [`spec_files`]); every spec is read, and the
/// errors of all of them are reported together.
pub fn load_all(paths: &[PathBuf]) -> Result<Loaded, SpecError> {
    let mut errors = error::Errors::default();
    let found = spec_files(paths)?;
    let specs = (found.files.iter())
        .filter_map(|p| errors.take(load(p)))
        .collect();
    errors.into_result(Loaded {
        specs,
        without_specs: found.without_specs,
    })
}

fn read_error(path: &Path, source: std::io::Error) -> SpecError {
    let hint = (source.kind() == std::io::ErrorKind::NotFound).then(|| {
        "`agentproxy test` takes spec files (*.yaml) or directories that hold them".to_owned()
    });
    SpecError::Read {
        path: path.to_path_buf(),
        source,
        hint,
    }
}

/// The cassette file stem of a case name: ASCII letters and digits lowercased, every run
/// of other characters one `-`, none at either end, at most 80 characters
/// (`"Paris: 3-day trip!"` → `paris-3-day-trip`). Non-ASCII letters count as "other", so
/// names stay portable across file systems; a name with no ASCII letter or digit is a
/// load error.
pub fn slug(name: &str) -> String {
    const MAX: usize = 80;
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(MAX);
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// `value` with `${agentproxy.url}` replaced by `url` (the proxy base with `/v1`) and
/// `${agentproxy.base}` by `base` (without it). Other text, other `${...}` included, is
/// kept as it is.
pub fn expand_env_value(value: &str, url: &str, base: &str) -> String {
    value
        .replace("${agentproxy.url}", url)
        .replace("${agentproxy.base}", base)
}

#[cfg(test)]
mod tests;
