//! Running a V4 conversation's turns: a scenario's steps become rows and state patches.
//!
//! One driver task per session runs inputs one after another: a preempting `startNow` input
//! first, then (while auto-drain is on) the head of the queue. A turn's opening (turn header,
//! user input, running control) and its end (header state, usage, idle control) are one frame
//! each; its end is saved before the frame goes out, so whoever reacts to it sees the result.

mod history;
mod steps;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::watch;

pub use history::{history_count, prepend as prepend_big_history};

use crate::common::clock::now_ms;
use crate::common::scenario::{Condition, Scenario, UsageOverride};
use crate::common::turn::{
    Halt, StepResult, Stop, TurnCounts, estimate_tokens, failed, title_from,
};
use crate::services::commands;
use crate::services::conversation::{Batch, Conversation, Input, Interrupt, Key, TurnHandle};
use crate::services::fault::Fault;
use crate::services::server::{Frozen, Server, Shared};
use crate::v4::turn::TurnRows;

/// Makes sure the session's inputs run (one driver per session).
pub fn drive(server: Arc<Server>, shared: Shared) {
    {
        let mut conversation = shared.lock().expect("conversation lock");
        if conversation.driving {
            return;
        }
        conversation.driving = true;
    }
    tokio::spawn(async move {
        loop {
            let next = {
                let mut conversation = shared.lock().expect("conversation lock");
                let next = next_input(&mut conversation);
                conversation.starting = next.is_some();
                if next.is_none() {
                    conversation.driving = false;
                }
                next
            };
            let Some((input, promoted)) = next else { return };
            if run(server.clone(), shared.clone(), input, promoted).await.is_err() {
                // A frozen turn keeps the session busy for good, as a hung server would.
                return;
            }
        }
    });
}

fn next_input(conversation: &mut Conversation) -> Option<(Input, bool)> {
    if let Some(input) = conversation.next_inputs.pop_front() {
        return Some((input, false));
    }
    if !conversation.auto_drain || conversation.queue.is_empty() {
        return None;
    }
    let item = conversation.queue.remove(0);
    Some((commands::input_of(&item), true))
}

async fn run(
    server: Arc<Server>,
    shared: Shared,
    input: Input,
    promoted: bool,
) -> Result<(), Frozen> {
    let workspace = PathBuf::from(&shared.lock().expect("conversation lock").record.workspace_path);
    let scenario = match history_count(&input.text) {
        Some(messages) => {
            history::seed(&server, &shared, messages);
            crate::common::scenario::parse_lines(&[json!({"step": "text", "text": format!("Seeded {messages} messages into the history.")})])
                .map_err(|error| error.message)
        }
        None => crate::common::scenario::select(
            &input.text,
            &workspace,
            server.options.scenario_file.as_deref(),
        ),
    };
    let mut turn = Turn::start(server, shared, workspace, &input, promoted);
    let halt = match scenario {
        Ok(scenario) => {
            turn.play(scenario).await.err().unwrap_or(Halt::Completed("success".into()))
        }
        // The scenario was readable at admission; a file that broke since fails the turn.
        Err(message) => failed("ScenarioError", message),
    };
    turn.finish(halt).await
}

struct Turn {
    server: Arc<Server>,
    shared: Shared,
    workspace: PathBuf,
    rows: TurnRows,
    header_row: u64,
    input_entity: String,
    started_at: u64,
    interrupt: Stop<Interrupt>,
    last_outcome: Option<Condition>,
    counts: TurnCounts,
    usage_override: UsageOverride,
    /// Rows still streaming, settled at the end if the turn stops first.
    open_rows: Vec<u64>,
    /// Guide inputs injected so far (each opens a work segment).
    segments: Vec<Value>,
}

