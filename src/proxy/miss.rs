//! A request with no recording: its near-miss report, printed when asked and kept in the
//! session's outcome. Shared by model requests and MCP requests.

use serde_json::Value;

use super::replay::Replay;
use super::state::Proxy;
use crate::cassette::Body;
use crate::matching::{self, index::Lookup, nearmiss, sketch::Sketch};

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
    let hints = nearmiss::Hints {
        tolerated: proxy.opts.rules.described(),
        rerecord: proxy.opts.rerecord.as_deref(),
        origin: proxy.opts.origin.as_deref(),
    };
    let report = match lookup {
        Lookup::Exhausted { recorded } => nearmiss::report(
            method,
            path,
            route,
            normalized_now,
            &nearmiss::MissKind::Exhausted { recorded },
            &hints,
        ),
        _ => {
            // Sketches shortlist the recordings; only those are parsed and measured.
            let routes_and_sketches: Vec<(&str, Option<&Sketch>)> = (rp.interactions.iter())
                .zip(rp.sketches())
                .map(|(i, s)| (i.route.as_str(), s.as_ref()))
                .collect();
            let now = Sketch::of_value(normalized_now);
            let recorded: Vec<(usize, &str, Value)> =
                nearmiss::shortlist(route, &now, &routes_and_sketches)
                    .into_iter()
                    .map(|pos| {
                        let i = &rp.interactions[pos];
                        let body = (i.request.body.as_ref())
                            .and_then(Body::json_transient)
                            .map(|b| matching::normalize::normalize(&b, &proxy.opts.rules))
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
            let nearest = nearmiss::nearest(route, normalized_now, &candidates).and_then(|pos| {
                let (_, _, body) = recorded.iter().find(|(p, _, _)| *p == pos)?;
                Some((pos, body))
            });
            nearmiss::report(
                method,
                path,
                route,
                normalized_now,
                &nearmiss::MissKind::Unknown { nearest },
                &hints,
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
