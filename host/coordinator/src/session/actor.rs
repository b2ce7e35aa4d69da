//! The session actor: the only place a session's state changes. Commands from the ACP side,
//! native events and client answers arrive on channels and are handled one at a time, so the
//! invariants (one turn at a time, exactly-once native answers, ordered updates, a response
//! only after the native end) are plain sequential code.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use agent_client_protocol::BoxFuture;
use agent_client_protocol::v1::schema::{
    PromptResponse, SessionId, StopReason as AcpStopReason, Usage,
};
use tokio::sync::mpsc;
use tokio::time::Instant;
use zcode_bridge::{OpFailure, SessionInbound, SessionLink, SessionReceiver, UpdateSink};
use zcode_contract::{
    Action, ErrorKind, Interaction, InteractionAnswer, InteractionOutcome, InteractionRequest,
    MapperError, OpResult, SessionInput, SessionOp, StopReason, Terminal,
};

use super::interaction::{ask_elicitation, ask_permission, refusal};
use super::turn::{Ending, Pending, Phase, PromptReply, Turn};
use super::{Binding, BoundSession, Command};
use crate::acp_json::{self, Refused, Update};
use crate::client::ClientPort;
use crate::config::CoordinatorConfig;
use crate::error::{CoordinatorError, FailureKind};

const LOG: &str = "zcode_acp::session";

/// Native input mapped in one call at most: enough to amortise the sandbox crossing over a
/// burst of deltas, small enough that a cancel never waits long behind a batch. The byte bound
/// only binds on the Services Server's inputs of up to a thousand deltas, whose mapped updates
/// are several times the input and are held until the batch is written: 128 KiB keeps that
/// peak down (issue 27; 1 MiB, then 256 KiB before) at no measurable relay cost.
const BATCH_INPUTS: usize = 64;
const BATCH_BYTES: usize = 128 * 1024;

/// Mapped batches whose updates may be on their way to the client at once. Beyond that the
/// session takes no more native input until the client has read the oldest: a slow client
/// slows the host down instead of filling this process.
const WRITE_AHEAD: usize = 2;

/// Updates sent between two write marks inside one mapped batch.
const MARK_EVERY: usize = 512;

/// Native input set aside while an operation waits for its native reply (the reply arrives on
/// the same stream, behind whatever the host wrote before it). Past this the session stops
/// reading, and the reply waits for its timeout: a host never makes this grow without bound.
const DEFER_BYTES: usize = 16 * 1024 * 1024;

pub(crate) struct SessionActor {
    id: SessionId,
    link: SessionLink,
    /// What the bridge routes to this session, in order; `None` once it has ended.
    inbound: Option<SessionReceiver>,
    /// Input received while an operation ran, handled before anything newer.
    deferred: Deferred,
    /// One per mapped batch still being written to the client, oldest first.
    written: VecDeque<BoxFuture<'static, ()>>,
    updates: UpdatePort,
    client: Arc<dyn ClientPort>,
    config: CoordinatorConfig,
    /// For the tasks that ask the client: they report back as commands.
    commands: mpsc::UnboundedSender<Command>,
    turn: Option<Turn>,
    /// After a broken or timed-out turn the native generation may still be ending: the next
    /// native terminal belongs to it, and no new prompt starts until then (or the deadline).
    draining_until: Option<Instant>,
    /// Interaction keys answered natively: each is answered exactly once.
    answered: HashSet<String>,
    /// Set when the session can no longer work (host gone, mapper fault).
    failed: Option<String>,
    /// A failure met while answering ZCode, acted on once the current step is done: answers
    /// are also sent from inside turn endings, which must not recurse.
    answer_failure: Option<AnswerFailure>,
    closed: bool,
}

enum AnswerFailure {
    /// ZCode did not take the answer (timeout, error): it may never resume the turn.
    Turn(CoordinatorError),
    /// The mapper's reply to the answer was invalid.
    Session(String),
}

impl BoundSession {
    /// Sends the post-response updates and starts processing events. Call after the ACP
    /// response that names the session has been sent. The actor runs until the session is
    /// closed, or until the coordinator is gone (then it is not started at all).
    pub fn start(self) {
        let BoundSession { actor, commands, after, actors, .. } = self;
        match actors.upgrade() {
            Some(actors) => actors.spawn(actor.run(after, commands)),
            None => {
                tracing::debug!(target: LOG, session = %actor.id, "session bound after its coordinator ended")
            }
        }
    }
}

