//! The one update shape a turn streams by the thousand, a text chunk, checked without the
//! schema types.
//!
//! Parsing every streamed delta into `SessionUpdate` (an internally tagged enum, which serde
//! buffers before it can pick the variant), and the SDK turning it into a `Value` and then into
//! text, was most of the core's cost per delta. A chunk in exactly this shape — nothing else
//! in it, no field twice, every value of its type — is valid ACP by construction, so it is
//! kept as its parts and written out from them ([`TextChunk`]). Any other shape, a chunk with
//! `_meta` or annotations included, goes through the schema types as before.

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
}

/// A text chunk the gate let through: `{"sessionUpdate", "content": {"type": "text", "text"},
/// "messageId"?}` and nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextChunk {
    pub kind: ChunkKind,
    pub text: String,
    pub message_id: Option<String>,
}

impl TextChunk {
    /// The chunk `json` is, if it is exactly that shape; `None` for anything else (which the
    /// schema types then judge).
    pub(crate) fn recognise(json: &str) -> Option<TextChunk> {
        let shape: Shape<'_> = serde_json::from_str(json).ok()?;
        Some(TextChunk {
            kind: shape.session_update,
            text: shape.content.text.into_owned(),
            message_id: shape.message_id.map(Cow::into_owned),
        })
    }

    /// As the schema type, for a client port that writes updates through the SDK.
    pub fn into_update(self) -> SessionUpdate {
        let mut chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(self.text)));
        chunk.message_id = self.message_id.map(Into::into);
        match self.kind {
            ChunkKind::UserMessageChunk => SessionUpdate::UserMessageChunk(chunk),
            ChunkKind::AgentMessageChunk => SessionUpdate::AgentMessageChunk(chunk),
            ChunkKind::AgentThoughtChunk => SessionUpdate::AgentThoughtChunk(chunk),
        }
    }
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
