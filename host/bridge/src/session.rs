//! A mapper session bound to one host bridge: its operations, and the mapping of what is routed
//! to it, including the native requests and writes that mapping asks for.

use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::task::JoinSet;
use zcode_contract::{Action, MapperFault, MapperSession, OpResult, SessionInput, SessionOp};

use crate::deadline::Deadline;
use crate::driver::{UpdateSink, check, drive, timed_out};
use crate::error::OpFailure;
use crate::ids::LinkId;
use crate::shared::{Owner, ReplyTo, Shared, Submission, SubmitError};
use crate::sync::lock;

/// What the bridge routes to one session, in arrival order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionInbound {
    /// Native input for the session: hand it to [`SessionLink::map`].
    Input(SessionInput),
    /// The transport failed closed (or is shutting down); nothing more will arrive.
    TransportClosed(String),
}

/// Native input queued for one session at most: when the session falls behind, the bridge
/// stops reading the host's stdout, so the backlog stays in ZCode's pipe, not in this process.
pub const SESSION_QUEUE: usize = 256;

/// The bytes of native input queued for one session at most, whichever bound comes first: one
/// input of the Services Server can carry a thousand deltas, so 256 of them could be tens of
/// megabytes. An input larger than this still goes, alone. 256 KiB (it was 4 MiB, then 1): what
/// is queued while a fast client reads a long turn is peak memory (issue 27), and a bigger
/// queue streamed no faster.
pub const SESSION_QUEUE_BYTES: usize = 1 << 18;

/// One queued input, holding its share of the queue's bytes until the session takes it.
pub(crate) struct Queued {
    input: SessionInput,
    _room: OwnedSemaphorePermit,
}

/// The sending side of a session's queue: a slot and room for the input's bytes, both waited
/// for, so a full queue stops its producer.
#[derive(Clone)]
pub(crate) struct SessionQueue {
    slots: mpsc::Sender<Queued>,
    room: Arc<Semaphore>,
}

impl SessionQueue {
    pub(crate) fn new() -> (Self, mpsc::Receiver<Queued>) {
        let (slots, queued) = mpsc::channel(SESSION_QUEUE);
        (Self { slots, room: Arc::new(Semaphore::new(SESSION_QUEUE_BYTES)) }, queued)
    }

    /// Queues `input` if there is room now (or drops it if the session is gone); gives it back
    /// when the queue is full.
    pub(crate) fn try_send(&self, input: SessionInput) -> Result<(), SessionInput> {
        let Ok(room) = self.room.clone().try_acquire_many_owned(room_for(&input)) else {
            return Err(input);
        };
        match self.slots.try_send(Queued { input, _room: room }) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => Ok(()),
            Err(mpsc::error::TrySendError::Full(queued)) => Err(queued.input),
        }
    }

    /// Queues `input`, waiting for room (dropped if the session is gone).
    pub(crate) async fn send(&self, input: SessionInput) {
        let Ok(room) = self.room.clone().acquire_many_owned(room_for(&input)).await else {
            return;
        };
        let _ = self.slots.send(Queued { input, _room: room }).await;
    }
}

/// The share of the queue's bytes `input` takes: its size, at least one, at most all of it.
fn room_for(input: &SessionInput) -> u32 {
    // SESSION_QUEUE_BYTES fits in a u32.
    input.len().clamp(1, SESSION_QUEUE_BYTES) as u32
}

/// The ordered stream of what is routed to one session: its input (a bounded queue), then
/// `TransportClosed` once, after everything queued before the close.
pub struct SessionReceiver {
    input: mpsc::Receiver<Queued>,
    closed: watch::Receiver<Option<String>>,
    /// `TransportClosed` was returned; the stream has ended.
    ended: bool,
}

impl SessionReceiver {
    pub(crate) fn new(
        input: mpsc::Receiver<Queued>,
        closed: watch::Receiver<Option<String>>,
    ) -> Self {
        Self { input, closed, ended: false }
    }

    /// The next item; `None` once `TransportClosed` was returned (or the bridge is gone).
    pub async fn recv(&mut self) -> Option<SessionInbound> {
        if self.ended {
            return None;
        }
        let input = tokio::select! {
            biased;
            input = self.input.recv() => input,
            _ = self.closed.wait_for(Option::is_some) => self.input.try_recv().ok(),
        };
        match input {
            // Taking the input gives its bytes back to the queue.
            Some(queued) => Some(SessionInbound::Input(queued.input)),
            None => self.end(),
        }
    }

