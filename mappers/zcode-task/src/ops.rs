//! Native requests both generations of the desktop host share (method names, parameter
//! shapes, timeouts) and the checks on their results. A generation adds its own requests with
//! [`Outbound::call`].

use serde_json::{Value, json};
use zcode_mapper_sdk::contract::{ErrorKind, MapperError, NativeReply, NativeRequest};

use crate::envelope::{Service, call_bytes, subscribe_bytes, unsubscribe_bytes};
use zcode_mapper_sdk::json::{Fields, error, protocol};
use zcode_mapper_sdk::time::iso8601_from_epoch_ms;

const DEFAULT_TIMEOUT_MS: u32 = 30_000;
/// Methods that may start workers, load models or touch disk get longer.
const LONG_TIMEOUT_MS: u32 = 60_000;
const LONG_METHODS: [&str; 8] = [
    "initialize",
    "createSession",
    "resumeSession",
    "listSessions",
    "setMode",
    "setModel",
    "setThoughtLevel",
    "sendPrompt",
];

const DELIVERY_KIND: &str = "desktop-continuous";
const HEADERS_UNAVAILABLE: &str =
    "Interactive provider recovery is unavailable in the headless ACP adapter";

/// One request to the bridge, before the core hands out its id.
#[derive(Clone, Debug, PartialEq)]
pub enum Outbound {
    /// `long`: the call may start workers, load models or touch disk (60 s instead of 30 s).
    Call {
        service: Service,
        method: &'static str,
        params: Value,
        long: bool,
    },
    Subscribe {
        subscription_id: String,
        workspace: String,
        session_id: String,
    },
    Unsubscribe {
        subscription_id: String,
    },
}

impl Outbound {
    /// Diagnostic name; never includes parameters.
    pub fn label(&self) -> String {
        match self {
            Outbound::Call { service, method, .. } => format!("{}.{method}", service.name()),
            Outbound::Subscribe { .. } => "__subscribe".to_string(),
            Outbound::Unsubscribe { .. } => "__unsubscribe".to_string(),
        }
    }

    /// A call on `service`; methods known to be slow get the long timeout.
    pub fn call(service: Service, method: &'static str, params: Value) -> Outbound {
        Outbound::Call { service, method, params, long: LONG_METHODS.contains(&method) }
    }

    /// A call a generation knows to be slow (it starts workers, loads models or reads disk).
    pub fn long_call(service: Service, method: &'static str, params: Value) -> Outbound {
        Outbound::Call { service, method, params, long: true }
    }

    fn timeout_ms(&self) -> u32 {
        match self {
            Outbound::Call { long: true, .. } => LONG_TIMEOUT_MS,
            _ => DEFAULT_TIMEOUT_MS,
        }
    }

    /// Sent with id `id`, the operation waiting in `stage` for the reply.
    pub fn send<S>(self, stage: S, id: u64) -> zcode_mapper_sdk::ops::Next<S> {
        zcode_mapper_sdk::ops::Next::send(stage, self.into_request(id))
    }

    pub fn into_request(self, id: u64) -> NativeRequest {
        let (label, timeout_ms) = (self.label(), self.timeout_ms());
        let bytes = match &self {
            Outbound::Call { service, method, params, .. } => {
                call_bytes(id, *service, method, params)
            }
            Outbound::Subscribe { subscription_id, workspace, session_id } => {
                subscribe_bytes(id, subscription_id, workspace, session_id)
            }
            Outbound::Unsubscribe { subscription_id } => unsubscribe_bytes(id, subscription_id),
        };
        NativeRequest { id, bytes, label, timeout_ms }
    }
}

/// A call on the agent service (channel `zcode-agent`).
pub fn agent(method: &'static str, params: Value) -> Outbound {
    Outbound::call(Service::AGENT, method, params)
}

fn task(method: &'static str, params: Value) -> Outbound {
    Outbound::call(Service::TASK, method, params)
}

pub fn initialize(workspace: &str) -> Outbound {
    agent("initialize", json!({"workspacePath": workspace}))
}

pub fn create_session(workspace: &str, mcp_servers: &Value) -> Outbound {
    agent(
        "createSession",
        json!({"workspacePath": workspace, "persistence": "immediate", "mcpServers": mcp_servers}),
    )
}

pub fn resume_session(workspace: &str, session_id: &str, mcp_servers: &Value) -> Outbound {
    agent(
        "resumeSession",
        json!({"workspacePath": workspace, "sessionId": session_id, "mcpServers": mcp_servers}),
    )
}

