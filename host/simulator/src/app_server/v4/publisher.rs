//! One session's V4 conversation projection and its topic subscribers (3.15.1
//! `zcode-protocol-v4/snapshot.ts`, `delta.ts`, `transport.ts`, `wire.ts`).
//!
//! The projection is the A zone (control, config, usage, queue, pending interactions, ...),
//! replaced key by key with `state.updated`, and the B zone of rows, changed with
//! `row.appended` / `row.upserted` / `row.delta`. Every delta op advances the session's V4
//! `seq` by one; a frame covers `(fromSeq, toSeq]`, a snapshot frame `(0, seq]`. Frames go out
//! as physical `complete` wires (`wireVersion` 3); fragmentation of large frames is not
//! simulated.

use std::collections::VecDeque;

use serde_json::{Map, Value, json};

use crate::common::clock::now_ms;

/// Rows a snapshot carries (`PROTOCOL_V4_LIMITS.snapshotTailWindowRows`).
pub const SNAPSHOT_TAIL_ROWS: usize = 60;
/// Deltas kept for `base` resumption (`subscriberBufferMaxOps`).
const RETAINED_DELTAS: usize = 500;
pub const WIRE_VERSION: u64 = 3;

/// A subscription to a topic.
#[derive(Debug, Clone)]
pub struct Subscriber {
    pub subscription_id: String,
    pub connection_id: String,
    pub topic: String,
    /// Last `logicalFrameOrdinal` written to it.
    pub ordinal: u64,
}

impl Subscriber {
    pub fn new(topic: &str, connection_id: &str) -> Subscriber {
        Subscriber {
            subscription_id: format!("sub_{}", uuid::Uuid::new_v4().simple()),
            connection_id: connection_id.to_owned(),
            topic: topic.to_owned(),
            ordinal: 0,
        }
    }

    /// Wraps a logical frame into its physical `complete` wire.
    pub fn wire(&mut self, delivery: &str, from_seq: u64, to_seq: u64, payload: Value) -> Value {
        self.ordinal += 1;
        json!({
            "wireVersion": WIRE_VERSION,
            "kind": "complete",
            "deliveryKind": delivery,
            "logicalFrameId": format!("{}:{}", self.subscription_id, self.ordinal),
            "logicalFrameOrdinal": self.ordinal,
            "topic": self.topic,
            "subscriptionId": self.subscription_id,
            "frame": {
                "topic": self.topic,
                "subscriptionId": self.subscription_id,
                "fromSeq": from_seq,
                "toSeq": to_seq,
                "sentAt": now_ms(),
                "payload": payload,
            },
        })
    }
}

/// A frame ready for a connection.
pub struct Outgoing {
    pub connection_id: String,
    pub wire: Value,
}

pub struct Publisher {
    pub session_id: String,
    pub log_epoch: String,
    pub seq: u64,
    /// A-zone keys, replaced whole.
    state: Map<String, Value>,
    rows: Vec<Value>,
    next_row_id: u64,
    history: VecDeque<(u64, Value)>,
    pub subscribers: Vec<Subscriber>,
    /// The `v4-seq-gap` fault: the next frame starts this far ahead.
    pub gap: u64,
}

impl Publisher {
    pub fn new(session_id: &str, state: Map<String, Value>, rows: Vec<Value>) -> Publisher {
        let next_row_id =
            rows.iter().filter_map(|row| row["rowId"].as_u64()).max().unwrap_or(0) + 1;
        Publisher {
            session_id: session_id.to_owned(),
            log_epoch: format!("epoch_{}", uuid::Uuid::new_v4().simple()),
            seq: 0,
            state,
            rows,
            next_row_id,
            history: VecDeque::new(),
            subscribers: Vec::new(),
            gap: 0,
        }
    }

    /// Replaces the whole A zone (a freshly materialised session).
    pub fn set_state(&mut self, state: Map<String, Value>) {
        self.state = state;
    }

    #[cfg(test)]
    pub fn topic(&self) -> String {
        format!("conversation/{}", self.session_id)
    }

    pub fn next_row_id(&mut self) -> u64 {
        let id = self.next_row_id;
        self.next_row_id += 1;
        id
    }

    #[cfg(test)]
    pub fn state(&self, key: &str) -> &Value {
        self.state.get(key).unwrap_or(&Value::Null)
    }

