//! Driving one operation: mapper step → send its updates, register and write its requests →
//! await replies or timeouts (or resume at once when it awaits nothing) → resume, until the
//! mapper is done.
//!
//! Shared by connection and session operations: both are `Operations<Op>` step machines.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use zcode_contract::{MapperFault, NativeReply, OpResult, Operations, Outgoing, ReplyBody, Step};

use crate::deadline::Deadline;
use crate::error::OpFailure;
use crate::ids::OPERATION_WINDOW;
use crate::shared::{Owner, ReplyTo, Shared, Submission, SubmitError};
use crate::sync::lock;

/// Consecutive resumes without a reply one operation may ask for: a replay streamed in pages
/// needs a few hundred; a mapper that yields forever is stopped.
const MAX_YIELDS: u32 = 100_000;

/// Where an operation's streamed updates go. `Err` (the updates are not valid ACP) fails the
/// operation as a mapper fault.
pub type UpdateSink<'a> = &'a mut (dyn FnMut(Vec<String>) -> Result<(), MapperFault> + Send);

/// Runs `op` on `machine` to its end.
pub(crate) async fn drive<Op, M>(
    shared: &Arc<Shared>,
    owner: Owner,
    machine: &Mutex<Box<M>>,
    op: &Op,
    updates: UpdateSink<'_>,
) -> Result<OpResult, OpFailure>
where
    Op: Sync,
    M: Operations<Op> + ?Sized,
{
    if let Some(reason) = shared.closed_reason() {
        return Err(OpFailure::Transport(reason));
    }
    let op_id = shared.next_op_id();
    let mut running = RunningOp::new(shared.clone(), owner);
    let mut progress =
        running.advance(machine, updates, |machine, first| machine.start(op_id, op, first))?;
    let mut yields = 0u32;
    loop {
        let reply = match progress {
            Progress::Done(result) => return result.map_err(OpFailure::Mapper),
            Progress::Yielded => {
                yields += 1;
                if yields > MAX_YIELDS {
                    return Err(OpFailure::Fault(MapperFault(format!(
                        "the operation resumed {MAX_YIELDS} times without awaiting a reply"
                    ))));
                }
                // Let what was just queued (streamed updates, writes) move on first.
                tokio::task::yield_now().await;
                None
            }
            Progress::Waiting => {
                yields = 0;
                Some(running.next_reply().await)
            }
        };
        progress = running.advance(machine, updates, |machine, first| {
            machine.resume(op_id, reply.as_ref(), first)
        })?;
    }
}

enum Progress {
    /// Replies are outstanding.
    Waiting,
    /// Nothing is awaited: resume at once, with no reply.
    Yielded,
    Done(Result<OpResult, zcode_contract::MapperError>),
}

/// A request of this operation that has not been answered yet.
struct Outstanding {
    id: u64,
    /// `None` once the timer fired but the answer was already on its way.
    deadline: Option<Deadline>,
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

