//! The unit every framing is read into and written from: one event of a stream.

/// One event: a dispatched server-sent event, an NDJSON line (its `data`), or an AWS
/// event-stream frame (see [`super::eventstream`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SseEvent {
    /// The `event:` field, if the block had one (`None` is what clients call "message").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The `id:` field, if the block had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}
