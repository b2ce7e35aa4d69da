//! ACP prompt content blocks (read by the SDK) → the native prompt: one text plus attachments.
//! Nothing the client sent is dropped: what cannot be represented is refused.

use serde_json::{Value, json};
use zcode_mapper_sdk::acp::prompt::{Block, Link, media_attachment, resource_attachment};
use zcode_mapper_sdk::contract::MapperError;
use zcode_mapper_sdk::json::invalid_params;
use zcode_mapper_sdk::uri::{file_uri_path, is_absolute_path, uri_basename};

/// What `sendPrompt` carries besides the ids.
#[derive(Debug, PartialEq)]
pub struct NativePrompt {
    pub content: String,
    pub attachments: Vec<Value>,
}

pub fn convert(blocks: Vec<Block>) -> Result<NativePrompt, MapperError> {
    let mut texts: Vec<String> = Vec::new();
    let mut attachments = Vec::new();
    for block in blocks {
        match block {
            Block::Text(text) => texts.push(text),
            Block::Link(link) if !link.uri.starts_with("file:") => {
                texts.push(format!("{}: {}", link.name, link.uri));
            }
            Block::Link(link) => attachments.push(file(link)?),
            Block::Image(image) => attachments.push(media_attachment(&image, "image")?),
            Block::Audio(audio) => attachments.push(media_attachment(&audio, "audio")?),
            Block::Resource(resource) => attachments.push(resource_attachment(&resource)?),
        }
    }
    if texts.is_empty() && attachments.is_empty() {
        return Err(invalid_params("The prompt has no content"));
    }
    Ok(NativePrompt { content: texts.join("\n\n"), attachments })
}

/// A `file:` link: an attachment ZCode reads from disk.
fn file(link: Link) -> Result<Value, MapperError> {
    let path = file_uri_path(&link.uri).filter(|path| is_absolute_path(path)).ok_or_else(|| {
        invalid_params(format!("resource_link must name an absolute local file: {}", link.uri))
    })?;
    let filename = if link.name.is_empty() {
        uri_basename(&link.uri).unwrap_or_else(|| "file".to_string())
    } else {
        link.name
    };
    let mut attachment = json!({
        "kind": "file",
        "filename": filename,
        "mimeType": link.mime_type.as_deref().unwrap_or("application/octet-stream"),
        "localPath": path,
    });
    if let Some(size) = link.size {
        attachment["sizeBytes"] = json!(size);
    }
    Ok(attachment)
}

#[cfg(test)]
mod tests {
    use zcode_mapper_sdk::acp::prompt::read_blocks;
    use zcode_mapper_sdk::contract::ErrorKind;

    use super::*;

    /// The blocks as the SDK reads them, converted.
    fn convert(blocks: &[Value]) -> Result<NativePrompt, MapperError> {
        super::convert(read_blocks(blocks)?)
    }

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
