//! The simulated Agent's shared state (one lock for every handler and turn) and the session
//! operations the method families and turns have in common: runtime materialisation, event
//! and `state.updated` emission, V4 patches, settings announcements, the start of a run.
//! Nothing here knows a method family or a turn (`mod.rs` states the direction).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use super::catalog::{self, Entitlements};
use super::delta_batch::Delta;
use super::fault::AppFaults;
use super::gateway::{Gateway, write_frame_notification};
use super::interactions::Interactions;
use super::profile::AppServerProfile;
use super::provider_config::ProviderConfig;
use super::reverse::{ClientError, ClientRequest, Reverse};
use super::schemas;
use super::session::{Preferences, Resident, TurnStart};
use super::snapshot::{self, Models};
use super::store::{AppStore, SessionRecord, Usage};
use super::wire::{self, ProtocolError};
use crate::common::clock::now_ms;
use crate::common::output::Output;
use crate::common::process::{ScenarioOptions, number};
use crate::v4::publisher::{Batch, Publisher};

/// Settings read once from the environment.
pub struct Options {
    pub reannounce: Duration,
    pub runtime_preferences_timeout: Duration,
    pub headers_timeout: Duration,
    pub auto_resolution: Duration,
    pub chunk_delay: Option<Duration>,
    pub scenario_file: Option<PathBuf>,
    /// `ZCODE_SIM_ARRAY_LINES=1`: notifications go out as JSON arrays, one line for those
    /// written together, as a real app-server was seen writing them (docs/simulator.md §7).
    pub array_lines: bool,
}

fn millis(name: &str, default: u64) -> Result<Duration, String> {
    Ok(Duration::from_millis(number(name)?.unwrap_or(default)))
}

impl Options {
    pub fn from_env() -> Result<Options, String> {
        let ScenarioOptions { scenario_file, chunk_delay } = ScenarioOptions::from_env()?;
        Ok(Options {
            // Source values: 1 s re-announce, 15 s runtime preferences, 180 s headers.
            reannounce: millis("ZCODE_SIM_REANNOUNCE_MS", 1_000)?,
            runtime_preferences_timeout: millis(
                "ZCODE_SIM_RUNTIME_PREFERENCES_TIMEOUT_MS",
                15_000,
            )?,
            headers_timeout: millis("ZCODE_SIM_HEADERS_TIMEOUT_MS", 180_000)?,
            auto_resolution: millis("ZCODE_SIM_AUTO_RESOLUTION_MS", 90_000)?,
            chunk_delay,
            scenario_file,
            array_lines: std::env::var("ZCODE_SIM_ARRAY_LINES").is_ok_and(|value| value == "1"),
        })
    }
}

/// Everything handlers share, behind one lock.
pub struct State {
    pub store: AppStore,
    /// Ordered, not hashed: a streamed delta looks its session up twice, and hashing its id
    /// each time was a few per cent of the Desktop simulator's CPU per delta, where comparing
    /// it with the few open sessions' ids costs next to nothing (docs/performance.md, issue 27).
    pub sessions: BTreeMap<String, Resident>,
    pub entitlements: Entitlements,
    pub gateway: Gateway,
    pub out: Arc<Output>,
    /// `workspace/updateInteractionPreferences`, by workspace key.
    pub auto_resolution: HashMap<String, bool>,
    /// Interactions whose auto-resolution a V4 client snoozed.
    pub snoozed: HashSet<String>,
    /// [`Options::array_lines`].
    pub array_lines: bool,
    /// Notifications of the batch being written ([`State::batch`]), put together.
    held: Option<Line>,
    /// The buffer of the last batch written, kept for the next one.
    spare: String,
}

impl State {
    /// The legacy snapshot of a resident session.
    pub fn snapshot(
        &self,
        session_id: &str,
        models: Models,
        message_limit: Option<usize>,
    ) -> Result<Value, ProtocolError> {
        let resident =
            self.sessions.get(session_id).ok_or_else(|| ProtocolError::not_active(session_id))?;
        Ok(snapshot::snapshot(resident, &self.entitlements, models, message_limit))
    }

