//! The `zcode-agent` channel: workspace state, the session lifecycle, settings and prompts.

use std::collections::{BTreeSet, VecDeque};
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::watch;

use super::params::Params;
use super::session::{LiveSession, PendingKind, TurnControl};
use super::store::{StoredSession, TokenUsage, WorkspacePrefs};
use super::{Handled, Host};
use crate::common::catalog;
use crate::common::clock::now_ms;
use crate::common::scenario;
use crate::common::turn::{Stop, estimate_tokens, title_from};
use crate::task::profile::{ModelShape, PlanState};
use crate::task::turn::{self, TurnStart};

pub fn call(host: &Arc<Host>, method: &str, params: &Params) -> Result<Handled, String> {
    let result = match method {
        "initialize" => initialize(host, params)?,
        "readWorkspaceState" => read_workspace_state(host, params)?,
        "readWorkspacePresentation" => read_workspace_presentation(params)?,
        "createSession" => create_session(host, params)?,
        "resumeSession" => resume_session(host, params)?,
        "listSessions" => list_sessions(host, params)?,
        "readSession" => read_session(host, params)?,
        "readSessionMessages" => read_session_messages(host, params)?,
        "readSessionEvents" => read_session_events(host, params)?,
        "sendPrompt" => return send_prompt(host, params),
        "closeSession" => close_session(host, params)?,
        "setMode" => set_mode(host, params)?,
        "setModel" => set_model(host, params)?,
        "setThoughtLevel" => set_thought_level(host, params)?,
        "getTaskTokenUsage" => token_usage(host, params)?,
        "respondProviderRuntimeHeaders" => respond_provider_headers(host, params)?,
        "disposeWorkspace" => dispose_workspace(host, params)?,
        other => return Err(format!("Method not found: {other}")),
    };
    Ok(result.into())
}

fn initialize(host: &Host, params: &Params) -> Result<Value, String> {
    let workspace = params.workspace()?;
    if host.options.signed_out {
        return Ok(json!({
            "available": false,
            "reason": "No ZCode model provider is ready. Sign in to ZCode first.",
            "reasonCode": "provider_not_ready",
        }));
    }
    Ok(json!({
        "available": true,
        "workspaceKey": workspace,
        "protocolName": "zcode-host",
        "protocolVersion": 1,
        "transportKind": "message-port",
    }))
}

fn read_workspace_state(host: &Host, params: &Params) -> Result<Value, String> {
    let workspace = params.workspace()?;
    let (model, thought_level) = workspace_defaults(host, workspace);
    let signed_out = host.options.signed_out;
    Ok(json!({
        "workspace": {"workspacePath": workspace},
        "settings": catalog::settings(&model, &thought_level, catalog::DEFAULT_MODE, signed_out),
        "modelCatalog": catalog::model_catalog(host.options.signed_out),
    }))
}

/// `readWorkspacePresentation` (3.12.3): the workspace and the editing mode new sessions get.
fn read_workspace_presentation(params: &Params) -> Result<Value, String> {
    let workspace = params.workspace()?;
    Ok(json!({"workspace": {"workspacePath": workspace}, "mode": catalog::DEFAULT_MODE}))
}

/// The model and thought level a new session of `workspace` starts with.
pub(super) fn workspace_defaults(host: &Host, workspace: &str) -> (Value, String) {
    if host.profile.models == ModelShape::Selection {
        let (model, level) = selected_defaults(host, workspace);
        return (model.reference(), level);
    }
    let prefs = host.store().workspace_prefs(workspace);
    let model = prefs.model.filter(|model| catalog::find_model(model).is_some());
    let level = prefs.thought_level.filter(|level| catalog::is_thought_level(level));
    (
        model.unwrap_or_else(catalog::default_model),
        level.unwrap_or_else(|| catalog::DEFAULT_THOUGHT_LEVEL.to_owned()),
    )
}

/// The workspace's last-used model and level where levels are per model: a level the model
/// does not offer falls back to the model's default.
pub(super) fn selected_defaults(host: &Host, workspace: &str) -> (&'static catalog::Model, String) {
    let prefs = host.store().workspace_prefs(workspace);
    let model = prefs
        .model
        .as_ref()
        .and_then(catalog::find_selected_model)
        .unwrap_or_else(catalog::default_selected_model);
    let level = prefs.thought_level.filter(|level| model.offers(level));
    (model, level.unwrap_or_else(|| model.default_level().to_owned()))
}

