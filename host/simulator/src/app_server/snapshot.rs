//! The legacy `ZCodeSessionStateSnapshot` (3.15.1 `zcode-protocol/index.ts`): `{protocol,
//! session, settings, projection, runtime, messages, todos?, slashCommands?}`, answered by
//! `session/create`, `resume`, `read`, the setters and `subscribe` with `includeSnapshot`.

use serde_json::{Value, json};

use super::catalog::{self, Entitlements};
use super::session::Resident;
use super::store::SessionRecord;

/// Which models `settings.model.available` lists (`modelAvailability`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Models {
    /// The whole usable registry (create, resume).
    All,
    /// Only the session's current model (read, subscribe, setters).
    Current,
}

/// `ZCodeSessionInfo` of a stored record; `status` is `idle` unless a resident turn runs.
pub fn session_info(record: &SessionRecord, status: &str) -> Value {
    let mut info = json!({
        "sessionId": record.session_id,
        "workspace": record.workspace,
        "traceId": record.trace_id,
        "sessionKind": "interactive",
        "title": record.title,
        "mode": record.mode,
        "status": status,
        "createdAt": record.created_at,
        "updatedAt": record.updated_at,
    });
    if let Some(source) = &record.title_source {
        info["titleSource"] = json!(source);
    }
    if let Some(model) = &record.model {
        info["model"] = model.clone();
    }
    if let Some(parent) = &record.parent_session_id {
        info["parentSessionId"] = json!(parent);
    }
    info
}

fn status(resident: &Resident) -> &'static str {
    if resident.is_running() { "running" } else { "idle" }
}

pub fn settings(resident: &Resident, entitlements: &Entitlements, models: Models) -> Value {
    let record = &resident.record;
    catalog::settings(
        entitlements,
        record.model.as_ref(),
        record.thought_level.as_deref(),
        &record.mode,
        models == Models::All,
    )
}

fn context_window(resident: &Resident) -> u64 {
    resident.current_model().map_or(200_000, |model| model.context_window)
}

pub fn projection(resident: &Resident) -> Value {
    let record = &resident.record;
    let mut projection = json!({
        "sessionId": record.session_id,
        "status": status(resident),
        "mode": record.mode,
        "turnCount": record.turn_count,
        "totalTokenCount": record.usage.total(),
        "contextUsed": record.context_used,
        "contextWindow": context_window(resident),
        "pendingPermissions": resident.pending_permissions,
        "activeToolCalls": resident.active_tools,
        "backgroundJobs": [],
    });
    if let Some(turn) = &resident.turn {
        projection["currentTurnId"] = json!(turn.turn_id);
    }
    projection
}

pub fn runtime(resident: &Resident) -> Value {
    let mut runtime = json!({
        "eventSeq": resident.seq,
        "stateRevision": resident.revision,
        "pendingRequestIds": resident.pending_request_ids(),
        "contextUsage": {"used": resident.record.context_used, "size": context_window(resident)},
    });
    if let Some(kind) = &resident.delivery_kind {
        runtime["deliveryKind"] = json!(kind);
    }
    if let Some(turn) = &resident.turn {
        runtime["activeTurnId"] = json!(turn.turn_id);
        runtime["activeTurnKind"] = json!("regular");
    }
    runtime
}

/// The full snapshot; `message_limit` keeps only the newest messages.
pub fn snapshot(
    resident: &Resident,
    entitlements: &Entitlements,
    models: Models,
    message_limit: Option<usize>,
) -> Value {
    let messages = &resident.record.messages;
    let start = message_limit.map_or(0, |limit| messages.len().saturating_sub(limit));
    json!({
        "protocol": {"name": "ZCode Protocol", "version": 1},
        "session": session_info(&resident.record, status(resident)),
        "settings": settings(resident, entitlements, models),
        "projection": projection(resident),
        "runtime": runtime(resident),
        "messages": &messages[start..],
        "todos": resident.record.todos,
        "slashCommands": catalog::slash_commands(),
    })
}