    /// One mapper call and what follows from it. The call draws its request ids from the
    /// bridge's allocator (`ids.rs`) and holds only its own machine's lock, other owners' calls
    /// going on meanwhile; the lock is kept until the writes are queued, so one machine's
    /// writes leave in the order of its calls.
    fn advance<M: ?Sized>(
        &mut self,
        machine: &Mutex<Box<M>>,
        updates: UpdateSink<'_>,
        call: impl FnOnce(&mut M, u64) -> Result<Step, MapperFault>,
    ) -> Result<Progress, OpFailure> {
        let mut machine = lock(machine);
        let ids = self.shared.request_ids.reserve(OPERATION_WINDOW);
        let first = ids.first();
        let outgoing = match call(&mut machine, first).map_err(OpFailure::Fault)? {
            Step::Done(result) => {
                ids.commit(0).map_err(OpFailure::Fault)?;
                return Ok(Progress::Done(result));
            }
            Step::Wait(outgoing) => outgoing,
        };
        // Whatever the mapper returned, valid or not, used its ids: none is handed out twice.
        ids.commit(outgoing.requests.len()).map_err(OpFailure::Fault)?;
        check(&outgoing, first, self.owner).map_err(OpFailure::Fault)?;
        let Outgoing { updates: streamed, routes_added, routes_removed, writes, requests } =
            outgoing;
        let writes = writes
            .iter()
            .map(|write| self.shared.prepare_write(write))
            .collect::<Result<Vec<_>, _>>()
            .map_err(OpFailure::Fault)?;
        if !streamed.is_empty() {
            updates(streamed).map_err(OpFailure::Fault)?;
        }

        let submission = Submission {
            owner: self.owner,
            routes_added: &routes_added,
            routes_removed: &routes_removed,
            writes,
            requests: requests
                .iter()
                .map(|r| (r.id, r.label.as_str(), r.bytes.as_slice(), r.awaits_reply()))
                .collect(),
            reply_to: ReplyTo::Op(self.reply_tx.clone()),
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
        drop(machine);

        for request in requests.iter().filter(|r| r.awaits_reply()) {
            let timeout = self.shared.options.request_timeout(request.timeout_ms);
            tracing::debug!(id = request.id, label = %request.label, "native request sent");
            let deadline = Deadline::start(&self.shared.reader_waits, self.owner.link(), timeout);
            let deadline = Some(deadline);
            self.outstanding.push(Outstanding { id: request.id, deadline, timeout });
        }
        Ok(if self.outstanding.is_empty() { Progress::Yielded } else { Progress::Waiting })
    }

    /// The next reply for this operation, or `Lost` for a request whose deadline passed first.
    async fn next_reply(&mut self) -> NativeReply {
        loop {
            let waits = &self.shared.reader_waits;
            let earliest = self
                .outstanding
                .iter()
                .filter_map(|o| o.deadline.as_ref().map(|d| (d.at(waits), o.id, o.timeout)))
                .min();
            let received = match earliest {
                None => self.reply_rx.recv().await,
                Some((at, id, timeout)) => tokio::select! {
                    biased;
                    received = self.reply_rx.recv() => received,
                    () = tokio::time::sleep_until(at) => {
                        // The reader may have waited meanwhile, which moved the deadline on.
                        if self.passed(id)
                            && let Some(reply) = self.expire(id, timeout)
                        {
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

    fn passed(&self, id: u64) -> bool {
        let deadline =
            self.outstanding.iter().find(|o| o.id == id).and_then(|o| o.deadline.as_ref());
        deadline.is_some_and(|deadline| deadline.passed(&self.shared.reader_waits))
    }

    /// The deadline of request `id` passed. If the request is still pending it becomes `Lost` and
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
        Some(timed_out(id, label.as_deref(), timeout))
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

/// Refuses mapper output the bridge cannot carry out: ids other than the ones handed out, and
/// session-only effects from a connection operation.
pub(crate) fn check(outgoing: &Outgoing, first: u64, owner: Owner) -> Result<(), MapperFault> {
    for (index, request) in outgoing.requests.iter().enumerate() {
        let expected = first + index as u64;
        if request.id != expected {
            return Err(MapperFault(format!(
                "request `{}` has id {}, but the id handed out was {expected}",
                request.label, request.id
            )));
        }
    }
    if owner == Owner::Connection {
        if !outgoing.routes_added.is_empty() || !outgoing.routes_removed.is_empty() {
            return Err(MapperFault("a connection operation cannot own event routes".into()));
        }
        if !outgoing.updates.is_empty() {
            return Err(MapperFault("a connection operation cannot send session updates".into()));
        }
    }
    Ok(())
}

/// The `Lost` reply of a request that was not answered in time.
pub(crate) fn timed_out(id: u64, label: Option<&str>, timeout: Duration) -> NativeReply {
    let millis = timeout.as_millis();
    tracing::warn!(id, label = label.unwrap_or(""), timeout_ms = %millis, "native request timed out");
    NativeReply { id, body: ReplyBody::Lost(format!("timed out after {millis} ms")) }
}
