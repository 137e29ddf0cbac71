//! The one writer of a cassette path: checked and locked before the program starts, so a
//! recording is never thrown away at the end for a reason that was knowable at the start.
//!
//! - A path that exists and is not a regular file (a device, a FIFO, a directory) is
//!   refused (and `store::open_writer` refuses a file that is not a cassette). A symlink
//!   is written through: its target is replaced and the link kept, so a cassette shared by
//!   a link stays shared. A dangling symlink is refused.
//! - An advisory lock (`flock` on `.NAME.lock` beside the cassette) is held for the
//!   writer's lifetime: a second writer of the same path fails at once. The kernel drops
//!   the lock when the process dies, so a SIGKILLed writer never blocks the next one.
//! - The directory is probed for writing at open.
//! - A new cassette gets `0666` minus the umask, as any new file; a replaced one keeps its
//!   mode.
//! - Writes are atomic (temp file, fsync, rename, fsync of the directory). Temp files of
//!   our own naming (`.NAME.*.tmp`) left by a killed writer are removed under the lock.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::error::CassetteError;
use super::format::Cassette;
use crate::redact;

/// Length of the random part of a temp file's name.
const TEMP_RANDOM: usize = 6;

/// Mode of a new cassette before the umask: what any program's new file gets.
const NEW_FILE_MODE: u32 = 0o666;

/// Serialize a cassette: pretty JSON, LF endings, trailing newline.
pub fn to_bytes(cassette: &Cassette) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing plain data with string keys into memory cannot fail.
    let _ = write_to(cassette, &mut out);
    out
}

/// [`to_bytes`] into `out`, as it goes.
fn write_to(cassette: &Cassette, mut out: impl Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut out, cassette)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// The first key-shaped secret in `cassette`, read a part at a time (its head, then each
/// interaction): the whole as one tree would be several times the cassette's size.
fn secret_in(cassette: &Cassette) -> Option<redact::SecretHit> {
    // Serializing plain data with string keys cannot fail.
    let scan = |prefix: String, part: Result<serde_json::Value, serde_json::Error>| {
        redact::scan(&part.unwrap_or_default()).map(|mut hit| {
            hit.pointer.insert_str(0, &prefix);
            hit
        })
    };
    let head = Cassette {
        format: cassette.format.clone(),
        recorder: cassette.recorder.clone(),
        recorded_at: cassette.recorded_at.clone(),
        recorded_by: cassette.recorded_by.clone(),
        upstreams: cassette.upstreams.clone(),
        match_rules: cassette.match_rules.clone(),
        interactions: Vec::new(),
    };
    scan(String::new(), serde_json::to_value(&head)).or_else(|| {
        (cassette.interactions.iter().enumerate())
            .find_map(|(i, it)| scan(format!("/interactions/{i}"), serde_json::to_value(it)))
    })
}

/// Holds the lock on a cassette path until dropped.
#[derive(Debug)]
pub struct Writer {
    /// The path as the user gave it, for messages.
    shown: PathBuf,
    /// The file that is replaced: `shown`, or a symlink's target.
    target: PathBuf,
    lock_path: PathBuf,
    lock: File,
}

