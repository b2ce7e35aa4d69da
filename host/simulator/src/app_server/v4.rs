//! The V4 family (3.15.1 `packages/shared/src/zcode-protocol-v4/transport.ts`, `command.ts`):
//! connection flow control, topic subscriptions with `v4/conversation/frame` notifications,
//! row pages, usage and the `v4/command` inbox. RPC params are checked with a plain zod
//! `.parse`, so a bad request is `-32603` carrying the ZodError message, not `-32602`.
//!
//! The initial frame of a subscription goes out right after the ACK, in the same write (the
//! server's post-response outbox); the `snapshot-first` fault reverses the order. Frames go
//! out through the connection gateway (`gateway.rs`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::catalog;
use super::fault::AppFault;
use super::gateway::frame_notification;
use super::schemas;
use super::server::{Reply, Server, not_simulated};
use super::v4_commands;
use super::wire::{self, ProtocolError};
use super::zod::{self, Schema};
use crate::v4::publisher::{SNAPSHOT_TAIL_ROWS, Subscriber};
use crate::v4::wire::{DeliveryKind, Frame};

/// Most rows one `rowsRange` answers (`PROTOCOL_V4_LIMITS.rowsRangeMaxLimit`).
const ROWS_RANGE_MAX: f64 = 200.0;

/// V4 reads the simulator does not model (they exist in the 3.15.1 `V4_METHODS`).
const UNSIMULATED: &[&str] = &[
    "v4/controller/subscribe",
    "v4/controller/resync",
    "v4/controller/unsubscribe",
    "v4/conversation/plans",
    "v4/conversation/fileChanges",
    "v4/conversation/backgroundBashOutput",
    "v4/conversation/fileRewindPreview",
    "v4/conversation/workflowRunEvents",
    "v4/conversation/workflowRuns",
    "v4/conversation/workflowRunArtifacts",
    "v4/conversation/workflowRunArtifactData",
    "v4/conversation/workflowRunArtifactRead",
    "v4/conversation/workflowRunWorkspace",
    "v4/conversation/workflowRunNodeResult",
    "v4/conversation/attachmentRead",
    "v4/conversation/attachmentStat",
    "v4/usage/stats",
    "v4/attachment/begin",
    "v4/attachment/chunk",
    "v4/attachment/commit",
    "v4/attachment/abort",
    "v4/attachment/read",
    "v4/attachment/previewSource",
    "v4/commands/query",
];

/// A V4 params failure: `.parse` throws the ZodError, which the server reports as `-32603`.
fn parse(schema: &Schema, params: Option<&Value>) -> Result<Value, ProtocolError> {
    let issues = zod::check(schema, params);
    if issues.is_empty() {
        Ok(params.cloned().unwrap_or(Value::Null))
    } else {
        let pretty = serde_json::to_string_pretty(&issues).expect("issues serialize");
        Err(ProtocolError::internal("ZodError", pretty, None))
    }
}

pub async fn dispatch(
    server: &Arc<Server>,
    method: &str,
    params: Option<Value>,
) -> Result<Reply, ProtocolError> {
    let params = params.as_ref();
    match method {
        "v4/connection/flow" => {
            if server.faults.take_one(method, AppFault::NoV4).is_some() {
                return Err(ProtocolError::method_not_found(method));
            }
            let params = parse(&schemas::named("v4/connection/flow"), params)?;
            let mut state = server.state();
            let out = state.out.clone();
            state.gateway.flow(
                &out,
                params["connectionId"].as_str().unwrap_or_default(),
                params["state"].as_str().unwrap_or_default(),
            );
            Ok(json!({}).into())
        }
        "v4/conversation/subscribe" => subscribe(server, params).await,
        "v4/conversation/resync" => resync(server, params),
        "v4/conversation/unsubscribe" => unsubscribe(server, params),
        "v4/conversation/rowsRange" => rows_range(server, params),
        "v4/conversation/usage" => {
            let params = parse(&schemas::named("v4/conversation/usage"), params)?;
            let session_id = params["sessionId"].as_str().unwrap_or_default();
            Ok(server.state().usage(session_id)?.into())
        }
        "v4/command" => v4_commands::command(server, params),
        known if UNSIMULATED.contains(&known) => Err(not_simulated(known)),
        other => Err(ProtocolError::method_not_found(other)),
    }
}

