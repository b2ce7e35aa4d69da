//! Flow tests through the connection and session resources, with a small stand-in for the
//! Server's side of the wire (`support`).

mod connection_flow;
mod memory;
mod session_flow;
pub mod support;
