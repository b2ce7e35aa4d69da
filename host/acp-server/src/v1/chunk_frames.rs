//! `session/update` frames for text chunks, written from the chunk's checked parts: the same
//! JSON-RPC notification the SDK writes for the schema types, without building them.

use agent_client_protocol::v1::schema::SessionId;
use zcode_coordinator::TextChunk;

/// The session's id as JSON, once for all the frames of a batch.
pub fn session_json(session: &SessionId) -> String {
    serde_json::to_string(&*session.0).expect("a string always serializes")
}

/// Appends the frame of `chunk` for the session whose id is `session` (as [`session_json`]
/// wrote it) to `out`, with no newline. Text only, so the block of frames needs no check that
/// it is UTF-8.
pub fn write(out: &mut String, session: &str, chunk: &TextChunk) {
    out.push_str(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"#);
    out.push_str(session);
    out.push_str(r#","update":{"sessionUpdate":""#);
    out.push_str(chunk.kind.tag());
    // The text is escaped as serde_json escapes it already: copied, not escaped again.
    out.push_str(r#"","content":{"type":"text","text":""#);
    out.push_str(chunk.escaped_text());
    out.push_str("\"}");
    if let Some(id) = &chunk.message_id {
        out.push_str(r#","messageId":"#);
        push_string(out, id);
    }
    out.push_str("}}}");
}

/// `text` as a JSON string, escaped as serde_json escapes it: most need no escape at all.
fn push_string(out: &mut String, text: &str) {
    if text.bytes().any(|byte| byte == b'"' || byte == b'\\' || byte < 0x20) {
        out.push_str(&serde_json::to_string(text).expect("a string always serializes"));
    } else {
        out.push('"');
        out.push_str(text);
        out.push('"');
    }
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::SessionNotification;
    use serde_json::{Value, json};
    use zcode_coordinator::ChunkKind;

    use super::*;

    #[test]
    fn the_frame_is_the_notification_the_sdk_writes_for_the_schema_types() {
        let session = SessionId::new("s-\"1\"");
        let chunks = [
            TextChunk::new(ChunkKind::AgentMessageChunk, "hi", None),
            TextChunk::new(ChunkKind::AgentMessageChunk, "hi", Some("msg_1".into())),
            TextChunk::new(
                ChunkKind::AgentThoughtChunk,
                "tab\t quote\" \\ nl\n \u{1}é 😀 </script>",
                Some("m\"1".into()),
            ),
            TextChunk::new(ChunkKind::UserMessageChunk, "", None),
        ];
        for chunk in chunks {
            let mut frame = String::new();
            write(&mut frame, &session_json(&session), &chunk);
            let typed = SessionNotification::new(session.clone(), chunk.clone().into_update());
            let expected = json!({"jsonrpc": "2.0", "method": "session/update", "params": typed});
            assert_eq!(serde_json::from_str::<Value>(&frame).unwrap(), expected, "{frame}");
            // Byte for byte as well: the text is escaped exactly as serde_json escapes it.
            assert!(frame.contains(&serde_json::to_string(&chunk.text()).unwrap()));
            assert!(!frame.contains('\n'), "one line");
        }
    }
}
