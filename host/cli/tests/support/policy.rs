//! How the test client answers the agent's own requests, and what it recorded.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{INVALID_PARAMS, METHOD_NOT_FOUND};

/// What the client does with a request from the agent.
#[derive(Clone, Debug)]
pub enum Reply {
    Result(Value),
    Error {
        code: i64,
        message: String,
    },
    /// Do not answer (yet): the test answers later with `Agent::respond`, or never.
    Hold,
}

pub type Policy = Arc<dyn Fn(&str, &Value) -> Reply + Send + Sync>;

/// A request the agent sent to the client, and what the client answered.
#[derive(Clone, Debug)]
pub struct AgentRequest {
    /// Position in the inbound frame sequence.
    pub seq: usize,
    pub id: Value,
    pub method: String,
    pub params: Value,
    pub reply: Option<Value>,
}

// ----- ready-made client behaviours ---------------------------------------------------------

/// Answers nothing the test did not expect: any agent request gets an error (and is
/// recorded, so tests can assert none was sent).
pub fn refuse_all() -> Policy {
    Arc::new(|method, _| Reply::Error {
        code: METHOD_NOT_FOUND,
        message: format!("this test client does not handle {method}"),
    })
}

/// Permission: selects the first option of `kind` (`allow_once`, `reject_once`, ...).
/// Anything else is refused.
pub fn permission_kind(kind: &'static str) -> Policy {
    Arc::new(move |method, params| match method {
        "session/request_permission" => {
            let options = params["options"].as_array().cloned().unwrap_or_default();
            match options.iter().find(|o| o["kind"] == kind) {
                Some(option) => Reply::Result(selected(&option["optionId"])),
                None => Reply::Error { code: INVALID_PARAMS, message: format!("no {kind}") },
            }
        }
        other => refused(other),
    })
}

/// Permission: selects `option_id` whether or not it was offered.
pub fn permission_option(option_id: &'static str) -> Policy {
    Arc::new(move |method, _| match method {
        "session/request_permission" => Reply::Result(selected(&json!(option_id))),
        other => refused(other),
    })
}

/// Every agent request gets this JSON-RPC error.
pub fn error(code: i64, message: &'static str) -> Policy {
    Arc::new(move |_, _| Reply::Error { code, message: message.to_string() })
}

/// Nothing is answered; the test decides later.
pub fn hold() -> Policy {
    Arc::new(|_, _| Reply::Hold)
}

/// Elicitation: `answer(params)` decides the response; permissions are refused.
pub fn elicitation(answer: impl Fn(&Value) -> Value + Send + Sync + 'static) -> Policy {
    Arc::new(move |method, params| match method {
        "elicitation/create" => Reply::Result(answer(params)),
        other => refused(other),
    })
}

pub fn selected(option_id: &Value) -> Value {
    json!({"outcome": {"outcome": "selected", "optionId": option_id}})
}

fn refused(method: &str) -> Reply {
    Reply::Error { code: METHOD_NOT_FOUND, message: format!("unexpected {method}") }
}

/// The `kind` of each option of a `session/request_permission`, in order.
pub fn option_kinds(params: &Value) -> Vec<&str> {
    let options = params["options"].as_array().expect("a permission request has options");
    options.iter().map(|option| option["kind"].as_str().expect("an option has a kind")).collect()
}
