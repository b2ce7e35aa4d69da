//! `session/messages` → the ACP updates that replay a loaded session.

use serde_json::Value;
use zcode_contract::MapperError;

use crate::tools;
use zcode_mapper_sdk::acp::prompt::file_part_link;
use zcode_mapper_sdk::acp::update::{self, Chunk, ToolCall, ToolStatus};
use zcode_mapper_sdk::json::protocol;

/// The visible history in order: user and assistant text, thinking, and each tool once with
/// its final state. Hidden messages (reminders, summaries the transcript hides) are left out.
pub fn replay(result: &Value, workspace: &str) -> Result<Vec<String>, MapperError> {
    let messages = result
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| protocol("session/messages result has no `messages`"))?;
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for message in messages {
        let info = message.get("info").unwrap_or(&Value::Null);
        // The same message can appear at several positions (reference APP §4.1).
        if let Some(id) = info.get("id").or_else(|| info.get("messageId")).and_then(Value::as_str)
            && !seen.insert(id.to_string())
        {
            continue;
        }
        if info.pointer("/semantics/transcriptVisibility").and_then(Value::as_str) == Some("hidden")
        {
            continue;
        }
        let user = info.get("role").and_then(Value::as_str) == Some("user");
        for part in message.get("parts").and_then(Value::as_array).into_iter().flatten() {
            match part.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(t) =
                        part.get("text").and_then(Value::as_str).filter(|t| !t.is_empty())
                    {
                        let chunk = if user { Chunk::User } else { Chunk::Agent };
                        out.push(update::text_chunk(chunk, t, None));
                    }
                }
                Some("reasoning") if part.get("ignored").and_then(Value::as_bool) != Some(true) => {
                    if let Some(t) = part
                        .get("text")
                        .or_else(|| part.get("content"))
                        .and_then(Value::as_str)
                        .filter(|t| !t.is_empty())
                    {
                        out.push(update::agent_thought(t));
                    }
                }
                // An attachment as ZCode recorded it (`session/send` attachments become file
                // parts), shown as a link to what was sent.
                Some("file") => {
                    if let Some(link) = file_part_link(part) {
                        let chunk = if user { Chunk::User } else { Chunk::Agent };
                        out.push(update::content_chunk(chunk, &link, None));
                    }
                }
                Some("tool") => {
                    let Some(id) =
                        part.get("callID").or_else(|| part.get("callId")).and_then(Value::as_str)
                    else {
                        continue;
                    };
                    let name = part.get("tool").and_then(Value::as_str).unwrap_or("Tool");
                    let state = part.get("state").unwrap_or(&Value::Null);
                    let mut calls = tools::Tools::default();
                    calls.set(id, Some(name), state.get("input"));
                    if let Some(announced) = calls.announced(id, workspace) {
                        let status = match state.get("status").and_then(Value::as_str) {
                            Some("completed") => ToolStatus::Completed,
                            Some("error") => ToolStatus::Failed,
                            Some("running") => ToolStatus::InProgress,
                            _ => ToolStatus::Pending,
                        };
                        // What the tool said (its output, or why it failed) as the live turn
                        // showed it: a replay loses nothing the client saw.
                        let said = match status {
                            ToolStatus::Failed => state.get("error"),
                            _ => state.get("output"),
                        };
                        let mut content = announced.diff.clone();
                        if let Some(said) = said.and_then(Value::as_str).filter(|s| !s.is_empty()) {
                            content.push(tools::text_content(said));
                        }
                        let call = ToolCall {
                            status,
                            raw_output: state.get("output").filter(|o| !o.is_null()),
                            content: &content,
                            ..announced.call()
                        };
                        out.push(call.to_json());
                    }
                }
                _ => {}
            }
        }
    }
    Ok(out)
}
