//! How a replayed request finds its recording: normalization, keys, the FIFO index and the
//! near-miss report (with the sketches that shortlist its candidates).

pub mod index;
pub mod key;
pub mod nearmiss;
pub mod normalize;
pub mod sketch;

use crate::cassette::{Body, Interaction};
use crate::dialect::Route;

/// The key of a request. Model routes hash their route name (and what the dialect takes
/// from the path: Gemini's model) and normalized JSON body, so the path prefix and the SDK's
/// key order do not matter; plain HTTP also hashes the method and path. A non-JSON body hashes its bytes.
pub fn request_key(
    route: &str,
    method: &str,
    path: &str,
    body: Option<&Body>,
    rules: &normalize::Rules,
) -> String {
    let scope = if route == Route::Http.name() {
        format!("http {method} {path}")
    } else {
        match Route::from_name(route).key_scope(path) {
            Some(extra) => format!("{route} {extra}"),
            None => route.to_owned(),
        }
    };
    match body {
        // Without rules, normalizing only drops transport fields: hash a view, not a copy.
        Some(Body::Json(v)) if rules.is_empty() => {
            key::key(&scope, &normalize::WithoutTransport(v))
        }
        Some(Body::Json(v)) => key::key(&scope, &normalize::normalize(v, rules)),
        Some(other) => key::key_raw(&scope, &other.to_bytes()),
        None => key::key_raw(&scope, b""),
    }
}

/// Recompute every interaction's key under `rules` (a session whose match rules differ from
/// the ones the cassette was recorded with).
pub fn rekey(interactions: &mut [Interaction], rules: &normalize::Rules) {
    for it in interactions {
        it.key = request_key(
            &it.route,
            &it.request.method,
            &it.request.path,
            it.request.body.as_ref(),
            rules,
        );
    }
}