    /// The settings state of a resident session (current model only).
    pub fn settings(&self, session_id: &str) -> Result<Value, ProtocolError> {
        let resident =
            self.sessions.get(session_id).ok_or_else(|| ProtocolError::not_active(session_id))?;
        Ok(snapshot::settings(resident, &self.entitlements, Models::Current))
    }

    /// Deactivates a session's runtime (close, eviction): its in-memory state and V4
    /// subscriptions go, the store keeps what was persisted.
    pub fn remove_resident(&mut self, session_id: &str) -> Option<Resident> {
        self.sessions.remove(session_id)
    }

    /// Whether AskUserQuestion resolves itself in this session's workspace.
    pub fn auto_resolves(&self, session_id: &str) -> bool {
        let Some(resident) = self.sessions.get(session_id) else { return false };
        let key = resident.record.workspace["workspaceKey"].as_str().unwrap_or_default();
        self.auto_resolution.get(key).copied().unwrap_or(resident.preferences.ask_auto_resolution)
    }

    /// Writes notifications: each on its line, or, with [`Options::array_lines`], all of them
    /// as one JSON array on one line (a real app-server batches notifications so: the release
    /// notes of csuftt/zcode-jetbrains-plugin ZC-GUI 0.3.7, 2026-09-20). Inside
    /// [`State::batch`] they are held until the batch ends.
    pub fn notify(&mut self, notifications: Vec<Value>) {
        let texts = notifications.iter().map(|notification| {
            serde_json::to_string(notification).expect("JSON values always serialize")
        });
        self.notify_texts(texts.collect());
    }

    /// [`State::notify`] for notifications already serialized.
    fn notify_texts(&mut self, texts: Vec<String>) {
        self.batch(|state| {
            let (line, array) = state.held_line();
            for text in texts {
                line.push(array, |line| line.push_str(&text));
            }
        });
    }

    /// Runs `write` with the notifications it writes held, then writes them together: one
    /// line with [`Options::array_lines`]. Held only under this one lock, so nothing written
    /// meanwhile can overtake them.
    pub fn batch<R>(&mut self, write: impl FnOnce(&mut State) -> R) -> R {
        if self.held.is_some() {
            // Within a batch: its notifications join the outer one's line.
            return write(self);
        }
        self.held = Some(Line::new(std::mem::take(&mut self.spare)));
        let result = write(self);
        let held = self.held.take().expect("held since the batch began");
        held.write_to(&self.out, self.array_lines);
        self.spare = held.into_buffer();
        result
    }

    /// The line of the batch being written, and whether it is a JSON array.
    fn held_line(&mut self) -> (&mut Line, bool) {
        (self.held.as_mut().expect("inside a batch"), self.array_lines)
    }

    /// Records a session event and pushes it when the session is subscribed, after the
    /// streamed deltas still held back ([`super::delta_batch`]).
    pub fn event(
        &mut self,
        session_id: &str,
        turn_id: Option<&str>,
        kind: &str,
        payload: impl Serialize,
    ) {
        let Some(resident) = self.sessions.get_mut(session_id) else { return };
        let held = resident.deltas.reset().and_then(|batch| resident.record_deltas(&batch));
        let event = resident.record_event(turn_id, kind, &payload, now_ms());
        self.notify_texts(held.into_iter().chain(event).collect());
    }

    /// A streamed delta, recorded and pushed as the Agent batches them ([`super::delta_batch`]).
    pub fn stream_delta(&mut self, session_id: &str, delta: &Delta<'_>) {
        let Some(resident) = self.sessions.get_mut(session_id) else { return };
        let due = resident.deltas.push(delta);
        let texts = due.filter_map(|batch| resident.record_deltas(&batch)).collect();
        self.notify_texts(texts);
    }

    /// An event the legacy stream never shows (`shouldExposeSessionEventToProtocol`:
    /// `model.streaming` other than non-empty text and reasoning deltas and tool input): it
    /// still sends the held-back deltas.
    pub fn hidden_event(&mut self, session_id: &str) {
        let Some(resident) = self.sessions.get_mut(session_id) else { return };
        let held = resident.deltas.reset().and_then(|batch| resident.record_deltas(&batch));
        self.notify_texts(held.into_iter().collect());
    }

