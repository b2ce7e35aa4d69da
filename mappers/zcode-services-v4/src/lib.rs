//! The `zcode-services-v4` mapper: ZCode's stdio Services Server (the runtime archives of
//! ZCode 3.14.3 and later) ↔ ACP v1.
//!
//! The Server speaks a JSON hello line each way, then VS Code-style binary channel IPC, and
//! shows a conversation as one V4 state: a snapshot, then deltas, over a subscription
//! (`docs/mapper-zcode-services-v4.md`). The mapping is plain Rust, tested natively and exposed
//! natively as [`ServicesV4Mapper`]; built for `wasm32` it exports the same logic as a
//! `zcode:mapper` component (the SDK's export macro is wired in at integration).
//!
//! The mapper has no clock, randomness, filesystem or environment: everything it knows comes
//! through the contract. (Hence `BTreeMap` throughout: std's `HashMap` seeds its hasher from
//! `wasi:random`, which the sandbox does not provide.)

pub mod connection;
pub mod contract;
pub mod hello;
pub mod ipc;
pub mod rpc;
pub mod session;
pub mod sessions;

pub use connection::ServicesConnection;
pub use contract::{auth_plan, contract, launch_plan};
pub use session::ServicesSession;

use zcode_mapper_sdk::Definition;
use zcode_mapper_sdk::contract::{
    AuthCommand, ConnectionOp, Contract, Effects, Inbound, LaunchPlan, MapperError, NativeReply,
    Outgoing, SessionInit, SessionInput, SessionOp, Step, VerifiedInstall,
};

pub struct ServicesV4;

impl Definition for ServicesV4 {
    const NAME: &'static str = contract::PROTOCOL_ID;
    type Connection = ServicesConnection;
    type Session = ServicesSession;

    fn contract() -> Contract {
        contract()
    }

    fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        launch_plan(install)
    }

    fn auth_plan(
        install: &VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError> {
        auth_plan(install, command)
    }

    fn connection() -> ServicesConnection {
        ServicesConnection::new()
    }

    fn session(init: &SessionInit) -> ServicesSession {
        ServicesSession::new(init)
    }
}

impl zcode_mapper_sdk::Connection for ServicesConnection {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        ServicesConnection::push(self, bytes)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        ServicesConnection::finish(self)
    }

    fn start(&mut self, op_id: u64, op: &ConnectionOp, first_request_id: u64) -> Step {
        ServicesConnection::start(self, op_id, op, first_request_id)
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first_request_id: u64) -> Step {
        ServicesConnection::resume(self, op_id, reply, first_request_id)
    }

    fn identity(&self) -> Option<String> {
        ServicesConnection::identity(self)
    }
}

/// The session maps whole batches itself (fragments and deltas of one frame arrive together),
/// so it is its own state machine rather than an SDK `Session`.
impl zcode_mapper_sdk::SessionMachine for ServicesSession {
    fn start(&mut self, op_id: u64, op: &SessionOp, first_request_id: u64) -> Step {
        ServicesSession::start(self, op_id, op, first_request_id)
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first_request_id: u64) -> Step {
        ServicesSession::resume(self, op_id, reply, first_request_id)
    }

    fn map(&mut self, inputs: &[SessionInput]) -> Effects {
        ServicesSession::map(self, inputs)
    }

    fn issue(&mut self, first_request_id: u64) -> Outgoing {
        ServicesSession::issue(self, first_request_id)
    }
}

zcode_mapper_sdk::export_mapper!(ServicesV4);

zcode_mapper_sdk::native_mapper! {
    /// The mapper, natively.
    pub struct ServicesV4Mapper(ServicesV4), source: "native:zcode-services-v4";
}

#[cfg(test)]
mod tests;
