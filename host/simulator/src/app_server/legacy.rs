//! The legacy method family (`session/*`, `provider/*`, `workspace/*`, `runtime/*`), after the
//! 3.15.1 `zcode-protocol/server-operations.ts`. Params are validated strictly (unknown keys
//! are `-32602`); a session method on a session without a resident runtime is `-32004`.

use std::sync::Arc;

use serde_json::{Value, json};

use super::catalog;
use super::fault::AppFault;
use super::messages;
use super::schemas;
use super::server::{Reply, Server, not_simulated};
use super::session::{Origin, Resident};
use super::snapshot::{self, Models};
use super::store::{SessionRecord, Usage};
use super::wire::{self, BUSY, INVALID_PARAMS, ProtocolError, REVISION_MISMATCH, parse_params};
use crate::common::attachments;
use crate::common::clock::now_ms;
use crate::common::turn::big_history_reply;

/// Methods of the real Agent's table the simulator answers with "not simulated" rather than
/// `Method not found` (3.15.1 `zcodeProtocolMethods`).
const KNOWN_UNSIMULATED: &[&str] = &[
    "session/updateRuntimeModelConfig",
    "session/debug",
    "workspace/readState",
    "workspace/hooks/trustGrant",
    "workspace/updateModelIoPreferences",
    "workspace/upsertModelProvider",
    "workspace/removeModelProvider",
    "workspace/setDefaultModel",
    "workspace/setDefaultThoughtLevel",
    "workspace/setDefaultMode",
    "workspace/generateText",
    "workspace/cancelGenerateText",
    "workspace/updateOffPeakToolPolicy",
    "workspace/updateDynamicWorkflowPolicy",
    "provider/testModelConnectivity",
    "subagents/readRuntimeConfig",
    "skills/referenceCatalog",
    "mcp/list",
    "mcp/readResource",
    "offPeak/create",
    "offPeak/list",
    "usage/stats",
    "topic/resource/read",
    "topic/resource/cancel",
    "bot/channel/reply",
];

/// Families of the real table, matched by prefix.
const KNOWN_UNSIMULATED_PREFIXES: &[&str] = &["plugins/", "automation/", "workflows/", "mcp/ui"];

pub async fn dispatch(
    server: &Arc<Server>,
    method: &str,
    params: Option<Value>,
) -> Result<Reply, ProtocolError> {
    let params = match schemas::legacy_params(method, server.profile) {
        Some(schema) => parse_params(&schema, params.as_ref())?,
        None => Value::Null,
    };
    match method {
        "session/create" => create(server, params).await,
        "session/resume" => resume(server, params).await,
        "session/list" => list(server, params),
        "session/read" => read(server, params),
        "session/messages" => session_messages(server, params),
        "session/events" => events(server, params),
        "session/subscribe" => subscribe(server, params),
        "session/send" => send(server, params),
        "session/stop" => stop(server, params),
        "session/close" => close(server, params),
        "session/setMode" => set_mode(server, params),
        "session/setModel" => set_model(server, params),
        "session/setThoughtLevel" => set_thought_level(server, params),
        "session/usage" => usage(server, params),
        "session/subagents" => subagents(server, params),
        "session/fork" => fork(server, params),
        "session/compact" => compact(server, params),
        "session/goal" => goal(server, params),
        "session/cancelBackgroundTask" => cancel_background_task(server, params),
        "provider/updateAccountConfig" => update_account_config(server, params),
        "runtime/capabilities" => Ok(json!({"independentPlanState": true}).into()),
        "workspace/readPresentation" => read_presentation(params),
        "workspace/updateInteractionPreferences" => update_interaction_preferences(server, params),
        // A live capture answered an empty list (`tests/recorded/app-server`).
        "process/childProcesses" => Ok(json!({"processes": []}).into()),
        known
            if KNOWN_UNSIMULATED.contains(&known)
                || KNOWN_UNSIMULATED_PREFIXES.iter().any(|prefix| known.starts_with(prefix)) =>
        {
            Err(not_simulated(known))
        }
        // `workspace/updateProviderRegistry` left with 3.12.3; the rest never existed.
        other => Err(ProtocolError::method_not_found(other)),
    }
}

fn text<'a>(params: &'a Value, key: &str) -> Option<&'a str> {
    params.get(key).and_then(Value::as_str)
}

