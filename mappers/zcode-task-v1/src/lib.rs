//! The `zcode-task-v1` mapper: ZCode 3.11.2 (CLI 0.16.5) host service ↔ ACP v1.
//!
//! The mapping is plain Rust, tested natively and exposed natively as [`TaskV1Mapper`] (a
//! `zcode_contract::Mapper`), so it can be replayed and benchmarked without WebAssembly. What
//! every generation of the desktop host shares is in `zcode-host-common`; this crate holds
//! what is particular to 3.11.2: its contract and launch plan, `readWorkspaceState`, the
//! four-mode catalog and the model / thought-level options. Built for `wasm32`, it exports the
//! same logic as a `zcode:mapper` component.
//! The mapper has no clock, randomness, filesystem or environment: everything it knows comes
//! through the contract. (Hence `BTreeMap` throughout: std's `HashMap` seeds its hasher from
//! `wasi:random`, which the sandbox does not provide; `tests/wasm_imports.rs` checks this.)

pub mod contract;
pub mod generation;
pub mod workspace_state;

// The shared modules keep their former paths in this crate.
pub use zcode_host_common::{connection, envelope, ops, prompt, session};

#[cfg(test)]
mod connection_tests;
#[cfg(test)]
mod settings_tests;
#[cfg(test)]
mod tests;

#[cfg(target_arch = "wasm32")]
zcode_host_common::export_guest! {
    name: "zcode-task-v1",
    contract: crate::contract::contract,
    launch_plan: crate::contract::launch_plan,
    auth_plan: crate::contract::auth_plan,
    connection: crate::TaskV1Connection = crate::TaskV1Connection::new(),
    session: crate::TaskV1Session = |init| crate::TaskV1Session::new(init),
}

/// One host process of ZCode 3.11.2.
pub type TaskV1Connection =
    zcode_host_common::connection::Connection<workspace_state::WorkspaceState>;
/// The mapping state of one ZCode 3.11.2 session.
pub type TaskV1Session = zcode_host_common::session::Session<generation::TaskV1>;

zcode_host_common::native_mapper! {
    /// The mapper, natively.
    pub struct TaskV1Mapper {
        source: "native:zcode-task-v1",
        contract: contract::contract,
        launch_plan: contract::launch_plan,
        auth_plan: contract::auth_plan,
        connection: TaskV1Connection,
        session: TaskV1Session,
    }
}
