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

/// `doctor`'s probe (WIT `probe-request`): the workspace, and the contract's facts read as for
/// a new session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeRequest {
    pub workspace: String,
    pub facts: crate::Facts,
}

impl ProbeRequest {
    /// A probe of `workspace` without facts (a mapper that declares none, a test).
    pub fn workspace(workspace: impl Into<String>) -> Self {
        Self { workspace: workspace.into(), facts: Vec::new() }
    }
}

/// A probe without facts is written as its workspace alone, as before 0.4 carried facts, so the
/// golden traces recorded then (`{"probe": "/w"}`) keep replaying and a fact-less probe records
/// the same line; one with facts is `{"workspace", "facts"}`.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum ProbeRequestForm {
    Workspace(String),
    Full {
        workspace: String,
        #[serde(default)]
        facts: crate::Facts,
    },
}

impl Serialize for ProbeRequest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let form = if self.facts.is_empty() {
            ProbeRequestForm::Workspace(self.workspace.clone())
        } else {
            ProbeRequestForm::Full { workspace: self.workspace.clone(), facts: self.facts.clone() }
        };
        form.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ProbeRequest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match ProbeRequestForm::deserialize(deserializer)? {
            ProbeRequestForm::Workspace(workspace) => Self::workspace(workspace),
            ProbeRequestForm::Full { workspace, facts } => Self { workspace, facts },
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectionOp {
    Setup,
    Probe(ProbeRequest),
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

#[cfg(test)]
mod probe_tests {
    use super::*;
    use crate::{FactValue, Presence};

    #[test]
    fn a_probe_without_facts_reads_and_writes_as_its_workspace() {
        let op: ConnectionOp = serde_json::from_str(r#"{"probe":"/w"}"#).unwrap();
        assert_eq!(op, ConnectionOp::Probe(ProbeRequest::workspace("/w")));
        assert_eq!(serde_json::to_string(&op).unwrap(), r#"{"probe":"/w"}"#);
    }

    #[test]
    fn a_probe_with_facts_round_trips() {
        let op = ConnectionOp::Probe(ProbeRequest {
            workspace: "/w".into(),
            facts: vec![("k".into(), FactValue::Presence(Presence::Absent))],
        });
        let text = serde_json::to_string(&op).unwrap();
        assert!(text.contains(r#""facts""#), "{text}");
        assert_eq!(serde_json::from_str::<ConnectionOp>(&text).unwrap(), op);
    }
}
