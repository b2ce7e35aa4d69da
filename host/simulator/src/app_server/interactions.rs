//! The race between a legacy reverse request and a V4 `resolveInteraction` command on the same
//! interaction (3.15.1 `interaction-response-race.ts`): whichever answer reaches the Agent
//! first wins. A V4 answer aborts the pending reverse request (internally `-32021`, nothing is
//! written); a later legacy answer is dropped; a later V4 answer is a `noop` with
//! `proto.alreadyResolved`.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::{oneshot, watch};

/// How many settled interaction ids are remembered for `proto.alreadyResolved`.
const REMEMBERED: usize = 256;

/// A V4 `resolveInteraction` answer (`payload.answer`) and who sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct V4Answer {
    pub option_id: Option<String>,
    pub free_text: Option<String>,
    pub action: Option<String>,
    pub content: Option<Value>,
    pub client_id: String,
}

impl V4Answer {
    pub fn from_payload(answer: &Value, client_id: &str) -> V4Answer {
        let text = |key: &str| answer.get(key).and_then(Value::as_str).map(str::to_owned);
        V4Answer {
            option_id: text("optionId"),
            free_text: text("freeText"),
            action: text("action"),
            content: answer.get("content").filter(|content| content.is_object()).cloned(),
            client_id: client_id.to_owned(),
        }
    }
}

/// What a `resolveInteraction` achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    Delivered,
    AlreadyResolved,
    /// No such interaction in this session (unknown id, or another session's).
    NotFound,
}

struct Pending {
    session_id: String,
    answer: Option<oneshot::Sender<V4Answer>>,
    abort: watch::Sender<bool>,
}

#[derive(Default)]
struct Registry {
    pending: HashMap<String, Pending>,
    settled: VecDeque<(String, String)>,
}

#[derive(Default)]
pub struct Interactions {
    registry: Mutex<Registry>,
}

/// A registered interaction: the V4 answer (if one wins) and the abort signal for the legacy
/// request.
pub struct Registration {
    pub answer: oneshot::Receiver<V4Answer>,
    pub aborted: watch::Receiver<bool>,
}

impl Interactions {
    pub fn register(&self, interaction_id: &str, session_id: &str) -> Registration {
        let (answer_sender, answer) = oneshot::channel();
        let (abort, aborted) = watch::channel(false);
        let pending =
            Pending { session_id: session_id.to_owned(), answer: Some(answer_sender), abort };
        self.lock().pending.insert(interaction_id.to_owned(), pending);
        Registration { answer, aborted }
    }

    /// Delivers a V4 answer; the first one wins.
    pub fn resolve(&self, interaction_id: &str, session_id: &str, answer: V4Answer) -> Resolution {
        let mut registry = self.lock();
        if let Some(pending) = registry.pending.get_mut(interaction_id) {
            if pending.session_id != session_id {
                return Resolution::NotFound;
            }
            return match pending.answer.take() {
                Some(sender) => {
                    let _ = sender.send(answer);
                    pending.abort.send_replace(true);
                    Resolution::Delivered
                }
                None => Resolution::AlreadyResolved,
            };
        }
        let known = registry
            .settled
            .iter()
            .any(|(id, session)| id == interaction_id && session == session_id);
        if known { Resolution::AlreadyResolved } else { Resolution::NotFound }
    }

    /// A host answer arrived for the interaction: it wins unless a V4 answer came first.
    /// Unknown ids are not interactions of this registry and pass.
    pub fn claim_for_legacy(&self, interaction_id: &str) -> bool {
        let mut registry = self.lock();
        match registry.pending.get_mut(interaction_id) {
            Some(pending) => pending.answer.take().is_some(),
            None => !registry.settled.iter().any(|(id, _)| id == interaction_id),
        }
    }

    /// Unregisters a settled interaction (either side won, or the turn gave up).
    pub fn finish(&self, interaction_id: &str) {
        let mut registry = self.lock();
        if let Some(pending) = registry.pending.remove(interaction_id) {
            if registry.settled.len() == REMEMBERED {
                registry.settled.pop_front();
            }
            registry.settled.push_back((interaction_id.to_owned(), pending.session_id));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().expect("interaction registry lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(option: &str) -> V4Answer {
        V4Answer::from_payload(&serde_json::json!({"optionId": option}), "client-a")
    }

    #[test]
    fn the_first_answer_wins_and_later_ones_are_noops() {
        let interactions = Interactions::default();
        let mut registration = interactions.register("req-1", "sess_a");
        assert_eq!(interactions.resolve("req-1", "sess_b", answer("deny")), Resolution::NotFound);
        assert_eq!(
            interactions.resolve("req-1", "sess_a", answer("allowOnce")),
            Resolution::Delivered
        );
        assert!(*registration.aborted.borrow(), "the legacy request is aborted");
        assert_eq!(registration.answer.try_recv().unwrap().option_id.as_deref(), Some("allowOnce"));
        assert_eq!(
            interactions.resolve("req-1", "sess_a", answer("deny")),
            Resolution::AlreadyResolved
        );
        interactions.finish("req-1");
        assert_eq!(
            interactions.resolve("req-1", "sess_a", answer("deny")),
            Resolution::AlreadyResolved
        );
        assert_eq!(interactions.resolve("req-9", "sess_a", answer("deny")), Resolution::NotFound);
    }

    #[test]
    fn a_host_answer_wins_only_before_a_v4_answer() {
        let interactions = Interactions::default();
        let _first = interactions.register("req-1", "sess_a");
        assert!(interactions.claim_for_legacy("req-1"));
        assert_eq!(
            interactions.resolve("req-1", "sess_a", answer("deny")),
            Resolution::AlreadyResolved,
            "the host answered first"
        );
        let _second = interactions.register("req-2", "sess_a");
        assert_eq!(
            interactions.resolve("req-2", "sess_a", answer("allowOnce")),
            Resolution::Delivered
        );
        assert!(!interactions.claim_for_legacy("req-2"), "the V4 answer came first");
        interactions.finish("req-2");
        assert!(!interactions.claim_for_legacy("req-2"));
        assert!(interactions.claim_for_legacy("not-an-interaction"));
    }
}
