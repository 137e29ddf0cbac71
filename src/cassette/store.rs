//! Reading cassette files, with a version check; writing goes through [`Writer`].

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use serde::Deserialize;

use super::error::CassetteError;
use super::format::{parse_major, Cassette, FORMAT_MAJOR, OLDEST_MAJOR};
use super::source::Source;
pub use super::writer::{to_bytes, Writer};
use super::{lazy, parts, validate};

/// The largest cassette read, in bytes: far above any real recording (10,000 agent-like
/// interactions take 174 MB), far below a machine's memory.
pub const MAX_CASSETTE: u64 = 2 << 30;

/// The writer of the cassette at `path` ([`Writer::open`]), which never replaces a file
/// that is not a cassette this build reads (a committed link to `~/.bashrc`); an empty
/// file is taken.
pub fn open_writer(path: &Path) -> Result<Writer, CassetteError> {
    if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0) {
        if let Err(e) = load(path) {
            let why = e.to_string();
            let why = why.lines().next().unwrap_or_default();
            return Err(CassetteError::NotACassette {
                path: path.to_owned(),
                why: why.to_owned(),
            });
        }
    }
    Writer::open(path)
}

/// From this size on, a cassette's bodies stay in its file, read when used (see
/// [`super::source`]), and it is loaded a window at a time on every core; a smaller one is
/// read whole, its bodies views into its bytes (a file held open per cassette would cost
/// more than it saves, and a run may load many).
const LARGE: u64 = 8 << 20;

/// Load and version-check a cassette.
pub fn load(path: &Path) -> Result<Cassette, CassetteError> {
    let (file, len) = open(path)?;
    if len >= LARGE {
        let source = Source::new(file, path).map_err(|source| CassetteError::Read {
            path: path.to_owned(),
            source,
        })?;
        let source = Arc::new(source);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if let Some(cassette) = parts::load(&source, cores)? {
            check_version(path, &cassette.format)?;
            return checked(path, cassette);
        }
        // Another layout, or broken: parsed in one pass, which also names where it is
        // broken; the bodies still stay in the file.
        let bytes = source.read(0, source.len() as usize)?;
        return lazy::with_file(&source, 0, &bytes, || parse(path, &bytes));
    }
    let bytes = Bytes::from(read(path, file)?);
    // Bodies stay views into the file's bytes, parsed when first used.
    lazy::with_source(&bytes, || parse(path, &bytes))
}

