//! The v2 sessions of one connection: what a v2 client sees of each coordinator session, and
//! v2's prompt lifecycle on top of the coordinator's one-turn-at-a-time prompts.
//!
//! ```text
//! session/prompt ──▶ held (arrival order) ──▶ submitted ──▶ acknowledged ──▶ idle
//!                     │ session/cancel,        │ (the coordinator's turn)  (stop reason,
//!                     │ $/cancel_request,      │                            usage, or error)
//!                     ▼ session/close          ▼ fails before any sign of the turn
//!                   -32800                   the error answers the prompt (nothing inserted)
//! ```
//! Invariants:
//! - **One turn at a time, in arrival order.** A prompt on a busy session is held, never
//!   refused for being busy; held prompts go to the coordinator one after the other.
//! - **The acknowledgement comes first.** The prompt is answered with its user message id at
//!   the first sign of its turn (an update, a question) — right before that sign, under the
//!   same lock — or when the turn ends; then the user message echo and `running`. Nothing the
//!   turn shows can precede it.
//! - **Exactly one idle per acknowledged prompt**, with the stop reason and usage, or the error.
//! - **After `session/close` answers, nothing more is sent for the session.**

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol::v1::schema as v1;
use agent_client_protocol::v2::schema as v2;
use agent_client_protocol::v2::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, RequestCancellation};
use tokio::sync::{Notify, oneshot};
use zcode_coordinator::{Coordinator, CoordinatorError, FailureKind, PendingPrompt};

use super::convert;
use super::translate::{MessageIds, MessageKind, Translator};
use crate::LOG;

/// Every v2 session of the connection, by id.
pub struct Sessions {
    cx: ConnectionTo<Client>,
    /// Makes this connection's message ids unique.
    connection: String,
    table: Mutex<HashMap<String, Arc<Conversation>>>,
}

/// One session as the v2 client sees it.
pub struct Conversation {
    pub id: v2::SessionId,
    state: Mutex<State>,
    /// Notified whenever a turn ends.
    turn_ended: Notify,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Being created or resumed (history replays); takes no prompt yet.
    Opening,
    Open,
    /// `session/close` is under way: held prompts are cancelled, the turn ends.
    Closing,
    /// Nothing more is sent.
    Closed,
}

pub struct State {
    pub translator: Translator,
    phase: Phase,
    turn: Option<Turn>,
    held: VecDeque<Held>,
    next_ticket: u64,
}

/// The prompt whose turn the coordinator runs.
struct Turn {
    ticket: u64,
    request: v2::PromptRequest,
    /// Until acknowledged.
    responder: Option<Responder<v2::PromptResponse>>,
    user_message: v2::MessageId,
    /// Permission and elicitation requests the turn waits on.
    asking: usize,
    /// Times the coordinator refused the prompt as busy (a stopped turn still draining).
    refusals: u32,
    /// `session/cancel` or `$/cancel_request` came while the prompt waited to be submitted
    /// again.
    cancelled: bool,
    /// Dropped with the turn: ends the prompt's cancellation watcher.
    _watcher: oneshot::Sender<()>,
}

struct Held {
    ticket: u64,
    request: v2::PromptRequest,
    responder: Responder<v2::PromptResponse>,
    watcher: oneshot::Sender<()>,
}

/// A prompt the coordinator refused because the previous turn is still stopping natively is
/// submitted again after this long, at most [`BUSY_RETRIES`] times (the drain is bounded by the
/// coordinator's cancel grace, 30 s by default): v2 holds prompts, it does not refuse them for
/// being busy. (What ZCode says while draining can arrive before the refusal and acknowledge
/// the prompt, so an acknowledged prompt is submitted again too; it keeps its turn.)
const BUSY_RETRY: Duration = Duration::from_millis(100);
const BUSY_RETRIES: u32 = 600;

impl Sessions {
    pub fn new(cx: ConnectionTo<Client>, connection: String) -> Self {
        Self { cx, connection, table: Mutex::new(HashMap::new()) }
    }