    /// `state.updated` for a session (`emitStateUpdated`).
    pub fn state_updated(&mut self, session_id: &str, reason: &str, patch: Value) {
        let Some(resident) = self.sessions.get(session_id) else { return };
        let notification = wire::notification(
            "state.updated",
            json!({
                "patch": patch, "reason": reason, "revision": resident.revision,
                "scope": "session", "sessionId": session_id, "type": "state.updated",
                "workspace": resident.record.workspace,
            }),
        );
        self.notify(vec![notification]);
    }

    /// Deltas `write` stages into the session's log (`v4::turn`), sent as one frame; `None`
    /// when the session is gone.
    pub fn v4_with<R>(
        &mut self,
        session_id: &str,
        write: impl FnOnce(&mut Publisher, &mut Batch) -> R,
    ) -> Option<R> {
        let resident = self.sessions.get_mut(session_id)?;
        let mut batch = Batch::default();
        let result = write(&mut resident.publisher, &mut batch);
        let frames = resident.publisher.commit(batch);
        // Each frame's notification is written straight into the batch's line.
        self.batch(|state| {
            for frame in frames {
                if let Some(frame) = state.gateway.deliver(frame) {
                    let (line, array) = state.held_line();
                    line.push(array, |line| write_frame_notification(line, &frame));
                }
            }
        });
        Some(result)
    }

    /// `state.updated` V4 patch of the given A-zone keys.
    pub fn v4_patch(&mut self, session_id: &str, keys: &[&str]) {
        let Some(resident) = self.sessions.get(session_id) else { return };
        let delta = resident.patch(keys);
        self.v4_with(session_id, |log, batch| log.stage(batch, delta));
    }

    pub fn resident(&mut self, session_id: &str) -> Result<&mut Resident, ProtocolError> {
        self.sessions.get_mut(session_id).ok_or_else(|| ProtocolError::not_active(session_id))
    }

    /// Bumps the revision and tells both projections about the changed settings.
    pub fn announce_settings(
        &mut self,
        session_id: &str,
        reason: &str,
        keys: &[&str],
    ) -> Result<(), ProtocolError> {
        let resident = self.resident(session_id)?;
        resident.revision += 1;
        resident.record.updated_at = now_ms();
        let settings = self.settings(session_id)?;
        let mut patch = serde_json::Map::new();
        for key in keys {
            patch.insert((*key).to_owned(), settings[*key].clone());
        }
        self.persist(session_id);
        self.batch(|state| {
            state.state_updated(session_id, reason, Value::Object(patch));
            state.v4_patch(session_id, &["config", "meta"]);
        });
        Ok(())
    }

    /// What both projections hear when a run starts.
    pub fn started(&mut self, session_id: &str) {
        self.persist(session_id);
        self.batch(|state| {
            state.state_updated(session_id, "prompt_started", json!({"status": "running"}));
            state.v4_patch(session_id, &["control", "availability", "inputRouting", "queue"]);
        });
    }

    /// `session/usage` (and V4 `conversation/usage`): the cumulative counters of a resident
    /// session, else of the stored one (the counters live in the database).
    pub fn usage(&self, session_id: &str) -> Result<Value, ProtocolError> {
        let usage = match self.sessions.get(session_id) {
            Some(resident) => resident.record.usage.clone(),
            None => match self.store.load(session_id) {
                Ok(Some(record)) => record.usage,
                // A live capture answered zeros for an unknown session, not an error.
                Ok(None) => Usage::default(),
                Err(message) => return Err(ProtocolError::business(message, "STORAGE_ERROR")),
            },
        };
        Ok(json!({
            "sessionId": session_id,
            "totalTokens": usage.total(),
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "reasoningTokens": usage.reasoning_tokens,
            "cacheCreationTokens": usage.cache_creation_tokens,
            "cacheReadTokens": usage.cache_read_tokens,
            "modelRequestCount": usage.model_request_count,
            "modelErrorCount": usage.model_error_count,
            "inputBaselineBySource": {},
        }))
    }

