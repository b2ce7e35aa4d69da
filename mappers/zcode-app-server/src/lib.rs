//! The `zcode-app-server` mapper: the Agent every ZCode Desktop 3.14-4.0 bundles, run as
//! `<Electron> resources/glm/zcode.cjs app-server --stdio` ↔ ACP v1
//! (`docs/mapper-zcode-app-server.md`).
//!
//! Plain Rust on the mapper SDK, built natively (tests, benchmarks) and for wasm32. The V4
//! conversation protocol is the family's (`zcode_v4`): this crate is the Agent's NDJSON pipe,
//! its legacy `session/*` events and reverse requests, and the session's operations. The mapper
//! has no clock, randomness, filesystem or environment: everything it knows comes through the
//! contract (hence `BTreeMap` throughout).

pub mod account;
pub mod connection;
pub mod contract;
mod conversation;
mod events;
mod history;
mod interactions;
pub mod releases;
pub mod session;
mod subscription;
mod tools;
mod wire;

pub use connection::AppServerConnection;
pub use contract::{auth_plan, contract, launch_plan};
pub use session::AppServerSession;

use zcode_mapper_sdk::Definition;
use zcode_mapper_sdk::contract::{
    AuthCommand, Contract, LaunchPlan, MapperError, SessionInit, VerifiedInstall,
};

pub struct AppServer;

impl Definition for AppServer {
    const NAME: &'static str = contract::PROTOCOL_ID;
    type Connection = AppServerConnection;
    type Session = AppServerSession;

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
        contract::auth_plan(install, command)
    }

    fn connection() -> AppServerConnection {
        AppServerConnection::new()
    }

    fn session(init: &SessionInit) -> AppServerSession {
        AppServerSession::new(init)
    }
}

zcode_mapper_sdk::register_mapper! {
    /// The mapper, natively.
    pub struct AppServerMapper(AppServer), source: "native:zcode-app-server";
}

#[cfg(test)]
mod connection_tests;
#[cfg(test)]
mod contract_tests;
