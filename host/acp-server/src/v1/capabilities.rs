//! What `initialize` advertises: only what is implemented and tested end to end.
//!
//! Deliberately not advertised: `session/fork` and `session/delete` (ZCode 3.11's host has no
//! such operation), `additionalDirectories` (the host works in one directory), and client
//! `fs/*` / `terminal/*` use (ZCode runs its tools itself, like the reference adapters).

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentAuthCapabilities, AgentCapabilities, AuthMethod, AuthMethodTerminal, ClientCapabilities,
    Implementation, InitializeResponse, LogoutCapabilities, McpCapabilities, PromptCapabilities,
    SessionCapabilities, SessionCloseCapabilities, SessionListCapabilities,
    SessionResumeCapabilities,
};
use zcode_contract::ClientFeatures;

use crate::LOGIN_METHOD_ID;

pub fn initialize_response(client: &ClientCapabilities, version: &str) -> InitializeResponse {
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(
            PromptCapabilities::new().image(true).audio(true).embedded_context(true),
        )
        .mcp_capabilities(McpCapabilities::new().http(true).sse(true))
        .session_capabilities(
            SessionCapabilities::new()
                .list(SessionListCapabilities::new())
                .resume(SessionResumeCapabilities::new())
                .close(SessionCloseCapabilities::new()),
        )
        .auth(AgentAuthCapabilities::new().logout(LogoutCapabilities::new()));
    let mut auth_methods = Vec::new();
    if client.auth.terminal {
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

/// The client features the mapper and coordinator adapt to.
pub fn client_features(client: &ClientCapabilities) -> ClientFeatures {
    ClientFeatures {
        plan_operations: client.plan.is_some(),
        form_elicitation: client.elicitation.as_ref().is_some_and(|e| e.form.is_some()),
    }
}
