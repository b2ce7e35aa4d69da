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

use zcode_contract::{
    ConnectionOp, Inbound, MapperError, NativeData, NativeReply, SessionOp, Step,
};
use zcode_mapper_sdk::Mapped;

use connection::{Connection, ProviderCheck};
use session::{Generation, Session};

impl<P: ProviderCheck + 'static> zcode_mapper_sdk::Connection for Connection<P> {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        Connection::push(self, bytes)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        Connection::finish(self)
    }

    fn start(&mut self, op_id: u64, op: &ConnectionOp, first_request_id: u64) -> Step {
        Connection::start(self, op_id, op, first_request_id)
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first_request_id: u64) -> Step {
        Connection::resume(self, op_id, reply, first_request_id)
    }
}

impl<G: Generation + Default + 'static> zcode_mapper_sdk::Session for Session<G> {
    /// The task protocol's events never ask the mapper to send anything.
    type Tag = ();

    fn new(init: &zcode_contract::SessionInit) -> Self {
        Session::new(init)
    }

    fn start(&mut self, op_id: u64, op: &SessionOp, first_request_id: u64) -> Step {
        Session::start(self, op_id, op, first_request_id)
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first_request_id: u64) -> Step {
        Session::resume(self, op_id, reply, first_request_id)
    }

    fn map_event(&mut self, event: &NativeData) -> Result<Mapped<()>, MapperError> {
        Session::map_event(self, event).map(Mapped::from)
    }
}
