//! The shape of a result: its structure with every string and number blanked. Redaction may
//! change text but should not change shape; where it does, the recording says so.

use serde_json::{Map, Value};

/// The shape of a result: its structure with every string and number blanked and
/// content-like keys merged. Redaction may change text but should not change shape; where it
/// does, the recording says so.
pub fn shape(value: &Value) -> Value {
    match value {
        Value::String(_) => Value::from("s"),
        Value::Number(_) => Value::from(0),
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        // Bytes are written as text when they are UTF-8, else as `{"base64": …}`; redaction
        // can turn one into the other (a length prefix of 128 or more is not UTF-8).
        Value::Object(map) if map.len() == 1 && map.get("base64").is_some_and(Value::is_string) => {
            Value::from("s")
        }
        Value::Object(map) => {
            let mut shaped = Map::new();
            // Content keys (question texts, redacted keys) are interchangeable: compare their
            // values as a sorted list.
            let mut content: Vec<Value> = Vec::new();
            for (key, item) in map {
                let is_content = key.starts_with("redacted-")
                    || !key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
                if is_content {
                    content.push(shape(item));
                } else {
                    shaped.insert(key.clone(), shape(item));
                }
            }
            if !content.is_empty() {
                content.sort_by_key(Value::to_string);
                shaped.insert("*".to_string(), Value::Array(content));
            }
            Value::Object(shaped)
        }
        Value::Bool(_) | Value::Null => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shapes_ignore_text_but_not_structure() {
        let a = json!([{"update": {"text": "one", "n": 1, "ok": true}}]);
        let b = json!([{"update": {"text": "two", "n": 2, "ok": true}}]);
        let c = json!([{"update": {"text": {"parsed": 1}, "n": 2, "ok": true}}]);
        assert_eq!(shape(&a), shape(&b));
        assert_ne!(shape(&a), shape(&c));
        assert_eq!(shape(&json!({"a b": 1})), shape(&json!({"redacted-1": 2})));
        let live = json!({"Which crates?": ["a", "b"], "Which runner?": ["c"]});
        let redacted = json!({"redacted-1": ["c"], "redacted-2": ["a", "b"]});
        assert_eq!(shape(&live), shape(&redacted));
    }
}
