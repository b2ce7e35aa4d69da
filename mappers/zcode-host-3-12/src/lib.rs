//! The `zcode-host-3.12` mapper: ZCode 3.12.3 (CLI 0.16.5) host service ↔ ACP v1.
//!
//! A drop-in mapper: the core does not embed it, a user puts its component in the mappers
//! folder. What every generation of the desktop host shares is in `zcode-host-common`; this
//! crate holds what changed in 3.12.3: the contract and launch plan (built-in provider config,
//! the `model-selection` service), the model catalogue, the workspace presentation that
//! replaced `readWorkspaceState`, and plan as a flag beside the editing mode. Natively it is
//! [`HostV312Mapper`]; built for `wasm32` it exports the same logic as a `zcode:mapper`
//! component. Like every mapper it has no clock, randomness, filesystem or environment.

pub mod catalogue;
pub mod contract;
pub mod generation;
pub mod providers;

#[cfg(test)]
mod tests;

#[cfg(target_arch = "wasm32")]
zcode_host_common::export_guest! {
    name: "zcode-host-3.12",
    contract: crate::contract::contract,
    launch_plan: crate::contract::launch_plan,
    auth_plan: crate::contract::auth_plan,
    connection: crate::HostV312Connection = crate::HostV312Connection::new(),
    session: crate::HostV312Session = |init| crate::HostV312Session::new(init),
}

use std::sync::OnceLock;

use zcode_contract::{
    AuthCommand, Contract, LaunchPlan, Mapper, MapperConnection, MapperError, MapperFault,
    MapperSession, SessionInit, VerifiedInstall,
};

/// One host process of ZCode 3.12.3.
pub type HostV312Connection = zcode_host_common::connection::Connection<providers::Catalogue>;
/// The mapping state of one ZCode 3.12.3 session.
pub type HostV312Session = zcode_host_common::session::Session<generation::HostV312>;

/// The mapper, natively.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostV312Mapper;

impl Mapper for HostV312Mapper {
    fn source(&self) -> &str {
        "native:zcode-host-3.12"
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
        Ok(Box::new(HostV312Connection::new()))
    }

    fn session(&self, init: &SessionInit) -> Result<Box<dyn MapperSession>, MapperFault> {
        Ok(Box::new(HostV312Session::new(init)))
    }
}