impl Turn {
    fn start(
        server: Arc<Server>,
        shared: Shared,
        workspace: PathBuf,
        input: &Input,
        promoted: bool,
    ) -> Turn {
        let turn_id = format!("turn_{}", uuid::Uuid::new_v4().simple());
        let now = now_ms();
        let input_entity = format!("input:{}", input.command_id);
        let (header_row, context_before, interrupt) = {
            let mut conversation = shared.lock().expect("conversation lock");
            conversation.starting = false;
            let early = std::mem::replace(&mut conversation.early_interrupt, Interrupt::None);
            let (interrupt_sender, interrupt) = watch::channel(early);
            conversation.turn = Some(TurnHandle {
                foreground_execution_id: format!("fx_{}", uuid::Uuid::new_v4().simple()),
                source_command_id: input.command_id.clone(),
                started_at: now,
                interrupt: interrupt_sender,
                stopping: early == Interrupt::Stop,
                tool_running: false,
            });
            let mut batch = Batch::default();
            let header = conversation.append_row(
                &mut batch,
                json!({"kind": "turnHeader", "turnId": turn_id, "productTurnId": turn_id,
                       "entityId": format!("turn:{turn_id}"), "origin": "userInput", "executionKind": "agent",
                       "sourceCommandId": input.command_id, "state": "running", "startedAt": now}),
            );
            let mut user = json!({"kind": "userInput", "turnId": turn_id, "productTurnId": turn_id,
                                  "entityId": input_entity, "text": input.text, "origin": "realUser",
                                  "sourceCommandId": input.command_id, "rootSourceCommandId": input.command_id,
                                  "clientId": input.client_id});
            if !input.attachments.is_empty() {
                user["attachments"] = json!(input.attachments);
            }
            conversation.append_row(&mut batch, user);
            let mut keys = vec![Key::Control];
            if promoted {
                keys.push(Key::Queue);
            }
            if conversation.record.title.is_empty() {
                conversation.record.title = title_from(&input.text);
                conversation.record.title_source = "generated".into();
                keys.push(Key::Meta);
            }
            conversation.record.phase = "running".into();
            conversation.patch(&mut batch, &keys);
            conversation.commit_with(batch, |conversation| server.persist(conversation));
            (header, conversation.record.context_used, interrupt)
        };
        let attachment_tokens: u64 =
            input.attachments.iter().map(|item| estimate_tokens(&item.to_string())).sum();
        Turn {
            server,
            shared,
            workspace,
            rows: TurnRows {
                turn_id,
                response_id: format!("resp_{}", uuid::Uuid::new_v4().simple()),
            },
            header_row,
            input_entity,
            started_at: now,
            interrupt: Stop(interrupt),
            last_outcome: None,
            counts: TurnCounts {
                context_before,
                prompt_tokens: estimate_tokens(&input.text) + attachment_tokens,
                model_requests: 1,
                ..TurnCounts::default()
            },
            usage_override: UsageOverride::default(),
            open_rows: Vec::new(),
            segments: Vec::new(),
        }
    }

    async fn play(&mut self, mut scenario: Scenario) -> StepResult {
        self.fault_point("turn-start").await?;
        for step in std::mem::take(&mut scenario.steps) {
            if step.condition.is_some_and(|condition| self.last_outcome != Some(condition)) {
                continue;
            }
            self.inject_guides();
            self.interrupt.check()?;
            self.step(step.action).await?;
        }
        self.inject_guides();
        Ok(())
    }

