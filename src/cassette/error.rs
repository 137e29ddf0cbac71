//! What can go wrong reading or writing a cassette file, each with the hint a user needs.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    #[error("failed to read cassette {path}: {source}\n  hint: record one first with `agentproxy record --cassette {path} -- COMMAND`", path = .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("cassette {path} changed on disk while it was in use (it was written in place)\n  hint: a cassette in use is read again as its recordings are served; write a new one beside it and rename it over the old (as agentproxy, git and editors do), then run again", path = .path.display())]
    Changed { path: PathBuf },

    #[error("cassette {path} is not a regular file: it is {what}\n  hint: a cassette is a file written by `agentproxy record`; give the path of one", path = .path.display())]
    NotAFile { path: PathBuf, what: &'static str },

    #[error("cassette {path} is {size} bytes, over the {max}-byte ceiling of a cassette\n  hint: a cassette is JSON written by `agentproxy record`; check the path, or split the recording into several cassettes", path = .path.display())]
    TooLarge { path: PathBuf, size: u64, max: u64 },

    #[error("cassette {path} is broken at line {line}, column {column}: {message}\n  hint: a cassette is JSON written by `agentproxy record`; restore it from version control or re-record it", path = .path.display())]
    Corrupt {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },

    #[error("cassette {path} is invalid at {pointer}: {message}\n  hint: a cassette is JSON written by `agentproxy record`; restore it from version control or re-record it", path = .path.display())]
    Invalid {
        path: PathBuf,
        pointer: String,
        message: String,
    },

    #[error("cassette {path} has format {found}, but this agentproxy reads formats {oldest}.x to {supported}.x\n  hint: {hint}", path = .path.display())]
    Version {
        path: PathBuf,
        found: String,
        oldest: u32,
        supported: u32,
        hint: &'static str,
    },

    #[error("refusing to write cassette {path}: the value at {pointer} looks like a {kind}\n  hint: secrets must never reach a cassette; export the key in a variable whose name contains KEY, TOKEN or SECRET so agentproxy can replace it with ${{NAME}}", path = .path.display())]
    Secret {
        path: PathBuf,
        pointer: String,
        kind: &'static str,
    },

    #[error("failed to write cassette {path}: {source}", path = .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("refusing to write cassette {path}: {why}\n  hint: give --cassette (or the spec's `cassettes:`) a path to a regular file, or to none yet", path = .path.display())]
    Refused { path: PathBuf, why: String },

    #[error("refusing to write cassette {path}: it exists and is not a cassette this agentproxy reads ({why}); it is left as it is\n  hint: a cassette that broke (a merge conflict, a cut-off copy) can be restored (`git checkout -- {path}`) or deleted to record anew; anything else: give --cassette another path", path = .path.display())]
    NotACassette { path: PathBuf, why: String },

    #[error("cassette {path} cannot be written: {source}\n  hint: the program was not started; make its directory writable or choose another --cassette", path = .path.display())]
    Unwritable {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("cassette {path} is being written by another agentproxy (it holds the lock {lock})\n  hint: wait for that run to finish, or record to another path", path = .path.display(), lock = .lock.display())]
    Locked { path: PathBuf, lock: PathBuf },
}
