//! Inline prompt attachments, as the Desktop Agent's `session/send` (reference APP §4.1) and the
//! 3.11/3.12 host service's `sendPrompt` take them: `{kind: image|audio|file, filename, mimeType,
//! sizeBytes?, dataBase64? | localPath? | textContent?}`. The simulator checks that each arrived
//! whole, so a test that passes proves
//! the bytes, the MIME type and the name made it through the agent unchanged:
//! - the base64 decodes, and `sizeBytes` (when given) is the decoded length;
//! - the bytes are what the MIME type says, for the types the simulator can recognise (PNG,
//!   JPEG, GIF, WebP, WAV, MP3, PDF); an `image/*` or `audio/*` it cannot recognise is refused;
//! - the name is not empty.
//!
//! A send whose attachment fails a check is refused with invalid params naming the attachment
//! and the check. What arrived is recorded in the user message as `file` parts (a `data:` URL,
//! or the `file:` URL of a local path), which a load replays.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD as BASE64};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What an accepted attachment leaves in the persisted user message.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// The `file` part of the user message.
    pub part: Value,
    /// `name (mime, N bytes, sha256:…)`, for the simulator's log.
    pub summary: String,
}

/// The attachments of `session/send` params, checked; an error says which and why.
pub fn receive(params: &Value) -> Result<Vec<Received>, String> {
    let items = match params.get("attachments") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("session/send: `attachments` must be an array".into()),
    };
    items.iter().enumerate().map(|(index, item)| receive_one(index, item)).collect()
}

/// One attachment (the `index`-th), checked.
pub fn receive_one(index: usize, item: &Value) -> Result<Received, String> {
    let field = |key: &str| item.get(key).and_then(Value::as_str);
    let kind = field("kind").unwrap_or_default();
    if !matches!(kind, "image" | "audio" | "file") {
        return Err(format!("attachments[{index}]: kind must be image, audio or file"));
    }
    let name = field("filename").filter(|name| !name.is_empty());
    let name = name.ok_or_else(|| format!("attachments[{index}]: filename is missing"))?;
    let mime = field("mimeType").filter(|mime| !mime.is_empty());
    let mime = mime.ok_or_else(|| format!("attachment {name}: mimeType is missing"))?;
    let (bytes, url) = if let Some(data) = field("dataBase64") {
        let bytes = decode(data)
            .ok_or_else(|| format!("attachment {name}: dataBase64 is not valid base64"))?;
        (bytes, format!("data:{mime};base64,{data}"))
    } else if let Some(text) = field("textContent") {
        (text.as_bytes().to_vec(), format!("data:{mime};base64,{}", encode(text.as_bytes())))
    } else if let Some(path) = field("localPath") {
        let bytes = std::fs::read(path)
            .map_err(|e| format!("attachment {name}: cannot read {path}: {e}"))?;
        (bytes, format!("file://{path}"))
    } else {
        return Err(format!("attachment {name} has no dataBase64, textContent or localPath"));
    };
    if let Some(size) = item.get("sizeBytes")
        && size.as_u64() != Some(bytes.len() as u64)
    {
        return Err(format!(
            "attachment {name}: sizeBytes {size} but {} bytes arrived",
            bytes.len()
        ));
    }
    if kind != "file" && !mime.starts_with(&format!("{kind}/")) {
        return Err(format!("attachment {name}: kind {kind} with MIME type {mime}"));
    }
    check_bytes(name, mime, &bytes)?;
    let sha = sha256_hex(&bytes);
    Ok(Received {
        part: json!({"type": "file", "url": url, "filename": name, "mime": mime}),
        summary: format!("{name} ({mime}, {} bytes, sha256:{sha})", bytes.len()),
    })
}

/// The bytes are what `mime` says, where their signature shows it; an `image/*` or `audio/*`
/// whose bytes show no known format is refused too.
pub fn check_bytes(name: &str, mime: &str, bytes: &[u8]) -> Result<(), String> {
    match (sniff(bytes), mime.starts_with("image/") || mime.starts_with("audio/")) {
        (Some(found), _) if found != mime => {
            Err(format!("attachment {name}: declared {mime} but the bytes are {found}"))
        }
        (None, true) => Err(format!("attachment {name}: the bytes are not {mime}")),
        _ => Ok(()),
    }
}

/// Lower-case hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The MIME type the bytes show, for the few formats with a clear signature.
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let starts = |prefix: &[u8]| bytes.starts_with(prefix);
    if starts(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if starts(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        Some("image/gif")
    } else if starts(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        Some("image/webp")
    } else if starts(b"RIFF") && bytes.get(8..12) == Some(b"WAVE") {
        Some("audio/wav")
    } else if starts(b"ID3") || starts(b"\xff\xfb") {
        Some("audio/mpeg")
    } else if starts(b"%PDF-") {
        Some("application/pdf")
    } else {
        None
    }
}

fn encode(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

/// Standard base64 with optional padding; `None` if it is not.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    LENIENT.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

    fn send(attachment: Value) -> Result<Vec<Received>, String> {
        receive(&json!({"sessionId": "s", "content": "", "attachments": [attachment]}))
    }

    #[test]
    fn takes_whole_attachments_and_records_them() {
        let received =
            send(json!({"kind": "image", "filename": "dot.png", "mimeType": "image/png",
            "sizeBytes": 70, "dataBase64": PNG}))
            .unwrap();
        assert_eq!(
            received[0].part,
            json!({"type": "file", "url": format!("data:image/png;base64,{PNG}"),
                "filename": "dot.png", "mime": "image/png"})
        );
        assert!(received[0].summary.starts_with("dot.png (image/png, 70 bytes, sha256:"));
        let text = send(json!({"kind": "file", "filename": "a.txt", "mimeType": "text/plain",
            "textContent": "hi"}))
        .unwrap();
        assert_eq!(text[0].part["url"], "data:text/plain;base64,aGk=");
        let blob = send(json!({"kind": "file", "filename": "x.bin",
            "mimeType": "application/octet-stream", "dataBase64": "AAE=", "sizeBytes": 2}));
        assert!(blob.is_ok());
        assert_eq!(receive(&json!({"sessionId": "s"})).unwrap(), Vec::new());
    }

    #[test]
    fn refuses_what_did_not_arrive_whole() {
        let refused = |attachment: Value| send(attachment).unwrap_err();
        let png = |extra: Value| {
            let mut item = json!({"kind": "image", "filename": "dot.png", "mimeType": "image/png",
                "dataBase64": PNG});
            item.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            item
        };
        assert!(refused(png(json!({"sizeBytes": 71}))).contains("sizeBytes 71 but 70 bytes"));
        assert!(refused(png(json!({"mimeType": "image/jpeg"}))).contains("bytes are image/png"));
        assert!(refused(png(json!({"dataBase64": &PNG[4..]}))).contains("not image/png"));
        assert!(refused(png(json!({"dataBase64": "%%%"}))).contains("not valid base64"));
        assert!(refused(png(json!({"filename": ""}))).contains("filename is missing"));
        assert!(refused(png(json!({"kind": "video"}))).contains("kind must be"));
        assert!(refused(png(json!({"kind": "audio"}))).contains("kind audio with MIME type"));
    }

    #[test]
    fn decodes_base64() {
        assert_eq!(decode("aGk="), Some(b"hi".to_vec()));
        assert_eq!(decode("aGVsbG8h"), Some(b"hello!".to_vec()));
        assert_eq!(decode("a"), None);
        assert_eq!(encode(&decode(PNG).unwrap()), PNG);
    }
}
