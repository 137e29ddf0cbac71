//! `agentproxy doctor`: does the program honour the injected URL? A canned server that
//! answers every dialect and notes what arrived ([`server`]), and the pure diagnosis and
//! rendering of what it saw ([`diagnose`]). The command in `commands::doctor` runs the
//! program between the two. With no program, [`about`] reports on agentproxy itself.

pub mod about;
pub mod diagnose;
pub mod server;
