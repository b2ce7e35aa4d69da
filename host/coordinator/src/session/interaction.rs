//! Asking the client about a native interaction, and turning whatever comes back — an answer,
//! an error, silence — into exactly one native answer that never allows by accident.

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, RequestPermissionOutcome, RequestPermissionRequest,
};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use zcode_contract::InteractionOutcome;

use super::Command;
use crate::client::ClientPort;

/// The task asking the client about one interaction. It belongs to the interaction: dropping
/// this (the interaction was answered, refused or abandoned, or the session is gone) ends it,
/// which withdraws the question from the client.
pub(crate) struct Asking(AbortHandle);

impl Asking {
    fn spawn(task: impl Future<Output = ()> + Send + 'static) -> Self {
        Self(tokio::spawn(task).abort_handle())
    }
}

impl Drop for Asking {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Asks `session/request_permission`; reports the option to send natively.
pub(crate) fn ask_permission(
    client: &Arc<dyn ClientPort>,
    commands: &mpsc::UnboundedSender<Command>,
    key: String,
    request: RequestPermissionRequest,
    deny_option: String,
    timeout: Duration,
) -> Asking {
    let offered: Vec<String> = request.options.iter().map(|o| o.option_id.0.to_string()).collect();
    let asked = client.request_permission(request);
    let commands = commands.clone();
    Asking::spawn(async move {
        let (option, failure) = match tokio::time::timeout(timeout, asked).await {
            Ok(Ok(response)) => match response.outcome {
                RequestPermissionOutcome::Selected(selected) => {
                    let id = selected.option_id.0.to_string();
                    if offered.contains(&id) {
                        (id, None)
                    } else {
                        let why = format!("the client selected an unknown permission option: {id}");
                        (deny_option, Some(why))
                    }
                }
                // The user dismissed the question (or cancelled the turn): deny, carry on.
                _ => (deny_option, None),
            },
            Ok(Err(error)) => {
                (deny_option, Some(format!("the permission request failed: {error}")))
            }
            Err(_) => (deny_option, Some(unanswered("permission request", timeout))),
        };
        let outcome = InteractionOutcome::Selected(option);
        let _ = commands.send(Command::Answered { key, outcome, failure });
    })
}

/// Asks `elicitation/create` (form); reports the client's response for the mapper.
pub(crate) fn ask_elicitation(
    client: &Arc<dyn ClientPort>,
    commands: &mpsc::UnboundedSender<Command>,
    key: String,
    request: CreateElicitationRequest,
    timeout: Duration,
) -> Asking {
    let asked = client.elicit(request);
    let commands = commands.clone();
    Asking::spawn(async move {
        let (outcome, failure) = match tokio::time::timeout(timeout, asked).await {
            Ok(Ok(response)) => (
                InteractionOutcome::Elicited(
                    serde_json::to_string(&response).expect("ACP types serialize"),
                ),
                None,
            ),
            Ok(Err(error)) => {
                let why = format!("the elicitation request failed: {error}");
                (InteractionOutcome::Unavailable(why.clone()), Some(why))
            }
            Err(_) => {
                let why = unanswered("elicitation request", timeout);
                (InteractionOutcome::Unavailable(why.clone()), Some(why))
            }
        };
        let _ = commands.send(Command::Answered { key, outcome, failure });
    })
}

/// The answer for an interaction we cannot or may no longer ask about.
pub(crate) fn refusal(deny_option: Option<&str>, why: &str) -> InteractionOutcome {
    match deny_option {
        Some(option) => InteractionOutcome::Selected(option.to_string()),
        None => InteractionOutcome::Unavailable(why.to_string()),
    }
}

fn unanswered(what: &str, timeout: Duration) -> String {
    format!("the client did not answer the {what} within {} s", timeout.as_secs())
}
