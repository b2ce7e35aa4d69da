//! The V4 conversation state the mapping needs (ZCode 3.15.1 `zcode-protocol-v4/snapshot.ts`,
//! `delta.ts`, `session-config.ts`): the snapshot's keys are a closed set, a `state.updated`
//! patch replaces whole top-level keys (never a deep merge), and keys this mapping does not
//! interpret are accepted without being kept.

use serde_json::Value;
use zcode_contract::MapperError;

use zcode_mapper_sdk::json::protocol;

use crate::rows::{self, Row};
use crate::schema::{Fields, as_u64};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Draft,
    Prewarming,
    Running,
    CompletedSuccess,
    CompletedInterrupted,
    Error,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActiveWork {
    pub kind: String,
    pub foreground_execution_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Control {
    pub phase: Phase,
    pub can_stop: bool,
    pub active_works: Vec<ActiveWork>,
    pub last_error: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    pub provider: String,
    pub model: String,
    pub thought: String,
    pub thought_levels: Vec<String>,
    /// The editing (collaboration) mode; `build` when the snapshot omits it (its schema default).
    pub mode: String,
    pub plan_enabled: Option<bool>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// `(usedTokens, maxTokens)` of the context window.
    pub context: Option<(u64, u64)>,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanItem {
    pub content: String,
    /// ACP spelling: `pending`, `in_progress`, `completed`.
    pub status: &'static str,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Conversation {
    pub session_id: String,
    pub log_epoch: String,
    pub seq: u64,
    pub revision: u64,
    pub control: Control,
    /// `startNow`, `enqueue`, `guide`, `reject` or `choice`, with its reason code.
    pub input_routing: (&'static str, Option<String>),
    pub title: String,
    pub config: Config,
    pub usage: Usage,
    pub queue_items: Vec<String>,
    pub auto_drain: bool,
    pub interactions: Vec<Value>,
    pub plan: Option<Vec<PlanItem>>,
}

const SNAPSHOT_KEYS: [&str; 23] = [
    "protocolVersion",
    "sessionId",
    "logEpoch",
    "seq",
    "revision",
    "control",
    "availability",
    "inputRouting",
    "meta",
    "sharedContextImport",
    "config",
    "modelTransition",
    "usage",
    "queue",
    "pendingInteractions",
    "pendingCommands",
    "backgroundWorks",
    "subagents",
    "workflowRuns",
    "goal",
    "plan",
    "workspaceHookAdmission",
    "rows",
];
const REQUIRED_SNAPSHOT_KEYS: [&str; 16] = [
    "protocolVersion",
    "sessionId",
    "logEpoch",
    "seq",
    "revision",
    "control",
    "availability",
    "inputRouting",
    "config",
    "usage",
    "queue",
    "pendingInteractions",
    "pendingCommands",
    "backgroundWorks",
    "goal",
    "plan",
];
const PATCH_KEYS: [&str; 18] = [
    "revision",
    "control",
    "sharedContextImport",
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
    "workflowRuns",
    "goal",
    "plan",
    "workspaceHookAdmission",
];

/// The rows a snapshot carries: the tail window (rowId ascending) and the first row overall.
#[derive(Clone, Debug, PartialEq)]
pub struct RowsWindow {
    pub window: Vec<Row>,
    pub first_row_id: Option<u64>,
}

impl Conversation {
    pub fn parse(value: &Value) -> Result<(Conversation, RowsWindow), MapperError> {
        let fields = Fields::native(value, "V4 snapshot")?;
        fields.only(&SNAPSHOT_KEYS)?;
        for key in REQUIRED_SNAPSHOT_KEYS {
            fields.value(key)?;
        }
        if fields.u64("protocolVersion")? != 1 {
            return Err(protocol("V4 snapshot: protocolVersion is not 1"));
        }
        let mut conversation = Conversation {
            session_id: fields.non_empty_str("sessionId")?.to_string(),
            log_epoch: fields.non_empty_str("logEpoch")?.to_string(),
            seq: fields.u64("seq")?,
            revision: fields.u64("revision")?,
            control: control(fields.value("control")?)?,
            input_routing: ("startNow", None),
            title: String::new(),
            config: Config::default(),
            usage: Usage::default(),
            queue_items: Vec::new(),
            auto_drain: true,
            interactions: Vec::new(),
            plan: None,
        };
        for key in
            ["inputRouting", "meta", "config", "usage", "queue", "pendingInteractions", "plan"]
        {
            if let Some(value) = fields.get(key) {
                conversation.replace(key, value)?;
            }
        }
        let rows = fields.object("rows", "V4 snapshot rows")?;
        let window =
            rows.array("window")?.iter().map(rows::parse).collect::<Result<Vec<_>, _>>()?;
        if window.windows(2).any(|pair| pair[0].id >= pair[1].id) {
            return Err(protocol("V4 snapshot rows: the window is not in rowId order"));
        }
        rows.f64("totalCount")?;
        let first_row_id = match rows.value("firstRowId")? {
            Value::Null => None,
            other => Some(
                as_u64(other)
                    .ok_or_else(|| protocol("V4 snapshot rows: firstRowId is not a row id"))?,
            ),
        };
        Ok((conversation, RowsWindow { window, first_row_id }))
    }

    /// Applies a `state.updated` patch: each key present replaces that key.
    pub fn apply_patch(&mut self, patch: &Value) -> Result<(), MapperError> {
        let fields = Fields::native(patch, "state.updated patch")?;
        fields.only(&PATCH_KEYS)?;
        for (key, value) in fields.map() {
            if key == "revision" {
                self.revision = as_u64(value)
                    .ok_or_else(|| protocol("state.updated patch: revision is not a number"))?;
            } else {
                self.replace(key, value)?;
            }
        }
        Ok(())
    }

    fn replace(&mut self, key: &str, value: &Value) -> Result<(), MapperError> {
        match key {
            "control" => self.control = control(value)?,
            "inputRouting" => {
                let routing = Fields::native(value, "inputRouting")?;
                let mode = routing
                    .one_of("mode", &["startNow", "enqueue", "guide", "reject", "choice"])?;
                self.input_routing = (mode, routing.opt_str("reasonCode")?.map(str::to_string));
            }
            "meta" => {
                let meta = Fields::native(value, "meta")?;
                meta.one_of("titleSource", &["default", "generated", "custom"])?;
                self.title = meta.str("title")?.to_string();
            }
            "config" => self.config = config(value)?,
            "usage" => self.usage = usage(value)?,
            "queue" => {
                let queue = Fields::native(value, "queue")?;
                self.auto_drain = queue.bool("autoDrain")?;
                self.queue_items = queue
                    .array("items")?
                    .iter()
                    .map(|item| {
                        Ok(Fields::native(item, "queue item")?
                            .non_empty_str("queueItemId")?
                            .to_string())
                    })
                    .collect::<Result<_, MapperError>>()?;
            }
            "pendingInteractions" => {
                let Value::Array(items) = value else {
                    return Err(protocol("pendingInteractions must be an array"));
                };
                for item in items {
                    let fields = Fields::native(item, "pending interaction")?;
                    fields.non_empty_str("interactionId")?;
                    let kind = fields
                        .one_of("kind", &["permission", "userInput", "workspaceHookReview"])?;
                    if fields.object("payload", "pending interaction payload")?.str("kind")? != kind
                    {
                        return Err(protocol(
                            "pending interaction: kind does not match its payload",
                        ));
                    }
                }
                self.interactions = items.clone();
            }
            "plan" => self.plan = plan(value)?,
            // Kept by ZCode for its own UI; nothing of them reaches ACP.
            _ => {}
        }
        Ok(())
    }

    /// No work is running or waiting: ZCode's idle (the plugin's `idle`, V4S §5.5).
    pub fn idle(&self) -> bool {
        !self.control.can_stop
            && self.control.active_works.is_empty()
            && !matches!(self.control.phase, Phase::Running | Phase::Prewarming)
            && self.queue_items.is_empty()
            && self.interactions.is_empty()
    }
}

fn control(value: &Value) -> Result<Control, MapperError> {
    let fields = Fields::native(value, "control")?;
    let phase = match fields.one_of(
        "phase",
        &["draft", "prewarming", "running", "completedSuccess", "completedInterrupted", "error"],
    )? {
        "draft" => Phase::Draft,
        "prewarming" => Phase::Prewarming,
        "running" => Phase::Running,
        "completedSuccess" => Phase::CompletedSuccess,
        "completedInterrupted" => Phase::CompletedInterrupted,
        _ => Phase::Error,
    };
    fields.bool("sessionEnded")?;
    fields.one_of("stopState", &["idle", "stoppable", "stopping"])?;
    let active_works = fields
        .array("activeWorks")?
        .iter()
        .map(|work| {
            let work = Fields::native(work, "active work")?;
            Ok(ActiveWork {
                kind: work
                    .one_of(
                        "kind",
                        &[
                            "primaryTurn",
                            "foregroundSubagent",
                            "compact",
                            "goalVerifier",
                            "goalContinuation",
                            "turnSteer",
                        ],
                    )?
                    .to_string(),
                foreground_execution_id: work.opt_str("foregroundExecutionId")?.map(str::to_string),
            })
        })
        .collect::<Result<_, MapperError>>()?;
    let last_error = match fields.opt_object("lastError", "control lastError")? {
        Some(error) => Some(error.str("message")?.to_string()),
        None => None,
    };
    Ok(Control { phase, can_stop: fields.bool("canStop")?, active_works, last_error })
}

fn config(value: &Value) -> Result<Config, MapperError> {
    let fields = Fields::native(value, "config")?;
    fields.one_of("followupMode", &["queue", "guide"])?;
    let thought_levels = match fields.opt_array("thoughtLevels")? {
        Some(levels) => levels
            .iter()
            .map(|level| {
                level
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| protocol("config: thoughtLevels must be strings"))
            })
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    Ok(Config {
        provider: fields.str("provider")?.to_string(),
        model: fields.str("model")?.to_string(),
        thought: fields.str("thought")?.to_string(),
        thought_levels,
        mode: fields.opt_str("mode")?.unwrap_or("build").to_string(),
        plan_enabled: fields.opt_bool("planEnabled")?,
    })
}

fn usage(value: &Value) -> Result<Usage, MapperError> {
    let fields = Fields::native(value, "usage")?;
    let tokens = |fields: &Fields<'_>, key: &str| -> Result<u64, MapperError> {
        fields.f64(key).map(|n| n.max(0.0) as u64)
    };
    let context = match fields.opt_object("contextWindow", "usage contextWindow")? {
        Some(window) => Some((tokens(&window, "usedTokens")?, tokens(&window, "maxTokens")?)),
        None => None,
    };
    let cumulative = fields.object("cumulative", "usage cumulative")?;
    Ok(Usage {
        context,
        input: tokens(&cumulative, "inputTokens")?,
        output: tokens(&cumulative, "outputTokens")?,
        cache_read: tokens(&cumulative, "cacheReadTokens")?,
        cache_write: tokens(&cumulative, "cacheWriteTokens")?,
    })
}

fn plan(value: &Value) -> Result<Option<Vec<PlanItem>>, MapperError> {
    if value.is_null() {
        return Ok(None);
    }
    let fields = Fields::native(value, "plan")?;
    fields
        .array("items")?
        .iter()
        .map(|item| {
            let item = Fields::native(item, "plan item")?;
            Ok(PlanItem {
                content: item.str("content")?.to_string(),
                status: match item.one_of("status", &["pending", "inProgress", "completed"])? {
                    "pending" => "pending",
                    "inProgress" => "in_progress",
                    _ => "completed",
                },
            })
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

#[cfg(test)]
pub mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// A draft snapshot: the Paseo plugin's `test/fixtures/v4-draft.json` @ fc66078d, with the
    /// session id and epoch given.
    pub fn draft(session_id: &str, seq: u64) -> Value {
        let mut snapshot: Value = serde_json::from_str(include_str!(
            "../../zcode-services-v4/traces/fixtures/v4-draft.json"
        ))
        .unwrap();
        snapshot["sessionId"] = json!(session_id);
        snapshot["seq"] = json!(seq);
        snapshot
    }

    #[test]
    fn reads_the_plugins_draft_snapshot() {
        let (conversation, rows) = Conversation::parse(&draft("session-1", 0)).unwrap();
        assert_eq!(conversation.session_id, "session-1");
        assert_eq!(conversation.control.phase, Phase::Draft);
        assert_eq!(conversation.config.thought_levels, ["high"]);
        assert_eq!(conversation.config.plan_enabled, Some(false));
        assert!(conversation.idle() && conversation.auto_drain);
        assert!(rows.window.is_empty() && rows.first_row_id.is_none());
    }

    #[test]
    fn patches_replace_whole_keys() {
        let (mut conversation, _) = Conversation::parse(&draft("s", 0)).unwrap();
        conversation
            .apply_patch(&json!({"revision": 4, "queue": {"items": [{"queueItemId": "q1"}], "autoDrain": false},
                                 "meta": {"title": "Fix it", "titleSource": "generated"}}))
            .unwrap();
        assert_eq!((conversation.revision, conversation.title.as_str()), (4, "Fix it"));
        assert_eq!(conversation.queue_items, ["q1"]);
        assert!(!conversation.auto_drain && !conversation.idle());
        assert_eq!(
            conversation.apply_patch(&json!({"rows": {}})).unwrap_err().message,
            "state.updated patch: unknown field `rows`"
        );
    }

    #[test]
    fn unknown_keys_and_values_are_breaks() {
        let mut snapshot = draft("s", 0);
        snapshot["surprise"] = json!(1);
        assert_eq!(
            Conversation::parse(&snapshot).unwrap_err().message,
            "V4 snapshot: unknown field `surprise`"
        );
        let mut phase = draft("s", 0);
        phase["control"]["phase"] = json!("paused");
        assert_eq!(
            Conversation::parse(&phase).unwrap_err().message,
            "control: unknown `phase` value `paused`"
        );
        let mut interaction = draft("s", 0);
        interaction["pendingInteractions"] =
            json!([{"interactionId": "i", "kind": "vote", "payload": {"kind": "vote"}}]);
        assert!(Conversation::parse(&interaction).is_err());
        let mut missing = draft("s", 0);
        missing.as_object_mut().unwrap().remove("queue");
        assert_eq!(
            Conversation::parse(&missing).unwrap_err().message,
            "V4 snapshot: missing field `queue`"
        );
    }
}