impl SessionActor {
    pub fn new(
        id: SessionId,
        binding: Binding,
        client: Arc<dyn ClientPort>,
        config: CoordinatorConfig,
        commands: mpsc::UnboundedSender<Command>,
    ) -> Self {
        let Binding { link, inbound, deferred } = binding;
        Self {
            inbound,
            deferred,
            written: VecDeque::new(),
            updates: UpdatePort::new(id.clone(), client.clone(), config.max_message_bytes),
            id,
            link,
            client,
            config,
            commands,
            turn: None,
            draining_until: None,
            answered: HashSet::new(),
            failed: None,
            answer_failure: None,
            closed: false,
        }
    }

    async fn run(
        mut self,
        first_updates: Vec<Update>,
        mut commands: mpsc::UnboundedReceiver<Command>,
    ) {
        self.send_updates(first_updates);
        while !self.closed {
            let deadline = self.turn.as_ref().and_then(|t| t.cancel_deadline);
            let takes_input = self.written.len() < WRITE_AHEAD
                && (self.inbound.is_some() || !self.deferred.is_empty());
            tokio::select! {
                // Commands first: a cancel must not wait behind a long event backlog.
                biased;
                command = commands.recv() => match command {
                    Some(command) => self.on_command(command).await,
                    None => break,
                },
                () = oldest(&mut self.written) => {
                    self.written.pop_front();
                }
                item = next_input(&mut self.deferred, &mut self.inbound), if takes_input => match item {
                    Some(SessionInbound::Input(first)) => {
                        let (batch, closed) =
                            drain_batch(first, &mut self.deferred, self.inbound.as_mut());
                        self.on_input(batch).await;
                        self.written.push_back(self.client.written());
                        if let Some(reason) = closed {
                            self.on_transport_closed(reason);
                        }
                    }
                    Some(SessionInbound::TransportClosed(reason)) => self.on_transport_closed(reason),
                    None => self.inbound = None,
                },
                _ = sleep_until(deadline) => self.on_cancel_deadline(),
            }
            match self.answer_failure.take() {
                Some(AnswerFailure::Turn(error)) => self.break_turn(error).await,
                Some(AnswerFailure::Session(reason)) => self.fail_session(reason).await,
                None => {}
            }
        }
        tracing::debug!(target: LOG, session = %self.id, "session actor ended");
    }

    // ----- commands ----------------------------------------------------------------------

    async fn on_command(&mut self, command: Command) {
        match command {
            Command::Prompt { request, reply } => self.on_prompt(request, reply).await,
            Command::Cancel => self.on_cancel().await,
            Command::Op { op, reply } => {
                let result = self.run_op(op).await;
                let _ = reply.send(result);
            }
            Command::Answered { key, outcome, failure } => {
                self.answer(key, outcome).await;
                if let Some(why) = failure {
                    self.break_turn(CoordinatorError::failed(FailureKind::Client, why)).await;
                }
                self.complete_if_ready().await;
            }
            Command::Close { reply } => {
                let _ = reply.send(self.on_close().await);
            }
        }
    }

    async fn on_prompt(&mut self, request: String, reply: PromptReply) {
        if let Some(reason) = &self.failed {
            let _ = reply.send(Err(session_failed(reason)));
            return;
        }
        if self.turn.is_some() {
            let _ = reply.send(Err(CoordinatorError::Busy(
                "A prompt is already active for this session; cancel it or wait for it to end"
                    .into(),
            )));
            return;
        }
        if self.draining_until.is_some_and(|until| Instant::now() < until) {
            let _ = reply.send(Err(CoordinatorError::Busy(
                "The previous turn of this session is still stopping; retry shortly".into(),
            )));
            return;
        }
        self.draining_until = None;
        self.turn = Some(Turn::new(reply));
        tracing::info!(target: LOG, session = %self.id, "prompt started");
        match self.op(SessionOp::Prompt(request)).await {
            Ok(result) => {
                if let Err(refused) = self.send_update_json(&result.updates) {
                    return self.on_refused(refused).await;
                }
                let turn = self.turn.as_mut().expect("turn set above");
                if turn.phase == Phase::Sending {
                    turn.phase = Phase::Running;
                }
                self.complete_if_ready().await;
            }
            Err(failure) => {
                let error = CoordinatorError::from(failure);
                if matches!(error, CoordinatorError::Failed { kind: FailureKind::MapperFault, .. })
                {
                    return self.fail_session(error.to_string()).await;
                }
                if let Some(mut turn) = self.turn.take()
                    && let Some(reply) = turn.reply.take()
                {
                    let _ = reply.send(Err(error));
                }
            }
        }
    }