    /// Saves the record once it has been persisted (from the first prompt on).
    pub fn persist(&self, session_id: &str) {
        if let Some(resident) = self.sessions.get(session_id)
            && resident.stored
            && let Err(error) = self.store.save(&resident.record)
        {
            eprintln!("zcode-sim: {error}");
        }
    }
}

/// A handler's answer and what goes out right after it.
#[derive(Default)]
pub struct Reply {
    pub result: Value,
    /// Notifications written right after the response, in order.
    pub after: Vec<Value>,
    /// Notifications written right before it (the `snapshot-first` fault).
    pub before: Vec<Value>,
    /// A turn to start once the response is out.
    pub start: Option<TurnStart>,
}

impl From<Value> for Reply {
    fn from(result: Value) -> Reply {
        Reply { result, ..Reply::default() }
    }
}

pub struct Server {
    pub profile: &'static AppServerProfile,
    pub options: Options,
    pub out: Arc<Output>,
    pub faults: AppFaults,
    pub reverse: Reverse,
    pub interactions: Arc<Interactions>,
    pub provider: ProviderConfig,
    state: Mutex<State>,
}

impl Server {
    pub fn new(
        profile: &'static AppServerProfile,
        options: Options,
        faults: AppFaults,
        store: AppStore,
        provider: ProviderConfig,
        out: Arc<Output>,
    ) -> Arc<Server> {
        let writer = out.clone();
        let array_lines = options.array_lines;
        let interactions = Arc::new(Interactions::default());
        let claims = interactions.clone();
        let reverse =
            Reverse::new(Arc::new(move |frame: &Value| writer.frame(frame)), options.reannounce)
                .with_claim(Arc::new(move |id: &str| claims.claim_for_legacy(id)));
        Arc::new(Server {
            profile,
            options,
            faults,
            reverse,
            interactions,
            provider,
            state: Mutex::new(State {
                store,
                sessions: BTreeMap::new(),
                entitlements: Entitlements::default(),
                gateway: Gateway::default(),
                out: out.clone(),
                auto_resolution: HashMap::new(),
                snoozed: HashSet::new(),
                array_lines,
                held: None,
                spare: String::new(),
            }),
            out,
        })
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("state lock")
    }

    /// Asks the host for the session's runtime preferences (`session/requestRuntimePreferences`,
    /// 15 s). A host without the method (`-32601`) or without a client (`-32020`) gets the
    /// source's fallback; any other failure fails the caller.
    pub async fn runtime_preferences(
        &self,
        session_id: &str,
        scope: &str,
    ) -> Result<Preferences, ProtocolError> {
        let method = "session/requestRuntimePreferences";
        let mut request = ClientRequest::new(
            method,
            json!({"sessionId": session_id, "scope": scope}),
            schemas::named("runtimePreferences"),
        );
        request.timeout = Some(self.options.runtime_preferences_timeout);
        match self.reverse.request(request).await {
            Ok(answer) => Ok(Preferences::from_answer(&answer)),
            Err(ClientError::Remote(error))
                if error.code == wire::METHOD_NOT_FOUND
                    || error.code == wire::CLIENT_REQUEST_NO_CLIENT =>
            {
                Ok(Preferences::FALLBACK)
            }
            Err(other) => Err(other.into_protocol(method)),
        }
    }

    /// Gives a session a resident runtime in this process (create, resume, cold V4
    /// subscribe). Materialising waits for the host's runtime preferences first.
    pub async fn materialize(
        &self,
        record: SessionRecord,
        stored: bool,
        deferred: bool,
    ) -> Result<(), ProtocolError> {
        let preferences =
            self.runtime_preferences(&record.session_id, "runtime-materialization").await?;
        let mut state = self.state();
        let mut record = record;
        // A model that left the registry is no model at all (a legal, model-less state).
        let usable = record
            .model
            .as_ref()
            .and_then(catalog::find_selection)
            .is_some_and(|model| state.entitlements.usable(model));
        if !usable {
            record.model = None;
            record.thought_level = None;
        }
        let id = record.session_id.clone();
        let resident = Resident::new(record, stored, deferred, preferences);
        state.sessions.insert(id, resident);
        Ok(())
    }
}

