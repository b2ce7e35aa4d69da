//! The binary channel IPC the Services Server speaks after the hello: transport frames,
//! channel messages and the value encoding inside them (ZCode `packages/rpc`).

pub mod message;
pub mod transport;
pub mod value;
