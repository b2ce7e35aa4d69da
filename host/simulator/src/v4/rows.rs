//! What a V4 row holds of a finished tool (3.15.1
//! `apps/zcode-cli/packages/bootstrap/src/zcode-protocol-v4/projection-rows.ts`).

use serde_json::{Value, json};

/// `PROTOCOL_V4_LIMITS.toolOutputFinalHeadBytes` and `toolOutputFinalTailBytes`
/// (3.15.1 `packages/shared/src/zcode-protocol-v4` limits).
const HEAD: usize = 32 * 1024;
const TAIL: usize = 32 * 1024;

/// A `toolCall` row's `output`, as `buildToolOutput(result, toolCallId)` cuts it: a text over
/// head + tail bytes keeps its first and last 32 KiB, joined by `\n…\n`, and says how long it
/// was and where the whole is (`tool-output/<id>`). Node decodes each cut with
/// `Buffer.toString("utf8")`, so a character split at an edge becomes U+FFFD, as here.
pub fn tool_output(text: &str, tool_call_id: &str) -> Value {
    let bytes = text.as_bytes();
    if bytes.len() <= HEAD + TAIL {
        return json!({"text": text});
    }
    let head = String::from_utf8_lossy(&bytes[..HEAD]);
    let tail = String::from_utf8_lossy(&bytes[bytes.len() - TAIL..]);
    json!({"text": format!("{head}\n…\n{tail}"),
           "truncated": {"totalBytes": bytes.len(), "ref": format!("tool-output/{tool_call_id}")}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_up_to_head_and_tail_is_whole() {
        assert_eq!(tool_output("ok", "c1"), json!({"text": "ok"}));
        let limit = "x".repeat(HEAD + TAIL);
        assert_eq!(tool_output(&limit, "c1"), json!({"text": limit}));
    }

    #[test]
    fn a_longer_output_keeps_its_head_and_tail() {
        let text = format!("{}{}{}", "h".repeat(HEAD), "m", "t".repeat(TAIL));
        let expected = format!("{}\n…\n{}", "h".repeat(HEAD), "t".repeat(TAIL));
        assert_eq!(
            tool_output(&text, "c1"),
            json!({"text": expected, "truncated": {"totalBytes": HEAD + TAIL + 1, "ref": "tool-output/c1"}})
        );
    }

    #[test]
    fn a_character_cut_at_either_edge_becomes_replacement_characters() {
        // "é" (2 bytes) straddles the head's end, "😀" (4 bytes) the tail's start: Node makes
        // the head's lone lead byte one U+FFFD and each of the tail's 3 stray bytes one more.
        let (a, z) = ("a".repeat(HEAD - 1), "z".repeat(TAIL - 3));
        let text = format!("{a}é{}😀{z}", "m".repeat(9));
        let output = tool_output(&text, "c1");
        let expected = format!("{a}\u{FFFD}\n…\n\u{FFFD}\u{FFFD}\u{FFFD}{z}");
        assert_eq!(output["text"], json!(expected));
        assert_eq!(output["truncated"]["totalBytes"], json!(text.len()));
    }
}
