//! The Agent bundled with ZCode Desktop 3.14 and later, as a host runs it:
//! `<Electron exe> <root>/resources/glm/zcode.cjs app-server --stdio` with
//! `ELECTRON_RUN_AS_NODE=1`, speaking the app-server NDJSON protocol (legacy `session/*` beside
//! the `v4/*` family, and requests of its own to the host).
//!
//! Layout, each layer using only the ones below it:
//!
//! 1. `cli`: the bundled CLI's arguments; `stdio`: the line reader, request queue and method
//!    table.
//! 2. `legacy` and `v4` (with `v4_commands`): the two method families; `turn`: the scripted
//!    model run. None of the three imports another.
//! 3. `server`: the state they share and the session operations they have in common.
//! 4. `session` (with `delta_batch`), `snapshot`, `gateway` (the V4 transport), `store`,
//!    `catalog`, `messages`, `interactions`, `reverse`, `schemas`, `wire`, `fault`, `profile`:
//!    the pieces.
//!
//! The V4 conversation itself (publisher, wire, command vocabulary and schemas) is `crate::v4`,
//! and the validator `crate::common::zod`, both shared with the Services Server. Facts and the
//! choices made where the public source is silent are listed in `docs/simulator.md` §12.

mod catalog;
mod cli;
mod delta_batch;
mod fault;
mod gateway;
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
mod stdio;
mod store;
mod turn;
mod v4;
mod v4_commands;
mod wire;

// The modules here still name the validator `super::zod`.
use crate::common::zod;
pub(crate) use cli::run;
pub use profile::{AppServerProfile, CliFamily, PROFILES, by_name, for_app_version};
