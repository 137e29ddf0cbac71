//! The proxy: one session's HTTP server and the layers a request goes through, composed
//! in `stack` (each feature that acts before routing a `tower` layer: `egress`,
//! the crash hold, `loops`, `socket`). A request is then routed (`route`, `service`): to
//! a model API handler (`api`), an MCP relay (`mcp`, `mcp_http`), `serve`'s control
//! endpoint (`switch`) or a refusal; a model request is answered through the fault layer
//! (`fault`) from the cassette (`replay`) or the upstream (`record`). The session's state
//! is in `state`, its options in `options`. Everything the program sends that is not to a
//! base URL (the forward proxy, interception, a contained program's direct traffic) is
//! one unit, `egress`.

pub mod a2a;
mod api;
pub(crate) mod body;
mod boundary;
pub mod client;
mod conn;
pub(crate) mod crash;
pub mod egress;
mod exchange;
mod fault;
pub mod google_adc;
mod loops;
pub mod mcp;
pub mod mcp_http;
mod miss;
mod options;
mod outcome;
pub mod pages;
mod record;
mod replay;
mod route;
mod secret;
pub mod server;
mod service;
mod session;
mod sigv4;
mod socket;
mod stack;
mod state;
mod step;
pub mod switch;
pub mod upstream;

pub use crash::Crashed;
pub use options::{FuzzCall, Mocked, Mocks, Options};
pub use outcome::Outcome;
pub use replay::Replay;
pub use secret::{new_secret, SECRET_HEADER, SECRET_VAR};
pub use server::BindError;
pub(crate) use session::Session;
