//! Cassettes: the recorded interactions of one run, as a versioned JSON file.

pub mod format;
pub mod store;

pub use format::{Body, Cassette, Interaction, MatchRules, RecordedRequest, RecordedResponse};
