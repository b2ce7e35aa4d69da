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
    /// An optional ACP method that the ZCode found here cannot serve (its mapper does not
    /// offer it, so `initialize` did not advertise it).
    #[error("{message}")]
    NotOffered { method: &'static str, message: String },
    /// The host or the mapper failed; `kind` says where (never contains user data).
    #[error("{message}")]
    Failed { kind: FailureKind, message: String },
}

/// Where a request failed: the `kind` of an internal error's `data`, for clients and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The mapper does not support the request (`unsupported`).
    Unsupported,
    /// ZCode broke its protocol (`native-protocol`).
    NativeProtocol,
    /// ZCode answered with an error (`native`).
    Native,
    /// The mapper reported an internal error (`mapper`).
    Mapper,
    /// The mapper broke the contract; its session is unusable (`mapper-fault`).
    MapperFault,
    /// The host transport is closed (`host-exited`).
    HostExited,
    /// The client failed a question it was asked (`client`).
    Client,
    /// ZCode asked something the client cannot render (`interaction-unsupported`).
    InteractionUnsupported,
    /// The session ended or was closed (`session-closed`).
    SessionClosed,
    /// The session can no longer be used (`session-failed`).
    SessionFailed,
    /// ZCode's turn failed (`turn-failed`).
    TurnFailed,
    /// No mapper could be loaded or chosen (`mappers`).
    Mappers,
    /// Recording the mapper calls failed (`recording`).
    Recording,
    /// The host could not be started (`host-start`).
    HostStart,
    /// Finding the ZCode install failed (`discovery`).
    Discovery,
    /// ZCode's logout failed (`logout`).
    Logout,
    /// ZCode's login could not be run (`auth`).
    Auth,
}

impl FailureKind {
    /// The name clients see in the error's `data.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Unsupported => "unsupported",
            FailureKind::NativeProtocol => "native-protocol",
            FailureKind::Native => "native",
            FailureKind::Mapper => "mapper",
            FailureKind::MapperFault => "mapper-fault",
            FailureKind::HostExited => "host-exited",
            FailureKind::Client => "client",
            FailureKind::InteractionUnsupported => "interaction-unsupported",
            FailureKind::SessionClosed => "session-closed",
            FailureKind::SessionFailed => "session-failed",
            FailureKind::TurnFailed => "turn-failed",
            FailureKind::Mappers => "mappers",
            FailureKind::Recording => "recording",
            FailureKind::HostStart => "host-start",
            FailureKind::Discovery => "discovery",
            FailureKind::Logout => "logout",
            FailureKind::Auth => "auth",
        }
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CoordinatorError {
    pub fn failed(kind: FailureKind, message: impl Into<String>) -> Self {
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
            ErrorKind::Unsupported => Self::failed(FailureKind::Unsupported, message),
            ErrorKind::Protocol => Self::failed(FailureKind::NativeProtocol, message),
            ErrorKind::Native => Self::failed(FailureKind::Native, message),
            ErrorKind::Internal => Self::failed(FailureKind::Mapper, message),
        }
    }
}

impl From<MapperFault> for CoordinatorError {
    fn from(fault: MapperFault) -> Self {
        Self::failed(FailureKind::MapperFault, fault.to_string())
    }
}

impl From<OpFailure> for CoordinatorError {
    fn from(failure: OpFailure) -> Self {
        match failure {
            OpFailure::Mapper(error) => error.into(),
            OpFailure::Fault(fault) => fault.into(),
            OpFailure::Transport(reason) => {
                let message = format!("ZCode host is unavailable: {reason}");
                Self::failed(FailureKind::HostExited, message)
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
            CoordinatorError::NotOffered { method, message } => {
                Error::new(ErrorCode::METHOD_NOT_FOUND, message)
                    .data(json!({ "method": method, "kind": FailureKind::Unsupported.as_str() }))
            }
            CoordinatorError::Failed { kind, message } => {
                Error::new(ErrorCode::INTERNAL_ERROR, message)
                    .data(json!({ "kind": kind.as_str() }))
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
    fn a_failure_keeps_its_kind_name_in_the_error_data() {
        let error: Error = CoordinatorError::from(MapperFault("bad ids".into())).into();
        assert_eq!(error.code.value(), -32603);
        assert_eq!(error.message, "mapper failed: bad ids");
        assert_eq!(error.data, Some(json!({ "kind": "mapper-fault" })));
        let error: Error = CoordinatorError::from(OpFailure::Transport("gone".into())).into();
        assert_eq!(error.message, "ZCode host is unavailable: gone");
        assert_eq!(error.data, Some(json!({ "kind": "host-exited" })));
        let error: Error =
            CoordinatorError::failed(FailureKind::InteractionUnsupported, "x").into();
        assert_eq!(error.data, Some(json!({ "kind": "interaction-unsupported" })));
    }

    #[test]
    fn a_method_not_offered_is_method_not_found_naming_it() {
        let error: Error =
            CoordinatorError::NotOffered { method: "session/fork", message: "no fork".into() }
                .into();
        assert_eq!(error.code.value(), -32601);
        assert_eq!(error.message, "no fork");
        assert_eq!(error.data, Some(json!({ "method": "session/fork", "kind": "unsupported" })));
    }

    #[test]
    fn auth_required_tells_the_user_what_to_do() {
        let error: Error = CoordinatorError::AuthRequired("sign in".into()).into();
        assert!(error.data.unwrap().to_string().contains("zcode-acp login"));
    }
}
