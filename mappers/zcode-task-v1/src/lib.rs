//! The `zcode-task-v1` mapper: ZCode 3.11.2 (CLI 0.16.5) host service ↔ ACP v1.
//!
//! The mapping is plain Rust, tested natively and exposed natively as [`TaskV1Mapper`] (a
//! `zcode_contract::Mapper`), so it can be replayed and benchmarked without WebAssembly. What
//! every generation of the desktop host shares is in `zcode-host-common`; this crate holds
//! what is particular to 3.11.2: its contract and launch plan, `readWorkspaceState`, the
//! four-mode catalog and the model / thought-level options. Built for `wasm32`, it exports the
//! same logic as a `zcode:mapper` component.
//! The mapper has no clock, randomness, filesystem or environment: everything it knows comes
//! through the contract. (Hence `BTreeMap` throughout: std's `HashMap` seeds its hasher from
//! `wasi:random`, which the sandbox does not provide; `tests/wasm_imports.rs` checks this.)

pub mod contract;
pub mod generation;
pub mod workspace_state;

// The shared modules keep their former paths in this crate.
pub use zcode_host_common::{connection, envelope, ops, prompt, session};

#[cfg(test)]
mod connection_tests;
#[cfg(test)]
mod settings_tests;
#[cfg(test)]
mod tests;

#[cfg(target_arch = "wasm32")]
zcode_host_common::export_guest! {
    name: "zcode-task-v1",
    contract: crate::contract::contract,
    launch_plan: crate::contract::launch_plan,
    auth_plan: crate::contract::auth_plan,
    connection: crate::TaskV1Connection = crate::TaskV1Connection::new(),
    session: crate::TaskV1Session = |init| crate::TaskV1Session::new(init),
}

use std::sync::OnceLock;

use zcode_contract::{
    AuthCommand, Contract, LaunchPlan, Mapper, MapperConnection, MapperError, MapperFault,
    MapperSession, SessionInit, VerifiedInstall,
};

/// One host process of ZCode 3.11.2.
pub type TaskV1Connection =
    zcode_host_common::connection::Connection<workspace_state::WorkspaceState>;
/// The mapping state of one ZCode 3.11.2 session.
pub type TaskV1Session = zcode_host_common::session::Session<generation::TaskV1>;

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