/// The regular file at `path` (links followed), opened, and its size, at most
/// [`MAX_CASSETTE`]. A FIFO, device, socket or directory is refused without being read:
/// it is opened without waiting for a writer, and its type is checked on the open file,
/// so a path swapped after the check is not read either.
fn open(path: &Path) -> Result<(std::fs::File, u64), CassetteError> {
    use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
    let failed = |source| CassetteError::Read {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(failed)?;
    let meta = file.metadata().map_err(failed)?;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else {
        Some("a socket")
    };
    if let Some(what) = what {
        return Err(CassetteError::NotAFile {
            path: path.to_owned(),
            what,
        });
    }
    if meta.len() > MAX_CASSETTE {
        return Err(too_large(path, meta.len()));
    }
    Ok((file, meta.len()))
}

fn too_large(path: &Path, size: u64) -> CassetteError {
    CassetteError::TooLarge {
        path: path.to_owned(),
        size,
        max: MAX_CASSETTE,
    }
}

/// The bytes of `file`, read in one pass, which stops at the ceiling (the file may have
/// grown since it was opened).
fn read(path: &Path, file: std::fs::File) -> Result<Vec<u8>, CassetteError> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    (file.take(MAX_CASSETTE + 1))
        .read_to_end(&mut bytes)
        .map_err(|source| CassetteError::Read {
            path: path.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > MAX_CASSETTE {
        return Err(too_large(path, bytes.len() as u64));
    }
    Ok(bytes)
}

/// Parse cassette bytes; `path` only names the file in errors.
///
/// A well-formed cassette is parsed once, then its version checked. Only when that parse
/// fails is the document read again for its `format` alone: a newer major may not fit this
/// model at all, and "upgrade agentproxy" is a better message than a schema error. (Reading
/// the version first cost a second pass over the file on every start: a third of the
/// start-up time of a large cassette.)
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Cassette, CassetteError> {
    #[derive(Deserialize)]
    struct Head {
        format: Option<String>,
    }
    let corrupt = |e: serde_json::Error| CassetteError::Corrupt {
        path: path.to_owned(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    };
    let full_err = match serde_json::from_slice::<Cassette>(bytes) {
        Ok(cassette) => {
            check_version(path, &cassette.format)?;
            return checked(path, cassette);
        }
        Err(e) => e,
    };
    let head: Head = serde_json::from_slice(bytes).map_err(corrupt)?;
    let found = head.format.ok_or_else(|| CassetteError::Corrupt {
        path: path.to_owned(),
        line: 1,
        column: 1,
        message: "missing field `format`".into(),
    })?;
    check_version(path, &found)?;
    Err(corrupt(full_err))
}

/// `cassette` once [`validate::check`] passed it.
fn checked(path: &Path, cassette: Cassette) -> Result<Cassette, CassetteError> {
    validate::check(&cassette).map_err(|e| CassetteError::Invalid {
        path: path.to_owned(),
        pointer: e.pointer,
        message: e.message,
    })?;
    Ok(cassette)
}

/// Refuse a cassette whose major version this build does not read.
fn check_version(path: &Path, found: &str) -> Result<(), CassetteError> {
    let hint = match parse_major(found) {
        Some(major) if (OLDEST_MAJOR..=FORMAT_MAJOR).contains(&major) => return Ok(()),
        Some(major) if major > FORMAT_MAJOR => {
            "it was written by a newer agentproxy; upgrade agentproxy to replay it"
        }
        _ => "this is not a format agentproxy has written; re-record the cassette",
    };
    Err(CassetteError::Version {
        path: path.to_owned(),
        found: found.to_owned(),
        oldest: OLDEST_MAJOR,
        supported: FORMAT_MAJOR,
        hint,
    })
}

/// Write `cassette` to `path` at once: [`Writer::open`] then [`Writer::save`]. A command
/// that runs a program opens its writer before the program starts instead.
pub fn save(path: &Path, cassette: &Cassette) -> Result<(), CassetteError> {
    Writer::open(path)?.save(cassette)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::cassette::format::{format_version, MatchRules, Upstreams};

    /// A cassette with no interactions, for the cassette module's tests.
    pub(crate) fn empty() -> Cassette {
        Cassette {
            format: format_version(),
            recorder: "agentproxy test".into(),
            recorded_at: "2026-01-01T00:00:00Z".into(),
            recorded_by: None,
            upstreams: Upstreams(std::collections::BTreeMap::from([
                ("openai".into(), "http://127.0.0.1:1".into()),
                ("anthropic".into(), "http://127.0.0.1:2".into()),
            ])),
            match_rules: MatchRules::default(),
            interactions: vec![],
        }
    }

    #[test]
    fn round_trips_and_ends_with_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/c.json");
        save(&path, &empty()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.ends_with(b"}\n"));
        assert!(!bytes.contains(&b'\r'));
        let back = load(&path).unwrap();
        assert_eq!(back.upstreams, empty().upstreams);
    }

    #[test]
    fn truncated_file_reports_position() {
        let full = to_bytes(&empty());
        let cut = &full[..full.len() / 2];
        let err = parse(Path::new("c.json"), cut).unwrap_err();
        match err {
            CassetteError::Corrupt { line, .. } => assert!(line > 1),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn newer_major_is_refused_with_upgrade_hint() {
        let err = parse(Path::new("c.json"), br#"{"format":"3.0","whatever":true}"#).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("format 3.0"), "{msg}");
        assert!(msg.contains("reads formats 1.x to 2.x"), "{msg}");
        assert!(msg.contains("upgrade agentproxy"), "{msg}");
    }

    #[test]
    fn newer_major_that_fits_the_model_is_still_refused() {
        let mut v = serde_json::to_value(empty()).unwrap();
        v["format"] = "3.1".into();
        let err = parse(Path::new("c.json"), &serde_json::to_vec(&v).unwrap()).unwrap_err();
        assert!(err.to_string().contains("upgrade agentproxy"), "{err}");
        v["format"] = "0.9".into();
        let err = parse(Path::new("c.json"), &serde_json::to_vec(&v).unwrap()).unwrap_err();
        assert!(err.to_string().contains("re-record"), "{err}");
    }

    #[test]
    fn schema_error_in_a_current_cassette_names_its_position() {
        let err = parse(
            Path::new("c.json"),
            b"{\"format\": \"1.0\",\n \"interactions\": 5}",
        )
        .unwrap_err();
        match err {
            CassetteError::Corrupt { line, .. } => assert_eq!(line, 2),
            other => panic!("unexpected {other:?}"),
        }
        let err = parse(Path::new("c.json"), b"{\"interactions\": []}").unwrap_err();
        assert!(err.to_string().contains("missing field `format`"), "{err}");
    }

    #[test]
    fn newer_minor_with_unknown_fields_loads() {
        let mut v = serde_json::to_value(empty()).unwrap();
        v["format"] = "1.7".into();
        v["added_later"] = serde_json::json!({"x": 1});
        let c = parse(Path::new("c.json"), &serde_json::to_vec(&v).unwrap()).unwrap();
        assert_eq!(c.format, "1.7");
    }
}
