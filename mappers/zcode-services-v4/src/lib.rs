//! The `zcode-services-v4` mapper: ZCode's stdio Services Server (the runtime archives of
//! ZCode 3.14.3 and later) ↔ ACP v1.
//!
//! The Server speaks a JSON hello line each way, then VS Code-style binary channel IPC, and
//! shows a conversation as one V4 state: a snapshot, then deltas, over a subscription
//! (`docs/mapper-zcode-services-v4.md`). The mapping is plain Rust, tested natively and exposed
//! natively as [`ServicesV4Mapper`]; built for `wasm32` it exports the same logic as a
//! `zcode:mapper` component. The V4 conversation and its ACP mapping are the family's
//! (`zcode_v4`); this crate is the Services Server's transport (hello, binary IPC, its calls)
//! and the session's operations over it.
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
    AuthCommand, Contract, LaunchPlan, MapperError, SessionInit, VerifiedInstall,
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

zcode_mapper_sdk::register_mapper! {
    /// The mapper, natively.
    pub struct ServicesV4Mapper(ServicesV4), source: "native:zcode-services-v4";
}

#[cfg(test)]
mod tests;
