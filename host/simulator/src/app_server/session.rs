//! A session with a resident runtime in this Agent process: its persisted record plus what
//! only lives in memory — the state revision, the protocol event log and its `seq`, the
//! delivery kind (events are pushed only once a host subscribed), the running turn, the input
//! queue, the runtime preferences the host answered, and the V4 projection.
//!
//! Like the real record (`ZCodeProtocolSessionRecord`), all of this starts afresh whenever the
//! runtime is (re)materialised: after `session/close`, an eviction or a new process, `seq`
//! counts from 1 again.

use std::collections::{BTreeSet, VecDeque};

use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use super::catalog;
use super::delta_batch::{Batch, Batcher};
use super::messages;
use super::store::SessionRecord;
use crate::common::clock::now_ms;
use crate::common::turn::Stop;
use crate::v4::availability::availability;
use crate::v4::publisher::{Log, Publisher};
use crate::v4::rows::tool_output;
use crate::v4::wire::{DeliveryKind, Frame};
use crate::v4::zone;

/// Protocol-visible events a resident session keeps for `session/events` and replays.
const EVENT_LOG: usize = 2_000;
/// V4 deltas kept for `base` resumption (`subscriberBufferMaxOps`).
const RETAINED_DELTAS: usize = 500;

/// Who started a turn: only legacy-started turns hold the prompt lock `session/stop` aborts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Legacy,
    V4,
}

/// What an accepting `session/send` or `sendText` prepared.
pub struct TurnStart {
    pub session_id: String,
    pub turn_id: String,
    pub input_id: String,
    /// The persisted user message of the prompt.
    pub message_id: String,
    pub text: String,
    pub command_id: Option<String>,
    pub stop: Stop<bool>,
}

pub struct RunningTurn {
    pub turn_id: String,
    pub origin: Origin,
    pub stop: watch::Sender<bool>,
    pub foreground_execution_id: String,
    pub started_at: u64,
    /// The V4 command that started it, if one did.
    pub command_id: Option<String>,
}

/// An input waiting for the running turn (V4 queue or guide lane).
#[derive(Debug, Clone)]
pub struct QueuedInput {
    pub text: String,
    pub input_id: String,
    pub command_id: String,
    pub client_id: String,
    pub delivery: &'static str,
    pub requested: &'static str,
    pub steer_state: &'static str,
    /// Why a guide input fell back to the queue (`guide.noToolBoundary`, ...).
    pub fallback_reason: Option<&'static str>,
    pub origin: Origin,
    pub admission_seq: u64,
    pub admitted_at: u64,
}

impl QueuedInput {
    /// The `QueueItem` of the V4 projection.
    pub fn queue_item(&self) -> Value {
        let mut item = json!({
            "sourceCommandId": self.command_id,
            "queueItemId": format!("queue_{}", self.command_id),
            "clientId": self.client_id,
            "kind": "sendText",
            "text": self.text,
            "attachments": [],
            "delivery": {"requested": self.requested, "admitted": self.delivery},
            "order": {"admissionSeq": self.admission_seq},
            "steer": {"state": self.steer_state},
            "dispatch": {"state": "queued"},
            "admittedAt": self.admitted_at,
        });
        if let Some(reason) = self.fallback_reason {
            item["delivery"]["fallbackReasonCode"] = json!(reason);
            item["steer"]["reasonCode"] = json!(reason);
        }
        item
    }
}

/// What the host answered to `session/requestRuntimePreferences`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preferences {
    pub native_search: bool,
    pub memory: bool,
    /// Defaults to `true` when the host omits it: AskUserQuestion then resolves itself.
    pub ask_auto_resolution: bool,
}

impl Preferences {
    /// The fallback when the host answers `-32601` / `-32020` (old or absent host).
    pub const FALLBACK: Preferences =
        Preferences { native_search: true, memory: false, ask_auto_resolution: true };

    pub fn from_answer(answer: &Value) -> Preferences {
        Preferences {
            native_search: answer["nativeSearchEnhancementsEnabled"] == true,
            memory: answer["memoryEnabled"] == true,
            ask_auto_resolution: answer["askUserQuestionAutoResolutionEnabled"] != false,
        }
    }
}