    /// The next item if one is ready now.
    pub fn try_recv(&mut self) -> Option<SessionInbound> {
        if self.ended {
            return None;
        }
        match self.input.try_recv() {
            Ok(queued) => Some(SessionInbound::Input(queued.input)),
            Err(_) if self.closed.borrow().is_some() => self.end(),
            Err(_) => None,
        }
    }

    fn end(&mut self) -> Option<SessionInbound> {
        self.ended = true;
        let reason = self.closed.borrow().clone();
        Some(SessionInbound::TransportClosed(
            reason.unwrap_or_else(|| "the host bridge is gone".into()),
        ))
    }
}

/// A mapper session linked to a bridge. Clones share the session; when the last clone is
/// dropped the session's routes are removed and its input is no longer delivered.
#[derive(Clone)]
pub struct SessionLink {
    pub(crate) inner: Arc<LinkInner>,
}

pub(crate) struct LinkInner {
    pub(crate) id: LinkId,
    pub(crate) shared: Arc<Shared>,
    pub(crate) session: Mutex<Box<dyn MapperSession>>,
    /// Set by the first mapper fault; the session is unusable from then on.
    fault: Mutex<Option<MapperFault>>,
    /// The timeouts of the requests mapping issued: they end with the link, whose requests
    /// leave the pending table with it.
    timers: Mutex<JoinSet<()>>,
}

impl SessionLink {
    pub(crate) fn new(id: LinkId, shared: Arc<Shared>, session: Box<dyn MapperSession>) -> Self {
        let inner = LinkInner {
            id,
            shared,
            session: Mutex::new(session),
            fault: Mutex::new(None),
            timers: Mutex::new(JoinSet::new()),
        };
        Self { inner: Arc::new(inner) }
    }

    /// Runs a session operation; `updates` receives what it streams while it waits. A mapper
    /// fault makes the session unusable (later calls return the same fault); other sessions
    /// carry on.
    pub async fn op(&self, op: SessionOp, updates: UpdateSink<'_>) -> Result<OpResult, OpFailure> {
        self.check_usable().map_err(OpFailure::Fault)?;
        tracing::debug!(op = op.name(), "session operation");
        let owner = Owner::Session(self.inner.id);
        let result = drive(&self.inner.shared, owner, &self.inner.session, &op, updates).await;
        if let Err(OpFailure::Fault(fault)) = &result {
            self.poison(fault.clone());
        }
        result
    }

    /// Maps a batch of the input received through [`SessionInbound::Input`], carries out the
    /// native writes and requests it asks for, and returns its actions for the coordinator.
    pub fn map(&self, inputs: Vec<SessionInput>) -> Result<Vec<Action>, MapperFault> {
        self.check_usable()?;
        let result = self.map_and_issue(inputs);
        if let Err(fault) = &result {
            self.poison(fault.clone());
        }
        result
    }

    /// `map`, then `issue` if mapping asked for requests, both under the session's own lock,
    /// kept until the writes are queued: the session's writes leave in the order of its calls.
    /// `issue` draws its ids from the allocator the operations use (`ids.rs`), reserving
    /// exactly the number `map` announced.
    fn map_and_issue(&self, inputs: Vec<SessionInput>) -> Result<Vec<Action>, MapperFault> {
        let shared = &self.inner.shared;
        let mut session = lock(&self.inner.session);
        let effects = session.map(inputs)?;
        let mut actions = effects.actions;
        let mut writes = effects
            .writes
            .iter()
            .map(|write| shared.prepare_write(write))
            .collect::<Result<Vec<_>, _>>()?;
        if effects.requests == 0 {
            if !writes.is_empty() {
                self.submit(writes, &[], &[], Vec::new())?;
            }
            return Ok(actions);
        }

        let asked = effects.requests as usize;
        let ids = shared.request_ids.reserve(u64::from(effects.requests));
        let first = ids.first();
        let outgoing = session.issue(first)?;
        // Whatever the mapper returned, valid or not, used its ids: none is handed out twice.
        let committed = ids.commit(outgoing.requests.len());
        if outgoing.requests.len() != asked {
            return Err(MapperFault(format!(
                "mapping announced {asked} native requests but issued {}",
                outgoing.requests.len()
            )));
        }
        committed?;
        check(&outgoing, first, Owner::Session(self.inner.id))?;
        for write in &outgoing.writes {
            writes.push(shared.prepare_write(write)?);
        }
        let requests = outgoing
            .requests
            .iter()
            .map(|r| (r.id, r.label.as_str(), r.bytes.as_slice(), r.awaits_reply()))
            .collect();
        self.submit(writes, &outgoing.routes_added, &outgoing.routes_removed, requests)?;
        drop(session);

        let mut timers = lock(&self.inner.timers);
        // Timers that have fired are done with; the rest end with the link at the latest.
        while timers.try_join_next().is_some() {}
        for request in outgoing.requests.iter().filter(|r| r.awaits_reply()) {
            tracing::debug!(id = request.id, label = %request.label, "native request sent while mapping");
            let timeout = shared.options.request_timeout(request.timeout_ms);
            let deadline = Deadline::start(&shared.reader_waits, Some(self.inner.id), timeout);
            let (shared, id, link) = (shared.clone(), request.id, self.inner.id);
            timers.spawn(async move {
                deadline.elapsed(&shared.reader_waits).await;
                let label = shared.pending_label(id);
                if shared.take_pending(id) {
                    let lost = timed_out(id, label.as_deref(), timeout);
                    shared.deliver(link, SessionInput::Reply(lost)).await;
                }
            });
        }
        actions.extend(outgoing.updates.into_iter().map(Action::Update));
        Ok(actions)
    }

