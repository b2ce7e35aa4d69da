//! `session/prompt` content blocks, read into typed values a mapper renders natively: text,
//! resource links, images, audio and embedded resources. Nothing the client sent is dropped:
//! an unknown block type is an `invalid-params` error, and so is a field of the wrong type.

use serde_json::{Value, json};
use zcode_contract::{ErrorKind, MapperError};

use crate::json::{Fields, invalid_params, parse};
use crate::media::{base64_decoded_len, mime_subtype};
use crate::uri::uri_basename;

/// One content block of a prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Block {
    Text(String),
    /// `resource_link`: a reference the agent may read.
    Link(Link),
    Image(Media),
    Audio(Media),
    /// `resource`: contents embedded in the prompt.
    Resource(Resource),
}

impl Block {
    /// The ACP `type` of the block.
    pub fn kind(&self) -> &'static str {
        match self {
            Block::Text(_) => "text",
            Block::Link(_) => "resource_link",
            Block::Image(_) => "image",
            Block::Audio(_) => "audio",
            Block::Resource(_) => "resource",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub uri: String,
    pub name: String,
    pub mime_type: Option<String>,
    /// Bytes, if the client said.
    pub size: Option<u64>,
}

/// An image or audio clip: base64 data of a MIME type, and where it came from if known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Media {
    pub data: String,
    pub mime_type: String,
    pub uri: Option<String>,
}

impl Media {
    /// Decoded size of the data; an error (naming `what`) if it is not valid base64.
    pub fn size(&self, what: &str) -> Result<u64, MapperError> {
        decoded_size(&self.data, what)
    }

