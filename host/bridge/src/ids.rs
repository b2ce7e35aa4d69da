//! Ids inside one bridge.

/// Identifies a session link inside one bridge.
pub(crate) type LinkId = u64;