pub fn list_sessions(workspace: &str) -> Outbound {
    agent("listSessions", json!({"workspacePath": workspace, "includeArchived": false}))
}

pub fn read_session(workspace: &str, session_id: &str) -> Outbound {
    agent(
        "readSession",
        json!({
            "workspacePath": workspace,
            "sessionId": session_id,
            "deliveryKind": DELIVERY_KIND,
            "messageLimit": 1,
            "afterSeq": 0,
        }),
    )
}

pub fn send_prompt(
    workspace: &str,
    session_id: &str,
    input_id: &str,
    content: &str,
    attachments: Vec<Value>,
) -> Outbound {
    agent(
        "sendPrompt",
        json!({
            "workspacePath": workspace,
            "sessionId": session_id,
            "inputId": input_id,
            "content": content,
            "attachments": attachments,
        }),
    )
}

pub fn close_session(workspace: &str, session_id: &str) -> Outbound {
    agent("closeSession", json!({"workspacePath": workspace, "sessionId": session_id}))
}

pub fn set_mode(workspace: &str, session_id: &str, mode: &str) -> Outbound {
    agent("setMode", json!({"workspacePath": workspace, "sessionId": session_id, "mode": mode}))
}

pub fn set_model(workspace: &str, session_id: &str, model_ref: &Value) -> Outbound {
    agent(
        "setModel",
        json!({
            "workspacePath": workspace,
            "sessionId": session_id,
            "model": model_ref,
            "persistAsWorkspaceLastUsed": true,
        }),
    )
}

pub fn set_thought_level(workspace: &str, session_id: &str, level: &str) -> Outbound {
    agent(
        "setThoughtLevel",
        json!({
            "workspacePath": workspace,
            "sessionId": session_id,
            "thoughtLevel": level,
            "persistAsWorkspaceLastUsed": true,
        }),
    )
}

pub fn get_task_token_usage(workspace: &str, session_id: &str) -> Outbound {
    agent("getTaskTokenUsage", json!({"workspacePath": workspace, "sessionId": session_id}))
}

/// Provider header recovery is always refused: answering `true` without applying headers
/// would be a lie the host acts on.
pub fn refuse_provider_headers(workspace: &str, session_id: &str, request_id: &str) -> Outbound {
    agent(
        "respondProviderRuntimeHeaders",
        json!({
            "workspacePath": workspace,
            "sessionId": session_id,
            "requestId": request_id,
            "response": {"headersApplied": false, "errorMessage": HEADERS_UNAVAILABLE},
        }),
    )
}

// The task service names the session `taskId`.

pub fn stop_generation(workspace: &str, session_id: &str) -> Outbound {
    task("stopGeneration", json!({"workspacePath": workspace, "taskId": session_id}))
}

pub fn respond_permission(
    workspace: &str,
    session_id: &str,
    request_id: &str,
    option_id: &str,
) -> Outbound {
    task(
        "respondPermission",
        json!({
            "workspacePath": workspace,
            "requestId": request_id,
            "taskId": session_id,
            "optionId": option_id,
        }),
    )
}

/// A native elicitation answer: `accept` with content, or `decline`/`cancel` with an optional
/// reason.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitationReply {
    Accept(Value),
    Decline(Option<String>),
    Cancel,
}

pub fn respond_elicitation(
    workspace: &str,
    session_id: &str,
    request_id: &str,
    reply: ElicitationReply,
) -> Outbound {
    let mut params =
        json!({"workspacePath": workspace, "requestId": request_id, "taskId": session_id});
    match reply {
        ElicitationReply::Accept(content) => {
            params["action"] = json!("accept");
            params["content"] = content;
        }
        ElicitationReply::Decline(reason) => {
            params["action"] = json!("decline");
            if let Some(reason) = reason {
                params["reason"] = json!(reason);
            }
        }
        ElicitationReply::Cancel => params["action"] = json!("cancel"),
    }
    task("respondElicitation", params)
}

// ----- replies -----------------------------------------------------------------------------

/// The JSON result of a reply, or the error it carries.
pub fn reply_value(reply: &NativeReply, label: &str) -> Result<Value, MapperError> {
    zcode_mapper_sdk::ops::reply_json(reply, "ZCode", label)
}

/// A native result that does not have the expected shape.
pub fn validation_failed(label: &str, problem: &MapperError) -> MapperError {
    protocol(format!("Native result validation failed: {label}: {}", problem.message))
}

