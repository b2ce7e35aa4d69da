//! The echo mapper: the smallest complete zcode-acp mapper, for a made-up protocol (`echo`)
//! whose host is a small Node server (`host/server.mjs`). It is the worked example of
//! `docs/writing-a-mapper.md` and uses every capability of WIT `zcode:mapper@0.2.0`: a runtime
//! layout with an unpinned file and a reported identity, a credential filled into the
//! handshake by the core, binary frames and events, a request made while mapping events (when
//! events went missing), untracked writes (answers to the host's pings), and a load that
//! streams its history page by page before it is done.
//!
//! [`wire`] is the protocol on the wire, [`connection`] the host process, [`session`] one
//! session; this file ties them to the SDK.

pub mod connection;
pub mod contract;
pub mod session;
pub mod wire;

use zcode_mapper_sdk::Definition;
use zcode_mapper_sdk::contract::{
    AuthCommand, Contract, LaunchPlan, MapperError, SessionInit, VerifiedInstall,
};

pub struct Echo;

impl Definition for Echo {
    const NAME: &'static str = contract::PROTOCOL_ID;
    type Connection = connection::Connection;
    type Session = session::Session;

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

    fn connection() -> connection::Connection {
        connection::Connection::default()
    }

    fn session(init: &SessionInit) -> session::Session {
        session::Session::new(init)
    }
}

zcode_mapper_sdk::export_mapper!(Echo);

zcode_mapper_sdk::native_mapper! {
    /// The echo mapper, natively.
    pub struct EchoMapper(Echo), source: "native:echo-v1";
}
