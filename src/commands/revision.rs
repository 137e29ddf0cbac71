//! A cassette named on the command line of `show` and `diff`: a file, or, when no file has
//! that name, `REVISION:PATH` read from git (`HEAD:cassettes/x.json`, `main~1:…`), as
//! `git show` names a file at a revision.

use std::path::Path;
use std::process::Command;

use crate::cassette::{store, Cassette};
use crate::error::{Error, Result};

/// The cassette at `arg`. Nothing here records, so a missing file's error says what to
/// check, not what to record.
pub fn load(arg: &Path) -> Result<Cassette> {
    match (arg.symlink_metadata(), git_spec(arg)) {
        (Err(_), Some(spec)) => {
            let bytes = git_blob(spec)?;
            Ok(store::parse(arg, &bytes)?)
        }
        (Err(e), None) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::NoCassette {
            path: arg.to_owned(),
        }),
        _ => Ok(store::load(arg)?),
    }
}

/// `arg` as `REVISION:PATH`, when it has that shape.
fn git_spec(arg: &Path) -> Option<&str> {
    let text = arg.to_str()?;
    let (revision, path) = text.split_once(':')?;
    (!revision.is_empty() && !path.is_empty() && !revision.contains('/')).then_some(text)
}

/// The blob git has at `spec`, at most [`store::MAX_CASSETTE`] bytes, as a file would be.
fn git_blob(spec: &str) -> Result<Vec<u8>> {
    let failed = |why: String| Error::GitCassette {
        spec: spec.to_owned(),
        why,
    };
    let git = |args: &[&str]| -> Result<Vec<u8>> {
        let out = Command::new("git")
            .args(args)
            .output()
            .map_err(|e| failed(format!("cannot run git: {e}")))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let why = stderr.trim().trim_start_matches("fatal: ");
            return Err(failed(if why.is_empty() {
                format!("git exited with {}", out.status)
            } else {
                why.to_owned()
            }));
        }
        Ok(out.stdout)
    };
    let size = String::from_utf8_lossy(&git(&["cat-file", "-s", spec])?)
        .trim()
        .parse::<u64>()
        .map_err(|e| failed(format!("git gave no size: {e}")))?;
    if size > store::MAX_CASSETTE {
        return Err(failed(format!(
            "it is {size} bytes, over the {}-byte ceiling of a cassette",
            store::MAX_CASSETTE
        )));
    }
    git(&["cat-file", "blob", spec])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_and_a_path_are_a_git_spec() {
        fn spec(s: &str) -> Option<&str> {
            git_spec(Path::new(s))
        }
        assert_eq!(spec("HEAD:cassettes/x.json"), Some("HEAD:cassettes/x.json"));
        assert_eq!(spec("main~1:x.json"), Some("main~1:x.json"));
        assert_eq!(spec("cassettes/x.json"), None);
        assert_eq!(
            spec("./dir:name/x.json"),
            None,
            "a path with a colon in a directory"
        );
        assert_eq!(spec(":x.json"), None);
        assert_eq!(spec("HEAD:"), None);
    }
}
