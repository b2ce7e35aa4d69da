//! ACP prompt content blocks → the native prompt: one text plus attachments. Nothing the client
//! sent is dropped: what cannot be represented is refused.

use serde_json::{Value, json};
use zcode_contract::MapperError;

use zcode_mapper_sdk::json::{Fields, invalid_params};
use zcode_mapper_sdk::media::{base64_decoded_len, mime_subtype};
use zcode_mapper_sdk::uri::{file_uri_path, is_absolute_path, uri_basename};

/// What `sendPrompt` carries besides the ids.
#[derive(Debug, PartialEq)]
pub struct NativePrompt {
    pub content: String,
    pub attachments: Vec<Value>,
}

pub fn convert(blocks: &[Value]) -> Result<NativePrompt, MapperError> {
    let mut texts: Vec<String> = Vec::new();
    let mut attachments = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let what = format!("prompt[{index}]");
        let fields = Fields::acp(block, &what)?;
        match fields.str("type")? {
            "text" => texts.push(fields.str("text")?.to_string()),
            "resource_link" => match link(&fields)? {
                Link::Text(text) => texts.push(text),
                Link::File(attachment) => attachments.push(attachment),
            },
            kind @ ("image" | "audio") => attachments.push(media(&fields, kind)?),
            "resource" => attachments.push(embedded(&fields)?),
            other => {
                return Err(invalid_params(format!("Unsupported prompt content block: {other}")));
            }
        }
    }
    if texts.is_empty() && attachments.is_empty() {
        return Err(invalid_params("The prompt has no content"));
    }
    Ok(NativePrompt { content: texts.join("\n\n"), attachments })
}

enum Link {
    Text(String),
    File(Value),
}

/// A `file:` link becomes an attachment ZCode reads from disk; any other link stays text.
fn link(fields: &Fields<'_>) -> Result<Link, MapperError> {
    let uri = fields.str("uri")?;
    let name = fields.str("name")?;
    if !uri.starts_with("file:") {
        return Ok(Link::Text(format!("{name}: {uri}")));
    }
    let path = file_uri_path(uri).filter(|path| is_absolute_path(path)).ok_or_else(|| {
        invalid_params(format!("resource_link must name an absolute local file: {uri}"))
    })?;
    let filename = if name.is_empty() {
        uri_basename(uri).unwrap_or_else(|| "file".to_string())
    } else {
        name.to_string()
    };
    let mut attachment = json!({
        "kind": "file",
        "filename": filename,
        "mimeType": fields.opt_str("mimeType")?.unwrap_or("application/octet-stream"),
        "localPath": path,
    });
    if let Some(size) = fields.get("size") {
        let size = size
            .as_u64()
            .ok_or_else(|| invalid_params("resource_link size must be a non-negative integer"))?;
        attachment["sizeBytes"] = json!(size);
    }
    Ok(Link::File(attachment))
}

fn decoded_size(data: &str, what: &str) -> Result<u64, MapperError> {
    base64_decoded_len(data)
        .ok_or_else(|| invalid_params(format!("{what} data is not valid base64")))
}

fn media(fields: &Fields<'_>, kind: &str) -> Result<Value, MapperError> {
    let data = fields.str("data")?;
    let mime = fields.non_empty_str("mimeType")?;
    let filename = fields
        .opt_str("uri")?
        .and_then(uri_basename)
        .unwrap_or_else(|| format!("{kind}.{}", mime_subtype(mime).unwrap_or("bin")));
    Ok(json!({
        "kind": kind,
        "filename": filename,
        "mimeType": mime,
        "dataBase64": data,
        "sizeBytes": decoded_size(data, kind)?,
    }))
}

fn embedded(fields: &Fields<'_>) -> Result<Value, MapperError> {
    let resource = fields.object("resource", "embedded resource")?;
    let uri = resource.str("uri")?;
    let mime = resource.opt_str("mimeType")?;
    let fallback_extension =
        |default: &str| mime.and_then(mime_subtype).unwrap_or(default).to_string();
    if let Some(text) = resource.opt_str("text")? {
        let filename =
            uri_basename(uri).unwrap_or_else(|| format!("context.{}", fallback_extension("txt")));
        return Ok(json!({
            "kind": "file",
            "filename": filename,
            "mimeType": mime.unwrap_or("text/plain"),
            "textContent": text,
            "sizeBytes": text.len(),
        }));
    }
    if let Some(blob) = resource.opt_str("blob")? {
        let filename =
            uri_basename(uri).unwrap_or_else(|| format!("context.{}", fallback_extension("bin")));
        return Ok(json!({
            "kind": "file",
            "filename": filename,
            "mimeType": mime.unwrap_or("application/octet-stream"),
            "dataBase64": blob,
            "sizeBytes": decoded_size(blob, "embedded resource")?,
        }));
    }
    Err(invalid_params("embedded resource has neither text nor blob"))
}