    /// A file name: the URI's last segment, else `<kind>.<subtype>` (`image.png`).
    pub fn filename(&self, kind: &str) -> String {
        self.uri
            .as_deref()
            .and_then(uri_basename)
            .unwrap_or_else(|| format!("{kind}.{}", mime_subtype(&self.mime_type).unwrap_or("bin")))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    pub uri: String,
    pub mime_type: Option<String>,
    pub contents: Contents,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Contents {
    Text(String),
    /// Base64.
    Blob(String),
}

impl Resource {
    /// A file name: the URI's last segment, else `context.<subtype>` (`txt` for text and `bin`
    /// for a blob without a MIME type).
    pub fn filename(&self) -> String {
        uri_basename(&self.uri).unwrap_or_else(|| {
            let default = match self.contents {
                Contents::Text(_) => "txt",
                Contents::Blob(_) => "bin",
            };
            format!(
                "context.{}",
                self.mime_type.as_deref().and_then(mime_subtype).unwrap_or(default)
            )
        })
    }
}

/// Decoded size of base64 `data`; an error naming `what` if it is not valid base64.
pub fn decoded_size(data: &str, what: &str) -> Result<u64, MapperError> {
    base64_decoded_len(data)
        .ok_or_else(|| invalid_params(format!("{what} data is not valid base64")))
}

/// The largest attachment ZCode takes: 20 MiB per file, the V4 upload's limit
/// (`../shared/reference/zcode-services-v4.md` §3.1 "attachment ≤ 20 MiB"; ZCode's own clients
/// check the same `ProtocolLimits.attachmentMaxBytes` before `attachmentBeginV4`). The legacy
/// attachment of `session/send` / `sendPrompt` is held to it too: no public source gives that
/// path another limit, and ZCode drops an oversized file silently (`zcode-app-server.md`
/// §4.1), so it is refused up front instead.
pub const ATTACHMENT_MAX_BYTES: u64 = 20 * 1024 * 1024;

/// `bytes` of an attachment named `name`, checked against [`ATTACHMENT_MAX_BYTES`]: over it
/// is invalid params naming the limit.
pub fn check_attachment_size(name: &str, bytes: u64) -> Result<u64, MapperError> {
    if bytes > ATTACHMENT_MAX_BYTES {
        return Err(invalid_params(format!(
            "attachment {name} is too large: {bytes} bytes, over ZCode's limit of 20 MiB ({ATTACHMENT_MAX_BYTES} bytes) per attachment"
        )));
    }
    Ok(bytes)
}

/// An image or audio block as ZCode's legacy attachment (`session/send` of the app-server,
/// `sendPrompt` of the task protocol): `{kind, filename, mimeType, sizeBytes, dataBase64}`
/// with the base64 unchanged (no `data:` prefix) (`zcode-app-server.md` §4.1 `session/send`).
pub fn media_attachment(media: &Media, kind: &str) -> Result<Value, MapperError> {
    let filename = media.filename(kind);
    let size = check_attachment_size(&filename, media.size(kind)?)?;
    Ok(json!({
        "kind": kind,
        "filename": filename,
        "mimeType": media.mime_type,
        "sizeBytes": size,
        "dataBase64": media.data,
    }))
}

/// An embedded resource as ZCode's legacy `file` attachment: text as `textContent`
/// (`text/plain` unless the client named a type), a blob as `dataBase64`
/// (`application/octet-stream` unless named).
pub fn resource_attachment(resource: &Resource) -> Result<Value, MapperError> {
    let filename = resource.filename();
    let mime = resource.mime_type.as_deref();
    Ok(match &resource.contents {
        Contents::Text(text) => json!({
            "kind": "file",
            "filename": filename,
            "mimeType": mime.unwrap_or("text/plain"),
            "sizeBytes": check_attachment_size(&filename, text.len() as u64)?,
            "textContent": text,
        }),
        Contents::Blob(blob) => json!({
            "kind": "file",
            "filename": filename,
            "mimeType": mime.unwrap_or("application/octet-stream"),
            "sizeBytes": check_attachment_size(&filename, decoded_size(blob, "embedded resource")?)?,
            "dataBase64": blob,
        }),
    })
}

/// A `file` part of a persisted ZCode message (`{type:"file", url, filename?, mime?}`, how both
/// the task protocol's and the app-server's stores record an attachment) as the ACP
/// `resource_link` a replay shows: the recorded URL (a `file:` path or a `data:` URL), the
/// recorded name (else the URL's last segment, else the URL) and MIME type. `None` without a URL.
pub fn file_part_link(part: &Value) -> Option<Value> {
    let url = part.get("url").and_then(Value::as_str).filter(|url| !url.is_empty())?;
    let name = part
        .get("filename")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .or_else(|| uri_basename(url))
        .unwrap_or_else(|| url.to_string());
    let mut link = json!({"type": "resource_link", "uri": url, "name": name});
    if let Some(mime) = part.get("mime").and_then(Value::as_str) {
        link["mimeType"] = json!(mime);
    }
    Some(link)
}

/// The prompt of a host that takes text only: its text blocks joined, or the first block of
/// another kind.
pub fn text_only(blocks: Vec<Block>) -> Result<String, Block> {
    let mut text = String::new();
    for block in blocks {
        match block {
            Block::Text(part) => text.push_str(&part),
            other => return Err(other),
        }
    }
    Ok(text)
}

/// [`text_only`] for `host`: another kind of block is refused as invalid params, `"<host>
/// takes text only, not <kind>"`.
pub fn text_for(host: &str, blocks: Vec<Block>) -> Result<String, MapperError> {
    text_only(blocks)
        .map_err(|other| invalid_params(format!("{host} takes text only, not {}", other.kind())))
}

/// The blocks of `session/prompt` parameters (JSON text), in order.
pub fn read(params: &str) -> Result<Vec<Block>, MapperError> {
    const WHAT: &str = "session/prompt params";
    let value = parse(params, ErrorKind::InvalidParams, WHAT)?;
    read_blocks(Fields::acp(&value, WHAT)?.array("prompt")?)
}

/// Content blocks, in order (errors name the block as `prompt[<index>]`).
pub fn read_blocks(blocks: &[Value]) -> Result<Vec<Block>, MapperError> {
    blocks.iter().enumerate().map(|(index, block)| read_block(index, block)).collect()
}

fn read_block(index: usize, block: &Value) -> Result<Block, MapperError> {
    let what = format!("prompt[{index}]");
    let fields = Fields::acp(block, &what)?;
    Ok(match fields.str("type")? {
        "text" => Block::Text(fields.str("text")?.to_string()),
        "resource_link" => {
            let size = match fields.get("size") {
                Some(size) => Some(size.as_u64().ok_or_else(|| {
                    invalid_params("resource_link size must be a non-negative integer")
                })?),
                None => None,
            };
            Block::Link(Link {
                uri: fields.str("uri")?.to_string(),
                name: fields.str("name")?.to_string(),
                mime_type: fields.opt_str("mimeType")?.map(str::to_string),
                size,
            })
        }
        kind @ ("image" | "audio") => {
            let media = Media {
                data: fields.str("data")?.to_string(),
                mime_type: fields.non_empty_str("mimeType")?.to_string(),
                uri: fields.opt_str("uri")?.map(str::to_string),
            };
            if kind == "image" { Block::Image(media) } else { Block::Audio(media) }
        }
        "resource" => {
            let resource = fields.object("resource", "embedded resource")?;
            let uri = resource.str("uri")?.to_string();
            let mime_type = resource.opt_str("mimeType")?.map(str::to_string);
            let contents = match resource.opt_str("text")? {
                Some(text) => Contents::Text(text.to_string()),
                None => match resource.opt_str("blob")? {
                    Some(blob) => Contents::Blob(blob.to_string()),
                    None => {
                        return Err(invalid_params("embedded resource has neither text nor blob"));
                    }
                },
            };
            Block::Resource(Resource { uri, mime_type, contents })
        }
        other => return Err(invalid_params(format!("Unsupported prompt content block: {other}"))),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_every_block_type_in_order() {
        let params = json!({"sessionId": "s", "prompt": [
            {"type": "text", "text": "Fix this"},
            {"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs", "mimeType": "text/x-rust", "size": 12},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "audio", "data": "", "mimeType": "audio/wav", "uri": "file:///w/a%20b.wav"},
            {"type": "resource", "resource": {"uri": "mem://x", "text": "notes"}},
            {"type": "resource", "resource": {"uri": "mem://", "blob": "AAE=", "mimeType": "application/pdf"}},
        ]});
        let blocks = read(&params.to_string()).unwrap();
        let kinds: Vec<&str> = blocks.iter().map(Block::kind).collect();
        assert_eq!(kinds, ["text", "resource_link", "image", "audio", "resource", "resource"]);
        assert_eq!(blocks[0], Block::Text("Fix this".into()));
        let Block::Link(link) = &blocks[1] else { panic!() };
        assert_eq!((link.size, link.mime_type.as_deref()), (Some(12), Some("text/x-rust")));
        let Block::Image(image) = &blocks[2] else { panic!() };
        assert_eq!(
            (image.size("image").unwrap(), image.filename("image")),
            (2, "image.png".into())
        );
        let Block::Audio(audio) = &blocks[3] else { panic!() };
        assert_eq!(audio.filename("audio"), "a b.wav");
        let Block::Resource(text) = &blocks[4] else { panic!() };
        assert_eq!(
            (text.filename(), &text.contents),
            ("context.txt".into(), &Contents::Text("notes".into()))
        );
        let Block::Resource(blob) = &blocks[5] else { panic!() };
        assert_eq!(blob.filename(), "context.pdf");
    }

    #[test]
    fn builds_legacy_attachments_and_refuses_one_over_the_limit() {
        let png = Media { data: "aGk=".into(), mime_type: "image/png".into(), uri: None };
        assert_eq!(
            media_attachment(&png, "image").unwrap(),
            json!({"kind": "image", "filename": "image.png", "mimeType": "image/png",
                "sizeBytes": 2, "dataBase64": "aGk="})
        );
        let blob = Resource {
            uri: "file:///w/a.pdf".into(),
            mime_type: Some("application/pdf".into()),
            contents: Contents::Blob("AAE=".into()),
        };
        assert_eq!(
            resource_attachment(&blob).unwrap(),
            json!({"kind": "file", "filename": "a.pdf", "mimeType": "application/pdf",
                "sizeBytes": 2, "dataBase64": "AAE="})
        );
        let text = Resource {
            uri: "mem://".into(),
            mime_type: None,
            contents: Contents::Text("hey".into()),
        };
        assert_eq!(resource_attachment(&text).unwrap()["textContent"], "hey");
        assert_eq!(check_attachment_size("a", ATTACHMENT_MAX_BYTES).unwrap(), ATTACHMENT_MAX_BYTES);
        let over = check_attachment_size("big.png", ATTACHMENT_MAX_BYTES + 1).unwrap_err();
        assert_eq!(over.kind, ErrorKind::InvalidParams);
        assert!(
            over.message.contains("big.png") && over.message.contains("20 MiB"),
            "{}",
            over.message
        );
        // 20 MiB + 3 bytes of base64 (4 chars per 3 bytes).
        let huge = Media {
            data: "A".repeat((ATTACHMENT_MAX_BYTES as usize + 3) / 3 * 4),
            mime_type: "audio/wav".into(),
            uri: None,
        };
        assert!(media_attachment(&huge, "audio").unwrap_err().message.contains("20 MiB"));
    }

    #[test]
    fn refuses_what_a_text_only_host_cannot_take() {
        let text = |text: &str| Block::Text(text.into());
        assert_eq!(text_for("The host", vec![text("a "), text("b")]).unwrap(), "a b");
        let image =
            Block::Image(Media { data: String::new(), mime_type: "image/png".into(), uri: None });
        let refused = text_for("The host", vec![text("a"), image]).unwrap_err();
        assert_eq!(
            (refused.kind, refused.message.as_str()),
            (ErrorKind::InvalidParams, "The host takes text only, not image")
        );
    }

    #[test]
    fn joins_a_text_only_prompt() {
        let text = |t: &str| Block::Text(t.into());
        assert_eq!(text_only(vec![text("a "), text("b")]).unwrap(), "a b");
        let link =
            Block::Link(Link { uri: "u".into(), name: "n".into(), mime_type: None, size: None });
        assert_eq!(text_only(vec![text("a"), link.clone(), text("b")]).unwrap_err(), link);
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        let message = |block: Value| {
            read(&json!({"prompt": [{"type": "text", "text": "ok"}, block]}).to_string())
                .unwrap_err()
                .message
        };
        assert_eq!(message(json!({"type": "video"})), "Unsupported prompt content block: video");
        assert_eq!(message(json!({"type": "text"})), "prompt[1]: missing field `text`");
        assert_eq!(
            message(json!({"type": "resource_link", "uri": "u", "name": "n", "size": -1})),
            "resource_link size must be a non-negative integer"
        );
        assert_eq!(
            message(json!({"type": "image", "data": "x", "mimeType": ""})),
            "prompt[1]: field `mimeType` must not be empty"
        );
        assert_eq!(
            message(json!({"type": "resource", "resource": {"uri": "u"}})),
            "embedded resource has neither text nor blob"
        );
        assert_eq!(
            decoded_size("a", "image").unwrap_err().message,
            "image data is not valid base64"
        );
        assert_eq!(
            read("{}").unwrap_err().message,
            "session/prompt params: missing field `prompt`"
        );
    }
}
