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

pub mod acp;
pub mod connection;
pub mod contract;
pub mod hello;
pub mod ipc;
pub mod json;
pub mod rpc;
pub mod session;
pub mod sessions;
pub mod text;
pub mod v4;

use zcode_contract::{
    AuthCommand, ConnectionOp, Contract, Effects, Inbound, LaunchPlan, Mapper, MapperConnection,
    MapperError, MapperFault, MapperSession, NativeReply, Operations, Outgoing, SessionInit,
    SessionInput, SessionOp, Step, VerifiedInstall,
};

pub use connection::ServicesConnection;
pub use contract::{auth_plan, contract, launch_plan};
pub use session::ServicesSession;

impl Operations<ConnectionOp> for ServicesConnection {
    fn start(
        &mut self,
        op_id: u64,
        op: &ConnectionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(ServicesConnection::start(self, op_id, op, first_request_id))
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(ServicesConnection::resume(self, op_id, reply, first_request_id))
    }
}

impl MapperConnection for ServicesConnection {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        ServicesConnection::push(self, bytes)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        ServicesConnection::finish(self)
    }

    fn identity(&mut self) -> Result<Option<String>, MapperFault> {
        Ok(ServicesConnection::identity(self))
    }
}

impl Operations<SessionOp> for ServicesSession {
    fn start(
        &mut self,
        op_id: u64,
        op: &SessionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(ServicesSession::start(self, op_id, op, first_request_id))
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(ServicesSession::resume(self, op_id, reply, first_request_id))
    }
}

impl MapperSession for ServicesSession {
    fn map(&mut self, inputs: &[SessionInput]) -> Result<Effects, MapperFault> {
        Ok(ServicesSession::map(self, inputs))
    }

    fn issue(&mut self, first_request_id: u64) -> Result<Outgoing, MapperFault> {
        Ok(ServicesSession::issue(self, first_request_id))
    }
}

/// The mapper, natively.
pub struct ServicesV4Mapper {
    contract: Contract,
}

impl Default for ServicesV4Mapper {
    fn default() -> Self {
        Self::new()
    }
}

impl ServicesV4Mapper {
    pub fn new() -> Self {
        Self { contract: contract() }
    }
}

impl Mapper for ServicesV4Mapper {
    fn source(&self) -> &str {
        "native:zcode-services-v4"
    }

    fn contract(&self) -> &Contract {
        &self.contract
    }

    fn launch_plan(&self, install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        launch_plan(install)
    }

    fn auth_plan(
        &self,
        install: &VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError> {
        auth_plan(install, command)
    }

    fn connection(&self) -> Result<Box<dyn MapperConnection>, MapperFault> {
        Ok(Box::new(ServicesConnection::new()))
    }

    fn session(&self, init: &SessionInit) -> Result<Box<dyn MapperSession>, MapperFault> {
        Ok(Box::new(ServicesSession::new(init)))
    }
}

#[cfg(test)]
mod tests;
