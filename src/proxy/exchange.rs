//! One parsed request on its way through the proxy: what the service read, and what record
//! and replay need to answer it.

use bytes::Bytes;
use http::{HeaderMap, Method};
use serde_json::Value;

use crate::cassette::Body;
use crate::dialect::{Provider, Route};

/// A parsed request on its way through the proxy.
pub(super) struct Exchange {
    pub seq: u64,
    /// The test runner's turn when the request arrived.
    pub turn: Option<usize>,
    pub route: Route,
    pub provider: Provider,
    /// For a request through an intercepted tunnel: the host it was sent to, as a base URL.
    pub origin: Option<String>,
    pub method: Method,
    /// The path and query, credentials (`?key=…`) removed: what is stored and matched.
    pub path: String,
    /// The path and query as the program sent them, for the upstream.
    pub forward_path: String,
    pub headers: HeaderMap,
    /// The bytes to forward upstream: the program's own, with its real credentials.
    pub raw: Bytes,
    /// The redacted body, as stored in the cassette.
    pub stored: Option<Body>,
    /// The digest of `raw`, for a JSON body that held no secret value.
    pub digest: Option<u128>,
    /// The ids of the tool calls whose results a mock wrote into this body.
    pub mocked: Vec<String>,
    pub key: String,
}

impl Exchange {
    pub fn json(&self) -> Option<&Value> {
        self.stored.as_ref().and_then(Body::as_json)
    }

    /// Does the program want a server-sent-event stream back?
    pub fn wants_stream(&self) -> bool {
        self.json()
            .is_some_and(|b| self.route.wants_stream(&self.path, b))
    }

    /// How this request's streams are framed.
    pub fn framing(&self) -> crate::sse::Framing {
        self.route.framing()
    }

    /// A stream synthesized from a whole recorded response, as this request wants it.
    pub fn synthesize(&self, response: &Value) -> Option<Vec<crate::sse::SseEvent>> {
        self.route.synthesize(response, self.json()?)
    }
}
