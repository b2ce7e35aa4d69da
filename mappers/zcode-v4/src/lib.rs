//! ZCode's V4 conversation protocol, for every mapper that speaks it: `zcode-app-server` (the
//! Agent's NDJSON pipe, where V4 rides next to the legacy `session/*` methods) and
//! `zcode-services-v4` (the Services Server's binary IPC). The transports differ; the
//! conversation does not. Here is what the two share, by layer:
//!
//! - bytes: [`codec`] (CRC-32 and base64, from the `crc32fast` and `base64` crates);
//! - frames: [`wire`] (physical and logical frames, read strictly), [`fragments`] (reassembly,
//!   with the limits and strictness each mapper keeps), [`stream`] (the streamed deltas read
//!   without a tree) and [`sequence`] (sequence, gap and resync rules);
//! - the conversation: [`state`] (the snapshot and its `state.updated` patches), [`rows`]
//!   (ZCode's own projection of a turn);
//! - commands: [`command`] (envelopes and acknowledgements), [`fork`] (a fork's target and
//!   command);
//! - ACP: [`acp`] (rows as session updates, the completion rule, interactions, settings,
//!   plans and tool calls: what a V4-only mapper shows);
//! - a session: [`follow`] (its state, and the conversation followed frame by frame, with the
//!   recovery and paging requests it needs);
//! - reading: [`schema`] (ZCode's strict shapes).
//!
//! A mapper crate adds its transport, its session operations and its ACP mapping, and exports
//! the component; this crate exports nothing. Sources are ZCode 3.15.1
//! (`packages/shared/src/zcode-protocol-v4/*`), cited in each module. Like the guests, nothing
//! here uses a clock, randomness, the filesystem or the environment.

pub mod acp;
pub mod attachment;
pub mod codec;
pub mod command;
pub mod follow;
pub mod fork;
pub mod fragments;
pub mod rows;
pub mod schema;
pub mod sequence;
pub mod state;
pub mod stream;
pub mod wire;
