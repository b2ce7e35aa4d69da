//! The `zcode-task-v1` mapper: ZCode 3.11.2 (CLI 0.16.5) host service ↔ ACP v1, generation 1 of
//! the task protocol.
//!
//! What every generation of the task protocol shares is in `zcode-task`; this crate holds what
//! is particular to 3.11.2: its releases and launch plan, its part of the bridge script,
//! `readWorkspaceState`, the four-mode catalog and the model / thought-level options. The
//! mapping is plain Rust, tested natively and exposed natively as [`TaskV1Mapper`]; built for
//! `wasm32` it exports the same logic as a `zcode:mapper` component. The mapper has no clock,
//! randomness, filesystem or environment: everything it knows comes through the contract.

pub mod contract;
pub mod generation;
pub mod workspace_state;

#[cfg(test)]
mod connection_tests;
#[cfg(test)]
mod settings_tests;
#[cfg(test)]
mod tests;

use zcode_mapper_sdk::contract::{AuthCommand, Contract, LaunchPlan, MapperError, VerifiedInstall};

/// One host process of ZCode 3.11.2.
pub type TaskV1Connection =
    zcode_mapper_sdk::Linked<zcode_task::connection::Connection<workspace_state::WorkspaceState>>;
/// The mapping state of one ZCode 3.11.2 session.
pub type TaskV1Session = zcode_task::session::Session<generation::TaskV1>;

/// The mapper for ZCode 3.11.2.
pub struct TaskV1Definition;

impl zcode_mapper_sdk::Mapper for TaskV1Definition {
    const NAME: &'static str = contract::PROTOCOL_ID;
    type Connection = zcode_task::connection::Connection<workspace_state::WorkspaceState>;
    type Session = TaskV1Session;

    fn contract() -> Contract {
        contract::contract()
    }

    fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        contract::launch_plan(install)
    }

    fn auth_plan(
        install: &VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError> {
        zcode_task::install::auth_plan(install, command)
    }
}

zcode_mapper_sdk::register_mapper! {
    /// The mapper, natively.
    pub struct TaskV1Mapper(TaskV1Definition), source: "native:zcode-task-v1";
}
