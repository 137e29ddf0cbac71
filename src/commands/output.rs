//! What `test` and `report merge` share: a run report written in each format asked for.

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
            None => print!("{text}"),
        }
    }
    Ok(())
}
