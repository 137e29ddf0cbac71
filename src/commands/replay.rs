//! `agentproxy replay`: serve a cassette with no network, report misses and unused recordings.

use std::time::SystemTime;

use crate::cassette::{age, store};
use crate::cli::ReplayArgs;
use crate::error::{Exit, Result, EXIT_OK};
use crate::matching;
use crate::proxy::{Options, Replay};
use crate::redact::Secrets;

use super::session;

/// Unused recordings listed by name without `-v`.
const UNUSED_SHOWN: usize = 10;

pub async fn run(args: ReplayArgs) -> Result<Exit> {
    let s = &args.session;
    let mut cassette = store::load(&s.cassette)?;
    let stale = (args.max_age)
        .and_then(|max| age::stale(&s.cassette, &cassette.recorded_at, max, SystemTime::now()));
    if let Some(warning) = stale.filter(|_| !s.quiet) {
        eprintln!("agentproxy: warning: {warning}");
    }
    let flags = session::flag_rules(s);
    let match_rules = cassette.match_rules.merged(&flags);
    let rules = session::compile_rules(&match_rules)?;
    if match_rules != cassette.match_rules {
        // New tolerance changes what a key covers: recompute the recorded keys to match.
        matching::rekey(&mut cassette.interactions, &rules);
    }
    let total = cassette.interactions.len();
    let options = Options {
        rules,
        secrets: Secrets::from_vars(std::env::vars()),
        max_body: s.max_body_size,
        upstream: None,
        replay: Some(Replay::new(
            cassette.interactions,
            args.repeat,
            args.realtime,
        )),
        print_misses: !s.quiet,
        mocks: None,
        log_exchanges: false,
        mcp_http: args.session.mcp.iter().cloned().collect(),
        faults: crate::fault::Plan {
            case: args.session.fault.clone(),
            turns: vec![],
        },
        fuzz: None,
        crash: None,
    };
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
        .iter()
        .filter(|f| !f.kind.spoils_tool_call())
        .count();
    let served = out.requests.saturating_sub(missed + replaced);
    if !s.quiet {
        for line in session::fault_lines(out) {
            eprintln!("{line}");
        }
        eprintln!(
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
            eprintln!("agentproxy:   unused {line}");
        }
        if out.unused.len() > shown {
            eprintln!(
                "agentproxy:   … and {} more unused (-v lists them all, --json too)",
                out.unused.len() - shown
            );
        }
    }
    if s.quiet {
        // Quiet still says why the run failed: one line per miss.
        for miss in &out.misses {
            let first = miss.lines().next().unwrap_or_default();
            eprintln!("agentproxy: miss: {first}");
        }
    }
    let exit = match ended.child {
        Some(c) if c != EXIT_OK => Exit::Program(c),
        _ if missed > 0 => Exit::Failed,
        _ => Exit::Ok,
    };
    if s.json {
        let summary = serde_json::json!({
            "command": "replay",
            "cassette": s.cassette,
            "interactions": total,
            "served": served,
            "misses": out.misses,
            "unused": out.unused,
            "faults": out.faults,
            "fault_problems": out.fault_problems,
            "program_exit": ended.child,
            "exit_code": exit.code(),
        });
        println!("{summary}");
    }
    Ok(exit)
}