    async fn on_cancel(&mut self) {
        let Some(turn) = self.turn.as_mut() else { return };
        if turn.cancelled() {
            return; // idempotent: the native stop is sent at most once
        }
        turn.phase = Phase::Cancelling;
        turn.cancel_deadline = Some(Instant::now() + self.config.cancel_grace);
        tracing::info!(target: LOG, session = %self.id, "cancelling the turn");
        self.refuse_pending("the prompt was cancelled").await;
        self.stop_native().await;
        self.complete_if_ready().await;
    }

    fn on_cancel_deadline(&mut self) {
        tracing::warn!(target: LOG, session = %self.id, "ZCode did not end the turn after cancellation");
        if let Some(mut turn) = self.turn.take() {
            turn.end(Ending::Stopped(StopReason::Cancelled));
            self.respond(turn, Ok(PromptResponse::new(AcpStopReason::Cancelled)));
        }
        self.draining_until = Some(Instant::now() + self.config.cancel_grace);
    }

    async fn on_close(&mut self) -> Result<(), CoordinatorError> {
        if self.turn.is_some() {
            // Closing cancels running work; the prompt is told `cancelled` right away.
            self.on_cancel().await;
            if let Some(turn) = self.turn.take() {
                self.respond(turn, Ok(PromptResponse::new(AcpStopReason::Cancelled)));
            }
        }
        self.closed = true;
        if self.failed.is_some() {
            return Ok(());
        }
        self.op(SessionOp::Close).await.map(|_| ()).map_err(Into::into)
    }

    /// Runs a session operation; what it streams while it waits goes to the client at once.
    /// Streamed updates over the size limit are not sent, and the operation fails with invalid
    /// params naming the limit. Native input that arrives meanwhile is set aside (the reply
    /// may be queued behind it), up to [`DEFER_BYTES`].
    async fn op(&mut self, op: SessionOp) -> Result<OpResult, OpFailure> {
        let mut updates = self.updates.clone();
        let mut too_large = None;
        let result = {
            let mut sink = |streamed: Vec<String>| {
                updates
                    .send_json(&streamed)
                    .or_else(|refused| refused.keep_too_large(&mut too_large))
            };
            op_setting_aside(&self.link, &mut self.inbound, &mut self.deferred, op, &mut sink).await
        };
        match too_large {
            Some(error) => {
                let message = error.to_string();
                Err(OpFailure::Mapper(MapperError::new(ErrorKind::InvalidParams, message)))
            }
            None => result,
        }
    }

    async fn run_op(&mut self, op: SessionOp) -> Result<OpResult, CoordinatorError> {
        if let Some(reason) = &self.failed {
            return Err(session_failed(reason));
        }
        let result = self.op(op).await?;
        match self.send_update_json(&result.updates) {
            Ok(()) => Ok(result),
            Err(Refused::TooLarge(error)) => Err(error),
            Err(Refused::Invalid(fault)) => {
                self.fail_session(fault.to_string()).await;
                Err(fault.into())
            }
        }
    }

    // ----- native input ------------------------------------------------------------------