/// `initialize`: the host must be available for the workspace.
pub fn check_initialized(result: &Value) -> Result<(), MapperError> {
    let fields = Fields::native(result, "initialize result")
        .map_err(|e| validation_failed("initialize", &e))?;
    if fields.bool("available").map_err(|e| validation_failed("initialize", &e))? {
        return Ok(());
    }
    let reason =
        fields.opt_str("reason").ok().flatten().unwrap_or("ZCode headless host is unavailable");
    let kind = match fields.opt_str("reasonCode").ok().flatten() {
        Some("provider_not_ready") => ErrorKind::AuthRequired,
        _ => ErrorKind::Native,
    };
    Err(error(kind, reason))
}

/// `sendPrompt`: an acknowledgement that the host took the input.
pub fn check_prompt_accepted(result: &Value) -> Result<(), MapperError> {
    let fields = Fields::native(result, "sendPrompt result")
        .map_err(|e| validation_failed("sendPrompt", &e))?;
    match fields.opt_bool("accepted").map_err(|e| validation_failed("sendPrompt", &e))? {
        Some(true) => Ok(()),
        _ => Err(error(ErrorKind::Native, "ZCode did not accept the prompt")),
    }
}

/// The bridge's own acknowledgements, `{subscribed: true}` and `{unsubscribed: true}`.
pub fn check_acknowledged(result: &Value, key: &str, label: &str) -> Result<(), MapperError> {
    if *result == json!({ key: true }) {
        Ok(())
    } else {
        Err(protocol(format!("Native result validation failed: {label}")))
    }
}

/// `getTaskTokenUsage` as an ACP `Usage` object.
pub fn usage(result: &Value) -> Result<Value, MapperError> {
    let read = || -> Result<Value, MapperError> {
        let fields = Fields::native(result, "getTaskTokenUsage result")?;
        Ok(json!({
            "totalTokens": fields.u64("totalTokens")?,
            "inputTokens": fields.u64("inputTokens")?,
            "outputTokens": fields.u64("outputTokens")?,
            "thoughtTokens": fields.u64("reasoningTokens")?,
            "cachedReadTokens": fields.u64("cacheReadTokens")?,
            "cachedWriteTokens": fields.u64("cacheCreationTokens")?,
        }))
    };
    read().map_err(|e| validation_failed("getTaskTokenUsage", &e))
}

