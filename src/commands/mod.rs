//! One module per command: glue between the CLI, the proxy and the files.

mod control;
pub mod diff;
pub mod docs;
pub mod doctor;
pub mod export;
pub mod mcp;
mod output;
pub mod record;
pub mod replay;
pub mod report;
mod revision;
pub mod serve;
mod session;
pub mod show;
mod summary;
pub mod test;

use crate::cli::{Cli, Command};
use crate::error::{Exit, Result};

/// Run the parsed command line; how it came out (see [`crate::error::exit_code`]).
pub async fn run(cli: Cli) -> Result<Exit> {
    match cli.command {
        Command::Record(args) => record::run(args).await,
        Command::Replay(args) => replay::run(args).await,
        Command::Test(args) => test::run(args).await,
        Command::Diff(args) => diff::run(args),
        Command::Show(args) => show::run(args),
        Command::Doctor(args) => doctor::run(args).await,
        Command::Docs(args) => docs::run(args),
        Command::Report(command) => report::run(command),
        Command::Export(args) => export::run(args).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Mcp(args) => mcp::run(args).await,
    }
}
