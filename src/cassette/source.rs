//! The file a large cassette's bodies are read from when they are used.
//!
//! A replay looks recordings up by key and digest, which load into memory; the bodies
//! (most of a cassette's bytes, and most never read in a run that serves requests
//! byte-identical to their recordings) stay in the file, read again from the page cache
//! when one is used. The file is kept open: a cassette replaced on disk (written anew and
//! renamed, as agentproxy, git and most editors write) is still read as it was loaded; one
//! changed in place (truncated and written again, as `cp` does) is found out on the next
//! read, by its size and modification time, and refused rather than read as something
//! else.

use std::fs::File;
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::error::CassetteError;

/// An open cassette file and what it was when it was loaded.
#[derive(Debug)]
pub struct Source {
    file: File,
    path: PathBuf,
    stamp: Stamp,
}

/// What changes when a file is written in place: its size and its modification time (to
/// the nanosecond where the file system keeps it). Not its status-change time, which a
/// file replaced by a rename gets too (its link count falls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: (i64, i64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            len: meta.size(),
            modified: (meta.mtime(), meta.mtime_nsec()),
        }
    }
}

impl Source {
    /// `file`, opened from `path` (which names it in errors), as it is now.
    pub fn new(file: File, path: &Path) -> std::io::Result<Source> {
        let stamp = Stamp::of(&file.metadata()?);
        Ok(Source {
            file,
            path: path.to_owned(),
            stamp,
        })
    }

    /// The size of the file when it was loaded.
    pub fn len(&self) -> u64 {
        self.stamp.len
    }

    /// The `len` bytes at `at`, read while the file is still as it was loaded.
    pub fn read(&self, at: u64, len: usize) -> Result<Bytes, CassetteError> {
        let mut out = vec![0u8; len];
        self.read_into(at, &mut out)?;
        Ok(Bytes::from(out))
    }

    /// Fill `buf` with the bytes at `at`; checked after the read, so a write before or
    /// during it is found out.
    pub fn read_into(&self, at: u64, buf: &mut [u8]) -> Result<(), CassetteError> {
        let read = self.file.read_exact_at(buf, at);
        let now = self.file.metadata().map(|m| Stamp::of(&m));
        match (read, now) {
            (Ok(()), Ok(now)) if now == self.stamp => Ok(()),
            (Err(source), _) | (_, Err(source))
                if source.kind() != std::io::ErrorKind::UnexpectedEof =>
            {
                Err(CassetteError::Read {
                    path: self.path.clone(),
                    source,
                })
            }
            _ => Err(CassetteError::Changed {
                path: self.path.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_was_loaded_and_refuses_a_file_changed_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        std::fs::write(&path, b"0123456789").unwrap();
        let source = Source::new(File::open(&path).unwrap(), &path).unwrap();
        assert_eq!(source.len(), 10);
        assert_eq!(&source.read(2, 3).unwrap()[..], b"234");
        assert!(matches!(
            source.read(8, 5),
            Err(CassetteError::Changed { .. })
        ));
        // Replaced (a new file renamed over it): the open file is still the one loaded.
        let new = dir.path().join("new.json");
        std::fs::write(&new, b"abcdefghij").unwrap();
        std::fs::rename(&new, &path).unwrap();
        assert_eq!(&source.read(0, 4).unwrap()[..], b"0123");
        // Written in place, even to the same size: refused, with the path. (The time is
        // set as well: a write within the clock's tick of the load keeps its times.)
        let source = Source::new(File::open(&path).unwrap(), &path).unwrap();
        std::fs::write(&path, b"ABCDEFGHIJ").unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_modified(later).unwrap();
        let err = source.read(0, 4).unwrap_err();
        assert!(matches!(err, CassetteError::Changed { .. }), "{err}");
        assert!(err.to_string().contains("c.json"), "{err}");
    }
}
