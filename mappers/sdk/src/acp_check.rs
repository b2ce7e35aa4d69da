//! Test support (feature `acp-check`): checks that ACP JSON a mapper emits is what the core's
//! ACP schema (crate `agent-client-protocol-schema` 1.17.0, as pinned by SDK 5.2.0) accepts,
//! *without losing anything*. The schema types are lenient (unknown fields are dropped, bad optional fields
//! default), so each object is parsed, serialised again, and every field of the original must
//! survive with the same value.

use agent_client_protocol_schema::v1 as acp;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};
use zcode_contract::{Action, Effects, InteractionRequest, Outgoing, Step};

fn survives<T: DeserializeOwned + Serialize>(value: &Value, what: &str) {
    let typed: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("{what} is not valid ACP: {e}\n{value:#}"));
    let again = serde_json::to_value(&typed).expect("serialise");
    if let Err(path) = contained(value, &again, String::new()) {
        panic!("{what} loses `{path}` in the ACP schema\nemitted: {value:#}\nparsed: {again:#}");
    }
}

/// Values the schema leaves out when serialising because they are the default.
fn skipped_as_default(key: &str, value: &Value) -> bool {
    *value == json!([])
        || (key == "status" && *value == json!("pending"))
        || (key == "kind" && *value == json!("other"))
}

/// Every field of `original` is in `parsed` with the same value.
fn contained(original: &Value, parsed: &Value, path: String) -> Result<(), String> {
    match (original, parsed) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                match b.get(key) {
                    Some(inner) => contained(value, inner, format!("{path}.{key}"))?,
                    None if skipped_as_default(key, value) => {}
                    None => return Err(format!("{path}.{key}")),
                }
            }
            Ok(())
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                contained(x, y, format!("{path}[{index}]"))?;
            }
            Ok(())
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => Ok(()),
        (a, b) if a == b => Ok(()),
        _ => Err(path),
    }
}

fn with_session(value: &Value) -> Value {
    let mut value = value.clone();
    value["sessionId"] = json!("session-1");
    value
}

pub fn session_update(update: &Value) {
    survives::<acp::SessionUpdate>(update, "session update");
}

pub fn session_update_text(update: &str) {
    session_update(&serde_json::from_str(update).expect("update is JSON"));
}

pub fn config_options(options: &Value) {
    survives::<Vec<acp::SessionConfigOption>>(options, "config options");
}

/// A permission interaction: `{toolCall, options}`; the core adds `sessionId`.
pub fn permission(request: &Value) {
    survives::<acp::RequestPermissionRequest>(&with_session(request), "permission request");
}

/// An elicitation interaction in form mode; the core adds `sessionId`.
pub fn elicitation(request: &Value) {
    survives::<acp::CreateElicitationRequest>(&with_session(request), "elicitation request");
}

pub fn new_session_response(response: &Value) {
    survives::<acp::NewSessionResponse>(response, "session/new response");
}

pub fn load_session_response(response: &Value) {
    survives::<acp::LoadSessionResponse>(response, "session/load response");
}

pub fn list_sessions_response(response: &Value) {
    survives::<acp::ListSessionsResponse>(response, "session/list response");
}

pub fn set_config_option_response(response: &Value) {
    survives::<acp::SetSessionConfigOptionResponse>(response, "session/set_config_option response");
}

pub fn usage(usage: &Value) {
    survives::<acp::Usage>(usage, "usage");
}

fn parsed(text: &str, what: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what} is not JSON: {e}\n{text}"))
}

/// Every update and interaction among `actions`.
pub fn actions(actions: &[Action]) {
    for action in actions {
        match action {
            Action::Update(update) => session_update_text(update),
            Action::Interaction(interaction) => match &interaction.request {
                InteractionRequest::Permission(asked) => {
                    permission(&parsed(&asked.request, "permission request"));
                }
                InteractionRequest::Elicitation(form) => elicitation(&parsed(form, "elicitation")),
                InteractionRequest::Headless(_) => {}
            },
            Action::Terminal(_) | Action::Ignore(_) => {}
        }
    }
}

/// Every update a batch's effects carry.
pub fn effects(effects: &Effects) {
    actions(&effects.actions);
}

/// Every update streamed by `outgoing`.
pub fn outgoing(outgoing: &Outgoing) {
    outgoing.updates.iter().for_each(|update| session_update_text(update));
}

/// Every update of a step, streamed or final (the response is checked by the caller, who
/// knows which ACP request it answers).
pub fn step(step: &Step) {
    match step {
        Step::Wait(sent) => outgoing(sent),
        Step::Done(Ok(result)) => result.updates.iter().for_each(|u| session_update_text(u)),
        Step::Done(Err(_)) => {}
    }
}

#[test]
fn notices_lost_and_misnamed_fields() {
    let good =
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}});
    session_update(&good);
    let misnamed = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}, "message_id": "m"});
    assert!(std::panic::catch_unwind(|| session_update(&misnamed)).is_err());
    let wrong_type = json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "rawInput": {}, "locations": "nope"});
    assert!(std::panic::catch_unwind(|| session_update(&wrong_type)).is_err());
}
