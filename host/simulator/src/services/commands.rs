//! `sendConversationCommandV4`: the command inbox and the simulated commands.
//!
//! Admission follows ZCode's `command-inbox.ts` (3.15.1): an envelope that does not parse is
//! `rejected` `proto.invalidPayload` (revision 0); an unknown session `rejected`
//! `proto.sessionNotFound`; a repeated `commandId` replays its first ACK as `duplicate` (a
//! `failed` one stays `failed`); a CAS command's stale base is `stale` with the current
//! `revisionAtDecision` (`v4::commands::stale_base`). `stale` and `rejected` decisions are not
//! remembered, so a retry with the same id is decided afresh.

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value, json};

use super::conversation::{Conversation, Expect, Input, Interrupt, Key};
use crate::common::catalog;
use crate::common::clock::now_ms;
use crate::services::server::{Server, Shared};
use crate::services::turn::history_count;
use crate::v4::commands::{COMMAND_TYPES, Decision, missing_base, remembered, replay, stale_base};
use crate::v4::publisher::Log;

fn noop(reason: &str) -> Decision {
    Decision::refused("noop", reason, None)
}

fn failed(reason: &str, message: impl Into<String>) -> Decision {
    Decision::refused("failed", reason, Some(message.into()))
}

/// A parsed envelope.
#[derive(Debug)]
struct Envelope<'a> {
    command_id: &'a str,
    client_id: &'a str,
    session_id: Option<&'a str>,
    kind: &'a str,
    payload: &'a Map<String, Value>,
    base_revision: Option<u64>,
    base_log_epoch: Option<&'a str>,
}

fn parse(envelope: &Value) -> Result<Envelope<'_>, String> {
    let object = envelope.as_object().ok_or("envelope: expected object")?;
    let text = |key: &str| {
        object.get(key).and_then(Value::as_str).ok_or(format!("{key}: expected string"))
    };
    let command_id = text("commandId")?;
    let client_id = text("clientId")?;
    let session_id = match object.get("sessionId") {
        Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id.as_str()),
        _ => return Err("sessionId: expected string or null".into()),
    };
    let kind = text("type")?;
    if !COMMAND_TYPES.contains(&kind) {
        return Err(format!("type: unknown command type {kind:?}"));
    }
    if !object.get("issuedAt").is_some_and(Value::is_number) {
        return Err("issuedAt: expected number".into());
    }
    static EMPTY: OnceLock<Map<String, Value>> = OnceLock::new();
    let payload = match object.get("payload") {
        Some(Value::Object(payload)) => payload,
        None | Some(Value::Null) => EMPTY.get_or_init(Map::new),
        Some(_) => return Err("payload: expected object".into()),
    };
    let base_revision = match object.get("baseRevision") {
        None => None,
        Some(value) => Some(value.as_u64().ok_or("baseRevision: expected number")?),
    };
    let base_log_epoch = match object.get("baseLogEpoch") {
        None => None,
        Some(value) => Some(
            value
                .as_str()
                .filter(|epoch| !epoch.trim().is_empty())
                .ok_or("baseLogEpoch: expected string")?,
        ),
    };
    if let Some(message) = missing_base(kind, base_revision.is_some(), base_log_epoch.is_some()) {
        return Err(message.into());
    }
    Ok(Envelope { command_id, client_id, session_id, kind, payload, base_revision, base_log_epoch })
}