fn session_id(params: &Value) -> String {
    text(params, "sessionId").unwrap_or_default().trim().to_owned()
}

/// `-32009` when the caller's `expectedRevision` is not the session's.
fn check_revision(resident: &Resident, params: &Value) -> Result<(), ProtocolError> {
    match params.get("expectedRevision").and_then(Value::as_u64) {
        Some(expected) if expected != resident.revision => {
            Err(ProtocolError::new(REVISION_MISMATCH, "Session state revision mismatch").with_data(
                json!({"actualRevision": resident.revision, "expectedRevision": expected}),
            ))
        }
        _ => Ok(()),
    }
}

// ── lifecycle ──

async fn create(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let requested_id = text(&params, "sessionId").map(str::trim).map(str::to_owned);
    let session_id = requested_id.unwrap_or_else(|| messages::new_id("sess"));
    let record = {
        let state = server.state();
        if state.sessions.contains_key(&session_id)
            || state.store.load(&session_id).ok().flatten().is_some()
        {
            return Err(ProtocolError::business(
                format!("Session already exists: {session_id}"),
                "SESSION_EXISTS",
            ));
        }
        let model = match params.get("model") {
            Some(selection) => Some(
                catalog::resolve_selection(&state.entitlements, selection, false)
                    .map_err(|message| ProtocolError::business(message, "MODEL_UNAVAILABLE"))?
                    .1,
            ),
            None => catalog::default_selection(&state.entitlements),
        };
        let thought_level = params["thoughtLevel"].as_str().map(str::to_owned).or_else(|| {
            model.as_ref().and_then(|m| m["options"]["reasoningLevel"].as_str().map(str::to_owned))
        });
        let now = now_ms();
        SessionRecord {
            session_id: session_id.clone(),
            workspace: params["workspace"].clone(),
            title: String::new(),
            title_source: None,
            trace_id: messages::new_id("trace"),
            created_at: now,
            updated_at: now,
            mode: text(&params, "mode").unwrap_or("build").to_owned(),
            model,
            thought_level,
            messages: Vec::new(),
            todos: Vec::new(),
            usage: Usage::default(),
            turn_count: 0,
            context_used: 0,
            parent_session_id: text(&params, "parentSessionId").map(str::to_owned),
            checkpoint_id: None,
        }
    };
    let deferred = text(&params, "persistence") == Some("deferred");
    server.materialize(record, false, deferred).await?;
    // A new session's event log is empty: its snapshot says `runtime.eventSeq: 0`, a subscribe
    // answers `{eventSeq: 0, events: []}` and the first turn's first event is `seq` 1 ("ZCode
    // app-server Session Protocol" probe log, CLI 0.16.x, §2.4, §5.2, §11.2–§11.4, issue 25
    // [A]; the live record [B], Q1: "new session eventSeq=0"). So no `session.created` is
    // numbered here, though the schema has the type.
    let state = server.state();
    Ok(state.snapshot(&session_id, Models::All, None)?.into())
}

async fn resume(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let session_id = session_id(&params);
    let record = {
        let state = server.state();
        if state.sessions.contains_key(&session_id) {
            // Already live here: resuming again is a no-op.
            return Ok(state.snapshot(&session_id, Models::All, None)?.into());
        }
        state
            .store
            .load(&session_id)
            .map_err(|message| ProtocolError::business(message, "STORAGE_ERROR"))?
            .ok_or_else(|| {
                ProtocolError::new(
                    wire::SESSION_UNAVAILABLE,
                    format!("Session not found: {session_id}"),
                )
            })?
    };
    let mut record = record;
    if let Some(fault) = server.faults.take_one("session/resume", AppFault::BigHistory) {
        seed_history(&mut record, fault.value * 1024 * 1024);
    }
    let message_count = record.messages.len();
    let part_count = messages::part_count(&record.messages);
    let directory = record.workspace_path().to_owned();
    server.materialize(record, true, false).await?;
    let mut state = server.state();
    if let Some(level) = text(&params, "thoughtLevel") {
        state.resident(&session_id)?.record.thought_level = Some(level.to_owned());
    }
    state.event(
        &session_id,
        None,
        "session.resumed",
        json!({"directory": directory, "interruptedToolCount": 0, "messageCount": message_count,
               "partCount": part_count}),
    );
    Ok(state.snapshot(&session_id, Models::All, None)?.into())
}

