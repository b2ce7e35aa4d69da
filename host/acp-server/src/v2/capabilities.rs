//! What a v2 `initialize` advertises: the v1 agent's surface in v2's terms, only what is
//! implemented and tested end to end.
//!
//! `capabilities.session` commits the agent to v2's baseline (new, list, resume, close,
//! prompt, cancel, update), all served. `session.fork` (unstable) only when the mapper that
//! serves this connection's ZCode offers it (V4 `forkAssistant`). Not advertised:
//! `session.delete`,
//! `session.additionalDirectories` (ZCode's host has no such operation and works in one
//! directory), `systemPrompt`, per-entity cancellation (`tool_call/cancel` and
//! `terminal/cancel`: ZCode stops a turn, not one tool), and the unstable extensions. MCP:
//! stdio (a v1 baseline) and http; v2 dropped SSE.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v2::schema::{
    AgentCapabilities, AuthMethod, AuthMethodTerminal, ClientCapabilities, Implementation,
    InitializeResponse, McpCapabilities, McpHttpCapabilities, McpStdioCapabilities,
    PromptAudioCapabilities, PromptCapabilities, PromptEmbeddedContextCapabilities,
    PromptImageCapabilities, SessionCapabilities, SessionForkCapabilities,
};
use zcode_contract::{ClientFeatures, FORK_METHOD};

use crate::LOGIN_METHOD_ID;

/// `offers`: the optional ACP methods the mapper serving this connection's ZCode offers.
pub fn initialize_response(
    client: &ClientCapabilities,
    version: &str,
    offers: &[String],
) -> InitializeResponse {
    let mut session = SessionCapabilities::new()
        .prompt(
            PromptCapabilities::new()
                .image(PromptImageCapabilities::new())
                .audio(PromptAudioCapabilities::new())
                .embedded_context(PromptEmbeddedContextCapabilities::new()),
        )
        .mcp(
            McpCapabilities::new()
                .stdio(McpStdioCapabilities::new())
                .http(McpHttpCapabilities::new()),
        );
    if offers.iter().any(|method| method == FORK_METHOD) {
        session = session.fork(SessionForkCapabilities::new());
    }
    // A terminal method only for a client that can run one; it is never passed to
    // `auth/login` (which confirms that the login it ran has completed).
    let mut auth_methods = Vec::new();
    if client.auth.as_ref().is_some_and(|auth| auth.terminal.is_some()) {
        auth_methods.push(AuthMethod::Terminal(
            AuthMethodTerminal::new(LOGIN_METHOD_ID, "ZCode login")
                .description("Sign in with ZCode's own login (opens a URL to visit in a browser)")
                .args(vec!["login".to_string()]),
        ));
    }
    InitializeResponse::new(
        ProtocolVersion::V2,
        Implementation::new("zcode-acp", version).title("ZCode via ACP"),
    )
    .capabilities(AgentCapabilities::new().session(session))
    .auth_methods(auth_methods)
}

/// The client features the mapper and coordinator adapt to. v2 plans are upserts by id, so
/// the mapper's plan operations are always on (the translation sends their stable form).
pub fn client_features(client: &ClientCapabilities) -> ClientFeatures {
    ClientFeatures {
        plan_operations: true,
        form_elicitation: client.elicitation.as_ref().is_some_and(|e| e.form.is_some()),
    }
}
