//! State shared by the bridge handle, its tasks and its session links.

use std::collections::HashMap;
use std::process::ExitStatus;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, watch};
use zcode_contract::{
    MapperConnection, MapperFault, NativeReply, NativeWrite, ReplyBody, RoutedEvent, SessionInput,
};
use zcode_credentials::CredentialStore;

use crate::deadline::ReaderWaits;
use crate::group::ProcessGroup;
use crate::ids::{LinkId, RequestIds};
use crate::options::BridgeOptions;
use crate::session::SessionQueue;
use crate::sync::lock;

pub(crate) struct Shared {
    pub(crate) options: BridgeOptions,
    pub(crate) pid: u32,
    pub(crate) group: ProcessGroup,
    /// Fills credentials into writes that ask for one; nothing else in the bridge sees them.
    pub(crate) credentials: CredentialStore,
    /// Framing and connection ops: one mapper instance, so the reader's `push`/`finish` and
    /// connection ops' guest calls take turns on it. Never held across an await.
    pub(crate) connection: Mutex<Box<dyn MapperConnection>>,
    /// Where every owner's guest calls draw their request ids; never locked across a call.
    pub(crate) request_ids: RequestIds,
    pub(crate) next_op_id: AtomicU64,
    pub(crate) next_link_id: AtomicU64,
    state: Mutex<State>,
    /// Bumped whenever `ready` or `closed` changes; waiters re-check the state.
    changed: watch::Sender<()>,
    /// The child's exit status once the reaper has collected it.
    pub(crate) exit: watch::Sender<Option<ExitStatus>>,
    /// Set once stdout reached EOF and its last frames were handled.
    pub(crate) stdout_done: watch::Sender<bool>,
    /// Set once the termination sequence has finished.
    pub(crate) terminated: watch::Sender<bool>,
    /// Why the transport closed, for the session streams: each ends with it, after the input
    /// queued before the close.
    closed: watch::Sender<Option<String>>,
    /// The stdout reader's waits for sessions to take its input: request deadlines do not
    /// count them.
    pub(crate) reader_waits: ReaderWaits,
}

struct State {
    /// Why the transport closed; `Some` is final.
    closed: Option<String>,
    ready: bool,
    /// Queue of the writer task; dropped on close, which closes the child's stdin once the
    /// queued bytes are written.
    writer: Option<mpsc::UnboundedSender<Vec<u8>>>,
    pending: HashMap<u64, Pending>,
    /// Event route → the link that owns it.
    routes: HashMap<String, LinkId>,
    sessions: HashMap<LinkId, SessionQueue>,
}

struct Pending {
    reply_to: ReplyTo,
    label: String,
}

/// Who waits for a reply: an operation, or a session that issued the request while mapping.
#[derive(Clone)]
pub(crate) enum ReplyTo {
    Op(mpsc::UnboundedSender<NativeReply>),
    Session(LinkId),
}

/// Who an operation runs for: route ownership follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    Connection,
    Session(LinkId),
}

impl Owner {
    pub(crate) fn link(self) -> Option<LinkId> {
        match self {
            Owner::Connection => None,
            Owner::Session(link) => Some(link),
        }
    }
}

/// What an operation asks to write, already validated against its allocated ids.
pub(crate) struct Submission<'a> {
    pub(crate) owner: Owner,
    pub(crate) routes_added: &'a [String],
    pub(crate) routes_removed: &'a [String],
    /// Untracked bytes, written first, credentials already filled.
    pub(crate) writes: Vec<Vec<u8>>,
    /// (id, label, bytes, whether a reply is awaited) in write order.
    pub(crate) requests: Vec<(u64, &'a str, &'a [u8], bool)>,
    pub(crate) reply_to: ReplyTo,
}

/// Input for one session, to be queued in order by [`Shared::send`].
pub(crate) struct Delivery {
    link: LinkId,
    to: SessionQueue,
    input: SessionInput,
}

/// Why a submission was refused.
pub(crate) enum SubmitError {
    Closed(String),
    RouteTaken(String),
}

