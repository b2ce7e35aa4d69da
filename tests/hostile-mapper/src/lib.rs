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
//! the component at load); `claims-everything` replaces the contract with one whose versions
//! and hashes are empty or wildcards (the gate must match it to nothing).

// The ZCode 3.12.3 mapper's own modules, unchanged.
#[path = "../../../mappers/zcode-host-3-12/src/catalogue.rs"]
pub mod catalogue;
#[path = "../../../mappers/zcode-host-3-12/src/contract.rs"]
pub mod contract;
#[path = "../../../mappers/zcode-host-3-12/src/generation.rs"]
pub mod generation;
#[path = "../../../mappers/zcode-host-3-12/src/providers.rs"]
pub mod providers;

pub mod hostile;

#[cfg(target_arch = "wasm32")]
zcode_host_common::export_guest! {
    name: "hostile-dropin",
    contract: crate::hostile::contract,
    launch_plan: crate::contract::launch_plan,
    auth_plan: crate::contract::auth_plan,
    connection: crate::hostile::Connection = crate::hostile::Connection::new(),
    session: crate::hostile::Session = |init| crate::hostile::Session::new(init),
}
