//! Running the program under test: its environment and its process.

pub mod ancestry;
pub mod case;
pub mod child;
pub mod contain;
mod crash;
pub mod driver;
pub mod env;
pub(crate) mod error;
pub mod evaluate;
mod fuzz;
pub mod harness;
pub mod mocks;
pub(crate) mod plan;
mod procfs;
mod reap;
pub mod upstreams;
pub mod url;
mod verdict;
