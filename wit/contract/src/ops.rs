//! Operations: small state machines that turn one ACP request into native round trips.

use serde::{Deserialize, Serialize};

use crate::error::MapperError;
use crate::native::{NativeRequest, NativeWrite};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    Wait(Outgoing),
    Done(Result<OpResult, MapperError>),
}

/// Carried out in field order: updates sent, routes changed, writes and then requests written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outgoing {
    pub updates: Vec<String>,
    pub routes_added: Vec<String>,
    pub routes_removed: Vec<String>,
    pub writes: Vec<NativeWrite>,
    pub requests: Vec<NativeRequest>,
}

impl Outgoing {
    /// Whether any request of this step expects a reply.
    pub fn awaits_reply(&self) -> bool {
        self.requests.iter().any(NativeRequest::awaits_reply)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpResult {
    pub response: String,
    pub updates: Vec<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientFeatures {
    pub plan_operations: bool,
    pub form_elicitation: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInit {
    pub workspace: String,
    pub client: ClientFeatures,
    #[serde(default)]
    pub facts: crate::Facts,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectionOp {
    Setup,
    Probe(String),
    ListSessions(String),
}

impl ConnectionOp {
    /// Name for logs; never includes parameters.
    pub fn name(&self) -> &'static str {
        match self {
            ConnectionOp::Setup => "setup",
            ConnectionOp::Probe(_) => "probe",
            ConnectionOp::ListSessions(_) => "list-sessions",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionOp {
    Create(String),
    Load(String),
    Resume(String),
    Fork(String),
    Prompt(String),
    Cancel,
    FinishTurn,
    SetMode(String),
    SetConfigOption(String),
    Answer(InteractionAnswer),
    Close,
}

impl SessionOp {
    /// Name for logs; never includes parameters (they may hold user data).
    pub fn name(&self) -> &'static str {
        match self {
            SessionOp::Create(_) => "create",
            SessionOp::Load(_) => "load",
            SessionOp::Resume(_) => "resume",
            SessionOp::Fork(_) => "fork",
            SessionOp::Prompt(_) => "prompt",
            SessionOp::Cancel => "cancel",
            SessionOp::FinishTurn => "finish-turn",
            SessionOp::SetMode(_) => "set-mode",
            SessionOp::SetConfigOption(_) => "set-config-option",
            SessionOp::Answer(_) => "answer",
            SessionOp::Close => "close",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InteractionAnswer {
    pub key: String,
    pub outcome: InteractionOutcome,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InteractionOutcome {
    Selected(String),
    Elicited(String),
    Unavailable(String),
}
