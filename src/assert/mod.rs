//! Assertions over what an agent did: argument and text matchers, and checks on the sequence of
//! tool calls of a turn or a case. Pure: values in, verdicts out; the spec layer compiles the
//! YAML into these types and the runner feeds them the observed trajectory.

pub mod calls;
mod check;
mod json;
mod keys;
pub mod matchers;
mod paths;

pub use calls::{check_calls, CallExpectation, CallsSpec, Count, ObservedCall, Order};
pub(crate) use json::join_path;
#[cfg(test)]
pub use matchers::MatcherError;
pub use matchers::{MatchContext, Matcher};

#[cfg(test)]
mod tests;
