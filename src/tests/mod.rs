//! Tests across modules: property tests of every parser that reads what others wrote.

mod properties;
