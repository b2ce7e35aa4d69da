//! What `initialize` advertises: only what is implemented and tested end to end.
//!
//! `session/fork` (unstable) is advertised only when the mapper that serves this connection's
//! ZCode offers it (`offers`: V4 `forkAssistant` on Desktop and runtime 3.14+; the task
//! protocol has none). Deliberately not advertised: `session/delete` (ZCode 3.11's host has no
//! such operation), `additionalDirectories` (the host works in one directory), and client
//! `fs/*` / `terminal/*` use (ZCode runs its tools itself, like the reference adapters).

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentAuthCapabilities, AgentCapabilities, AuthMethod, AuthMethodTerminal, ClientCapabilities,
    Implementation, InitializeResponse, LogoutCapabilities, McpCapabilities, PromptCapabilities,
    SessionCapabilities, SessionCloseCapabilities, SessionForkCapabilities,
    SessionListCapabilities, SessionResumeCapabilities,
};
use zcode_contract::{ClientFeatures, FORK_METHOD};

use crate::LOGIN_METHOD_ID;

/// The `clientCapabilities._meta` key by which clients declared terminal auth before
/// `auth.terminal` existed. The ACP Registry's CI still declares it this way (and only this
/// way), so an agent that reads `auth.terminal` alone offers it no auth method and is refused.
const LEGACY_TERMINAL_AUTH_META: &str = "terminal-auth";

/// `offers`: the optional ACP methods the mapper serving this connection's ZCode offers.
pub fn initialize_response(
    client: &ClientCapabilities,
    version: &str,
    offers: &[String],
) -> InitializeResponse {
    let mut session = SessionCapabilities::new()
        .list(SessionListCapabilities::new())
        .resume(SessionResumeCapabilities::new())
        .close(SessionCloseCapabilities::new());
    if offers.iter().any(|method| method == FORK_METHOD) {
        session = session.fork(SessionForkCapabilities::new());
    }
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(
            PromptCapabilities::new().image(true).audio(true).embedded_context(true),
        )
        .mcp_capabilities(McpCapabilities::new().http(true).sse(true))
        .session_capabilities(session)
        .auth(AgentAuthCapabilities::new().logout(LogoutCapabilities::new()));
    let mut auth_methods = Vec::new();
    if runs_terminal_auth(client) {
        auth_methods.push(AuthMethod::Terminal(
            AuthMethodTerminal::new(LOGIN_METHOD_ID, "ZCode login")
                .description("Sign in with ZCode's own login (opens a URL to visit in a browser)")
                .args(vec!["login".to_string()]),
        ));
    }
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(capabilities)
        .auth_methods(auth_methods)
        .agent_info(Implementation::new("zcode-acp", version).title("ZCode via ACP"))
}

/// Whether the client can run a terminal auth method: `auth.terminal`, or the legacy
/// `_meta["terminal-auth"]: true`.
fn runs_terminal_auth(client: &ClientCapabilities) -> bool {
    client.auth.terminal
        || client
            .meta
            .as_ref()
            .and_then(|meta| meta.get(LEGACY_TERMINAL_AUTH_META))
            .is_some_and(|value| value.as_bool() == Some(true))
}

/// The client features the mapper and coordinator adapt to.
pub fn client_features(client: &ClientCapabilities) -> ClientFeatures {
    ClientFeatures {
        plan_operations: client.plan.is_some(),
        form_elicitation: client.elicitation.as_ref().is_some_and(|e| e.form.is_some()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn auth_methods(client_capabilities: Value) -> Value {
        let client: ClientCapabilities =
            serde_json::from_value(client_capabilities).expect("client capabilities");
        serde_json::to_value(initialize_response(&client, "0.0.0", &[])).unwrap()["authMethods"]
            .clone()
    }

    #[test]
    fn fork_is_advertised_only_when_the_mapper_offers_it() {
        let client = ClientCapabilities::default();
        let session = |offers: &[String]| {
            serde_json::to_value(initialize_response(&client, "0", offers)).unwrap()
                ["agentCapabilities"]["sessionCapabilities"]
                .clone()
        };
        assert_eq!(session(&["session/fork".into()])["fork"], json!({}));
        assert!(session(&[]).get("fork").is_none());
        assert!(session(&["session/delete".into()]).get("fork").is_none());
    }

    #[test]
    fn terminal_auth_is_offered_to_clients_that_declare_it_either_way() {
        let login = json!([{"type": "terminal", "id": LOGIN_METHOD_ID, "name": "ZCode login",
            "description": "Sign in with ZCode's own login (opens a URL to visit in a browser)",
            "args": ["login"]}]);
        assert_eq!(auth_methods(json!({"auth": {"terminal": true}})), login);
        // What the ACP Registry's CI sends (registry .github/workflows/client.py).
        let registry = json!({"terminal": true, "fs": {"readTextFile": true, "writeTextFile": true},
            "_meta": {"terminal_output": true, "terminal-auth": true}});
        assert_eq!(auth_methods(registry), login);
    }

    #[test]
    fn clients_that_cannot_run_terminal_auth_are_offered_none() {
        for client in [
            json!({}),
            json!({"terminal": true}),
            json!({"auth": {"terminal": false}}),
            json!({"_meta": {"terminal-auth": false}}),
            json!({"_meta": {"terminal-auth": "yes"}}),
            json!({"_meta": {"terminal_output": true}}),
        ] {
            let methods = auth_methods(client.clone());
            assert!(methods.is_null() || methods == json!([]), "{client}: {methods}");
        }
    }
}