fn list(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let state = server.state();
    let stored =
        state.store.list().map_err(|message| ProtocolError::business(message, "STORAGE_ERROR"))?;
    let explicit: Option<Vec<&str>> =
        params["sessionIds"].as_array().map(|ids| ids.iter().filter_map(Value::as_str).collect());
    let workspace = params.get("workspace").map(|workspace| {
        workspace["workspaceIdentity"]
            .as_str()
            .or_else(|| workspace["workspacePath"].as_str())
            .unwrap_or_default()
            .to_owned()
    });
    let limit = params["limit"].as_u64().unwrap_or(50) as usize;
    let sessions: Vec<Value> = stored
        .iter()
        .filter(|record| {
            explicit.as_ref().is_none_or(|ids| ids.contains(&record.session_id.as_str()))
        })
        .filter(|record| {
            workspace.as_deref().is_none_or(|identity| record.workspace_identity() == identity)
        })
        .take(limit)
        .map(|record| {
            let live = state.sessions.get(&record.session_id);
            let status = if live.is_some_and(Resident::is_running) { "running" } else { "idle" };
            snapshot::session_info(live.map_or(record, |resident| &resident.record), status)
        })
        .collect();
    Ok(json!({"sessions": sessions}).into())
}

fn read(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let state = server.state();
    let limit = params["messageLimit"].as_u64().map(|limit| limit as usize);
    Ok(state.snapshot(&session_id(&params), Models::Current, limit)?.into())
}

fn session_messages(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let mut state = server.state();
    let resident = state.resident(&session_id(&params))?;
    let all = &resident.record.messages;
    // As a live record measured (Desktop 3.12.3 / CLI 0.16.5, 2026-09-14, the paging matrix):
    // the messages after a cursor, all of them when it is unknown (no error), and of those the
    // newest `limit`, oldest first.
    let start = text(&params, "afterMessageId")
        .and_then(|after| all.iter().position(|message| message["info"]["messageId"] == after))
        .map_or(0, |index| index + 1);
    let suffix = &all[start..];
    let limit = params["limit"].as_u64().map_or(usize::MAX, |limit| limit as usize);
    let page: Vec<&Value> = suffix[suffix.len().saturating_sub(limit)..].iter().collect();
    Ok(json!({"messages": page}).into())
}

fn events(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let mut state = server.state();
    let resident = state.resident(&session_id(&params))?;
    let after = params["afterSeq"].as_u64().unwrap_or(0);
    let limit = params["limit"].as_u64().map_or(usize::MAX, |limit| limit as usize);
    let events: Vec<Value> = resident.events_after(after).into_iter().take(limit).collect();
    Ok(json!({"events": events, "eventSeq": resident.seq}).into())
}

fn subscribe(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let session_id = session_id(&params);
    let mut state = server.state();
    let resident = state.resident(&session_id)?;
    resident.delivery_kind = params["deliveryKind"].as_str().map(str::to_owned);
    // The answer carries the events from the cursor on, oldest first, and the session's id:
    // `{eventSeq, events, sessionId}` ("ZCode app-server Session Protocol" probe log, CLI
    // 0.16.x, §5.2; the live record of Desktop 3.12.3, Q1).
    let events = match params["afterSeq"].as_u64() {
        Some(seq) => resident.events_after(seq),
        None => Vec::new(),
    };
    let mut result = json!({"eventSeq": resident.seq, "events": events, "sessionId": session_id});
    if params["includeSnapshot"] == true {
        result["snapshot"] = state.snapshot(&session_id, Models::Current, None)?;
    }
    Ok(result.into())
}

/// Puts `bytes` of finished exchanges (a user message "History message k", an assistant reply
/// of about 8 KiB, the size of a real message: 48 messages were 414 KB in the live record [B])
/// before the session's own messages (the `big-history` fault).
fn seed_history(record: &mut SessionRecord, bytes: u64) {
    let workspace = record.workspace_path().to_owned();
    let mut seeded = Vec::new();
    let mut size = 0u64;
    let mut k = 0u64;
    while size < bytes {
        k += 1;
        let user_id = messages::new_id("msg");
        let user = messages::user_message(
            &record.session_id,
            &user_id,
            &format!("History message {k}"),
            None,
        );
        let reply_id = messages::new_id("msg");
        let text = big_history_reply(k);
        let info = messages::AssistantInfo {
            session_id: &record.session_id,
            message_id: &reply_id,
            parent_message_id: &user_id,
            model: None,
            workspace_path: &workspace,
            created: now_ms(),
            tokens: messages::Tokens::default(),
            finish: "stop",
        };
        let part =
            messages::part(&record.session_id, &reply_id, json!({"type": "text", "text": text}));
        let reply = messages::assistant_message(&info, vec![part]);
        size += (user.to_string().len() + reply.to_string().len()) as u64;
        seeded.push(user);
        seeded.push(reply);
    }
    seeded.append(&mut record.messages);
    record.messages = seeded;
}

