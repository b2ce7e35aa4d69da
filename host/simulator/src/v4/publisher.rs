//! One session's V4 conversation log and the frames it publishes (ZCode
//! `zcode-protocol-v4/{snapshot,delta,transport}.ts`): the B zone of rows, changed with
//! `row.appended` / `row.upserted` / `row.delta`; the A-zone keys last published with
//! `state.updated`; the session's `seq`, the deltas retained for `base` resumption, and the
//! subscribers every frame goes to.
//!
//! Every delta advances `seq` by one: deltas are staged into a [`Batch`] (rows change at once)
//! and numbered when it is committed, as one frame per subscriber covering `(fromSeq, toSeq]`;
//! a snapshot frame covers `(0, seq]`. The publisher makes logical frames only: each server's
//! transport wraps them into wires (`wire.rs`) and writes them.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::fork;
use super::wire::{DeliveryKind, Frame, Logical};
use crate::common::clock::now_ms;
use crate::common::members::{member, member_mut};

/// Rows a snapshot carries (`PROTOCOL_V4_LIMITS.snapshotTailWindowRows`).
pub const SNAPSHOT_TAIL_ROWS: usize = 60;

/// The log itself: what the Services Server keeps with a saved session (the app-server starts
/// a new one whenever a runtime is materialised).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Log {
    pub log_epoch: String,
    pub seq: u64,
    pub next_row_id: u64,
    /// Ordered by `rowId`.
    pub rows: Vec<Value>,
}

impl Log {
    /// A new log of `rows` under a new epoch. Rows of finished turns carry the fork marks
    /// their successes left (`fork.rs`), as a log rebuilt from stored history does.
    pub fn new(log_epoch: String, mut rows: Vec<Value>) -> Log {
        fork::mark_stable(&mut rows);
        let next_row_id =
            rows.iter().filter_map(|row| row["rowId"].as_u64()).max().unwrap_or(0) + 1;
        Log { log_epoch, seq: 0, next_row_id, rows }
    }
}

/// A subscription to a topic.
#[derive(Debug, Clone)]
pub struct Subscriber {
    pub id: Arc<str>,
    pub topic: Arc<str>,
    pub connection_id: Arc<str>,
    /// Last `logicalFrameOrdinal` sent to it.
    pub ordinal: u64,
}

impl Subscriber {
    pub fn new(id: String, topic: &str, connection_id: &str) -> Subscriber {
        Subscriber {
            id: id.into(),
            topic: topic.into(),
            connection_id: connection_id.into(),
            ordinal: 0,
        }
    }

    /// The next logical frame to this subscriber.
    pub fn frame(&mut self, delivery: DeliveryKind, logical: Logical) -> Frame {
        self.ordinal += 1;
        Frame {
            topic: Arc::clone(&self.topic),
            subscription_id: Arc::clone(&self.id),
            connection_id: Arc::clone(&self.connection_id),
            ordinal: self.ordinal,
            delivery,
            logical,
        }
    }

    /// The next frame to this subscriber: a snapshot covering `(0, to_seq]`.
    pub fn snapshot_frame(
        &mut self,
        delivery: DeliveryKind,
        to_seq: u64,
        snapshot: Value,
    ) -> Frame {
        let logical = Logical::Tree(json!({
            "topic": &*self.topic, "subscriptionId": &*self.id,
            "fromSeq": 0, "toSeq": to_seq, "sentAt": now_ms(),
            "payload": {"kind": "snapshot", "snapshot": snapshot},
        }));
        self.frame(delivery, logical)
    }
}

/// One V4 delta. A streamed `row.delta` is typed: a turn stages one per streamed piece of
/// text, and each is numbered, retained for resumption and written into a frame without a
/// JSON tree. Deltas are shared (`Arc`) between the frame and the retained log, so a whole
/// row sent again is never copied.
#[derive(Debug)]
pub enum Delta {
    /// `row.delta {rowId, path, append}`: text appended to a streaming row.
    Append { row_id: u64, path: &'static str, append: String },
    /// Any other delta, as its tree.
    Op(Value),
}

/// Deltas on their way to one frame.
#[derive(Default)]
pub struct Batch {
    deltas: Vec<Arc<Delta>>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.deltas.is_empty()
    }

    pub fn len(&self) -> usize {
        self.deltas.len()
    }

    /// A delta that changes nothing the publisher keeps (scenario `event` steps).
    pub fn push(&mut self, delta: Value) {
        self.deltas.push(Arc::new(Delta::Op(delta)));
    }
}

