//! The zcode-acp mapper SDK: what every mapper needs, whatever native protocol it maps.
//!
//! A mapper crate implements [`Definition`] (its contract, launch and auth plans, and how to make
//! connection and session state) with a [`Connection`] and a [`Session`] type, then:
//!
//! - [`export_mapper!`] exports it as the `zcode:mapper@0.2.0` component (wasm32 only);
//! - [`native_mapper!`] gives the same logic natively as a `zcode_contract::Mapper`, for tests,
//!   golden traces, benchmarks and fuzzing.
//!
//! Between the two and the contract sit the parts a mapper should not write itself: batch
//! mapping, where an input that fails becomes a `terminal(broken)` action and mapping goes on,
//! and requests a session makes while mapping, issued with the ids the core hands out and their
//! replies routed back by tag ([`mapping`]); operations as step machines with checked replies
//! ([`ops`]); strict JSON readers ([`json`]); the plan proposal every generation with a plan
//! mode shows ([`plan`]) and how a tool call looks ([`tool_view`]); and helpers for a sandbox without clock or randomness ([`time`],
//! [`ids`], [`uri`], [`media`]). Test support: [`acp_check`] (feature
//! `acp-check`) and [`component_check`].
//!
//! Everything here runs without clock, randomness, filesystem or environment, like the guests:
//! hence `BTreeMap` (std's `HashMap` seeds its hasher from `wasi:random`).

pub mod component_check;
pub mod guest;
pub mod ids;
pub mod json;
pub mod log;
pub mod mapping;
pub mod media;
pub mod native;
pub mod ops;
pub mod plan;
pub mod time;
pub mod tool_view;
pub mod uri;

#[cfg(any(test, feature = "acp-check"))]
pub mod acp_check;

pub use zcode_contract as contract;

use zcode_contract::{
    AuthCommand, ConnectionOp, Contract, Effects, Inbound, LaunchPlan, MapperError, NativeData,
    NativeReply, Outgoing, SessionInit, SessionInput, SessionOp, Step, VerifiedInstall,
};

pub use mapping::{Mapped, Mapping, Request};

/// A mapper: what it accepts, how it starts the host, and the state it keeps.
pub trait Definition: 'static {
    /// Protocol id, for logs (a panic message names it).
    const NAME: &'static str;
    type Connection: Connection;
    /// A session's state machine: [`Mapping`] over a per-event [`Session`], or a type of the
    /// mapper's own that maps whole batches.
    type Session: SessionMachine;

    /// Identity and compatibility contract (pure; the core caches it).
    fn contract() -> Contract;
    fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError>;
    fn auth_plan(
        install: &VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError>;
    fn connection() -> Self::Connection;
    fn session(init: &SessionInit) -> Self::Session;
}

/// Framing and connection-level operations of one host process.
pub trait Connection: 'static {
    /// Host output → what it means. An error fails the transport closed.
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError>;
    /// End of host output.
    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError>;
    fn start(&mut self, op_id: u64, op: &ConnectionOp, first_request_id: u64) -> Step;
    /// `reply` is `None` after a step that awaited no reply.
    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first_request_id: u64) -> Step;
    /// What the host reported about itself at setup (compared with the release's `identity`).
    fn identity(&self) -> Option<String> {
        None
    }
}

/// The mapping state of one native session.
pub trait Session: 'static {
    /// What the session remembers about a request it makes while mapping, to know what the
    /// reply answers (`()` for a session that makes none).
    type Tag: 'static;

    fn start(&mut self, op_id: u64, op: &SessionOp, first_request_id: u64) -> Step;
    /// `reply` is `None` after a step that awaited no reply.
    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first_request_id: u64) -> Step;
    /// Maps one native event. An error is a broken stream ([`mapping`] turns it into a
    /// `terminal(broken)` action); nothing may be dropped silently.
    fn map_event(&mut self, event: &NativeData) -> Result<Mapped<Self::Tag>, MapperError>;
    /// Maps the reply to a request made by [`Session::map_event`] (or an earlier reply).
    fn map_reply(
        &mut self,
        tag: Self::Tag,
        reply: &NativeReply,
    ) -> Result<Mapped<Self::Tag>, MapperError> {
        let _ = tag;
        Err(json::internal(format!("Reply {} answers no request of this session", reply.id)))
    }
}

/// A session as the contract drives it: operations, and batches of input with the requests they
/// announce. [`Mapping`] is one for any per-event [`Session`] (most mappers want that: it turns
/// a failed input into a `terminal(broken)` action and routes replies by tag); a mapper that
/// must see a batch whole (to coalesce or reorder within it) implements this itself.
pub trait SessionMachine: 'static {
    fn start(&mut self, op_id: u64, op: &SessionOp, first_request_id: u64) -> Step;
    /// `reply` is `None` after a step that awaited no reply.
    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first_request_id: u64) -> Step;
    /// Maps a batch in arrival order; input it cannot map is a `terminal(broken)` action.
    fn map(&mut self, inputs: &[SessionInput]) -> Effects;
    /// The requests the last `map` announced, exactly that many, with ids from
    /// `first_request_id`.
    fn issue(&mut self, first_request_id: u64) -> Outgoing;
}