/// `createSession`'s `model` and `thoughtLevel` (3.12.3). Creation hands only provider and
/// model on to the session, so a level inside `model` is dropped: only `thoughtLevel` sets it,
/// else the model's default applies.
fn requested_selection(params: &Params) -> Result<Option<(Value, String)>, String> {
    let Some(requested) = params.get("model") else {
        return Ok(None);
    };
    let model = catalog::find_selected_model(requested)
        .ok_or_else(|| format!("Unknown model: {requested}"))?;
    let level = match params.optional_string("thoughtLevel")? {
        Some(level) if model.offers(level) => level.to_owned(),
        Some(level) => return Err(format!("Unknown thought level: {level}")),
        None => model.default_level().to_owned(),
    };
    Ok(Some((model.reference(), level)))
}

fn create_session(host: &Host, params: &Params) -> Result<Value, String> {
    let workspace = params.workspace()?;
    if !Path::new(workspace).is_dir() {
        return Err(format!("Workspace path does not exist: {workspace}"));
    }
    let deferred = match params.optional_string("persistence")? {
        None | Some("immediate") => false,
        Some("deferred") => true,
        Some(other) => return Err(format!("createSession: unknown persistence {other:?}")),
    };
    let mcp_servers = mcp_servers(params)?;
    let requested = match host.profile.models {
        ModelShape::Selection => requested_selection(params)?,
        ModelShape::Refs => None,
    };
    let (model, thought_level) = requested.unwrap_or_else(|| workspace_defaults(host, workspace));
    let now = now_ms();
    let record = StoredSession {
        session_id: uuid::Uuid::new_v4().to_string(),
        workspace_path: workspace.to_owned(),
        title: None,
        created_at: now,
        updated_at: now,
        mode: catalog::DEFAULT_MODE.to_owned(),
        model,
        thought_level,
        messages: Vec::new(),
        todos: Vec::new(),
        usage: TokenUsage::default(),
        context_used: 0,
        last_seq: 0,
        always_allowed: BTreeSet::new(),
        mcp_servers,
        recent_events: VecDeque::new(),
        plan_enabled: false,
    };
    let mut live = LiveSession::new(record, !deferred, host.profile, host.out.clone());
    host.persist(&mut live)?;
    let snapshot = live.snapshot(host.options.signed_out, None);
    host.insert(live);
    Ok(snapshot)
}

fn mcp_servers(params: &Params) -> Result<Value, String> {
    match params.get("mcpServers") {
        None => Ok(json!([])),
        Some(list @ Value::Array(_)) => Ok(list.clone()),
        Some(_) => Err("mcpServers must be an array".into()),
    }
}

fn resume_session(host: &Host, params: &Params) -> Result<Value, String> {
    params.workspace()?;
    let shared = host.live(params.string("sessionId")?)?;
    let mut live = shared.lock().expect("session lock");
    if params.get("mcpServers").is_some() {
        live.record.mcp_servers = mcp_servers(params)?;
    }
    live.closed = false;
    // A native resume does not keep the independent plan flag.
    live.record.plan_enabled = false;
    host.persist(&mut live)?;
    // The snapshot names the session's own workspace; callers check it against theirs.
    Ok(live.snapshot(host.options.signed_out, None))
}

fn list_sessions(host: &Host, params: &Params) -> Result<Value, String> {
    let workspace = params.workspace()?;
    let limit = params.optional_u64("limit")?.map(|limit| limit as usize);
    let sessions = host.store().list_sessions(workspace)?;
    let items: Vec<Value> = sessions
        .into_iter()
        .take(limit.unwrap_or(usize::MAX))
        .map(|session| {
            let mut item = json!({
                "sessionId": session.session_id,
                "workspace": {"workspacePath": session.workspace_path},
                "updatedAt": session.updated_at,
            });
            if let Some(title) = session.title {
                item["title"] = json!(title);
            }
            item
        })
        .collect();
    Ok(Value::Array(items))
}

/// Runs `action` on the session named by `sessionId`, checking it belongs to the workspace.
fn with_session<T>(
    host: &Host,
    params: &Params,
    action: impl FnOnce(&mut LiveSession) -> Result<T, String>,
) -> Result<T, String> {
    let workspace = params.workspace()?;
    let session_id = params.string("sessionId")?;
    let shared = host.live(session_id)?;
    let mut live = shared.lock().expect("session lock");
    if live.record.workspace_path != workspace {
        return Err(format!("Session {session_id} does not belong to workspace {workspace}"));
    }
    action(&mut live)
}

fn read_session(host: &Host, params: &Params) -> Result<Value, String> {
    let limit = params.optional_u64("messageLimit")?.map(|limit| limit as usize);
    with_session(host, params, |live| Ok(live.snapshot(host.options.signed_out, limit)))
}