pub struct Publisher {
    pub session_id: String,
    pub log: Log,
    retained: VecDeque<(u64, Arc<Delta>)>,
    /// How many deltas are retained for resumption.
    retain: usize,
    /// The A-zone keys as last published (`state.updated` patches staged here).
    pub zone: Map<String, Value>,
    pub subscribers: Vec<Subscriber>,
    /// The `v4-seq-gap` fault: the next frame starts this far ahead.
    pub gap: u64,
}

impl Publisher {
    pub fn new(session_id: &str, log: Log, retain: usize) -> Publisher {
        Publisher {
            session_id: session_id.to_owned(),
            log,
            retained: VecDeque::new(),
            retain,
            zone: Map::new(),
            subscribers: Vec::new(),
            gap: 0,
        }
    }

    pub fn topic(&self) -> String {
        format!("conversation/{}", self.session_id)
    }

    // ----- rows ---------------------------------------------------------------------------

    fn row_index(&self, row_id: u64) -> Result<usize, usize> {
        let id_of = |row: &Value| member(row, "rowId").and_then(Value::as_u64).unwrap_or(0);
        // A turn streams into its newest row, so that one is asked for by the thousand.
        let rows = &self.log.rows;
        match rows.last() {
            Some(last) if id_of(last) == row_id => Ok(rows.len() - 1),
            _ => rows.binary_search_by_key(&row_id, id_of),
        }
    }

    #[cfg(test)]
    pub fn row(&self, row_id: u64) -> Option<&Value> {
        self.row_index(row_id).ok().map(|index| &self.log.rows[index])
    }

    pub fn rows(&self) -> &[Value] {
        &self.log.rows
    }

    fn next_row_id(&mut self) -> u64 {
        let id = self.log.next_row_id;
        self.log.next_row_id += 1;
        id
    }

    /// Appends a row (its `rowId`, `createdAt` and `createdAtSeq` are filled in).
    pub fn append_row(&mut self, batch: &mut Batch, mut row: Value) -> u64 {
        let row_id = self.next_row_id();
        row["rowId"] = json!(row_id);
        if row.get("createdAt").is_none() {
            row["createdAt"] = json!(now_ms());
        }
        row["createdAtSeq"] = json!(self.log.seq + batch.len() as u64 + 1);
        batch.push(json!({"op": "row.appended", "row": row}));
        self.log.rows.push(row);
        row_id
    }

    /// Marks the last answer of `turn_id` as a fork target and sends it again (`row.upserted`),
    /// as ZCode does on a turn's success (`fork.rs`). Nothing when the turn has no answer.
    pub fn mark_stable_answer(&mut self, batch: &mut Batch, turn_id: &str) {
        if let Some(row_id) = fork::stable_answer_of(&self.log.rows, turn_id) {
            self.upsert_row(batch, row_id, fork::mark);
        }
    }

    /// Changes a row and sends it whole (`row.upserted`).
    pub fn upsert_row(&mut self, batch: &mut Batch, row_id: u64, change: impl FnOnce(&mut Value)) {
        let Ok(index) = self.row_index(row_id) else { return };
        change(&mut self.log.rows[index]);
        batch.push(json!({"op": "row.upserted", "row": self.log.rows[index].clone()}));
    }

    /// Appends streamed text to a row's `path` (`text`, `inputText`, `output.text`).
    pub fn stream_row(&mut self, batch: &mut Batch, row_id: u64, path: &'static str, append: &str) {
        let Ok(index) = self.row_index(row_id) else { return };
        append_text(&mut self.log.rows[index], path, append);
        let delta = Delta::Append { row_id, path, append: append.to_owned() };
        batch.deltas.push(Arc::new(delta));
    }

    /// A delta built elsewhere: applied to the rows and the A zone, then batched.
    pub fn stage(&mut self, batch: &mut Batch, delta: Value) {
        match delta["op"].as_str() {
            Some("row.appended" | "row.upserted") => {
                let row = delta["row"].clone();
                match self.row_index(row["rowId"].as_u64().unwrap_or(0)) {
                    Ok(index) => self.log.rows[index] = row,
                    Err(index) => self.log.rows.insert(index, row),
                }
            }
            Some("row.delta") => {
                let path = delta["path"].as_str().unwrap_or("text");
                let append = delta["append"].as_str().unwrap_or_default();
                if let Ok(index) = self.row_index(delta["rowId"].as_u64().unwrap_or(0)) {
                    append_text(&mut self.log.rows[index], path, append);
                }
            }
            Some("state.updated") => {
                for (key, value) in delta["patch"].as_object().into_iter().flatten() {
                    if key != "revision" {
                        self.zone.insert(key.clone(), value.clone());
                    }
                }
            }
            _ => {}
        }
        batch.push(delta);
    }

    // ----- frames -------------------------------------------------------------------------

