//! Running one turn: plays a scenario's steps as host events against the live session, waits
//! on interactions, honours `stopGeneration`, then persists the assistant message and usage
//! before the terminal event goes out.

mod interact;
mod prompt;
mod stream;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::oneshot;

pub use prompt::{attachments, user_message};

use crate::common::clock::now_ms;
use crate::common::scenario::{Action, Condition, Scenario, UsageOverride};
use crate::common::turn::{Halt, StepResult, Stop, chars_to_tokens, failed};
use crate::task::fault::FaultKind;
use crate::task::host_service::session::{Pending, PendingKind};
use crate::task::host_service::store::TokenUsage;
use crate::task::host_service::{Host, SharedSession};

/// Everything `sendPrompt` prepared for the turn it accepted.
pub struct TurnStart {
    pub session: SharedSession,
    pub session_id: String,
    pub workspace: PathBuf,
    pub turn_id: String,
    pub input_id: String,
    pub scenario: Scenario,
    pub stop: Stop<bool>,
    pub prompt_tokens: u64,
    /// Set when this prompt gave the session its title.
    pub new_title: Option<String>,
}

struct Turn {
    host: Arc<Host>,
    start: TurnStart,
    message_id: String,
    /// Parts of the assistant message, in the order they happened.
    parts: Vec<Value>,
    /// Outcome of the most recent interaction, for `if` conditions.
    last_outcome: Option<Condition>,
    output_chars: u64,
    reasoning_chars: u64,
    usage_override: UsageOverride,
    tool_calls: u64,
    /// Context already in the window when the turn began (read from cache).
    context_before: u64,
}

/// Runs the turn to its end. Spawned right after `sendPrompt` was answered.
pub async fn run(host: Arc<Host>, start: TurnStart) {
    let context_before = start.session.lock().expect("session lock").record.context_used;
    let mut turn = Turn {
        host,
        start,
        message_id: uuid::Uuid::new_v4().to_string(),
        parts: Vec::new(),
        last_outcome: None,
        output_chars: 0,
        reasoning_chars: 0,
        usage_override: UsageOverride::default(),
        tool_calls: 0,
        context_before,
    };
    let halt = turn.play().await.err().unwrap_or(Halt::Completed("success".into()));
    turn.finish(halt).await;
}

impl Turn {
    async fn play(&mut self) -> StepResult {
        self.begin();
        self.fault_point("turn-start").await?;
        let steps = std::mem::take(&mut self.start.scenario.steps);
        for step in steps {
            if step.condition.is_some_and(|condition| self.last_outcome != Some(condition)) {
                continue;
            }
            self.start.stop.check()?;
            self.step(step.action).await?;
        }
        Ok(())
    }

    fn begin(&self) {
        let mut live = self.start.session.lock().expect("session lock");
        live.emit(&self.state_updated("running"));
        live.emit_session_event(
            Some(&self.start.turn_id),
            "turn.started",
            json!({"inputId": self.start.input_id}),
        );
        if let Some(title) = &self.start.new_title {
            live.emit_session_event(
                Some(&self.start.turn_id),
                "session.titleUpdated",
                json!({"title": title}),
            );
            live.emit_snapshot(self.host.options.signed_out);
        }
    }