    async fn on_input(&mut self, batch: Vec<SessionInput>) {
        if self.failed.is_some() {
            return;
        }
        let actions = match self.link.map(batch) {
            Ok(actions) => actions,
            Err(fault) => return self.fail_session(fault.to_string()).await,
        };
        // Consecutive updates go to the client together (a port may write them as one block);
        // anything that is not an update goes after the updates before it.
        let mut run = Vec::new();
        for action in actions {
            match action {
                Action::Update(json) => match self.updates.check(&json) {
                    Ok(update) => {
                        run.push(update);
                        if run.len() == MARK_EVERY {
                            self.updates.send(std::mem::take(&mut run));
                            self.mark_written().await;
                        }
                    }
                    Err(refused) => {
                        self.updates.send(std::mem::take(&mut run));
                        self.on_refused(refused).await;
                    }
                },
                Action::Interaction(interaction) => {
                    self.updates.send(std::mem::take(&mut run));
                    self.on_interaction(interaction).await
                }
                Action::Terminal(terminal) => {
                    self.updates.send(std::mem::take(&mut run));
                    self.on_terminal(terminal).await
                }
                Action::Ignore(name) => {
                    tracing::trace!(target: LOG, session = %self.id, event = %name, "ignored native event");
                }
            }
            if self.failed.is_some() {
                return;
            }
        }
        self.updates.send(run);
    }

    /// Marks what has been sent so far; if more than [`WRITE_AHEAD`] marks are still on their
    /// way, waits for the oldest. One native frame can carry thousands of deltas, so a batch's
    /// own updates are bounded this way too, not only the number of batches.
    async fn mark_written(&mut self) {
        self.written.push_back(self.client.written());
        while self.written.len() > WRITE_AHEAD {
            oldest(&mut self.written).await;
            self.written.pop_front();
        }
    }

    async fn on_interaction(&mut self, Interaction { key, request }: Interaction) {
        if self.answered.contains(&key)
            || self.turn.as_ref().is_some_and(|t| t.pending.contains_key(&key))
        {
            tracing::warn!(target: LOG, session = %self.id, "duplicate native interaction ignored");
            return;
        }
        let deny_option = match &request {
            InteractionRequest::Permission(p) => Some(p.deny_option.clone()),
            _ => None,
        };
        let active = self.turn.as_ref().is_some_and(|t| t.phase != Phase::Cancelling);
        if !active {
            let why = "no prompt is active to ask the user";
            return self.answer(key, refusal(deny_option.as_deref(), why)).await;
        }
        let timeout = self.config.interaction_timeout;
        let asking = match request {
            InteractionRequest::Permission(asked) => {
                let limit = self.config.max_message_bytes;
                match acp_json::permission_request(&self.id, &asked.request, limit) {
                    Ok(request) => Some(ask_permission(
                        &self.client,
                        &self.commands,
                        key.clone(),
                        request,
                        asked.deny_option,
                        timeout,
                    )),
                    Err(refused) => {
                        let why = "the question cannot be asked";
                        self.answer(key, refusal(deny_option.as_deref(), why)).await;
                        return self.on_refused(refused).await;
                    }
                }
            }
            InteractionRequest::Elicitation(json) if self.config.client.form_elicitation => {
                let limit = self.config.max_message_bytes;
                match acp_json::elicitation_request(&self.id, &json, limit) {
                    Ok(request) => Some(ask_elicitation(
                        &self.client,
                        &self.commands,
                        key.clone(),
                        request,
                        timeout,
                    )),
                    Err(refused) => {
                        self.answer(key, refusal(None, "the question cannot be asked")).await;
                        return self.on_refused(refused).await;
                    }
                }
            }
            // Mappers ask a client without forms through permissions (the SDK's fallback,
            // docs/interactions-without-forms.md); a form that still comes is declined
            // natively, with a reason the model reads, and the turn goes on: a client's
            // missing UI never fails a turn.
            InteractionRequest::Elicitation(_) => {
                let why = "The user's ACP client cannot show this form (it does not support \
                           form elicitation), so it was not asked. Continue without the answer.";
                return self.answer(key, InteractionOutcome::Unavailable(why.into())).await;
            }
            InteractionRequest::Headless(why) => {
                return self.answer(key, InteractionOutcome::Unavailable(why)).await;
            }
        };
        let turn = self.turn.as_mut().expect("active turn checked above");
        turn.pending.insert(key, Pending { deny_option, asking });
    }

