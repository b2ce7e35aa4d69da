//! `v4/command`: the app-server's side of the shared command inbox (`v4::inbox`) and the
//! commands it simulates.

use std::sync::Arc;

use serde_json::{Value, json};

use super::catalog;
use super::fault::AppFault;
use super::interactions::{Resolution, V4Answer};
use super::messages;
use super::server::{Reply, Server, State};
use super::session::{Origin, QueuedInput, TurnStart};
use super::wire::ProtocolError;
use crate::common::clock::now_ms;
use crate::v4::commands::{Decision, resolved_by};
use crate::v4::inbox::{Envelope, Inbox, Settings, decide};

pub fn command(server: &Arc<Server>, params: Option<&Value>) -> Result<Reply, ProtocolError> {
    let raw = params.unwrap_or(&Value::Null);
    let envelope = match Envelope::parse(raw, server.profile.collaboration_modes()) {
        Ok(envelope) => envelope,
        Err(refused) => return Ok(refused.into()),
    };
    let mut state = server.state();
    let mut inbox = App { server, state: &mut state, start: None };
    let result = decide(&mut inbox, &envelope);
    Ok(Reply { result, start: inbox.start, ..Reply::default() })
}

/// One command's view of the server, and the turn it starts once the ACK is out.
struct App<'a> {
    server: &'a Arc<Server>,
    state: &'a mut State,
    start: Option<TurnStart>,
}

impl Inbox for App<'_> {
    fn settled(&mut self, envelope: &Envelope<'_>) -> Option<Value> {
        let remembered = self.state.gateway.acks.get_mut(envelope.session_id?)?;
        remembered.lookup(envelope.command_id)
    }

    fn session(&self, envelope: &Envelope<'_>) -> Option<(u64, String)> {
        let resident = self.state.sessions.get(envelope.session_id?)?;
        Some((resident.revision, resident.publisher.log.log_epoch.clone()))
    }

    fn raced(&self) -> bool {
        self.server.faults.take_one("v4/command", AppFault::StaleCas).is_some()
    }

    fn settings(&self, envelope: &Envelope<'_>) -> Settings {
        let record = &self.state.sessions[envelope.session_id.expect("a session")].record;
        // The V4 `config.planEnabled` of this server is the `plan` mode.
        let (selection, mode) = (record.model.clone(), record.mode.clone());
        Settings { selection, plan_enabled: mode == "plan", mode }
    }

    fn execute(&mut self, envelope: &Envelope<'_>) -> Decision {
        execute(self.server, self.state, envelope, &mut self.start)
    }

    fn remember(&mut self, envelope: &Envelope<'_>, ack: &Value) {
        let session_id = envelope.session_id.expect("decided on a session").to_owned();
        self.state
            .gateway
            .acks
            .entry(session_id)
            .or_default()
            .remember(envelope.command_id, ack.clone());
    }
}

/// A new stored session holding the parent's history up to the target's turn (`v4/fork.rs`:
/// the rows a fork copies hold `turns` turns, and the Agent rebuilds a session's rows from its
/// messages, one turn per user message); the parent is not changed.
fn fork(state: &mut State, session_id: &str, envelope: &Envelope<'_>) -> Decision {
    let resident = state.sessions.get(session_id).expect("checked above");
    let cut = match crate::v4::fork::cut(resident.publisher.rows(), envelope.members()) {
        Ok(cut) => cut,
        Err(refused) => return refused,
    };
    let mut copy = resident.record.clone();
    let mut users = 0;
    let end = copy
        .messages
        .iter()
        .position(|message| {
            users += usize::from(message["info"]["role"] == "user");
            users > cut.turns
        })
        .unwrap_or(copy.messages.len());
    copy.messages.truncate(end);
    copy.session_id = messages::new_id("sess");
    copy.parent_session_id = Some(session_id.to_owned());
    copy.created_at = now_ms();
    copy.updated_at = copy.created_at;
    // A fork is persisted when it is made.
    if let Err(message) = state.store.save(&copy) {
        return Decision::failed(message);
    }
    crate::v4::fork::accepted(&copy.session_id)
}

