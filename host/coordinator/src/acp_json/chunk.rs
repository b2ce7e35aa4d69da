//! The one update shape a turn streams by the thousand, a text chunk, checked without the
//! schema types.
//!
//! Parsing every streamed delta into `SessionUpdate` (an internally tagged enum, which serde
//! buffers before it can pick the variant), and the SDK turning it into a `Value` and then into
//! text, was most of the core's cost per delta. A chunk in exactly this shape — nothing else
//! in it, no field twice, every value of its type — is valid ACP by construction, so it is
//! kept as its parts and written out from them ([`TextChunk`]). Any other shape, a chunk with
//! `_meta` or annotations included, goes through the schema types as before.
//!
//! A chunk as the mapper SDK writes it (its members sorted, its strings escaped as serde_json
//! escapes them) is not parsed at all: its fixed text is compared and its text scanned, and the
//! text stays escaped, to be copied into the frame as it is. Parsing it with serde was about a
//! twentieth of zcode-acp's CPU per Desktop delta (docs/performance.md, issue 27).

use std::borrow::Cow;

use agent_client_protocol::v1::schema::{ContentBlock, ContentChunk, SessionUpdate, TextContent};
use serde::Deserialize;

/// Which stream a text chunk belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkKind {
    UserMessageChunk,
    AgentMessageChunk,
    AgentThoughtChunk,
}

impl ChunkKind {
    /// The `sessionUpdate` tag.
    pub fn tag(self) -> &'static str {
        match self {
            ChunkKind::UserMessageChunk => "user_message_chunk",
            ChunkKind::AgentMessageChunk => "agent_message_chunk",
            ChunkKind::AgentThoughtChunk => "agent_thought_chunk",
        }
    }

    fn from_tag(tag: &str) -> Option<ChunkKind> {
        [ChunkKind::AgentMessageChunk, ChunkKind::AgentThoughtChunk, ChunkKind::UserMessageChunk]
            .into_iter()
            .find(|kind| kind.tag() == tag)
    }
}

/// A text chunk the gate let through: `{"sessionUpdate", "content": {"type": "text", "text"},
/// "messageId"?}` and nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextChunk {
    pub kind: ChunkKind,
    /// The text as the inside of a JSON string, escaped as serde_json escapes it (one spelling
    /// per text, so equal chunks are equal here).
    escaped: String,
    pub message_id: Option<String>,
}

impl TextChunk {
    pub fn new(kind: ChunkKind, text: &str, message_id: Option<String>) -> TextChunk {
        let quoted = serde_json::to_string(text).expect("a string always serializes");
        let escaped = quoted[1..quoted.len() - 1].to_owned();
        TextChunk { kind, escaped, message_id }
    }

    /// The text as the inside of a JSON string, escaped as serde_json escapes it.
    pub fn escaped_text(&self) -> &str {
        &self.escaped
    }

    /// The text itself, unescaped.
    pub fn text(&self) -> String {
        serde_json::from_str(&format!("\"{}\"", self.escaped)).expect("the text is escaped JSON")
    }

    /// The chunk `json` is, if it is exactly that shape; `None` for anything else (which the
    /// schema types then judge).
    pub(crate) fn recognise(json: &str) -> Option<TextChunk> {
        read_as_written(json).or_else(|| read_any_order(json))
    }

    /// As the schema type, for a client port that writes updates through the SDK.
    pub fn into_update(self) -> SessionUpdate {
        let mut chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(self.text())));
        chunk.message_id = self.message_id.map(Into::into);
        match self.kind {
            ChunkKind::UserMessageChunk => SessionUpdate::UserMessageChunk(chunk),
            ChunkKind::AgentMessageChunk => SessionUpdate::AgentMessageChunk(chunk),
            ChunkKind::AgentThoughtChunk => SessionUpdate::AgentThoughtChunk(chunk),
        }
    }
}

