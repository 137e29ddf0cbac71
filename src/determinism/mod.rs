//! `agentproxy test --check-determinism`: does a case send the same requests every time?
//! Run it twice against its recording, compare the requests of the two runs, find every
//! value that differed, and suggest what would make it stable: a tool mock when the value
//! sits in a tool result, a `match.holes` entry when only a date, time, uuid, id or number
//! inside a string changed, a `match.ignore` pointer otherwise.
//!
//! The pure parts take values and return values: [`sample`] (a run's requests),
//! [`compare`] (align and diff two runs), [`volatile`] (spans a hole can stand for),
//! [`suggest`] (fixes), [`findings`] (what was found, as spec YAML) and [`verdict`] (the
//! case report). [`driver`] runs the case at the edge, through the proxy's serve-by-position
//! replay ([`crate::proxy::Replay::lenient`]) and the runner's program driver.

mod compare;
mod driver;
mod findings;
mod sample;
mod suggest;
mod verdict;
mod volatile;

#[cfg(test)]
mod tests;

pub(crate) use driver::check;
pub(crate) use verdict::suggestion_note;
