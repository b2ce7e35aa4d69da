//! The `zcode-task-v2` mapper: ZCode 3.12.3 (CLI 0.16.5) host service ↔ ACP v1, generation 2 of
//! the task protocol.
//!
//! What every generation of the task protocol shares is in `zcode-task`; this crate holds what
//! changed in 3.12.3: the releases and launch plan (the built-in provider config, the
//! `model-selection` service) and its part of the bridge script, the model catalogue, the
//! workspace presentation that replaced `readWorkspaceState`, and plan as a flag beside the
//! editing mode. Natively it is [`TaskV2Mapper`]; built for `wasm32` it exports the same logic
//! as a `zcode:mapper` component. Like every mapper it has no clock, randomness, filesystem or
//! environment.

pub mod catalogue;
pub mod contract;
pub mod generation;
pub mod providers;

#[cfg(test)]
mod tests;

use zcode_mapper_sdk::contract::{AuthCommand, Contract, LaunchPlan, MapperError, VerifiedInstall};

/// One host process of ZCode 3.12.3.
pub type TaskV2Connection =
    zcode_mapper_sdk::Linked<zcode_task::connection::Connection<providers::Catalogue>>;
/// The mapping state of one ZCode 3.12.3 session.
pub type TaskV2Session = zcode_task::session::Session<generation::TaskV2>;

/// The mapper for ZCode 3.12.3.
pub struct TaskV2Definition;

impl zcode_mapper_sdk::Mapper for TaskV2Definition {
    const NAME: &'static str = contract::PROTOCOL_ID;
    type Connection = zcode_task::connection::Connection<providers::Catalogue>;
    type Session = TaskV2Session;

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
    pub struct TaskV2Mapper(TaskV2Definition), source: "native:zcode-task-v2";
}
