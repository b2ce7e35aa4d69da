//! The `zcode-task-v1` mapper: ZCode 3.11.2 (CLI 0.16.5) host service ↔ ACP v1.
//!
//! The mapping is plain Rust, tested natively and exposed natively as [`TaskV1Mapper`] (a
//! `zcode_contract::Mapper`), so it can be replayed and benchmarked without WebAssembly. Built
//! for `wasm32`, the thin `guest` module exports the same logic as a `zcode:mapper` component.
//! The mapper has no clock, randomness, filesystem or environment: everything it knows comes
//! through the contract. (Hence `BTreeMap` throughout: std's `HashMap` seeds its hasher from
//! `wasi:random`, which the sandbox does not provide; `tests/wasm_imports.rs` checks this.)

pub mod connection;
pub mod contract;
pub mod envelope;
mod events;
mod history;
mod interactions;
mod json;
pub mod ops;
mod plan;
pub mod prompt;
pub mod session;
mod settings;
mod state;
mod text;
mod tools;

#[cfg(test)]
mod acp_check;
#[cfg(test)]
mod tests;

#[cfg(target_arch = "wasm32")]
mod guest;

use std::sync::OnceLock;

use zcode_contract::{
    Action, AuthCommand, ConnectionOp, Contract, Inbound, LaunchPlan, Mapper, MapperConnection,
    MapperError, MapperFault, MapperSession, NativeReply, SessionInit, SessionOp, Step, Terminal,
    VerifiedInstall,
};

pub use connection::TaskV1Connection;
pub use session::TaskV1Session;

/// The mapper, natively.
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskV1Mapper;

impl Mapper for TaskV1Mapper {
    fn source(&self) -> &str {
        "native:zcode-task-v1"
    }

    fn contract(&self) -> &Contract {
        static CONTRACT: OnceLock<Contract> = OnceLock::new();
        CONTRACT.get_or_init(contract::contract)
    }

    fn launch_plan(&self, install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        contract::launch_plan(install)
    }

    fn auth_plan(
        &self,
        install: &VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError> {
        contract::auth_plan(install, command)
    }

    fn connection(&self) -> Result<Box<dyn MapperConnection>, MapperFault> {
        Ok(Box::new(TaskV1Connection::new()))
    }

    fn session(&self, init: &SessionInit) -> Result<Box<dyn MapperSession>, MapperFault> {
        Ok(Box::new(TaskV1Session::new(init)))
    }
}

impl MapperConnection for TaskV1Connection {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        TaskV1Connection::push(self, bytes)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        TaskV1Connection::finish(self)
    }

    fn start(
        &mut self,
        op_id: u64,
        op: &ConnectionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(TaskV1Connection::start(self, op_id, op, first_request_id))
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: &NativeReply,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(TaskV1Connection::resume(self, op_id, reply, first_request_id))
    }
}

impl MapperSession for TaskV1Session {
    fn start(
        &mut self,
        op_id: u64,
        op: &SessionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(TaskV1Session::start(self, op_id, op, first_request_id))
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: &NativeReply,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(TaskV1Session::resume(self, op_id, reply, first_request_id))
    }

    /// Like the WebAssembly runtime: a mapper error is a broken stream.
    fn map_event(&mut self, payload: &str) -> Result<Vec<Action>, MapperFault> {
        Ok(TaskV1Session::map_event(self, payload)
            .unwrap_or_else(|problem| vec![Action::Terminal(Terminal::Broken(problem))]))
    }
}
