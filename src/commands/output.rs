//! Standard output for every command, and what `test` and `report merge` share: a run
//! report written in each format asked for.

use std::io::Write;

use crate::error::{Error, Result};
use crate::report::{self, Format, RunReport};

/// Render `run` in each of `formats`, each to the output at its position (stdout without
/// one, or for `-`).
pub(super) fn write_reports(
    formats: &[Format],
    outputs: &[std::path::PathBuf],
    run: &RunReport,
) -> Result<()> {
    for (i, format) in formats.iter().enumerate() {
        let text = report::render(*format, run);
        match outputs.get(i).filter(|p| p.as_os_str() != "-") {
            Some(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|source| Error::ReportDir {
                        dir: dir.to_owned(),
                        source,
                    })?;
                }
                std::fs::write(path, text).map_err(|source| Error::WriteReport {
                    path: path.clone(),
                    source,
                })?
            }
            None => print(&text)?,
        }
    }
    Ok(())
}

/// Write `text` to standard output, as [`stream`] does.
pub(super) fn print(text: &str) -> Result<()> {
    stream(|out| out.write_all(text.as_bytes()))
}

/// Let `write` write to standard output, buffered. A reader that went away (`agentproxy
/// show … | head`) is not an error: what it did not read is dropped, quietly, and the
/// command ends as it would have (its exit code still says how it went).
pub(super) fn stream(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Stdout(e)),
        _ => Ok(()),
    }
}