    pub fn rows(&self) -> &[Value] {
        &self.rows
    }

    pub fn row(&self, row_id: u64) -> Option<&Value> {
        self.rows.iter().find(|row| row["rowId"] == row_id)
    }

    /// The full snapshot at the current `seq`.
    pub fn snapshot(&self, revision: u64) -> Value {
        let start = self.rows.len().saturating_sub(SNAPSHOT_TAIL_ROWS);
        let mut snapshot = self.state.clone();
        snapshot.insert("protocolVersion".into(), json!(1));
        snapshot.insert("sessionId".into(), json!(self.session_id));
        snapshot.insert("logEpoch".into(), json!(self.log_epoch));
        snapshot.insert("seq".into(), json!(self.seq));
        snapshot.insert("revision".into(), json!(revision));
        snapshot.insert(
            "rows".into(),
            json!({
                "window": &self.rows[start..],
                "totalCount": self.rows.len(),
                "firstRowId": self.rows.first().map(|row| row["rowId"].clone()),
            }),
        );
        Value::Object(snapshot)
    }

    /// Applies delta ops to the projection and renders one `deltas` frame per subscriber.
    pub fn push(&mut self, deltas: Vec<Value>) -> Vec<Outgoing> {
        if deltas.is_empty() {
            return Vec::new();
        }
        // A gap: frames covering these sequence numbers are never written.
        self.seq += std::mem::take(&mut self.gap);
        let from = self.seq;
        for delta in &deltas {
            self.apply(delta);
            self.seq += 1;
            if self.history.len() == RETAINED_DELTAS {
                self.history.pop_front();
            }
            self.history.push_back((self.seq, delta.clone()));
        }
        let payload = json!({"kind": "deltas", "deltas": deltas});
        let to = self.seq;
        self.subscribers
            .iter_mut()
            .map(|subscriber| Outgoing {
                connection_id: subscriber.connection_id.clone(),
                wire: subscriber.wire("online", from, to, payload.clone()),
            })
            .collect()
    }

