//! The ZCode task protocol, generation after generation (`zcode-task-v1` for ZCode 3.11.2,
//! `zcode-task-v2` for ZCode 3.12.3): ZCode's desktop host service driven through a bridge
//! script. Here is what the generations share: the bridge script's core and its NDJSON envelope,
//! the session state machine, events, tools, interactions, prompt conversion, history replay,
//! plan proposals, and the install layout.
//!
//! A generation crate supplies what differs — its releases and launch plan, its part of the
//! bridge script, how a session is opened, its modes and config options
//! ([`session::Generation`]) and how a connection checks for a model provider
//! ([`connection::ProviderCheck`]) — and exports the component with the SDK's
//! `export_mapper!`. This crate exports nothing itself.

pub mod bridge;
pub mod connection;
pub mod envelope;
pub mod event_text;
pub mod events;
pub mod final_read;
pub mod history;
pub mod install;
pub mod interactions;
pub mod launch;
pub mod ops;
pub mod prompt;
pub mod session;
pub mod settings;
pub mod state;
pub mod tools;

#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
