//! Persisted messages in the protocol's `ZCodeMessageWithParts` shape (3.15.1
//! `zcode-protocol-legacy-types.ts`): `{info, parts}`, where `info` is a user or assistant
//! message info and every part carries `partId`, `sessionId` and `messageId`.

use serde_json::{Value, json};

use crate::common::clock::now_ms;

pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// The user message of a prompt.
pub fn user_message(
    session_id: &str,
    message_id: &str,
    text: &str,
    model: Option<&Value>,
) -> Value {
    let mut info = json!({
        "messageId": message_id, "sessionId": session_id, "role": "user",
        "time": {"created": now_ms()}, "agent": "build",
    });
    if let Some(model) = model {
        info["model"] = model.clone();
    }
    let part = json!({"partId": new_id("prt"), "sessionId": session_id, "messageId": message_id,
                      "type": "text", "text": text});
    json!({"info": info, "parts": [part]})
}

/// Token counts as an assistant message records them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub reasoning: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// What an assistant message needs besides its parts.
pub struct AssistantInfo<'a> {
    pub session_id: &'a str,
    pub message_id: &'a str,
    pub parent_message_id: &'a str,
    pub model: Option<&'a Value>,
    pub workspace_path: &'a str,
    pub created: u64,
    pub tokens: Tokens,
    pub finish: &'a str,
}

pub fn assistant_message(info: &AssistantInfo<'_>, parts: Vec<Value>) -> Value {
    let tokens = info.tokens;
    let mut value = json!({
        "messageId": info.message_id, "sessionId": info.session_id, "role": "assistant",
        "time": {"created": info.created, "completed": now_ms()},
        "parentMessageId": info.parent_message_id, "agent": "build",
        "path": {"cwd": info.workspace_path, "root": info.workspace_path},
        "cost": 0,
        "tokens": {"total": tokens.input + tokens.output + tokens.reasoning, "input": tokens.input,
                   "output": tokens.output, "reasoning": tokens.reasoning,
                   "cache": {"read": tokens.cache_read, "write": tokens.cache_write}},
        "finish": info.finish,
        "semantics": {"origin": "agent_runtime", "kind": "assistant_response",
                      "uiVisibility": "visible", "providerVisibility": "visible",
                      "transcriptVisibility": "visible"},
    });
    if let Some(model) = info.model {
        value["model"] = model.clone();
    }
    json!({"info": value, "parts": parts})
}

/// A part of message `message_id`: `fields` plus the part identity.
pub fn part(session_id: &str, message_id: &str, fields: Value) -> Value {
    let mut part =
        json!({"partId": new_id("prt"), "sessionId": session_id, "messageId": message_id});
    if let (Some(target), Value::Object(extra)) = (part.as_object_mut(), fields) {
        target.extend(extra);
    }
    part
}

/// The text of a message (its `text` parts joined, like `textFromZCodeMessageParts`).
pub fn text(message: &Value) -> String {
    message["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|part| part["type"] == "text")
        .filter_map(|part| part["text"].as_str())
        .collect()
}

pub fn part_count(messages: &[Value]) -> usize {
    messages.iter().map(|message| message["parts"].as_array().map_or(0, Vec::len)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_protocol_shaped_messages() {
        let user = user_message("sess_a", "msg_u", "hello", None);
        assert_eq!(text(&user), "hello");
        assert_eq!(user["parts"][0]["sessionId"], "sess_a");
        let info = AssistantInfo {
            session_id: "sess_a",
            message_id: "msg_a",
            parent_message_id: "msg_u",
            model: None,
            workspace_path: "/w",
            created: 1,
            tokens: Tokens { input: 2, output: 3, ..Tokens::default() },
            finish: "stop",
        };
        let reply = assistant_message(
            &info,
            vec![part("sess_a", "msg_a", json!({"type": "text", "text": "hi"}))],
        );
        assert_eq!(reply["info"]["tokens"]["total"], 5);
        assert_eq!(reply["parts"][0]["messageId"], "msg_a");
        assert_eq!(part_count(&[user, reply]), 2);
    }
}
