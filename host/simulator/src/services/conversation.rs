//! One session's V4 conversation: the persisted record (config, meta, usage) and its V4 log
//! (the shared [`Publisher`]), plus the live parts (control, queue, pending interactions, the
//! subscription), and the only way to change it — a [`Batch`] of deltas committed under the
//! next sequence numbers and sent to the subscription as one frame.
//!
//! Shapes follow ZCode `packages/shared/src/zcode-protocol-v4/{snapshot,delta,rows}.ts`.
//! `state.updated` patches replace whole top-level keys and carry the new `revision`; row
//! deltas do not change the revision.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use super::router::Router;
use crate::common::catalog::{self, Model};
use crate::common::clock::now_ms;
use crate::v4::availability::availability;
use crate::v4::inbox::Remembered;
pub use crate::v4::publisher::Batch;
use crate::v4::publisher::{Log, Publisher};
use crate::v4::wire::DeliveryKind;
use crate::v4::zone;

/// `PROTOCOL_V4_LIMITS.eventRetentionPerSession`: deltas kept for `resume`.
const RETAINED_DELTAS: usize = 2000;
pub const CONTEXT_WINDOW: u64 = catalog::CONTEXT_WINDOW;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    pub provider_id: String,
    pub model_id: String,
    pub thought: String,
    pub mode: String,
    pub plan_enabled: bool,
    pub followup_mode: String,
}

impl Config {
    pub fn model(&self) -> &'static Model {
        catalog::find_selected_model(
            &json!({"providerId": self.provider_id, "modelId": self.model_id}),
        )
        .unwrap_or_else(catalog::default_selected_model)
    }

    pub fn selection(&self) -> Value {
        json!({"providerId": self.provider_id, "modelId": self.model_id,
               "options": {"reasoningLevel": self.thought}})
    }

    fn to_json(&self) -> Value {
        json!({
            "modelSelection": self.selection(),
            "provider": self.provider_id,
            "model": self.model_id,
            "thought": self.thought,
            "thoughtLevels": self.model().reasoning_levels(),
            "followupMode": self.followup_mode,
            "mode": self.mode,
            "planEnabled": self.plan_enabled,
        })
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Cumulative {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

/// What survives the process besides the V4 log (saved beside it, `store.rs`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredConversation {
    pub session_id: String,
    pub workspace_path: String,
    pub created_at: u64,
    pub updated_at: u64,
    pub title: String,
    pub title_source: String,
    pub revision: u64,
    pub config: Config,
    pub usage: Cumulative,
    pub context_used: u64,
    /// The last phase the session was left in (`draft` until its first input).
    pub phase: String,
    pub last_error: Value,
    pub plan: Value,
    #[serde(default)]
    pub always_allowed: BTreeSet<String>,
    #[serde(default)]
    pub mcp_servers: Value,
    /// Every permission interaction asked, with what each answer ZCode received did: the
    /// decision it applied, or `ignored:<reason>` (an answer that changed nothing). Tests read
    /// it to prove a question was answered natively exactly once.
    #[serde(default)]
    pub permissions: Vec<PermissionRecord>,
}

/// One permission interaction and the answers it received, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRecord {
    pub interaction_id: String,
    pub answers: Vec<String>,
}

impl StoredConversation {
    /// Records what an answer to permission `interaction_id` did (no-op for other ids).
    pub fn permission_answered(&mut self, interaction_id: &str, outcome: impl Into<String>) {
        if let Some(record) =
            self.permissions.iter_mut().find(|record| record.interaction_id == interaction_id)
        {
            record.answers.push(outcome.into());
        }
    }
}

/// Top-level snapshot keys a patch can replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Control,
    Queue,
    Config,
    Usage,
    Meta,
    Pending,
    Plan,
}

/// How a running turn is told to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Interrupt {
    #[default]
    None,
    /// `stop`: the turn ends interrupted.
    Stop,
    /// A `startNow` input preempts the turn (the queue keeps its auto-drain).
    Preempt,
}

pub struct TurnHandle {
    pub foreground_execution_id: String,
    pub source_command_id: String,
    pub started_at: u64,
    pub interrupt: watch::Sender<Interrupt>,
    /// `stopState` is `stopping` between the stop and the turn's end.
    pub stopping: bool,
    /// The tool currently running makes `stopTargetKind` `tool`.
    pub tool_running: bool,
}

/// What an open interaction accepts.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    Permission { option_ids: Vec<String> },
    UserInput,
}

