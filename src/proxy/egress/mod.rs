//! Egress, as one unit: everything the program sends that does not come to the proxy as
//! a base URL. The proxy is the program's forward proxy (`tunnel`): a `CONNECT` to a
//! provider's host is intercepted with a certificate of the session's authority (`ca`)
//! and its requests served as base-URL traffic is, marked as such (`mark`); traffic to
//! another host is passed, refused or recorded as the policy says (`policy`); a contained
//! program's name lookups and direct connections are answered too (`direct`; the jail
//! itself is `runner::contain`, its system calls `os`). Each session has one [`Gate`]
//! (its options, policy and log); what went where is the session's [`Log`], told in
//! words in one place (`words`) by record, replay and test alike.

mod ca;
mod direct;
mod gate;
mod log;
mod mark;
mod policy;
mod tunnel;
mod words;

pub use ca::{CaError, TRUST_VARS};
pub(crate) use direct::{answer_names, watch};
pub use gate::{Gate, Options, Setup};
pub use log::Log;
pub use mark::{host_port, Intercepted};
pub(crate) use tunnel::layer;
pub use words::{findings, lines, reached_elsewhere, Line};
