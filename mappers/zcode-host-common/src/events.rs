//! Native dynamic events → actions. The event union is strict: an unknown type, a missing
//! field or an extra field is a protocol error, never silence.

use serde_json::{Value, json};
use zcode_contract::{Action, ErrorKind, MapperError, StopReason, Terminal};

use crate::interactions;
use crate::json::{Fields, error, parse, protocol};
use crate::settings::{Publisher, Snapshot, SnapshotRules, session_info_update};
use crate::state::{State, TurnPhase, update};

/// Session event types that mean nothing for ACP.
const IGNORED_SESSION_EVENTS: [&str; 6] = [
    "session.updated",
    "streamRecovery.updated",
    "turn.started",
    "permission.requested",
    "permission.resolved",
    "checkpoint.created",
];

/// Session event types that belong to a turn; outside one they are stale (backlog replayed
/// after a resume, or stragglers after the terminal event) and are dropped.
const TURN_EVENTS: [&str; 4] = ["model.streaming", "tool.updated", "turn.completed", "turn.failed"];
/// The events that end a native turn.
const TURN_ENDS: [&str; 2] = ["turn.completed", "turn.failed"];

/// How a generation reads snapshots and publishes what they say.
pub struct Reader<'a> {
    pub rules: &'a SnapshotRules,
    pub publisher: &'a mut dyn Publisher,
}

/// Maps one event. A protocol break inside a running turn ends the turn broken; outside a turn
/// it is returned as an error.
pub fn map_event(
    state: &mut State,
    reader: Reader<'_>,
    payload: &str,
) -> Result<Vec<Action>, MapperError> {
    match dynamic_event(state, reader, payload) {
        Err(problem) if state.running() => Ok(state.break_turn(problem)),
        other => other,
    }
}

fn dynamic_event(
    state: &mut State,
    reader: Reader<'_>,
    payload: &str,
) -> Result<Vec<Action>, MapperError> {
    let event = parse(payload, ErrorKind::Protocol, "Native event")?;
    let fields = Fields::native(&event, "Native event")?;
    let event_type = fields.str("type")?;
    let body = |key: &str| -> Result<&Value, MapperError> {
        fields.only(&["type", key])?;
        fields.value(key)
    };
    match event_type {
        "snapshot" => snapshot(state, reader, body("snapshot")?),
        "state.updated" => {
            body("notification")?;
            Ok(vec![Action::Ignore("state.updated".to_string())])
        }
        "userInput.response" => {
            fields.only(&["type", "requestId", "response"])?;
            fields.non_empty_str("requestId")?;
            fields.value("response")?;
            Ok(vec![Action::Ignore("userInput.response".to_string())])
        }
        "permission.request" => interactions::permission_request(state, body("request")?),
        "userInput.request" => interactions::user_input_request(state, body("request")?),
        "providerRuntimeHeaders.request" => {
            interactions::provider_headers_request(state, body("request")?)
        }
        "session.event" => session_event(state, body("event")?),
        other => Err(protocol(format!("Unsupported ZCode dynamic event: {other}"))),
    }
}

/// A new snapshot replaces the cached one; during a turn the client hears about it.
fn snapshot(
    state: &mut State,
    reader: Reader<'_>,
    snapshot: &Value,
) -> Result<Vec<Action>, MapperError> {
    state.settings.replace(Snapshot::parse(snapshot, "snapshot event", reader.rules)?);
    if !state.running() {
        return Ok(vec![Action::Ignore("snapshot (cached outside a turn)".to_string())]);
    }
    let plan_operations = state.plan_operations();
    let updates = state.settings.metadata_updates(plan_operations, reader.publisher);
    Ok(updates.into_iter().map(Action::Update).collect())
}

fn session_event(state: &mut State, event: &Value) -> Result<Vec<Action>, MapperError> {
    let fields = Fields::native(event, "session.event")?;
    fields.only(&[
        "eventId",
        "sessionId",
        "turnId",
        "seq",
        "traceId",
        "timestamp",
        "deliveryKind",
        "type",
        "payload",
    ])?;
    fields.non_empty_str("eventId")?;
    fields.str("sessionId")?;
    fields.opt_str("turnId")?;
    fields.opt_str("traceId")?;
    let seq = fields.u64("seq")?;
    let timestamp = fields
        .opt_f64("timestamp")?
        .ok_or_else(|| protocol("session.event: missing field `timestamp`"))?;
    fields.str("deliveryKind")?;
    let event_type = fields.non_empty_str("type")?;
    let payload = fields.object("payload", "session.event payload")?;

    match state.last_seq {
        // Delivered twice (a backlog replayed after a resubscribe): already handled.
        Some(last) if seq <= last => {
            return Ok(vec![Action::Ignore(format!("{event_type} (seq {seq} already seen)"))]);
        }
        // A lost event mid-turn would silently drop text or a tool step: fail closed.
        Some(last) if seq > last + 1 && state.running() => {
            state.last_seq = Some(seq);
            let gap = protocol(format!(
                "ZCode session events out of sequence: expected seq {}, got {seq}",
                last + 1
            ));
            if TURN_ENDS.contains(&event_type) {
                return Ok(state.break_ended_turn(gap));
            }
            return Err(gap);
        }
        _ => state.last_seq = Some(seq),
    }
    if IGNORED_SESSION_EVENTS.contains(&event_type) {
        return Ok(vec![Action::Ignore(event_type.to_string())]);
    }
    if TURN_EVENTS.contains(&event_type) && !state.running() {
        if state.phase == TurnPhase::Broken && TURN_ENDS.contains(&event_type) {
            return Ok(state.end_broken_turn());
        }
        return Ok(vec![Action::Ignore(format!("{event_type} outside a turn"))]);
    }
    match event_type {
        "model.streaming" => streaming(state, payload),
        "tool.updated" => tool_updated(state, payload),
        "turn.completed" => Ok(turn_completed(state, payload)),
        "turn.failed" => Ok(turn_failed(state, payload)),
        "session.titleUpdated" => match payload.get("title") {
            Some(Value::String(title)) => {
                Ok(session_info_update(Some(title), Some(timestamp)).iter().map(update).collect())
            }
            _ => Ok(vec![Action::Ignore("session.titleUpdated without a title".to_string())]),
        },
        other => Err(protocol(format!("Unsupported ZCode event: {other}"))),
    }
}

