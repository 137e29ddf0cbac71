//! `agentproxy show`: print a cassette's trajectory (text, JSON or an HTML page).

use super::revision;
use crate::cli::{ShowArgs, ShowFormat};
use crate::error::{Exit, Result};
use crate::report::html;
use crate::trajectory;

pub fn run(args: ShowArgs) -> Result<Exit> {
    // What is shown is read, then the cassette let go: rendering holds one copy, not two.
    let shown = trajectory::show::read(&revision::load(&args.cassette)?);
    let format = if args.json {
        ShowFormat::Json
    } else {
        args.format
    };
    let out = match format {
        ShowFormat::Text => trajectory::show::text(&shown),
        ShowFormat::Json => trajectory::show::json(&shown),
        ShowFormat::Html => html::show::render(&args.cassette.display().to_string(), &shown),
    };
    super::output::print(&out)?;
    Ok(Exit::Ok)
}
