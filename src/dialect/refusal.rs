//! The kinds of error agentproxy answers itself.

/// Why agentproxy answered a request itself: the error's `type` (or `code`) in the
/// provider's shape, which a program (or a test of it) may look for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A replayed request that matched no recording.
    CassetteMiss,
    /// A path with dot segments or other ambiguity.
    BadPath,
    BodyTooLarge,
    /// A request body that stalled or broke off.
    BadRequest,
    /// A request that came back to the proxy that forwarded it.
    Loop,
    /// The session's control prefix without its secret.
    Forbidden,
    /// A path no provider serves.
    UnknownRoute,
    /// The upstream failed while recording.
    UpstreamError,
    /// An injected fault with no error type of the provider's own.
    Fault,
    /// `agentproxy doctor`'s canned server.
    Doctor,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::CassetteMiss => "agentproxy_cassette_miss",
            Refusal::BadPath => "agentproxy_bad_path",
            Refusal::BodyTooLarge => "agentproxy_body_too_large",
            Refusal::BadRequest => "agentproxy_bad_request",
            Refusal::Loop => "agentproxy_loop",
            Refusal::Forbidden => "agentproxy_forbidden",
            Refusal::UnknownRoute => "agentproxy_unknown_route",
            Refusal::UpstreamError => "agentproxy_upstream_error",
            Refusal::Fault => "agentproxy_fault",
            Refusal::Doctor => "agentproxy_doctor",
        }
    }
}