/// Puts the initial frame after (or, with `snapshot-first`, before) the ACK.
fn with_initial_frame(server: &Server, result: Value, frame: Frame) -> Reply {
    let frame = frame_notification(&frame);
    let first =
        server.faults.take_one("v4/conversation/subscribe", AppFault::SnapshotFirst).is_some();
    if first {
        Reply { result, before: vec![frame], ..Reply::default() }
    } else {
        Reply { result, after: vec![frame], ..Reply::default() }
    }
}

async fn subscribe(server: &Arc<Server>, params: Option<&Value>) -> Result<Reply, ProtocolError> {
    let params = parse(&schemas::named("v4/conversation/subscribe"), params)?;
    let topic = params["topic"].as_str().unwrap_or_default().to_owned();
    let connection_id = params["connectionId"].as_str().unwrap_or_default().to_owned();
    if let Some(key) = topic.strip_prefix("workspace-config/").filter(|key| !key.is_empty()) {
        return Ok(subscribe_config(server, &topic, key, &connection_id));
    }
    let Some(session_id) = topic.strip_prefix("conversation/").filter(|id| !id.is_empty()) else {
        if topic.starts_with("sessions-index/") {
            return Err(not_simulated("v4/conversation/subscribe sessions-index"));
        }
        return Err(ProtocolError::internal(
            "Error",
            format!("Unsupported V4 topic: {topic}"),
            None,
        ));
    };
    let session_id = session_id.to_owned();
    let cold = !server.state().sessions.contains_key(&session_id);
    if cold {
        cold_resume(server, &session_id, &params).await?;
    }
    let mut state = server.state();
    let first;
    let ack;
    {
        let resident = state.resident(&session_id)?;
        let publisher = &mut resident.publisher;
        // A new subscription of the same topic on a connection replaces the old one.
        publisher.subscribers.retain(|subscriber| *subscriber.connection_id != *connection_id);
        let subscription_id = new_subscription_id();
        publisher.subscribers.push(Subscriber::new(
            subscription_id.clone(),
            &topic,
            &connection_id,
        ));
        let base = params.get("base").map(|base| {
            (
                base["logEpoch"].as_str().unwrap_or_default().to_owned(),
                base["seq"].as_f64().unwrap_or(0.0) as u64,
            )
        });
        let base = base.as_ref().map(|(epoch, seq)| (epoch.as_str(), *seq));
        let (mode, frame) = resident
            .open_v4(&subscription_id, base, false, DeliveryKind::Initial)
            .expect("the subscriber was just added");
        let rows = resident.publisher.rows().len().min(SNAPSHOT_TAIL_ROWS);
        ack = json!({
            "subscriptionId": subscription_id, "mode": mode,
            "logEpoch": resident.publisher.log.log_epoch,
            "openTiming": {"version": 1, "snapshotRowCount": rows,
                           "sessionRuntimeState": if cold { "cold" } else { "warm" }},
        });
        first = frame;
    }
    drop(state);
    Ok(with_initial_frame(server, json!({"ack": ack}), first))
}

/// Materialises a stored session for a V4 subscriber (the Desktop opens old chats this way).
async fn cold_resume(
    server: &Arc<Server>,
    session_id: &str,
    params: &Value,
) -> Result<(), ProtocolError> {
    let record = server
        .state()
        .store
        .load(session_id)
        .map_err(|message| ProtocolError::internal("Error", message, Some("STORAGE_ERROR")))?
        .ok_or_else(|| {
            ProtocolError::new(
                wire::SESSION_UNAVAILABLE,
                format!("Session not found: {session_id}"),
            )
        })?;
    let mut record = record;
    if let Some(level) = params["resumeThoughtLevel"].as_str() {
        record.thought_level = Some(level.to_owned());
    }
    server.materialize(record, true, false).await
}

