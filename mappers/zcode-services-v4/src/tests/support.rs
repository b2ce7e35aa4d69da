//! The Server's side of the wire, for tests: hello lines, IPC messages, V4 wire frames, and
//! reading back what the mapper wrote.

use serde_json::{Value, json};
use zcode_contract::{
    Inbound, NativeData, NativeReply, NativeRequest, Outgoing, ReplyBody, SessionInput, Step,
};

use crate::ipc::message::{Response, decode_request, encode_response, unframe};
use crate::ipc::value::IpcValue;
use zcode_v4::codec::{crc32_hex, encode_base64};

pub const HELLO: &str =
    r#"{"type":"zcode-hello","version":"3.14.3","platform":"linux","arch":"x64","pid":4242}"#;

pub fn hello_line() -> Vec<u8> {
    format!("{HELLO}\n").into_bytes()
}

pub fn initialize() -> Vec<u8> {
    encode_response(&Response::Initialize)
}

pub fn success(id: u64, body: &Value) -> Vec<u8> {
    encode_response(&Response::Success { id, body: IpcValue::json(body.to_string()) })
}

pub fn event(id: u64, body: &Value) -> Vec<u8> {
    encode_response(&Response::Event { id, body: IpcValue::json(body.to_string()) })
}

/// An IPC value as readable JSON (ints, strings, arrays; JSON parsed; undefined is null).
pub fn readable(value: IpcValue) -> Value {
    match value {
        IpcValue::Undefined => Value::Null,
        IpcValue::String(text) => json!(text),
        IpcValue::Int(int) => json!(int),
        IpcValue::Json(text) => serde_json::from_str(&text).unwrap_or(json!(text)),
        IpcValue::Array(items) => Value::Array(items.into_iter().map(readable).collect()),
        IpcValue::Bytes { bytes, .. } => json!({"bytes": encode_base64(&bytes)}),
    }
}

/// `(header, body)` of a request the mapper wrote.
pub fn request(request: &NativeRequest) -> (Value, Value) {
    let (header, body) = decode_request(&unframe(&request.bytes).unwrap()).unwrap();
    (readable(header), readable(body))
}

/// The method and the single argument of a call.
pub fn call(request: &NativeRequest) -> (String, Value) {
    let (header, body) = self::request(request);
    assert_eq!(header[0], 100, "a call: {header}");
    assert_eq!(header[1], request.id);
    (header[3].as_str().unwrap().to_string(), body[0].clone())
}

pub fn wait(step: Step) -> Outgoing {
    match step {
        Step::Wait(outgoing) => outgoing,
        Step::Done(done) => panic!("expected a wait, got {done:?}"),
    }
}

pub fn done(step: Step) -> (Value, Vec<Value>) {
    match step {
        Step::Done(Ok(result)) => (
            serde_json::from_str(&result.response).unwrap(),
            result.updates.iter().map(|u| serde_json::from_str(u).unwrap()).collect(),
        ),
        other => panic!("expected a result, got {other:?}"),
    }
}

pub fn reply(id: u64, body: Value) -> NativeReply {
    NativeReply { id, body: ReplyBody::Ok(NativeData::Text(body.to_string())) }
}

/// What the core reads from the Server's stdout at a time.
pub const READ: usize = 64 * 1024;

/// The session's input from what a push made, as the core routes it: every event (a large
/// one comes in pieces) and nothing else.
pub fn session_input(inbound: Vec<Inbound>) -> Vec<SessionInput> {
    inbound
        .into_iter()
        .map(|inbound| match inbound {
            Inbound::Event(event) => SessionInput::Event(event.payload),
            other => panic!("only events: {other:?}"),
        })
        .collect()
}

pub fn frame_input(wire: &Value) -> SessionInput {
    SessionInput::Event(NativeData::Text(wire.to_string()))
}

/// A complete wire frame around a logical frame.
pub fn complete(ordinal: u64, delivery: &str, sub: &str, session: &str, logical: Value) -> Value {
    json!({"wireVersion": 3, "kind": "complete", "deliveryKind": delivery, "logicalFrameId": format!("lf-{ordinal}"),
           "logicalFrameOrdinal": ordinal, "topic": format!("conversation/{session}"), "subscriptionId": sub, "frame": logical})
}

