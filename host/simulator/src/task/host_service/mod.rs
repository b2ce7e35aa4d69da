//! The simulated ZCode host service: the `zcode-agent` and `zcode-task` channels with real
//! session state, and the dynamic-event subscriptions behind `onDynamicSessionEvent`.

mod agent;
mod inject;
mod model_selection;
mod params;
pub mod session;
pub mod store;
mod task;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::output::Output;
use crate::task::fault::{FaultKind, Faults};
use crate::task::profile::{Channel, Profile};
use crate::task::turn::TurnStart;
use params::Params;
use session::LiveSession;
use store::Store;

pub type SharedSession = Arc<Mutex<LiveSession>>;

/// Settings read once from the environment at start.
pub struct HostOptions {
    pub signed_out: bool,
    /// `ZCODE_SIM_SCENARIO`: one scenario file for every prompt.
    pub scenario_file: Option<PathBuf>,
    /// `ZCODE_SIM_CHUNK_DELAY_MS`: pause between streamed chunks (default none).
    pub chunk_delay: Option<Duration>,
}

pub struct Host {
    pub profile: &'static Profile,
    pub options: HostOptions,
    pub faults: Faults,
    pub out: Arc<Output>,
    store: Store,
    sessions: Mutex<HashMap<String, SharedSession>>,
    /// Subscription id → session id.
    subscriptions: Mutex<HashMap<String, String>>,
}

/// A method's result, and the turn to start once the result has been written.
pub struct Handled {
    pub result: Value,
    pub turn: Option<TurnStart>,
}

impl From<Value> for Handled {
    fn from(result: Value) -> Handled {
        Handled { result, turn: None }
    }
}

impl Host {
    pub fn new(
        profile: &'static Profile,
        options: HostOptions,
        faults: Faults,
        store: Store,
        out: Arc<Output>,
    ) -> Arc<Host> {
        Arc::new(Host {
            profile,
            options,
            faults,
            out,
            store,
            sessions: Mutex::new(HashMap::new()),
            subscriptions: Mutex::new(HashMap::new()),
        })
    }

    /// Serves one method call on one channel.
    pub fn call(
        self: &Arc<Self>,
        channel: Channel,
        method: &str,
        params: &Value,
    ) -> Result<Handled, String> {
        if !self.profile.serves(channel, method) {
            return Err(format!("Method not found: {method}"));
        }
        let params = Params::new(method, params)?;
        match channel {
            Channel::Agent => agent::call(self, method, &params),
            Channel::Task => task::call(self, method, &params).map(Handled::from),
            Channel::ModelSelection => {
                model_selection::call(self, method, &params).map(Handled::from)
            }
        }
    }

    /// `onDynamicSessionEvent(target)(listener)`: registers the subscriber and, with
    /// `includeSnapshot`, delivers the session's snapshot to it first.
    pub fn subscribe(&self, subscription_id: &str, target: &Value) -> Result<(), String> {
        let target = Params::new("onDynamicSessionEvent", target)?;
        let workspace = target.workspace()?;
        let session_id = target.string("sessionId")?;
        let include_snapshot =
            target.get("includeSnapshot").and_then(Value::as_bool).unwrap_or(false);
        let shared = self.live(session_id)?;
        let mut subscriptions = self.subscriptions.lock().expect("subscriptions lock");
        let mut live = shared.lock().expect("session lock");
        if live.record.workspace_path != workspace {
            return Err(format!("Session {session_id} does not belong to workspace {workspace}"));
        }
        subscriptions.insert(subscription_id.to_owned(), session_id.to_owned());
        live.subscribers.push(subscription_id.to_owned());
        if include_snapshot {
            let snapshot = live.snapshot(self.options.signed_out, None);
            live.emit_to(subscription_id, &json!({"type": "snapshot", "snapshot": snapshot}));
        }
        Ok(())
    }

    pub fn has_subscription(&self, subscription_id: &str) -> bool {
        self.subscriptions.lock().expect("subscriptions lock").contains_key(subscription_id)
    }

    /// Disposes one subscription; unknown ids are fine.
    pub fn unsubscribe(&self, subscription_id: &str) {
        let session_id =
            self.subscriptions.lock().expect("subscriptions lock").remove(subscription_id);
        let shared = session_id.and_then(|id| self.loaded(&id));
        if let Some(shared) = shared {
            shared.lock().expect("session lock").subscribers.retain(|id| id != subscription_id);
        }
    }

    /// Disposes every subscription (bridge shutdown): no event is written after this.
    pub fn dispose_subscriptions(&self) {
        let ids: Vec<String> =
            self.subscriptions.lock().expect("subscriptions lock").keys().cloned().collect();
        for id in ids {
            self.unsubscribe(&id);
        }
    }

    /// Writes an injected fault frame for `session_id` (or for every subscription).
    pub fn inject(&self, kind: FaultKind, session_id: Option<&str>) {
        let target = session_id.and_then(|id| self.loaded(id));
        match target {
            Some(shared) => inject::into_session(&mut shared.lock().expect("session lock"), kind),
            None => {
                let subscriptions: Vec<String> = self
                    .subscriptions
                    .lock()
                    .expect("subscriptions lock")
                    .keys()
                    .cloned()
                    .collect();
                inject::unrouted(&self.out, kind, &subscriptions);
                if kind == FaultKind::SeqGap {
                    for shared in self.sessions.lock().expect("sessions lock").values() {
                        inject::into_session(&mut shared.lock().expect("session lock"), kind);
                    }
                }
            }
        }
    }

    /// A session loaded in this process, if any.
    fn loaded(&self, session_id: &str) -> Option<SharedSession> {
        self.sessions.lock().expect("sessions lock").get(session_id).cloned()
    }

    /// The live session, loading it from the store when this process has not seen it yet.
    pub fn live(&self, session_id: &str) -> Result<SharedSession, String> {
        let mut sessions = self.sessions.lock().expect("sessions lock");
        if let Some(shared) = sessions.get(session_id) {
            return Ok(shared.clone());
        }
        let record = self
            .store
            .load_session(session_id)?
            .ok_or_else(|| format!("Session not found: {session_id}"))?;
        let live = LiveSession::new(record, true, self.profile, self.out.clone());
        let shared = Arc::new(Mutex::new(live));
        sessions.insert(session_id.to_owned(), shared.clone());
        Ok(shared)
    }

    fn insert(&self, live: LiveSession) -> SharedSession {
        let id = live.id().to_owned();
        let shared = Arc::new(Mutex::new(live));
        self.sessions.lock().expect("sessions lock").insert(id, shared.clone());
        shared
    }

    fn live_sessions(&self) -> Vec<SharedSession> {
        self.sessions.lock().expect("sessions lock").values().cloned().collect()
    }

    /// Saves the session unless it is still deferred.
    pub fn persist(&self, live: &mut LiveSession) -> Result<(), String> {
        if live.persisted { self.store.save_session(&live.record) } else { Ok(()) }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }
}
