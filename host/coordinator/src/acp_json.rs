//! The gate between mapper output and the ACP client: everything a mapper says is ACP is
//! parsed into the typed schema here, or refused — invalid, or larger than any ACP message
//! zcode-acp writes (`CoordinatorConfig::max_message_bytes`). Nothing else in the core reads
//! mapper JSON.

use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, RequestPermissionRequest, SessionId, SessionUpdate,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use zcode_contract::MapperFault;

use crate::error::CoordinatorError;

mod chunk;

pub use chunk::{ChunkKind, TextChunk};

/// Why the gate refused mapper output.
#[derive(Debug, Clone)]
pub enum Refused {
    /// Not valid ACP: the mapper is at fault.
    Invalid(MapperFault),
    /// Valid, but over the size limit: the content is too large, nobody is at fault; the
    /// request it belongs to is answered with invalid params naming the limit.
    TooLarge(CoordinatorError),
}

impl Refused {
    /// As the error of the request the output belongs to.
    pub fn into_error(self) -> CoordinatorError {
        match self {
            Refused::Invalid(fault) => fault.into(),
            Refused::TooLarge(error) => error,
        }
    }

    /// For a stream that goes on: keeps the first too-large refusal in `slot` (the caller fails
    /// the request with it when the stream ends), passes an invalid one on.
    pub fn keep_too_large(self, slot: &mut Option<CoordinatorError>) -> Result<(), MapperFault> {
        match self {
            Refused::Invalid(fault) => Err(fault),
            Refused::TooLarge(error) => {
                slot.get_or_insert(error);
                Ok(())
            }
        }
    }
}

impl From<MapperFault> for Refused {
    fn from(fault: MapperFault) -> Self {
        Refused::Invalid(fault)
    }
}

/// Refuses a message of `bytes` over `limit`, saying what it was and what the limit is.
pub fn check_size(what: &str, bytes: usize, limit: usize) -> Result<(), CoordinatorError> {
    if bytes <= limit {
        return Ok(());
    }
    Err(CoordinatorError::InvalidParams(format!(
        "{what} is too large: {} (the limit is {} per ACP message)",
        describe_bytes(bytes),
        describe_bytes(limit)
    )))
}

/// MiB to one decimal from 1 MiB on, bytes below.
fn describe_bytes(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{bytes} bytes")
    }
}

/// Parses a mapper's JSON text as the ACP type `T`.
pub fn parse<T: DeserializeOwned>(what: &str, json: &str) -> Result<T, MapperFault> {
    serde_json::from_str(json).map_err(|e| invalid(what, e))
}

/// A `session/update` the gate let through, for the client.
#[derive(Debug, Clone)]
pub enum Update {
    /// A text chunk in its fixed shape, kept as its parts (most of a turn).
    Text(TextChunk),
    /// Any other update, as the schema types (boxed: the schema type is large, chunks are
    /// most of the stream).
    Typed(Box<SessionUpdate>),
}

impl Update {
    pub fn into_typed(self) -> SessionUpdate {
        match self {
            Update::Text(chunk) => chunk.into_update(),
            Update::Typed(update) => *update,
        }
    }
}

pub fn update(json: &str) -> Result<SessionUpdate, MapperFault> {
    parse("session update", json)
}

/// Checks one update within `limit` bytes: a text chunk by its fixed shape, anything else by
/// the schema types.
pub fn check_update(json: &str, limit: usize) -> Result<Update, Refused> {
    check_size("an update from ZCode", json.len(), limit).map_err(Refused::TooLarge)?;
    match TextChunk::recognise(json) {
        Some(chunk) => Ok(Update::Text(chunk)),
        None => Ok(Update::Typed(Box::new(update(json)?))),
    }
}

/// Checks updates, each within `limit` bytes.
pub fn updates(json: &[String], limit: usize) -> Result<Vec<Update>, Refused> {
    json.iter().map(|u| check_update(u, limit)).collect()
}

/// `{"toolCall", "options"}` from the mapper plus this session's id.
pub fn permission_request(
    session_id: &SessionId,
    json: &str,
    limit: usize,
) -> Result<RequestPermissionRequest, Refused> {
    check_size("a permission question from ZCode", json.len(), limit).map_err(Refused::TooLarge)?;
    Ok(parse_with_session("permission request", session_id, json)?)
}

/// Form elicitation params from the mapper plus this session's id.
pub fn elicitation_request(
    session_id: &SessionId,
    json: &str,
    limit: usize,
) -> Result<CreateElicitationRequest, Refused> {
    check_size("a question from ZCode", json.len(), limit).map_err(Refused::TooLarge)?;
    Ok(parse_with_session("elicitation request", session_id, json)?)
}

fn parse_with_session<T: DeserializeOwned>(
    what: &str,
    session_id: &SessionId,
    json: &str,
) -> Result<T, MapperFault> {
    let mut value: Value = serde_json::from_str(json).map_err(|e| invalid(what, e))?;
    let Some(object) = value.as_object_mut() else {
        return Err(MapperFault(format!("invalid ACP {what} from the mapper: not an object")));
    };
    object.insert("sessionId".into(), Value::String(session_id.0.to_string()));
    serde_json::from_value(value).map_err(|e| invalid(what, e))
}

/// Serializes an ACP request for the mapper.
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("ACP schema types always serialize")
}

fn invalid(what: &str, error: serde_json::Error) -> MapperFault {
    MapperFault(format!("invalid ACP {what} from the mapper: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_valid_updates_and_refuses_invalid_ones() {
        let chunk =
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}"#;
        assert!(matches!(update(chunk).unwrap(), SessionUpdate::AgentMessageChunk(_)));

        let unknown = update(r#"{"sessionUpdate":"made_up","x":1}"#).unwrap_err();
        assert!(matches!(
            updates(&[chunk.to_string()], chunk.len()).as_deref(),
            Ok([Update::Text(TextChunk { kind: ChunkKind::AgentMessageChunk, .. })])
        ));
        let plan = r#"{"sessionUpdate":"plan","entries":[]}"#;
        assert!(
            matches!(check_update(plan, 1 << 20), Ok(Update::Typed(u)) if matches!(*u, SessionUpdate::Plan(_)))
        );
        assert!(matches!(
            check_update(
                r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}}"#,
                1 << 20
            ),
            Err(Refused::Invalid(_))
        ));
        let Err(Refused::TooLarge(error)) = updates(&[chunk.to_string()], chunk.len() - 1) else {
            panic!("one byte over the limit is refused");
        };
        assert!(error.to_string().contains("the limit is"), "{error}");
        assert!(unknown.0.contains("session update"), "{unknown}");
        assert!(update("not json").is_err());
        assert!(update(r#"{"content":{"type":"text","text":"hi"}}"#).is_err());
    }

    #[test]
    fn injects_the_session_into_permission_requests() {
        let json = r#"{"toolCall":{"toolCallId":"t1","title":"Edit"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}"#;
        let request = permission_request(&SessionId::new("s1"), json, 1 << 20).unwrap();
        assert_eq!(request.session_id.0.as_ref(), "s1");
        assert_eq!(request.options.len(), 1);
        assert!(permission_request(&SessionId::new("s1"), "[1]", 1 << 20).is_err());
    }
}
