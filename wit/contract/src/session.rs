//! Session input and what the mapper makes of it.

use serde::{Deserialize, Serialize};

use crate::error::MapperError;
use crate::native::{NativeData, NativeReply, NativeWrite};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionInput {
    Event(NativeData),
    Reply(NativeReply),
}

impl SessionInput {
    /// Bytes of native data carried (for size limits).
    pub fn len(&self) -> usize {
        match self {
            SessionInput::Event(data) => data.len(),
            SessionInput::Reply(reply) => match &reply.body {
                crate::ReplyBody::Ok(data) => data.len(),
                crate::ReplyBody::Error(error) => error.message.len(),
                crate::ReplyBody::Lost(reason) => reason.len(),
            },
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Effects {
    pub actions: Vec<Action>,
    pub writes: Vec<NativeWrite>,
    pub requests: u32,
}

impl Effects {
    pub fn from_actions(actions: Vec<Action>) -> Self {
        Self { actions, ..Self::default() }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Update(String),
    Interaction(Interaction),
    Terminal(Terminal),
    Ignore(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interaction {
    pub key: String,
    pub request: InteractionRequest,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InteractionRequest {
    Permission(PermissionRequest),
    Elicitation(String),
    Headless(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionRequest {
    pub request: String,
    pub deny_option: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Terminal {
    Stop(StopReason),
    Failed(MapperError),
    Broken(MapperError),
}
