//! ACP prompt blocks → a V4 `sendText`: text blocks joined by blank lines; links (also `file:`
//! links, which the Agent reads with its own tools) and embedded text resources become text.
//! Images, audio and embedded binary resources become attachments, uploaded first
//! (`attachmentBeginV4` / `ChunkV4` / `CommitV4`, [`zcode_v4::attachment`]) and then named by
//! their refs in `sendText`. Nothing is dropped.

use serde_json::Value;
use zcode_contract::MapperError;

use zcode_mapper_sdk::acp::prompt::{Block, Contents, check_attachment_size, read_blocks};
use zcode_mapper_sdk::json::invalid_params;
use zcode_v4::attachment::Upload;

/// What a prompt sends: the text, and the attachments to upload first.
#[derive(Debug, Default, PartialEq)]
pub struct Input {
    pub text: String,
    pub uploads: Vec<Upload>,
}

pub fn input(blocks: &[Value]) -> Result<Input, MapperError> {
    let mut texts: Vec<String> = Vec::new();
    let mut uploads = Vec::new();
    for block in read_blocks(blocks)? {
        match block {
            Block::Text(text) => texts.push(text),
            Block::Link(link) => texts.push(format!("{}: {}", link.name, link.uri)),
            Block::Resource(resource) => match &resource.contents {
                Contents::Text(text) => texts.push(format!("{}\n{text}", resource.uri)),
                Contents::Blob(blob) => {
                    let mime = resource.mime_type.clone();
                    let mime = mime.unwrap_or_else(|| "application/octet-stream".into());
                    uploads.push(upload(resource.filename(), mime, blob)?);
                }
            },
            Block::Image(media) => {
                uploads.push(upload(media.filename("image"), media.mime_type.clone(), &media.data)?)
            }
            Block::Audio(media) => {
                uploads.push(upload(media.filename("audio"), media.mime_type.clone(), &media.data)?)
            }
        }
    }
    // Blank text is no input to ZCode either (3.15.1 `sendText` trims it and fails it): refused
    // here as the client's mistake, without a round trip, as the app-server mapper refuses it.
    if texts.iter().all(|text| text.trim().is_empty()) && uploads.is_empty() {
        return Err(invalid_params("The prompt has no content"));
    }
    Ok(Input { text: texts.join("\n\n"), uploads })
}

/// An attachment to upload, held to ZCode's 20 MiB.
fn upload(file_name: String, mime: String, data: &str) -> Result<Upload, MapperError> {
    let upload = Upload::from_base64(file_name, mime, data)?;
    check_attachment_size(&upload.file_name, upload.bytes.len() as u64)?;
    Ok(upload)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use zcode_contract::ErrorKind;

    use super::*;

    #[test]
    fn joins_text_links_and_text_resources() {
        let input = input(&[
            json!({"type": "text", "text": "Fix this"}),
            json!({"type": "resource_link", "uri": "file:///w/src/a.rs", "name": "a.rs"}),
            json!({"type": "resource", "resource": {"uri": "file:///w/notes.md", "text": "note"}}),
        ])
        .unwrap();
        assert_eq!(input.text, "Fix this\n\na.rs: file:///w/src/a.rs\n\nfile:///w/notes.md\nnote");
        assert!(input.uploads.is_empty());
    }

    #[test]
    fn uploads_images_audio_and_binary_resources() {
        let input = input(&[
            json!({"type": "image", "data": "aGk=", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "AAE=", "mimeType": "audio/wav", "uri": "file:///w/a.wav"}),
            json!({"type": "resource", "resource": {"uri": "file:///w/x.pdf", "blob": "AAEC"}}),
        ])
        .unwrap();
        let uploads: Vec<(&str, &str, usize)> = input
            .uploads
            .iter()
            .map(|u| (u.file_name.as_str(), u.mime.as_str(), u.bytes.len()))
            .collect();
        assert_eq!(
            uploads,
            [
                ("image.png", "image/png", 2),
                ("a.wav", "audio/wav", 2),
                ("x.pdf", "application/octet-stream", 3)
            ]
        );
        assert_eq!(input.text, "");
    }

    #[test]
    fn refuses_what_it_cannot_send() {
        let bad = input(&[json!({"type": "image", "data": "%%%", "mimeType": "image/png"})]);
        assert_eq!(bad.unwrap_err().kind, ErrorKind::InvalidParams);
        assert_eq!(input(&[]).unwrap_err().message, "The prompt has no content");
        let blank = input(&[json!({"type": "text", "text": " \n\t"})]).unwrap_err();
        assert_eq!(
            (blank.kind, blank.message.as_str()),
            (ErrorKind::InvalidParams, "The prompt has no content")
        );
        assert_eq!(
            input(&[json!({"type": "video"})]).unwrap_err().message,
            "Unsupported prompt content block: video"
        );
    }
}