/// Handles one envelope; returns the ACK and, when turns must run, the session to drive.
pub fn handle(server: &Arc<Server>, workspace: &str, raw: &Value) -> (Value, Option<Shared>) {
    let envelope = match parse(raw) {
        Ok(envelope) => envelope,
        Err(message) => {
            let command_id = raw.get("commandId").and_then(Value::as_str).unwrap_or("");
            return (Decision::rejected("proto.invalidPayload", message).ack(command_id, 0), None);
        }
    };
    let not_found = || {
        Decision::rejected("proto.sessionNotFound", "session not found").ack(envelope.command_id, 0)
    };
    let Some(session_id) = envelope.session_id else { return (not_found(), None) };
    let Some(shared) = server.conversation(session_id) else { return (not_found(), None) };
    let mut conversation = shared.lock().expect("conversation lock");
    if conversation.record.workspace_path != workspace {
        return (not_found(), None);
    }
    if let Some(previous) = conversation.settled.get(envelope.command_id) {
        return (replay(previous), None);
    }
    let revision = conversation.record.revision;
    let stale = stale_base(
        envelope.kind,
        (envelope.base_revision, envelope.base_log_epoch),
        (revision, &conversation.publisher.log.log_epoch),
        || server.stale_next_cas.swap(false, std::sync::atomic::Ordering::SeqCst),
    );
    if let Some(decision) = stale {
        return (decision.ack(envelope.command_id, revision), None);
    }
    let mut drive = false;
    let decision = execute(server, &mut conversation, &envelope, &mut drive);
    let reply = decision.ack(envelope.command_id, revision);
    if remembered(&decision) {
        conversation.settled.remember(envelope.command_id, reply.clone());
    }
    drop(conversation);
    (reply, drive.then_some(shared))
}

fn execute(
    server: &Server,
    conversation: &mut Conversation,
    envelope: &Envelope<'_>,
    drive: &mut bool,
) -> Decision {
    let payload = envelope.payload;
    match envelope.kind {
        "sendText" => send_text(server, conversation, envelope, drive),
        "stop" => stop(conversation, payload),
        "setAutoDrain" => match payload.get("autoDrain").and_then(Value::as_bool) {
            None => Decision::rejected("proto.invalidPayload", "autoDrain: expected boolean"),
            Some(auto_drain) => {
                conversation.auto_drain = auto_drain;
                conversation.pause_reason = (!auto_drain).then_some("manual");
                conversation.publish(&[Key::Queue]);
                *drive = auto_drain && !conversation.is_running() && !conversation.queue.is_empty();
                Decision::accepted(None)
            }
        },
        "deleteQueueItem" => edit_queue(conversation, payload, |queue, index| {
            queue.remove(index);
            Ok(())
        }),
        "editQueueItem" => {
            let text = payload.get("newText").and_then(Value::as_str).map(str::to_owned);
            edit_queue(conversation, payload, move |queue, index| {
                let text = text.ok_or("newText: expected string")?;
                queue[index]["text"] = json!(text);
                Ok(())
            })
        }
        "reorderQueueItem" => {
            let before = payload.get("beforeQueueItemId").cloned().unwrap_or(Value::Null);
            edit_queue(conversation, payload, move |queue, index| {
                let item = queue.remove(index);
                let position = match before.as_str() {
                    None => queue.len(),
                    Some(id) => queue
                        .iter()
                        .position(|other| other["queueItemId"] == id)
                        .ok_or("beforeQueueItemId: not in the queue")?,
                };
                queue.insert(position, item);
                Ok(())
            })
        }
        "switchModelConfig" => switch_model(server, conversation, payload),
        "switchCollaborationMode" => match payload.get("mode").and_then(Value::as_str) {
            Some(mode) if server.profile.accepts_mode(mode) => {
                let config = &mut conversation.record.config;
                if mode == "plan" {
                    config.plan_enabled = true;
                } else {
                    config.mode = mode.to_owned();
                    config.plan_enabled = false;
                }
                changed_config(server, conversation);
                Decision::accepted(None)
            }
            _ => Decision::rejected(
                "proto.invalidPayload",
                format!("mode: expected one of {}", server.profile.collaboration_modes.join("|")),
            ),
        },
        "setFollowupMode" => match payload.get("mode").and_then(Value::as_str) {
            Some(mode @ ("queue" | "guide")) => {
                conversation.record.config.followup_mode = mode.to_owned();
                changed_config(server, conversation);
                Decision::accepted(None)
            }
            _ => Decision::rejected("proto.invalidPayload", "mode: expected queue|guide"),
        },
        "resolveInteraction" => resolve_interaction(server, conversation, envelope),
        "forkAssistant" => fork(server, conversation, payload),
        "renameSession" => match payload.get("title").and_then(Value::as_str) {
            None => Decision::rejected("proto.invalidPayload", "title: expected string"),
            Some(title) => {
                conversation.record.title = title.to_owned();
                conversation.record.title_source = "custom".into();
                conversation.publish(&[Key::Meta]);
                server.persist(conversation);
                Decision::accepted(None)
            }
        },
        other => failed(
            "fault.command.notSimulated",
            format!("zcode-sim does not simulate the {other} command"),
        ),
    }
}