    async fn on_terminal(&mut self, terminal: Terminal) {
        let Some(turn) = self.turn.as_mut() else {
            match terminal {
                // Something more of the stopped turn the mapper could not map: ZCode is still
                // running it, and a prompt sent now would find the session busy. Only a stop
                // or a failure is ZCode's own end (a mapper reports one after every break).
                Terminal::Broken(_) if self.draining_until.is_some() => {
                    tracing::debug!(target: LOG, session = %self.id, "the stopped turn broke again: still draining");
                }
                _ if self.draining_until.take().is_some() => {
                    tracing::debug!(target: LOG, session = %self.id, "the stopped turn has ended");
                }
                _ => {
                    tracing::warn!(target: LOG, session = %self.id, "native turn end outside a prompt ignored");
                }
            }
            return;
        };
        match terminal {
            Terminal::Stop(reason) => turn.end(Ending::Stopped(reason)),
            Terminal::Failed(error) => turn.end(Ending::Failed(error)),
            Terminal::Broken(error) => {
                return self.break_turn(error.into()).await;
            }
        }
        self.complete_if_ready().await;
    }

    fn on_transport_closed(&mut self, reason: String) {
        tracing::warn!(target: LOG, session = %self.id, %reason, "ZCode host connection closed");
        // Nothing can reach ZCode any more: no refusals, no stop.
        self.abandon(format!("the ZCode host exited or broke the protocol: {reason}"));
    }

    // ----- turn endings ------------------------------------------------------------------

    /// Ends the turn with an error now: the host is asked to stop, its interactions are
    /// refused, and its own end is awaited in the background (draining).
    async fn break_turn(&mut self, error: CoordinatorError) {
        let Some(turn) = self.turn.as_mut() else { return };
        tracing::warn!(target: LOG, session = %self.id, %error, "turn broken");
        turn.end(Ending::Broken(error));
        self.refuse_pending("the turn failed").await;
        self.stop_native().await;
        if let Some(mut turn) = self.turn.take() {
            let outcome = turn.outcome().map(|reason| PromptResponse::new(acp_stop(reason)));
            if let Some(reply) = turn.reply.take() {
                let _ = reply.send(outcome);
            }
            self.draining_until = Some(Instant::now() + self.config.cancel_grace);
        }
    }

    async fn complete_if_ready(&mut self) {
        if !self.turn.as_ref().is_some_and(Turn::ready_to_complete) {
            return;
        }
        let turn = self.turn.take().expect("checked above");
        let usage = match self.op(SessionOp::FinishTurn).await {
            Ok(result) => match self.send_update_json(&result.updates) {
                Ok(()) => usage_from(&result.response),
                // The turn ended natively: it is answered with the error, nothing to stop.
                Err(Refused::TooLarge(error)) => return self.respond(turn, Err(error)),
                Err(Refused::Invalid(fault)) => {
                    self.respond(turn, Err(fault.clone().into()));
                    return self.fail_session(fault.to_string()).await;
                }
            },
            Err(failure) => {
                // The turn itself ended; only its final metadata is missing.
                tracing::warn!(target: LOG, session = %self.id, error = %CoordinatorError::from(failure), "could not collect the turn's final state");
                None
            }
        };
        let outcome = turn.outcome().map(|reason| {
            let mut response = PromptResponse::new(acp_stop(reason));
            response.usage = usage;
            response
        });
        self.respond(turn, outcome);
    }

    fn respond(&self, mut turn: Turn, outcome: Result<PromptResponse, CoordinatorError>) {
        match &outcome {
            Ok(r) => {
                tracing::info!(target: LOG, session = %self.id, stop_reason = ?r.stop_reason, "prompt completed")
            }
            Err(e) => tracing::warn!(target: LOG, session = %self.id, error = %e, "prompt failed"),
        }
        if let Some(reply) = turn.reply.take() {
            let _ = reply.send(outcome);
        }
    }

    // ----- native answers ----------------------------------------------------------------

    /// Answers one native interaction, exactly once.
    async fn answer(&mut self, key: String, outcome: InteractionOutcome) {
        if let Some(turn) = self.turn.as_mut() {
            // The entry's asking task ends with it: the question is withdrawn, if still open.
            turn.pending.remove(&key);
        }
        if !self.answered.insert(key.clone()) || self.failed.is_some() {
            return;
        }
        let op = SessionOp::Answer(InteractionAnswer { key, outcome });
        match self.op(op).await {
            Ok(result) => match self.send_update_json(&result.updates) {
                Ok(()) => {}
                Err(Refused::TooLarge(error)) => {
                    self.answer_failure.get_or_insert(AnswerFailure::Turn(error));
                }
                Err(Refused::Invalid(fault)) => {
                    self.answer_failure.get_or_insert(AnswerFailure::Session(fault.to_string()));
                }
            },
            Err(failure) => {
                let error = CoordinatorError::from(failure);
                tracing::warn!(target: LOG, session = %self.id, %error, "answering ZCode failed");
                self.answer_failure.get_or_insert(AnswerFailure::Turn(error));
            }
        }
    }

