//! ACP prompt blocks → the text of a V4 `sendText`. Text blocks are joined by blank lines;
//! links (also `file:` links, which the Agent reads with its own tools) and embedded text
//! resources become text. Nothing is dropped: images, audio and binary resources would need
//! V4's attachment upload (`attachmentBeginV4` / `ChunkV4` / `CommitV4`), which this mapper does
//! not do yet, so they are refused.

use serde_json::Value;
use zcode_contract::{ErrorKind, MapperError};

use zcode_mapper_sdk::json::{error, invalid_params};
use zcode_v4::schema::Fields;

pub fn text(blocks: &[Value]) -> Result<String, MapperError> {
    let mut texts: Vec<String> = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let what = format!("prompt[{index}]");
        let fields = Fields::acp(block, &what)?;
        match fields.str("type")? {
            "text" => texts.push(fields.str("text")?.to_string()),
            "resource_link" => {
                texts.push(format!("{}: {}", fields.str("name")?, fields.str("uri")?))
            }
            "resource" => {
                let resource = fields.object("resource", "embedded resource")?;
                let uri = resource.str("uri")?;
                match resource.opt_str("text")? {
                    Some(text) => texts.push(format!("{uri}\n{text}")),
                    None => return Err(unsupported("embedded binary resources")),
                }
            }
            "image" => return Err(unsupported("images")),
            "audio" => return Err(unsupported("audio")),
            other => {
                return Err(invalid_params(format!("Unsupported prompt content block: {other}")));
            }
        }
    }
    if texts.iter().all(|text| text.is_empty()) {
        return Err(invalid_params("The prompt has no content"));
    }
    Ok(texts.join("\n\n"))
}

fn unsupported(what: &str) -> MapperError {
    error(
        ErrorKind::Unsupported,
        format!(
            "The ZCode Services Server mapper cannot send {what} yet (V4 attachment upload is not implemented)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn joins_text_links_and_text_resources() {
        let text = text(&[
            json!({"type": "text", "text": "Fix this"}),
            json!({"type": "resource_link", "uri": "file:///w/src/a.rs", "name": "a.rs"}),
            json!({"type": "resource", "resource": {"uri": "file:///w/notes.md", "text": "note"}}),
        ])
        .unwrap();
        assert_eq!(text, "Fix this\n\na.rs: file:///w/src/a.rs\n\nfile:///w/notes.md\nnote");
    }

    #[test]
    fn refuses_what_it_cannot_send() {
        let error =
            text(&[json!({"type": "image", "data": "aGk=", "mimeType": "image/png"})]).unwrap_err();
        assert_eq!(error.kind, ErrorKind::Unsupported);
        assert!(
            text(&[json!({"type": "resource", "resource": {"uri": "x", "blob": "aGk="}})]).is_err()
        );
        assert_eq!(text(&[]).unwrap_err().message, "The prompt has no content");
        assert_eq!(
            text(&[json!({"type": "video"})]).unwrap_err().message,
            "Unsupported prompt content block: video"
        );
    }
}
