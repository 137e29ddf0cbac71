//! How a replayed request finds its recording: normalization, keys, the FIFO index and the
//! near-miss report (with the sketches that shortlist its candidates).

pub mod canonical;
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
    let (scope, hash) = (scope(route, method, path), rules.hash());
    match body {
        // Without rules, normalizing only drops transport fields: hash a view, not a copy.
        // A body not parsed yet (a cassette's, a recording's kept as text) is parsed for
        // the while, not kept as a tree.
        Some(Body::Json(v)) if rules.is_empty() => key::key(
            hash,
            &scope,
            &normalize::WithoutTransport(&v.get_transient()),
        ),
        Some(Body::Json(v)) => key::key(
            hash,
            &scope,
            &normalize::normalize(&v.get_transient(), rules),
        ),
        // Text and base64 are in memory: only JSON text is read from a file.
        Some(other) => key::key_raw(hash, &scope, &other.to_bytes().unwrap_or_default()),
        None => key::key_raw(hash, &scope, b""),
    }
}

/// What a key hashes before the body: the route name, and what of the method and path
/// belongs in the key.
fn scope(route: &str, method: &str, path: &str) -> String {
    if route == Route::Http.name() {
        format!("http {method} {path}")
    } else {
        match Route::from_name(route).key_scope(path) {
            Some(extra) => format!("{route} {extra}"),
            None => route.to_owned(),
        }
    }
}

/// A JSON request's key computed from its bytes (see [`canonical`]): the key
/// [`request_key`] gives the parsed body with `secrets` redacted, and the transport fields
/// the key leaves out, which say how the answer is delivered. `None` when the body must be
/// parsed to be keyed (among others, under rules that ignore or fill parts of it, and on
/// plain HTTP).
pub fn key_of_bytes(
    route: &str,
    (method, path): (&str, &str),
    raw: &[u8],
    secrets: &crate::redact::Secrets,
    rules: &normalize::Rules,
) -> Option<(String, serde_json::Value)> {
    // Plain HTTP keys a body that is not JSON by its bytes, in the same scope: a text
    // serde_json refuses, written from the bytes, could be another recording's body.
    if !rules.is_empty() || route == Route::Http.name() {
        return None;
    }
    let c = canonical::canonical(raw, secrets)?;
    let key = key::key_of_canonical(rules.hash(), &scope(route, method, path), &c.text);
    Some((key, c.transport))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::Secrets;

    #[test]
    fn bytes_key_as_the_tree_does_but_never_on_plain_http() {
        let (raw, none) = (br#"{"b": 1, "a": "x"}"#, Secrets::default());
        let rules = normalize::Rules::default();
        let body = Body::Json(serde_json::json!({"a": "x", "b": 1}).into());
        let tree = request_key(
            "openai.chat",
            "POST",
            "/v1/chat/completions",
            Some(&body),
            &rules,
        );
        let bytes = key_of_bytes(
            "openai.chat",
            ("POST", "/v1/chat/completions"),
            raw,
            &none,
            &rules,
        );
        assert_eq!(bytes.map(|(k, _)| k), Some(tree));
        // A body serde_json refuses is keyed by its bytes there, in the same scope.
        let http = key_of_bytes("http", ("POST", "/x"), raw, &none, &rules);
        assert!(http.is_none());
    }
}
