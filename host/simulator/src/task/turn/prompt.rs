//! The user's side of a turn: prompt attachments, the persisted user message and the token
//! estimate the simulated usage is built from.

use serde_json::{Value, json};

use crate::common::turn::estimate_tokens;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

/// Attachments converted to message parts, and what they cost in input tokens.
pub struct Attachments {
    pub parts: Vec<Value>,
    pub tokens: u64,
}

/// Validates `NativeAttachment`s (reference §4.2) and turns them into `file` parts.
pub fn attachments(value: Option<&Value>) -> Result<Attachments, String> {
    let items = match value {
        None => return Ok(Attachments { parts: Vec::new(), tokens: 0 }),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("sendPrompt: `attachments` must be an array".into()),
    };
    let mut parts = Vec::new();
    let mut tokens = 0;
    for (index, item) in items.iter().enumerate() {
        // Inline bytes must have arrived whole (size, MIME type by signature, name).
        if item.get("dataBase64").is_some() {
            crate::common::attachments::receive_one(index, item)
                .map_err(|problem| format!("sendPrompt: {problem}"))?;
        }
        let text_field = |key: &str| item.get(key).and_then(Value::as_str);
        let kind = text_field("kind").filter(|kind| matches!(*kind, "image" | "audio" | "file"));
        let (Some(_kind), Some(filename), Some(mime)) =
            (kind, text_field("filename"), text_field("mimeType"))
        else {
            return Err(
                "sendPrompt: each attachment needs kind (image|audio|file), filename and mimeType"
                    .into(),
            );
        };
        let url = if let Some(path) = text_field("localPath") {
            format!("file://{path}")
        } else if let Some(data) = text_field("dataBase64") {
            format!("data:{mime};base64,{data}")
        } else if let Some(text) = text_field("textContent") {
            format!("data:{mime};base64,{}", BASE64.encode(text.as_bytes()))
        } else {
            return Err(format!(
                "sendPrompt: attachment {filename} has no localPath, dataBase64 or textContent"
            ));
        };
        tokens += match (text_field("textContent"), item.get("sizeBytes").and_then(Value::as_u64)) {
            (Some(text), _) => estimate_tokens(text),
            (None, Some(size)) => size.div_ceil(4),
            (None, None) => 0,
        };
        parts.push(json!({"type": "file", "url": url, "filename": filename, "mime": mime}));
    }
    Ok(Attachments { parts, tokens })
}

/// The persisted user message of a prompt.
pub fn user_message(message_id: &str, content: &str, files: &[Value], created_at: u64) -> Value {
    let mut parts = Vec::new();
    if !content.is_empty() {
        parts.push(json!({"type": "text", "text": content}));
    }
    parts.extend(files.iter().cloned());
    let info = json!({"messageId": message_id, "role": "user", "createdAt": created_at});
    json!({"info": info, "parts": parts})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_attachments_to_file_parts() {
        let converted = attachments(Some(&json!([
            {"kind": "file", "filename": "a.rs", "mimeType": "text/x-rust", "localPath": "/w/a.rs", "sizeBytes": 40},
            {"kind": "file", "filename": "ctx.txt", "mimeType": "text/plain", "textContent": "hi"},
            {"kind": "image", "filename": "image.png", "mimeType": "image/png", "dataBase64": "iVBORw0KGgo="},
        ])))
        .unwrap();
        assert_eq!(converted.parts[0]["url"], "file:///w/a.rs");
        assert_eq!(converted.parts[1]["url"], "data:text/plain;base64,aGk=");
        assert_eq!(converted.parts[2]["mime"], "image/png");
        assert_eq!(converted.tokens, 10 + 1);
        assert!(
            attachments(Some(&json!([{"kind": "video", "filename": "x", "mimeType": "v"}])))
                .is_err()
        );
        assert!(attachments(Some(&json!({}))).is_err());
        let lying = attachments(Some(&json!([{"kind": "image", "filename": "a.jpg",
            "mimeType": "image/jpeg", "dataBase64": "iVBORw0KGgo="}])));
        assert_eq!(
            lying.err().unwrap(),
            "sendPrompt: attachment a.jpg: declared image/jpeg but the bytes are image/png"
        );
    }
}
