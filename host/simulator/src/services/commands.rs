//! `sendConversationCommandV4`: the Services Server's side of the shared command inbox
//! (`v4::inbox`, which checks each payload against `command.ts`) and the commands it simulates.
//! A session of another workspace is no session of this one.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Map, Value, json};

use super::conversation::{Conversation, Expect, Input, Interrupt, Key};
use crate::common::catalog;
use crate::common::clock::now_ms;
use crate::services::server::{Server, Shared};
use crate::services::turn::history_count;
use crate::v4::commands::{Decision, resolved_by};
use crate::v4::inbox::{Envelope, Inbox, Settings, decide};
use crate::v4::publisher::Log;

fn invalid(message: impl Into<String>) -> Decision {
    Decision::rejected("proto.invalidPayload", message)
}

/// Handles one envelope; returns the ACK and, when turns must run, the session to drive.
pub fn handle(server: &Arc<Server>, workspace: &str, raw: &Value) -> (Value, Option<Shared>) {
    let envelope = match Envelope::parse(raw, server.profile.collaboration_modes) {
        Ok(envelope) => envelope,
        Err(refused) => return (refused, None),
    };
    let shared = envelope.session_id.and_then(|id| server.conversation(id));
    let mut conversation = shared.as_ref().map(|shared| shared.lock().expect("conversation lock"));
    let mut inbox = Services {
        server,
        conversation: conversation
            .as_deref_mut()
            .filter(|conversation| conversation.record.workspace_path == workspace),
        drive: false,
    };
    let ack = decide(&mut inbox, &envelope);
    let drive = inbox.drive;
    drop(conversation);
    (ack, shared.filter(|_| drive))
}

/// One command's view of the server: the session it names (if this workspace has it) and
/// whether a turn must be driven afterwards.
struct Services<'a> {
    server: &'a Server,
    conversation: Option<&'a mut Conversation>,
    drive: bool,
}

impl Inbox for Services<'_> {
    fn settled(&mut self, envelope: &Envelope<'_>) -> Option<Value> {
        self.conversation.as_deref_mut()?.settled.lookup(envelope.command_id)
    }

    fn session(&self, _: &Envelope<'_>) -> Option<(u64, String)> {
        let conversation = self.conversation.as_ref()?;
        Some((conversation.record.revision, conversation.publisher.log.log_epoch.clone()))
    }

    fn raced(&self) -> bool {
        self.server.stale_next_cas.swap(false, Ordering::SeqCst)
    }

    fn settings(&self, _: &Envelope<'_>) -> Settings {
        let config = &self.conversation.as_ref().expect("decided on a session").record.config;
        let (mode, plan_enabled) = (config.mode.clone(), config.plan_enabled);
        Settings { selection: Some(config.selection()), mode, plan_enabled }
    }

    fn execute(&mut self, envelope: &Envelope<'_>) -> Decision {
        let conversation = self.conversation.as_deref_mut().expect("decided on a session");
        execute(self.server, conversation, envelope, &mut self.drive)
    }

    fn remember(&mut self, envelope: &Envelope<'_>, ack: &Value) {
        if let Some(conversation) = self.conversation.as_deref_mut() {
            conversation.settled.remember(envelope.command_id, ack.clone());
        }
    }
}