/// A new saved session holding the parent's rows up to the target (`v4/fork.rs`); the parent
/// is not changed.
fn fork(server: &Server, parent: &Conversation, payload: &Map<String, Value>) -> Decision {
    let cut = match crate::v4::fork::cut(parent.publisher.rows(), payload) {
        Ok(cut) => cut,
        Err(refused) => return refused,
    };
    let mut record = parent.record.clone();
    record.session_id = format!("sess_{}", uuid::Uuid::new_v4());
    record.created_at = now_ms();
    record.updated_at = record.created_at;
    record.permissions.clear();
    let rows = parent.publisher.rows()[..cut.rows].to_vec();
    let log = Log::new(format!("epoch-{}", uuid::Uuid::new_v4().simple()), rows);
    let child = Conversation::new(record, log, true, server.router.clone());
    server.persist(&child);
    let id = child.id().to_owned();
    server.insert(child);
    crate::v4::fork::accepted(&id)
}

fn changed_config(server: &Server, conversation: &mut Conversation) {
    conversation.publish(&[Key::Config]);
    server.persist(conversation);
}

fn edit_queue(
    conversation: &mut Conversation,
    payload: &Map<String, Value>,
    change: impl FnOnce(&mut Vec<Value>, usize) -> Result<(), &'static str>,
) -> Decision {
    let Some(id) = payload.get("queueItemId").and_then(Value::as_str) else {
        return Decision::rejected("proto.invalidPayload", "queueItemId: expected string");
    };
    let Some(index) = conversation.queue.iter().position(|item| item["queueItemId"] == id) else {
        return noop("proto.queueItemNotFound");
    };
    if let Err(message) = change(&mut conversation.queue, index) {
        return Decision::rejected("proto.invalidPayload", message);
    }
    conversation.publish(&[Key::Queue]);
    Decision::accepted(None)
}

fn switch_model(
    server: &Server,
    conversation: &mut Conversation,
    payload: &Map<String, Value>,
) -> Decision {
    let text = |key: &str| payload.get(key).and_then(Value::as_str);
    let (Some(provider), Some(model), Some(thought)) =
        (text("provider"), text("model"), text("thought"))
    else {
        return Decision::rejected(
            "proto.invalidPayload",
            "provider, model and thought must be strings",
        );
    };
    if conversation.is_running() {
        return Decision::rejected("sessionRunning", "the model cannot change while a turn runs");
    }
    let Some(found) =
        catalog::find_selected_model(&json!({"providerId": provider, "modelId": model}))
    else {
        return Decision::rejected("guard.modelNotFound", format!("no model {provider}/{model}"));
    };
    if !found.offers(thought) {
        return Decision::rejected(
            "guard.thoughtLevelUnavailable",
            format!("{model} does not offer {thought}"),
        );
    }
    let config = &mut conversation.record.config;
    config.provider_id = provider.to_owned();
    config.model_id = model.to_owned();
    config.thought = thought.to_owned();
    changed_config(server, conversation);
    Decision::accepted(None)
}