    pub fn get(&self, id: &str) -> Option<Arc<Conversation>> {
        self.table.lock().unwrap().get(id).cloned()
    }

    /// Registers a session that is being opened: its replay (if any) is shown, it takes no
    /// prompt until [`Sessions::opened`]. A conversation already open under that id (resumed
    /// again) stops taking prompts; the coordinator ends its turn.
    pub fn opening(&self, id: &v2::SessionId) -> Arc<Conversation> {
        let conversation = Arc::new(Conversation {
            id: id.clone(),
            state: Mutex::new(State {
                translator: Translator::new(MessageIds::new(&self.connection)),
                phase: Phase::Opening,
                turn: None,
                held: VecDeque::new(),
                next_ticket: 0,
            }),
            turn_ended: Notify::new(),
        });
        let previous = self.table.lock().unwrap().insert(id.0.to_string(), conversation.clone());
        if let Some(previous) = previous {
            previous.stop_taking_prompts();
        }
        conversation
    }

    pub fn opened(&self, conversation: &Conversation) {
        conversation.lock().phase = Phase::Open;
    }

    /// Forgets a session whose opening failed (unless it was replaced meanwhile).
    pub fn forget(&self, conversation: &Arc<Conversation>) {
        let mut table = self.table.lock().unwrap();
        if table.get(conversation.id.0.as_ref()).is_some_and(|c| Arc::ptr_eq(c, conversation)) {
            table.remove(conversation.id.0.as_ref());
        }
    }

    pub fn send(&self, id: &v2::SessionId, update: v2::SessionUpdate) {
        let notification = v2::UpdateSessionNotification::new(id.clone(), update);
        if let Err(error) = self.cx.send_notification(notification) {
            tracing::debug!(target: LOG, session = %id, error = %error.message, "update not delivered");
        }
    }

    pub fn cx(&self) -> &ConnectionTo<Client> {
        &self.cx
    }

    // ----- prompts ---------------------------------------------------------------------

    /// `session/prompt`: holds the prompt behind the session's current work (in arrival
    /// order: call it from the dispatch loop) and starts it when its turn comes.
    pub fn prompt(
        self: &Arc<Self>,
        coordinator: &Coordinator,
        request: v2::PromptRequest,
        responder: Responder<v2::PromptResponse>,
    ) {
        let Some(conversation) = self.get(&request.session_id.0) else {
            let _ = responder.respond_with_error(not_found(&request.session_id));
            return;
        };
        if request.prompt.is_empty() {
            let _ = responder
                .respond_with_error(Error::invalid_params().data("the prompt has no content"));
            return;
        }
        let cancellation = responder.cancellation();
        let (watcher, finished) = oneshot::channel();
        let ticket = {
            let mut state = conversation.lock();
            match state.phase {
                Phase::Open => {}
                Phase::Opening | Phase::Closed => {
                    drop(state);
                    let _ = responder.respond_with_error(not_found(&request.session_id));
                    return;
                }
                Phase::Closing => {
                    drop(state);
                    let _ = responder.respond_with_error(Error::request_cancelled());
                    return;
                }
            }
            let ticket = state.next_ticket;
            state.next_ticket += 1;
            state.held.push_back(Held { ticket, request, responder, watcher });
            ticket
        };
        tokio::spawn(watch_cancellation(
            conversation.clone(),
            coordinator.clone(),
            ticket,
            cancellation,
            finished,
        ));
        self.start_next(&conversation, coordinator);
    }