pub struct Waiting {
    pub expect: Expect,
    pub reply: oneshot::Sender<Value>,
}

/// An input waiting to run: a preempting `startNow`, or the head of the queue.
#[derive(Debug, Clone)]
pub struct Input {
    pub command_id: String,
    pub client_id: String,
    pub text: String,
    pub attachments: Vec<Value>,
}

pub struct Conversation {
    pub record: StoredConversation,
    /// The V4 log; at most one subscriber (a new subscription replaces the old one).
    pub publisher: Publisher,
    /// Saved to disk (`persistence: "deferred"` waits for the first input).
    pub persisted: bool,
    pub queue: Vec<Value>,
    pub auto_drain: bool,
    pub pause_reason: Option<&'static str>,
    pub pending: Vec<Value>,
    pub waiting: HashMap<String, Waiting>,
    pub turn: Option<TurnHandle>,
    /// A driver task runs turns for this session.
    pub driving: bool,
    pub next_inputs: VecDeque<Input>,
    /// The driver took the next input and its turn is about to start.
    pub starting: bool,
    /// An interrupt that came after an input was admitted to start but before its turn
    /// started: the admitted input is the foreground, so its turn starts interrupted.
    pub early_interrupt: Interrupt,
    pub settled: Remembered,
    pub admission_seq: u64,
    /// `syncAppRuntimePreferences.askUserQuestionAutoResolutionEnabled`.
    pub ask_auto_resolution: bool,
    router: Arc<Router>,
}

impl Conversation {
    pub fn new(
        record: StoredConversation,
        log: Log,
        persisted: bool,
        router: Arc<Router>,
    ) -> Conversation {
        Conversation {
            publisher: Publisher::new(&record.session_id, log, RETAINED_DELTAS),
            record,
            persisted,
            queue: Vec::new(),
            auto_drain: true,
            pause_reason: None,
            pending: Vec::new(),
            waiting: HashMap::new(),
            turn: None,
            driving: false,
            next_inputs: VecDeque::new(),
            starting: false,
            early_interrupt: Interrupt::None,
            settled: Remembered::default(),
            admission_seq: 0,
            ask_auto_resolution: true,
            router,
        }
    }

    /// A fresh draft.
    pub fn draft(
        session_id: String,
        workspace_path: String,
        config: Config,
        router: Arc<Router>,
    ) -> Conversation {
        let now = now_ms();
        let record = StoredConversation {
            session_id,
            workspace_path,
            created_at: now,
            updated_at: now,
            title: String::new(),
            title_source: "default".into(),
            revision: 0,
            config,
            usage: Cumulative::default(),
            context_used: 0,
            phase: "draft".into(),
            last_error: Value::Null,
            plan: Value::Null,
            always_allowed: BTreeSet::new(),
            mcp_servers: Value::Null,
            permissions: Vec::new(),
        };
        let log = Log::new(format!("epoch-{}", uuid::Uuid::new_v4().simple()), Vec::new());
        Conversation::new(record, log, false, router)
    }

    pub fn id(&self) -> &str {
        &self.record.session_id
    }

    pub fn topic(&self) -> String {
        self.publisher.topic()
    }

    pub fn is_running(&self) -> bool {
        self.turn.is_some()
    }

    /// Tells the running turn to end and withdraws its open interactions: an answer that
    /// comes later is a no-op (`proto.alreadyResolved`).
    pub fn interrupt(&mut self, kind: Interrupt) {
        if let Some(turn) = &mut self.turn {
            turn.interrupt.send_replace(kind);
            turn.stopping |= kind == Interrupt::Stop;
        } else if self.admitted() && self.early_interrupt != Interrupt::Stop {
            self.early_interrupt = kind;
        }
        self.waiting.clear();
    }

    /// An input is admitted to start and its turn has yet to.
    pub fn admitted(&self) -> bool {
        self.starting || !self.next_inputs.is_empty()
    }

    /// Held: the turn stopped with inputs left in a paused queue.
    pub fn is_held(&self) -> bool {
        !self.is_running() && !self.queue.is_empty() && !self.auto_drain
    }

    // ----- rows -------------------------------------------------------------------------

    #[cfg(test)]
    pub fn row(&self, row_id: u64) -> Option<&Value> {
        self.publisher.row(row_id)
    }

    /// Appends a row (its `rowId`, `createdAt` and `createdAtSeq` are filled in).
    pub fn append_row(&mut self, batch: &mut Batch, row: Value) -> u64 {
        self.publisher.append_row(batch, row)
    }

