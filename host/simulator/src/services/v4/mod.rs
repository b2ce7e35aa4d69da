//! The V4 conversation: state and deltas, the physical wire, frame routing and commands
//! (ZCode `packages/shared/src/zcode-protocol-v4/*`).

pub mod commands;
pub mod conversation;
pub mod router;
pub mod wire;
