//! The neutral trajectory: what an agent was told and what it did, model call by model
//! call, whatever the wire dialect. Assertions, mocks, `show` and `diff` read only this.

mod align;
pub mod asserted;
pub mod changes;
pub mod delegations;
pub mod diff;
pub mod executions;
mod extract;
mod history;
pub mod html;
mod lines;
pub mod markdown;
pub mod render;
pub mod show;
pub mod sides;
pub mod textdiff;
mod told;

pub use asserted::Asserted;
pub use changes::Verdict;
pub use diff::{diff_cassettes, diff_recordings, Recording};
pub use html::render_html_body;
pub use markdown::render_markdown;
pub use render::{render_json, render_text};

#[cfg(test)]
pub(crate) mod tests;