pub struct Resident {
    pub record: SessionRecord,
    /// The record exists in the store (from the first prompt on).
    pub stored: bool,
    /// `deferred` sessions are drafts: not listed until their first prompt.
    pub deferred: bool,
    pub revision: u64,
    pub seq: u64,
    /// Event ids are this plus the event's `seq`: unique, and with no random draw (a
    /// `getrandom` call) for every streamed delta.
    event_ids: u128,
    /// The last [`EVENT_LOG`] events, by `seq`, kept as the JSON text they were written as:
    /// they are only read back by a replay (`session/events`, a subscription's), so a
    /// streamed delta pays for one serialization here instead of a copy of its tree.
    pub events: VecDeque<(u64, String)>,
    pub delivery_kind: Option<String>,
    pub turn: Option<RunningTurn>,
    pub queue: VecDeque<QueuedInput>,
    pub auto_drain: bool,
    pub followup_mode: &'static str,
    pub preferences: Preferences,
    pub user_execution_asked: bool,
    pub always_allowed: BTreeSet<String>,
    /// V4 `pendingInteractions` entries.
    pub pending_interactions: Vec<Value>,
    /// Legacy projection `pendingPermissions` entries.
    pub pending_permissions: Vec<Value>,
    /// Legacy projection `activeToolCalls` entries.
    pub active_tools: Vec<Value>,
    /// Ids of the reverse interactions waiting for the host (`runtime.pendingRequestIds`).
    pub pending_requests: Vec<String>,
    /// The `seq-gap` fault: the next event's `seq` skips this many numbers.
    pub gap: u64,
    /// The `drop-events` fault: this many next events are logged but not written.
    pub drop: u64,
    /// Streamed deltas held back from the legacy stream.
    pub deltas: Batcher,
    pub last_phase: &'static str,
    pub publisher: Publisher,
    pub admissions: u64,
}

impl Resident {
    pub fn new(
        record: SessionRecord,
        stored: bool,
        deferred: bool,
        preferences: Preferences,
    ) -> Resident {
        let rows = rows_from_messages(&record.messages);
        let last_phase = if record.messages.is_empty() { "draft" } else { "completedSuccess" };
        let log = Log::new(format!("epoch_{}", uuid::Uuid::new_v4().simple()), rows);
        let mut resident = Resident {
            publisher: Publisher::new(&record.session_id, log, RETAINED_DELTAS),
            record,
            stored,
            deferred,
            revision: 0,
            seq: 0,
            event_ids: uuid::Uuid::new_v4().as_u128(),
            events: VecDeque::new(),
            delivery_kind: None,
            turn: None,
            queue: VecDeque::new(),
            auto_drain: true,
            followup_mode: "queue",
            preferences,
            user_execution_asked: false,
            always_allowed: BTreeSet::new(),
            pending_interactions: Vec::new(),
            pending_permissions: Vec::new(),
            active_tools: Vec::new(),
            pending_requests: Vec::new(),
            gap: 0,
            drop: 0,
            deltas: Batcher::default(),
            last_phase,
            admissions: 0,
        };
        resident.publisher.zone = resident.a_zone();
        resident
    }

    pub fn is_running(&self) -> bool {
        self.turn.is_some()
    }

    /// Records the prompt and marks the session running; the turn itself starts once the
    /// accepting response is out. Shared by `session/send`, V4 `sendText` and queue drains.
    pub fn begin_turn(
        &mut self,
        content: &str,
        input_id: &str,
        origin: Origin,
        command_id: Option<String>,
    ) -> TurnStart {
        let turn_id = messages::new_id("turn");
        let message_id = messages::new_id("msg");
        let session_id = self.record.session_id.clone();
        let model = self.record.model.as_ref();
        let user = messages::user_message(&session_id, &message_id, content, model);
        self.record.messages.push(user);
        self.record.updated_at = now_ms();
        // The session row appears with the first prompt (reference APP §8.1).
        self.stored = true;
        self.deferred = false;
        self.revision += 1;
        let (stop, stopped) = watch::channel(false);
        let started_at = now_ms();
        self.turn = Some(RunningTurn {
            turn_id: turn_id.clone(),
            origin,
            stop,
            foreground_execution_id: messages::new_id("exec"),
            started_at,
            command_id: command_id.clone(),
        });
        let input_id = input_id.to_owned();
        let text = content.to_owned();
        let stop = Stop(stopped);
        TurnStart { session_id, turn_id, input_id, message_id, text, command_id, stop }
    }

