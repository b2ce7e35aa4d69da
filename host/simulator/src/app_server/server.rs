//! The simulated Agent process behind `zcode.cjs app-server --stdio`: the line reader, the
//! request queue, the method table and the state every handler shares.
//!
//! Ordering follows the 3.15.1 transport (`zcode-protocol/transport.ts`): requests are handled
//! one at a time in arrival order — a request that waits on the host (such as
//! `session/create` waiting for `session/requestRuntimePreferences`) holds up the ones behind
//! it — except responses to the Agent's own requests and `session/stop` /
//! `workspace/cancelGenerateText`, which are handled at once. A response is written together
//! with the notifications that belong to it (a V4 subscribe's initial frame), with nothing in
//! between.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

use super::catalog::{self, Entitlements};
use super::fault::{AppFault, AppFaults};
use super::interactions::Interactions;
use super::profile::AppServerProfile;
use super::provider_config::ProviderConfig;
use super::reverse::{ClientError, ClientRequest, Reverse};
use super::schemas;
use super::session::{Preferences, Resident};
use super::snapshot::{self, Models};
use super::store::{AppStore, SessionRecord};
use super::turn::TurnStart;
use super::v4::Gateway;
use super::wire::{self, Incoming, ProtocolError};
use super::{legacy, v4};
use crate::common::output::Output;
use crate::common::process::{ScenarioOptions, Shutdown, number};
use crate::v4::publisher::Batch;

/// Settings read once from the environment.
pub struct Options {
    pub reannounce: Duration,
    pub runtime_preferences_timeout: Duration,
    pub headers_timeout: Duration,
    pub auto_resolution: Duration,
    pub chunk_delay: Option<Duration>,
    pub scenario_file: Option<PathBuf>,
    /// `ZCODE_SIM_ENTITLED_ACCOUNTS`: account providers entitled from the start, as if the
    /// host had pushed their account state (a test stand-in for Desktop's account push).
    pub entitled_accounts: Vec<String>,
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
            entitled_accounts: std::env::var("ZCODE_SIM_ENTITLED_ACCOUNTS")
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|id| !id.is_empty())
                .map(str::to_owned)
                .collect(),
        })
    }
}

/// Everything handlers share, behind one lock.
pub struct State {
    pub store: AppStore,
    pub sessions: HashMap<String, Resident>,
    pub entitlements: Entitlements,
    pub gateway: Gateway,
    pub out: Arc<Output>,
    /// `workspace/updateInteractionPreferences`, by workspace key.
    pub auto_resolution: HashMap<String, bool>,
    /// Interactions whose auto-resolution a V4 client snoozed.
    pub snoozed: HashSet<String>,
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

    /// Records a session event and pushes it when the session is subscribed.
    pub fn event(&mut self, session_id: &str, turn_id: Option<&str>, kind: &str, payload: Value) {
        let Some(resident) = self.sessions.get_mut(session_id) else { return };
        let event = resident.next_event(turn_id, kind, payload);
        if resident.delivery_kind.is_some() {
            self.out.frame(&wire::notification("session/event", event));
        }
    }

    /// `state.updated` for a session (`emitStateUpdated`).
    pub fn state_updated(&mut self, session_id: &str, reason: &str, patch: Value) {
        let Some(resident) = self.sessions.get(session_id) else { return };
        self.out.frame(&wire::notification(
            "state.updated",
            json!({
                "patch": patch, "reason": reason, "revision": resident.revision,
                "scope": "session", "sessionId": session_id, "type": "state.updated",
                "workspace": resident.record.workspace,
            }),
        ));
    }

    /// Applies V4 deltas to the session's projection and delivers the frames.
    pub fn v4(&mut self, session_id: &str, deltas: Vec<Value>) {
        let Some(resident) = self.sessions.get_mut(session_id) else { return };
        let mut batch = Batch::default();
        for delta in deltas {
            resident.publisher.stage(&mut batch, delta);
        }
        for frame in resident.publisher.commit(batch) {
            self.gateway.deliver(&self.out, frame);
        }
    }

    /// `state.updated` V4 patch of the given A-zone keys.
    pub fn v4_patch(&mut self, session_id: &str, keys: &[&str]) {
        let Some(resident) = self.sessions.get(session_id) else { return };
        let delta = resident.patch(keys);
        self.v4(session_id, vec![delta]);
    }