/// The chunk as the mapper SDK's `text_chunk` writes it, byte for byte but for its strings,
/// which must be escaped as serde_json escapes them; `None` for any other spelling.
fn read_as_written(json: &str) -> Option<TextChunk> {
    let rest = json.strip_prefix(r#"{"content":{"text":""#)?;
    let (escaped, rest) = escaped_string(rest)?;
    let rest = rest.strip_prefix(r#","type":"text"}"#)?;
    let (message_id, rest) = match rest.strip_prefix(r#","messageId":""#) {
        Some(rest) => {
            let (id, rest) = escaped_string(rest)?;
            // An id with an escape is left to serde, which unescapes it.
            (!id.contains('\\')).then_some((Some(id.to_owned()), rest))?
        }
        None => (None, rest),
    };
    let tag = rest.strip_prefix(r#","sessionUpdate":""#)?.strip_suffix(r#""}"#)?;
    let kind = ChunkKind::from_tag(tag)?;
    Some(TextChunk { kind, escaped: escaped.to_owned(), message_id })
}

/// A JSON string's inside up to its closing quote, and the text after that quote, if every
/// escape in it is the one serde_json writes for its character (`\n`, not `\u000a`; `/`, not
/// `\/`); `None` for any other string, or one that is not JSON.
fn escaped_string(text: &str) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    let mut at = 0;
    loop {
        match *bytes.get(at)? {
            b'"' => return Some((&text[..at], &text[at + 1..])),
            b'\\' => at += 1 + escape_len(&bytes[at + 1..])?,
            0x00..=0x1f => return None,
            _ => at += 1,
        }
    }
}

/// The length of what follows a backslash in an escape serde_json writes: a short escape, or
/// `\u00xx` (lower-case hex) for a control character that has no short one.
fn escape_len(rest: &[u8]) -> Option<usize> {
    match *rest.first()? {
        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => Some(1),
        b'u' => {
            let &[b'0', b'0', high @ (b'0' | b'1'), low] = rest.get(1..5)? else { return None };
            let low = match low {
                b'0'..=b'9' => low - b'0',
                b'a'..=b'f' => low - b'a' + 10,
                _ => return None,
            };
            let control = (high - b'0') << 4 | low;
            (!matches!(control, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)).then_some(5)
        }
        _ => None,
    }
}

/// The chunk in any member order and spelling, read by serde.
fn read_any_order(json: &str) -> Option<TextChunk> {
    let shape: Shape<'_> = serde_json::from_str(json).ok()?;
    let message_id = shape.message_id.map(Cow::into_owned);
    Some(TextChunk::new(shape.session_update, &shape.content.text, message_id))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Shape<'a> {
    session_update: ChunkKind,
    #[serde(borrow)]
    content: Text<'a>,
    #[serde(default, borrow)]
    message_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Text<'a> {
    #[serde(rename = "type")]
    _type: TextTag,
    #[serde(borrow)]
    text: Cow<'a, str>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum TextTag {
    Text,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// The chunk as the schema types read it: what the fast shape must agree with.
    fn typed(json: &str) -> SessionUpdate {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_chunk_of_the_fixed_shape_reads_as_the_schema_types_read_it() {
        let chunks = [
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}),
            json!({"content": {"text": "a \"quoted\"\n\u{1F600} \\ line", "type": "text"}, "sessionUpdate": "agent_thought_chunk"}),
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": ""}, "messageId": "m-1"}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}, "messageId": null}),
        ];
        for chunk in chunks {
            let json = chunk.to_string();
            let fast = TextChunk::recognise(&json).unwrap_or_else(|| panic!("{json} is a chunk"));
            assert_eq!(
                serde_json::to_value(fast.into_update()).unwrap(),
                serde_json::to_value(typed(&json)).unwrap(),
                "{json}"
            );
        }
    }

    /// A chunk in the member order of the mapper SDK's `text_chunk`, with `text` written
    /// between its quotes as it stands.
    fn as_written(text: &str, message_id: Option<&str>) -> String {
        let id = message_id.map(|id| format!(r#","messageId":"{id}""#)).unwrap_or_default();
        format!(
            r#"{{"content":{{"text":"{text}","type":"text"}}{id},"sessionUpdate":"agent_message_chunk"}}"#
        )
    }

    fn escaped(text: &str) -> String {
        let quoted = serde_json::to_string(text).unwrap();
        quoted[1..quoted.len() - 1].to_owned()
    }

    #[test]
    fn a_chunk_as_the_sdk_writes_it_is_read_without_serde_and_as_serde_reads_it() {
        let mut texts: Vec<String> =
            (0u8..0x20).map(|byte| format!("a{}b", byte as char)).collect();
        texts.extend(
            ["", "lorem ipsum ", "\"", "\\", "/", "\u{7f}", "é 😀", "\\u0041"].map(String::from),
        );
        for text in &texts {
            for id in [None, Some("msg_1")] {
                let json = as_written(&escaped(text), id);
                let chunk = read_as_written(&json).unwrap_or_else(|| panic!("{json} is read"));
                assert_eq!(Some(&chunk), read_any_order(&json).as_ref(), "{json}");
                assert_eq!((chunk.text(), chunk.message_id.as_deref()), (text.clone(), id));
                assert_eq!(chunk.escaped_text(), escaped(text));
            }
        }
    }

    #[test]
    fn other_spellings_of_a_text_are_read_by_serde_and_escaped_as_it_escapes() {
        for (spelled, text) in [
            (r"\/", "/"),
            (r"\u00e9", "é"),
            (r"\u000a", "\n"),
            (r"\u001F", "\u{1f}"),
            (r"\u0041", "A"),
        ] {
            let json = as_written(spelled, None);
            assert_eq!(read_as_written(&json), None, "{json}");
            let chunk = TextChunk::recognise(&json).unwrap_or_else(|| panic!("{json} is a chunk"));
            assert_eq!((chunk.text(), chunk.escaped_text()), (text.to_owned(), &*escaped(text)));
        }
        // An id with an escape, and member orders the SDK does not write, go to serde too.
        let json = as_written("hi", Some(r"m\u0031"));
        assert_eq!(read_as_written(&json), None);
        assert_eq!(TextChunk::recognise(&json).unwrap().message_id.as_deref(), Some("m1"));
        let json =
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}"#;
        assert_eq!(read_as_written(json), None);
        assert_eq!(TextChunk::recognise(json).unwrap().text(), "hi");
    }

    #[test]
    fn text_that_is_not_json_is_no_chunk_whichever_reader_sees_it() {
        let spelled = ["a\tb", r"\x", r"\u00", r"\u00g1", "\\", "\u{0}"];
        for text in spelled {
            let json = as_written(text, None);
            assert_eq!(TextChunk::recognise(&json), None, "{json}");
        }
        let whole = as_written("hi", None);
        for broken in
            [format!("{whole}x"), whole[..whole.len() - 1].to_owned(), format!("{whole}}}")]
        {
            assert_eq!(TextChunk::recognise(&broken), None, "{broken}");
        }
        let unknown = whole.replace("agent_message_chunk", "agent_message_chunks");
        assert_eq!(TextChunk::recognise(&unknown), None);
    }

    #[test]
    fn anything_beyond_the_fixed_shape_is_left_to_the_schema_types() {
        let others: [Value; 9] = [
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}, "_meta": {}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi", "annotations": null}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "", "mimeType": "image/png"}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": 1}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}, "messageId": 7}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t"}),
            json!({"sessionUpdate": "agent_message_chunk"}),
            json!(["agent_message_chunk"]),
            json!("agent_message_chunk"),
        ];
        for other in others {
            assert_eq!(TextChunk::recognise(&other.to_string()), None, "{other}");
        }
        let twice = r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a","text":"b"}}"#;
        assert_eq!(TextChunk::recognise(twice), None, "a field given twice");
        assert_eq!(TextChunk::recognise("{\"sessionUpdate\""), None);
    }
}