    /// Takes the oldest queued input of an idle session and starts it.
    pub fn next_queued(&mut self) -> Option<TurnStart> {
        if self.is_running() {
            return None;
        }
        let item = self.queue.pop_front()?;
        Some(self.begin_turn(&item.text, &item.input_id, item.origin, Some(item.command_id)))
    }

    /// Records an event; returns its notification when it is to be pushed: the session is
    /// subscribed, and no `drop-events` fault swallows it.
    pub fn record_event(
        &mut self,
        turn_id: Option<&str>,
        kind: &str,
        payload: &impl Serialize,
        at_ms: u64,
    ) -> Option<String> {
        let event = self.next_event(turn_id, kind, payload, at_ms);
        if self.drop > 0 {
            self.drop -= 1;
            return None;
        }
        self.delivery_kind.is_some().then(|| event_notification(&event))
    }

    /// [`Resident::record_event`] for merged streamed deltas.
    pub fn record_deltas(&mut self, batch: &Batch) -> Option<String> {
        self.record_event(Some(batch.turn_id()), "model.streaming", &batch.payload(), batch.at_ms())
    }

    /// Builds the next protocol session event, records it (`ZCodeSessionEvent`) and returns
    /// its JSON text.
    fn next_event(
        &mut self,
        turn_id: Option<&str>,
        kind: &str,
        payload: &impl Serialize,
        at_ms: u64,
    ) -> String {
        self.seq += std::mem::take(&mut self.gap) + 1;
        let event = EventText {
            event_id: format!("evt_{:032x}", self.event_ids.wrapping_add(u128::from(self.seq))),
            session_id: &self.record.session_id,
            seq: self.seq,
            trace_id: &self.record.trace_id,
            timestamp: at_ms,
            kind,
            payload,
            turn_id,
            delivery_kind: self.delivery_kind.as_deref(),
        };
        let text = serde_json::to_string(&event).expect("JSON values always serialize");
        if self.events.len() == EVENT_LOG {
            self.events.pop_front();
        }
        self.events.push_back((self.seq, text.clone()));
        text
    }

    /// Events with `seq > after` (`session/events`, subscribe replay).
    pub fn events_after(&self, after: u64) -> Vec<Value> {
        self.events
            .iter()
            .filter(|(seq, _)| *seq > after)
            .map(|(_, text)| serde_json::from_str(text).expect("the log holds JSON it wrote"))
            .collect()
    }