    /// Hands the next held prompt to the coordinator when the session has no turn.
    fn start_next(self: &Arc<Self>, conversation: &Arc<Conversation>, coordinator: &Coordinator) {
        loop {
            let mut state = conversation.lock();
            if state.turn.is_some() || state.phase != Phase::Open {
                return;
            }
            let Some(held) = state.held.pop_front() else { return };
            let pending = match submit(coordinator, &held.request) {
                Ok(pending) => pending,
                Err(error) => {
                    drop(state);
                    tracing::warn!(target: LOG, code = error.code.value(), message = %error.message, "prompt refused");
                    let _ = held.responder.respond_with_error(error);
                    continue;
                }
            };
            let user_message = state.translator.new_message(MessageKind::User);
            state.turn = Some(Turn {
                ticket: held.ticket,
                request: held.request,
                responder: Some(held.responder),
                user_message,
                asking: 0,
                refusals: 0,
                cancelled: false,
                _watcher: held.watcher,
            });
            drop(state);
            let sessions = self.clone();
            let conversation = conversation.clone();
            let coordinator = coordinator.clone();
            tokio::spawn(async move {
                sessions.run_turn(&conversation, &coordinator, pending).await;
                sessions.start_next(&conversation, &coordinator);
            });
            return;
        }
    }

    /// Waits for the turn's answer, submitting the prompt again while the coordinator
    /// refuses it only because the previous turn is still stopping.
    async fn run_turn(
        &self,
        conversation: &Conversation,
        coordinator: &Coordinator,
        mut pending: PendingPrompt,
    ) {
        loop {
            let answer = pending.answer().await;
            if !self.refused_as_busy(conversation, &answer) {
                return self.end_turn(conversation, answer.map_err(Error::from));
            }
            tokio::time::sleep(BUSY_RETRY).await;
            let state = conversation.lock();
            let Some(turn) = state.turn.as_ref() else { return };
            if turn.cancelled || state.phase != Phase::Open {
                drop(state);
                return self.end_turn(
                    conversation,
                    Ok(v1::PromptResponse::new(v1::StopReason::Cancelled)),
                );
            }
            match submit(coordinator, &turn.request) {
                Ok(again) => pending = again,
                Err(error) => {
                    drop(state);
                    return self.end_turn(conversation, Err(error));
                }
            }
        }
    }

    /// Whether `answer` only says the session is still stopping an earlier turn (and the
    /// prompt may be submitted again); counts the refusal.
    fn refused_as_busy(
        &self,
        conversation: &Conversation,
        answer: &Result<v1::PromptResponse, CoordinatorError>,
    ) -> bool {
        if !matches!(answer, Err(CoordinatorError::Busy(_))) {
            return false;
        }
        let mut state = conversation.lock();
        let open = state.phase == Phase::Open;
        let Some(turn) = state.turn.as_mut() else { return false };
        if !open || turn.refusals >= BUSY_RETRIES {
            return false;
        }
        turn.refusals += 1;
        true
    }

    /// The coordinator's answer: the turn's one idle (acknowledging first if nothing showed
    /// the turn), or, for a prompt that failed before any sign of its turn, the error.
    fn end_turn(&self, conversation: &Conversation, answer: Result<v1::PromptResponse, Error>) {
        let mut state = conversation.lock();
        let Some(unacknowledged) = state.turn.as_ref().map(|turn| turn.responder.is_some()) else {
            return;
        };
        let closed = state.phase == Phase::Closed;
        match answer {
            Err(error) if unacknowledged || closed => {
                let responder = state.turn.take().and_then(|mut turn| turn.responder.take());
                let error = if closed { Error::request_cancelled() } else { error };
                if let Some(responder) = responder {
                    let _ = responder.respond_with_error(error);
                }
            }
            answer => {
                self.acknowledge(&conversation.id, &mut state);
                state.turn = None;
                state.translator.end_message();
                let idle = match answer {
                    Ok(response) => idle(response),
                    Err(error) => failed(error),
                };
                if !closed {
                    self.send(&conversation.id, v2::SessionUpdate::StateUpdate(idle));
                }
            }
        }
        drop(state);
        conversation.turn_ended.notify_waiters();
    }