/// A method the real Agent serves that the simulator does not model.
pub fn not_simulated(method: &str) -> ProtocolError {
    ProtocolError::internal("Error", format!("zcode-sim: {method} is not simulated"), None)
}

/// The line the `malformed` fault writes: cut off in the middle of an object.
pub const MALFORMED_LINE: &[u8] = b"{\"method\":\"session/event\",\"params\":{\"sessionId\":\n";
/// What the `invalid-utf8` fault writes: a frame whose string holds bytes that are not UTF-8.
pub const INVALID_UTF8_LINE: &[u8] =
    b"{\"method\":\"session/event\",\"params\":\"\xff\xfe\xfd\"}\n";

/// The most a batch's line keeps of its buffer for the next batch.
const KEPT_CAPACITY: usize = 64 * 1024;

/// Notifications going out as one write: each on its line, or all of them as one JSON array
/// line. Each is written into it in place: a streamed delta's V4 frame is put together once,
/// with no text of its own to copy and free (docs/performance.md, issue 27). Either way they
/// reach the writer thread as one piece: a delta's event and frame are one hand-off to it (and
/// one wake-up of it), not two.
struct Line {
    /// The notifications, without the `]` and newline of an array line.
    text: String,
    empty: bool,
}

impl Line {
    /// A line in `buffer`'s room (its text is dropped).
    fn new(mut buffer: String) -> Line {
        buffer.clear();
        Line { text: buffer, empty: true }
    }

    /// Appends one notification, which `write` writes.
    fn push(&mut self, array: bool, write: impl FnOnce(&mut String)) {
        if array {
            self.text.push(if self.empty { '[' } else { ',' });
        }
        write(&mut self.text);
        if !array {
            self.text.push('\n');
        }
        self.empty = false;
    }

    fn write_to(&self, out: &Output, array: bool) {
        if !self.empty {
            out.write(|queue| self.write_into(queue, array));
        }
    }

    fn write_into(&self, queue: &mut Vec<u8>, array: bool) {
        queue.extend_from_slice(self.text.as_bytes());
        if array {
            queue.extend_from_slice(b"]\n");
        }
    }

    /// The line's buffer, to put the next one together in; not one that a large notification
    /// (a snapshot) grew, which would be kept for good.
    fn into_buffer(self) -> String {
        if self.text.capacity() > KEPT_CAPACITY { String::new() } else { self.text }
    }
}

#[cfg(test)]
mod tests {
    use super::super::session::event_notification;
    use super::*;

    /// What [`Line::write_to`] writes for `notifications`.
    fn notification_line(array: bool, notifications: &[String]) -> Vec<u8> {
        let mut line = Line::new(String::from("left over"));
        for text in notifications {
            line.push(array, |line| line.push_str(text));
        }
        let mut written = Vec::new();
        if !line.empty {
            line.write_into(&mut written, array);
        }
        written
    }

    #[test]
    fn notifications_from_their_texts_are_the_bytes_their_values_serialize_to() {
        let event = json!({"eventId": "evt_1", "seq": 2, "payload": {"delta": "a \"b\"\n"}});
        let text = serde_json::to_string(&event).unwrap();
        let notification = wire::notification("session/event", event);
        assert_eq!(event_notification(&text), serde_json::to_string(&notification).unwrap());
        let other = wire::notification("v4/conversation/frame", json!({"frame": {"toSeq": 3}}));
        let values = vec![notification, other];
        let texts: Vec<String> =
            values.iter().map(|value| serde_json::to_string(value).unwrap()).collect();
        let mut array = serde_json::to_vec(&Value::Array(values.clone())).unwrap();
        array.push(b'\n');
        assert_eq!(notification_line(true, &texts), array);
        let lines: Vec<u8> = values
            .iter()
            .flat_map(|value| [serde_json::to_vec(value).unwrap(), b"\n".to_vec()].concat())
            .collect();
        assert_eq!(notification_line(false, &texts), lines);
        assert!(notification_line(true, &[]).is_empty(), "no notification, no line");
    }
}
