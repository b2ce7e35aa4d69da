//! The gate between mapper output and the ACP client: everything a mapper says is ACP is
//! parsed into the typed schema here, or refused. Nothing else in the core reads mapper JSON.

use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, RequestPermissionRequest, SessionId, SessionUpdate,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use zcode_contract::MapperFault;

/// Parses a mapper's JSON text as the ACP type `T`.
pub fn parse<T: DeserializeOwned>(what: &str, json: &str) -> Result<T, MapperFault> {
    serde_json::from_str(json).map_err(|e| invalid(what, e))
}

pub fn update(json: &str) -> Result<SessionUpdate, MapperFault> {
    parse("session update", json)
}

pub fn updates(json: &[String]) -> Result<Vec<SessionUpdate>, MapperFault> {
    json.iter().map(|u| update(u)).collect()
}

/// `{"toolCall", "options"}` from the mapper plus this session's id.
pub fn permission_request(
    session_id: &SessionId,
    json: &str,
) -> Result<RequestPermissionRequest, MapperFault> {
    parse_with_session("permission request", session_id, json)
}

/// Form elicitation params from the mapper plus this session's id.
pub fn elicitation_request(
    session_id: &SessionId,
    json: &str,
) -> Result<CreateElicitationRequest, MapperFault> {
    parse_with_session("elicitation request", session_id, json)
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
        assert!(unknown.0.contains("session update"), "{unknown}");
        assert!(update("not json").is_err());
        assert!(update(r#"{"content":{"type":"text","text":"hi"}}"#).is_err());
    }

    #[test]
    fn injects_the_session_into_permission_requests() {
        let json = r#"{"toolCall":{"toolCallId":"t1","title":"Edit"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}"#;
        let request = permission_request(&SessionId::new("s1"), json).unwrap();
        assert_eq!(request.session_id.0.as_ref(), "s1");
        assert_eq!(request.options.len(), 1);
        assert!(permission_request(&SessionId::new("s1"), "[1]").is_err());
    }
}