fn stop(conversation: &mut Conversation, payload: &Map<String, Value>) -> Decision {
    let expected = payload.get("expectedForegroundExecutionId").and_then(Value::as_str);
    match (&conversation.turn, expected) {
        (Some(turn), Some(expected)) if expected != turn.foreground_execution_id => {
            return noop("guard.stopTargetChanged");
        }
        // Nothing runs, or what was admitted has no execution id yet to name.
        (None, Some(_)) => return noop("guard.stopTargetChanged"),
        (None, None) if !conversation.admitted() => return Decision::accepted(None),
        _ => {}
    }
    conversation.interrupt(Interrupt::Stop);
    let mut keys = vec![Key::Control];
    if !conversation.queue.is_empty() {
        // A stop holds whatever is queued behind the turn.
        conversation.auto_drain = false;
        conversation.pause_reason = Some("stopped");
        keys.push(Key::Queue);
    }
    conversation.publish(&keys);
    Decision::accepted(None)
}

fn resolve_interaction(
    server: &Server,
    conversation: &mut Conversation,
    envelope: &Envelope<'_>,
) -> Decision {
    let payload = envelope.payload;
    let (Some(id), Some(answer)) =
        (payload.get("interactionId").and_then(Value::as_str), payload.get("answer"))
    else {
        return Decision::rejected("proto.invalidPayload", "interactionId and answer are required");
    };
    if !answer.is_object() {
        return Decision::rejected("proto.invalidPayload", "answer: expected object");
    }
    if let Some(action) = answer.get("action").and_then(Value::as_str)
        && !["accept", "decline", "cancel"].contains(&action)
    {
        return Decision::rejected(
            "proto.invalidPayload",
            "answer.action: expected accept|decline|cancel",
        );
    }
    let Some(waiting) = conversation.waiting.remove(id) else {
        let reason = if conversation.resolved.contains(id) {
            "proto.alreadyResolved"
        } else {
            "proto.interactionNotFound"
        };
        conversation.record.permission_answered(id, format!("ignored:{reason}"));
        // Saved at once: no turn end may come to save an answer that arrives after it.
        server.persist(conversation);
        return noop(reason);
    };
    conversation.resolved.insert(id.to_owned());
    let option_id = answer.get("optionId").and_then(Value::as_str);
    let mut resolved_by = json!({"clientId": envelope.client_id});
    if let (Expect::Permission { .. }, Some(option)) = (&waiting.expect, option_id) {
        resolved_by["optionId"] = json!(option);
    }
    // The turn may have just ended; the answer then has nobody left to reach.
    let _ = waiting.reply.send(answer.clone());
    Decision::accepted(Some(json!({"type": "resolveInteraction", "resolvedBy": resolved_by})))
}