    /// Changes a row and sends it whole (`row.upserted`).
    pub fn upsert_row(&mut self, batch: &mut Batch, row_id: u64, change: impl FnOnce(&mut Value)) {
        self.publisher.upsert_row(batch, row_id, change);
    }

    /// Appends streamed text to a row's `path` (`text`, `inputText`, `output.text`).
    pub fn stream_row(&mut self, batch: &mut Batch, row_id: u64, path: &'static str, append: &str) {
        self.publisher.stream_row(batch, row_id, path, append);
    }

    // ----- state ------------------------------------------------------------------------

    /// Records a `state.updated` replacing `keys` with their current values (and, with
    /// control, queue or config, the derived availability and input routing).
    pub fn patch(&mut self, batch: &mut Batch, keys: &[Key]) {
        self.record.revision += 1;
        let mut patch = serde_json::Map::new();
        patch.insert("revision".into(), json!(self.record.revision));
        let mut derived = false;
        for key in keys {
            let (name, value) = match key {
                Key::Control => ("control", self.control_json()),
                Key::Queue => ("queue", self.queue_json()),
                Key::Config => ("config", self.record.config.to_json()),
                Key::Usage => ("usage", self.usage_json()),
                Key::Meta => ("meta", self.meta_json()),
                Key::Pending => ("pendingInteractions", Value::Array(self.pending.clone())),
                Key::Plan => ("plan", self.record.plan.clone()),
            };
            derived |= matches!(key, Key::Control | Key::Queue | Key::Config);
            patch.insert(name.into(), value);
        }
        if derived {
            patch.insert("availability".into(), availability(self.phase()));
            patch.insert("inputRouting".into(), self.input_routing_json());
        }
        batch.push(json!({"op": "state.updated", "patch": patch}));
    }

    /// Sends the current values of `keys` as one frame.
    pub fn publish(&mut self, keys: &[Key]) {
        let mut batch = Batch::default();
        self.patch(&mut batch, keys);
        self.commit(batch);
    }

    /// Numbers the batch's deltas and sends them to the subscription as one frame.
    pub fn commit(&mut self, batch: Batch) {
        self.commit_with(batch, |_| {});
    }

    /// [`Self::commit`], running `before_send` (a save) once the sequence numbers are taken and
    /// before the frame can reach anyone.
    pub fn commit_with(&mut self, batch: Batch, before_send: impl FnOnce(&Conversation)) {
        if batch.is_empty() {
            before_send(self);
            return;
        }
        let frames = self.publisher.commit(batch);
        self.record.updated_at = now_ms();
        before_send(self);
        for frame in frames {
            self.router.deliver(&self.record.workspace_path, frame);
        }
    }

