//! Errors of the bridge's public API.

use std::path::PathBuf;
use std::time::Duration;

use zcode_contract::{MapperError, MapperFault};

/// Why an operation did not produce an `OpResult`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpFailure {
    /// The mapper finished the operation with an error (`Done(Err)`).
    #[error("{0}")]
    Mapper(MapperError),
    /// The mapper broke (trap, cap, or output the bridge refuses). A session op leaves that
    /// session unusable; a connection op fails the whole transport.
    #[error("{0}")]
    Fault(MapperFault),
    /// The host is gone or the transport failed closed; the text says why.
    #[error("ZCode host transport closed: {0}")]
    Transport(String),
}

/// Why [`HostBridge::spawn`](crate::HostBridge::spawn) failed. The child, if it was started,
/// has been shut down.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error("the verified executable `{executable}` cannot be started: {why}")]
    ExecutableMissing { executable: String, why: String },
    #[error(
        "the install has files without a pinned hash ({0}), and its release names no identity \
         the host could confirm"
    )]
    Unverifiable(String),
    #[error(
        "the ZCode host reported itself as `{reported}`, but its release is `{expected}`: refused"
    )]
    IdentityMismatch { expected: String, reported: String },
    #[error("launch plan is invalid: {0}")]
    InvalidPlan(String),
    #[error("could not start the ZCode host `{program}`: {source}", program = program.display())]
    Spawn {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the ZCode host did not complete its handshake within {} ms", timeout.as_millis())]
    HandshakeTimeout { timeout: Duration },
    #[error("the ZCode host transport closed during the handshake: {0}")]
    HandshakeFailed(String),
    #[error("the ZCode host connection setup failed: {0}")]
    Setup(OpFailure),
}