/// What `session/send` answered, word for word, when the session's model was gone (the record
/// cited at [`AppFault::ModelGone`]): "the model this task used is no longer available; pick an
/// available one from the current model list and continue".
pub const MODEL_GONE: &str =
    "历史任务使用的模型已不可用，请从当前模型列表中选择一个可用模型后继续。";

fn send(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let refinements = schemas::session_send_refinements(&params);
    if !refinements.is_empty() {
        return Err(ProtocolError::invalid_params(&refinements));
    }
    // Every attachment must have arrived whole (bytes, MIME type, name), or the send fails.
    let received = attachments::receive(&params)
        .map_err(|message| ProtocolError::new(INVALID_PARAMS, message))?;
    let session_id = session_id(&params);
    let mut state = server.state();
    let busy_fault = server.faults.take_one("session/send", AppFault::Busy).is_some();
    let model_gone = server.faults.take_one("session/send", AppFault::ModelGone).is_some();
    let selection = match params.get("modelSelection") {
        Some(selection) => Some(
            catalog::resolve_selection(&state.entitlements, selection, false)
                .map_err(|message| ProtocolError::business(message, "MODEL_UNAVAILABLE"))?
                .1,
        ),
        None => None,
    };
    let resident = state.resident(&session_id)?;
    if resident.record.parent_session_id.is_some()
        && resident.record.session_id.starts_with("sess_subagent_")
    {
        return Err(ProtocolError::new(BUSY, "Subagent sessions are read-only"));
    }
    if busy_fault || resident.is_running() {
        return Err(ProtocolError::new(BUSY, "A prompt is already running for this session"));
    }
    if model_gone {
        // A business refusal as a plain string *result*, not an error frame: seen when a new
        // process resumed an old session whose stored model no longer resolves ("ZCode
        // Protocol v1 (app-server stdio): live verification record", Desktop 3.12.3 / CLI
        // 0.16.5, 2026-09, "边界与坑"). No turn starts.
        return Ok(json!(MODEL_GONE).into());
    }
    check_revision(resident, &params)?;
    if let Some(selection) = selection {
        resident.record.model = Some(selection);
    }
    let input_id =
        text(&params, "inputId").map_or_else(|| messages::new_id("input"), str::to_owned);
    let content = text(&params, "content").unwrap_or_default().to_owned();
    let start = resident.begin_turn(&content, &input_id, Origin::Legacy, None);
    if let Some(parts) = resident.record.messages.last_mut().and_then(|m| m["parts"].as_array_mut())
    {
        for attachment in &received {
            eprintln!("zcode-sim: session/send attachment arrived whole: {}", attachment.summary);
            parts.push(attachment.part.clone());
        }
    }
    let revision = resident.revision;
    state.persist(&session_id);
    state.state_updated(&session_id, "prompt_started", json!({"status": "running"}));
    state.v4_patch(&session_id, &["control", "availability", "inputRouting"]);
    Ok(Reply {
        result: json!({"accepted": true, "sessionId": session_id, "stateRevision": revision}),
        start: Some(start),
        ..Reply::default()
    })
}

fn stop(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let mut state = server.state();
    let resident = state.resident(&session_id(&params))?;
    // Only a prompt started by `session/send` holds the lock this call aborts; a V4-started
    // run is stopped by `v4/command stop` alone.
    if let Some(turn) = &resident.turn
        && turn.origin == Origin::Legacy
    {
        turn.stop.send_replace(true);
    }
    Ok(json!({}).into())
}

