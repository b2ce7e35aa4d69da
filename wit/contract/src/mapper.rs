//! How the core drives a mapper. Implemented by the WebAssembly runtime, by native builds of
//! mapper crates (tests, benchmarks), by the recorder, and by test doubles.

use crate::error::{MapperError, MapperFault};
use crate::install::{AuthCommand, Contract, LaunchPlan, VerifiedInstall};
use crate::native::{Inbound, NativeReply};
use crate::ops::Outgoing;
use crate::ops::{ConnectionOp, SessionInit, SessionOp, Step};
use crate::session::{Effects, SessionInput};

/// One loaded mapper: its contract and factories for connection and session state.
pub trait Mapper: Send + Sync {
    /// Where the mapper came from (embedded, or a file path), for reports.
    fn source(&self) -> &str;
    fn contract(&self) -> &Contract;
    fn launch_plan(&self, install: &VerifiedInstall) -> Result<LaunchPlan, MapperError>;
    fn auth_plan(
        &self,
        install: &VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError>;
    fn connection(&self) -> Result<Box<dyn MapperConnection>, MapperFault>;
    fn session(&self, init: &SessionInit) -> Result<Box<dyn MapperSession>, MapperFault>;
}

/// Operations as step machines, for connection ops and session ops alike. A `MapperFault` means
/// the mapper itself failed: whatever used the instance is failed.
pub trait Operations<Op>: Send {
    fn start(&mut self, op_id: u64, op: &Op, first_request_id: u64) -> Result<Step, MapperFault>;
    /// `reply` is `None` after a step that awaited no reply.
    fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first_request_id: u64,
    ) -> Result<Step, MapperFault>;
}

/// Framing and connection-level operations of one host process. An error from `push` or
/// `finish` (a framing error or a mapper fault) fails the transport closed.
pub trait MapperConnection: Operations<ConnectionOp> {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError>;
    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError>;
    /// What the host reported about itself, after `setup`.
    fn identity(&mut self) -> Result<Option<String>, MapperFault>;
}

/// Mapping state of one native session.
pub trait MapperSession: Operations<SessionOp> {
    /// Maps a batch of input in arrival order. Input the mapper cannot map comes back as a
    /// `Terminal::Broken` action: for the coordinator that is a broken stream. The batch is
    /// handed over: a WebAssembly mapper moves it into the sandbox instead of copying it.
    fn map(&mut self, inputs: Vec<SessionInput>) -> Result<Effects, MapperFault>;
    /// The requests the last `map` announced, with ids from `first_request_id`.
    fn issue(&mut self, first_request_id: u64) -> Result<Outgoing, MapperFault>;
}
