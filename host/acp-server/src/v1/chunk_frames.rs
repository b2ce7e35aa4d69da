//! `session/update` frames for text chunks, written from the chunk's checked parts: the same
//! JSON-RPC notification the SDK writes for the schema types, without building them.

use std::io::Write as _;

use agent_client_protocol::v1::schema::SessionId;
use zcode_coordinator::TextChunk;

/// Appends the frame of `chunk` for `session` to `out` (UTF-8, no newline).
pub fn write(out: &mut Vec<u8>, session: &SessionId, chunk: &TextChunk) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"#);
    string(out, &session.0);
    let kind = chunk.kind.tag();
    let _ =
        write!(out, r#","update":{{"sessionUpdate":"{kind}","content":{{"type":"text","text":"#);
    // Escaped as serde_json escapes it already: copied, not escaped again.
    out.push(b'"');
    out.extend_from_slice(chunk.escaped_text().as_bytes());
    out.extend_from_slice(b"\"}");
    if let Some(id) = &chunk.message_id {
        out.extend_from_slice(br#","messageId":"#);
        string(out, id);
    }
    out.extend_from_slice(b"}}}");
}

/// A JSON string, escaped as serde_json escapes it.
fn string(out: &mut Vec<u8>, text: &str) {
    serde_json::to_writer(out, text).expect("writing to a Vec cannot fail");
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
            TextChunk::new(
                ChunkKind::AgentThoughtChunk,
                "tab\t quote\" \\ nl\n \u{1}é 😀 </script>",
                Some("m\"1".into()),
            ),
            TextChunk::new(ChunkKind::UserMessageChunk, "", None),
        ];
        for chunk in chunks {
            let mut frame = Vec::new();
            write(&mut frame, &session, &chunk);
            let frame = String::from_utf8(frame).unwrap();
            let typed = SessionNotification::new(session.clone(), chunk.clone().into_update());
            let expected = json!({"jsonrpc": "2.0", "method": "session/update", "params": typed});
            assert_eq!(serde_json::from_str::<Value>(&frame).unwrap(), expected, "{frame}");
            // Byte for byte as well: the text is escaped exactly as serde_json escapes it.
            assert!(frame.contains(&serde_json::to_string(&chunk.text()).unwrap()));
            assert!(!frame.contains('\n'), "one line");
        }
    }
}
