//! From a recording's interactions to the steps of its trajectory: each model call in
//! neutral form, with its turn and the conversation items it added. Shared by `show`
//! and `diff`, so both read a recording the same way.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value;

use super::history;
use crate::cassette::{Body, Interaction};
use crate::dialect::Route;
use crate::matching::normalize::{self, Rules};
use crate::neutral::{Message, ModelCall};

/// How many earlier requests of the same route are searched for the history a request
/// repeats. Concurrent conversations interleave; a handful covers them.
const LOOKBACK: usize = 8;

/// One interaction of a recording, read.
#[derive(Debug)]
pub(crate) struct Step<'a> {
    pub it: &'a Interaction,
    /// The test-runner turn; 0 when the recording has none.
    pub turn: usize,
    /// The request body, match rules applied; `None` when it is not JSON.
    pub request: Option<Cow<'a, Value>>,
    /// The model call; `None` for plain HTTP or a body that is not JSON.
    pub call: Option<ModelCall>,
    /// The conversation items this request sent that earlier ones had not.
    pub new: Vec<Message>,
    /// The response succeeded (2xx) with a readable body.
    pub answered: bool,
}

impl Step<'_> {
    /// A model call whose response succeeded: part of what the agent did. Failed
    /// attempts (a 429 the SDK retried) are transport, not trajectory.
    pub fn model_call(&self) -> Option<&ModelCall> {
        self.call.as_ref().filter(|_| self.answered)
    }
}

/// The steps of `interactions`, in recorded order. `rules` (the recording's match rules)
/// are applied to request bodies first, so ignored fields and holes, which the user
/// declared volatile, read the same on both sides of a diff.
pub(crate) fn steps<'a>(interactions: &'a [Interaction], rules: Option<&Rules>) -> Vec<Step<'a>> {
    let requests: Vec<Option<Cow<'a, Value>>> = interactions
        .iter()
        .map(|it| {
            let body = it.request.body.as_ref().and_then(Body::as_json)?;
            Some(match rules {
                Some(r) if it.route != "http" => Cow::Owned(normalize::normalize(body, r)),
                _ => Cow::Borrowed(body),
            })
        })
        .collect();
    let calls: Vec<Option<ModelCall>> = interactions
        .iter()
        .zip(&requests)
        .map(|(it, req)| it.model_call_with(req.as_deref()?))
        .collect();
    let names: HashMap<String, String> = calls
        .iter()
        .flatten()
        .flat_map(|c| c.tool_calls.iter().map(|t| (t.id.clone(), t.name.clone())))
        .collect();
    let items: Vec<Cow<'_, [Value]>> = interactions
        .iter()
        .zip(&requests)
        .map(|(it, req)| match req {
            Some(r) => Route::from_name(&it.route).conversation(r),
            _ => Cow::Borrowed(&[][..]),
        })
        .collect();
    let answered: Vec<bool> = interactions
        .iter()
        .map(|it| {
            (200..300).contains(&it.response.status)
                && it.response.body.as_ref().and_then(Body::as_json).is_some()
        })
        .collect();
    // Only answered requests count as history: a request the upstream refused (and the
    // SDK retried) did not reach the model.
    let news: Vec<Vec<Message>> = (0..interactions.len())
        .map(|i| {
            let it = &interactions[i];
            if calls[i].is_none() {
                return Vec::new();
            }
            let earlier: Vec<&[Value]> = (0..i)
                .rev()
                .filter(|&j| answered[j] && interactions[j].route == it.route)
                .take(LOOKBACK)
                .map(|j| &*items[j])
                .collect();
            let route = Route::from_name(&it.route);
            let start = history::new_start(route, &items[i], &earlier);
            route.messages(&items[i][start..], &names)
        })
        .collect();
    drop(items);
    let mut out = Vec::with_capacity(interactions.len());
    let all = interactions
        .iter()
        .zip(requests)
        .zip(calls)
        .zip(news)
        .zip(answered);
    for ((((it, request), call), new), answered) in all {
        out.push(Step {
            it,
            turn: it.turn.unwrap_or(0),
            request,
            call,
            new,
            answered,
        });
    }
    out
}
