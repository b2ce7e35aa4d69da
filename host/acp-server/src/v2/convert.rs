//! v2 requests as the v1 requests the coordinator takes, and its v1 answers back.
//!
//! The shapes are close: most differences are optional fields v1 requires (`mcpServers`) and
//! tags v2 added (MCP servers, config values). A request v1 cannot express is invalid params.

use agent_client_protocol::v1::schema as v1;
use agent_client_protocol::v2::schema as v2;
use agent_client_protocol::{Error, ErrorCode};
use serde_json::{Value, json};

use super::translate::{TranslateError, recast, to_value};

pub fn invalid(error: TranslateError) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, error.0)
}

pub fn new_session(request: &v2::NewSessionRequest) -> Result<v1::NewSessionRequest, Error> {
    let mut value = session_setup(to_value(request))?;
    value.as_object_mut().map(|o| o.remove("systemPrompt"));
    recast("session/new", value).map_err(invalid)
}

pub fn load_session(request: &v2::ResumeSessionRequest) -> Result<v1::LoadSessionRequest, Error> {
    recast("session/resume", resume_fields(request)?).map_err(invalid)
}

pub fn resume_session(
    request: &v2::ResumeSessionRequest,
) -> Result<v1::ResumeSessionRequest, Error> {
    recast("session/resume", resume_fields(request)?).map_err(invalid)
}

/// `session/fork`: the same setup fields (v1's fork is unstable there too).
pub fn fork_session(request: &v2::ForkSessionRequest) -> Result<v1::ForkSessionRequest, Error> {
    let mut value = session_setup(to_value(request))?;
    value.as_object_mut().map(|o| o.remove("systemPrompt"));
    recast("session/fork", value).map_err(invalid)
}

fn resume_fields(request: &v2::ResumeSessionRequest) -> Result<Value, Error> {
    let mut value = session_setup(to_value(request))?;
    value.as_object_mut().map(|o| o.remove("replayFrom"));
    Ok(value)
}

/// `mcpServers` is optional in v2 and every server is tagged; v1 requires the list, with
/// stdio servers untagged and `args`/`env`/`headers` present.
fn session_setup(mut value: Value) -> Result<Value, Error> {
    let servers = value.get("mcpServers").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut converted = Vec::new();
    for mut server in servers {
        let object = server.as_object_mut().ok_or_else(|| bad("an MCP server is not an object"))?;
        match object.get("type").and_then(Value::as_str) {
            Some("stdio") => {
                object.remove("type");
                object.entry("args").or_insert(json!([]));
                object.entry("env").or_insert(json!([]));
            }
            Some("http") => {
                object.entry("headers").or_insert(json!([]));
            }
            other => return Err(bad(&format!("MCP server transport {other:?} is not supported"))),
        }
        converted.push(server);
    }
    value["mcpServers"] = Value::Array(converted);
    Ok(value)
}

pub fn list_sessions(request: &v2::ListSessionsRequest) -> Result<v1::ListSessionsRequest, Error> {
    let value = to_value(request);
    recast("session/list", json!({"cwd": value.get("cwd"), "cursor": value.get("cursor")}))
        .map_err(invalid)
}

pub fn list_response(
    response: &v1::ListSessionsResponse,
) -> Result<v2::ListSessionsResponse, Error> {
    recast("session/list response", to_value(response)).map_err(internal)
}

pub fn prompt(request: &v2::PromptRequest) -> Result<v1::PromptRequest, Error> {
    let value = to_value(request);
    recast("session/prompt", json!({"sessionId": value["sessionId"], "prompt": value["prompt"]}))
        .map_err(invalid)
}

pub fn set_config_option(
    request: &v2::SetSessionConfigOptionRequest,
) -> Result<v1::SetSessionConfigOptionRequest, Error> {
    let mut value = to_value(request);
    // v2 tags an id value `type: "id"`; v1 leaves it untagged.
    if value["type"] == "id" {
        value.as_object_mut().map(|o| o.remove("type"));
    }
    recast("session/set_config_option", value).map_err(invalid)
}

/// The value of a select option (the mode is one).
pub fn value_id(request: &v2::SetSessionConfigOptionRequest) -> Result<String, Error> {
    let value = to_value(request);
    match (value["type"].as_str(), value["value"].as_str()) {
        (Some("id") | None, Some(id)) => Ok(id.to_string()),
        _ => Err(bad("the mode takes a value id")),
    }
}

fn bad(message: &str) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message.to_string())
}

pub fn internal(error: TranslateError) -> Error {
    Error::new(ErrorCode::INTERNAL_ERROR, error.0)
}