    /// Answers the turn's prompt with its message id, then echoes the message and reports
    /// `running` — once, before anything else of the turn.
    fn acknowledge(&self, id: &v2::SessionId, state: &mut State) {
        if state.phase == Phase::Closed {
            return;
        }
        let Some(turn) = state.turn.as_mut() else { return };
        let Some(responder) = turn.responder.take() else { return };
        let message = turn.user_message.clone();
        if let Err(error) = responder.respond(v2::PromptResponse::new(message.clone())) {
            tracing::debug!(target: LOG, session = %id, error = %error.message, "prompt answer not delivered");
        }
        let echo = v2::UserMessage::new(message).content(turn.request.prompt.clone());
        self.send(id, v2::SessionUpdate::UserMessage(echo));
        self.send(id, running());
    }

    // ----- what the coordinator sends ---------------------------------------------------

    /// Runs `show` on the session's state after acknowledging its turn, unless nothing may be
    /// sent for it any more; `None` when the session is unknown or closed.
    pub fn showing<T>(
        &self,
        id: &str,
        show: impl FnOnce(&Self, &v2::SessionId, &mut State) -> T,
    ) -> Option<T> {
        let conversation = self.get(id)?;
        let mut state = conversation.lock();
        if state.phase == Phase::Closed {
            return None;
        }
        self.acknowledge(&conversation.id, &mut state);
        Some(show(self, &conversation.id, &mut state))
    }

    /// A question to the client begins: the turn requires action. Returns the guard that
    /// reports the answer.
    pub fn asking(self: &Arc<Self>, id: &str) -> Option<AskingGuard> {
        let conversation = self.get(id)?;
        let mut state = conversation.lock();
        let closed = state.phase == Phase::Closed;
        let turn = state.turn.as_mut()?;
        turn.asking += 1;
        let ticket = turn.ticket;
        if turn.asking == 1 && !closed {
            let update = v2::StateUpdate::RequiresAction(v2::RequiresActionStateUpdate::new());
            self.send(&conversation.id, v2::SessionUpdate::StateUpdate(update));
        }
        drop(state);
        Some(AskingGuard { sessions: self.clone(), conversation, ticket, answered: false })
    }

    // ----- cancel and close ------------------------------------------------------------

    /// `session/cancel`: every prompt held so far gets `-32800`; the turn is cancelled.
    pub fn cancel(&self, coordinator: &Coordinator, id: &v2::SessionId) {
        if let Some(conversation) = self.get(&id.0) {
            conversation.cancel_held();
            if let Some(turn) = conversation.lock().turn.as_mut() {
                turn.cancelled = true;
            }
        }
        coordinator.cancel(&v1::SessionId::new(id.0.to_string()));
    }

    /// `session/close`: held prompts get `-32800`, the turn is cancelled and its idle sent,
    /// then the session is closed; nothing is sent for it afterwards.
    pub async fn close(
        &self,
        coordinator: &Coordinator,
        id: &v2::SessionId,
    ) -> Result<v2::CloseSessionResponse, Error> {
        let conversation = self.get(&id.0);
        if let Some(conversation) = &conversation {
            conversation.stop_taking_prompts();
        }
        let closed =
            coordinator.close_session(v1::CloseSessionRequest::new(id.0.to_string())).await;
        if let Some(conversation) = &conversation {
            conversation.wait_for_no_turn().await;
            conversation.lock().phase = Phase::Closed;
            self.forget(conversation);
        }
        closed.map(|_| v2::CloseSessionResponse::new()).map_err(Error::from)
    }
}

impl Conversation {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    fn cancel_held(&self) {
        let held: Vec<Held> = self.lock().held.drain(..).collect();
        for prompt in held {
            let _ = prompt.responder.respond_with_error(Error::request_cancelled());
        }
    }

    fn stop_taking_prompts(&self) {
        {
            let mut state = self.lock();
            if state.phase != Phase::Closed {
                state.phase = Phase::Closing;
            }
        }
        self.cancel_held();
    }

    async fn wait_for_no_turn(&self) {
        loop {
            let ended = self.turn_ended.notified();
            if self.lock().turn.is_none() {
                return;
            }
            ended.await;
        }
    }
}

