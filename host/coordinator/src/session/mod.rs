//! One bound session: a handle the coordinator keeps, and an actor task that owns the
//! session's state and processes commands and native events strictly one at a time.

mod actor;
mod interaction;
mod turn;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use agent_client_protocol::v1::schema::{PromptResponse, SessionId};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use zcode_bridge::{SessionLink, SessionReceiver};
use zcode_contract::{InteractionOutcome, OpResult, SessionOp};

use crate::acp_json::Update;
use crate::client::ClientPort;
use crate::config::CoordinatorConfig;
use crate::error::{CoordinatorError, FailureKind};

pub(crate) use actor::{Deferred, SessionActor, UpdatePort, op_setting_aside};

pub(crate) enum Command {
    Prompt {
        request: String,
        reply: turn::PromptReply,
    },
    Cancel,
    /// A session operation outside a turn (mode, config option).
    Op {
        op: SessionOp,
        reply: oneshot::Sender<Result<OpResult, CoordinatorError>>,
    },
    /// A client answer (or the lack of one) for an interaction; `failure` also ends the turn.
    Answered {
        key: String,
        outcome: InteractionOutcome,
        failure: Option<String>,
    },
    Close {
        reply: oneshot::Sender<Result<(), CoordinatorError>>,
    },
}

/// The answer of a queued prompt.
pub struct PendingPrompt(oneshot::Receiver<Result<PromptResponse, CoordinatorError>>);

impl PendingPrompt {
    pub async fn answer(self) -> Result<PromptResponse, CoordinatorError> {
        self.0.await.unwrap_or_else(|_| {
            Err(CoordinatorError::failed(
                FailureKind::SessionClosed,
                "the session ended during the prompt",
            ))
        })
    }
}

/// What the coordinator keeps for a bound session.
#[derive(Clone)]
pub(crate) struct SessionHandle {
    pub workspace: PathBuf,
    commands: mpsc::UnboundedSender<Command>,
}

impl SessionHandle {
    fn send(&self, command: Command) -> Result<(), CoordinatorError> {
        self.commands.send(command).map_err(|_| {
            CoordinatorError::failed(FailureKind::SessionClosed, "the session has been closed")
        })
    }

    /// Queues the prompt now (so a cancel sent after it is handled after it) and returns its
    /// answer to await.
    pub fn start_prompt(&self, request: String) -> Result<PendingPrompt, CoordinatorError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Prompt { request, reply })?;
        Ok(PendingPrompt(answer))
    }

    pub fn cancel(&self) {
        let _ = self.send(Command::Cancel);
    }

    pub async fn op(&self, op: SessionOp) -> Result<OpResult, CoordinatorError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Op { op, reply })?;
        answer.await.unwrap_or_else(|_| {
            Err(CoordinatorError::failed(FailureKind::SessionClosed, "the session ended"))
        })
    }

    pub async fn close(&self) -> Result<(), CoordinatorError> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Close { reply })?;
        answer.await.unwrap_or(Ok(()))
    }
}

/// The session actors of one coordinator. An actor ends when its session is closed, and at
/// the latest with the coordinator: dropping this aborts the actors still running.
#[derive(Default)]
pub(crate) struct Actors(Mutex<JoinSet<()>>);

impl Actors {
    fn spawn(&self, actor: impl Future<Output = ()> + Send + 'static) {
        let mut actors = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Actors that have ended are done with.
        while actors.try_join_next().is_some() {}
        actors.spawn(actor);
    }
}

/// A session whose native side is bound and subscribed, but which has not started
/// processing events yet: the ACP response naming it must reach the client first.
pub struct BoundSession {
    pub(crate) actor: SessionActor,
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
    pub(crate) handle: SessionHandle,
    /// Updates to send once the response is out (session metadata).
    pub(crate) after: Vec<Update>,
    /// Where the actor runs: the coordinator's, which owns it.
    pub(crate) actors: Weak<Actors>,
}

/// A mapper session linked to the host: what a bound session is built from.
pub(crate) struct Binding {
    pub link: SessionLink,
    /// `None` once the host's stream for it has ended.
    pub inbound: Option<SessionReceiver>,
    /// Input that arrived while the session was being opened, to be mapped first.
    pub deferred: Deferred,
}

impl BoundSession {
    pub(crate) fn new(
        id: SessionId,
        workspace: PathBuf,
        binding: Binding,
        client: Arc<dyn ClientPort>,
        config: CoordinatorConfig,
        after: Vec<Update>,
        actors: Weak<Actors>,
    ) -> Self {
        let (tx, commands) = mpsc::unbounded_channel();
        let handle = SessionHandle { workspace, commands: tx.clone() };
        let actor = SessionActor::new(id, binding, client, config, tx);
        Self { actor, commands, handle, after, actors }
    }
}
