//! `session/load` history replay: persisted messages → ACP updates, in order.

use serde_json::Value;
use zcode_mapper_sdk::acp::prompt::file_part_link;
use zcode_mapper_sdk::acp::update::{self, Chunk};
use zcode_mapper_sdk::contract::MapperError;

use crate::settings::{Message, Role};
use crate::tools::{FAILED_TOOL, Status, ToolCallView, completed_content};
use zcode_mapper_sdk::json::{Fields, protocol};
use zcode_mapper_sdk::tool_view::error_content;

pub fn replay(messages: &[Message], workspace: &str) -> Result<Vec<String>, MapperError> {
    let mut updates = Vec::new();
    for message in messages {
        let message_id = message.info.message_id.as_deref();
        for part in &message.parts {
            updates.extend(part_update(message.info.role, message_id, part, workspace)?);
        }
    }
    Ok(updates)
}

fn part_update(
    role: Role,
    message_id: Option<&str>,
    part: &Value,
    workspace: &str,
) -> Result<Option<String>, MapperError> {
    let message_kind = match role {
        Role::User => Chunk::User,
        Role::Assistant => Chunk::Agent,
    };
    let part_type = part.get("type").and_then(Value::as_str).unwrap_or_default();
    match (part_type, role) {
        ("text", _) | ("reasoning", Role::Assistant) => {
            let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
            if text.is_empty() {
                return Ok(None);
            }
            let kind = if part_type == "reasoning" { Chunk::Thought } else { message_kind };
            Ok(Some(update::text_chunk(kind, text, message_id)))
        }
        ("file", _) => {
            Fields::native(part, "Persisted file part").map_err(|_| malformed("file"))?;
            let link = file_part_link(part).ok_or_else(|| malformed("file"))?;
            Ok(Some(update::content_chunk(message_kind, &link, message_id)))
        }
        ("tool", _) => tool_part(part, workspace).map(Some),
        // Other persisted parts (step markers, snapshots, ...) have no ACP form.
        _ => Ok(None),
    }
}

fn malformed(kind: &str) -> MapperError {
    protocol(format!("Persisted {kind} part is malformed"))
}

fn tool_part(part: &Value, workspace: &str) -> Result<String, MapperError> {
    let fields = Fields::native(part, "Persisted tool part").map_err(|_| malformed("tool"))?;
    let id = fields.non_empty_str("callId").map_err(|_| malformed("tool"))?;
    let name = fields.non_empty_str("tool").map_err(|_| malformed("tool"))?;
    let state = fields.object("state", "Persisted tool state").map_err(|_| malformed("tool"))?;
    let status = match state.str("status").map_err(|_| malformed("tool"))? {
        "pending" => Status::Pending,
        "running" => Status::InProgress,
        "completed" => Status::Completed,
        "error" => Status::Failed,
        other => return Err(protocol(format!("Unsupported persisted tool status: {other}"))),
    };
    let input = state.get("input");
    let (raw_output, content) = match status {
        Status::Completed => {
            let output = state.get("output");
            (output, completed_content(name, output.unwrap_or(&Value::Null), input, workspace))
        }
        Status::Failed => (state.get("error"), error_content(state.get("error"), FAILED_TOOL)),
        _ => (None, Vec::new()),
    };
    let view = ToolCallView {
        id,
        name,
        title: state.opt_str("title").ok().flatten(),
        status,
        raw_input: input,
        raw_output,
        content,
    };
    Ok(view.to_update(workspace))
}