fn subscribe_config(server: &Arc<Server>, topic: &str, key: &str, connection_id: &str) -> Reply {
    let mut state = server.state();
    let gateway = &mut state.gateway;
    gateway
        .config_subscribers
        .retain(|s| !(&*s.connection_id == connection_id && &*s.topic == topic));
    let mut subscriber = Subscriber::new(new_subscription_id(), topic, connection_id);
    let snapshot =
        json!({"workspaceKey": key, "config": {"slashCommands": catalog::slash_commands()}});
    let frame = subscriber.snapshot_frame(DeliveryKind::Initial, 0, snapshot);
    let ack = json!({"subscriptionId": &*subscriber.id, "mode": "snapshot",
                     "logEpoch": format!("epoch_config_{key}")});
    gateway.config_subscribers.push(subscriber);
    drop(state);
    with_initial_frame(server, json!({"ack": ack}), frame)
}

fn resync(server: &Arc<Server>, params: Option<&Value>) -> Result<Reply, ProtocolError> {
    let params = parse(&schemas::named("v4/conversation/resync"), params)?;
    let subscription_id = params["subscriptionId"].as_str().unwrap_or_default();
    let topic = params["topic"].as_str().unwrap_or_default();
    let unknown = || {
        ProtocolError::internal(
            "Error",
            format!("Unknown V4 subscription: {subscription_id}"),
            None,
        )
    };
    let session_id = topic.strip_prefix("conversation/").ok_or_else(unknown)?;
    let mut state = server.state();
    let resident = state.sessions.get_mut(session_id).ok_or_else(unknown)?;
    let base = params["base"].as_object().map(|base| {
        (
            base["logEpoch"].as_str().unwrap_or_default().to_owned(),
            base["seq"].as_u64().unwrap_or(0),
        )
    });
    let base = base.as_ref().map(|(epoch, seq)| (epoch.as_str(), *seq));
    let force = params["forceSnapshot"] == true;
    let (mode, frame) = resident
        .open_v4(subscription_id, base, force, DeliveryKind::Recovery)
        .ok_or_else(unknown)?;
    let log_epoch = &resident.publisher.log.log_epoch;
    let ack = json!({"subscriptionId": subscription_id, "mode": mode, "logEpoch": log_epoch});
    Ok(Reply {
        result: json!({"ack": ack}),
        after: vec![frame_notification(&frame)],
        ..Reply::default()
    })
}

fn unsubscribe(server: &Arc<Server>, params: Option<&Value>) -> Result<Reply, ProtocolError> {
    let params = parse(&schemas::named("v4/conversation/unsubscribe"), params)?;
    let subscription_id = params["subscriptionId"].as_str().unwrap_or_default();
    let topic = params["topic"].as_str().unwrap_or_default();
    let mut state = server.state();
    if let Some(session_id) = topic.strip_prefix("conversation/")
        && let Some(resident) = state.sessions.get_mut(session_id)
    {
        resident.publisher.subscribers.retain(|s| &*s.id != subscription_id);
    }
    state.gateway.config_subscribers.retain(|s| &*s.id != subscription_id);
    Ok(json!({}).into())
}

fn rows_range(server: &Arc<Server>, params: Option<&Value>) -> Result<Reply, ProtocolError> {
    let params = parse(&schemas::named("v4/conversation/rowsRange"), params)?;
    let limit = params["limit"].as_f64().unwrap_or(0.0);
    if !(1.0..=ROWS_RANGE_MAX).contains(&limit) {
        let issue = zod::custom(&["limit"], "limit must be between 1 and 200");
        return Err(ProtocolError::internal(
            "ZodError",
            serde_json::to_string_pretty(&[issue]).expect("issues serialize"),
            None,
        ));
    }
    let session_id = params["sessionId"].as_str().unwrap_or_default();
    let mut state = server.state();
    let resident = state.resident(session_id)?;
    let before = params["beforeRowId"].as_f64().map(|before| before as u64);
    Ok(resident.publisher.rows_range(before, limit as usize, resident.revision).into())
}

/// Subscription ids as the Agent hands them out: `sub_<uuid>`.
fn new_subscription_id() -> String {
    format!("sub_{}", uuid::Uuid::new_v4().simple())
}
