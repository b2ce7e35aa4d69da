//! The host bridge: runs one ZCode host child process per ACP connection and moves bytes between
//! it and the mapper.
//!
//! The bridge owns everything about the child that does not change with a ZCode release: the
//! spawn (only the verified executable, in its own process group), the byte pumps, request-id
//! allocation, the pending table with per-request timeouts, event routing to sessions, and a
//! shutdown that leaves no process of the group behind. It names no ZCode method: every native
//! byte is produced and parsed by the mapper through [`MapperConnection`] and [`MapperSession`];
//! credentials a mapper asks for are filled into its writes here, from `zcode-credentials`.
//!
//! Failure is closed: a framing error, stdout EOF, a child exit or a write failure resolves every
//! pending request as `Lost`, tells every linked session [`SessionInbound::TransportClosed`],
//! refuses later operations, and terminates the child. There is no restart and no re-send.
//!
//! [`MapperConnection`]: zcode_contract::MapperConnection
//! [`MapperSession`]: zcode_contract::MapperSession

mod bridge;
mod deadline;
mod driver;
mod error;
mod exit_cleanup;
mod group;
mod ids;
mod launch;
mod lifecycle;
mod options;
mod pumps;
mod session;
mod shared;
mod sync;

pub use bridge::{HostBridge, HostSpec};
pub use driver::UpdateSink;
pub use error::{BridgeError, OpFailure};
pub use exit_cleanup::{install_signal_cleanup, kill_all_host_groups};
pub use launch::verified_executable;
pub use options::BridgeOptions;
pub use session::{
    SESSION_QUEUE, SESSION_QUEUE_BYTES, SessionInbound, SessionLink, SessionReceiver,
};