    /// Numbers the batch's deltas and renders one `deltas` frame per subscriber.
    pub fn commit(&mut self, mut batch: Batch) -> Vec<Frame> {
        if batch.is_empty() {
            return Vec::new();
        }
        // A gap: frames covering these sequence numbers are never written.
        self.log.seq += std::mem::take(&mut self.gap);
        let from = self.log.seq;
        for delta in &batch.deltas {
            self.log.seq += 1;
            if self.retained.len() == self.retain {
                self.retained.pop_front();
            }
            self.retained.push_back((self.log.seq, Arc::clone(delta)));
        }
        let to = self.log.seq;
        let sent_at = now_ms();
        let mut frames = Vec::with_capacity(self.subscribers.len());
        let last = self.subscribers.len().saturating_sub(1);
        for (index, subscriber) in self.subscribers.iter_mut().enumerate() {
            // The last (mostly the only) subscriber takes the batch's own list.
            let deltas = if index == last {
                std::mem::take(&mut batch.deltas)
            } else {
                batch.deltas.clone()
            };
            let logical = Logical::Deltas { from_seq: from, to_seq: to, sent_at, deltas };
            frames.push(subscriber.frame(DeliveryKind::Online, logical));
        }
        frames
    }

    /// The retained deltas after `seq`, if they reach back that far.
    pub fn retained_since(&self, seq: u64) -> Option<Vec<Arc<Delta>>> {
        if seq > self.log.seq {
            return None;
        }
        if seq == self.log.seq {
            return Some(Vec::new());
        }
        let oldest = self.retained.front()?.0;
        if seq + 1 < oldest {
            return None;
        }
        Some(self.retained.iter().filter(|(at, _)| *at > seq).map(|(_, d)| Arc::clone(d)).collect())
    }

    /// The first frame of a (re)subscription: the deltas since `base` when its epoch is this
    /// log's and they are all retained, else `snapshot`. Returns the ack `mode` and the frame.
    pub fn open(
        &mut self,
        subscription_id: &str,
        base: Option<(&str, u64)>,
        force_snapshot: bool,
        delivery: DeliveryKind,
        snapshot: Value,
    ) -> Option<(&'static str, Frame)> {
        let resume = base
            .filter(|(epoch, _)| !force_snapshot && *epoch == self.log.log_epoch)
            .and_then(|(_, seq)| self.retained_since(seq).map(|deltas| (seq, deltas)));
        let to_seq = self.log.seq;
        let subscriber = self.subscribers.iter_mut().find(|s| &*s.id == subscription_id)?;
        Some(match resume {
            Some((from_seq, deltas)) => {
                let logical = Logical::Deltas { from_seq, to_seq, sent_at: now_ms(), deltas };
                ("resume", subscriber.frame(delivery, logical))
            }
            None => ("snapshot", subscriber.snapshot_frame(delivery, to_seq, snapshot)),
        })
    }

    // ----- reads --------------------------------------------------------------------------

    /// The log's part of a snapshot, in order: `protocolVersion`, `sessionId`, `logEpoch`,
    /// `seq` and `revision` (the A zone and [`Self::rows_window`] complete it).
    pub fn snapshot_head(&self, revision: u64) -> Map<String, Value> {
        let mut head = Map::new();
        head.insert("protocolVersion".into(), json!(1));
        head.insert("sessionId".into(), json!(self.session_id));
        head.insert("logEpoch".into(), json!(self.log.log_epoch));
        head.insert("seq".into(), json!(self.log.seq));
        head.insert("revision".into(), json!(revision));
        head
    }

    /// A snapshot's `rows`: the last [`SNAPSHOT_TAIL_ROWS`] rows and where the log starts.
    pub fn rows_window(&self) -> Value {
        let rows = &self.log.rows;
        let window = &rows[rows.len().saturating_sub(SNAPSHOT_TAIL_ROWS)..];
        json!({
            "window": window,
            "totalCount": rows.len(),
            "firstRowId": rows.first().map(|row| row["rowId"].clone()),
        })
    }

    /// `rowsRange`: up to `limit` rows before `before` (the tail without it), oldest first.
    pub fn rows_range(&self, before: Option<u64>, limit: usize, revision: u64) -> Value {
        let rows = &self.log.rows;
        let end = match before {
            Some(before) => rows.partition_point(|row| row["rowId"].as_u64().unwrap_or(0) < before),
            None => rows.len(),
        };
        let start = end.saturating_sub(limit);
        json!({
            "rows": &rows[start..end],
            "atSeq": self.log.seq,
            "atRevision": revision,
            "atLogEpoch": self.log.log_epoch,
            "hasMore": start > 0,
        })
    }
}

