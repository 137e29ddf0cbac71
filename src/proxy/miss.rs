//! A request with no recording: its near-miss report, printed when asked and kept in the
//! session's outcome. Shared by model requests and MCP requests.

use serde_json::Value;

use super::replay::Replay;
use super::state::Proxy;
use crate::cassette::{Body, CassetteError};
use crate::matching::nearmiss::{self, NearMiss};
use crate::matching::{self, index::Lookup, sketch::Sketch};

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
        advice: Some(&proxy.opts.advice),
    };
    let mut near = None;
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
            let mut recorded = shortlisted(proxy, rp, route, normalized_now);
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
            let report = nearmiss::report(
                method,
                path,
                route,
                normalized_now,
                &nearmiss::MissKind::Unknown { nearest },
                &hints,
            );
            let pos = nearest.map(|(pos, _)| pos);
            drop(candidates);
            near = pos.and_then(|pos| {
                let at = recorded.iter().position(|(p, _, _)| *p == pos)?;
                Some((pos, recorded.swap_remove(at).2))
            });
            report
        }
    };
    if proxy.opts.print_misses {
        tell!(
            "agentproxy: {}",
            report.strip_suffix('\n').unwrap_or(&report)
        );
    }
    let turn = proxy.current_turn();
    let mut st = proxy.lock();
    let at = st.misses.len();
    (st.near_misses)
        .extend(near.and_then(|(pos, recorded)| NearMiss::of(at, (pos, recorded), normalized_now)));
    st.misses.push(report.clone());
    st.missed_turns.extend(turn);
    report
}

/// The report of a request (`method`, stored `path`) whose recording at `pos` could not be
/// read (its cassette changed on disk since it loaded): said, and kept in the outcome as a
/// miss, so the run fails.
pub(super) fn note_unreadable(
    proxy: &Proxy,
    (method, path): (&str, &str),
    pos: usize,
    e: &CassetteError,
) -> String {
    let report = format!("{method} {path} matched recording #{pos}, which could not be read: {e}");
    tell!("agentproxy: {report}");
    let turn = proxy.current_turn();
    let mut st = proxy.lock();
    st.misses.push(report.clone());
    st.missed_turns.extend(turn);
    report
}

/// The recordings a miss is measured against, each with its position, route and body
/// normalized: sketches shortlist them, and only those are parsed.
fn shortlisted<'a>(
    proxy: &Proxy,
    rp: &'a Replay,
    route: &str,
    normalized_now: &Value,
) -> Vec<(usize, &'a str, Value)> {
    let routes_and_sketches: Vec<(&str, Option<&Sketch>)> = (rp.interactions.iter())
        .zip(rp.sketches())
        .map(|(i, s)| (i.route.as_str(), s.as_ref()))
        .collect();
    let now = Sketch::of_value(normalized_now);
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
        .collect()
}
