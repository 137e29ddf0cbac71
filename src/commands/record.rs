//! `agentproxy record`: forward to the upstream, write the cassette when the program exits.

use std::time::SystemTime;

use crate::cassette::format::{format_version, Upstreams};
use crate::cassette::{Cassette, Writer};
use crate::cli::RecordArgs;
use crate::error::{Error, Exit, Result, EXIT_OK};
use crate::proxy::{upstream::Upstream, Options};
use crate::redact::Secrets;

use super::session;

pub async fn run(args: RecordArgs) -> Result<Exit> {
    let s = &args.session;
    let match_rules = session::flag_rules(s);
    let rules = session::compile_rules(&match_rules)?;
    let upstreams = Upstreams {
        openai: args.upstream.clone(),
        anthropic: args.anthropic_upstream.clone(),
        gemini: args.gemini_upstream.clone(),
    };
    let upstream = Upstream::new(&upstreams, args.upstream_timeout)?;
    // Checked and locked before the program starts (or the daemon listens).
    let writer = Writer::open(&s.cassette)?;
    let options = Options {
        rules,
        secrets: Secrets::from_vars(std::env::vars()),
        max_body: s.max_body_size,
        upstream: Some(upstream),
        replay: None,
        print_misses: !s.quiet,
        mocks: None,
        log_exchanges: false,
    };
    let banner = format!(
        "recording to {} via {}",
        s.cassette.display(),
        args.upstream
    );
    let ended = session::run(s, options, false, &banner).await?;
    let out = &ended.outcome;
    let child_failed = ended.child.filter(|c| *c != EXIT_OK);
    if out.recorded.is_empty() {
        if let Some(code) = child_failed {
            eprintln!("agentproxy: the program exited with status {code} before any request was recorded; no cassette written");
            return Ok(Exit::Program(code));
        }
        let mut failures: Vec<String> = (out.upstream_errors.iter())
            .chain(&out.rejected)
            .cloned()
            .collect();
        if failures.is_empty() && out.requests > 0 {
            failures.push(format!(
                "{} request(s) were still waiting for the upstream when agentproxy was stopped",
                out.requests
            ));
        }
        if !failures.is_empty() {
            return Err(Error::NothingRecordable { failures });
        }
        return Err(Error::NothingRecorded {
            injected: ended
                .injected
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let count = out.recorded.len();
    let streamed = out
        .recorded
        .iter()
        .filter(|i| i.response.events.is_some())
        .count();
    let cassette = Cassette {
        format: format_version(),
        recorder: format!("agentproxy {}", env!("CARGO_PKG_VERSION")),
        recorded_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        upstreams,
        match_rules,
        interactions: ended.outcome.recorded,
    };
    writer.save(&cassette)?;
    let errors = ended.outcome.upstream_errors.len();
    if !s.quiet {
        eprintln!(
            "agentproxy: recorded {count} interaction(s) ({streamed} streamed) to {}",
            s.cassette.display()
        );
        if errors > 0 {
            eprintln!(
                "agentproxy: {errors} request(s) failed at the upstream (named above); exit 3"
            );
        }
    }
    let exit = match child_failed {
        Some(code) => Exit::Program(code),
        None if errors > 0 => Exit::Execution,
        None => Exit::Ok,
    };
    if s.json {
        let summary = serde_json::json!({
            "command": "record",
            "cassette": s.cassette,
            "recorded": count,
            "streamed": streamed,
            "upstream_errors": ended.outcome.upstream_errors,
            "program_exit": ended.child,
            "exit_code": exit.code(),
        });
        println!("{summary}");
    }
    Ok(exit)
}
