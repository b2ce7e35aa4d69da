//! A session loaded in this host process: its stored record plus the live parts (who is
//! subscribed, the running turn, interactions waiting for an answer) and event emission.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use super::store::{RECENT_EVENTS, StoredSession};
use crate::common::catalog;
use crate::common::clock::now_ms;
use crate::common::output::Output;
use crate::task::profile::{ModelShape, Profile};

/// The running turn of a session.
pub struct TurnControl {
    pub turn_id: String,
    /// Set to `true` by `task.stopGeneration`.
    pub stop: watch::Sender<bool>,
}

/// What kind of answer an open interaction expects.
#[derive(Debug, Clone, PartialEq)]
pub enum PendingKind {
    Permission { option_ids: Vec<String> },
    Elicitation,
    ProviderHeaders,
}

/// An interaction the turn is blocked on.
pub struct Pending {
    pub kind: PendingKind,
    pub reply: oneshot::Sender<Value>,
}

pub struct LiveSession {
    pub record: StoredSession,
    /// Subscription ids receiving this session's events, in subscription order.
    pub subscribers: Vec<String>,
    pub turn: Option<TurnControl>,
    pub pending: HashMap<String, Pending>,
    /// `closeSession` was called; a new prompt needs `resumeSession` first.
    pub closed: bool,
    /// Whether the record exists on disk (`persistence: "deferred"` waits for the first prompt).
    pub persisted: bool,
    /// The release whose snapshot shape this session reports.
    pub profile: &'static Profile,
    out: Arc<Output>,
}

impl LiveSession {
    pub fn new(
        record: StoredSession,
        persisted: bool,
        profile: &'static Profile,
        out: Arc<Output>,
    ) -> LiveSession {
        LiveSession {
            record,
            subscribers: Vec::new(),
            turn: None,
            pending: HashMap::new(),
            closed: false,
            persisted,
            profile,
            out,
        }
    }

    /// Planning is on: the `plan` mode, or the independent flag.
    pub fn planning(&self) -> bool {
        self.record.mode == "plan" || self.record.plan_enabled
    }

    pub fn id(&self) -> &str {
        &self.record.session_id
    }

    pub fn is_running(&self) -> bool {
        self.turn.is_some()
    }

    /// `SessionSnapshot` with the last `message_limit` messages (all when `None`).
    pub fn snapshot(&self, signed_out: bool, message_limit: Option<usize>) -> Value {
        let record = &self.record;
        let messages = match message_limit {
            Some(limit) => &record.messages[record.messages.len().saturating_sub(limit)..],
            None => &record.messages[..],
        };
        let mut session = json!({
            "sessionId": record.session_id,
            "status": if self.is_running() { "running" } else { "idle" },
            "workspace": {"workspacePath": record.workspace_path},
            "updatedAt": record.updated_at,
        });
        if let Some(title) = &record.title {
            session["title"] = json!(title);
        }
        let cost = (record.usage.total() as f64 * catalog::USD_PER_TOKEN * 1e6).round() / 1e6;
        let settings = match self.profile.models {
            ModelShape::Refs => {
                catalog::settings(&record.model, &record.thought_level, &record.mode, signed_out)
            }
            ModelShape::Selection => {
                let model = catalog::find_selected_model(&record.model)
                    .unwrap_or_else(catalog::default_selected_model);
                catalog::selection_settings(model, &record.thought_level, &record.mode, signed_out)
            }
        };
        json!({
            "session": session,
            "settings": settings,
            "messages": messages,
            "runtime": {"contextUsage": {
                "used": record.context_used,
                "size": catalog::CONTEXT_WINDOW,
                "cost": {"amount": cost, "currency": "USD"},
            }},
            "todos": record.todos,
            "slashCommands": catalog::slash_commands(),
        })
    }

    /// Writes a dynamic event to every subscriber of this session.
    pub fn emit(&self, event: &Value) {
        for subscription_id in &self.subscribers {
            self.emit_to(subscription_id, event);
        }
    }

    pub fn emit_to(&self, subscription_id: &str, event: &Value) {
        self.out.frame(&json!({
            "method": "event",
            "params": {"subscriptionId": subscription_id, "event": event},
        }));
    }

    /// Emits a `snapshot` event with the full current state.
    pub fn emit_snapshot(&self, signed_out: bool) {
        if !self.subscribers.is_empty() {
            self.emit(&json!({"type": "snapshot", "snapshot": self.snapshot(signed_out, None)}));
        }
    }

    /// Hands out the next `seq` of this session.
    pub fn next_seq(&mut self) -> u64 {
        self.record.last_seq += 1;
        self.record.last_seq
    }

    /// Builds, records and emits a `session.event` with the next sequence number.
    pub fn emit_session_event(&mut self, turn_id: Option<&str>, kind: &str, payload: Value) {
        let event = self.record_session_event(turn_id, kind, payload);
        self.emit(&event);
    }

    /// Builds and records a `session.event` (as the dynamic event to emit) without emitting it.
    pub fn record_session_event(
        &mut self,
        turn_id: Option<&str>,
        kind: &str,
        payload: Value,
    ) -> Value {
        let seq = self.next_seq();
        let mut event = json!({
            "eventId": event_id(&self.record.session_id, seq),
            "sessionId": self.record.session_id,
            "seq": seq,
            "timestamp": now_ms(),
            "deliveryKind": "desktop-continuous",
            "type": kind,
            "payload": payload,
        });
        if let Some(turn_id) = turn_id {
            event["turnId"] = json!(turn_id);
        }
        self.remember(&event);
        json!({"type": "session.event", "event": event})
    }

    fn remember(&mut self, event: &Value) {
        let events = &mut self.record.recent_events;
        if events.len() == RECENT_EVENTS {
            events.pop_front();
        }
        events.push_back(event.clone());
    }

    /// Subscribers' output, for bulk rendering that bypasses [`Self::emit_session_event`].
    pub fn output(&self) -> &Arc<Output> {
        &self.out
    }
}

/// Event ids are unique across sessions and host processes: the session id plus its `seq`.
pub fn event_id(session_id: &str, seq: u64) -> String {
    format!("{session_id}-{seq}")
}