fn tool_call_id<'a>(
    payload: &Fields<'a>,
    missing: impl FnOnce() -> String,
) -> Result<&'a str, MapperError> {
    match payload.opt_str("toolCallId")? {
        Some(id) if !id.is_empty() => Ok(id),
        _ => Err(protocol(missing())),
    }
}

fn streaming(state: &mut State, payload: Fields<'_>) -> Result<Vec<Action>, MapperError> {
    let kind = payload.str("kind")?;
    let chunk_kind = match kind {
        "text_delta" => Some("agent_message_chunk"),
        "reasoning_delta" => Some("agent_thought_chunk"),
        "tool_input_start" | "tool_input_delta" | "tool_input_end" | "tool_call" => None,
        other => return Err(protocol(format!("Unsupported model stream kind: {other}"))),
    };
    if let Some(chunk_kind) = chunk_kind {
        let delta = payload.opt_str("delta")?.unwrap_or_default();
        if delta.is_empty() {
            return Ok(Vec::new());
        }
        let mut chunk =
            json!({"sessionUpdate": chunk_kind, "content": {"type": "text", "text": delta}});
        if let Some(message_id) = payload.opt_str("assistantMessageId")? {
            chunk["messageId"] = json!(message_id);
        }
        return Ok(vec![update(&chunk)]);
    }
    let id = tool_call_id(&payload, || format!("Missing toolCallId for stream kind: {kind}"))?;
    let name = payload.opt_str("toolName")?;
    let tools = &mut state.tools;
    match kind {
        "tool_input_start" => tools.input_started(id, name),
        "tool_input_delta" => tools.input_delta(id, payload.opt_str("delta")?.unwrap_or_default()),
        "tool_call" => {
            tools.set_input(id, name, payload.get("input"));
            return Ok(tools.announce(id, name, &state.workspace).iter().map(update).collect());
        }
        _ => {}
    }
    Ok(Vec::new())
}

fn tool_updated(state: &mut State, payload: Fields<'_>) -> Result<Vec<Action>, MapperError> {
    let kind = payload.str("kind")?;
    if kind == "batch" {
        return Ok(vec![Action::Ignore("tool.updated batch".to_string())]);
    }
    if !matches!(kind, "scheduled" | "started" | "progress" | "result" | "error") {
        return Err(protocol(format!("Unsupported tool update kind: {kind}")));
    }
    let id = tool_call_id(&payload, || "Tool update has no ID".to_string())?;
    let name = payload.opt_str("toolName")?;
    let workspace = state.workspace.clone();
    let tools = &mut state.tools;
    if kind == "scheduled" {
        tools.set_input(id, name, payload.get("input"));
    }
    let mut updates: Vec<Value> = tools.announce(id, name, &workspace).into_iter().collect();
    match kind {
        "started" | "progress" => updates.extend(tools.progressed(id, kind)?),
        "result" => updates.push(tools.completed(
            id,
            payload.get("result").unwrap_or(&Value::Null),
            &workspace,
        )),
        "error" => updates.push(tools.failed(id, payload.get("error"))),
        _ => {}
    }
    Ok(updates.iter().map(update).collect())
}

fn turn_completed(state: &mut State, payload: Fields<'_>) -> Vec<Action> {
    if state.cancelled {
        return state.end_turn(Terminal::Stop(StopReason::Cancelled));
    }
    let result_type = payload.get("resultType").and_then(Value::as_str);
    let reason = match result_type {
        Some("success") => StopReason::EndTurn,
        Some("max_tokens" | "token_limit") => StopReason::MaxTokens,
        Some("max_turn_requests" | "request_limit") => StopReason::MaxTurnRequests,
        Some("refusal") => StopReason::Refusal,
        Some("cancelled" | "interrupted" | "stopped") => StopReason::Cancelled,
        other => {
            let shown = other.map_or_else(|| "<missing>".to_string(), str::to_string);
            return state
                .break_ended_turn(protocol(format!("Unsupported ZCode terminal result: {shown}")));
        }
    };
    state.end_turn(Terminal::Stop(reason))
}

fn turn_failed(state: &mut State, payload: Fields<'_>) -> Vec<Action> {
    if state.cancelled {
        return state.end_turn(Terminal::Stop(StopReason::Cancelled));
    }
    let message = payload
        .get("error")
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .unwrap_or("ZCode turn failed");
    state.end_turn(Terminal::Failed(error(ErrorKind::Native, message)))
}
