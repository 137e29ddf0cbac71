//! Spec errors: each says the file, line and column, what is wrong, and how to fix it.

use std::fmt;
use std::path::PathBuf;

use super::yaml::Pos;

/// Everything that can be wrong with a spec or with the settings around it. Every variant
/// is a configuration error: exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file (or a directory given as a spec) could not be read.
    #[error("failed to read spec {}: {source}{}", path.display(), hint_line(hint.as_deref()))]
    Read {
        path: PathBuf,
        source: std::io::Error,
        hint: Option<String>,
    },

    /// The directories given as specs hold no `*.yaml` or `*.yml` file (and no file was
    /// named).
    #[error("no spec in {}: {} no *.yaml or *.yml file", dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "), if dirs.len() == 1 { "it has" } else { "they have" })]
    NoSpecs { dirs: Vec<PathBuf> },

    /// The text is not valid YAML, or is valid YAML but not a valid spec.
    #[error("{}", Invalid { file, at: *at, message, hint: hint.as_deref() })]
    Invalid {
        file: PathBuf,
        /// `None` only for a YAML syntax error the parser could not place.
        at: Option<Pos>,
        /// What is wrong; one line, lowercase.
        message: String,
        /// How to fix it, printed on its own line as `  hint: ...`.
        hint: Option<String>,
    },

    /// Under `CI`, a spec or the environment asks for a mode that may call the real model.
    #[error("CI is set, and {from} asks for mode `{mode}`, which may call the real model from CI\n  hint: in CI only the command line may choose a mode that records: pass --mode replay (or remove it from the spec), or --mode {mode} if this job is meant to record")]
    CiRecords { from: String, mode: &'static str },

    /// Several of the above, from independent parts of one spec or from several specs:
    /// a run reports every one it found (the first [`MAX_SHOWN`]), not just the first.
    #[error("{}", many(errors))]
    Many { errors: Vec<SpecError> },

    /// An `AGENTPROXY_*` variable (or `CI`) holds a value that cannot be used.
    #[error("invalid {var}={value:?}: {message}")]
    Env {
        var: String,
        value: String,
        message: String,
    },
}

/// How many errors of a [`SpecError::Many`] are printed.
pub const MAX_SHOWN: usize = 20;

fn many(errors: &[SpecError]) -> String {
    let mut out = format!("{} errors in the specs:", errors.len());
    for e in errors.iter().take(MAX_SHOWN) {
        out.push('\n');
        out.push_str(&e.to_string());
    }
    if errors.len() > MAX_SHOWN {
        out.push_str(&format!("\n… and {} more", errors.len() - MAX_SHOWN));
    }
    out
}

/// Errors gathered while reading the independent parts of a spec (its sections, its
/// cases) or several specs, so that one run reports them all.
#[derive(Debug, Default)]
pub(crate) struct Errors(Vec<SpecError>);

impl Errors {
    /// The value of `r`, or `None` with its error kept.
    pub(crate) fn take<T>(&mut self, r: Result<T, SpecError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.push(e);
                None
            }
        }
    }

    pub(crate) fn push(&mut self, e: SpecError) {
        match e {
            SpecError::Many { errors } => self.0.extend(errors),
            e => self.0.push(e),
        }
    }

    /// `value` when nothing went wrong; otherwise the one error, or all of them.
    pub(crate) fn into_result<T>(mut self, value: T) -> Result<T, SpecError> {
        match self.0.len() {
            0 => Ok(value),
            1 => Err(self.0.remove(0)),
            _ => Err(SpecError::Many { errors: self.0 }),
        }
    }
}

struct Invalid<'a> {
    file: &'a PathBuf,
    at: Option<Pos>,
    message: &'a str,
    hint: Option<&'a str>,
}

impl fmt::Display for Invalid<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(at) = self.at {
            write!(f, ":{at}")?;
        }
        write!(f, ": {}{}", self.message, hint_line(self.hint))
    }
}

fn hint_line(hint: Option<&str>) -> String {
    hint.map(|h| format!("\n  hint: {h}")).unwrap_or_default()
}

/// The candidate closest to `word`, if it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = word.to_lowercase();
    if let Some(c) = candidates.iter().find(|c| c.eq_ignore_ascii_case(word)) {
        return Some(c);
    }
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(&lower, c), *c))
        .filter(|(score, c)| *score >= 0.8 || strsim::damerau_levenshtein(&lower, c) <= 1)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// `a, b, c` for messages that list the accepted values.
pub(crate) fn one_of(candidates: &[&str]) -> String {
    candidates.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_catch_typos_only() {
        let keys = ["name", "input", "turns", "expect", "env", "skip"];
        assert_eq!(did_you_mean("expct", &keys), Some("expect"));
        assert_eq!(did_you_mean("Expect", &keys), Some("expect"));
        assert_eq!(did_you_mean("turn", &keys), Some("turns"));
        assert_eq!(did_you_mean("inputs", &keys), Some("input"));
        assert_eq!(did_you_mean("calls", &keys), None);
        assert_eq!(
            did_you_mean("replay", &["replay", "record", "auto", "update"]),
            Some("replay")
        );
        assert_eq!(
            did_you_mean("replya", &["replay", "record", "auto", "update"]),
            Some("replay")
        );
        assert_eq!(
            did_you_mean("fast", &["replay", "record", "auto", "update"]),
            None
        );
    }

    #[test]
    fn invalid_renders_file_line_column_and_hint() {
        let e = SpecError::Invalid {
            file: "specs/a.yaml".into(),
            at: Some(Pos::new(3, 7)),
            message: "bad".into(),
            hint: Some("fix it".into()),
        };
        assert_eq!(e.to_string(), "specs/a.yaml:3:7: bad\n  hint: fix it");
    }
}