    /// Sends the subscription's first frame: the deltas since a still-valid `base`, else a
    /// snapshot. Returns the ack `mode`.
    pub fn open(
        &mut self,
        base: Option<(&str, u64)>,
        force: bool,
        kind: DeliveryKind,
    ) -> &'static str {
        let snapshot = self.snapshot();
        let Some(id) = self.publisher.subscribers.first().map(|s| s.id.clone()) else {
            return "snapshot";
        };
        let (mode, frame) =
            self.publisher.open(&id, base, force, kind, snapshot).expect("the subscriber exists");
        self.router.deliver(&self.record.workspace_path, frame);
        mode
    }

    // ----- snapshot pieces --------------------------------------------------------------

    pub fn phase(&self) -> &str {
        if self.is_running() { "running" } else { &self.record.phase }
    }

    pub fn control_json(&self) -> Value {
        let running = self.turn.as_ref().map(|turn| zone::Running {
            foreground_execution_id: &turn.foreground_execution_id,
            source_command_id: Some(&turn.source_command_id),
            started_at: turn.started_at,
            tool_running: turn.tool_running,
            stopping: turn.stopping,
        });
        zone::control(self.phase(), running, &self.record.last_error)
    }

    fn queue_json(&self) -> Value {
        let mut queue = json!({"items": self.queue, "autoDrain": self.auto_drain});
        if let Some(reason) = self.pause_reason {
            queue["pauseReason"] = json!(reason);
        }
        queue
    }

    fn usage_json(&self) -> Value {
        let usage = &self.record.usage;
        let cumulative = zone::Cumulative {
            input: usage.input_tokens,
            output: usage.output_tokens,
            cache_read: usage.cache_read_tokens,
            cache_write: usage.cache_write_tokens,
        };
        zone::usage(&cumulative, self.record.context_used, CONTEXT_WINDOW)
    }

    fn meta_json(&self) -> Value {
        json!({"title": self.record.title, "titleSource": self.record.title_source})
    }

    fn input_routing_json(&self) -> Value {
        let guide = self.record.config.followup_mode == "guide";
        zone::input_routing(self.is_held(), self.is_running(), guide)
    }

    pub fn snapshot(&self) -> Value {
        let mut snapshot = self.publisher.snapshot_head(self.record.revision);
        let values = json!({
            "control": self.control_json(),
            "availability": availability(self.phase()),
            "inputRouting": self.input_routing_json(),
            "meta": self.meta_json(),
            "config": self.record.config.to_json(),
            "usage": self.usage_json(),
            "queue": self.queue_json(),
            "pendingInteractions": self.pending,
            "plan": self.record.plan,
        });
        if let Value::Object(values) = values {
            snapshot.extend(values);
        }
        zone::unsimulated(&mut snapshot);
        snapshot.insert("rows".into(), self.publisher.rows_window());
        Value::Object(snapshot)
    }

    /// `conversationRowsRangeV4`: up to `limit` rows before `before` (the tail without it),
    /// oldest first.
    pub fn rows_range(&self, before: Option<u64>, limit: usize) -> Value {
        self.publisher.rows_range(before, limit, self.record.revision)
    }

    /// A session loaded from disk after its process died mid-turn: nothing runs any more.
    pub fn settle_after_restart(&mut self) {
        let mut interrupted = false;
        for row in &mut self.publisher.log.rows {
            let (field, unfinished, settled) = match row["kind"].as_str() {
                Some("turnHeader") => ("state", &["running"][..], "completedInterrupted"),
                Some("assistantText" | "reasoning") => ("state", &["streaming"][..], "interrupted"),
                Some("toolCall") => {
                    ("status", &["inputStreaming", "pendingApproval", "running"][..], "cancelled")
                }
                _ => continue,
            };
            if row[field].as_str().is_some_and(|state| unfinished.contains(&state)) {
                row[field] = json!(settled);
                interrupted = true;
            }
        }
        if interrupted || self.record.phase == "running" {
            self.record.phase = "completedInterrupted".into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::output::Output;

    fn conversation() -> Conversation {
        let router = Arc::new(Router::new(Output::start(false), crate::v4::wire::MAX_FRAME_BYTES));
        let model = catalog::default_selected_model();
        let config = Config {
            provider_id: model.provider_id().into(),
            model_id: model.model_id().into(),
            thought: model.default_level().into(),
            mode: "build".into(),
            plan_enabled: false,
            followup_mode: "queue".into(),
        };
        Conversation::draft("sess_1".into(), "/w".into(), config, router)
    }

    /// The shape of a draft as the paseo plugin's fixture `test/fixtures/v4-draft.json`
    /// (supermomonga/paseo-plugin-zcode-provider@fc66078d) shows it: the same top-level keys,
    /// control and availability of a draft.
    #[test]
    fn drafts_have_the_keys_and_guards_of_the_published_draft() {
        let snapshot = conversation().snapshot();
        let mut keys: Vec<&str> =
            snapshot.as_object().unwrap().keys().map(String::as_str).collect();
        // Key order depends on serde_json's `preserve_order`, which a workspace build turns on.
        keys.sort_unstable();
        let mut expected = vec![
            "protocolVersion",
            "sessionId",
            "logEpoch",
            "seq",
            "revision",
            "control",
            "availability",
            "inputRouting",
            "meta",
            "config",
            "modelTransition",
            "usage",
            "queue",
            "pendingInteractions",
            "pendingCommands",
            "backgroundWorks",
            "subagents",
            "goal",
            "plan",
            "workspaceHookAdmission",
            "rows",
        ];
        expected.sort_unstable();
        assert_eq!(keys, expected);
        assert_eq!(
            snapshot["control"],
            json!({"phase": "draft", "sessionEnded": false, "canStop": false, "stopState": "idle",
                   "stopTargetKind": "unknown", "activeWorks": [], "lastError": null, "apiRetry": null})
        );
        // Sorted here: the map's own order depends on whether serde_json keeps insertion order,
        // which another crate of the workspace may switch on (`preserve_order`).
        let mut reasons: Vec<(String, Value)> = snapshot["availability"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(action, availability)| {
                (action.clone(), availability.get("reasonCode").cloned().unwrap_or(json!(true)))
            })
            .collect();
        reasons.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            reasons,
            [
                ("compact".to_owned(), json!("idleCannotCompact")),
                ("fork".to_owned(), json!("forkTargetNotStable")),
                ("pauseGoal".to_owned(), json!("noGoalToPause")),
                ("queueEdit".to_owned(), json!(true)),
                ("resumeGoal".to_owned(), json!("noGoalToResume")),
                ("sendQueuedNow".to_owned(), json!("sendQueuedNowRequiresRunning")),
                ("setFollowupMode".to_owned(), json!(true)),
                ("switchModelConfig".to_owned(), json!(true)),
            ]
        );
        let mut config: Vec<&str> =
            snapshot["config"].as_object().unwrap().keys().map(String::as_str).collect();
        config.sort_unstable();
        assert_eq!(
            config,
            [
                "followupMode",
                "mode",
                "model",
                "modelSelection",
                "planEnabled",
                "provider",
                "thought",
                "thoughtLevels"
            ]
        );
        assert_eq!(
            snapshot["subagents"],
            json!({"revision": 0, "childSessionIds": [], "running": [], "endedTotal": 0})
        );
        assert_eq!(
            snapshot["usage"]["cumulative"],
            json!({"inputTokens": 0, "outputTokens": 0, "cacheReadTokens": 0, "cacheWriteTokens": 0})
        );
    }

    #[test]
    fn drafts_match_the_documented_shape() {
        let snapshot = conversation().snapshot();
        assert_eq!(snapshot["control"]["phase"], "draft");
        assert_eq!(snapshot["inputRouting"]["mode"], "startNow");
        assert_eq!(snapshot["queue"], json!({"items": [], "autoDrain": true}));
        assert_eq!(snapshot["rows"], json!({"window": [], "totalCount": 0, "firstRowId": null}));
        assert_eq!(snapshot["config"]["thoughtLevels"], json!(["low", "medium", "high"]));
        assert_eq!(snapshot["usage"]["contextWindow"], Value::Null);
    }

    #[test]
    fn batches_number_their_deltas_and_patches_bump_the_revision() {
        let mut conversation = conversation();
        let mut batch = Batch::default();
        let row = conversation.append_row(
            &mut batch,
            json!({"kind": "assistantText", "text": "", "state": "streaming"}),
        );
        conversation.stream_row(&mut batch, row, "text", "Hel");
        conversation.stream_row(&mut batch, row, "text", "lo");
        conversation.patch(&mut batch, &[Key::Meta]);
        conversation.commit(batch);
        assert_eq!((conversation.publisher.log.seq, conversation.record.revision), (4, 1));
        assert_eq!(conversation.row(row).unwrap()["text"], "Hello");
        assert_eq!(conversation.row(row).unwrap()["createdAtSeq"], 1);
        assert_eq!(conversation.publisher.retained_since(2).unwrap().len(), 2);
        assert_eq!(conversation.publisher.retained_since(4).unwrap().len(), 0);
        assert!(conversation.publisher.retained_since(5).is_none());
    }

    #[test]
    fn pages_rows_backwards() {
        let mut conversation = conversation();
        let mut batch = Batch::default();
        for _ in 0..5 {
            conversation.append_row(&mut batch, json!({"kind": "userInput", "text": "x"}));
        }
        conversation.commit(batch);
        let tail = conversation.rows_range(None, 2);
        assert_eq!(
            tail["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["rowId"].as_u64().unwrap())
                .collect::<Vec<_>>(),
            [4, 5]
        );
        assert_eq!(tail["hasMore"], true);
        let head = conversation.rows_range(Some(3), 200);
        assert_eq!(head["rows"].as_array().unwrap().len(), 2);
        assert_eq!(head["hasMore"], false);
    }

    #[test]
    fn restart_settles_unfinished_rows() {
        let mut conversation = conversation();
        let mut batch = Batch::default();
        conversation.append_row(&mut batch, json!({"kind": "turnHeader", "state": "running"}));
        conversation
            .append_row(&mut batch, json!({"kind": "toolCall", "status": "pendingApproval"}));
        conversation.commit(batch);
        conversation.record.phase = "running".into();
        conversation.settle_after_restart();
        assert_eq!(conversation.publisher.log.rows[0]["state"], "completedInterrupted");
        assert_eq!(conversation.publisher.log.rows[1]["status"], "cancelled");
        assert_eq!(conversation.record.phase, "completedInterrupted");
    }
}