fn close(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let session_id = session_id(&params);
    let deletes = server.profile.close_deletes_history()
        || server.faults.take_one("session/close", AppFault::CloseDeletes).is_some();
    let mut state = server.state();
    let resident = state.resident(&session_id)?;
    if let Some(expected) = text(&params, "expectedPersistence") {
        let actual = if resident.deferred { "deferred" } else { "immediate" };
        if expected != actual {
            return Ok(json!({"closed": false}).into());
        }
    }
    if let Some(turn) = &resident.turn {
        turn.stop.send_replace(true);
    }
    state.event(&session_id, None, "session.closed", json!({"reason": "closed"}));
    state.remove_resident(&session_id);
    if deletes && let Err(message) = state.store.delete(&session_id) {
        eprintln!("zcode-sim: {message}");
    }
    Ok(json!({"closed": true}).into())
}

// ── settings ──

fn set_mode(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let session_id = session_id(&params);
    let mut state = server.state();
    let resident = state.resident(&session_id)?;
    check_revision(resident, &params)?;
    resident.record.mode = text(&params, "mode").unwrap_or("build").to_owned();
    state.announce_settings(&session_id, "mode_changed", &["mode"])?;
    Ok(state.snapshot(&session_id, Models::Current, Some(0))?.into())
}

fn set_model(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let session_id = session_id(&params);
    let mut state = server.state();
    let (_, selection) = catalog::resolve_selection(&state.entitlements, &params["model"], true)
        .map_err(|message| ProtocolError::business(message, "MODEL_UNAVAILABLE"))?;
    let resident = state.resident(&session_id)?;
    check_revision(resident, &params)?;
    resident.record.thought_level =
        selection["options"]["reasoningLevel"].as_str().map(str::to_owned);
    resident.record.model = Some(selection);
    state.announce_settings(&session_id, "model_changed", &["model", "thoughtLevel"])?;
    Ok(state.snapshot(&session_id, Models::Current, Some(0))?.into())
}

fn set_thought_level(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let session_id = session_id(&params);
    let mut state = server.state();
    let resident = state.resident(&session_id)?;
    check_revision(resident, &params)?;
    let Some(model) = resident.current_model() else {
        return Err(ProtocolError::business(
            "Select a model before choosing reasoning effort",
            "INVALID_STATE_TRANSITION",
        ));
    };
    let level = text(&params, "thoughtLevel").or(model.default_level);
    if let Some(level) = level
        && !model.levels.contains(&level)
    {
        return Err(ProtocolError::business(
            catalog::unsupported_level(model, level),
            "INVALID_THOUGHT_LEVEL",
        ));
    }
    resident.record.thought_level = level.map(str::to_owned);
    resident.record.model = Some(catalog::selection(model, level));
    state.announce_settings(&session_id, "thought_level_changed", &["thoughtLevel", "model"])?;
    Ok(state.snapshot(&session_id, Models::Current, Some(0))?.into())
}

// ── reads and the rest ──

fn usage(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    Ok(server.state().usage(&session_id(&params))?.into())
}

fn subagents(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let mut state = server.state();
    state.resident(&session_id(&params))?;
    Ok(json!({"running": [], "ended": {"items": []}, "childSessionIds": []}).into())
}

fn fork(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let session_id = session_id(&params);
    let mut state = server.state();
    let resident = state.resident(&session_id)?;
    check_revision(resident, &params)?;
    let Some(checkpoint) = resident.record.checkpoint_id.clone() else {
        return Err(ProtocolError::business(
            "No workspace checkpoint is available yet.",
            "INVALID_STATE_TRANSITION",
        ));
    };
    let mut copy = resident.record.clone();
    copy.session_id = messages::new_id("sess");
    copy.parent_session_id = Some(session_id);
    copy.created_at = now_ms();
    copy.updated_at = copy.created_at;
    let copied = copy.messages.len();
    // A fork is persisted when it is made.
    state.store.save(&copy).map_err(|message| ProtocolError::business(message, "STORAGE_ERROR"))?;
    Ok(json!({"forkedSessionId": copy.session_id, "targetCheckpointId": checkpoint,
              "copiedMessageCount": copied, "restoredFileCount": 0})
    .into())
}

