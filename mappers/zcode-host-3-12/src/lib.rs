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

/// One host process of ZCode 3.12.3.
pub type HostV312Connection = zcode_host_common::connection::Connection<providers::Catalogue>;
/// The mapping state of one ZCode 3.12.3 session.
pub type HostV312Session = zcode_host_common::session::Session<generation::HostV312>;

zcode_host_common::native_mapper! {
    /// The mapper, natively.
    pub struct HostV312Mapper {
        source: "native:zcode-host-3.12",
        contract: contract::contract,
        launch_plan: contract::launch_plan,
        auth_plan: contract::auth_plan,
        connection: HostV312Connection,
        session: HostV312Session,
    }
}
