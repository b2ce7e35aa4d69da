//! ACP shapes shared by the session's parts: tool calls and plans.

pub mod plan;
pub mod tools;