    fn apply(&mut self, delta: &Value) {
        match delta["op"].as_str() {
            Some("row.appended") | Some("row.upserted") => {
                let row = delta["row"].clone();
                match self.rows.iter_mut().find(|existing| existing["rowId"] == row["rowId"]) {
                    Some(existing) => *existing = row,
                    None => self.rows.push(row),
                }
            }
            Some("row.delta") => {
                let (row_id, path) = (&delta["rowId"], delta["path"].as_str().unwrap_or("text"));
                let append = delta["append"].as_str().unwrap_or_default();
                if let Some(row) = self.rows.iter_mut().find(|row| &row["rowId"] == row_id) {
                    let target = match path.split_once('.') {
                        Some((outer, inner)) => &mut row[outer][inner],
                        None => &mut row[path],
                    };
                    // Appended in place: a turn of n deltas costs O(n), not O(n²).
                    match target {
                        Value::String(text) => text.push_str(append),
                        other => *other = json!(append),
                    }
                }
            }
            Some("state.updated") => {
                if let Some(patch) = delta["patch"].as_object() {
                    for (key, value) in patch {
                        if key != "revision" {
                            self.state.insert(key.clone(), value.clone());
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The deltas after `seq`, when they are all still retained.
    pub fn deltas_since(&self, seq: u64) -> Option<Vec<Value>> {
        if seq > self.seq {
            return None;
        }
        if seq == self.seq {
            return Some(Vec::new());
        }
        let oldest = self.history.front()?.0;
        if seq + 1 < oldest {
            return None;
        }
        Some(
            self.history
                .iter()
                .filter(|(at, _)| *at > seq)
                .map(|(_, delta)| delta.clone())
                .collect(),
        )
    }

    /// The initial frame of a (re)subscription: a resume from `base` when possible, else a
    /// snapshot. Returns the ack `mode` and the wire.
    pub fn initial_frame(
        &mut self,
        subscription_id: &str,
        base: Option<(&str, u64)>,
        force_snapshot: bool,
        delivery: &str,
        revision: u64,
    ) -> Option<(&'static str, Value)> {
        let resume = base
            .filter(|(epoch, _)| !force_snapshot && *epoch == self.log_epoch)
            .and_then(|(_, seq)| self.deltas_since(seq).map(|deltas| (seq, deltas)));
        let snapshot = self.snapshot(revision);
        let to = self.seq;
        let subscriber =
            self.subscribers.iter_mut().find(|s| s.subscription_id == subscription_id)?;
        Some(match resume {
            Some((from, deltas)) => {
                let payload = json!({"kind": "deltas", "deltas": deltas});
                ("resume", subscriber.wire(delivery, from, to, payload))
            }
            None => {
                let payload = json!({"kind": "snapshot", "snapshot": snapshot});
                ("snapshot", subscriber.wire(delivery, 0, to, payload))
            }
        })
    }

    /// `rowsRange`: rows with `rowId < before`, ascending, at most `limit` of the newest.
    pub fn rows_range(&self, before: Option<u64>, limit: usize) -> (Vec<Value>, bool) {
        let eligible: Vec<&Value> = self
            .rows
            .iter()
            .filter(|row| before.is_none_or(|before| row["rowId"].as_u64().unwrap_or(0) < before))
            .collect();
        let start = eligible.len().saturating_sub(limit);
        (eligible[start..].iter().map(|row| (*row).clone()).collect(), start > 0)
    }
}

/// A row's common fields (`rowBaseFields`).
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

#[cfg(test)]
mod tests {
    use super::*;

    fn publisher() -> Publisher {
        let mut state = Map::new();
        state.insert("queue".into(), json!({"items": [], "autoDrain": true}));
        Publisher::new("sess_a", state, Vec::new())
    }

    #[test]
    fn deltas_advance_seq_and_frames_cover_the_interval() {
        let mut publisher = publisher();
        let mut subscriber = Subscriber::new(&publisher.topic(), "conn-1");
        let id = subscriber.subscription_id.clone();
        subscriber.ordinal = 0;
        publisher.subscribers.push(subscriber);
        let (mode, initial) = publisher.initial_frame(&id, None, false, "initial", 3).unwrap();
        assert_eq!(mode, "snapshot");
        assert_eq!(initial["frame"]["payload"]["snapshot"]["revision"], 3);
        let row = with(
            row_base(1, "turn_1", "e1", 0, "assistantText"),
            json!({"text": "", "state": "streaming"}),
        );
        let out = publisher.push(vec![
            json!({"op": "row.appended", "row": row}),
            json!({"op": "row.delta", "rowId": 1, "path": "text", "append": "Hi"}),
        ]);
        let frame = &out[0].wire["frame"];
        assert_eq!((frame["fromSeq"].as_u64(), frame["toSeq"].as_u64()), (Some(0), Some(2)));
        assert_eq!(out[0].wire["logicalFrameOrdinal"], 2);
        assert_eq!(publisher.row(1).unwrap()["text"], "Hi");
        assert_eq!(publisher.deltas_since(1).unwrap().len(), 1);
        let (mode, resumed) = publisher
            .initial_frame(&id, Some((&publisher.log_epoch.clone(), 1)), false, "recovery", 3)
            .unwrap();
        assert_eq!(mode, "resume");
        assert_eq!(resumed["frame"]["fromSeq"], 1);
    }

    #[test]
    fn a_gap_shows_up_in_the_next_frame_only() {
        let mut publisher = publisher();
        publisher.subscribers.push(Subscriber::new("conversation/sess_a", "c"));
        publisher.gap = 3;
        let first = publisher.push(vec![
            json!({"op": "state.updated", "patch": {"queue": {"items": [], "autoDrain": false}}}),
        ]);
        assert_eq!(first[0].wire["frame"]["fromSeq"], 3);
        assert_eq!(first[0].wire["frame"]["toSeq"], 4);
        assert_eq!(publisher.state("queue")["autoDrain"], false);
        let second = publisher.push(vec![json!({"op": "state.updated", "patch": {}})]);
        assert_eq!(second[0].wire["frame"]["fromSeq"], 4);
    }

    #[test]
    fn rows_range_pages_backwards() {
        let rows = (1..=5).map(|id| json!({"rowId": id})).collect();
        let publisher = Publisher::new("s", Map::new(), rows);
        let (page, more) = publisher.rows_range(Some(5), 2);
        assert_eq!(page, vec![json!({"rowId": 3}), json!({"rowId": 4})]);
        assert!(more);
        assert!(!publisher.rows_range(None, 10).1);
    }
}
