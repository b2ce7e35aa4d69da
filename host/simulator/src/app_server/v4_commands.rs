//! `v4/command`: the command inbox (3.15.1 `zcode-protocol-v4/command.ts`, the CLI's
//! `command-inbox.ts`). Every command gets an ACK `{commandId, status, reasonCode?, message?,
//! revisionAtDecision, result?}` as the RPC result — a bad envelope or payload is a
//! `rejected` ACK with `proto.invalidPayload`, not an RPC error, and so is a CAS command
//! without its base. A stale base is `stale` (`v4::commands::stale_base`: the log epoch, then
//! the revision). A repeated `(sessionId, commandId)` replays the first decision as
//! `duplicate` (a failure stays a failure); `stale` and `rejected` ones are decided afresh.

use std::sync::Arc;

use serde_json::{Value, json};

use super::catalog;
use super::fault::AppFault;
use super::interactions::{Resolution, V4Answer};
use super::messages;
use super::schemas;
use super::server::{Reply, Server, State};
use super::session::{Origin, QueuedInput, TurnStart};
use super::wire::ProtocolError;
use super::zod;
use crate::common::clock::now_ms;
use crate::v4::commands::{Decision, missing_base, remembered, replay, stale_base};

fn failed(message: impl Into<String>) -> Decision {
    Decision::refused("failed", "fault.command.executionFailed", Some(message.into()))
}

/// A new stored session holding the parent's history up to the target's turn (`v4/fork.rs`:
/// the rows a fork copies hold `turns` turns, and the Agent rebuilds a session's rows from its
/// messages, one turn per user message); the parent is not changed.
fn fork(state: &mut State, session_id: &str, payload: &Value) -> Decision {
    let resident = state.sessions.get(session_id).expect("checked above");
    let empty = serde_json::Map::new();
    let payload = payload.as_object().unwrap_or(&empty);
    let cut = match crate::v4::fork::cut(resident.publisher.rows(), payload) {
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
        return failed(message);
    }
    crate::v4::fork::accepted(&copy.session_id)
}