fn read_session_messages(host: &Host, params: &Params) -> Result<Value, String> {
    let limit = params.optional_u64("limit")?.map(|limit| limit as usize).unwrap_or(usize::MAX);
    with_session(host, params, |live| {
        let messages = &live.record.messages;
        let start = messages.len().saturating_sub(limit);
        Ok(json!({"sessionId": live.id(), "messages": &messages[start..]}))
    })
}

fn read_session_events(host: &Host, params: &Params) -> Result<Value, String> {
    let after = params.optional_u64("afterSeq")?.unwrap_or(0);
    let limit = params.optional_u64("limit")?.map(|limit| limit as usize).unwrap_or(usize::MAX);
    with_session(host, params, |live| {
        let events: Vec<&Value> = live
            .record
            .recent_events
            .iter()
            .filter(|event| event["seq"].as_u64().is_some_and(|seq| seq > after))
            .take(limit)
            .collect();
        Ok(json!({"sessionId": live.id(), "events": events}))
    })
}

fn send_prompt(host: &Arc<Host>, params: &Params) -> Result<Handled, String> {
    let workspace = params.workspace()?;
    let session_id = params.string("sessionId")?;
    let content = params
        .get("content")
        .and_then(Value::as_str)
        .ok_or("sendPrompt: `content` must be a string")?;
    let input_id = match params.optional_string("inputId")? {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => uuid::Uuid::new_v4().to_string(),
    };
    let attachments = turn::attachments(params.get("attachments"))?;
    if host.options.signed_out {
        return Err("No usable ZCode model provider is configured. Sign in to ZCode first.".into());
    }
    let shared = host.live(session_id)?;
    let mut live = shared.lock().expect("session lock");
    if live.record.workspace_path != workspace {
        return Err(format!("Session {session_id} does not belong to workspace {workspace}"));
    }
    if live.closed {
        return Err(format!("Session is closed: {session_id}"));
    }
    if live.is_running() {
        return Err(format!("Session {session_id} is busy: a generation is already running"));
    }
    let scenario =
        scenario::select(content, Path::new(workspace), host.options.scenario_file.as_deref())?;

    let now = now_ms();
    live.record.messages.push(turn::user_message(&input_id, content, &attachments.parts, now));
    live.record.updated_at = now;
    let new_title = live.record.title.is_none().then(|| title_from(content));
    if let Some(title) = &new_title {
        live.record.title = Some(title.clone());
    }
    // A deferred session becomes durable with its first prompt.
    live.persisted = true;
    host.persist(&mut live)?;

    let turn_id = uuid::Uuid::new_v4().to_string();
    let (stop_sender, stop) = watch::channel(false);
    live.turn = Some(TurnControl { turn_id: turn_id.clone(), stop: stop_sender });
    let start = TurnStart {
        session: shared.clone(),
        session_id: session_id.to_owned(),
        workspace: workspace.into(),
        turn_id,
        input_id,
        scenario,
        stop: Stop(stop),
        prompt_tokens: estimate_tokens(content) + attachments.tokens,
        new_title,
    };
    Ok(Handled { result: json!({"sessionId": session_id, "accepted": true}), turn: Some(start) })
}

fn close_session(host: &Host, params: &Params) -> Result<Value, String> {
    with_session(host, params, |live| {
        if let Some(turn) = &live.turn {
            turn.stop.send_replace(true);
        }
        live.closed = true;
        Ok(Value::Null)
    })
}

fn set_mode(host: &Host, params: &Params) -> Result<Value, String> {
    let mode = params.string("mode")?;
    if !host.profile.modes.contains(&mode) {
        return Err(format!("Unsupported mode: {mode}"));
    }
    let independent_plan = host.profile.plan == PlanState::IndependentFlag;
    change_setting(host, params, |record| {
        let before = (record.mode.clone(), record.plan_enabled);
        if independent_plan && mode == "plan" {
            // Planning starts; the editing mode stays for afterwards.
            record.plan_enabled = true;
        } else {
            record.mode = mode.to_owned();
            record.plan_enabled = false;
        }
        before != (record.mode.clone(), record.plan_enabled)
    })
}

fn set_model(host: &Host, params: &Params) -> Result<Value, String> {
    let requested = params.get("model").ok_or("setModel: `model` is required")?;
    if host.profile.models == ModelShape::Selection {
        return set_selected_model(host, params, requested);
    }
    let model =
        catalog::find_model(requested).ok_or_else(|| format!("Unknown model: {requested}"))?;
    if persist_as_last_used(params) {
        let workspace = params.workspace()?;
        let mut prefs = host.store().workspace_prefs(workspace);
        prefs.model = Some(model.clone());
        host.store().save_workspace_prefs(workspace, prefs)?;
    }
    change_setting(host, params, |record| {
        let changed = record.model != model;
        record.model = model.clone();
        changed
    })
}