    pub fn resident(&mut self, session_id: &str) -> Result<&mut Resident, ProtocolError> {
        self.sessions.get_mut(session_id).ok_or_else(|| ProtocolError::not_active(session_id))
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

/// Handled at once instead of queued (the transport's bypass list).
const BYPASS: &[&str] = &["session/stop", "workspace/cancelGenerateText"];

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
        let options_accounts = options.entitled_accounts.clone();
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
                sessions: HashMap::new(),
                entitlements: Entitlements::entitled(&options_accounts),
                gateway: Gateway::default(),
                out: out.clone(),
                auto_resolution: HashMap::new(),
                snoozed: HashSet::new(),
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
            schemas::runtime_preferences_result(),
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

    /// Reads stdin until it closes, then exits the process.
    pub async fn serve(self: Arc<Self>, prepare_storage: bool) {
        let mut stalled = false;
        for armed in self.faults.take("start") {
            match armed.kind {
                AppFault::SlowStart => tokio::time::sleep(armed.delay()).await,
                AppFault::Crash => self.out.exit(1, Some("Error: simulated crash at start".into())),
                AppFault::Exit => self.out.exit(1, None),
                AppFault::Stall => stalled = true,
                _ => {}
            }
        }
        let mut reader = tokio::io::BufReader::with_capacity(1 << 16, tokio::io::stdin());
        if prepare_storage {
            // Preparing the storage is all this mode does (storage-startup source).
            match self.storage_path_handshake(&mut reader).await {
                Ok(reuse) => {
                    if !reuse {
                        self.storage_startup_frames();
                    }
                    self.out.frame(&wire::notification("startup/storagePrepared", json!({})));
                    self.out.exit(0, None);
                }
                Err((kind, message)) => {
                    let database_id = self.state().store.database_id();
                    self.out.frame(&wire::notification(
                        "startup/storageState",
                        json!({"schemaVersion": 1, "attemptId": uuid::Uuid::new_v4().to_string(),
                               "databaseId": database_id, "databaseKind": "session",
                               "sequence": 1, "phase": "failed", "elapsedMs": 0,
                               "errorCode": kind}),
                    ));
                    self.out.exit(1, Some(message));
                }
            }
            return std::future::pending().await;
        }
        self.storage_startup_frames();
        let (queue, mut queued) = mpsc::unbounded_channel::<(Value, String, Option<Value>)>();
        let worker = tokio::spawn({
            let server = self.clone();
            async move {
                while let Some((id, method, params)) = queued.recv().await {
                    server.clone().handle(id, method, params).await;
                }
            }
        });
        let mut shutdown = Shutdown::install();
        let mut line = Vec::new();
        loop {
            line.clear();
            if stalled {
                shutdown.requested().await;
                break;
            }
            tokio::select! {
                read = reader.read_until(b'\n', &mut line) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => self.on_line(&line, &queue),
                },
                () = shutdown.requested() => break,
            }
        }
        // Like the transport at EOF: short requests already queued may still answer.
        drop(queue);
        let _ = tokio::time::timeout(Duration::from_millis(100), worker).await;
        self.out.exit(0, None);
        std::future::pending::<()>().await;
    }

    fn on_line(
        self: &Arc<Self>,
        line: &[u8],
        queue: &mpsc::UnboundedSender<(Value, String, Option<Value>)>,
    ) {
        match wire::decode(line) {
            Incoming::Blank | Incoming::Notification { .. } => {}
            Incoming::ParseError => self.out.frame(&wire::parse_error_frame()),
            Incoming::Invalid(issues) => self.out.frame(&wire::invalid_message_frame(&issues)),
            Incoming::Response { id, result } => {
                self.reverse.settle(&id, Ok(result));
            }
            Incoming::ErrorResponse { id, code, message, data } => {
                self.reverse.settle(&id, Err(ProtocolError { code, message, data }));
            }
            Incoming::Request { id, method, params } => {
                if BYPASS.contains(&method.as_str()) {
                    tokio::spawn(self.clone().handle(id, method, params));
                } else {
                    let _ = queue.send((id, method, params));
                }
            }
        }
    }

