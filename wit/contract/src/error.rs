//! Errors a mapper reports, and the fault of a mapper that failed itself.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    InvalidParams,
    AuthRequired,
    NotFound,
    Unsupported,
    Protocol,
    Native,
    Internal,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct MapperError {
    pub kind: ErrorKind,
    pub message: String,
    /// JSON object text with non-secret details.
    pub data: Option<String>,
}

impl MapperError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), data: None }
    }
}

/// The mapper itself failed: it trapped, hit a resource cap, or returned output the core
/// refuses. Whatever used that mapper instance is failed; the process carries on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("mapper failed: {0}")]
pub struct MapperFault(pub String);

impl From<MapperFault> for MapperError {
    fn from(fault: MapperFault) -> Self {
        MapperError::new(ErrorKind::Internal, fault.to_string())
    }
}
