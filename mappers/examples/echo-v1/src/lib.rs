//! The echo mapper: the smallest complete zcode-acp mapper, for a made-up protocol (`echo`)
//! whose host is a small Node server (`host/server.mjs`), and the worked example of
//! `docs/writing-a-mapper.md`. [`contract`] says which installs it drives, [`wire`] is the
//! protocol on the wire, [`connection`] the host process, [`session`] one session.

pub mod connection;
pub mod contract;
pub mod session;
pub mod wire;

use zcode_mapper_sdk::contract::{Contract, LaunchPlan, MapperError, VerifiedInstall};

pub struct Echo;

/// The rest (the connection made with `Default`, sessions with `Session::new`, no login) is
/// the SDK's default.
impl zcode_mapper_sdk::Mapper for Echo {
    const NAME: &'static str = contract::PROTOCOL_ID;
    type Connection = connection::Connection;
    type Session = session::Session;

    fn contract() -> Contract {
        contract::contract()
    }

    fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        contract::launch_plan(install)
    }
}

zcode_mapper_sdk::register_mapper! {
    /// The echo mapper, natively.
    pub struct EchoMapper(Echo), source: "native:echo-v1";
}
