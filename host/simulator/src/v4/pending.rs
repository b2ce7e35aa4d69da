//! A session's `pendingInteractions` entry: what the client may answer through
//! `resolveInteraction` (3.15.1 `packages/shared/src/zcode-protocol-v4/snapshot.ts`,
//! `pendingInteractionSchema`). The entry's kind is `permission`, `userInput` or
//! `workspaceHookReview`, its payload says the same kind, and it is anchored to a row.

use serde_json::{Value, json};

use crate::common::clock::now_ms;

/// The entry of interaction `id`, of `kind`, anchored to row `anchor`; `payload` gets the kind.
pub fn interaction(id: &str, kind: &str, anchor: u64, mut payload: Value) -> Value {
    payload["kind"] = json!(kind);
    json!({"interactionId": id, "kind": kind, "anchorRowId": anchor, "createdAt": now_ms(),
           "payload": payload})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_and_its_payload_say_the_same_kind() {
        let entry = interaction("perm_1", "permission", 4, json!({"toolCallId": "call_1"}));
        assert_eq!(entry["kind"], "permission");
        assert_eq!(entry["payload"], json!({"toolCallId": "call_1", "kind": "permission"}));
        assert_eq!((entry["anchorRowId"].as_u64(), entry["createdAt"].is_u64()), (Some(4), true));
    }
}
