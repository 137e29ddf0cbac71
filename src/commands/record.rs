//! `agentproxy record`: forward to the upstream, write the cassette when the program exits.

use crate::cassette::format::Upstreams;
use crate::cassette::Interaction;
use crate::cli::RecordArgs;
use crate::dialect::provider_of;
use crate::error::{Error, Exit, Result, EXIT_OK};
use crate::runner::env;
use crate::runner::plan::{self, Forwarding, Plan, Use};
use crate::trajectory::{self, Asserted};

use super::session;
use super::summary::{Common, Summary};

pub async fn run(args: RecordArgs) -> Result<Exit> {
    let s = &args.session;
    let upstreams = args.upstreams.upstreams()?;
    let fwd = Forwarding {
        upstreams: upstreams.clone(),
        upstream_timeout: args.upstream_timeout,
        max_body: s.max_body_size,
    };
    // The writer is checked and locked before the program starts (or the daemon listens).
    let Plan {
        options,
        match_rules,
        writer,
        ..
    } = plan::plan(
        {
            let mut setup = session::setup(s, None, Use::Record);
            setup.egress.record_other_hosts = args.record_other_hosts;
            setup
        },
        &fwd,
    )?;
    let banner = format!(
        "recording to {} from {}",
        s.cassette.display(),
        env::upstream_list(&upstreams)
    );
    for warning in env::overridden(&|name| std::env::var(name).ok(), &upstreams) {
        tell!("agentproxy: warning: {warning}");
    }
    let ended = session::run(s, options, false, &banner).await?;
    let out = &ended.outcome;
    if out.recorded.is_empty() {
        return nothing_recorded(s, &ended);
    }
    let count = out.recorded.len();
    let streamed = (out.recorded.iter())
        .filter(|i| i.response.events.is_some())
        .count();
    // The recording this one replaces, read before it is: what the re-record changed is
    // told with the rest, as `agentproxy diff` of the two would print it.
    let previous = (!s.quiet || s.json)
        .then(|| plan::replaced(&s.cassette))
        .flatten();
    let saved = match &writer {
        Some(writer) => plan::save(writer, &upstreams, &match_rules, None, Use::Record, out)?,
        None => None,
    };
    let drift = previous
        .zip(saved)
        .map(|(old, new)| trajectory::diff_cassettes(&old, &new, &Asserted::everything()));
    if !s.quiet {
        let used = used_upstreams(&upstreams, &out.recorded);
        tell_recorded(s, &ended, &used, drift.as_ref());
    }
    let (status, program) = session::status(&ended, Use::Record);
    let exit = Exit::of([status], program);
    if s.json {
        Summary::Record {
            cassette: &s.cassette,
            recorded: count,
            streamed,
            trajectory: drift.as_ref().map(|d| d.verdict.as_str()),
            upstream_errors: &out.upstream_errors,
            common: Common::of(&ended, exit.code()),
        }
        .print()?;
    }
    Ok(exit)
}

/// What a session that recorded nothing ends with: the program's own failure, or why no
/// request came through (failed upstream, refused, or none made but to other hosts).
fn nothing_recorded(s: &crate::cli::SessionArgs, ended: &session::Ended) -> Result<Exit> {
    let out = &ended.outcome;
    // What the program reached around the proxy may say why nothing came through it.
    if !s.quiet {
        for line in session::egress_lines(ended) {
            tell!("{line}");
        }
    }
    let child_failed = ended.child.filter(|c| *c != EXIT_OK);
    if let Some(code) = child_failed.filter(|_| out.upstream_errors.is_empty()) {
        tell!("agentproxy: the program exited with status {code} before any request was recorded; no cassette written");
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
    let reached = crate::proxy::egress::reached_elsewhere(&out.egress);
    let elsewhere = match reached.is_empty() {
        true => String::new(),
        false => format!(
            " but to other hosts ({}), which are not recorded (--record-other-hosts records them)",
            reached.join(", ")
        ),
    };
    let injected: Vec<&str> = ended.injected.iter().map(|v| v.name.as_str()).collect();
    Err(Error::NothingRecorded {
        elsewhere,
        injected: injected.join(", "),
    })
}

/// What a recording tells on stderr: the known clients, faults and egress, the count, the
/// trajectory against the recording it replaced, and each failed upstream request.
fn tell_recorded(
    s: &crate::cli::SessionArgs,
    ended: &session::Ended,
    used: &[String],
    drift: Option<&trajectory::changes::TrajectoryDiff>,
) {
    let out = &ended.outcome;
    for client in &out.clients {
        tell!(
            "agentproxy: recorded {client}: its volatile fields are tolerated (see the cassette's match block; --no-client-tolerances turns this off)"
        );
    }
    for line in out
        .faults
        .lines()
        .into_iter()
        .chain((session::egress_lines(ended).into_iter()).map(|l| l.text))
    {
        tell!("{line}");
    }
    let streamed = (out.recorded.iter())
        .filter(|i| i.response.events.is_some())
        .count();
    tell!(
        "agentproxy: recorded {} interaction(s) ({streamed} streamed) from {} to {}",
        out.recorded.len(),
        used.join(" and "),
        s.cassette.display()
    );
    if let Some(d) = drift {
        tell!("agentproxy: against the recording it replaced:");
        for line in trajectory::render_text(d).lines() {
            tell!("{}", format!("  {line}").trim_end());
        }
    }
    let errors = out.upstream_errors.len();
    if errors > 0 {
        // Named here whether or not they were as they happened (an MCP message over
        // the size limit is noted, not printed).
        tell!("agentproxy: {errors} request(s) failed at the upstream; exit 3:");
        for e in &out.upstream_errors {
            tell!("agentproxy:   {e}");
        }
    }
}

/// The upstreams the recorded interactions came from, each once, in order of first use.
fn used_upstreams(upstreams: &Upstreams, recorded: &[Interaction]) -> Vec<String> {
    let mut used: Vec<String> = vec![];
    for i in recorded {
        if i.route == crate::dialect::mcp::ROUTE {
            let server = format!("MCP server {}", i.request.path);
            if !used.contains(&server) {
                used.push(server);
            }
            continue;
        }
        let provider = provider_of(&i.request.path, &http::HeaderMap::new());
        let base = upstreams.of(provider);
        if !used.iter().any(|u| u == base) {
            used.push(base.to_owned());
        }
    }
    used
}