#[cfg(test)]
mod tests {
    use zcode_contract::ErrorKind;

    use super::*;

    #[test]
    fn joins_text_and_keeps_links_in_order() {
        let prompt = convert(&[
            json!({"type": "text", "text": "Fix this"}),
            json!({"type": "resource_link", "uri": "https://example.com/issue/1", "name": "Issue"}),
            json!({"type": "text", "text": "thanks"}),
        ])
        .unwrap();
        assert_eq!(prompt.content, "Fix this\n\nIssue: https://example.com/issue/1\n\nthanks");
        assert!(prompt.attachments.is_empty());
    }

    #[test]
    fn attaches_local_files_by_path() {
        let prompt = convert(&[json!({"type": "resource_link", "uri": "file:///w/src/main%20x.rs", "name": "", "size": 42})]).unwrap();
        assert_eq!(prompt.content, "");
        assert_eq!(
            prompt.attachments,
            [
                json!({"kind": "file", "filename": "main x.rs", "mimeType": "application/octet-stream", "localPath": "/w/src/main x.rs", "sizeBytes": 42})
            ]
        );
        let named = convert(&[json!({"type": "resource_link", "uri": "file:///w/a.md", "name": "A", "mimeType": "text/markdown"})]).unwrap();
        assert_eq!(named.attachments[0]["filename"], "A");
        assert_eq!(named.attachments[0]["mimeType"], "text/markdown");
        let relative =
            convert(&[json!({"type": "resource_link", "uri": "file:src/a.rs", "name": "a"})])
                .unwrap_err();
        assert_eq!(relative.kind, ErrorKind::InvalidParams);
        assert_eq!(
            relative.message,
            "resource_link must name an absolute local file: file:src/a.rs"
        );
    }

    #[test]
    fn attaches_images_and_audio_with_decoded_sizes() {
        let prompt = convert(&[
            json!({"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}),
            json!({"type": "image", "data": "aGk=", "mimeType": "image/svg+xml", "uri": "https://x/logo.svg"}),
            json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}),
        ])
        .unwrap();
        assert_eq!(
            prompt.attachments,
            [
                json!({"kind": "image", "filename": "image.png", "mimeType": "image/png", "dataBase64": "aGVsbG8=", "sizeBytes": 5}),
                json!({"kind": "image", "filename": "logo.svg", "mimeType": "image/svg+xml", "dataBase64": "aGk=", "sizeBytes": 2}),
                json!({"kind": "audio", "filename": "audio.wav", "mimeType": "audio/wav", "dataBase64": "AAAA", "sizeBytes": 3}),
            ]
        );
        let bad = convert(&[json!({"type": "image", "data": "***", "mimeType": "image/png"})])
            .unwrap_err();
        assert_eq!(bad.message, "image data is not valid base64");
    }

    #[test]
    fn attaches_embedded_resources() {
        let prompt = convert(&[
            json!({"type": "resource", "resource": {"uri": "file:///w/notes.txt", "text": "héllo"}}),
            json!({"type": "resource", "resource": {"uri": "mem:", "mimeType": "application/pdf", "blob": "aGk="}}),
            json!({"type": "resource", "resource": {"uri": "", "text": "x", "mimeType": "text/markdown"}}),
        ])
        .unwrap();
        assert_eq!(
            prompt.attachments,
            [
                json!({"kind": "file", "filename": "notes.txt", "mimeType": "text/plain", "textContent": "héllo", "sizeBytes": 6}),
                json!({"kind": "file", "filename": "context.pdf", "mimeType": "application/pdf", "dataBase64": "aGk=", "sizeBytes": 2}),
                json!({"kind": "file", "filename": "context.markdown", "mimeType": "text/markdown", "textContent": "x", "sizeBytes": 1}),
            ]
        );
        let neither =
            convert(&[json!({"type": "resource", "resource": {"uri": "x"}})]).unwrap_err();
        assert_eq!(neither.message, "embedded resource has neither text nor blob");
    }

    #[test]
    fn refuses_unknown_or_empty_content() {
        assert_eq!(
            convert(&[json!({"type": "video"})]).unwrap_err().message,
            "Unsupported prompt content block: video"
        );
        assert_eq!(convert(&[]).unwrap_err().message, "The prompt has no content");
        assert_eq!(
            convert(&[json!({"type": "text"})]).unwrap_err().message,
            "prompt[0]: missing field `text`"
        );
        assert_eq!(
            convert(&[json!("text")]).unwrap_err().message,
            "prompt[0] must be a JSON object"
        );
    }
}