fn execute(
    server: &Server,
    conversation: &mut Conversation,
    envelope: &Envelope<'_>,
    drive: &mut bool,
) -> Decision {
    let payload = envelope.payload;
    let text = |key: &str| envelope.text(key);
    match envelope.kind {
        "sendText" => send_text(server, conversation, envelope, drive),
        "stop" => stop(conversation, payload["expectedForegroundExecutionId"].as_str()),
        "setAutoDrain" => {
            let auto_drain = payload["autoDrain"] == true;
            conversation.auto_drain = auto_drain;
            conversation.pause_reason = (!auto_drain).then_some("manual");
            conversation.publish(&[Key::Queue]);
            *drive = auto_drain && !conversation.is_running() && !conversation.queue.is_empty();
            Decision::accepted(None)
        }
        "deleteQueueItem" | "editQueueItem" | "reorderQueueItem" => {
            edit_queue(conversation, envelope)
        }
        "switchModelConfig" => {
            switch_model(server, conversation, text("provider"), text("model"), text("thought"))
        }
        "switchCollaborationMode" => {
            let config = &mut conversation.record.config;
            if text("mode") == "plan" {
                config.plan_enabled = true;
            } else {
                config.mode = text("mode").to_owned();
                config.plan_enabled = false;
            }
            changed_config(server, conversation);
            Decision::accepted(None)
        }
        "setFollowupMode" => {
            conversation.record.config.followup_mode = text("mode").to_owned();
            changed_config(server, conversation);
            Decision::accepted(None)
        }
        "resolveInteraction" => resolve_interaction(server, conversation, envelope),
        "forkAssistant" => fork(server, conversation, envelope.members()),
        "renameSession" => {
            conversation.record.title = text("title").to_owned();
            conversation.record.title_source = "custom".into();
            conversation.publish(&[Key::Meta]);
            server.persist(conversation);
            Decision::accepted(None)
        }
        other => Decision::not_implemented(other),
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

/// Deletes, edits or moves the queue item the payload names. An item no longer queued lost a
/// race with a drain: a delete is a `noop` then, the others change nothing (3.15.1
/// `commands/handlers/queue.ts`).
fn edit_queue(conversation: &mut Conversation, envelope: &Envelope<'_>) -> Decision {
    let id = envelope.text("queueItemId");
    let queue = &mut conversation.queue;
    let Some(index) = queue.iter().position(|item| item["queueItemId"] == id) else {
        return match envelope.kind {
            "deleteQueueItem" => Decision::noop("queue.itemMissing"),
            _ => Decision::accepted(None),
        };
    };
    match envelope.kind {
        "deleteQueueItem" => drop(queue.remove(index)),
        "editQueueItem" => queue[index]["text"] = json!(envelope.text("newText")),
        _ => {
            let item = queue.remove(index);
            // `null` moves the item to the end; an unknown `before` leaves it where it was, as
            // a missing item does.
            let position = match envelope.payload["beforeQueueItemId"].as_str() {
                None => Some(queue.len()),
                Some(before) => queue.iter().position(|other| other["queueItemId"] == before),
            };
            queue.insert(position.unwrap_or(index), item);
        }
    }
    conversation.publish(&[Key::Queue]);
    Decision::accepted(None)
}

fn switch_model(
    server: &Server,
    conversation: &mut Conversation,
    provider: &str,
    model: &str,
    thought: &str,
) -> Decision {
    // A running turn does not hold a switch back (3.15.1 `handlers/model-config.ts`).
    let Some(found) =
        catalog::find_selected_model(&json!({"providerId": provider, "modelId": model}))
    else {
        return Decision::failed(format!("Model {provider}/{model} is not available"));
    };
    if !found.offers(thought) {
        return Decision::failed(format!("Reasoning level {thought} is not available"));
    }
    let config = &mut conversation.record.config;
    config.provider_id = provider.to_owned();
    config.model_id = model.to_owned();
    config.thought = thought.to_owned();
    changed_config(server, conversation);
    Decision::accepted(None)
}

fn stop(conversation: &mut Conversation, expected: Option<&str>) -> Decision {
    match (&conversation.turn, expected) {
        (Some(turn), Some(expected)) if expected != turn.foreground_execution_id => {
            return Decision::noop("guard.stopTargetChanged");
        }
        // Nothing runs, or what was admitted has no execution id yet to name.
        (None, Some(_)) => return Decision::noop("guard.stopTargetChanged"),
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
    let (id, answer) = (envelope.text("interactionId"), &envelope.payload["answer"]);
    let Some(waiting) = conversation.waiting.remove(id) else {
        // Late or unknown, the answer changes nothing (`command.ts`: first answer wins).
        conversation.record.permission_answered(id, "ignored:proto.alreadyResolved");
        // Saved at once: no turn end may come to save an answer that arrives after it.
        server.persist(conversation);
        return Decision::noop("proto.alreadyResolved");
    };
    let option = answer.get("optionId").and_then(Value::as_str);
    let permission = matches!(waiting.expect, Expect::Permission { .. });
    // The turn may have just ended; the answer then has nobody left to reach.
    let _ = waiting.reply.send(answer.clone());
    resolved_by(envelope.client_id, option.filter(|_| permission))
}

fn send_text(
    server: &Server,
    conversation: &mut Conversation,
    envelope: &Envelope<'_>,
    drive: &mut bool,
) -> Decision {
    let payload = envelope.members();
    let text = envelope.text("text");
    let attachments = payload.get("attachments").and_then(Value::as_array).cloned();
    let attachments = attachments.unwrap_or_default();
    let session_id = conversation.record.session_id.clone();
    if let Err(message) =
        crate::services::channels::attachments::check_sent(&session_id, &attachments)
    {
        return invalid(message);
    }
    let requested = payload.get("requestedDelivery").and_then(Value::as_str);
    // A handler's refusal settles as `failed` with its own code (3.15.1 `v4-gateway.ts`).
    let refused = |reason, message: &str| Decision::refused("failed", reason, Some(message.into()));
    if server.is_signed_out() {
        return refused("fault.command.inputRejected", "No usable model provider is configured");
    }
    if history_count(text).is_none()
        && let Err(message) = crate::common::scenario::select(
            text,
            std::path::Path::new(&conversation.record.workspace_path),
            server.options.scenario_file.as_deref(),
        )
    {
        return invalid(message);
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
                // 3.15.1 `handlers/session-flow.ts`, `applyHeldQueueDisposition`.
                return refused(
                    "heldQueueDispositionRequired",
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
                        return refused(
                            "guard.heldQueueConfirmationStale",
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
        let model = catalog::find_selected_model(selection)
            .ok_or_else(|| Decision::failed(format!("Model {selection} is not available")))?;
        let level = selection
            .pointer("/options/reasoningLevel")
            .and_then(Value::as_str)
            .unwrap_or(model.default_level());
        if !model.offers(level) {
            return Err(Decision::failed(format!("Reasoning level {level} is not available")));
        }
        config.provider_id = model.provider_id().into();
        config.model_id = model.model_id().into();
        config.thought = level.into();
    }
    if let Some(mode) = payload.get("mode").and_then(Value::as_str) {
        // `plan` is a submission mode too (`submissionModeSchema`): the session's plan flag.
        if mode == "plan" {
            config.plan_enabled = true;
        } else {
            config.mode = mode.into();
        }
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
