//! `zcode-agent`: the V4 handshake, sessions, the conversation subscription and its frames,
//! paged rows and conversation commands, as the stdio connection scope exposes them (ZCode
//! `packages/services/src/zcode-agent/zcodeAgentConnectionScope.ts`). The stdio server's
//! scope is a trusted host relay: its handshake counts as done from the start, so
//! subscriptions and commands work before `helloConversationV4`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Map, Value, json};

use super::{After, CallResult, Reply, RpcError, object_arg, string_field, workspace};
use crate::common::catalog;
use crate::common::clock::now_ms;
use crate::services::commands;
use crate::services::conversation::{Config, Conversation, Interrupt};
use crate::services::server::{Server, Shared};
use crate::v4::publisher::Subscriber;
use crate::v4::wire::{DeliveryKind, WIRE_VERSION};

pub const METHODS: &[&str] = &[
    "helloConversationV4",
    "initializeConversationV4",
    "syncAppRuntimePreferences",
    "initialize",
    "readWorkspacePresentation",
    "createSession",
    "resumeSession",
    "listSessions",
    "closeSession",
    "subscribeConversationV4",
    "unsubscribeConversationV4",
    "resyncConversationV4",
    "conversationRowsRangeV4",
    "sendConversationCommandV4",
    "collectLocalRuntimeChildProcesses",
];

/// `PROTOCOL_V4_LIMITS.rowsRangeMaxLimit`.
const ROWS_RANGE_MAX: u64 = 200;

pub fn call(server: &Arc<Server>, method: &str, args: &[Option<Value>]) -> Option<Reply> {
    let result = match method {
        "helloConversationV4" => Ok(Some(hello(server))),
        "initializeConversationV4" => initialize_conversation(server, args),
        "syncAppRuntimePreferences" => sync_preferences(server, args),
        "initialize" => initialize(server, args),
        "readWorkspacePresentation" => object_arg(method, args).and_then(|params| {
            let path = workspace(method, params)?;
            Ok(Some(json!({"workspace": {"workspacePath": path}, "mode": "build"})))
        }),
        "createSession" => create_session(server, args),
        "resumeSession" => resume_session(server, args),
        "listSessions" => list_sessions(server, args),
        "closeSession" => close_session(server, args),
        "subscribeConversationV4" => subscribe(server, args),
        "unsubscribeConversationV4" => unsubscribe(server, args),
        "resyncConversationV4" => resync(server, args),
        "conversationRowsRangeV4" => rows_range(server, args),
        "sendConversationCommandV4" => return Some(send_command(server, args)),
        "collectLocalRuntimeChildProcesses" => Ok(Some(json!([]))),
        method if super::attachments::METHODS.contains(&method) => {
            super::attachments::call(server, method, args)
        }
        _ => return None,
    };
    Some(Reply::from(result))
}

/// `onDynamicConversationFrame(target)`: frames of every subscription in the target's
/// workspace (`workspaceIdentity`, else `workspacePath`).
pub fn listen_frames(server: &Server, arg: Option<&Value>, id: i64) -> Result<(), String> {
    let Some(target) = arg.and_then(Value::as_object) else {
        return Err("Cannot read properties of undefined (reading 'workspaceIdentity')".into());
    };
    let identity = target.get("workspaceIdentity").and_then(Value::as_str).map(str::trim);
    let key = match identity.filter(|identity| !identity.is_empty()) {
        Some(identity) => identity.to_owned(),
        None => target.get("workspacePath").and_then(Value::as_str).unwrap_or_default().to_owned(),
    };
    server.router.listen(id, key);
    Ok(())
}

fn hello(server: &Server) -> Value {
    json!({
        "kind": "hello",
        "protocolVersion": WIRE_VERSION,
        "connectionId": server.connection_id,
        "clientMode": "desktop-continuous",
        "deliveryProfile": "continuous",
        "serverTime": now_ms(),
        "capabilities": {
            "nativeDialogs": true,
            "localTerminal": true,
            "binaryFrames": false,
            "compression": "none",
            "workspaceHookReview": true,
            "independentPlanState": true,
            "workflowRunDeltas": true,
        },
        "auth": {},
    })
}

