//! What the mappers for the ZCode desktop host service share, generation after generation
//! (`zcode-task-v1` for ZCode 3.11.2, `zcode-host-3.12` for ZCode 3.12.3): the bridge's NDJSON
//! envelope, the session state machine, events, tools, interactions, prompt conversion,
//! history replay and plan proposals.
//!
//! A generation crate supplies what differs — its contract and launch plan, how a session is
//! opened, its modes and config options ([`session::Generation`]) and how a connection checks
//! for a model provider ([`connection::ProviderCheck`]) — and exports the WebAssembly guest with
//! [`export_guest!`]. This crate exports no guest itself.
//!
//! Like the guests, everything here runs without clock, randomness, filesystem or environment;
//! hence `BTreeMap` throughout (std's `HashMap` seeds its hasher from `wasi:random`, which the
//! sandbox does not provide).

pub mod component_check;
pub mod connection;
pub mod envelope;
pub mod events;
mod guest;
pub mod history;
pub mod install;
pub mod interactions;
pub mod json;
mod native;
pub mod ops;
pub mod plan;
pub mod prompt;
pub mod session;
pub mod settings;
pub mod state;
pub mod text;
pub mod tools;

#[cfg(any(test, feature = "acp-check"))]
pub mod acp_check;

use zcode_contract::{
    Action, ConnectionOp, Inbound, MapperConnection, MapperError, MapperFault, MapperSession,
    NativeReply, SessionOp, Step, Terminal,
};

use connection::{Connection, ProviderCheck};
use session::{Generation, Session};

impl<P: ProviderCheck + Send> MapperConnection for Connection<P> {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        Connection::push(self, bytes)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        Connection::finish(self)
    }

    fn start(
        &mut self,
        op_id: u64,
        op: &ConnectionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(Connection::start(self, op_id, op, first_request_id))
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: &NativeReply,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(Connection::resume(self, op_id, reply, first_request_id))
    }
}

impl<G> MapperSession for Session<G>
where
    G: Generation + Send,
    G::Stage: Send,
{
    fn start(
        &mut self,
        op_id: u64,
        op: &SessionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(Session::start(self, op_id, op, first_request_id))
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: &NativeReply,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(Session::resume(self, op_id, reply, first_request_id))
    }

    /// Like the WebAssembly runtime: a mapper error is a broken stream.
    fn map_event(&mut self, payload: &str) -> Result<Vec<Action>, MapperFault> {
        Ok(Session::map_event(self, payload)
            .unwrap_or_else(|problem| vec![Action::Terminal(Terminal::Broken(problem))]))
    }
}