    fn submit(
        &self,
        writes: Vec<Vec<u8>>,
        routes_added: &[String],
        routes_removed: &[String],
        requests: Vec<(u64, &str, &[u8], bool)>,
    ) -> Result<(), MapperFault> {
        let link = self.inner.id;
        let submission = Submission {
            owner: Owner::Session(link),
            routes_added,
            routes_removed,
            writes,
            requests,
            reply_to: ReplyTo::Session(link),
        };
        match self.inner.shared.submit(submission) {
            // The session hears of the close through its inbound stream.
            Ok(()) | Err(SubmitError::Closed(_)) => Ok(()),
            Err(SubmitError::RouteTaken(route)) => Err(MapperFault(format!(
                "event route `{route}` already belongs to another session"
            ))),
        }
    }

    /// The fault that made this session unusable, if any.
    pub fn fault(&self) -> Option<MapperFault> {
        lock(&self.inner.fault).clone()
    }

    pub(crate) fn check_usable(&self) -> Result<(), MapperFault> {
        match self.fault() {
            Some(fault) => Err(fault),
            None => Ok(()),
        }
    }

    pub(crate) fn poison(&self, fault: MapperFault) {
        tracing::warn!(fault = %fault, "mapper session failed; it is unusable from now on");
        lock(&self.inner.fault).get_or_insert(fault);
    }
}

impl Drop for LinkInner {
    fn drop(&mut self) {
        self.shared.remove_session(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(bytes: usize) -> SessionInput {
        SessionInput::Event("x".repeat(bytes).into())
    }

    #[tokio::test]
    async fn the_queue_is_bounded_by_bytes_as_well_as_by_inputs() {
        let (queue, queued) = SessionQueue::new();
        let (_closed, watch) = watch::channel(None);
        let mut receiver = SessionReceiver::new(queued, watch);
        let quarter = SESSION_QUEUE_BYTES / 4;
        for _ in 0..4 {
            assert!(queue.try_send(event(quarter)).is_ok());
        }
        // Four inputs, far from 256, but the bytes are taken: the producer must wait.
        let refused = queue.try_send(event(1)).expect_err("no room left");
        assert_eq!(refused, event(1));
        // Taking one input gives its bytes back.
        assert!(matches!(receiver.try_recv(), Some(SessionInbound::Input(_))));
        assert!(queue.try_send(event(quarter)).is_ok());
        // An input larger than the whole queue still goes, once the queue is empty.
        let waiting = tokio::spawn({
            let queue = queue.clone();
            async move { queue.send(event(SESSION_QUEUE_BYTES * 2)).await }
        });
        for _ in 0..4 {
            assert!(matches!(receiver.recv().await, Some(SessionInbound::Input(_))));
        }
        waiting.await.unwrap();
        let Some(SessionInbound::Input(big)) = receiver.recv().await else {
            panic!("the large input was queued");
        };
        assert_eq!(big.len(), SESSION_QUEUE_BYTES * 2);
    }

    #[tokio::test]
    async fn the_queue_is_bounded_by_inputs() {
        let (queue, _queued) = SessionQueue::new();
        for _ in 0..SESSION_QUEUE {
            assert!(queue.try_send(event(1)).is_ok());
        }
        assert!(queue.try_send(event(1)).is_err(), "256 small inputs fill the queue");
    }
}