    fn conversation(&self) -> std::sync::MutexGuard<'_, Conversation> {
        self.shared.lock().expect("conversation lock")
    }

    /// Changes the conversation in one frame: `change` stages its deltas.
    fn publish<R>(&self, change: impl FnOnce(&mut Conversation, &mut Batch) -> R) -> R {
        let mut conversation = self.conversation();
        let mut batch = Batch::default();
        let result = change(&mut conversation, &mut batch);
        conversation.commit(batch);
        result
    }

    /// Fires the faults armed for `point`.
    async fn fault_point(&mut self, point: &str) -> StepResult {
        let topic = self.topic();
        for armed in self.server.faults.take(point) {
            self.server.fire_in(&armed, Some(&topic)).map_err(|Frozen| Halt::Frozen)?;
        }
        Ok(())
    }

    fn topic(&self) -> String {
        self.shared.lock().expect("conversation lock").topic()
    }

    fn fire(&mut self, fault: Fault) -> StepResult {
        let armed =
            crate::services::fault::ArmedFault { kind: fault, point: "scenario".into(), value: 0 };
        let topic = self.topic();
        self.server.fire_in(&armed, Some(&topic)).map_err(|Frozen| Halt::Frozen)
    }

    /// Guide inputs waiting in the queue join the running turn at a step boundary.
    fn inject_guides(&mut self) {
        let shared = self.shared.clone();
        let mut conversation = shared.lock().expect("conversation lock");
        if !conversation.queue.iter().any(is_guide) {
            return;
        }
        let (guides, rest): (Vec<Value>, Vec<Value>) =
            std::mem::take(&mut conversation.queue).into_iter().partition(is_guide);
        conversation.queue = rest;
        let mut batch = Batch::default();
        for item in guides {
            let input = commands::input_of(&item);
            let entity = format!("input:{}", input.command_id);
            let mut row = self.rows.row("userInput", entity.clone());
            row["text"] = json!(input.text);
            row["origin"] = json!("realUser");
            row["guided"] = json!(true);
            row["sourceCommandId"] = json!(input.command_id);
            row["rootSourceCommandId"] = json!(input.command_id);
            row["clientId"] = json!(input.client_id);
            conversation.append_row(&mut batch, row);
            self.counts.prompt_tokens += estimate_tokens(&input.text);
            let now = now_ms();
            if self.segments.is_empty() {
                self.segments.push(json!({"segmentId": format!("{}-seg-1", self.rows.turn_id),
                                          "triggerEntityId": self.input_entity, "startedAt": self.started_at}));
            }
            if let Some(last) = self.segments.last_mut() {
                last["endedAt"] = json!(now);
            }
            let segment_id = format!("{}-seg-{}", self.rows.turn_id, self.segments.len() + 1);
            self.segments.push(
                json!({"segmentId": segment_id, "triggerEntityId": entity, "startedAt": now}),
            );
        }
        let segments = self.segments.clone();
        conversation.upsert_row(&mut batch, self.header_row, |header| {
            header["workSegments"] = json!(segments)
        });
        conversation.patch(&mut batch, &[Key::Queue]);
        conversation.commit(batch);
    }

    /// Ends the turn: settles open rows and the header, adds the usage, frees the session,
    /// saves it, then sends the frame.
    async fn finish(mut self, halt: Halt) -> Result<(), Frozen> {
        let halt = match halt {
            Halt::Frozen => Halt::Frozen,
            other => match self.fault_point("turn-end").await {
                Err(frozen) => frozen,
                Ok(()) => other,
            },
        };
        let (header_state, phase, error) = match &halt {
            Halt::Frozen => return Err(Frozen),
            Halt::Cancelled => ("completedInterrupted", "completedInterrupted", None),
            Halt::Completed(result) if result == "cancelled" => {
                ("completedInterrupted", "completedInterrupted", None)
            }
            Halt::Completed(result) if result.starts_with("error") => {
                ("failed", "error", Some(result.clone()))
            }
            Halt::Completed(_) => ("completedSuccess", "completedSuccess", None),
            Halt::Failed { message, .. } => ("failed", "error", Some(message.clone())),
        };
        let tokens = self.counts.tokens(self.usage_override);
        let now = now_ms();
        let shared = self.shared.clone();
        let mut conversation = shared.lock().expect("conversation lock");
        let mut batch = Batch::default();
        let settled = if error.is_some() { "failed" } else { "interrupted" };
        for row in std::mem::take(&mut self.open_rows) {
            conversation.upsert_row(&mut batch, row, |row| {
                let reasoning = row["kind"] == "reasoning";
                row["state"] =
                    json!(if reasoning && settled == "failed" { "interrupted" } else { settled });
            });
        }
        let (log, header) = (&mut conversation.publisher, self.header_row);
        self.rows.close(log, &mut batch, header, header_state, (self.started_at, tokens.output));
        let usage = &mut conversation.record.usage;
        usage.input_tokens += tokens.input;
        usage.output_tokens += tokens.output;
        usage.cache_read_tokens += tokens.cache_read;
        usage.cache_write_tokens += tokens.cache_write;
        conversation.record.context_used += self.counts.prompt_tokens + tokens.output;
        conversation.record.phase = phase.into();
        conversation.record.last_error = match error {
            None => Value::Null,
            Some(message) => {
                json!({"code": "fault.turn.failed", "message": message, "recoverable": true,
                                    "at": now, "source": "provider"})
            }
        };
        let mut keys = vec![Key::Control, Key::Usage];
        if !conversation.pending.is_empty() {
            conversation.pending.clear();
            keys.push(Key::Pending);
        }
        conversation.waiting.clear();
        conversation.turn = None;
        conversation.patch(&mut batch, &keys);
        let server = self.server.clone();
        conversation.commit_with(batch, |conversation| server.persist(conversation));
        // Faults of this turn that no frame of it carried (it was stopped) end with it.
        server.router.disarm(&conversation.topic());
        Ok(())
    }
}

fn is_guide(item: &Value) -> bool {
    item["delivery"]["admitted"] == "guide"
}