pub fn command(server: &Arc<Server>, params: Option<&Value>) -> Result<Reply, ProtocolError> {
    let command_id = params
        .and_then(|params| params.get("commandId"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let invalid = |message: String| -> Result<Reply, ProtocolError> {
        let decision = Decision::rejected("proto.invalidPayload", message);
        Ok(decision.ack(&command_id, 0).into())
    };
    let issues = zod::check(&schemas::v4_command_envelope(), params);
    if !issues.is_empty() {
        return invalid(zod::invalid_params_message(&issues));
    }
    let params = params.expect("the envelope schema accepts objects only");
    let kind = params["type"].as_str().unwrap_or_default();
    let has = |key: &str| !params[key].is_null();
    if let Some(message) = missing_base(kind, has("baseRevision"), has("baseLogEpoch")) {
        return invalid(message.into());
    }
    let session_id = params["sessionId"].as_str().map(str::to_owned);
    let key = (session_id.clone(), command_id.clone());
    let mut state = server.state();
    if let Some(previous) = state.gateway.acks.get(&key) {
        return Ok(replay(previous).into());
    }
    let mut start = None;
    let (decision, revision) = match &session_id {
        None => (Decision::rejected("proto.sessionNotFound", "This command needs a session"), 0),
        Some(session_id) => decide(server, &mut state, session_id, kind, params, &mut start),
    };
    let ack = decision.ack(&command_id, revision);
    if remembered(&decision) {
        state.gateway.acks.insert(key, ack.clone());
    }
    Ok(Reply { result: ack, start, ..Reply::default() })
}

/// Checks the payload and the CAS base, then executes; returns the decision and the
/// revision it was taken at, and sets `start` when a turn is to start.
fn decide(
    server: &Arc<Server>,
    state: &mut State,
    session_id: &str,
    kind: &str,
    params: &Value,
    start: &mut Option<TurnStart>,
) -> (Decision, u64) {
    let Some(resident) = state.sessions.get(session_id) else {
        let message = format!("Session not found: {session_id}");
        return (Decision::rejected("proto.sessionNotFound", message), 0);
    };
    let revision = resident.revision;
    let empty = json!({});
    let payload = params.get("payload").unwrap_or(&empty);
    let issues = zod::check(&schemas::v4_command_payload(kind, server.profile), Some(payload));
    if !issues.is_empty() {
        let message = zod::invalid_params_message(&issues);
        return (Decision::rejected("proto.invalidPayload", message), revision);
    }
    let base = (params["baseRevision"].as_u64(), params["baseLogEpoch"].as_str());
    let current = (revision, resident.publisher.log.log_epoch.as_str());
    let raced = || server.faults.take_one("v4/command", AppFault::StaleCas).is_some();
    if let Some(decision) = stale_base(kind, base, current, raced) {
        return (decision, revision);
    }
    let command_id = params["commandId"].as_str().unwrap_or_default();
    let client_id = params["clientId"].as_str().unwrap_or_default();
    let command = Command { session_id, kind, payload, command_id, client_id };
    (execute(server, state, &command, start), revision)
}

/// A command that passed its checks.
struct Command<'a> {
    session_id: &'a str,
    kind: &'a str,
    payload: &'a Value,
    command_id: &'a str,
    client_id: &'a str,
}

fn execute(
    server: &Arc<Server>,
    state: &mut State,
    command: &Command<'_>,
    start: &mut Option<TurnStart>,
) -> Decision {
    let Command { session_id, kind, payload, client_id, .. } = *command;
    let text = |key: &str| payload[key].as_str().unwrap_or_default().to_owned();
    match kind {
        "sendText" => send_text(state, command, start),
        "stop" => stop(state, session_id, payload),
        "resolveInteraction" => {
            let answer = V4Answer::from_payload(&payload["answer"], client_id);
            match server.interactions.resolve(&text("interactionId"), session_id, answer) {
                Resolution::Delivered => Decision::accepted(None),
                Resolution::AlreadyResolved => Decision::refused(
                    "noop",
                    "proto.alreadyResolved",
                    Some("The interaction is already resolved".into()),
                ),
                Resolution::NotFound => Decision::rejected(
                    "proto.interactionNotFound",
                    "No such interaction in this session",
                ),
            }
        }
        "forkAssistant" => fork(state, session_id, payload),
        "snoozeInteractionAutoResolution" => {
            state.snoozed.insert(text("interactionId"));
            Decision::accepted(None)
        }
        "switchModelConfig" => {
            let Some(model) = catalog::find(&text("provider"), &text("model"))
                .filter(|model| state.entitlements.usable(model))
            else {
                return failed(format!(
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
                return failed(format!("Reasoning level {level} is not available"));
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
                return Decision::rejected(
                    "proto.queueItemNotFound",
                    format!("No queue item {wanted}"),
                );
            };
            if kind == "deleteQueueItem" {
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
                Err(message) => failed(message),
            }
        }
        other => Decision::rejected(
            "proto.capabilityUnsupported",
            format!("zcode-sim: {other} is not simulated"),
        ),
    }
}

/// A settings change: both projections hear of it, like after the legacy setters.
fn announce(state: &mut State, session_id: &str, reason: &str, keys: &[&str]) -> Decision {
    match state.announce_settings(session_id, reason, keys) {
        Ok(()) => Decision::accepted(None),
        Err(error) => failed(error.message),
    }
}

fn send_text(state: &mut State, command: &Command<'_>, start: &mut Option<TurnStart>) -> Decision {
    let Command { session_id, payload, command_id, client_id, .. } = *command;
    let text = payload["text"].as_str().unwrap_or_default().to_owned();
    let selection = match payload.get("modelSelection") {
        Some(selection) => {
            match catalog::resolve_selection(&state.entitlements, selection, false) {
                Ok((_, selection)) => Some(selection),
                Err(message) => return failed(message),
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
    let Some(turn) = &resident.turn else {
        // Stopping an idle session is a safe no-op.
        return Decision::accepted(None);
    };
    if let Some(expected) = payload["expectedForegroundExecutionId"].as_str()
        && expected != turn.foreground_execution_id
    {
        return Decision::rejected("guard.stopTargetChanged", "The foreground execution changed");
    }
    turn.stop.send_replace(true);
    // Stopping holds the queue back instead of draining it into a new run.
    if !resident.queue.is_empty() {
        resident.auto_drain = false;
        state.v4_patch(session_id, &["queue"]);
    }
    Decision::accepted(None)
}
