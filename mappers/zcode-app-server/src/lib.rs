//! The `zcode-app-server` mapper: the Agent every ZCode Desktop 3.14-4.0 bundles, run as
//! `<Electron> resources/glm/zcode.cjs app-server --stdio` ↔ ACP v1
//! (`docs/mapper-zcode-app-server.md`).
//!
//! Plain Rust, built natively (tests, benchmarks) and for wasm32 (the lead wires the SDK's
//! export macro at integration). The mapper has no clock, randomness, filesystem or
//! environment: everything it knows comes through the contract (hence `BTreeMap` throughout).

mod base64;
pub mod connection;
pub mod contract;
mod conversation;
mod crc32;
mod events;
mod history;
mod interactions;
mod json;
pub mod releases;
pub mod session;
mod time;
mod tools;
mod v4;
mod wire;

pub use connection::AppServerConnection;
pub use contract::{auth_plan, contract, launch_plan};
pub use session::AppServerSession;

use zcode_contract::{
    AuthCommand, Contract, LaunchPlan, Mapper, MapperConnection, MapperError, MapperFault,
    MapperSession, SessionInit, VerifiedInstall,
};

/// The mapper, natively (written by hand until the SDK's native-mapper macro is available).
pub struct AppServerMapper {
    contract: Contract,
}

impl Default for AppServerMapper {
    fn default() -> Self {
        Self { contract: contract::contract() }
    }
}

impl Mapper for AppServerMapper {
    fn source(&self) -> &str {
        "native:zcode-app-server"
    }

    fn contract(&self) -> &Contract {
        &self.contract
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
        Ok(Box::new(AppServerConnection::new()))
    }

    fn session(&self, init: &SessionInit) -> Result<Box<dyn MapperSession>, MapperFault> {
        Ok(Box::new(AppServerSession::new(init)))
    }
}

#[cfg(test)]
mod connection_tests;
#[cfg(test)]
mod contract_tests;
