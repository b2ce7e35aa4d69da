//! The mapping state of one native session: operations (open, prompt, cancel, settings,
//! answers, close) as step machines over the Services Server's calls, and the session's
//! conversation followed with the family's `zcode_v4::follow`.

mod calls;
pub mod command;
mod history;
mod open;
mod ops;
mod prompt;
mod settings;
mod upload;

use std::collections::BTreeMap;

use zcode_contract::{
    Effects, NativeReply, NativeRequest, Outgoing, SessionInit, SessionInput, SessionOp, Step,
};
use zcode_v4::follow::{Follow, Labels};

/// The session resource.
pub struct ServicesSession {
    follow: Follow,
    ops: BTreeMap<u64, ops::PendingOp>,
}

impl ServicesSession {
    pub fn new(init: &SessionInit) -> Self {
        let labels = Labels { resync: calls::RESYNC_LABEL, rows_page: calls::ROWS_LABEL };
        Self { follow: Follow::new(init, labels), ops: BTreeMap::new() }
    }
}

/// The session maps whole batches itself (fragments and deltas of one frame arrive together),
/// so it is its own state machine rather than an SDK `Session`.
impl zcode_mapper_sdk::SessionMachine for ServicesSession {
    fn start(&mut self, op_id: u64, op: &SessionOp, first: u64) -> Step {
        self.follow.state.op_request = first;
        ops::start(self, op_id, op, first)
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first: u64) -> Step {
        ops::resume(self, op_id, reply, first)
    }

    /// Maps a batch of input in arrival order; a protocol break is a `terminal(broken)`.
    fn map(&mut self, inputs: &[SessionInput]) -> Effects {
        self.follow.map(inputs)
    }

    /// Writes the requests the last `map` announced.
    fn issue(&mut self, first: u64) -> Outgoing {
        let workspace = self.follow.state.workspace.clone();
        let mut requests: Vec<NativeRequest> = Vec::new();
        for (index, request) in std::mem::take(&mut self.follow.announced).into_iter().enumerate() {
            let id = first + index as u64;
            let call = calls::call(&self.follow.state, &workspace, &request);
            requests.push(call.into_request(id));
            self.follow.in_flight.insert(id, request);
        }
        Outgoing { requests, ..Outgoing::default() }
    }
}