    /// Refuses every interaction the turn still waits on (deny / unavailable), abandoning the
    /// questions still open at the client.
    async fn refuse_pending(&mut self, why: &str) {
        let Some(turn) = self.turn.as_mut() else { return };
        let pending: Vec<(String, Option<String>)> =
            turn.pending.iter().map(|(k, p)| (k.clone(), p.deny_option.clone())).collect();
        for (key, deny_option) in pending {
            self.answer(key, refusal(deny_option.as_deref(), why)).await;
        }
    }

    async fn stop_native(&mut self) {
        let Some(turn) = self.turn.as_mut() else { return };
        if turn.ended_natively() || std::mem::replace(&mut turn.stop_sent, true) {
            return;
        }
        if let Err(failure) = self.op(SessionOp::Cancel).await {
            let error = CoordinatorError::from(failure);
            tracing::warn!(target: LOG, session = %self.id, %error, "asking ZCode to stop failed");
        }
    }

    // ----- plumbing ----------------------------------------------------------------------

    fn send_update_json(&self, updates: &[String]) -> Result<(), Refused> {
        self.updates.clone().send_json(updates)
    }

    /// Mapper output the gate refused: invalid output fails the session (the mapper is at
    /// fault); output over the size limit fails the turn it belongs to with an error naming the
    /// limit, and the session goes on.
    async fn on_refused(&mut self, refused: Refused) {
        match refused {
            Refused::Invalid(fault) => self.fail_session(fault.to_string()).await,
            Refused::TooLarge(error) if self.turn.is_some() => self.break_turn(error).await,
            Refused::TooLarge(error) => {
                tracing::warn!(target: LOG, session = %self.id, %error, "update outside a turn not sent");
            }
        }
    }

    fn send_updates(&self, updates: Vec<Update>) {
        self.updates.send(updates);
    }

    /// The session can no longer work. What ZCode still waits on is refused and its turn
    /// stopped — best effort, since the mapper or the host may be what failed — then the
    /// session is abandoned.
    async fn fail_session(&mut self, reason: String) {
        if self.failed.is_none() {
            self.refuse_pending("the session failed").await;
            self.stop_native().await;
        }
        self.abandon(reason);
    }

    /// Fails the active prompt and stops asking the client; the session refuses all work.
    fn abandon(&mut self, reason: String) {
        tracing::error!(target: LOG, session = %self.id, %reason, "session failed");
        if let Some(mut turn) = self.turn.take() {
            for pending in turn.pending.values_mut() {
                // Stop asking the client now, before the prompt is answered.
                drop(pending.asking.take());
            }
            let outcome = if turn.cancelled() {
                Ok(PromptResponse::new(AcpStopReason::Cancelled))
            } else {
                Err(session_failed(&reason))
            };
            self.respond(turn, outcome);
        }
        self.failed.get_or_insert(reason);
    }
}

fn session_failed(reason: &str) -> CoordinatorError {
    CoordinatorError::failed(
        FailureKind::SessionFailed,
        format!("The session can no longer be used: {reason}"),
    )
}

fn acp_stop(reason: StopReason) -> AcpStopReason {
    match reason {
        StopReason::EndTurn => AcpStopReason::EndTurn,
        StopReason::MaxTokens => AcpStopReason::MaxTokens,
        StopReason::MaxTurnRequests => AcpStopReason::MaxTurnRequests,
        StopReason::Refusal => AcpStopReason::Refusal,
        StopReason::Cancelled => AcpStopReason::Cancelled,
    }
}

fn usage_from(json: &str) -> Option<Usage> {
    match acp_json::parse::<Option<Usage>>("usage", json) {
        Ok(usage) => usage,
        Err(fault) => {
            tracing::warn!(target: LOG, %fault, "ignoring invalid usage");
            None
        }
    }
}