/// `clientHelloSchema` (strict): `{kind: "clientHello", protocolVersion: 3, clientId, appVersion,
/// clientKind?, capabilities?: {workspaceHookReviewUi?, workflowRunDeltas?}}`.
fn initialize_conversation(server: &Server, args: &[Option<Value>]) -> CallResult {
    let hello = args.first().and_then(Option::as_ref).and_then(Value::as_object);
    let hello = hello.ok_or_else(|| RpcError::schema("clientHello: expected an object"))?;
    let mut problems = Vec::new();
    for key in hello.keys() {
        if !["kind", "protocolVersion", "clientId", "clientKind", "appVersion", "capabilities"]
            .contains(&key.as_str())
        {
            problems.push(format!("unrecognized key `{key}`"));
        }
    }
    if hello.get("kind").and_then(Value::as_str) != Some("clientHello") {
        problems.push("kind: expected \"clientHello\"".into());
    }
    if hello.get("protocolVersion").and_then(Value::as_u64) != Some(WIRE_VERSION) {
        problems.push(format!("protocolVersion: expected {WIRE_VERSION}"));
    }
    for key in ["clientId", "appVersion"] {
        if !hello.get(key).is_some_and(Value::is_string) {
            problems.push(format!("{key}: expected string"));
        }
    }
    if let Some(kind) = hello.get("clientKind")
        && !["desktop", "web", "mobileRemote", "mobileApp"].contains(&kind.as_str().unwrap_or(""))
    {
        problems.push("clientKind: expected desktop|web|mobileRemote|mobileApp".into());
    }
    if let Some(capabilities) = hello.get("capabilities") {
        match capabilities.as_object() {
            None => problems.push("capabilities: expected object".into()),
            Some(capabilities) => {
                for (key, value) in capabilities {
                    if !["workspaceHookReviewUi", "workflowRunDeltas"].contains(&key.as_str()) {
                        problems.push(format!("capabilities: unrecognized key `{key}`"));
                    } else if !value.is_boolean() {
                        problems.push(format!("capabilities.{key}: expected boolean"));
                    }
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(RpcError::schema(problems.join("; ")));
    }
    let client_id = hello["clientId"].as_str().unwrap_or_default().to_owned();
    let mut bound = server.client_id.lock().expect("client id lock");
    if bound.as_ref().is_some_and(|bound| *bound != client_id) {
        return Err(RpcError::new("fault.connection.clientChanged"));
    }
    *bound = Some(client_id);
    Ok(None)
}

fn sync_preferences(server: &Server, args: &[Option<Value>]) -> CallResult {
    let preferences = object_arg("syncAppRuntimePreferences", args)?;
    if let Some(enabled) = preferences.get("askUserQuestionAutoResolutionEnabled") {
        let enabled = enabled.as_bool().ok_or_else(|| {
            RpcError::new(
                "syncAppRuntimePreferences: askUserQuestionAutoResolutionEnabled must be a boolean",
            )
        })?;
        server.ask_auto_resolution.store(enabled, Ordering::SeqCst);
    }
    Ok(None)
}

fn initialize(server: &Server, args: &[Option<Value>]) -> CallResult {
    let params = object_arg("initialize", args)?;
    let path = workspace("initialize", params)?;
    if server.is_signed_out() {
        return Ok(Some(
            json!({"available": false, "reason": "No usable model provider is configured",
                              "reasonCode": "provider_not_ready"}),
        ));
    }
    Ok(Some(json!({"available": true, "workspaceKey": path, "protocolName": "zcode-protocol",
                   "protocolVersion": 1, "transportKind": "stdio"})))
}

/// The session snapshot `createSession` and `resumeSession` return.
fn session_view(server: &Server, conversation: &Conversation) -> Value {
    let record = &conversation.record;
    let mut session = json!({
        "sessionId": record.session_id,
        "status": if conversation.is_running() { "running" } else { "idle" },
        "workspace": {"workspacePath": record.workspace_path},
        "updatedAt": record.updated_at,
    });
    if !record.title.is_empty() {
        session["title"] = json!(record.title);
    }
    let model = record.config.model();
    let signed_out = server.is_signed_out();
    let mut settings =
        catalog::selection_settings(model, &record.config.thought, &record.config.mode, signed_out);
    // The Services Server forwards the Agent's session snapshot, whose create and resume
    // answers list every usable model (the app-server profiles' `modelAvailability: all`).
    if !signed_out {
        settings["model"]["available"] = Value::Array(catalog::model_options());
    }
    json!({
        "session": session,
        "settings": settings,
        "slashCommands": catalog::slash_commands(),
    })
}

fn create_session(server: &Server, args: &[Option<Value>]) -> CallResult {
    let method = "createSession";
    let params = object_arg(method, args)?;
    let path = workspace(method, params)?;
    if !std::path::Path::new(path).is_dir() {
        return Err(RpcError::new(format!("{method}: workspace is not a directory: {path}")));
    }
    let deferred = match params.get("persistence").and_then(Value::as_str) {
        None | Some("immediate") => false,
        Some("deferred") => true,
        Some(other) => {
            return Err(RpcError::new(format!("{method}: unknown persistence {other:?}")));
        }
    };
    let model = match params.get("model").filter(|model| !model.is_null()) {
        None => catalog::default_selected_model(),
        Some(requested) => catalog::find_selected_model(requested)
            .ok_or_else(|| RpcError::new(format!("Unknown model: {requested}")))?,
    };
    let thought = match params.get("thoughtLevel").and_then(Value::as_str) {
        None => model.default_level(),
        Some(level) if model.offers(level) => level,
        Some(level) => return Err(RpcError::new(format!("Unknown thought level: {level}"))),
    };
    let config = Config {
        provider_id: model.provider_id().into(),
        model_id: model.model_id().into(),
        thought: thought.into(),
        mode: catalog::DEFAULT_MODE.into(),
        plan_enabled: false,
        followup_mode: "queue".into(),
    };
    let session_id = format!("sess_{}", uuid::Uuid::new_v4());
    let mut conversation =
        Conversation::draft(session_id, path.to_owned(), config, server.router.clone());
    conversation.record.mcp_servers = params.get("mcpServers").cloned().unwrap_or(Value::Null);
    conversation.ask_auto_resolution = server.ask_auto_resolution.load(Ordering::SeqCst);
    conversation.persisted = !deferred;
    server.persist(&conversation);
    let view = session_view(server, &conversation);
    server.insert(conversation);
    Ok(Some(view))
}

/// The session and its lock, if it belongs to `path`.
fn owned_session(
    server: &Server,
    session_id: &str,
    path: &str,
) -> Result<(Shared, bool), RpcError> {
    let (shared, cold) = server
        .load(session_id)
        .map_err(RpcError::new)?
        .ok_or_else(|| RpcError::new(format!("Session not found: {session_id}")))?;
    if shared.lock().expect("conversation lock").record.workspace_path != path {
        return Err(RpcError::new(format!(
            "Session {session_id} does not belong to workspace {path}"
        )));
    }
    Ok((shared, cold))
}

fn resume_session(server: &Server, args: &[Option<Value>]) -> CallResult {
    let method = "resumeSession";
    let params = object_arg(method, args)?;
    let path = workspace(method, params)?;
    let session_id = string_field(method, params, "sessionId")?;
    let (shared, cold) = owned_session(server, session_id, path)?;
    let mut conversation = shared.lock().expect("conversation lock");
    if cold {
        // The cold-resume defect of 3.14.0 and 3.14.3 (services-v4 §4): without explicit
        // settings the restored session comes back with Plan off.
        conversation.record.config.plan_enabled = false;
    }
    if let Some(servers) = params.get("mcpServers") {
        conversation.record.mcp_servers = servers.clone();
    }
    Ok(Some(session_view(server, &conversation)))
}

fn list_sessions(server: &Server, args: &[Option<Value>]) -> CallResult {
    let params = object_arg("listSessions", args)?;
    let path = workspace("listSessions", params)?;
    let stored = server.store.list(path).map_err(RpcError::new)?;
    let sessions: Vec<Value> = stored
        .iter()
        .map(|record| {
            // A session loaded here may be newer than its file.
            let live = server.conversation(&record.session_id);
            let live = live.as_ref().map(|shared| shared.lock().expect("conversation lock"));
            let record = live.as_ref().map_or(record, |conversation| &conversation.record);
            let mut row = json!({"sessionId": record.session_id, "workspace": {"workspacePath": record.workspace_path},
                                 "updatedAt": record.updated_at});
            if !record.title.is_empty() {
                row["title"] = json!(record.title);
            }
            row
        })
        .collect();
    Ok(Some(Value::Array(sessions)))
}

fn close_session(server: &Server, args: &[Option<Value>]) -> CallResult {
    let params = object_arg("closeSession", args)?;
    let path = workspace("closeSession", params)?;
    let session_id = string_field("closeSession", params, "sessionId")?;
    let Some(shared) = server.conversation(session_id) else { return Ok(Some(json!(false))) };
    {
        let mut conversation = shared.lock().expect("conversation lock");
        if conversation.record.workspace_path != path {
            return Ok(Some(json!(false)));
        }
        conversation.interrupt(Interrupt::Stop);
        conversation.publisher.subscribers.clear();
        server.persist(&conversation);
    }
    server.forget(session_id);
    Ok(Some(json!(true)))
}

/// `{ack: {subscriptionId, mode, logEpoch}}`; the initial frame is written before the reply.
fn subscribe(server: &Server, args: &[Option<Value>]) -> CallResult {
    let method = "subscribeConversationV4";
    let params = object_arg(method, args)?;
    let path = workspace(method, params)?;
    let session_id = string_field(method, params, "sessionId")?;
    let (shared, _) = owned_session(server, session_id, path)?;
    let mut conversation = shared.lock().expect("conversation lock");
    let subscription_id = format!("sub-{}", uuid::Uuid::new_v4());
    let topic = conversation.topic();
    conversation.publisher.subscribers = vec![Subscriber::new(subscription_id.clone(), &topic, "")];
    server.bind_subscription(&subscription_id, session_id);
    let mode = open_stream(&mut conversation, params.get("base"), false, DeliveryKind::Initial)?;
    Ok(Some(ack(&subscription_id, mode, &conversation)))
}

/// Sends the subscription's first frame: the deltas since a still-valid `base`, else a
/// snapshot. Returns the ACK `mode`.
fn open_stream(
    conversation: &mut Conversation,
    base: Option<&Value>,
    force_snapshot: bool,
    kind: DeliveryKind,
) -> Result<&'static str, RpcError> {
    let base = match base.filter(|base| !base.is_null()) {
        None => None,
        Some(base) => {
            let epoch = base.get("logEpoch").and_then(Value::as_str);
            let seq = base.get("seq").and_then(Value::as_u64);
            let (Some(epoch), Some(seq)) = (epoch, seq) else {
                return Err(RpcError::schema(
                    "base: expected {logEpoch: string, seq: non-negative integer}",
                ));
            };
            Some((epoch, seq))
        }
    };
    Ok(conversation.open(base, force_snapshot, kind))
}

fn ack(subscription_id: &str, mode: &str, conversation: &Conversation) -> Value {
    let log_epoch = &conversation.publisher.log.log_epoch;
    json!({"ack": {"subscriptionId": subscription_id, "mode": mode, "logEpoch": log_epoch}})
}

fn unsubscribe(server: &Server, args: &[Option<Value>]) -> CallResult {
    let params = object_arg("unsubscribeConversationV4", args)?;
    let path = workspace("unsubscribeConversationV4", params)?;
    let subscription_id = string_field("unsubscribeConversationV4", params, "subscriptionId")?;
    // Unknown or foreign subscriptions are not an error.
    if let Some(shared) = owned_subscription(server, subscription_id, path) {
        shared.lock().expect("conversation lock").publisher.subscribers.clear();
        server.unbind_subscription(subscription_id);
    }
    Ok(None)
}

/// The session of a subscription this connection owns in `path`.
fn owned_subscription(server: &Server, subscription_id: &str, path: &str) -> Option<Shared> {
    let session_id = server.subscription_session(subscription_id)?;
    let shared = server.conversation(&session_id)?;
    let owned = {
        let conversation = shared.lock().expect("conversation lock");
        conversation.record.workspace_path == path
            && conversation.publisher.subscribers.iter().any(|s| &*s.id == subscription_id)
    };
    owned.then_some(shared)
}

/// `{subscriptionId, base: {logEpoch, seq} | null, forceSnapshot?}` on an owned subscription.
fn resync(server: &Server, args: &[Option<Value>]) -> CallResult {
    let method = "resyncConversationV4";
    let params = object_arg(method, args)?;
    let path = workspace(method, params)?;
    let subscription_id = string_field(method, params, "subscriptionId")?;
    if !params.contains_key("base") {
        return Err(RpcError::schema("base: required (an object or null)"));
    }
    let force = match params.get("forceSnapshot") {
        None => false,
        Some(Value::Bool(force)) => *force,
        Some(_) => return Err(RpcError::schema("forceSnapshot: expected boolean")),
    };
    let shared = owned_subscription(server, subscription_id, path)
        .ok_or_else(|| RpcError::new("fault.subscription.notOwned"))?;
    let mut conversation = shared.lock().expect("conversation lock");
    let mode = open_stream(&mut conversation, params.get("base"), force, DeliveryKind::Recovery)?;
    Ok(Some(ack(subscription_id, mode, &conversation)))
}

fn rows_range(server: &Server, args: &[Option<Value>]) -> CallResult {
    let method = "conversationRowsRangeV4";
    let params = object_arg(method, args)?;
    let path = workspace(method, params)?;
    let session_id = string_field(method, params, "sessionId")?;
    let limit = params.get("limit").and_then(Value::as_f64);
    let limit = match limit {
        Some(limit) if (1.0..=ROWS_RANGE_MAX as f64).contains(&limit) => limit as usize,
        _ => {
            return Err(RpcError::schema(format!(
                "limit: expected a number from 1 to {ROWS_RANGE_MAX}"
            )));
        }
    };
    let before = match params.get("beforeRowId") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value.as_f64().ok_or_else(|| RpcError::schema("beforeRowId: expected number"))?.ceil()
                as u64,
        ),
    };
    let (shared, _) = owned_session(server, session_id, path)?;
    let conversation = shared.lock().expect("conversation lock");
    Ok(Some(conversation.rows_range(before, limit)))
}

fn send_command(server: &Arc<Server>, args: &[Option<Value>]) -> Reply {
    let method = "sendConversationCommandV4";
    let params: &Map<String, Value> = match object_arg(method, args) {
        Ok(params) => params,
        Err(error) => return Reply::from(Err(error)),
    };
    let path = match workspace(method, params) {
        Ok(path) => path,
        Err(error) => return Reply::from(Err(error)),
    };
    let envelope = params.get("envelope").cloned().unwrap_or(Value::Null);
    let (ack, drive) = commands::handle(server, path, &envelope);
    Reply { result: Ok(Some(ack)), after: drive.map_or(After::Nothing, After::Drive) }
}
