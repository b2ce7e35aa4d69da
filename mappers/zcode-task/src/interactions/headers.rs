//! Provider header recovery (`providerRuntimeHeaders.request`): never applied headlessly. The
//! host is told no headers were applied, and the running turn cannot go on.

use serde_json::Value;
use zcode_mapper_sdk::contract::{Action, MapperError};
use zcode_mapper_sdk::json::{Fields, protocol};

use super::{Pending, Target, refuse, unsupported};
use crate::ops::{self, Outbound};
use crate::state::State;

/// `providerRuntimeHeaders.request`: never applied headlessly; the running turn cannot go on.
pub fn provider_headers_request(
    state: &mut State,
    request: &Value,
) -> Result<Vec<Action>, MapperError> {
    let fields = Fields::native(request, "providerRuntimeHeaders.request")?;
    fields.only(&[
        "requestId",
        "sessionId",
        "turnId",
        "workspace",
        "modelRef",
        "providerId",
        "reason",
    ])?;
    let request_id = fields.non_empty_str("requestId")?;
    fields.str("sessionId")?;
    fields.opt_str("turnId")?;
    fields.object("workspace", "providerRuntimeHeaders.request workspace")?.str("workspacePath")?;
    let model = fields.object("modelRef", "providerRuntimeHeaders.request modelRef")?;
    model.str("providerId")?;
    model.str("modelId")?;
    fields.str("providerId")?;
    match fields.str("reason")? {
        "model-request" | "captcha-retry" => {}
        other => {
            return Err(protocol(format!(
                "providerRuntimeHeaders.request: unknown reason `{other}`"
            )));
        }
    }
    let key = format!("headers:{request_id}");
    let problem = unsupported(
        "ZCode requested interactive provider header recovery, which is unavailable headlessly",
    );
    let pending = Pending::ProviderHeaders { request_id: request_id.to_string() };
    Ok(refuse(
        state,
        &key,
        pending,
        "ZCode requested interactive provider header recovery",
        Some(problem),
    ))
}

pub(super) fn refuse_reply(to: Target<'_>, request_id: &str) -> Outbound {
    ops::refuse_provider_headers(to.workspace, to.session_id, request_id)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use zcode_mapper_sdk::contract::{ErrorKind, InteractionOutcome, InteractionRequest, Terminal};

    use crate::test_support::*;

    #[test]
    fn refuses_provider_header_recovery() {
        let mut driver = running(true, true);
        let event = json!({"type": "providerRuntimeHeaders.request", "request": {
            "requestId": "h1", "sessionId": "session-1", "turnId": "turn-1", "workspace": {"workspacePath": "/w"},
            "modelRef": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-5.2"}, "providerId": "builtin:zai-coding-plan", "reason": "captcha-retry",
        }});
        let actions = driver.event(event);
        assert!(matches!(interaction(&actions), ("headers:h1", InteractionRequest::Headless(_))));
        match terminal(&actions) {
            Some(Terminal::Broken(problem)) => {
                assert_eq!(problem.kind, ErrorKind::Unsupported);
                assert_eq!(
                    problem.message,
                    "ZCode requested interactive provider header recovery, which is unavailable headlessly"
                );
            }
            other => panic!("expected broken, got {other:?}"),
        }
        let run = driver.answer(
            "headers:h1",
            InteractionOutcome::Unavailable("headless".into()),
            ok(Value::Null),
        );
        assert_eq!(run.methods(), ["agent.respondProviderRuntimeHeaders"]);
        assert_eq!(
            run.params(0),
            &json!({"workspacePath": "/w", "sessionId": "session-1", "requestId": "h1",
            "response": {"headersApplied": false, "errorMessage": "Interactive provider recovery is unavailable in the headless ACP adapter"}})
        );
    }
}