fn execute(
    server: &Arc<Server>,
    state: &mut State,
    envelope: &Envelope<'_>,
    start: &mut Option<TurnStart>,
) -> Decision {
    let session_id = envelope.session_id.expect("decided on a session");
    let payload = envelope.payload;
    let text = |key: &str| envelope.text(key).to_owned();
    match envelope.kind {
        "sendText" => send_text(state, envelope, start),
        "stop" => stop(state, session_id, payload),
        "resolveInteraction" => {
            let answer = V4Answer::from_payload(&payload["answer"], envelope.client_id);
            let option = answer.option_id.clone();
            match server.interactions.resolve(envelope.text("interactionId"), session_id, answer) {
                Resolution::Delivered => resolved_by(envelope.client_id, option.as_deref()),
                // Late or unknown, the answer changes nothing (`command.ts`: first answer wins).
                Resolution::AlreadyResolved | Resolution::NotFound => {
                    Decision::noop("proto.alreadyResolved")
                }
            }
        }
        "forkAssistant" => fork(state, session_id, envelope),
        "snoozeInteractionAutoResolution" => {
            state.snoozed.insert(text("interactionId"));
            Decision::accepted(None)
        }
        "switchModelConfig" => {
            let Some(model) = catalog::find(&text("provider"), &text("model"))
                .filter(|model| state.entitlements.usable(model))
            else {
                return Decision::failed(format!(
                    "Model {}/{} is not available",
                    text("provider"),
                    text("model")
                ));
            };
            let thought = text("thought");
            let level = (!thought.is_empty()).then_some(thought.as_str());
            if let Some(level) = level
                && !model.levels.contains(&level)
            {
                return Decision::failed(format!("Reasoning level {level} is not available"));
            }
            let resident = state.sessions.get_mut(session_id).expect("checked above");
            resident.record.model = Some(catalog::selection(model, level.or(model.default_level)));
            resident.record.thought_level = level.or(model.default_level).map(str::to_owned);
            announce(state, session_id, "model_changed", &["model", "thoughtLevel"])
        }
        "switchCollaborationMode" => {
            let resident = state.sessions.get_mut(session_id).expect("checked above");
            resident.record.mode = text("mode");
            announce(state, session_id, "mode_changed", &["mode"])
        }
        "setFollowupMode" => {
            let resident = state.sessions.get_mut(session_id).expect("checked above");
            resident.followup_mode = if text("mode") == "guide" { "guide" } else { "queue" };
            resident.revision += 1;
            state.v4_patch(session_id, &["config", "inputRouting"]);
            Decision::accepted(None)
        }
        "setAutoDrain" => {
            let resident = state.sessions.get_mut(session_id).expect("checked above");
            resident.auto_drain = payload["autoDrain"] == true;
            resident.revision += 1;
            *start = if resident.auto_drain { resident.next_queued() } else { None };
            state.v4_patch(session_id, &["queue"]);
            if start.is_some() {
                state.started(session_id);
            }
            Decision::accepted(None)
        }
        "deleteQueueItem" | "editQueueItem" => {
            let resident = state.sessions.get_mut(session_id).expect("checked above");
            let wanted = text("queueItemId");
            let Some(index) =
                resident.queue.iter().position(|item| item.queue_item()["queueItemId"] == wanted)
            else {
                // The item lost a race with a drain (3.15.1 `commands/handlers/queue.ts`).
                return match envelope.kind {
                    "deleteQueueItem" => Decision::noop("queue.itemMissing"),
                    _ => Decision::accepted(None),
                };
            };
            if envelope.kind == "deleteQueueItem" {
                resident.queue.remove(index);
            } else {
                resident.queue[index].text = text("newText");
            }
            resident.revision += 1;
            state.v4_patch(session_id, &["queue"]);
            Decision::accepted(None)
        }
        "renameSession" => {
            let title = text("title");
            let resident = state.sessions.get_mut(session_id).expect("checked above");
            let previous = std::mem::replace(&mut resident.record.title, title.clone());
            resident.record.title_source = Some("custom".into());
            resident.record.updated_at = now_ms();
            resident.revision += 1;
            state.persist(session_id);
            let payload = json!({"previousTitle": previous, "source": "custom", "title": title});
            state.event(session_id, None, "session.titleUpdated", payload);
            state.v4_patch(session_id, &["meta"]);
            Decision::accepted(None)
        }
        "deleteSession" => {
            if let Some(turn) =
                state.sessions.get(session_id).and_then(|resident| resident.turn.as_ref())
            {
                turn.stop.send_replace(true);
            }
            state.remove_resident(session_id);
            match state.store.delete(session_id) {
                Ok(()) => Decision::accepted(None),
                Err(message) => Decision::failed(message),
            }
        }
        other => Decision::not_implemented(other),
    }
}

