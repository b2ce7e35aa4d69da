//! A faithful simulator of ZCode's three protocol generations: the task protocol of the 3.11.2
//! and 3.12.3 desktop host services as seen through their bridge scripts (`task/`), the Agent
//! that Desktop 3.14 and later bundle, driven over `zcode.cjs app-server --stdio`
//! (`app_server/`), and the stdio Services Server of the zcode-runtime archives 3.14.3 – 4.0.0
//! (`services/`). `runtime.rs` tells which one an install root plays.
//!
//! Layers, each using only those below it: the generations; `v4/`, the V4 conversation
//! protocol the app-server and the Services Server share; `common/`, what all of them share
//! (scenarios, faults, output, store, process). The generations never import each other
//! (`tests/layout.rs` checks it). See `docs/simulator.md`.

pub mod app_server;
mod common;
mod runtime;
pub mod services;
mod task;
mod v4;

pub use common::process::platform;
pub use runtime::{run_runner, run_runtime};
pub use services::profile::{RUNTIME_PROFILES, RuntimeProfile};

/// What kind of install a simulated release is played behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstallKind {
    /// A desktop app (the host bridge of 3.11/3.12, or the Agent of 3.14 and later).
    Desktop,
    /// A standalone runtime folder run by Node (the Services Server).
    Runtime,
}

/// A release the simulator plays, as `--simulate-version` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimulatedRelease {
    pub name: &'static str,
    pub kind: InstallKind,
    /// The app version the install's package file carries (what selects the profile).
    pub app_version: &'static str,
}

/// The simulated release named `name` (see [`profile_names`]).
pub fn simulated_release(name: &str) -> Option<SimulatedRelease> {
    if let Some(profile) = task::profile::PROFILES.iter().find(|p| p.app_version == name) {
        let app_version = profile.app_version;
        return Some(SimulatedRelease {
            name: app_version,
            kind: InstallKind::Desktop,
            app_version,
        });
    }
    if let Some(profile) = app_server::by_name(name) {
        let (name, app_version) = (profile.name, profile.app_version);
        return Some(SimulatedRelease { name, kind: InstallKind::Desktop, app_version });
    }
    RuntimeProfile::named(name).map(|profile| SimulatedRelease {
        name: profile.name,
        kind: InstallKind::Runtime,
        app_version: profile.server_version,
    })
}

/// Stable names of every simulated release: a bare app version for the host-bridge profiles
/// (`3.11.2`), `desktop-<version>` for the app-server ones (`desktop-3.18.2`), `runtime-<version>`
/// for the Services Server ones (`runtime-4.0.0`), as `--simulate-version` takes them.
pub fn profile_names() -> Vec<&'static str> {
    let host = task::profile::PROFILES.iter().map(|profile| profile.app_version);
    let desktop = app_server::PROFILES.iter().map(|profile| profile.name);
    let runtime = RUNTIME_PROFILES.iter().map(|profile| profile.name);
    host.chain(desktop).chain(runtime).collect()
}