    pub fn current_model(&self) -> Option<&'static catalog::Model> {
        self.record.model.as_ref().and_then(catalog::find_selection)
    }

    pub fn pending_request_ids(&self) -> Vec<String> {
        self.pending_requests.clone()
    }

    // ── the V4 A zone ──

    pub fn a_zone(&self) -> Map<String, Value> {
        let mut zone = Map::new();
        for key in [
            "control",
            "availability",
            "inputRouting",
            "meta",
            "config",
            "usage",
            "queue",
            "pendingInteractions",
            "plan",
        ] {
            zone.insert(key.into(), self.zone_value(key));
        }
        zone::unsimulated(&mut zone);
        zone
    }

    /// The V4 `control.phase`: `running` while a turn runs, else how the last one ended.
    fn phase(&self) -> &'static str {
        if self.turn.is_some() { "running" } else { self.last_phase }
    }

    /// The current value of one A-zone key.
    pub fn zone_value(&self, key: &str) -> Value {
        let running = self.turn.as_ref();
        match key {
            "control" => {
                let running = running.map(|turn| zone::Running {
                    foreground_execution_id: &turn.foreground_execution_id,
                    source_command_id: turn.command_id.as_deref(),
                    started_at: turn.started_at,
                    tool_running: false,
                    stopping: false,
                });
                zone::control(self.phase(), running, &Value::Null)
            }
            "availability" => availability(self.phase()),
            "inputRouting" => {
                zone::input_routing(false, running.is_some(), self.followup_mode == "guide")
            }
            "meta" => json!({
                "title": self.record.title,
                "titleSource": v4_title_source(self.record.title_source.as_deref()),
            }),
            "config" => {
                let model = self.current_model();
                let mut config = json!({
                    "provider": model.map_or("", |model| model.provider_id),
                    "model": model.map_or("", |model| model.model_id),
                    "thought": self.record.thought_level.clone().unwrap_or_default(),
                    "thoughtLevels": model.map(|model| model.levels.to_vec()).unwrap_or_default(),
                    "followupMode": self.followup_mode,
                    "mode": self.record.mode,
                    "planEnabled": self.record.mode == "plan",
                });
                if let Some(selection) = &self.record.model {
                    config["modelSelection"] = selection.clone();
                }
                config
            }
            "usage" => {
                let usage = &self.record.usage;
                let cumulative = zone::Cumulative {
                    input: usage.input_tokens,
                    output: usage.output_tokens,
                    cache_read: usage.cache_read_tokens,
                    cache_write: usage.cache_creation_tokens,
                };
                let window = self.current_model().map_or(0, |model| model.context_window);
                zone::usage(&cumulative, self.record.context_used, window)
            }
            "plan" => zone::plan(&self.record.todos, self.record.updated_at),
            "queue" => {
                let items: Vec<Value> = self.queue.iter().map(QueuedInput::queue_item).collect();
                let mut queue = json!({"items": items, "autoDrain": self.auto_drain});
                if !self.auto_drain {
                    queue["pauseReason"] = json!("stopped");
                }
                queue
            }
            "pendingInteractions" => Value::Array(self.pending_interactions.clone()),
            _ => Value::Null,
        }
    }

    /// The V4 snapshot: the A zone as last published, then the log's identity and rows.
    pub fn v4_snapshot(&self) -> Value {
        let mut snapshot = self.publisher.zone.clone();
        snapshot.extend(self.publisher.snapshot_head(self.revision));
        snapshot.insert("rows".into(), self.publisher.rows_window());
        Value::Object(snapshot)
    }

    /// The first frame of a V4 (re)subscription and its ack `mode`.
    pub fn open_v4(
        &mut self,
        subscription_id: &str,
        base: Option<(&str, u64)>,
        force_snapshot: bool,
        delivery: DeliveryKind,
    ) -> Option<(&'static str, Frame)> {
        let snapshot = self.v4_snapshot();
        self.publisher.open(subscription_id, base, force_snapshot, delivery, snapshot)
    }

    /// A `state.updated` delta replacing `keys` with their current values.
    pub fn patch(&self, keys: &[&str]) -> Value {
        let mut patch = Map::new();
        patch.insert("revision".into(), json!(self.revision));
        for key in keys {
            patch.insert((*key).into(), self.zone_value(key));
        }
        json!({"op": "state.updated", "patch": patch})
    }
}

/// History rows for a session materialised from its persisted messages.
pub fn rows_from_messages(messages: &[Value]) -> Vec<Value> {
    let mut rows = Vec::new();
    let mut next = 1u64;
    let mut turn_id = String::new();
    for message in messages {
        let info = &message["info"];
        let message_id = info["messageId"].as_str().unwrap_or_default();
        let created = info["time"]["created"].clone();
        if info["role"] == "user" {
            turn_id = format!("turn_{message_id}");
            let text = messages::text(message);
            let header = with(
                row_base(next, &turn_id, &format!("{message_id}:turn"), 0, "turnHeader"),
                json!({"origin": "userInput", "executionKind": "agent",
                       "state": "completedSuccess", "startedAt": created}),
            );
            next += 1;
            rows.push(header);
            let input = with(
                row_base(next, &turn_id, message_id, 0, "userInput"),
                json!({"origin": "realUser", "text": text}),
            );
            next += 1;
            rows.push(input);
            continue;
        }
        for part in message["parts"].as_array().into_iter().flatten() {
            let entity = part["partId"].as_str().unwrap_or(message_id);
            let row = match part["type"].as_str() {
                Some("text") => with(
                    row_base(next, &turn_id, entity, 0, "assistantText"),
                    json!({"assistantResponseId": message_id, "text": part["text"], "state": "complete"}),
                ),
                Some("reasoning") => with(
                    row_base(next, &turn_id, entity, 0, "reasoning"),
                    json!({"assistantResponseId": message_id, "text": part["text"], "state": "complete"}),
                ),
                Some("tool") => {
                    let state = &part["state"];
                    let failed = state["status"] == "error";
                    let mut row = with(
                        row_base(next, &turn_id, entity, 0, "toolCall"),
                        json!({"assistantResponseId": message_id, "toolCallId": part["callId"],
                               "toolName": part["tool"],
                               "status": if failed { "error" } else { "success" },
                               "inputText": state["input"].to_string(), "input": state["input"]}),
                    );
                    if failed {
                        row["error"] = json!({"code": "tool_error", "message": state["error"]});
                    } else {
                        let id = part["callId"].as_str().unwrap_or_default();
                        row["output"] = tool_output(state["output"].as_str().unwrap_or(""), id);
                    }
                    row
                }
                _ => continue,
            };
            next += 1;
            rows.push(row);
        }
    }
    rows
}