/// A settings change: both projections hear of it, like after the legacy setters.
fn announce(state: &mut State, session_id: &str, reason: &str, keys: &[&str]) -> Decision {
    match state.announce_settings(session_id, reason, keys) {
        Ok(()) => Decision::accepted(None),
        Err(error) => Decision::failed(error.message),
    }
}

fn send_text(
    state: &mut State,
    envelope: &Envelope<'_>,
    start: &mut Option<TurnStart>,
) -> Decision {
    let Envelope { payload, command_id, client_id, .. } = *envelope;
    let session_id = envelope.session_id.expect("decided on a session");
    let text = payload["text"].as_str().unwrap_or_default().to_owned();
    let selection = match payload.get("modelSelection") {
        Some(selection) => {
            match catalog::resolve_selection(&state.entitlements, selection, false) {
                Ok((_, selection)) => Some(selection),
                Err(message) => return Decision::failed(message),
            }
        }
        None => None,
    };
    let resident = state.sessions.get_mut(session_id).expect("checked above");
    if let Some(selection) = selection {
        resident.record.model = Some(selection);
    }
    // The input is the command: ZCode 3.15.1's `sendText` starts or queues the turn with
    // `inputId: envelope.commandId` and answers with that id
    // (`bootstrap/src/zcode-protocol-v4/commands/handlers/session-flow.ts`).
    let input_id = command_id.to_owned();
    if !resident.is_running() {
        *start = Some(resident.begin_turn(&text, &input_id, Origin::V4, Some(command_id.into())));
        state.started(session_id);
        let result = json!({"type": "inputAccepted", "delivery": "startNow", "inputId": input_id});
        return Decision::accepted(Some(result));
    }
    // A running turn: the input waits in the queue, or on the guide lane for the next model
    // request. The ACK says `queue` either way; the verdict is the queue item's steer state.
    let guide = payload["requestedDelivery"] == "guide"
        || (payload["requestedDelivery"].is_null() && resident.followup_mode == "guide");
    resident.admissions += 1;
    let item = QueuedInput {
        text: text.clone(),
        input_id: input_id.clone(),
        command_id: command_id.to_owned(),
        client_id: client_id.to_owned(),
        delivery: if guide { "guide" } else { "queue" },
        requested: if guide { "guide" } else { "queue" },
        steer_state: if guide { "steering" } else { "notRequested" },
        fallback_reason: None,
        origin: Origin::V4,
        admission_seq: resident.admissions,
        admitted_at: now_ms(),
    };
    resident.queue.push_back(item.clone());
    resident.revision += 1;
    let target = resident.turn.as_ref().map(|turn| turn.turn_id.clone()).unwrap_or_default();
    let queue_length = resident.queue.len();
    let preview: String = text.chars().take(120).collect();
    let event = json!({
        "pendingInputId": item.input_id, "inputId": item.input_id, "input": text,
        "inputPreview": preview, "inputSize": text.len(), "commandKind": "sendText",
        "delivery": item.delivery, "targetTurnId": target, "queueLength": queue_length,
        "intent": {"sourceCommandId": command_id, "requestedDelivery": item.requested,
                   "admittedDelivery": item.delivery},
    });
    state.event(session_id, Some(&target), "turn.steerQueued", event);
    state.v4_patch(session_id, &["queue"]);
    Decision::accepted(Some(
        json!({"type": "inputAccepted", "delivery": "queue", "inputId": input_id}),
    ))
}

fn stop(state: &mut State, session_id: &str, payload: &Value) -> Decision {
    let resident = state.sessions.get_mut(session_id).expect("checked above");
    let expected = payload["expectedForegroundExecutionId"].as_str();
    // A stop naming an execution that is over must not stop a later one (3.15.1
    // `commands/handlers/session-flow.ts`, `stop`).
    let target_changed = Decision::noop("guard.stopTargetChanged");
    let Some(turn) = &resident.turn else {
        return if expected.is_some() { target_changed } else { Decision::accepted(None) };
    };
    if expected.is_some_and(|expected| expected != turn.foreground_execution_id) {
        return target_changed;
    }
    turn.stop.send_replace(true);
    // Stopping holds the queue back instead of draining it into a new run.
    if !resident.queue.is_empty() {
        resident.auto_drain = false;
        state.v4_patch(session_id, &["queue"]);
    }
    Decision::accepted(None)
}
