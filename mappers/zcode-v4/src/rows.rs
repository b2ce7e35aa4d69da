//! Conversation rows (ZCode 3.15.1 `zcode-protocol-v4/rows.ts`): a closed set of kinds, each
//! row self-contained. Only what the mapping uses is read, but every row is checked for a known
//! kind, and every field the mapping reads for a known value: an unknown kind or value is a
//! protocol break. (ZCode's own schemas ignore unknown keys of rows, and so does this reader.)

use serde_json::Value;
use zcode_contract::MapperError;

use zcode_mapper_sdk::elide::Text;
use zcode_mapper_sdk::json::protocol;

use crate::schema::Fields;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderState {
    Running,
    CompletedSuccess,
    CompletedInterrupted,
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextState {
    Streaming,
    Complete,
    Interrupted,
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolStatus {
    InputStreaming,
    PendingApproval,
    Running,
    Success,
    Error,
    Cancelled,
}

impl ToolStatus {
    pub fn is_final(self) -> bool {
        matches!(self, ToolStatus::Success | ToolStatus::Error | ToolStatus::Cancelled)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolRow {
    pub tool_call_id: String,
    pub tool_name: String,
    pub status: ToolStatus,
    pub input_text: String,
    pub input: Option<Value>,
    /// `{text, display?, truncated?}`; display is decoration (ZCode drops a display it cannot
    /// read rather than the row), so it is never read here.
    pub output_text: Option<String>,
    pub truncated: Option<Value>,
    pub error: Option<Value>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum RowBody {
    TurnHeader {
        origin: &'static str,
        state: HeaderState,
        source_command_id: Option<String>,
    },
    UserInput {
        origin: &'static str,
        text: String,
        source_command_id: Option<String>,
        attachments: Vec<String>,
    },
    /// Its text is elided only in a delta's row ([`parse_owned`]), where a long frame was
    /// compacted as it came (`crate::wire`); a row of a snapshot or page is always whole.
    AssistantText {
        text: Text<'static>,
        state: TextState,
        response_id: Option<String>,
    },
    Reasoning {
        text: Text<'static>,
        state: TextState,
        response_id: Option<String>,
    },
    ToolCall(Box<ToolRow>),
    /// A sub-agent's progress; its parent `Agent`/`Task` tool call is a row of its own.
    Subagent {
        streaming: bool,
    },
    /// Kinds with no ACP form: artifacts, hook invocations, timeline markers.
    Other(&'static str),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub id: u64,
    pub body: RowBody,
}

impl Row {
    pub fn kind(&self) -> &'static str {
        match &self.body {
            RowBody::TurnHeader { .. } => "turnHeader",
            RowBody::UserInput { .. } => "userInput",
            RowBody::AssistantText { .. } => "assistantText",
            RowBody::Reasoning { .. } => "reasoning",
            RowBody::ToolCall(_) => "toolCall",
            RowBody::Subagent { .. } => "subagent",
            RowBody::Other(kind) => kind,
        }
    }
}

fn text_state(fields: &Fields<'_>, allow_failed: bool) -> Result<TextState, MapperError> {
    let allowed: &[&'static str] = if allow_failed {
        &["streaming", "complete", "interrupted", "failed"]
    } else {
        &["streaming", "complete", "interrupted"]
    };
    Ok(match fields.one_of("state", allowed)? {
        "streaming" => TextState::Streaming,
        "complete" => TextState::Complete,
        "interrupted" => TextState::Interrupted,
        _ => TextState::Failed,
    })
}

fn opt_string(fields: &Fields<'_>, key: &str) -> Result<Option<String>, MapperError> {
    Ok(fields.opt_str(key)?.map(str::to_string))
}

pub fn parse(value: &Value) -> Result<Row, MapperError> {
    let fields = Fields::native(value, "conversation row")?;
    let id = fields.u64("rowId")?;
    fields.str("turnId")?;
    fields.f64("createdAt")?;
    let kind = fields.one_of(
        "kind",
        &[
            "turnHeader",
            "userInput",
            "assistantText",
            "reasoning",
            "toolCall",
            "artifact",
            "subagent",
            "hookInvocation",
            "timelineMarker",
        ],
    )?;
    let body = match kind {
        "turnHeader" => RowBody::TurnHeader {
            origin: fields.one_of(
                "origin",
                &[
                    "userInput",
                    "backgroundResult",
                    "goalContinuation",
                    "editRerun",
                    "workflowLaunch",
                ],
            )?,
            state: match fields.one_of(
                "state",
                &["running", "completedSuccess", "completedInterrupted", "failed"],
            )? {
                "running" => HeaderState::Running,
                "completedSuccess" => HeaderState::CompletedSuccess,
                "completedInterrupted" => HeaderState::CompletedInterrupted,
                _ => HeaderState::Failed,
            },
            source_command_id: opt_string(&fields, "sourceCommandId")?,
        },
        "userInput" => {
            let mut attachments = Vec::new();
            for attachment in
                fields.opt_array("attachments")?.map(Vec::as_slice).unwrap_or_default()
            {
                let attachment = Fields::native(attachment, "userInput attachment")?;
                let name = attachment.opt_str("fileName")?.unwrap_or("attachment");
                let mime = attachment.opt_str("mime")?.unwrap_or("application/octet-stream");
                attachments.push(format!("{name} ({mime})"));
            }
            RowBody::UserInput {
                origin: fields.one_of(
                    "origin",
                    &[
                        "realUser",
                        "backgroundResult",
                        "goalContinuation",
                        "mailbox",
                        "synthetic",
                        "workflowLaunch",
                    ],
                )?,
                text: fields.str("text")?.to_string(),
                source_command_id: opt_string(&fields, "sourceCommandId")?,
                attachments,
            }
        }
        "assistantText" => RowBody::AssistantText {
            text: Text::Whole(fields.str("text")?.to_string().into()),
            state: text_state(&fields, true)?,
            response_id: opt_string(&fields, "assistantResponseId")?,
        },
        "reasoning" => RowBody::Reasoning {
            text: Text::Whole(fields.str("text")?.to_string().into()),
            state: text_state(&fields, false)?,
            response_id: opt_string(&fields, "assistantResponseId")?,
        },
        "toolCall" => {
            let status = match fields.one_of(
                "status",
                &["inputStreaming", "pendingApproval", "running", "success", "error", "cancelled"],
            )? {
                "inputStreaming" => ToolStatus::InputStreaming,
                "pendingApproval" => ToolStatus::PendingApproval,
                "running" => ToolStatus::Running,
                "success" => ToolStatus::Success,
                "error" => ToolStatus::Error,
                _ => ToolStatus::Cancelled,
            };
            let (output_text, truncated) = match fields.opt_object("output", "toolCall output")? {
                Some(output) => {
                    (Some(output.str("text")?.to_string()), output.get("truncated").cloned())
                }
                None => (None, None),
            };
            RowBody::ToolCall(Box::new(ToolRow {
                tool_call_id: fields.non_empty_str("toolCallId")?.to_string(),
                tool_name: fields.str("toolName")?.to_string(),
                status,
                input_text: fields.str("inputText")?.to_string(),
                input: fields.get("input").filter(|input| !input.is_null()).cloned(),
                output_text,
                truncated,
                error: fields.get("error").filter(|error| !error.is_null()).cloned(),
            }))
        }
        "subagent" => RowBody::Subagent {
            streaming: fields.one_of("status", &["running", "success", "failed", "cancelled"])?
                == "running",
        },
        other => RowBody::Other(other),
    };
    Ok(Row { id, body })
}

/// [`parse`] of a row the caller hands over: its large strings (texts, a tool's input and
/// output) are moved into the row instead of copied, so a delta's row is held once (F-20).
pub fn parse_owned(mut value: Value) -> Result<Row, MapperError> {
    fn take_string(slot: Option<&mut Value>) -> Option<String> {
        match slot? {
            Value::String(text) => Some(std::mem::take(text)),
            _ => None,
        }
    }
    // A text row's text may have come elided: the placeholder string keeps `parse`'s checks.
    let text_row =
        matches!(value.get("kind").and_then(Value::as_str), Some("assistantText" | "reasoning"));
    let elided = match value.get_mut("text") {
        Some(slot) if text_row => match Text::of(slot) {
            Some(Text::Elided(elided)) => {
                *slot = Value::String(String::new());
                Some(elided)
            }
            _ => None,
        },
        _ => None,
    };
    let text = take_string(value.get_mut("text"));
    let input_text = take_string(value.get_mut("inputText"));
    let output_text = take_string(value.get_mut("output").and_then(|o| o.get_mut("text")));
    // The placeholders keep the checks of `parse` (each is still a string).
    let input = value.get_mut("input").map(Value::take);
    let mut row = parse(&value)?;
    match &mut row.body {
        RowBody::UserInput { text: slot, .. } => *slot = text.unwrap_or_default(),
        RowBody::AssistantText { text: slot, .. } | RowBody::Reasoning { text: slot, .. } => {
            *slot = match elided {
                Some(elided) => Text::Elided(elided),
                None => Text::Whole(text.unwrap_or_default().into()),
            };
        }
        RowBody::ToolCall(tool) => {
            tool.input = input.filter(|input| !input.is_null());
            // The text is read only where no parsed input is known: a written file's text is
            // not held twice (F-20).
            if tool.input.is_none() {
                tool.input_text = input_text.unwrap_or_default();
            }
            if tool.output_text.is_some() {
                tool.output_text = output_text;
            }
        }
        _ => {}
    }
    Ok(row)
}

/// The streamable paths of `row.delta` (`streamablePathSchema`) and the row kinds they apply
/// to while streaming.
pub fn delta_applies(row: &RowBody, path: &str) -> Result<bool, MapperError> {
    Ok(match (path, row) {
        ("text", RowBody::AssistantText { state, .. } | RowBody::Reasoning { state, .. }) => {
            *state == TextState::Streaming
        }
        ("inputText", RowBody::ToolCall(tool)) => tool.status == ToolStatus::InputStreaming,
        ("output.text", RowBody::ToolCall(tool)) => tool.status == ToolStatus::Running,
        ("summaryText", RowBody::Subagent { streaming }) => *streaming,
        ("text" | "inputText" | "output.text" | "summaryText", _) => false,
        (other, _) => return Err(protocol(format!("row.delta: unknown path `{other}`"))),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn base(kind: &str) -> Value {
        json!({"rowId": 7, "turnId": "t", "createdAt": 1, "createdAtSeq": 1, "kind": kind})
    }

    fn with(kind: &str, extra: Value) -> Value {
        let mut row = base(kind);
        for (k, v) in extra.as_object().unwrap() {
            row[k] = v.clone();
        }
        row
    }

    #[test]
    fn reads_every_kind() {
        let header = parse(&with("turnHeader", json!({"origin": "userInput", "state": "running", "startedAt": 1, "sourceCommandId": "c"}))).unwrap();
        assert_eq!(
            header.body,
            RowBody::TurnHeader {
                origin: "userInput",
                state: HeaderState::Running,
                source_command_id: Some("c".into())
            }
        );
        let input = parse(&with("userInput", json!({"origin": "realUser", "text": "hi", "attachments": [{"ref": "r", "fileName": "a.png", "mime": "image/png", "bytes": 3}]}))).unwrap();
        assert!(
            matches!(input.body, RowBody::UserInput { ref attachments, .. } if attachments == &["a.png (image/png)"])
        );
        let text = parse(&with("assistantText", json!({"text": "x", "state": "failed"}))).unwrap();
        assert!(matches!(text.body, RowBody::AssistantText { state: TextState::Failed, .. }));
        let tool = parse(&with("toolCall", json!({"toolCallId": "c1", "toolName": "Bash", "status": "success", "inputText": "{}", "input": {"command": "ls"}, "output": {"text": "a", "display": {"kind": "anything"}}}))).unwrap();
        let RowBody::ToolCall(tool) = tool.body else { panic!() };
        assert_eq!((tool.status, tool.output_text.as_deref()), (ToolStatus::Success, Some("a")));
        for kind in ["artifact", "hookInvocation", "timelineMarker"] {
            assert_eq!(parse(&base(kind)).unwrap().kind(), kind);
        }
        assert_eq!(
            parse(&with("subagent", json!({"status": "running"}))).unwrap().body,
            RowBody::Subagent { streaming: true }
        );
    }

    #[test]
    fn unknown_kinds_and_values_are_breaks() {
        assert_eq!(
            parse(&base("poll")).unwrap_err().message,
            "conversation row: unknown `kind` value `poll`"
        );
        assert!(
            parse(&with("reasoning", json!({"text": "x", "state": "failed"}))).is_err(),
            "reasoning never fails"
        );
        assert!(
            parse(&with(
                "toolCall",
                json!({"toolCallId": "c", "toolName": "x", "status": "queued", "inputText": ""})
            ))
            .is_err()
        );
        assert!(parse(&with("userInput", json!({"origin": "alien", "text": ""}))).is_err());
        assert!(parse(&json!({"kind": "userInput"})).is_err());
    }

    #[test]
    fn deltas_apply_only_to_streaming_paths() {
        let streaming = RowBody::AssistantText {
            text: Text::Whole("".into()),
            state: TextState::Streaming,
            response_id: None,
        };
        assert!(delta_applies(&streaming, "text").unwrap());
        assert!(!delta_applies(&streaming, "inputText").unwrap());
        let done = RowBody::AssistantText {
            text: Text::Whole("".into()),
            state: TextState::Complete,
            response_id: None,
        };
        assert!(!delta_applies(&done, "text").unwrap());
        assert!(delta_applies(&streaming, "body").is_err());
    }
}
