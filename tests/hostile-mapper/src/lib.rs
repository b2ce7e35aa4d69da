//! A drop-in mapper that misbehaves on request (see `Cargo.toml`). It accepts what the ZCode
//! 3.12.3 mapper accepts (under its own protocol id) and behaves like it, until a prompt carries
//! `hostile:<mode>`:
//! - `trap`, `spin`, `grow`, `huge`, `env`, `print`: at the turn's first event the session
//!   panics, loops forever, allocates past any cap, returns 100 MB, reads the environment or
//!   writes to stdout;
//! - `invalid-acp`: the turn's first event becomes an update that is not ACP;
//! - `invalid-permission`: permission questions become requests that are not ACP;
//! - `invalid-after-question`: a permission question is followed, in the same event, by an
//!   update that is not ACP (the question is then open at the client and at ZCode);
//! - `conn-trap` anywhere in host output: the connection (the host's decoder) panics.
//!
//! Feature `capabilities` adds code that reads a file and opens a socket (the runtime refuses
//! the component at load); `claims-everything` replaces the releases with ones whose versions
//! and hashes are empty, wildcards or unpinned without an identity (the gate must match them to
//! nothing).

// The ZCode 3.12.3 mapper's own modules, unchanged.
#[path = "../../../mappers/zcode-task-v2/src/catalogue.rs"]
pub mod catalogue;
#[path = "../../../mappers/zcode-task-v2/src/contract.rs"]
pub mod contract;
#[path = "../../../mappers/zcode-task-v2/src/generation.rs"]
pub mod generation;
#[path = "../../../mappers/zcode-task-v2/src/providers.rs"]
pub mod providers;

pub mod hostile;

use zcode_contract::{AuthCommand, Contract, LaunchPlan, MapperError, VerifiedInstall};

/// The 3.12.3 mapper, with the misbehaving wrapper around its connection and session.
pub struct HostileDefinition;

impl zcode_mapper_sdk::Mapper for HostileDefinition {
    const NAME: &'static str = hostile::PROTOCOL_ID;
    type Connection = hostile::Connection;
    type Session = hostile::Session;

    fn contract() -> Contract {
        hostile::contract()
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

zcode_mapper_sdk::export_mapper!(HostileDefinition);