/// A V4 row's common fields (`rowBaseFields`).
pub fn row_base(row_id: u64, turn_id: &str, entity_id: &str, seq: u64, kind: &str) -> Value {
    json!({
        "rowId": row_id,
        "turnId": turn_id,
        "entityId": entity_id,
        "productTurnId": turn_id,
        "createdAt": now_ms(),
        "createdAtSeq": seq,
        "kind": kind,
    })
}

/// Merges `extra`'s fields into `base`.
pub fn with(mut base: Value, extra: Value) -> Value {
    if let (Some(target), Value::Object(fields)) = (base.as_object_mut(), extra) {
        target.extend(fields);
    }
    base
}

/// A stored title source as V4 `meta` says it: V4 knows only `default`, `generated` and
/// `custom`, and ZCode 3.15.1 maps every other stored source (`first_input` included) to
/// `generated` (`normalizeStoredTitleSource`, `bootstrap/src/zcode-protocol/v4-bridge.ts`). A
/// session with no title yet starts at `default` (`createInitialConversationSnapshot`).
fn v4_title_source(stored: Option<&str>) -> &'static str {
    match stored {
        None | Some("default") => "default",
        Some("custom") => "custom",
        Some(_) => "generated",
    }
}

/// A protocol session event (`ZCodeSessionEvent`) as it is written: serialized straight from
/// its parts, with no JSON tree built and dropped for every streamed delta.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventText<'a, P: Serialize> {
    event_id: String,
    session_id: &'a str,
    seq: u64,
    trace_id: &'a str,
    timestamp: u64,
    #[serde(rename = "type")]
    kind: &'a str,
    payload: &'a P,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delivery_kind: Option<&'a str>,
}

/// A session event's notification around the event's JSON text, as `wire::notification`
/// serializes: the text the event log holds goes on the wire too, serialized once.
pub(super) fn event_notification(event: &str) -> String {
    format!(r#"{{"method":"session/event","params":{event}}}"#)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event<'a>(turn_id: Option<&'a str>, delivery_kind: Option<&'a str>) -> EventText<'a, Value> {
        static PAYLOAD: std::sync::LazyLock<Value> =
            std::sync::LazyLock::new(|| json!({"kind": "text_delta", "delta": "a \"b\"\n"}));
        EventText {
            event_id: "evt_1".into(),
            session_id: "sess_1",
            seq: 7,
            trace_id: "trace_1",
            timestamp: 1_700_000_000_000,
            kind: "model.streaming",
            payload: &PAYLOAD,
            turn_id,
            delivery_kind,
        }
    }

    #[test]
    fn an_event_is_written_with_the_members_zcode_gives_it_in_a_fixed_order() {
        let text = serde_json::to_string(&event(Some("turn_1"), Some("live"))).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            json!({
                "eventId": "evt_1", "sessionId": "sess_1", "seq": 7, "traceId": "trace_1",
                "timestamp": 1_700_000_000_000u64, "type": "model.streaming",
                "payload": {"kind": "text_delta", "delta": "a \"b\"\n"},
                "turnId": "turn_1", "deliveryKind": "live",
            })
        );
        assert!(text.starts_with(r#"{"eventId":"evt_1","sessionId":"sess_1","seq":7,"#));
        assert!(text.ends_with(r#","turnId":"turn_1","deliveryKind":"live"}"#));
    }

    #[test]
    fn v4_meta_names_a_first_input_title_generated_as_zcode_does() {
        assert_eq!(v4_title_source(None), "default");
        assert_eq!(v4_title_source(Some("first_input")), "generated");
        assert_eq!(v4_title_source(Some("generated")), "generated");
        assert_eq!(v4_title_source(Some("custom")), "custom");
    }

    #[test]
    fn an_event_outside_a_turn_or_before_a_subscription_has_no_such_members() {
        let value = serde_json::to_value(event(None, None)).unwrap();
        assert!(value.get("turnId").is_none() && value.get("deliveryKind").is_none());
        assert_eq!(value["type"], "model.streaming");
    }
}
