//! ZCode's channel IPC on stdio: values, transport frames and channel messages.

pub mod frame;
pub mod message;
pub mod value;