fn send_text(
    server: &Server,
    conversation: &mut Conversation,
    envelope: &Envelope<'_>,
    drive: &mut bool,
) -> Decision {
    let payload = envelope.payload;
    let Some(text) = payload.get("text").and_then(Value::as_str) else {
        return Decision::rejected("proto.invalidPayload", "text: expected string");
    };
    let attachments = match payload.get("attachments") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(_) => {
            return Decision::rejected("proto.invalidPayload", "attachments: expected array");
        }
    };
    if text.trim().is_empty() && attachments.is_empty() {
        return Decision::rejected("proto.invalidPayload", "input must not be empty");
    }
    let session_id = conversation.record.session_id.clone();
    if let Err(message) =
        crate::services::channels::attachments::check_sent(&session_id, &attachments)
    {
        return Decision::rejected("proto.invalidPayload", message);
    }
    let requested = match payload.get("requestedDelivery") {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_str() {
            Some(delivery @ ("startNow" | "queue" | "guide")) => Some(delivery),
            _ => {
                return Decision::rejected(
                    "proto.invalidPayload",
                    "requestedDelivery: expected startNow|queue|guide",
                );
            }
        },
    };
    if server.is_signed_out() {
        return Decision::rejected(
            "fault.command.inputRejected",
            "No usable model provider is configured",
        );
    }
    if history_count(text).is_none()
        && let Err(message) = crate::common::scenario::select(
            text,
            std::path::Path::new(&conversation.record.workspace_path),
            server.options.scenario_file.as_deref(),
        )
    {
        return Decision::rejected("proto.invalidPayload", message);
    }
    if let Err(decision) = apply_submission(server, conversation, payload) {
        return decision;
    }
    let input = Input {
        command_id: envelope.command_id.to_owned(),
        client_id: envelope.client_id.to_owned(),
        text: text.to_owned(),
        attachments,
    };
    let accepted = |delivery: &str| {
        Decision::accepted(Some(
            json!({"type": "inputAccepted", "delivery": delivery, "inputId": envelope.command_id}),
        ))
    };
    conversation.admission_seq += 1;
    if !conversation.persisted {
        // A deferred draft is saved (and listed) from its first input on.
        conversation.persisted = true;
        server.persist(conversation);
    }
    // Between two turns of a draining queue (or before a preempting input runs) the session is
    // still busy: a new input must not overtake what is about to run.
    let draining = conversation.auto_drain && !conversation.queue.is_empty();
    if conversation.is_running() || conversation.admitted() || draining {
        if requested == Some("startNow") {
            // What runs, or was admitted ahead of it, gives way; a queue about to drain does not
            // run ahead of an input that starts now.
            let ahead = conversation.is_running() || conversation.admitted();
            conversation.next_inputs.push_back(input);
            if ahead {
                conversation.interrupt(Interrupt::Preempt);
            }
            return accepted("startNow");
        }
        let routing_guide = conversation.record.config.followup_mode == "guide";
        let guide = requested == Some("guide") || (requested.is_none() && routing_guide);
        let (admitted, fallback) = if guide && requested.is_none() && !input.attachments.is_empty()
        {
            ("queue", Some("guide.attachmentsUnsupported"))
        } else if guide {
            ("guide", None)
        } else {
            ("queue", None)
        };
        let requested = requested.unwrap_or(if routing_guide { "guide" } else { "queue" });
        let item = queue_item(conversation, &input, payload, requested, admitted, fallback);
        conversation.queue.push(item);
        conversation.publish(&[Key::Queue]);
        // Busy admissions are queued in Core; the ACK says so even for guide inputs.
        return accepted("queue");
    }
    if conversation.is_held() {
        match payload.get("heldQueueDisposition").and_then(Value::as_str) {
            None => {
                return Decision::rejected(
                    "guard.heldQueueDispositionRequired",
                    "the queue is held: send with heldQueueDisposition",
                );
            }
            Some(disposition) => {
                if let Some(expected) =
                    payload.get("expectedHeldQueueItemIds").and_then(Value::as_array)
                {
                    let current: Vec<&Value> =
                        conversation.queue.iter().map(|item| &item["queueItemId"]).collect();
                    if expected.iter().collect::<Vec<_>>() != current {
                        return Decision::rejected(
                            "guard.heldQueueChanged",
                            "the held queue changed",
                        );
                    }
                }
                if disposition == "clearQueueAndSend" {
                    conversation.queue.clear();
                    conversation.publish(&[Key::Queue]);
                }
            }
        }
    }
    conversation.next_inputs.push_back(input);
    *drive = true;
    accepted("startNow")
}

