//! Every ACP object the golden traces show the mapper emitting is valid ACP, without losing a
//! field: parsed by the schema crate the core validates with, serialised again, and compared
//! (the check of `zcode-host-common/src/acp_check.rs`).

use agent_client_protocol_schema::v1 as acp;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn survives<T: DeserializeOwned + Serialize>(value: &Value, what: &str) {
    let typed: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("{what} is not valid ACP: {e}\n{value:#}"));
    let again = serde_json::to_value(&typed).expect("serialise");
    if let Err(path) = contained(value, &again, String::new()) {
        panic!("{what} loses `{path}` in the ACP schema\nemitted: {value:#}\nparsed: {again:#}");
    }
}

fn skipped_as_default(key: &str, value: &Value) -> bool {
    *value == json!([])
        || (key == "status" && *value == json!("pending"))
        || (key == "kind" && *value == json!("other"))
}

fn contained(original: &Value, parsed: &Value, path: String) -> Result<(), String> {
    match (original, parsed) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                match b.get(key) {
                    Some(inner) => contained(value, inner, format!("{path}.{key}"))?,
                    None if skipped_as_default(key, value) => {}
                    None => return Err(format!("{path}.{key}")),
                }
            }
            Ok(())
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                contained(x, y, format!("{path}[{index}]"))?;
            }
            Ok(())
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => Ok(()),
        (a, b) if a == b => Ok(()),
        _ => Err(path),
    }
}

fn with_session(value: &Value) -> Value {
    let mut value = value.clone();
    value["sessionId"] = json!("session-1");
    value
}

/// Checks the ACP objects inside one expectation; returns how many were checked.
fn check(value: &Value, call: &str, op: Option<&str>) -> usize {
    let mut checked = 0;
    match value {
        Value::Object(map) => {
            if map.contains_key("sessionUpdate") {
                survives::<acp::SessionUpdate>(value, "session update");
                return 1;
            }
            if let Some(Value::Object(permission)) = map.get("permission") {
                survives::<acp::RequestPermissionRequest>(
                    &with_session(&permission["request"]),
                    "permission request",
                );
                checked += 1;
            }
            if let Some(form) = map.get("elicitation") {
                survives::<acp::CreateElicitationRequest>(
                    &with_session(form),
                    "elicitation request",
                );
                checked += 1;
            }
            if let Some(response) =
                map.get("response").filter(|_| call == "session.resume" || call == "session.start")
            {
                checked += match (op, response.get("configOptions"), response.get("modes")) {
                    (Some("create"), _, _) if response.get("sessionId").is_some() => {
                        survives::<acp::NewSessionResponse>(response, "session/new response");
                        1
                    }
                    (Some("load"), _, Some(_)) => {
                        survives::<acp::LoadSessionResponse>(response, "session/load response");
                        1
                    }
                    (_, Some(_), None) => {
                        survives::<acp::SetSessionConfigOptionResponse>(
                            response,
                            "set_config_option response",
                        );
                        1
                    }
                    (Some("finish-turn"), _, _) => {
                        survives::<acp::Usage>(response, "usage");
                        1
                    }
                    _ => 0,
                };
            }
            for (key, inner) in map {
                if key != "permission" && key != "elicitation" && key != "response" {
                    checked += check(inner, call, op);
                }
            }
        }
        Value::Array(items) => {
            checked += items.iter().map(|item| check(item, call, op)).sum::<usize>()
        }
        _ => {}
    }
    checked
}

#[test]
fn the_traces_emit_valid_acp() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "jsonl") {
            continue;
        }
        // The op a session op line belongs to, carried to the lines that resume it.
        let mut ops: Vec<(u64, String)> = Vec::new();
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let line: Value = serde_json::from_str(line).unwrap();
            let call = line["call"].as_str().unwrap();
            if call == "session.start" {
                let name = match &line["op"] {
                    Value::String(name) => name.clone(),
                    Value::Object(map) => map.keys().next().unwrap().clone(),
                    _ => String::new(),
                };
                ops.push((line["opId"].as_u64().unwrap(), name));
            }
            let op = line["opId"]
                .as_u64()
                .and_then(|id| ops.iter().rev().find(|(op, _)| *op == id))
                .map(|(_, n)| n.as_str());
            if let Some(expect) = line.get("expect") {
                checked += check(expect, call, op);
            }
        }
    }
    assert!(checked > 40, "checked only {checked} ACP objects");
}

#[test]
fn the_check_notices_invalid_or_lost_fields() {
    let good =
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}});
    assert_eq!(check(&json!({"actions": [{"update": good}]}), "session.map", None), 1);
    let misnamed = json!({"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}, "message_id": "m"}});
    assert!(std::panic::catch_unwind(|| check(&misnamed, "session.map", None)).is_err());
    let bad_status = json!({"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "cancelled"}});
    assert!(std::panic::catch_unwind(|| check(&bad_status, "session.map", None)).is_err());
}