    async fn step(&mut self, action: Action) -> StepResult {
        match action {
            Action::Text(chunks) => self.deltas("text_delta", chunks).await,
            Action::Reasoning(chunks) => self.deltas("reasoning_delta", chunks).await,
            Action::Stream { count, chunk } => self.bulk_stream(count, &chunk).await,
            Action::Tool(call) => self.tool(*call).await,
            Action::Question(question) => self.question(question).await,
            Action::PlanApproval(plan) => self.plan_approval(plan).await,
            Action::Todos(todos) => {
                self.update_session(|live| live.record.todos = todos);
                Ok(())
            }
            Action::Title(title) => {
                let mut live = self.session();
                live.record.title = Some(title.clone());
                live.record.updated_at = now_ms();
                live.emit_session_event(
                    Some(&self.start.turn_id),
                    "session.titleUpdated",
                    json!({"title": title}),
                );
                live.emit_snapshot(self.host.options.signed_out);
                Ok(())
            }
            Action::ProviderHeaders { reason } => self.provider_headers(&reason).await,
            Action::Sleep(duration) => self.start.stop.sleep(duration).await,
            Action::Stall => {
                self.start.stop.stopped().await;
                Err(Halt::Cancelled)
            }
            Action::Event(event) => {
                self.session().emit(&event);
                Ok(())
            }
            Action::SessionEvent { kind, payload } => {
                self.session_event(&kind, payload);
                Ok(())
            }
            Action::Usage(usage) => {
                self.usage_override = usage;
                Ok(())
            }
            Action::End(result_type) => Err(Halt::Completed(result_type)),
            Action::Fail(message) => Err(failed("ModelError", message)),
            Action::Fault(kind) => self.fire(kind, "scenario"),
        }
    }

    /// Streams text or reasoning deltas; the `stream` fault point sits in the middle.
    async fn deltas(&mut self, kind: &str, chunks: Vec<String>) -> StepResult {
        let middle = chunks.len().saturating_sub(1) / 2;
        let part_type = if kind == "text_delta" { "text" } else { "reasoning" };
        for (index, chunk) in chunks.iter().enumerate() {
            self.start.stop.check()?;
            if index > 0
                && let Some(delay) = self.host.options.chunk_delay
            {
                self.start.stop.sleep(delay).await?;
            }
            self.session_event(
                "model.streaming",
                json!({"kind": kind, "delta": chunk, "assistantMessageId": self.message_id}),
            );
            self.append_text(part_type, chunk);
            if index == middle {
                self.fault_point("stream").await?;
            }
            tokio::task::yield_now().await;
        }
        Ok(())
    }

    fn append_text(&mut self, part_type: &str, delta: &str) {
        let chars = delta.chars().count() as u64;
        if part_type == "text" {
            self.output_chars += chars;
        } else {
            self.reasoning_chars += chars;
        }
        if let Some(last) = self.parts.last_mut()
            && last["type"] == part_type
            && let Some(Value::String(text)) = last.get_mut("text")
        {
            text.push_str(delta);
            return;
        }
        self.parts.push(json!({"type": part_type, "text": delta}));
    }

    /// Registers an interaction, emits its request event and waits for the answer or a stop.
    async fn ask(
        &mut self,
        request_id: &str,
        kind: PendingKind,
        event: Value,
        point: &str,
    ) -> Result<Value, Halt> {
        let (reply, answer) = oneshot::channel();
        {
            let mut live = self.session();
            live.pending.insert(request_id.to_owned(), Pending { kind, reply });
            live.emit(&event);
        }
        self.fault_point(point).await?;
        tokio::select! {
            // An answer that arrived before the stop is taken first, as the host handles its
            // requests in order: the user's "deny" is recorded, not turned into "interrupted".
            biased;
            answer = answer => answer.map_err(|_| Halt::Cancelled),
            () = self.start.stop.stopped() => {
                self.session().pending.remove(request_id);
                Err(Halt::Cancelled)
            }
        }
    }

    /// Fires every fault armed for `point`.
    async fn fault_point(&mut self, point: &str) -> StepResult {
        for fault in self.host.faults.take(point) {
            self.fire(fault.kind, point)?;
        }
        Ok(())
    }

    fn fire(&mut self, kind: FaultKind, point: &str) -> StepResult {
        match kind {
            FaultKind::Crash => {
                self.host
                    .out
                    .exit(1, Some(format!("ZCode host worker failed: simulated crash at {point}")));
                Err(Halt::Frozen)
            }
            FaultKind::Exit => {
                self.host.out.exit(crate::task::bridge_script::WORKER_EXIT_STATUS, None);
                Err(Halt::Frozen)
            }
            FaultKind::Stall => Err(Halt::Frozen),
            other => {
                self.host.inject(other, Some(&self.start.session_id));
                Ok(())
            }
        }
    }

