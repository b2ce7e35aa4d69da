//! Driving one operation: mapper step → register and write requests → await replies or
//! timeouts → resume, until the mapper is done.
//!
//! Shared by connection and session operations; the caller supplies the mapper calls.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use zcode_contract::{
    MapperFault, NativeReply, NativeRequest, OpResult, Outgoing, ReplyBody, Step,
};

use crate::error::OpFailure;
use crate::shared::{Owner, Shared, Submission, SubmitError, lock};

/// Runs an operation to its end. `start(op_id, first_request_id)` and
/// `resume(op_id, reply, first_request_id)` call the mapper.
pub(crate) async fn drive(
    shared: &Arc<Shared>,
    owner: Owner,
    start: impl FnOnce(u64, u64) -> Result<Step, MapperFault>,
    mut resume: impl FnMut(u64, &NativeReply, u64) -> Result<Step, MapperFault>,
) -> Result<OpResult, OpFailure> {
    if let Some(reason) = shared.closed_reason() {
        return Err(OpFailure::Transport(reason));
    }
    let op_id = shared.next_op_id();
    let mut op = RunningOp::new(shared.clone(), owner);
    let mut progress = op.advance(|first| start(op_id, first))?;
    loop {
        if let Progress::Done(result) = progress {
            return result.map_err(OpFailure::Mapper);
        }
        let reply = op.next_reply().await;
        progress = op.advance(|first| resume(op_id, &reply, first))?;
    }
}

enum Progress {
    Waiting,
    Done(Result<OpResult, zcode_contract::MapperError>),
}

/// A request of this operation that has not been answered yet.
struct Outstanding {
    id: u64,
    /// `None` once the timer fired but the answer was already on its way.
    deadline: Option<Instant>,
    timeout: Duration,
}

struct RunningOp {
    shared: Arc<Shared>,
    owner: Owner,
    /// Kept here for the whole operation, so the receiver never sees the channel close.
    reply_tx: mpsc::UnboundedSender<NativeReply>,
    reply_rx: mpsc::UnboundedReceiver<NativeReply>,
    outstanding: Vec<Outstanding>,
}

impl RunningOp {
    fn new(shared: Arc<Shared>, owner: Owner) -> Self {
        let (reply_tx, reply_rx) = mpsc::unbounded_channel();
        Self { shared, owner, reply_tx, reply_rx, outstanding: Vec::new() }
    }

    /// One mapper call and what follows from it, atomic with respect to other operations.
    fn advance(
        &mut self,
        call: impl FnOnce(u64) -> Result<Step, MapperFault>,
    ) -> Result<Progress, OpFailure> {
        let mut next_request_id = lock(&self.shared.next_request_id);
        let first = *next_request_id;
        let outgoing = match call(first).map_err(OpFailure::Fault)? {
            Step::Done(result) => return Ok(Progress::Done(result)),
            Step::Wait(outgoing) => outgoing,
        };
        // Advance past whatever the mapper returned, valid or not: no id is handed out twice.
        *next_request_id = first + outgoing.requests.len() as u64;
        self.check(&outgoing, first).map_err(OpFailure::Fault)?;

        let submission = Submission {
            owner: self.owner,
            routes_added: &outgoing.routes_added,
            routes_removed: &outgoing.routes_removed,
            requests: outgoing
                .requests
                .iter()
                .map(|r| (r.id, r.label.as_str(), r.bytes.as_slice(), awaits_reply(r)))
                .collect(),
            reply_to: &self.reply_tx,
        };
        match self.shared.submit(submission) {
            Ok(()) => {}
            Err(SubmitError::Closed(reason)) => return Err(OpFailure::Transport(reason)),
            Err(SubmitError::RouteTaken(route)) => {
                return Err(OpFailure::Fault(MapperFault(format!(
                    "event route `{route}` already belongs to another session"
                ))));
            }
        }
        drop(next_request_id);

        let now = Instant::now();
        for request in outgoing.requests.iter().filter(|r| awaits_reply(r)) {
            let timeout = self.shared.options.request_timeout(request.timeout_ms);
            tracing::debug!(id = request.id, label = %request.label, "native request sent");
            self.outstanding.push(Outstanding {
                id: request.id,
                deadline: Some(now + timeout),
                timeout,
            });
        }
        Ok(Progress::Waiting)
    }

    /// Refuses mapper output the bridge cannot carry out.
    fn check(&self, outgoing: &Outgoing, first: u64) -> Result<(), MapperFault> {
        for (index, request) in outgoing.requests.iter().enumerate() {
            let expected = first + index as u64;
            if request.id != expected {
                return Err(MapperFault(format!(
                    "request `{}` has id {}, but the id handed out was {expected}",
                    request.label, request.id
                )));
            }
        }
        if !outgoing.requests.iter().any(awaits_reply) && self.outstanding.is_empty() {
            return Err(MapperFault("the operation waits, but no request is outstanding".into()));
        }
        let changes_routes =
            !outgoing.routes_added.is_empty() || !outgoing.routes_removed.is_empty();
        if self.owner == Owner::Connection && changes_routes {
            return Err(MapperFault("a connection operation cannot own event routes".into()));
        }
        Ok(())
    }

    /// The next reply for this operation, or `Lost` for a request whose timer fired first.
    async fn next_reply(&mut self) -> NativeReply {
        loop {
            let earliest = self
                .outstanding
                .iter()
                .filter_map(|o| o.deadline.map(|deadline| (deadline, o.id, o.timeout)))
                .min();
            let received = match earliest {
                None => self.reply_rx.recv().await,
                Some((deadline, id, timeout)) => tokio::select! {
                    biased;
                    received = self.reply_rx.recv() => received,
                    () = tokio::time::sleep_until(deadline) => {
                        if let Some(reply) = self.expire(id, timeout) {
                            return reply;
                        }
                        continue;
                    }
                },
            };
            let reply = received.expect("the operation holds a sender of its own reply channel");
            self.outstanding.retain(|o| o.id != reply.id);
            return reply;
        }
    }

    /// The timer of request `id` fired. If the request is still pending it becomes `Lost` and
    /// any later answer is dropped as late; otherwise its answer is already in the channel.
    fn expire(&mut self, id: u64, timeout: Duration) -> Option<NativeReply> {
        let label = self.shared.pending_label(id);
        if !self.shared.take_pending(id) {
            if let Some(entry) = self.outstanding.iter_mut().find(|o| o.id == id) {
                entry.deadline = None;
            }
            return None;
        }
        self.outstanding.retain(|o| o.id != id);
        let millis = timeout.as_millis();
        tracing::warn!(id, label = label.as_deref().unwrap_or(""), timeout_ms = %millis, "native request timed out");
        Some(NativeReply { id, body: ReplyBody::Lost(format!("timed out after {millis} ms")) })
    }
}

impl Drop for RunningOp {
    /// Requests still outstanding when the operation ends (done early, failed, or its future
    /// dropped) leave the pending table, so their answers are dropped as late.
    fn drop(&mut self) {
        if !self.outstanding.is_empty() {
            self.shared.forget_pending(self.outstanding.iter().map(|o| o.id));
        }
    }
}

/// A request with a zero timeout expects no reply (a notification, a cancel, an event listen):
/// it is written but not tracked, and the operation does not wait for it.
fn awaits_reply(request: &NativeRequest) -> bool {
    request.timeout_ms != 0
}
