//! The channels the Services Server exposes, each a service whose methods take positional
//! arguments (ZCode `ProxyChannel.fromService`): an unknown method is the error
//! `Method not found: <name>`, an unknown event `Event not found: <name>`.

mod account;
mod agent;
pub mod attachments;
mod model_selection;
mod usage_stats;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::server::{Server, Shared};
use crate::v4::commands;

/// An error the channel server sends as `[202, id]` (`{message, name, stack, …}`).
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub name: String,
    pub message: String,
    /// `stack` is absent for the unknown-channel error.
    pub with_stack: bool,
}

impl RpcError {
    /// A service's `new Error(message)`.
    pub fn new(message: impl Into<String>) -> RpcError {
        RpcError { name: "Error".into(), message: message.into(), with_stack: true }
    }

    /// A schema (zod) rejection of a parameter.
    pub fn schema(message: impl Into<String>) -> RpcError {
        RpcError { name: "ZodError".into(), message: message.into(), with_stack: true }
    }

    pub fn unknown_channel(channel: &str, after: Duration) -> RpcError {
        RpcError {
            name: "Unknown channel".into(),
            message: format!("Channel name '{channel}' timed out after {}ms", after.as_millis()),
            with_stack: false,
        }
    }

    pub fn to_json(&self) -> Value {
        let mut error = Map::new();
        error.insert("message".into(), json!(self.message));
        error.insert("name".into(), json!(self.name));
        if self.with_stack {
            error.insert("stack".into(), json!([format!("{}: {}", self.name, self.message)]));
        }
        Value::Object(error)
    }
}

pub type CallResult = Result<Option<Value>, RpcError>;

/// What happens after the reply is written.
pub enum After {
    Nothing,
    /// Make sure the session's turns run.
    Drive(Shared),
}

pub struct Reply {
    pub result: CallResult,
    pub after: After,
}

impl From<CallResult> for Reply {
    fn from(result: CallResult) -> Reply {
        Reply { result, after: After::Nothing }
    }
}

/// Methods the real services have that the simulator does not play.
const AGENT_UNSIMULATED: &[&str] = &["queryConversationCommandsV4", "backgroundBashOutputV4"];
const PROVIDER_SETTINGS_UNSIMULATED: &[&str] = &[
    "getView",
    "createPersonalProvider",
    "savePersonalProviderOverlay",
    "deletePersonalProvider",
    "addPersonalModel",
    "deletePersonalModel",
    "setPersonalModelEnabled",
    "refresh",
];
const USAGE_UNSIMULATED: &[&str] = &["getCodingPlanResetStatus"];

/// Every method name a fault may be pointed at.
pub fn all_methods() -> Vec<&'static str> {
    let mut methods: Vec<&'static str> = Vec::new();
    methods.extend_from_slice(agent::METHODS);
    methods.extend_from_slice(attachments::METHODS);
    methods.extend_from_slice(AGENT_UNSIMULATED);
    methods.extend_from_slice(model_selection::METHODS);
    methods.extend_from_slice(usage_stats::METHODS);
    methods.extend_from_slice(account::OAUTH_METHODS);
    methods.extend_from_slice(account::SETTING_METHODS);
    // A V4 command is a point of its own (`stall@resolveInteraction`): the command call that
    // carries it. (`createSession` is also a method; the method is what a fault there means.)
    let commands: Vec<&'static str> =
        commands::COMMAND_TYPES.iter().copied().filter(|kind| !methods.contains(kind)).collect();
    methods.extend(commands);
    methods
}

/// The V4 command type a `sendConversationCommandV4` call carries, when it is a known one.
pub fn command_point(method: &str, args: &[Option<Value>]) -> Option<&'static str> {
    if method != "sendConversationCommandV4" {
        return None;
    }
    let kind = args.first()?.as_ref()?.pointer("/envelope/type")?.as_str()?;
    commands::COMMAND_TYPES.iter().copied().find(|known| *known == kind)
}

/// Serves one call; `None` when no such channel exists.
pub fn call(
    server: &Arc<Server>,
    channel: &str,
    method: &str,
    args: &[Option<Value>],
) -> Option<Reply> {
    let not_simulated = |methods: &[&str]| {
        methods.contains(&method).then(|| {
            Reply::from(Err(RpcError::new(format!(
                "zcode-sim: {channel}.{method} is not simulated"
            ))))
        })
    };
    let reply = match channel {
        "zcode-agent" => {
            not_simulated(AGENT_UNSIMULATED).or_else(|| agent::call(server, method, args))
        }
        "model-selection" => model_selection::call(server, method, args).map(Reply::from),
        "usage-stats" => not_simulated(USAGE_UNSIMULATED)
            .or_else(|| usage_stats::call(server, method, args).map(Reply::from)),
        "oauth" => account::oauth(server, method, args).map(Reply::from),
        "setting" => account::setting(server, method, args).map(Reply::from),
        "provider-settings" => not_simulated(PROVIDER_SETTINGS_UNSIMULATED),
        _ => return None,
    };
    Some(
        reply.unwrap_or_else(|| {
            Reply::from(Err(RpcError::new(format!("Method not found: {method}"))))
        }),
    )
}

/// Registers an event listen; `Err` is what the service threw (no response goes out).
pub fn listen(
    server: &Arc<Server>,
    channel: &str,
    event: &str,
    arg: Option<&Value>,
    id: i64,
) -> Result<(), String> {
    match (channel, event) {
        ("zcode-agent", "onDynamicConversationFrame") => agent::listen_frames(server, arg, id),
        (
            "zcode-agent" | "model-selection" | "usage-stats" | "oauth" | "setting"
            | "provider-settings",
            _,
        ) => Err(format!("Event not found: {event}")),
        _ => Err(format!("Unknown channel: {channel}")),
    }
}

/// The first positional argument as an object (what every simulated method takes).
pub fn object_arg<'a>(
    method: &str,
    args: &'a [Option<Value>],
) -> Result<&'a Map<String, Value>, RpcError> {
    args.first()
        .and_then(|arg| arg.as_ref())
        .and_then(Value::as_object)
        .ok_or_else(|| RpcError::new(format!("{method}: expected an object argument")))
}

/// A required non-empty string field.
pub fn string_field<'a>(
    method: &str,
    object: &'a Map<String, Value>,
    key: &str,
) -> Result<&'a str, RpcError> {
    match object.get(key).and_then(Value::as_str) {
        Some(text) if !text.is_empty() => Ok(text),
        _ => Err(RpcError::new(format!("{method}: `{key}` must be a non-empty string"))),
    }
}

/// The absolute `workspacePath` every conversation method is scoped by.
pub fn workspace<'a>(method: &str, object: &'a Map<String, Value>) -> Result<&'a str, RpcError> {
    let path = string_field(method, object, "workspacePath")?;
    if std::path::Path::new(path).is_absolute() {
        Ok(path)
    } else {
        Err(RpcError::new(format!("{method}: workspacePath must be absolute: {path}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_the_channel_server_shape() {
        let error = RpcError::new("Method not found: x").to_json();
        assert_eq!(
            error,
            json!({"message": "Method not found: x", "name": "Error", "stack": ["Error: Method not found: x"]})
        );
        let unknown = RpcError::unknown_channel("nope", Duration::from_millis(1000)).to_json();
        assert_eq!(
            unknown,
            json!({"message": "Channel name 'nope' timed out after 1000ms", "name": "Unknown channel"})
        );
    }
}
