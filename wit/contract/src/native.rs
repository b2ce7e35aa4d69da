//! Native traffic: what the core writes to the host, and what the connection makes of the
//! host's output.

use serde::{Deserialize, Serialize};

use crate::error::MapperError;

/// Native data as the native side has it: text (NDJSON) or bytes (binary IPC).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NativeData {
    Text(String),
    Binary(Vec<u8>),
}

impl NativeData {
    pub fn len(&self) -> usize {
        match self {
            NativeData::Text(text) => text.len(),
            NativeData::Binary(bytes) => bytes.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The text, if this is text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            NativeData::Text(text) => Some(text),
            NativeData::Binary(_) => None,
        }
    }
}

impl From<String> for NativeData {
    fn from(text: String) -> Self {
        NativeData::Text(text)
    }
}

impl From<&str> for NativeData {
    fn from(text: &str) -> Self {
        NativeData::Text(text.to_string())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeRequest {
    pub id: u64,
    pub bytes: Vec<u8>,
    pub label: String,
    pub timeout_ms: u32,
}

impl NativeRequest {
    /// A zero timeout means no reply is expected: written, not tracked.
    pub fn awaits_reply(&self) -> bool {
        self.timeout_ms != 0
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeWrite {
    pub bytes: Vec<u8>,
    pub label: String,
    pub secret: Option<SecretFill>,
}

impl NativeWrite {
    pub fn new(label: impl Into<String>, bytes: Vec<u8>) -> Self {
        Self { bytes, label: label.into(), secret: None }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretFill {
    pub placeholder: String,
    pub source: String,
    pub args: Vec<(String, String)>,
    pub fallback: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplyBody {
    Ok(NativeData),
    Error(MapperError),
    Lost(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NativeReply {
    pub id: u64,
    pub body: ReplyBody,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Inbound {
    Reply(NativeReply),
    Event(RoutedEvent),
    Write(NativeWrite),
    Ready,
    Ignored(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutedEvent {
    pub route: String,
    pub payload: NativeData,
}
