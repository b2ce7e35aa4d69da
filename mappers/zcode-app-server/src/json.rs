//! Small JSON helpers: errors of each kind, and reading native objects without panics.

use serde_json::Value;
use zcode_contract::{ErrorKind, MapperError};

pub fn error(kind: ErrorKind, message: impl Into<String>) -> MapperError {
    MapperError::new(kind, message)
}

pub fn protocol(message: impl Into<String>) -> MapperError {
    error(ErrorKind::Protocol, message)
}

pub fn invalid_params(message: impl Into<String>) -> MapperError {
    error(ErrorKind::InvalidParams, message)
}

pub fn internal(message: impl Into<String>) -> MapperError {
    error(ErrorKind::Internal, message)
}

pub fn native(message: impl Into<String>) -> MapperError {
    error(ErrorKind::Native, message)
}

/// Parses ACP parameters (the client's fault when malformed).
pub fn acp_params(text: &str) -> Result<Value, MapperError> {
    serde_json::from_str(text).map_err(|e| invalid_params(format!("Malformed parameters: {e}")))
}

/// Parses a native frame (ZCode's fault when malformed).
pub fn native_value(text: &str, what: &str) -> Result<Value, MapperError> {
    serde_json::from_str(text).map_err(|e| protocol(format!("{what} is not JSON: {e}")))
}

pub fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// A non-empty string member, or a protocol error naming it.
pub fn required_str<'a>(value: &'a Value, key: &str, what: &str) -> Result<&'a str, MapperError> {
    str_at(value, key)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| protocol(format!("{what}: `{key}` is missing")))
}

/// JSON text of a value (serde_json's map keeps insertion order; tests compare parsed JSON).
pub fn text(value: &Value) -> String {
    value.to_string()
}

/// One NDJSON line.
pub fn line(value: &Value) -> Vec<u8> {
    let mut bytes = value.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

/// An ACP text chunk (`agent_message_chunk`, `agent_thought_chunk`) written out directly: its
/// shape is fixed, and a turn sends it by the thousand. The same text as the tree would give
/// (members in the order it keeps, the text escaped by the same serializer).
pub fn text_chunk(kind: &str, delta: &str) -> String {
    let delta = serde_json::to_string(delta).unwrap_or_else(|_| "\"\"".to_string());
    let mut out = String::with_capacity(delta.len() + kind.len() + 64);
    out.push_str("{\"sessionUpdate\":\"");
    out.push_str(kind);
    out.push_str("\",\"content\":{\"type\":\"text\",\"text\":");
    out.push_str(&delta);
    out.push_str("}}");
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_text_chunk_is_the_text_its_tree_gives() {
        for delta in
            ["", "plain", "quote \" backslash \\ slash /", "\n\t\u{1}\u{7f}", "café 😀 \u{2028}"]
        {
            for kind in ["agent_message_chunk", "agent_thought_chunk"] {
                let tree =
                    json!({"sessionUpdate": kind, "content": {"type": "text", "text": delta}});
                assert_eq!(super::text_chunk(kind, delta), tree.to_string());
            }
        }
    }
}