/// `setModel` with a `ModelSelection` (3.12.3): the model changes; the session keeps its
/// level when the new model offers it, else takes the model's default — the level itself is
/// set with `setThoughtLevel`.
fn set_selected_model(host: &Host, params: &Params, requested: &Value) -> Result<Value, String> {
    let model = catalog::find_selected_model(requested)
        .ok_or_else(|| format!("Unknown model: {requested}"))?;
    if persist_as_last_used(params) {
        let workspace = params.workspace()?;
        let mut prefs = host.store().workspace_prefs(workspace);
        prefs.model = Some(model.reference());
        host.store().save_workspace_prefs(workspace, prefs)?;
    }
    change_setting(host, params, |record| {
        let before = (record.model.clone(), record.thought_level.clone());
        record.model = model.reference();
        if !model.offers(&record.thought_level) {
            record.thought_level = model.default_level().to_owned();
        }
        before != (record.model.clone(), record.thought_level.clone())
    })
}

/// Whether `level` is a level the session's model offers.
fn offered_level(host: &Host, params: &Params, level: &str) -> Result<bool, String> {
    if host.profile.models == ModelShape::Refs {
        return Ok(catalog::is_thought_level(level));
    }
    with_session(host, params, |live| {
        Ok(catalog::find_selected_model(&live.record.model)
            .is_some_and(|model| model.offers(level)))
    })
}

fn set_thought_level(host: &Host, params: &Params) -> Result<Value, String> {
    let level = params.string("thoughtLevel")?;
    if !offered_level(host, params, level)? {
        return Err(format!("Unknown thought level: {level}"));
    }
    if persist_as_last_used(params) {
        let workspace = params.workspace()?;
        let prefs = WorkspacePrefs {
            thought_level: Some(level.to_owned()),
            ..host.store().workspace_prefs(workspace)
        };
        host.store().save_workspace_prefs(workspace, prefs)?;
    }
    change_setting(host, params, |record| {
        let changed = record.thought_level != level;
        record.thought_level = level.to_owned();
        changed
    })
}

fn persist_as_last_used(params: &Params) -> bool {
    params.get("persistAsWorkspaceLastUsed").and_then(Value::as_bool).unwrap_or(false)
}

/// Applies a settings change, persists it, publishes a `snapshot` if something changed and
/// returns the resulting snapshot.
fn change_setting(
    host: &Host,
    params: &Params,
    change: impl FnOnce(&mut StoredSession) -> bool,
) -> Result<Value, String> {
    with_session(host, params, |live| {
        if change(&mut live.record) {
            live.record.updated_at = now_ms();
            host.persist(live)?;
            live.emit_snapshot(host.options.signed_out);
        }
        Ok(live.snapshot(host.options.signed_out, None))
    })
}

fn token_usage(host: &Host, params: &Params) -> Result<Value, String> {
    with_session(host, params, |live| {
        let usage = &live.record.usage;
        Ok(json!({
            "sessionId": live.id(),
            "totalTokens": usage.total(),
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "reasoningTokens": usage.reasoning_tokens,
            "cacheCreationTokens": usage.cache_creation_tokens,
            "cacheReadTokens": usage.cache_read_tokens,
        }))
    })
}

fn respond_provider_headers(host: &Host, params: &Params) -> Result<Value, String> {
    let request_id = params.string("requestId")?;
    let response = params
        .get("response")
        .filter(|response| response.is_object())
        .ok_or("respondProviderRuntimeHeaders: `response` must be an object")?;
    if !response.get("headersApplied").is_some_and(Value::is_boolean) {
        return Err(
            "respondProviderRuntimeHeaders: `response.headersApplied` must be a boolean".into()
        );
    }
    with_session(host, params, |live| {
        super::task::resolve(live, request_id, &PendingKind::ProviderHeaders, response.clone())
            .map_err(|()| format!("Unknown provider runtime headers request: {request_id}"))?;
        Ok(Value::Null)
    })
}

fn dispose_workspace(host: &Host, params: &Params) -> Result<Value, String> {
    let workspace = params.workspace()?;
    for shared in host.live_sessions() {
        let mut live = shared.lock().expect("session lock");
        if live.record.workspace_path == workspace {
            if let Some(turn) = &live.turn {
                turn.stop.send_replace(true);
            }
            live.closed = true;
        }
    }
    Ok(Value::Null)
}