/// `listSessions` as ACP `SessionInfo` objects, in the host's order.
pub fn session_infos(result: &Value) -> Result<Vec<Value>, MapperError> {
    let read = || -> Result<Vec<Value>, MapperError> {
        let Value::Array(items) = result else {
            return Err(protocol("listSessions result must be an array"));
        };
        items
            .iter()
            .map(|item| {
                let fields = Fields::native(item, "listed session")?;
                let mut info = json!({
                    "sessionId": fields.non_empty_str("sessionId")?,
                    "cwd": fields.object("workspace", "listed session workspace")?.non_empty_str("workspacePath")?,
                });
                if let Some(title) = fields.opt_str("title")? {
                    info["title"] = json!(title);
                }
                if let Some(updated) = fields.opt_f64("updatedAt")?.and_then(iso8601_from_epoch_ms) {
                    info["updatedAt"] = json!(updated);
                }
                Ok(info)
            })
            .collect()
    };
    read().map_err(|e| validation_failed("listSessions", &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(outbound: &Outbound) -> &Value {
        match outbound {
            Outbound::Call { params, .. } => params,
            other => panic!("not a call: {other:?}"),
        }
    }

    #[test]
    fn gives_long_operations_sixty_seconds() {
        assert_eq!(initialize("/w").into_request(1).timeout_ms, 60_000);
        assert_eq!(send_prompt("/w", "s", "i", "", vec![]).into_request(1).timeout_ms, 60_000);
        assert_eq!(read_session("/w", "s").into_request(1).timeout_ms, 30_000);
        assert_eq!(stop_generation("/w", "s").into_request(1).timeout_ms, 30_000);
        let subscribe = Outbound::Subscribe {
            subscription_id: "x".into(),
            workspace: "/w".into(),
            session_id: "s".into(),
        };
        let request = subscribe.into_request(9);
        assert_eq!(
            (request.id, request.label.as_str(), request.timeout_ms),
            (9, "__subscribe", 30_000)
        );
        assert_eq!(stop_generation("/w", "s").label(), "task.stopGeneration");
    }

    #[test]
    fn names_the_session_task_id_on_the_task_service() {
        assert_eq!(
            params(&stop_generation("/w", "s")),
            &json!({"workspacePath": "/w", "taskId": "s"})
        );
        assert_eq!(
            params(&respond_permission("/w", "s", "r", "o")),
            &json!({"workspacePath": "/w", "requestId": "r", "taskId": "s", "optionId": "o"})
        );
        assert_eq!(
            params(&respond_elicitation(
                "/w",
                "s",
                "r",
                ElicitationReply::Decline(Some("no".into()))
            )),
            &json!({"workspacePath": "/w", "requestId": "r", "taskId": "s", "action": "decline", "reason": "no"})
        );
        assert_eq!(
            params(&respond_elicitation("/w", "s", "r", ElicitationReply::Accept(json!({"a": 1})))),
            &json!({"workspacePath": "/w", "requestId": "r", "taskId": "s", "action": "accept", "content": {"a": 1}})
        );
        assert_eq!(
            params(&respond_elicitation("/w", "s", "r", ElicitationReply::Cancel))["action"],
            "cancel"
        );
        assert_eq!(
            params(&refuse_provider_headers("/w", "s", "r"))["response"]["headersApplied"],
            false
        );
    }

    #[test]
    fn maps_unavailable_hosts_to_errors() {
        assert!(check_initialized(&json!({"available": true})).is_ok());
        let auth = check_initialized(
            &json!({"available": false, "reasonCode": "provider_not_ready", "reason": "Sign in"}),
        )
        .unwrap_err();
        assert_eq!((auth.kind, auth.message.as_str()), (ErrorKind::AuthRequired, "Sign in"));
        let other = check_initialized(&json!({"available": false})).unwrap_err();
        assert_eq!(
            (other.kind, other.message.as_str()),
            (ErrorKind::Native, "ZCode headless host is unavailable")
        );
        let bad = check_initialized(&json!({})).unwrap_err();
        assert_eq!(
            bad.message,
            "Native result validation failed: initialize: initialize result: missing field `available`"
        );
    }

    #[test]
    fn converts_usage_and_sessions() {
        let usage = usage(&json!({"sessionId": "s", "totalTokens": 10, "inputTokens": 6, "outputTokens": 4, "reasoningTokens": 1, "cacheCreationTokens": 2, "cacheReadTokens": 3})).unwrap();
        assert_eq!(
            usage,
            json!({"totalTokens": 10, "inputTokens": 6, "outputTokens": 4, "thoughtTokens": 1, "cachedReadTokens": 3, "cachedWriteTokens": 2})
        );
        assert!(super::usage(&json!({"totalTokens": -1})).is_err());
        let sessions = session_infos(&json!([
            {"sessionId": "a", "workspace": {"workspacePath": "/w"}, "title": "T", "updatedAt": 0},
            {"sessionId": "b", "workspace": {"workspacePath": "/w"}}
        ]))
        .unwrap();
        assert_eq!(
            sessions,
            [
                json!({"sessionId": "a", "cwd": "/w", "title": "T", "updatedAt": "1970-01-01T00:00:00.000Z"}),
                json!({"sessionId": "b", "cwd": "/w"})
            ]
        );
        assert_eq!(
            session_infos(&json!([{"sessionId": ""}])).unwrap_err().message,
            "Native result validation failed: listSessions: listed session: field `sessionId` must not be empty"
        );
    }

    #[test]
    fn reads_replies() {
        use zcode_mapper_sdk::contract::ReplyBody;
        let ok = NativeReply { id: 1, body: ReplyBody::Ok("{\"a\":1}".into()) };
        assert_eq!(reply_value(&ok, "agent.x").unwrap(), json!({"a": 1}));
        let lost = NativeReply { id: 1, body: ReplyBody::Lost("timed out".into()) };
        assert_eq!(
            reply_value(&lost, "agent.x").unwrap_err().message,
            "ZCode did not answer agent.x: timed out"
        );
        let bad = NativeReply { id: 1, body: ReplyBody::Ok("{".into()) };
        assert_eq!(
            reply_value(&bad, "agent.x").unwrap_err().message,
            "The result of agent.x is not valid JSON"
        );
        assert!(
            check_acknowledged(&json!({"subscribed": true}), "subscribed", "__subscribe").is_ok()
        );
        assert!(
            check_acknowledged(&json!({"subscribed": false}), "subscribed", "__subscribe").is_err()
        );
        assert!(check_prompt_accepted(&json!({"sessionId": "s", "accepted": true})).is_ok());
        assert_eq!(
            check_prompt_accepted(&json!({"accepted": false})).unwrap_err().message,
            "ZCode did not accept the prompt"
        );
    }
}
