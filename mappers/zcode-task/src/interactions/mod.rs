//! Things the host waits on, by kind: ordinary permission ([`permission`]), structured input
//! ([`questions`]), plan approval asked either way ([`plan`]) and provider header recovery
//! ([`headers`]). Each becomes one keyed interaction that gets exactly one native answer;
//! nothing is ever allowed by default: whatever cannot be shown or answered gets the native
//! deny or decline.

mod headers;
mod permission;
mod plan;
mod questions;

use std::collections::{BTreeMap, BTreeSet};

use zcode_mapper_sdk::contract::{Action, ErrorKind, InteractionAnswer, MapperError};
use zcode_mapper_sdk::json::{error, internal};

use crate::ops::Outbound;
use crate::state::State;

pub use headers::provider_headers_request;
pub use permission::permission_request;
pub use questions::user_input_request;

/// What the native side is waiting for, by interaction key.
#[derive(Clone, Debug)]
enum Pending {
    Permission(permission::Asked),
    /// Answered with the native deny option whatever the outcome.
    Deny {
        request_id: String,
        option: String,
    },
    /// Answered with a native decline whatever the outcome.
    Decline {
        request_id: String,
        reason: String,
    },
    Questions(questions::Asked),
    PlanPermission(plan::AskedAsPermission),
    PlanQuestion(plan::AskedAsQuestion),
    ProviderHeaders {
        request_id: String,
    },
}

/// Open interactions and every key ever used (a key is never reused in a session).
#[derive(Default)]
pub struct Interactions {
    pending: BTreeMap<String, Pending>,
    seen: BTreeSet<String>,
}

impl Interactions {
    /// Registers `key`; false if it was used before (a re-delivered request).
    fn register(&mut self, key: &str, pending: Pending) -> bool {
        if !self.seen.insert(key.to_string()) {
            return false;
        }
        self.pending.insert(key.to_string(), pending);
        true
    }
}

/// The native session an answer goes to.
#[derive(Clone, Copy)]
struct Target<'a> {
    workspace: &'a str,
    session_id: &'a str,
}

fn unsupported(message: &str) -> MapperError {
    error(ErrorKind::Unsupported, message)
}

/// Fails a request that cannot be shown: the host gets the fail-closed answer through a
/// headless interaction, and a running turn ends broken.
fn refuse(
    state: &mut State,
    key: &str,
    pending: Pending,
    why: &str,
    problem: Option<MapperError>,
) -> Vec<Action> {
    if !state.interactions.register(key, pending) {
        return vec![Action::Ignore(format!("re-delivered interaction {key}"))];
    }
    let mut actions = vec![zcode_mapper_sdk::acp::headless(key, why)];
    if let Some(problem) = problem
        && state.running()
    {
        actions.extend(state.break_turn(problem));
    }
    actions
}

/// The native reply to an interaction answer, and what the client hears about it.
pub struct Answered {
    /// Plan view updates to send once the host took the reply.
    pub updates: Vec<String>,
    pub outbound: Outbound,
    /// The reply approves a plan: the host leaves planning once it takes it.
    pub plan_approved: bool,
}

impl Answered {
    fn plain(outbound: Outbound) -> Self {
        Self { updates: Vec::new(), outbound, plan_approved: false }
    }

    fn with_updates(updates: Vec<String>, outbound: Outbound) -> Self {
        Self { updates, outbound, plan_approved: false }
    }

    fn approving(updates: Vec<String>, outbound: Outbound) -> Self {
        Self { updates, outbound, plan_approved: true }
    }
}

/// Turns the core's answer into the native reply (and plan view updates). An unknown or
/// already-answered key is an error without any native request.
pub fn answer(state: &mut State, answer: &InteractionAnswer) -> Result<Answered, MapperError> {
    let pending = state.interactions.pending.remove(&answer.key).ok_or_else(|| {
        internal(format!("Unknown or already answered interaction: {}", answer.key))
    })?;
    let workspace = state.workspace.clone();
    let session_id = state.session_id()?.to_string();
    let to = Target { workspace: &workspace, session_id: &session_id };
    let outcome = &answer.outcome;
    Ok(match pending {
        Pending::Permission(asked) => Answered::plain(permission::answer(to, asked, outcome)),
        Pending::Deny { request_id, option } => {
            Answered::plain(permission::respond(to, &request_id, &option))
        }
        Pending::Decline { request_id, reason } => {
            Answered::plain(questions::decline(to, &request_id, reason))
        }
        Pending::ProviderHeaders { request_id } => {
            Answered::plain(headers::refuse_reply(to, &request_id))
        }
        Pending::Questions(asked) => Answered::plain(questions::answer(to, asked, outcome)),
        Pending::PlanPermission(asked) => plan::answer_permission(state, to, asked, outcome),
        Pending::PlanQuestion(asked) => plan::answer_question(state, to, asked, outcome),
    })
}

#[cfg(test)]
mod tests {

    use zcode_mapper_sdk::contract::{ErrorKind, InteractionAnswer, InteractionOutcome, SessionOp};

    use crate::test_support::*;

    #[test]
    fn keeps_interaction_keys_unique_across_kinds() {
        let mut driver = running(true, true);
        driver.event(permission_event("same", "Bash", allow_deny_options()));
        let actions = driver.event(question_event("same", two_questions()));
        assert_eq!(interaction(&actions).0, "input:same");
    }

    #[test]
    fn rejects_answers_for_unknown_keys() {
        let mut driver = running(true, true);
        let run = driver.run(
            SessionOp::Answer(InteractionAnswer {
                key: "permission:nope".into(),
                outcome: InteractionOutcome::Selected("allow".into()),
            }),
            vec![],
        );
        assert!(run.requests.is_empty());
        assert_eq!(run.error().kind, ErrorKind::Internal);
    }
}