fn compact(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let session_id = session_id(&params);
    let mut state = server.state();
    let resident = state.resident(&session_id)?;
    if resident.is_running() {
        return Err(ProtocolError::new(BUSY, "Cannot compact while a prompt is running"));
    }
    check_revision(resident, &params)?;
    let input_id =
        text(&params, "inputId").map_or_else(|| messages::new_id("input"), str::to_owned);
    // The summarising model turn is not simulated: the context shrinks at once.
    resident.record.context_used /= 4;
    resident.revision += 1;
    state.state_updated(&session_id, "compact_started", json!({"status": "running"}));
    state.state_updated(&session_id, "session_compacted", json!({"status": "idle"}));
    state.persist(&session_id);
    let snapshot = state.snapshot(&session_id, Models::Current, Some(0))?;
    Ok(json!({"response": "Compacted the conversation.", "snapshot": snapshot,
              "compact": {"state": "accepted", "inputId": input_id}})
    .into())
}

fn goal(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let session_id = session_id(&params);
    let state = server.state();
    state.snapshot(&session_id, Models::Current, Some(0))?;
    let objective = text(&params, "objective").map(str::trim).filter(|text| !text.is_empty());
    // Sessions never hold a goal in the simulator: only the answers about a missing goal.
    let response = match (text(&params, "action").unwrap_or_default(), objective) {
        ("show", _) => "No goal is set. Use /goal <objective> to set one.",
        ("clear", _) => "No goal to clear.",
        ("pause", _) => "No goal to pause.",
        ("resume", _) => "No goal to resume.",
        ("set", None) => "Usage: /goal <objective>",
        ("replace", None) => "Usage: /goal replace <objective>",
        _ => return Err(not_simulated("session/goal set")),
    };
    let snapshot = state.snapshot(&session_id, Models::Current, Some(0))?;
    Ok(json!({"response": response, "snapshot": snapshot, "startedTurn": false}).into())
}

fn cancel_background_task(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let mut state = server.state();
    state.resident(&session_id(&params))?;
    // No background work runs in the simulator, so every task id is unknown.
    Ok(json!({"cancelled": false, "reason": "not_found", "status": "lost",
              "taskId": params["taskId"]})
    .into())
}

fn update_account_config(server: &Arc<Server>, params: Value) -> Result<Reply, ProtocolError> {
    let mut state = server.state();
    // A push not based on this process's table (or without the personal config) is answered
    // like any other and silently ignored.
    let based_on = params["basedOnZCodeBuiltinRevision"].as_str().unwrap_or_default();
    let (count, status) = if server.provider.accepts(based_on) {
        state
            .entitlements
            .update(&params)
            .map_err(|message| ProtocolError::new(wire::INTERNAL_ERROR, message))?
    } else {
        (params["providers"].as_object().map_or(0, |providers| providers.len()), "received")
    };
    let mut result = json!({"providerCount": count, "status": status});
    if server.profile.has_315_deltas() {
        result["receivedRevision"] = params["revision"].clone();
    }
    Ok(result.into())
}

fn read_presentation(params: Value) -> Result<Reply, ProtocolError> {
    Ok(json!({"workspace": params["workspace"], "mode": "build",
              "slashCommands": catalog::slash_commands()})
    .into())
}

fn update_interaction_preferences(
    server: &Arc<Server>,
    params: Value,
) -> Result<Reply, ProtocolError> {
    let enabled = params["preferences"]["askUserQuestionAutoResolutionEnabled"] == true;
    let key = params["workspace"]["workspaceKey"].as_str().unwrap_or_default().to_owned();
    let mut state = server.state();
    state.auto_resolution.insert(key, enabled);
    Ok(json!({"workspace": params["workspace"], "askUserQuestionAutoResolutionEnabled": enabled,
              "snoozedInteractionCount": 0})
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revision_checks_report_both_revisions() {
        let record: SessionRecord = serde_json::from_value(json!({
            "sessionId": "sess_a", "workspace": {"workspacePath": "/w", "workspaceKey": "/w"},
            "title": "", "traceId": "t", "createdAt": 1, "updatedAt": 1, "mode": "build"}))
        .unwrap();
        let mut resident =
            Resident::new(record, false, false, super::super::session::Preferences::FALLBACK);
        resident.revision = 4;
        assert!(check_revision(&resident, &json!({})).is_ok());
        let error = check_revision(&resident, &json!({"expectedRevision": 3})).unwrap_err();
        assert_eq!(error.code, REVISION_MISMATCH);
        assert_eq!(error.data, Some(json!({"actualRevision": 4, "expectedRevision": 3})));
    }
}
