//! The scripted model: a scenario is the list of things one turn does.
//!
//! Scenarios are written in a JSON Lines language (see `docs/simulator.md`) and parsed into
//! these types; the built-in scenarios are written in the same language.

mod builtin;
mod parse;

use std::time::Duration;

use serde_json::Value;

use crate::common::fault::FaultKind;

pub use builtin::select;
pub(crate) use parse::{default_permission_options, split_chars, workspace_relative};
pub use parse::{parse, parse_lines};

#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Run only when the turn's most recent interaction had this outcome.
    pub condition: Option<Condition>,
    pub action: Action,
}

/// Outcome of the last permission, question, plan approval or header request of the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    Allowed,
    Denied,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Assistant text, one `text_delta` per chunk.
    Text(Vec<String>),
    /// Reasoning, one `reasoning_delta` per chunk.
    Reasoning(Vec<String>),
    /// `count` text deltas of the same `chunk`, rendered in bulk (benchmarks).
    Stream {
        count: u64,
        chunk: String,
    },
    Tool(Box<ToolCall>),
    Question(Question),
    PlanApproval(PlanApproval),
    /// Replace the session's todo list (a `snapshot` event follows).
    Todos(Vec<Value>),
    /// Set the session title (`session.titleUpdated` and a `snapshot` follow).
    Title(String),
    /// Ask the client for provider runtime headers; a refusal fails the turn.
    ProviderHeaders {
        reason: String,
    },
    Sleep(Duration),
    /// Wait until the turn is stopped.
    Stall,
    /// A raw dynamic event, written to the session's subscribers as is.
    Event(Value),
    /// A `session.event` with this type and payload (envelope added by the host).
    SessionEvent {
        kind: String,
        payload: Value,
    },
    Usage(UsageOverride),
    /// End the turn with `turn.completed` and this `resultType`.
    End(String),
    /// End the turn with `turn.failed` and this message.
    Fail(String),
    Fault(FaultKind),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub call_id: Option<String>,
    pub input: Value,
    /// How many `tool_input_delta` events carry the JSON text of `input`.
    pub input_chunks: usize,
    pub title: Option<String>,
    pub permission: Option<Permission>,
    /// Payloads of `tool.updated` `progress` events.
    pub progress: Vec<Value>,
    pub outcome: ToolOutcome,
    /// Done for real in the workspace, only when the tool is allowed to run.
    pub effect: Option<Effect>,
}

impl ToolCall {
    /// The tool call behind a question the turn asks (a form, a plan to approve): no
    /// permission, progress or effect of its own.
    pub fn asking(name: &str, call_id: &str, input: &Value, chunks: usize, title: &str) -> Self {
        ToolCall {
            name: name.into(),
            call_id: Some(call_id.into()),
            input: input.clone(),
            input_chunks: chunks,
            title: Some(title.into()),
            permission: None,
            progress: Vec::new(),
            outcome: ToolOutcome::Default,
            effect: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// The effect's natural result, or `{"content":"ok"}` without an effect.
    Default,
    Result(Value),
    Error(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Write `content` to the workspace-relative `path`.
    Write { path: String, content: String },
    /// Return the content of the workspace-relative `path`.
    Read { path: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Permission {
    pub reason: String,
    pub risk: String,
    /// Native `PermissionOption` objects (`{optionId, kind, name, description?, response}`).
    pub options: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub call_id: Option<String>,
    pub prompt: Option<String>,
    /// Native question objects (`{question, header, options, multiSelect?}`).
    pub questions: Vec<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanSource {
    /// `permission.request` for the `ExitPlanMode` tool.
    Permission,
    /// `userInput.request` with `schema.interaction = "plan_approval"`.
    UserInput,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PlanApproval {
    pub source: PlanSource,
    pub plan: String,
    pub reason: String,
}

/// Token counts a turn reports instead of the estimated ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageOverride {
    pub input: Option<u64>,
    pub output: Option<u64>,
    pub reasoning: Option<u64>,
    pub cache_read: Option<u64>,
    pub cache_creation: Option<u64>,
}
