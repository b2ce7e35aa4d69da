//! Realistic starting points for mutation: every native event payload and every host stdout
//! frame the mapper's golden traces contain. Read at run time, so traces added or renamed by
//! the mapper's authors are picked up without touching the fuzzers.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{Value, json};

fn traces_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mappers/zcode-task-v1/traces")
}

/// Every JSON line of every trace file.
fn trace_lines() -> Vec<Value> {
    let Ok(entries) = std::fs::read_dir(traces_dir()) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    files
        .iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .flat_map(|text| {
            text.lines()
                .filter(|line| line.trim_start().starts_with('{'))
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Native events of the traces' `session.map` inputs (`{"event": <payload>}`), plus a few
/// written here so the set is never empty.
pub fn event_templates() -> &'static [Value] {
    static TEMPLATES: OnceLock<Vec<Value>> = OnceLock::new();
    TEMPLATES.get_or_init(|| {
        let mut templates: Vec<Value> = trace_lines()
            .into_iter()
            .filter(|line| line["call"] == "session.map")
            .flat_map(|line| line["inputs"].as_array().cloned().unwrap_or_default())
            .map(|input| input["event"].clone())
            .filter(Value::is_object)
            .collect();
        templates.extend(builtin_events());
        templates.sort_by_key(Value::to_string);
        templates.dedup();
        templates
    })
}

/// Raw host stdout lines (`connection.push` bytes of the traces), plus envelope frames built
/// from the event templates.
pub fn frame_templates() -> &'static [Vec<u8>] {
    static TEMPLATES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    TEMPLATES.get_or_init(|| {
        // Pushed byte strings may hold several lines or half of one: keep each piece.
        let mut frames: Vec<Vec<u8>> = trace_lines()
            .into_iter()
            .filter(|line| line["call"] == "connection.push")
            .filter_map(|line| line["bytes"].as_str().map(str::to_string))
            .flat_map(|text| {
                text.split('\n').map(|piece| piece.as_bytes().to_vec()).collect::<Vec<_>>()
            })
            .filter(|piece| !piece.is_empty())
            .collect();
        for event in event_templates().iter().take(40) {
            let frame = json!({"method": "event",
                               "params": {"subscriptionId": "sub-1", "event": event}});
            frames.push(frame.to_string().into_bytes());
        }
        frames.push(br#"{"id":1,"result":{"subscribed":true}}"#.to_vec());
        frames
            .push(br#"{"id":2,"error":{"code":-32000,"message":"Session not found: x"}}"#.to_vec());
        frames.push(br#"{"id":null,"error":{"code":-32700,"message":"Invalid JSON"}}"#.to_vec());
        frames.sort();
        frames.dedup();
        frames
    })
}

fn session_event(seq: u64, kind: &str, payload: Value) -> Value {
    json!({"type": "session.event", "event": {
        "eventId": format!("ses-7f3a-{seq}"), "sessionId": "ses-7f3a", "turnId": "turn-1",
        "seq": seq, "timestamp": 1764500000000u64, "deliveryKind": "desktop-continuous",
        "type": kind, "payload": payload}})
}

fn builtin_events() -> Vec<Value> {
    vec![
        session_event(1, "turn.started", json!({"inputId": "in-1"})),
        session_event(
            2,
            "model.streaming",
            json!({"kind": "text_delta", "delta": "Hello", "assistantMessageId": "m1"}),
        ),
        session_event(
            3,
            "model.streaming",
            json!({"kind": "reasoning_delta", "delta": "Hm", "assistantMessageId": "m1"}),
        ),
        session_event(
            4,
            "model.streaming",
            json!({"kind": "tool_call", "toolCallId": "tool-9", "toolName": "Read",
                   "input": {"file_path": "README.md"}}),
        ),
        session_event(
            5,
            "tool.updated",
            json!({"kind": "result", "toolCallId": "tool-9", "toolName": "Read",
                   "result": {"content": "text"}}),
        ),
        session_event(6, "turn.completed", json!({"resultType": "success"})),
        session_event(7, "turn.failed", json!({"error": {"message": "boom"}})),
        json!({"type": "state.updated", "notification": {"status": "idle"}}),
    ]
}
