//! What serde cannot check when a cassette loads: values that parse but could not be
//! served as recorded. Refused at load, so a corrupt cassette never replays as a quiet
//! empty 200. Cheap by design: no body is parsed here (JSON bodies are checked for syntax
//! as they load), only base64 bodies are decoded, and those are rare.

use base64::Engine;

use super::format::{Body, Cassette};
use crate::dialect::Route;

/// Where a cassette is invalid: a JSON pointer into the file and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub pointer: String,
    pub message: String,
}

/// The first value in `cassette` that could not be served as recorded.
pub fn check(cassette: &Cassette) -> Result<(), Invalid> {
    for (i, it) in cassette.interactions.iter().enumerate() {
        let at = |rest: &str, message: String| Invalid {
            pointer: format!("/interactions/{i}/{rest}"),
            message,
        };
        let r = &it.response;
        if !(100..=599).contains(&r.status) {
            return Err(at(
                "response/status",
                format!("{} is not an HTTP status (100 to 599)", r.status),
            ));
        }
        for (name, value) in &r.headers {
            if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(at(
                    "response/headers",
                    format!("`{name}` is not a valid header name"),
                ));
            }
            if http::HeaderValue::from_str(value).is_err() {
                return Err(at(
                    &format!("response/headers/{}", escape(name)),
                    "the value is not a valid header value".into(),
                ));
            }
        }
        // A model's answer is a message: with nothing to serve, the program would get an
        // empty success it cannot read.
        let nothing = r.body.is_none() && r.events.is_none() && r.aborted.is_none();
        if (200..300).contains(&r.status) && nothing && Route::from_name(&it.route).requires_json()
        {
            return Err(at(
                "response",
                format!(
                    "a {} answer on route `{}` with neither `body` nor `events`: it would replay as an empty answer",
                    r.status, it.route
                ),
            ));
        }
        for (place, body) in [
            ("request/body", &it.request.body),
            ("response/body", &r.body),
        ] {
            if let Some(Body::Base64(b)) = body {
                if let Err(e) = base64::engine::general_purpose::STANDARD.decode(b) {
                    return Err(at(&format!("{place}/base64"), format!("not base64: {e}")));
                }
            }
        }
    }
    Ok(())
}

/// A JSON-pointer segment.
fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use crate::cassette::store::parse;
    use std::path::Path;

    fn cassette(response: &str) -> Vec<u8> {
        format!(
            r#"{{"format": "1.1", "recorder": "t", "recorded_at": "2026-01-01T00:00:00Z",
            "upstreams": {{"openai": "http://127.0.0.1:1", "anthropic": "http://127.0.0.1:2"}},
            "interactions": [{{"route": "http", "key": "k",
              "request": {{"method": "GET", "path": "/v1/models"}},
              "response": {response}, "latency_ms": 1}}]}}"#
        )
        .into_bytes()
    }

    fn problem(response: &str) -> String {
        parse(Path::new("c.json"), &cassette(response))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_sound_cassette_passes() {
        let ok = r#"{"status": 200, "headers": {"content-type": "application/json"}, "body": {"base64": "aGk="}}"#;
        assert!(parse(Path::new("c.json"), &cassette(ok)).is_ok());
    }

    #[test]
    fn bad_base64_a_status_out_of_range_and_bad_headers_are_refused_with_their_pointer() {
        let msg = problem(r#"{"status": 200, "body": {"base64": "!!!notbase64"}}"#);
        assert!(
            msg.contains("/interactions/0/response/body/base64"),
            "{msg}"
        );
        assert!(msg.contains("not base64"), "{msg}");
        for status in ["99", "600", "0"] {
            let msg = problem(&format!(r#"{{"status": {status}}}"#));
            assert!(msg.contains("/interactions/0/response/status"), "{msg}");
            assert!(msg.contains("is not an HTTP status"), "{msg}");
        }
        let msg = problem(r#"{"status": 200, "headers": {"bad name": "x"}}"#);
        assert!(msg.contains("not a valid header name"), "{msg}");
        let msg = problem(r#"{"status": 200, "headers": {"x~a": "line\nbreak"}}"#);
        assert!(msg.contains("/response/headers/x~0a"), "{msg}");
    }

    #[test]
    fn a_model_answer_with_nothing_to_serve_is_refused() {
        let on = |route: &str, response: &str| {
            let text = String::from_utf8(cassette(response)).unwrap();
            let text = text.replace(r#""route": "http""#, &format!(r#""route": "{route}""#));
            parse(Path::new("c.json"), text.as_bytes()).map(|_| ())
        };
        let msg = on("openai.chat", r#"{"status": 200}"#)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("is invalid at /interactions/0/response: a 200 answer on route `openai.chat` with neither `body` nor `events`"), "{msg}");
        // An error answer may be empty, a stream keeps its events, an aborted one may
        // have none, and plain HTTP may answer nothing (204).
        assert!(on("openai.chat", r#"{"status": 502}"#).is_ok());
        assert!(on("anthropic.messages", r#"{"status": 200, "events": []}"#).is_ok());
        assert!(on(
            "openai.chat",
            r#"{"status": 200, "aborted": "the upstream's stream broke off"}"#
        )
        .is_ok());
        assert!(on("http", r#"{"status": 204}"#).is_ok());
    }
}