/// Reports the end of one question: back to `running` once the turn waits on nothing.
pub struct AskingGuard {
    sessions: Arc<Sessions>,
    conversation: Arc<Conversation>,
    ticket: u64,
    answered: bool,
}

impl AskingGuard {
    /// The client answered (the turn goes on).
    pub fn answered(mut self) {
        self.answered = true;
    }
}

impl Drop for AskingGuard {
    fn drop(&mut self) {
        let mut state = self.conversation.lock();
        let closed = state.phase == Phase::Closed;
        let Some(turn) = state.turn.as_mut().filter(|t| t.ticket == self.ticket) else { return };
        turn.asking = turn.asking.saturating_sub(1);
        // Withdrawn (the turn is ending): its idle follows, not `running`.
        if self.answered && turn.asking == 0 && !closed {
            self.sessions.send(&self.conversation.id, running());
        }
    }
}

/// `$/cancel_request` for a prompt: a held one gets `-32800`; a started one that is not
/// acknowledged yet cancels its turn. Ends when the prompt's turn does.
async fn watch_cancellation(
    conversation: Arc<Conversation>,
    coordinator: Coordinator,
    ticket: u64,
    cancellation: RequestCancellation,
    finished: oneshot::Receiver<()>,
) {
    tokio::select! {
        () = cancellation.cancelled() => {}
        _ = finished => return,
    }
    let mut state = conversation.lock();
    if let Some(position) = state.held.iter().position(|held| held.ticket == ticket) {
        let held = state.held.remove(position).expect("position is in the queue");
        drop(state);
        let _ = held.responder.respond_with_error(Error::request_cancelled());
    } else if let Some(turn) =
        state.turn.as_mut().filter(|t| t.ticket == ticket && t.responder.is_some())
    {
        turn.cancelled = true;
        drop(state);
        coordinator.cancel(&v1::SessionId::new(conversation.id.0.to_string()));
    }
}

fn running() -> v2::SessionUpdate {
    v2::SessionUpdate::StateUpdate(v2::StateUpdate::Running(v2::RunningStateUpdate::new()))
}

fn idle(response: v1::PromptResponse) -> v2::StateUpdate {
    let stop = match response.stop_reason {
        v1::StopReason::EndTurn => v2::StopReason::EndTurn,
        v1::StopReason::MaxTokens => v2::StopReason::MaxTokens,
        v1::StopReason::MaxTurnRequests => v2::StopReason::MaxTurnRequests,
        v1::StopReason::Refusal => v2::StopReason::Refusal,
        v1::StopReason::Cancelled => v2::StopReason::Cancelled,
        other => {
            let unknown = format!("a stop reason ACP v2 does not know: {other:?}");
            return failed(CoordinatorError::failed(FailureKind::NativeProtocol, unknown).into());
        }
    };
    let mut idle = v2::IdleStateUpdate::new().stop_reason(stop);
    if let Some(usage) = response.usage {
        let usage =
            super::translate::recast::<v2::Usage>("usage", super::translate::to_value(&usage));
        match usage {
            Ok(usage) => idle = idle.usage(usage),
            Err(error) => tracing::warn!(target: LOG, %error, "turn usage not shown"),
        }
    }
    v2::StateUpdate::Idle(idle)
}

/// A turn that failed after its prompt was acknowledged: idle with the error.
fn failed(error: Error) -> v2::StateUpdate {
    let reported = v2::Error::from(error);
    let stop = v2::StopReason::Error(v2::ErrorStopReason::new().error(reported));
    v2::StateUpdate::Idle(v2::IdleStateUpdate::new().stop_reason(stop))
}

pub fn not_found(id: &v2::SessionId) -> Error {
    v2::Error::session_not_found(id.clone()).into()
}

/// Hands `request` to the coordinator (queued at once: call in arrival order).
fn submit(coordinator: &Coordinator, request: &v2::PromptRequest) -> Result<PendingPrompt, Error> {
    convert::prompt(request).and_then(|request| coordinator.prompt(request).map_err(Error::from))
}