impl Writer {
    /// Check that `path` can take a cassette, and lock it.
    pub fn open(path: &Path) -> Result<Writer, CassetteError> {
        let shown = path.to_owned();
        let refuse = |why: String| CassetteError::Refused {
            path: shown.clone(),
            why,
        };
        let unwritable = |source| CassetteError::Unwritable {
            path: shown.clone(),
            source,
        };
        let target = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).map_err(|e| {
                refuse(format!(
                    "it is a symlink whose target cannot be resolved ({e})"
                ))
            })?,
            _ => path.to_owned(),
        };
        match std::fs::metadata(&target) {
            Ok(m) if !m.is_file() => {
                return Err(refuse(format!(
                    "{} exists and is not a regular file ({})",
                    target.display(),
                    kind_of(&m)
                )))
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(unwritable(e)),
        }
        let dir = dir_of(&target).to_owned();
        std::fs::create_dir_all(&dir).map_err(unwritable)?;
        let name = file_name(&target);
        let lock_path = dir.join(format!(".{name}.lock"));
        let lock = lock(&lock_path).map_err(|e| match e {
            LockError::Held => CassetteError::Locked {
                path: shown.clone(),
                lock: lock_path.clone(),
            },
            LockError::Io(source) => unwritable(source),
        })?;
        let writer = Writer {
            shown: path.to_owned(),
            target,
            lock_path,
            lock,
        };
        // Creating a file proves the rename at the end will be allowed; an existing lock
        // file alone does not.
        writer.temp().map_err(unwritable)?;
        writer.remove_stale_temps();
        Ok(writer)
    }

    /// Scan for key-shaped secrets, then replace the cassette atomically, so a crash at any
    /// point leaves either the old cassette or the new one, never a torn file.
    pub fn save(&self, cassette: &Cassette) -> Result<(), CassetteError> {
        if let Some(hit) = secret_in(cassette) {
            return Err(CassetteError::Secret {
                path: self.shown.clone(),
                pointer: hit.pointer,
                kind: hit.kind,
            });
        }
        let write_err = |source| CassetteError::Write {
            path: self.shown.clone(),
            source,
        };
        let tmp = self.temp().map_err(write_err)?;
        if let Ok(old) = std::fs::metadata(&self.target) {
            let mode = old.permissions().mode() & 0o7777;
            std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(mode))
                .map_err(write_err)?;
        }
        write_to(cassette, std::io::BufWriter::new(tmp.as_file())).map_err(write_err)?;
        tmp.as_file().sync_all().map_err(write_err)?;
        tmp.persist(&self.target).map_err(|e| write_err(e.error))?;
        // The rename is durable once the directory is; a failure here loses nothing.
        if let Ok(d) = File::open(dir_of(&self.target)) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// A temp file of our naming beside the target, mode `0666` minus the umask.
    fn temp(&self) -> std::io::Result<tempfile::NamedTempFile> {
        tempfile::Builder::new()
            .prefix(&format!(".{}.", file_name(&self.target)))
            .rand_bytes(TEMP_RANDOM)
            .suffix(".tmp")
            .permissions(std::fs::Permissions::from_mode(NEW_FILE_MODE))
            .tempfile_in(dir_of(&self.target))
    }

    /// Under the lock, every temp file of our naming is a leftover of a killed writer.
    fn remove_stale_temps(&self) {
        let prefix = format!(".{}.", file_name(&self.target));
        let Ok(entries) = std::fs::read_dir(dir_of(&self.target)) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            // Exactly `.NAME.` + the random part + `.tmp`: `.NAME.bak.XXXXXX.tmp` belongs
            // to the writer of `NAME.bak`.
            let ours = (name.strip_prefix(&prefix))
                .and_then(|rest| rest.strip_suffix(".tmp"))
                .is_some_and(|r| {
                    r.len() == TEMP_RANDOM && r.bytes().all(|b| b.is_ascii_alphanumeric())
                });
            if ours {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Remove the lock file only while it is still ours (the same inode we lock).
        if same_file(&self.lock, &self.lock_path) {
            let _ = std::fs::remove_file(&self.lock_path);
        }
    }
}

enum LockError {
    Held,
    Io(std::io::Error),
}

/// Take the exclusive lock on `path`, creating it. A lock file removed by its previous
/// holder between our open and our lock is a stale inode: open again.
fn lock(path: &Path) -> Result<File, LockError> {
    for _ in 0..8 {
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .mode(NEW_FILE_MODE)
            .open(path)
            .map_err(LockError::Io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(LockError::Held),
            Err(std::fs::TryLockError::Error(e)) => return Err(LockError::Io(e)),
        }
        if same_file(&file, path) {
            return Ok(file);
        }
    }
    Err(LockError::Held)
}

fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "cassette".into())
}

fn kind_of(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
