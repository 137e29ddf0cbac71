//! A request with no recording: its near-miss report, printed when asked and kept in the
//! session's outcome. Shared by model requests and MCP requests.

use serde_json::Value;

use super::replay::Replay;
use super::state::Proxy;
use crate::cassette::Body;
use crate::matching::{self, index::Lookup, nearmiss};

/// The near-miss report of a request (`method`, stored `path`, `route`, its normalized
/// body) that `lookup` did not find: against the nearest recording, printed when asked
/// and kept in the outcome.
pub(super) fn note(
    proxy: &Proxy,
    rp: &Replay,
    (method, path, route): (&str, &str, &str),
    normalized_now: &Value,
    lookup: Lookup,
) -> String {
    let report = match lookup {
        Lookup::Exhausted { recorded } => nearmiss::report(
            method,
            path,
            route,
            normalized_now,
            &nearmiss::MissKind::Exhausted { recorded },
            None,
        ),
        _ => {
            let recorded: Vec<(usize, &str, Value)> = rp
                .interactions
                .iter()
                .enumerate()
                .map(|(pos, i)| {
                    let body = i
                        .request
                        .body
                        .as_ref()
                        .and_then(Body::as_json)
                        .map(|b| matching::normalize::normalize(b, &proxy.opts.rules))
                        .unwrap_or(Value::Null);
                    (pos, i.route.as_str(), body)
                })
                .collect();
            let candidates: Vec<nearmiss::Candidate<'_>> = recorded
                .iter()
                .map(|(pos, route, body)| nearmiss::Candidate {
                    pos: *pos,
                    route,
                    body,
                })
                .collect();
            let nearest = nearmiss::nearest(route, normalized_now, &candidates)
                .map(|pos| (pos, &recorded[pos].2));
            nearmiss::report(
                method,
                path,
                route,
                normalized_now,
                &nearmiss::MissKind::Unknown { nearest },
                proxy.opts.rules.described(),
            )
        }
    };
    if proxy.opts.print_misses {
        eprint!("agentproxy: {report}");
    }
    let turn = proxy.current_turn();
    let mut st = proxy.lock();
    st.misses.push(report.clone());
    st.missed_turns.extend(turn);
    report
}
