//! Shared test support. Each test binary uses a different part of it.
#![allow(dead_code)]

pub mod http;
pub mod proxy;
