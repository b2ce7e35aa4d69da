//! The bridge's NDJSON envelope (reference §2.4–§3.2): how a stdin line is classified and how
//! results, errors and the invalid-JSON reply are framed. There is no `jsonrpc` member.

use serde_json::{Value, json};

/// Error code of every failed call, native or bridge-level.
pub const CALL_ERROR: i64 = -32000;
pub const PARSE_ERROR: i64 = -32700;

// One short-lived value per stdin line: boxing the request would buy nothing. (The variant is
// only "large" when another crate turns on serde_json's `preserve_order`.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq)]
pub enum Inbound {
    /// A message with a usable id. `method` and `params` are as found (possibly absent).
    Request { id: Value, method: Option<Value>, params: Value },
    /// The line is not JSON.
    InvalidJson,
    /// Valid JSON the bridge does not answer: blank, no usable id, not an object.
    Ignored,
}

/// Classifies one line (without its newline). Invalid UTF-8 is decoded lossily first, as a
/// Node readline would, so it usually ends up as invalid JSON.
pub fn classify(line: &[u8]) -> Inbound {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\r', '\n']);
    if text.trim().is_empty() {
        return Inbound::Ignored;
    }
    let Ok(message) = serde_json::from_str::<Value>(text) else {
        return Inbound::InvalidJson;
    };
    let Some(id) = message.get("id").and_then(usable_id) else {
        return Inbound::Ignored;
    };
    Inbound::Request {
        id,
        method: message.get("method").cloned(),
        params: message.get("params").cloned().unwrap_or(Value::Null),
    }
}

/// Integers and strings are ids; `2.0` is the integer 2 (JavaScript cannot tell them apart).
fn usable_id(id: &Value) -> Option<Value> {
    match id {
        Value::String(_) => Some(id.clone()),
        Value::Number(number) if number.is_i64() || number.is_u64() => Some(id.clone()),
        Value::Number(number) => {
            let float = number.as_f64()?;
            (float.fract() == 0.0 && float.abs() < 9.007_199_254_740_992e15)
                .then(|| json!(float as i64))
        }
        _ => None,
    }
}

pub fn result_frame(id: &Value, result: Value) -> Value {
    json!({"id": id, "result": result})
}

pub fn error_frame(id: &Value, message: &str) -> Value {
    json!({"id": id, "error": {"code": CALL_ERROR, "message": message}})
}

pub fn invalid_json_frame() -> Value {
    json!({"id": null, "error": {"code": PARSE_ERROR, "message": "Invalid JSON"}})
}

/// How JavaScript's template literals print a value (`undefined` when absent).
pub fn js_text(value: Option<&Value>) -> String {
    match value {
        None => "undefined".to_owned(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Object(_)) => "[object Object]".to_owned(),
        Some(Value::Array(items)) => {
            items.iter().map(|item| js_text(Some(item))).collect::<Vec<_>>().join(",")
        }
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_requests_by_id() {
        assert_eq!(
            classify(br#"{"id":7,"method":"__call","params":{"a":1}}"#),
            Inbound::Request {
                id: json!(7),
                method: Some(json!("__call")),
                params: json!({"a": 1})
            }
        );
        assert_eq!(
            classify(b"{\"id\":\"x\"}\r"),
            Inbound::Request { id: json!("x"), method: None, params: Value::Null }
        );
        assert!(
            matches!(classify(br#"{"id":2.0,"method":"m"}"#), Inbound::Request { id, .. } if id == json!(2))
        );
    }

    #[test]
    fn ignores_what_the_bridge_ignores() {
        for line in [
            &b"   "[..],
            b"",
            br#"{"method":"x"}"#,
            br#"{"id":1.5}"#,
            br#"{"id":null}"#,
            br#"{"id":[1]}"#,
            b"[1]",
            b"3",
        ] {
            assert_eq!(classify(line), Inbound::Ignored, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn rejects_non_json() {
        assert_eq!(classify(b"{nope"), Inbound::InvalidJson);
        assert_eq!(classify(b"{\"id\":1,\"method\":\"\xff\"}x"), Inbound::InvalidJson);
    }

    #[test]
    fn prints_values_like_javascript() {
        assert_eq!(js_text(None), "undefined");
        assert_eq!(js_text(Some(&json!("m"))), "m");
        assert_eq!(js_text(Some(&json!(5))), "5");
        assert_eq!(js_text(Some(&json!(null))), "null");
        assert_eq!(js_text(Some(&json!({}))), "[object Object]");
    }
}