/// The fragments of a logical frame, `pieces` of them.
pub fn fragments(
    ordinal: u64,
    sub: &str,
    session: &str,
    logical: &Value,
    pieces: usize,
) -> Vec<Value> {
    let bytes = logical.to_string().into_bytes();
    let size = bytes.len().div_ceil(pieces);
    let count = bytes.chunks(size).count();
    bytes
        .chunks(size)
        .enumerate()
        .map(|(index, chunk)| {
            json!({"wireVersion": 3, "kind": "fragment", "deliveryKind": "online", "logicalFrameId": format!("lf-{ordinal}"),
                   "logicalFrameOrdinal": ordinal, "topic": format!("conversation/{session}"), "subscriptionId": sub,
                   "fragmentIndex": index, "fragmentCount": count, "logicalBytes": bytes.len(),
                   "checksum": {"algorithm": "crc32", "value": crc32_hex(&bytes)}, "dataBase64": encode_base64(chunk)})
        })
        .collect()
}

pub fn snapshot_frame(session: &str, sub: &str, snapshot: &Value) -> Value {
    let seq = snapshot["seq"].as_u64().unwrap();
    json!({"topic": format!("conversation/{session}"), "subscriptionId": sub, "fromSeq": 0, "toSeq": seq, "sentAt": 1_760_000_000_000u64,
           "payload": {"kind": "snapshot", "snapshot": snapshot}})
}

pub fn deltas_frame(session: &str, sub: &str, from: u64, to: u64, deltas: Value) -> Value {
    json!({"topic": format!("conversation/{session}"), "subscriptionId": sub, "fromSeq": from, "toSeq": to, "sentAt": 1_760_000_000_500u64,
           "payload": {"kind": "deltas", "deltas": deltas}})
}

/// The op that appends the user's prompt (row 11) of the turn the prompt `command_id` started.
pub fn prompt_appended(command_id: &str) -> Value {
    let prompt = json!({"origin": "realUser", "text": "x", "sourceCommandId": command_id});
    json!({"op": "row.appended", "row": row(11, "userInput", prompt)})
}

/// A conversation row.
pub fn row(id: u64, kind: &str, fields: Value) -> Value {
    let mut row = json!({"rowId": id, "turnId": "turn-1", "createdAt": 1_760_000_000_000u64, "createdAtSeq": id, "kind": kind});
    for (key, value) in fields.as_object().unwrap() {
        row[key] = value.clone();
    }
    row
}

/// The session snapshot `createSession` / `resumeSession` return.
pub fn session_snapshot(session: &str) -> Value {
    json!({
        "session": {"sessionId": session, "status": "idle", "workspace": {"workspacePath": "/w"}},
        "settings": {
            "model": {"current": {"providerId": "zai", "modelId": "glm-5", "options": {"reasoningLevel": "high"}}, "available": []},
            "thoughtLevel": {"enabled": true, "current": "high", "available": [{"value": "low", "label": "Low"}, {"value": "high", "label": "High"}]},
            "mode": {"current": "build"}
        },
        "slashCommands": [{"name": "compact", "description": "Compact the conversation"}]
    })
}

/// A draft snapshot: the Paseo plugin's `test/fixtures/v4-draft.json` @ fc66078d, with the
/// session id and epoch given.
pub fn draft(session_id: &str, seq: u64) -> Value {
    let mut snapshot: Value =
        serde_json::from_str(include_str!("../../traces/fixtures/v4-draft.json")).unwrap();
    snapshot["sessionId"] = json!(session_id);
    snapshot["seq"] = json!(seq);
    snapshot
}

/// A V4 snapshot of `session` at `seq` (the plugin's draft, with config and rows set).
pub fn snapshot(session: &str, seq: u64, rows: Value) -> Value {
    let mut snapshot = draft(session, seq);
    snapshot["config"] = json!({"provider": "zai", "model": "glm-5", "thought": "high", "thoughtLevels": ["low", "high"],
                                "followupMode": "queue", "mode": "build", "planEnabled": false});
    let count = rows.as_array().unwrap().len();
    let first = rows.as_array().unwrap().first().map(|r| r["rowId"].clone()).unwrap_or(Value::Null);
    snapshot["rows"] = json!({"window": rows, "totalCount": count, "firstRowId": first});
    snapshot
}

/// `control` of a running turn.
pub fn running_control() -> Value {
    json!({"phase": "running", "sessionEnded": false, "canStop": true, "stopState": "stoppable", "stopTargetKind": "assistant",
           "activeWorks": [{"kind": "primaryTurn", "foregroundExecutionId": "exec-1", "startedAt": 1}], "lastError": null, "apiRetry": null})
}

pub fn idle_control() -> Value {
    json!({"phase": "completedSuccess", "sessionEnded": true, "canStop": false, "stopState": "idle", "stopTargetKind": "unknown",
           "activeWorks": [], "lastError": null, "apiRetry": null})
}
