//! Running the program under test: its environment and its process.

pub mod child;
pub mod driver;
pub mod env;
pub mod url;