/// The input that arrived with `first` (set aside first, then queued), up to the batch bounds,
/// and the transport's close if it came right behind it.
fn drain_batch(
    first: SessionInput,
    deferred: &mut Deferred,
    mut inbound: Option<&mut SessionReceiver>,
) -> (Vec<SessionInput>, Option<String>) {
    let mut bytes = first.len();
    let mut batch = vec![first];
    while batch.len() < BATCH_INPUTS && bytes < BATCH_BYTES {
        let next = match deferred.pop() {
            Some(item) => Some(item),
            None => inbound.as_mut().and_then(|inbound| inbound.try_recv()),
        };
        match next {
            Some(SessionInbound::Input(input)) => {
                bytes += input.len();
                batch.push(input);
            }
            Some(SessionInbound::TransportClosed(reason)) => return (batch, Some(reason)),
            None => break,
        }
    }
    (batch, None)
}

/// Runs `op`; native input that arrives meanwhile is set aside in `deferred`, up to
/// [`DEFER_BYTES`]: the reply may come behind it, and a session queue left full would hold up
/// the host's whole output, the reply with it.
pub(crate) async fn op_setting_aside(
    link: &SessionLink,
    inbound: &mut Option<SessionReceiver>,
    deferred: &mut Deferred,
    op: SessionOp,
    sink: UpdateSink<'_>,
) -> Result<OpResult, OpFailure> {
    let running = link.op(op, sink);
    tokio::pin!(running);
    loop {
        let room = deferred.bytes < DEFER_BYTES;
        tokio::select! {
            biased;
            result = &mut running => break result,
            item = receive(inbound), if room && inbound.is_some() => match item {
                Some(item) => deferred.push(item),
                None => *inbound = None,
            },
        }
    }
}

/// Input set aside while an operation ran, in arrival order.
#[derive(Default)]
pub(crate) struct Deferred {
    items: VecDeque<SessionInbound>,
    bytes: usize,
}

impl Deferred {
    fn push(&mut self, item: SessionInbound) {
        self.bytes += inbound_len(&item);
        self.items.push_back(item);
    }

    fn pop(&mut self) -> Option<SessionInbound> {
        let item = self.items.pop_front()?;
        self.bytes -= inbound_len(&item);
        Some(item)
    }

    fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

fn inbound_len(item: &SessionInbound) -> usize {
    match item {
        SessionInbound::Input(input) => input.len(),
        SessionInbound::TransportClosed(_) => 0,
    }
}

/// The next input: what was set aside first, then the queue. `None` when both have ended.
async fn next_input(
    deferred: &mut Deferred,
    inbound: &mut Option<SessionReceiver>,
) -> Option<SessionInbound> {
    match deferred.pop() {
        Some(item) => Some(item),
        None => receive(inbound).await,
    }
}

async fn receive(inbound: &mut Option<SessionReceiver>) -> Option<SessionInbound> {
    match inbound {
        Some(inbound) => inbound.recv().await,
        None => std::future::pending().await,
    }
}

/// Waits for the oldest batch to be written; never, when none is on its way.
async fn oldest(written: &mut VecDeque<BoxFuture<'static, ()>>) {
    match written.front_mut() {
        Some(written) => written.await,
        None => std::future::pending().await,
    }
}

/// Where a session's updates go: the ACP gate, then the client, in order.
#[derive(Clone)]
pub(crate) struct UpdatePort {
    id: SessionId,
    client: Arc<dyn ClientPort>,
    /// The size limit of one update.
    limit: usize,
}

impl UpdatePort {
    pub(crate) fn new(id: SessionId, client: Arc<dyn ClientPort>, limit: usize) -> Self {
        Self { id, client, limit }
    }

    /// Checks mapper JSON as ACP updates (all of them, or none are sent) and sends them.
    pub(crate) fn send_json(&mut self, updates: &[String]) -> Result<(), Refused> {
        let updates = acp_json::updates(updates, self.limit)?;
        self.send(updates);
        Ok(())
    }

    /// Checks one update from mapper JSON, for [`send`](Self::send).
    pub(crate) fn check(&self, json: &str) -> Result<Update, Refused> {
        acp_json::check_update(json, self.limit)
    }

    pub(crate) fn send(&self, updates: Vec<Update>) {
        if updates.is_empty() {
            return;
        }
        if let Err(error) = self.client.updates(&self.id, updates) {
            tracing::debug!(target: LOG, session = %self.id, %error, "update not delivered");
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