impl Shared {
    pub(crate) fn new(
        options: BridgeOptions,
        pid: u32,
        group: ProcessGroup,
        credentials: CredentialStore,
        connection: Box<dyn MapperConnection>,
        writer: mpsc::UnboundedSender<Vec<u8>>,
    ) -> Self {
        Self {
            options,
            pid,
            group,
            credentials,
            connection: Mutex::new(connection),
            request_ids: RequestIds::default(),
            next_op_id: AtomicU64::new(1),
            next_link_id: AtomicU64::new(1),
            state: Mutex::new(State {
                closed: None,
                ready: false,
                writer: Some(writer),
                pending: HashMap::new(),
                routes: HashMap::new(),
                sessions: HashMap::new(),
            }),
            changed: watch::Sender::new(()),
            exit: watch::Sender::new(None),
            stdout_done: watch::Sender::new(false),
            terminated: watch::Sender::new(false),
            closed: watch::Sender::new(None),
            reader_waits: ReaderWaits::default(),
        }
    }

    /// What the session streams watch for the close.
    pub(crate) fn closed_watch(&self) -> watch::Receiver<Option<String>> {
        self.closed.subscribe()
    }

    pub(crate) fn next_op_id(&self) -> u64 {
        self.next_op_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn closed_reason(&self) -> Option<String> {
        lock(&self.state).closed.clone()
    }

    pub(crate) fn is_ready(&self) -> bool {
        lock(&self.state).ready
    }

    /// A receiver that wakes on the next change of `ready`/`closed`; subscribe before checking.
    pub(crate) fn subscribe_changes(&self) -> watch::Receiver<()> {
        self.changed.subscribe()
    }

    /// Fails the transport closed (idempotent; the first reason wins): every pending request is
    /// answered `Lost`, every linked session is told, the writer queue is dropped so stdin
    /// closes, and the supervisor starts terminating the child.
    pub(crate) fn fail_closed(&self, reason: String) {
        let mut state = lock(&self.state);
        if state.closed.is_some() {
            return;
        }
        tracing::info!(reason = %reason, "ZCode host transport closed");
        // Sessions learn of the close below; they cannot use a reply any more.
        for (id, pending) in state.pending.drain() {
            if let ReplyTo::Op(op) = pending.reply_to {
                let _ = op.send(NativeReply { id, body: ReplyBody::Lost(reason.clone()) });
            }
        }
        state.routes.clear();
        state.writer = None;
        state.closed = Some(reason.clone());
        drop(state);
        self.closed.send_replace(Some(reason));
        self.changed.send_replace(());
    }

    pub(crate) fn mark_ready(&self) {
        lock(&self.state).ready = true;
        self.changed.send_replace(());
    }

    /// Applies an operation's route changes, registers its requests and queues their bytes,
    /// all under one lock so the transport cannot close halfway.
    pub(crate) fn submit(&self, submission: Submission<'_>) -> Result<(), SubmitError> {
        let mut state = lock(&self.state);
        if let Some(reason) = &state.closed {
            return Err(SubmitError::Closed(reason.clone()));
        }
        let link = submission.owner.link();
        for route in submission.routes_added {
            match state.routes.get(route) {
                Some(&owner) if Some(owner) != link => {
                    return Err(SubmitError::RouteTaken(route.clone()));
                }
                _ => {}
            }
        }
        if let Some(link) = link {
            for route in submission.routes_removed {
                if state.routes.get(route) == Some(&link) {
                    state.routes.remove(route);
                }
            }
            for route in submission.routes_added {
                state.routes.insert(route.clone(), link);
            }
        }
        let Some(writer) = state.writer.clone() else {
            return Err(SubmitError::Closed("host stdin is closed".into()));
        };
        for bytes in submission.writes {
            let _ = writer.send(bytes);
        }
        for (id, label, bytes, awaits_reply) in submission.requests {
            if awaits_reply {
                let pending =
                    Pending { reply_to: submission.reply_to.clone(), label: label.to_owned() };
                state.pending.insert(id, pending);
            }
            // The receiver lives as long as the writer task; if it is gone the task failed the
            // transport, and this request will be answered `Lost` with the rest.
            let _ = writer.send(bytes.to_vec());
        }
        Ok(())
    }

    /// Removes a pending request; false if it was already answered or lost.
    pub(crate) fn take_pending(&self, id: u64) -> bool {
        lock(&self.state).pending.remove(&id).is_some()
    }

    /// The label a pending request was registered with, for logs.
    pub(crate) fn pending_label(&self, id: u64) -> Option<String> {
        lock(&self.state).pending.get(&id).map(|p| p.label.clone())
    }

    pub(crate) fn forget_pending(&self, ids: impl IntoIterator<Item = u64>) {
        let mut state = lock(&self.state);
        for id in ids {
            state.pending.remove(&id);
        }
    }

    /// Hands a reply to the operation waiting for it. A reply nobody waits for (timed out,
    /// answered twice, never asked) is dropped: it is never matched to another request. A
    /// reply to a session's own request is returned, to be delivered in order with its events.
    pub(crate) fn resolve(&self, reply: NativeReply) -> Option<Delivery> {
        let mut state = lock(&self.state);
        match state.pending.remove(&reply.id).map(|p| p.reply_to) {
            Some(ReplyTo::Op(op)) => {
                drop(state);
                let _ = op.send(reply);
                None
            }
            Some(ReplyTo::Session(link)) => state.sessions.get(&link).map(|to| Delivery {
                link,
                to: to.clone(),
                input: SessionInput::Reply(reply),
            }),
            None => {
                tracing::warn!(id = reply.id, "late or unknown native response dropped");
                None
            }
        }
    }

    /// The bytes of a mapper's write, with any credential it asks for filled in. A write the
    /// mapper got wrong is a fault of the mapper; it is never written.
    pub(crate) fn prepare_write(&self, write: &NativeWrite) -> Result<Vec<u8>, MapperFault> {
        self.credentials.fill(write).map_err(|error| MapperFault(error.to_string()))
    }

    /// Where an event goes: the session that owns its route.
    pub(crate) fn route_event(&self, event: RoutedEvent) -> Option<Delivery> {
        let state = lock(&self.state);
        let owner = state.routes.get(&event.route).copied();
        match owner.and_then(|link| Some((link, state.sessions.get(&link)?))) {
            Some((link, to)) => {
                let input = SessionInput::Event(event.payload);
                Some(Delivery { link, to: to.clone(), input })
            }
            None => {
                // A mapper may route what no session holds on purpose (a duplicate a
                // session lets go, once per streamed delta): not worth a debug line each.
                tracing::trace!(route = %event.route, "native event for an unknown route dropped");
                None
            }
        }
    }

    /// Queues input for the session `link`, if it is still linked.
    pub(crate) async fn deliver(&self, link: LinkId, input: SessionInput) {
        let to = lock(&self.state).sessions.get(&link).cloned();
        if let Some(to) = to {
            self.send(Delivery { link, to, input }).await;
        }
    }

    /// Queues input from the stdout reader. While the session's queue is full the reader
    /// reads no further, and the host's writes wait in its pipe; that wait is counted in
    /// [`Shared::reader_waits`], as a wait on that session.
    pub(crate) async fn hand_over(&self, delivery: Delivery) {
        self.queue(delivery, Some(&self.reader_waits)).await;
    }

    /// Queues input for a session, waiting while its queue is full. Gives up when the
    /// transport closes (the session is told so) or the session is gone.
    pub(crate) async fn send(&self, delivery: Delivery) {
        self.queue(delivery, None).await;
    }

    async fn queue(&self, delivery: Delivery, counted: Option<&ReaderWaits>) {
        let Delivery { link, to, input } = delivery;
        let Err(input) = to.try_send(input) else { return };
        let _waiting = counted.map(|waits| waits.begin(link));
        let mut closed = self.closed.subscribe();
        tokio::select! {
            biased;
            _ = to.send(input) => {}
            _ = closed.wait_for(Option::is_some) => {}
        }
    }

    /// Queues bytes the connection must write back now (handshake acknowledgements).
    pub(crate) fn write_now(&self, bytes: Vec<u8>) {
        if let Some(writer) = &lock(&self.state).writer {
            let _ = writer.send(bytes);
        }
    }

    /// Registers a new session's inbound queue.
    pub(crate) fn add_session(&self, link: LinkId, inbound: SessionQueue) {
        let mut state = lock(&self.state);
        // A session linked after the close reads the close from the watch at once.
        if state.closed.is_none() {
            state.sessions.insert(link, inbound);
        }
    }

    /// Forgets a session, every route it owns and the requests it issued while mapping (their
    /// replies are dropped as late).
    pub(crate) fn remove_session(&self, link: LinkId) {
        let mut state = lock(&self.state);
        state.sessions.remove(&link);
        state.routes.retain(|_, owner| *owner != link);
        state
            .pending
            .retain(|_, pending| !matches!(pending.reply_to, ReplyTo::Session(l) if l == link));
        drop(state);
        self.reader_waits.forget(link);
    }
}
