//! `agentproxy replay`: serve a cassette with no network, report misses and unused recordings.

use std::time::SystemTime;

use crate::cassette::{age, store};
use crate::cli::ReplayArgs;
use crate::error::{Exit, Result};
use crate::runner::plan::{self, Forwarding, Setup, Use};

use super::session;
use super::summary::{Common, Summary};

/// Unused recordings listed by name without `-v`.
const UNUSED_SHOWN: usize = 10;

pub async fn run(args: ReplayArgs) -> Result<Exit> {
    let s = &args.session;
    let cassette = store::load(&s.cassette)?;
    let stale = (args.max_age)
        .and_then(|max| age::stale(&s.cassette, &cassette.recorded_at, max, SystemTime::now()));
    if let Some(warning) = stale.filter(|_| !s.quiet) {
        tell!("agentproxy: warning: {warning}");
    }
    let total = cassette.interactions.len();
    let setup = Setup {
        repeat: args.repeat,
        realtime: args.realtime,
        ..session::setup(s, Some(cassette), Use::Replay)
    };
    let options = plan::plan(setup, &Forwarding::nowhere(s.max_body_size))?.options;
    let banner = format!(
        "replaying {} ({total} interaction(s)), no network",
        s.cassette.display()
    );
    let ended = session::run(s, options, true, &banner).await?;
    let out = &ended.outcome;
    let missed = out.misses.len();
    // A spoiled tool call was served from its recording; the other faults replaced theirs.
    let replaced = out
        .faults
        .fired
        .iter()
        .filter(|f| !f.kind.spoils_tool_call())
        .count();
    let served = out.requests.saturating_sub(missed + replaced);
    if !s.quiet {
        tell_served(s, out, served, total);
    }
    // Refused traffic fails the run: said even when quiet.
    for line in session::egress_lines(&ended) {
        if !s.quiet || line.refused {
            tell!("{line}");
        }
    }
    if s.quiet {
        // Quiet still says why the run failed: one line per miss.
        for miss in &out.misses {
            let first = miss.lines().next().unwrap_or_default();
            tell!("agentproxy: miss: {first}");
        }
    }
    let (status, program) = session::status(&ended, Use::Replay);
    let exit = Exit::of([status], program);
    if s.json {
        Summary::Replay {
            cassette: &s.cassette,
            interactions: total,
            served,
            misses: &out.misses,
            unused: &out.unused,
            common: Common::of(&ended, exit.code()),
        }
        .print()?;
    }
    Ok(exit)
}

/// What a replay tells on stderr: the faults, what it served and missed, and the
/// recordings it never used (a few by name; all with -v).
fn tell_served(
    s: &crate::cli::SessionArgs,
    out: &crate::proxy::Outcome,
    served: usize,
    total: usize,
) {
    for line in out.faults.lines() {
        tell!("{line}");
    }
    let missed = out.misses.len();
    tell!(
        "agentproxy: served {served} request(s) from {}; {missed} missed; {} of {total} recording(s) unused",
        s.cassette.display(),
        out.unused.len()
    );
    // A few name the pattern; all of them with -v, and in --json.
    let shown = if s.verbose > 0 {
        out.unused.len()
    } else {
        UNUSED_SHOWN
    };
    for line in out.unused.iter().take(shown) {
        tell!("agentproxy:   unused {line}");
    }
    if out.unused.len() > shown {
        tell!(
            "agentproxy:   … and {} more unused (-v lists them all, --json too)",
            out.unused.len() - shown
        );
    }
}
