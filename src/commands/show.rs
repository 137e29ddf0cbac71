//! `agentproxy show`: print a cassette's trajectory (text, JSON or an HTML page).

use super::revision;
use crate::cli::{ShowArgs, ShowFormat};
use crate::error::{Exit, Result};
use crate::report::html;
use crate::trajectory;

pub fn run(args: ShowArgs) -> Result<Exit> {
    let cassette = revision::load(&args.cassette)?;
    let format = if args.json {
        ShowFormat::Json
    } else {
        args.format
    };
    match format {
        ShowFormat::Text => print!("{}", trajectory::show(&cassette)),
        ShowFormat::Json => print!("{}", trajectory::show_json(&cassette)),
        ShowFormat::Html => {
            let name = args.cassette.display().to_string();
            print!(
                "{}",
                html::show::render(&name, &trajectory::show::read(&cassette))
            );
        }
    }
    Ok(Exit::Ok)
}