/// `modelSelection`, `mode` and `planEnabled` of a submission become the session's.
// A short-lived refusal; it is larger only where the workspace build orders JSON maps.
#[allow(clippy::result_large_err)]
fn apply_submission(
    server: &Server,
    conversation: &mut Conversation,
    payload: &Map<String, Value>,
) -> Result<(), Decision> {
    let mut config = conversation.record.config.clone();
    if let Some(selection) = payload.get("modelSelection").filter(|value| !value.is_null()) {
        let model = catalog::find_selected_model(selection).ok_or_else(|| {
            Decision::rejected("guard.modelNotFound", format!("no model {selection}"))
        })?;
        let level = selection
            .pointer("/options/reasoningLevel")
            .and_then(Value::as_str)
            .unwrap_or(model.default_level());
        if !model.offers(level) {
            return Err(Decision::rejected(
                "guard.thoughtLevelUnavailable",
                format!("{} does not offer {level}", model.model_id()),
            ));
        }
        config.provider_id = model.provider_id().into();
        config.model_id = model.model_id().into();
        config.thought = level.into();
    }
    if let Some(mode) = payload.get("mode").and_then(Value::as_str) {
        if mode == "plan" || !server.profile.accepts_mode(mode) {
            return Err(Decision::rejected(
                "proto.invalidPayload",
                format!("mode: unknown submission mode {mode:?}"),
            ));
        }
        config.mode = mode.into();
    }
    if let Some(plan) = payload.get("planEnabled").and_then(Value::as_bool) {
        config.plan_enabled = plan;
    }
    if config != conversation.record.config {
        conversation.record.config = config;
        changed_config(server, conversation);
    }
    Ok(())
}

fn queue_item(
    conversation: &Conversation,
    input: &Input,
    payload: &Map<String, Value>,
    requested: &str,
    admitted: &str,
    fallback: Option<&str>,
) -> Value {
    let mut delivery = json!({"requested": requested, "admitted": admitted});
    if let Some(reason) = fallback {
        delivery["fallbackReasonCode"] = json!(reason);
    }
    let config = &conversation.record.config;
    let mut item = json!({
        "sourceCommandId": input.command_id,
        "queueItemId": format!("queue_{}", input.command_id),
        "clientId": input.client_id,
        "kind": "sendText",
        "text": input.text,
        "attachments": input.attachments,
        "modelSelection": config.selection(),
        "mode": config.mode,
        "planEnabled": config.plan_enabled,
        "delivery": delivery,
        "order": {"admissionSeq": conversation.admission_seq},
        "steer": {"state": if admitted == "guide" { "submitting" } else { "notRequested" }},
        "dispatch": {"state": "queued"},
        "admittedAt": now_ms(),
    });
    if let Some(list) = payload.get("toolDisallowlist").filter(|list| list.is_array()) {
        item["toolDisallowlist"] = list.clone();
    }
    item
}

/// The queue item as the input a promoted turn runs.
pub fn input_of(item: &Value) -> Input {
    Input {
        command_id: item["sourceCommandId"].as_str().unwrap_or_default().to_owned(),
        client_id: item["clientId"].as_str().unwrap_or_default().to_owned(),
        text: item["text"].as_str().unwrap_or_default().to_owned(),
        attachments: item["attachments"].as_array().cloned().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(kind: &str, extra: Value) -> Value {
        let mut envelope = json!({"commandId": "c1", "clientId": "client", "sessionId": "sess_1",
                                  "type": kind, "payload": {}, "issuedAt": 1});
        if let (Some(target), Some(extra)) = (envelope.as_object_mut(), extra.as_object()) {
            target.extend(extra.clone());
        }
        envelope
    }

    #[test]
    fn parses_envelopes_strictly() {
        assert!(parse(&envelope("stop", json!({}))).is_ok());
        assert!(parse(&envelope("dance", json!({}))).unwrap_err().contains("unknown command type"));
        assert!(parse(&envelope("setAutoDrain", json!({}))).unwrap_err().contains("baseRevision"));
        assert!(parse(&envelope("setAutoDrain", json!({"baseRevision": 3}))).is_ok());
        assert!(parse(&envelope("retryTurn", json!({"baseRevision": 3}))).is_err());
        assert!(parse(&json!({"commandId": "c"})).is_err());
        assert!(parse(&envelope("stop", json!({"issuedAt": "now"}))).is_err());
    }

    #[test]
    fn stale_and_rejected_decisions_are_decided_again() {
        assert!(remembered(&noop("proto.alreadyResolved")));
        assert!(remembered(&failed("fault.command.notSimulated", "x")));
        assert!(!remembered(&Decision::refused("stale", "proto.staleRevision", None)));
        assert!(!remembered(&Decision::rejected("proto.invalidPayload", "x")));
    }
}
