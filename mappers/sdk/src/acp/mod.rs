//! The ACP side of a mapper, so that a mapper keeps only how its host says things and how the
//! host wants its answers.
//!
//! What ACP hands a mapper, read into typed values:
//! - [`params`]: `session/new|load|resume` parameters with the client's MCP servers, the mode
//!   of `session/set_mode`, the change of `session/set_config_option`, `session/list`;
//! - [`prompt`]: the content blocks of `session/prompt`.
//!
//! What a mapper hands ACP, written the one way every mapper writes it:
//! - [`update`]: every `session/update` a mapper sends, as JSON text without a tree;
//! - [`config`]: session modes and config options;
//! - [`permission`]: permission questions and their fail-closed answers;
//! - [`elicit`]: questions as one form, and the answer decoded;
//! - [`plan`]: the todo list, and plan approval (the proposal, its form, the choice);
//! - [`turn`]: one prompt turn at a time, ended `cancelled` once the client cancelled it.
//!
//! Output is checked against the ACP schema the core validates with in each module's tests
//! (`acp_check`).

pub mod config;
pub mod elicit;
pub mod params;
pub mod permission;
pub mod plan;
pub mod prompt;
pub mod turn;
pub mod update;
mod write;

use zcode_contract::{Action, Interaction, InteractionRequest};

/// An interaction the host waits on, under `key` (unique in the session).
pub fn interaction(key: &str, request: InteractionRequest) -> Action {
    Action::Interaction(Interaction { key: key.to_string(), request })
}

/// An interaction no client can be shown: the core answers it `unavailable` at once, and the
/// mapper gives the host its fail-closed answer.
pub fn headless(key: &str, why: &str) -> Action {
    interaction(key, InteractionRequest::Headless(why.to_string()))
}

/// An elicitation form ([`elicit::questions_form`], [`plan::approval_form`]) under `key`.
pub fn form(key: &str, form: String) -> Action {
    interaction(key, InteractionRequest::Elicitation(form))
}
