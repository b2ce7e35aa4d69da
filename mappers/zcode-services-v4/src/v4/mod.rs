//! The V4 conversation protocol: physical wire frames and their reassembly, logical frames,
//! the conversation state and its rows.

pub mod checksum;
pub mod rows;
pub mod state;
pub mod wire;
