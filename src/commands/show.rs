//! `agentproxy show`: print a cassette's trajectory (text or JSON).

use super::revision;
use crate::cli::ShowArgs;
use crate::error::{Exit, Result};
use crate::trajectory;

pub fn run(args: ShowArgs) -> Result<Exit> {
    let cassette = revision::load(&args.cassette)?;
    if args.json {
        print!("{}", trajectory::show_json(&cassette));
    } else {
        print!("{}", trajectory::show(&cassette));
    }
    Ok(Exit::Ok)
}
