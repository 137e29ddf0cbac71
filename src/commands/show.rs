//! `agentproxy show`: print a cassette's trajectory (text, JSON or an HTML page).

use super::{output, revision};
use crate::cli::{ShowArgs, ShowFormat};
use crate::error::{Exit, Result};
use crate::report::html;
use crate::trajectory::show;

pub fn run(args: ShowArgs) -> Result<Exit> {
    let cassette = revision::load(&args.cassette)?;
    let format = if args.json {
        ShowFormat::Json
    } else {
        args.format
    };
    // Text and JSON are written a step at a time as they are read; the page needs the
    // whole trajectory (its totals come first), read before the cassette is let go.
    match format {
        ShowFormat::Text => output::stream(|out| show::write_text(&cassette, out))?,
        ShowFormat::Json => output::stream(|out| show::write_json(&cassette, out))?,
        ShowFormat::Html => {
            let shown = show::read(&cassette);
            drop(cassette);
            output::print(&html::show::render(
                &args.cassette.display().to_string(),
                &shown,
            ))?
        }
    }
    Ok(Exit::Ok)
}