/// Appends `append` to the text at `path` (`text`, or `outer.inner`), in place: a turn of n
/// deltas costs O(n), not a copy of the text per delta.
fn append_text(row: &mut Value, path: &str, append: &str) {
    // The streamed text, found at every delta: by comparing names.
    if !path.contains('.')
        && let Some(Value::String(text)) = member_mut(row, path)
    {
        text.push_str(append);
        return;
    }
    let slot = match path.split_once('.') {
        Some((outer, inner)) => {
            if !row[outer].is_object() {
                row[outer] = json!({});
            }
            &mut row[outer][inner]
        }
        None => &mut row[path],
    };
    match slot {
        Value::String(text) => text.push_str(append),
        other => *other = Value::String(append.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn publisher() -> Publisher {
        Publisher::new("sess_a", Log::new("epoch_a".into(), Vec::new()), 500)
    }

    #[test]
    fn deltas_advance_seq_and_frames_cover_the_interval() {
        let mut publisher = publisher();
        publisher.subscribers.push(Subscriber::new("sub_1".into(), &publisher.topic(), "conn-1"));
        let (mode, initial) =
            publisher.open("sub_1", None, false, DeliveryKind::Initial, json!({})).unwrap();
        assert_eq!(mode, "snapshot");
        assert_eq!(initial.logical_value()["payload"]["kind"], "snapshot");
        let mut batch = Batch::default();
        let row = publisher.append_row(&mut batch, json!({"kind": "assistantText", "text": ""}));
        publisher.stream_row(&mut batch, row, "text", "Hi");
        let out = publisher.commit(batch);
        let frame = &out[0].logical_value();
        assert_eq!((frame["fromSeq"].as_u64(), frame["toSeq"].as_u64()), (Some(0), Some(2)));
        assert_eq!(out[0].ordinal, 2);
        assert_eq!(publisher.row(row).unwrap()["text"], "Hi");
        assert_eq!(publisher.row(row).unwrap()["createdAtSeq"], 1);
        assert_eq!(publisher.retained_since(1).unwrap().len(), 1);
        assert!(publisher.retained_since(3).is_none());
        let base = Some(("epoch_a", 1));
        let (mode, resumed) =
            publisher.open("sub_1", base, false, DeliveryKind::Recovery, json!({})).unwrap();
        assert_eq!((mode, &resumed.logical_value()["fromSeq"]), ("resume", &json!(1)));
    }

    #[test]
    fn a_gap_shows_up_in_the_next_frame_only() {
        let mut publisher = publisher();
        publisher.subscribers.push(Subscriber::new("s".into(), "conversation/sess_a", "c"));
        publisher.gap = 3;
        let mut batch = Batch::default();
        let patch =
            json!({"op": "state.updated", "patch": {"revision": 2, "queue": {"items": []}}});
        publisher.stage(&mut batch, patch);
        let first = publisher.commit(batch);
        assert_eq!((first[0].logical_value()["fromSeq"].as_u64(), publisher.log.seq), (Some(3), 4));
        assert_eq!(publisher.zone, *json!({"queue": {"items": []}}).as_object().unwrap());
        let mut batch = Batch::default();
        batch.push(json!({"op": "state.updated", "patch": {}}));
        assert_eq!(publisher.commit(batch)[0].logical_value()["fromSeq"], 4);
    }

    #[test]
    fn staged_rows_keep_their_order_and_grow_in_place() {
        let mut publisher = publisher();
        let mut batch = Batch::default();
        for id in [1, 3, 2] {
            publisher.stage(&mut batch, json!({"op": "row.appended", "row": {"rowId": id}}));
        }
        let delta = json!({"op": "row.delta", "rowId": 2, "path": "output.text", "append": "a"});
        publisher.stage(&mut batch, delta);
        let ids: Vec<u64> = publisher.rows().iter().map(|r| r["rowId"].as_u64().unwrap()).collect();
        assert_eq!(ids, [1, 2, 3]);
        assert_eq!(publisher.row(2).unwrap()["output"], json!({"text": "a"}));
    }

    #[test]
    fn rows_range_pages_backwards() {
        let rows = (1..=5).map(|id| json!({"rowId": id})).collect();
        let publisher = Publisher::new("s", Log::new("e".into(), rows), 500);
        assert_eq!(publisher.log.next_row_id, 6);
        let page = publisher.rows_range(Some(5), 2, 0);
        assert_eq!(page["rows"], json!([{"rowId": 3}, {"rowId": 4}]));
        assert_eq!(page["hasMore"], true);
        assert_eq!(publisher.rows_range(None, 10, 0)["hasMore"], false);
    }
}