    fn session(
        &self,
    ) -> std::sync::MutexGuard<'_, crate::task::host_service::session::LiveSession> {
        self.start.session.lock().expect("session lock")
    }

    fn session_event(&self, kind: &str, payload: Value) {
        self.session().emit_session_event(Some(&self.start.turn_id), kind, payload);
    }

    /// Changes the stored session and publishes the new state as a `snapshot`.
    fn update_session(
        &self,
        change: impl FnOnce(&mut crate::task::host_service::session::LiveSession),
    ) {
        let mut live = self.session();
        change(&mut live);
        live.record.updated_at = now_ms();
        live.emit_snapshot(self.host.options.signed_out);
    }

    fn usage(&self) -> TokenUsage {
        let estimated = TokenUsage {
            input_tokens: self.start.prompt_tokens,
            output_tokens: chars_to_tokens(self.output_chars),
            reasoning_tokens: chars_to_tokens(self.reasoning_chars),
            cache_creation_tokens: self.start.prompt_tokens,
            cache_read_tokens: self.context_before,
        };
        let chosen = self.usage_override;
        TokenUsage {
            input_tokens: chosen.input.unwrap_or(estimated.input_tokens),
            output_tokens: chosen.output.unwrap_or(estimated.output_tokens),
            reasoning_tokens: chosen.reasoning.unwrap_or(estimated.reasoning_tokens),
            cache_creation_tokens: chosen.cache_creation.unwrap_or(estimated.cache_creation_tokens),
            cache_read_tokens: chosen.cache_read.unwrap_or(estimated.cache_read_tokens),
        }
    }

    /// Persists the turn's results, frees the session for the next prompt and emits the
    /// terminal event — in that order, so whoever reacts to the terminal sees the new state.
    async fn finish(mut self, halt: Halt) {
        let halt = match halt {
            Halt::Frozen => Halt::Frozen,
            other => match self.fault_point("turn-end").await {
                Err(frozen) => frozen,
                Ok(()) => other,
            },
        };
        if let Halt::Frozen = halt {
            // A frozen host never ends the turn; the session stays busy, like the real one.
            std::future::pending::<()>().await;
        }
        let usage = self.usage();
        let mut live = self.session();
        if !self.parts.is_empty() {
            live.record.messages.push(json!({
                "info": {"messageId": self.message_id, "role": "assistant", "createdAt": now_ms(),
                         "turnId": self.start.turn_id},
                "parts": self.parts,
            }));
        }
        live.record.usage.add(&usage);
        live.record.context_used += usage.total();
        live.record.updated_at = now_ms();
        live.turn = None;
        live.pending.clear();
        let (kind, payload) = match halt {
            Halt::Completed(result_type) => {
                ("turn.completed", self.completed_payload(&result_type, &usage))
            }
            Halt::Cancelled => ("turn.completed", self.completed_payload("cancelled", &usage)),
            Halt::Failed { message, .. } => ("turn.failed", json!({"error": {"message": message}})),
            Halt::Frozen => unreachable!("handled above"),
        };
        // Numbered before saving, so the stored sequence covers the terminal event.
        let terminal = live.record_session_event(Some(&self.start.turn_id), kind, payload);
        if let Err(error) = self.host.persist(&mut live) {
            eprintln!("zcode-sim: {error}");
        }
        live.emit(&self.state_updated("idle"));
        live.emit(&terminal);
    }

    /// The host's `state.updated` notification for a status change of this turn's session.
    fn state_updated(&self, status: &str) -> Value {
        let (session, turn) = (&self.start.session_id, &self.start.turn_id);
        let notification = json!({"sessionId": session, "status": status, "turnId": turn});
        json!({"type": "state.updated", "notification": notification})
    }

    fn completed_payload(&self, result_type: &str, usage: &TokenUsage) -> Value {
        json!({
            "resultType": result_type,
            "usage": {
                "inputTokens": usage.input_tokens,
                "outputTokens": usage.output_tokens,
                "reasoningTokens": usage.reasoning_tokens,
                "totalTokens": usage.total(),
            },
            "toolCallCount": self.tool_calls,
        })
    }
}
