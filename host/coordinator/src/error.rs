//! Coordinator errors and their JSON-RPC form.

use agent_client_protocol::{Error, ErrorCode};
use serde_json::json;
use zcode_bridge::OpFailure;
use zcode_contract::{ErrorKind, MapperError, MapperFault};

#[derive(Debug, Clone, thiserror::Error)]
pub enum CoordinatorError {
    /// The client sent something we cannot accept (bad cwd, content, mode, option).
    #[error("{0}")]
    InvalidParams(String),
    /// The user has to sign in to ZCode first.
    #[error("{0}")]
    AuthRequired(String),
    #[error("unknown session: {0}")]
    SessionNotFound(String),
    /// The request is valid but the session's state does not allow it now.
    #[error("{0}")]
    Busy(String),
    /// No installed ZCode can be used; `data` carries what was found and expected.
    #[error("{message}")]
    Compatibility { message: String, data: serde_json::Value },
    /// The host or the mapper failed; `kind` says where (never contains user data).
    #[error("{message}")]
    Failed { kind: &'static str, message: String },
}

impl CoordinatorError {
    pub fn failed(kind: &'static str, message: impl Into<String>) -> Self {
        Self::Failed { kind, message: message.into() }
    }
}

impl From<MapperError> for CoordinatorError {
    fn from(error: MapperError) -> Self {
        let MapperError { kind, message, .. } = error;
        match kind {
            ErrorKind::InvalidParams => Self::InvalidParams(message),
            ErrorKind::AuthRequired => Self::AuthRequired(message),
            ErrorKind::NotFound => Self::SessionNotFound(message),
            ErrorKind::Unsupported => Self::failed("unsupported", message),
            ErrorKind::Protocol => Self::failed("native-protocol", message),
            ErrorKind::Native => Self::failed("native", message),
            ErrorKind::Internal => Self::failed("mapper", message),
        }
    }
}

impl From<MapperFault> for CoordinatorError {
    fn from(fault: MapperFault) -> Self {
        Self::failed("mapper-fault", fault.to_string())
    }
}

impl From<OpFailure> for CoordinatorError {
    fn from(failure: OpFailure) -> Self {
        match failure {
            OpFailure::Mapper(error) => error.into(),
            OpFailure::Fault(fault) => fault.into(),
            OpFailure::Transport(reason) => {
                Self::failed("host-exited", format!("ZCode host is unavailable: {reason}"))
            }
        }
    }
}

impl From<CoordinatorError> for Error {
    fn from(error: CoordinatorError) -> Self {
        match error {
            CoordinatorError::InvalidParams(message) => {
                Error::new(ErrorCode::INVALID_PARAMS, message)
            }
            CoordinatorError::AuthRequired(message) => {
                Error::new(ErrorCode::AUTH_REQUIRED, message)
                    .data(json!({ "action": "Run `zcode-acp login`, then retry." }))
            }
            CoordinatorError::SessionNotFound(id) => {
                Error::new(ErrorCode::RESOURCE_NOT_FOUND, format!("Unknown session: {id}"))
                    .data(json!({ "sessionId": id }))
            }
            CoordinatorError::Busy(message) => Error::new(ErrorCode::INVALID_REQUEST, message),
            CoordinatorError::Compatibility { message, data } => {
                Error::new(ErrorCode::INTERNAL_ERROR, message).data(data)
            }
            CoordinatorError::Failed { kind, message } => {
                Error::new(ErrorCode::INTERNAL_ERROR, message).data(json!({ "kind": kind }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_mapper_error_kinds_to_json_rpc_codes() {
        let cases = [
            (ErrorKind::InvalidParams, -32602),
            (ErrorKind::AuthRequired, -32000),
            (ErrorKind::NotFound, -32002),
            (ErrorKind::Protocol, -32603),
            (ErrorKind::Native, -32603),
        ];
        for (kind, code) in cases {
            let error: Error = CoordinatorError::from(MapperError::new(kind, "boom")).into();
            assert_eq!(error.code.value(), code, "{kind:?}");
        }
    }

    #[test]
    fn auth_required_tells_the_user_what_to_do() {
        let error: Error = CoordinatorError::AuthRequired("sign in".into()).into();
        assert!(error.data.unwrap().to_string().contains("zcode-acp login"));
    }
}
