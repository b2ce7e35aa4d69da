//! The Agent bundled with ZCode Desktop 3.14 and later, as a host runs it:
//! `<Electron exe> <root>/resources/glm/zcode.cjs app-server --stdio` with
//! `ELECTRON_RUN_AS_NODE=1`, speaking the app-server NDJSON protocol (legacy `session/*` beside
//! the `v4/*` family, and requests of its own to the host).
//!
//! Layout: `cli` is the bundled CLI's argument handling, `server` the line reader and method
//! table, `legacy` and `v4` the two method families, `turn` the scripted model run, and the
//! small modules below them the pieces those share (envelope, schemas, reverse requests,
//! interaction race, store, catalog, faults). Facts and the choices made where the public
//! source is silent are listed in `docs/simulator.md` §12.

mod catalog;
mod cli;
mod fault;
mod interactions;
mod legacy;
mod messages;
pub mod profile;
mod provider_config;
mod reverse;
mod schemas;
mod server;
mod session;
mod snapshot;
mod store;
mod turn;
mod v4;
mod v4_commands;
mod wire;
mod zod;

pub(crate) use cli::run;
pub use profile::{AppServerProfile, Generation, PROFILES, by_name, for_app_version};
