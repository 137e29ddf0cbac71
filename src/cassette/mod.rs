//! Cassettes: the recorded interactions of one run, as a versioned JSON file.

pub mod age;
mod error;
pub mod format;
mod lazy;
mod parts;
mod source;
pub mod store;
mod validate;
mod writer;

pub use error::CassetteError;
pub use format::{
    Body, Cassette, Interaction, LazyJson, MatchRules, RecordedRequest, RecordedResponse,
};
pub use writer::Writer;