    /// Handles one request to completion and writes its response.
    async fn handle(self: Arc<Self>, id: Value, method: String, params: Option<Value>) {
        // Faults about the request itself; the others are consumed by the handlers.
        let generic = [
            AppFault::Crash,
            AppFault::Exit,
            AppFault::Stall,
            AppFault::Malformed,
            AppFault::InvalidUtf8,
        ];
        for armed in self.faults.take_kinds(&method, &generic) {
            match armed.kind {
                AppFault::Crash => {
                    return self.out.exit(1, Some(format!("Error: simulated crash at {method}")));
                }
                AppFault::Exit => return self.out.exit(1, None),
                AppFault::Stall => return std::future::pending().await,
                AppFault::InvalidUtf8 => self.out.bytes(INVALID_UTF8_LINE.to_vec()),
                _ => self.out.bytes(MALFORMED_LINE.to_vec()),
            }
        }
        let outcome = self.dispatch(&method, params).await;
        let mut frames = Vec::new();
        let start = match outcome {
            Ok(reply) => {
                frames.extend(reply.before);
                frames.push(wire::result_frame(&id, reply.result));
                frames.extend(reply.after);
                reply.start
            }
            Err(error) => {
                frames.push(wire::error_frame(&id, &error));
                None
            }
        };
        let mut bytes = Vec::new();
        for frame in &frames {
            serde_json::to_writer(&mut bytes, frame).expect("frames serialize");
            bytes.push(b'\n');
        }
        self.out.bytes(bytes);
        if let Some(start) = start {
            tokio::spawn(super::turn::run(self.clone(), start));
        }
    }

    async fn dispatch(
        self: &Arc<Self>,
        method: &str,
        params: Option<Value>,
    ) -> Result<Reply, ProtocolError> {
        let profile = self.profile;
        if profile.serves_deleted_legacy(method) {
            return Err(not_simulated(method));
        }
        if method.starts_with("v4/") {
            return v4::dispatch(self, method, params).await;
        }
        legacy::dispatch(self, method, params).await
    }

    /// `--prepare-storage`: the Agent names its database path (`startup/storagePath`) and
    /// waits up to 30 s for one `startup/storagePathReady` line; `reuse: true` skips opening
    /// the storage again. Returns `reuse`, or the failure's kind and message.
    async fn storage_path_handshake(
        &self,
        reader: &mut tokio::io::BufReader<tokio::io::Stdin>,
    ) -> Result<bool, (&'static str, String)> {
        let path = self.state().store.database_path();
        self.out.frame(&wire::notification(
            "startup/storagePath",
            json!({"path": path.to_string_lossy()}),
        ));
        let mut line = Vec::new();
        let read =
            tokio::time::timeout(Duration::from_secs(30), reader.read_until(b'\n', &mut line));
        let invalid =
            ("invalid_acknowledgement", "Error: Invalid storage acknowledgement".to_owned());
        match read.await {
            Ok(Ok(read)) if read > 0 => {}
            Ok(_) => {
                return Err(("transport_closed", "Error: Storage preparation input closed".into()));
            }
            Err(_) => {
                let message = "Error: Storage observation handshake timed out".to_owned();
                return Err(("startup_status_timeout", message));
            }
        }
        let value: Value = serde_json::from_slice(&line).map_err(|_| invalid.clone())?;
        if line.len() > 1024 || value["method"] != "startup/storagePathReady" {
            return Err(invalid);
        }
        Ok(value["reuse"] == true)
    }

    /// The `startup/storageState` frames the Agent writes while opening its database, before
    /// it reads anything: five of them, `checking` ×3, `committing`, `ready`, as a live
    /// capture recorded (`tests/recorded/app-server/README.md`).
    pub fn storage_startup_frames(&self) {
        let database_id = self.state().store.database_id();
        let attempt = uuid::Uuid::new_v4().to_string();
        let phases = ["checking", "checking", "checking", "committing", "ready"];
        for (index, phase) in phases.into_iter().enumerate() {
            self.out.frame(&wire::notification(
                "startup/storageState",
                json!({"schemaVersion": 1, "attemptId": attempt, "sequence": index + 1,
                       "databaseId": database_id, "databaseKind": "session", "phase": phase,
                       "elapsedMs": index}),
            ));
        }
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
