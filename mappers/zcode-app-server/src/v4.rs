//! The V4 side of one session: the conversation subscription's frames (snapshot, deltas, a
//! sequence gap and its resync), and `v4/command` envelopes.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use zcode_contract::MapperError;

use crate::json::protocol;
use crate::wire::{object, raw_str};

/// The wire version the 3.15.1 frames carry (`ZCODE_PROTOCOL_V4_WIRE_VERSION`).
pub const WIRE_VERSION: u64 = 3;
/// Bounds on what one fragmented frame may make the mapper hold: ZCode's own logical-frame limit
/// is 16 MiB (3.15.1 `conversation-topic-publisher.ts`); the fragment count only bounds memory.
const MAX_LOGICAL_BYTES: usize = 16 * 1024 * 1024;
const MAX_FRAGMENTS: usize = 4096;
pub const CLIENT_ID: &str = "zcode-acp";

/// The content of one logical frame, for the conversation to map.
#[derive(Debug, PartialEq)]
pub enum Payload {
    /// The whole conversation state at `toSeq` (initial, or a resync that could not resume).
    Snapshot(Value),
    /// The changes in `(fromSeq, toSeq]`, in order.
    Deltas(Vec<Value>),
}

/// One delta of a frame read by [`Subscription::deltas`].
#[derive(Debug)]
pub enum Delta<'a> {
    /// `row.delta`: text appended to a row.
    Append(TextAppend<'a>),
    /// `row.appended` / `row.upserted` of a text row, whose text is the row's whole text so far
    /// (a turn's last frames carry its whole message this way).
    TextRow(TextRow<'a>),
    /// Any other delta, read as a tree.
    Tree(Value),
}

impl<'a> Delta<'a> {
    /// `None` for a delta that is not an object.
    fn read(raw: &'a RawValue) -> Option<Self> {
        #[derive(Deserialize)]
        struct RowOp<'a> {
            #[serde(borrow)]
            op: Cow<'a, str>,
            #[serde(borrow)]
            row: &'a RawValue,
        }
        if !raw.get().starts_with('{') {
            return None;
        }
        if let Some(append) = object::<TextAppend<'a>>(raw).filter(|d| d.op == "row.delta") {
            return Some(Delta::Append(append));
        }
        if let Some(op) = object::<RowOp<'a>>(raw)
            && matches!(&*op.op, "row.appended" | "row.upserted")
            && let Some(row) = object::<TextRow<'a>>(op.row)
            && matches!(&*row.kind, "assistantText" | "reasoning")
        {
            return Some(Delta::TextRow(row));
        }
        serde_json::from_str(raw.get()).ok().map(Delta::Tree)
    }
}

/// A text row (`assistantText`, `reasoning`), read without a tree.
#[derive(Debug, Deserialize)]
pub struct TextRow<'a> {
    #[serde(rename = "rowId")]
    pub row_id: u64,
    #[serde(borrow)]
    pub kind: Cow<'a, str>,
    #[serde(borrow, rename = "turnId")]
    pub turn_id: Cow<'a, str>,
    #[serde(borrow)]
    pub text: Cow<'a, str>,
}

/// A `row.delta`: text appended to a row, read without a tree.
#[derive(Debug, Deserialize)]
pub struct TextAppend<'a> {
    #[serde(borrow)]
    op: Cow<'a, str>,
    #[serde(rename = "rowId")]
    pub row_id: u64,
    #[serde(borrow)]
    pub path: Cow<'a, str>,
    #[serde(borrow)]
    pub append: Cow<'a, str>,
}

/// What to do with one `v4/conversation/frame`.
#[derive(Debug, PartialEq)]
pub enum FrameOutcome {
    Applied(Payload),
    /// A duplicate, a fragment still incomplete, or a frame of an older subscription.
    Skipped(&'static str),
    /// Frames were lost (a sequence gap, or a fragment whose checksum failed): resync from the
    /// last frame applied. The reason is for the log.
    Gap(&'static str),
}

enum Assembled {
    Frame(Value),
    Incomplete,
    Corrupt,
}

/// The fragments of one logical frame received so far, and what every one of them must agree on.
struct Assembly {
    parts: Vec<Option<Vec<u8>>>,
    bytes: usize,
    checksum: String,
}

#[derive(Default)]
pub struct Subscription {
    pub connection_id: String,
    pub subscription_id: Option<String>,
    pub log_epoch: Option<String>,
    /// The `toSeq` of the last frame applied (`None` until the first snapshot).
    pub seq: Option<u64>,
    pub revision: Option<u64>,
    /// A resync is under way: frames past a gap wait for its recovery frames.
    pub resyncing: bool,
    fragments: BTreeMap<String, Assembly>,
    commands: u64,
}

impl Subscription {
    pub fn new(session: &str) -> Self {
        Self { connection_id: format!("zcode-acp-{session}"), ..Self::default() }
    }

    pub fn active(&self) -> bool {
        self.subscription_id.is_some()
    }

    /// A new subscription to the same topic (after the session was resumed): its frames start
    /// over from a snapshot. Command ids keep counting (ZCode deduplicates them persistently).
    pub fn resubscribed(&mut self, subscription_id: Option<String>, log_epoch: Option<String>) {
        self.subscription_id = subscription_id;
        self.log_epoch = log_epoch;
        self.seq = None;
        self.revision = None;
        self.resyncing = false;
        self.fragments.clear();
    }

    /// A frame notification's params, taken apart: a turn's last frames carry its whole text,
    /// which is moved out of them, not copied.
    pub fn frame(&mut self, mut wire: Value) -> Result<FrameOutcome, MapperError> {
        if wire.get("wireVersion").and_then(Value::as_u64) != Some(WIRE_VERSION) {
            return Err(protocol(format!(
                "V4 frame of an unknown wire version: {}",
                wire.get("wireVersion").unwrap_or(&Value::Null)
            )));
        }
        if wire.get("subscriptionId").and_then(Value::as_str) != self.subscription_id.as_deref() {
            return Ok(FrameOutcome::Skipped("frame of another subscription"));
        }
        let recovery = wire.get("deliveryKind").and_then(Value::as_str) == Some("recovery");
        let frame = match wire.get("kind").and_then(Value::as_str) {
            Some("complete") => wire
                .get_mut("frame")
                .map(Value::take)
                .ok_or_else(|| protocol("V4 complete frame without `frame`"))?,
            Some("fragment") => match self.fragment(&wire)? {
                Assembled::Frame(frame) => frame,
                Assembled::Incomplete => {
                    return Ok(FrameOutcome::Skipped("fragment of an incomplete frame"));
                }
                // The frame is lost, the Agent still holds it: recover it like a gap, once. A
                // second failure while recovering is no transient fault (Desktop's own recovery
                // also gives up after retrying the same content).
                Assembled::Corrupt if self.resyncing => {
                    return Err(protocol(
                        "A V4 frame failed its checksum again while the conversation was resyncing",
                    ));
                }
                Assembled::Corrupt => {
                    self.resyncing = true;
                    return Ok(FrameOutcome::Gap("V4 fragment failed its checksum"));
                }
            },
            other => return Err(protocol(format!("V4 frame of unknown kind {other:?}"))),
        };
        self.logical(frame, recovery)
    }

    /// The frame that comes by the thousand, read without a tree of it: a complete frame of
    /// this subscription that continues from the last frame applied. Its deltas (text appends
    /// and text rows typed, the rest as trees), with the frame applied to the sequence; `None`
    /// (nothing changed) for anything else, which goes the general way
    /// ([`Subscription::frame`]), with its checks and errors.
    pub fn deltas<'a>(&mut self, params: &'a RawValue) -> Option<Vec<Delta<'a>>> {
        #[derive(Deserialize)]
        struct Wire<'a> {
            #[serde(rename = "wireVersion")]
            wire_version: u64,
            #[serde(borrow)]
            kind: Cow<'a, str>,
            #[serde(borrow, rename = "subscriptionId")]
            subscription_id: Cow<'a, str>,
            #[serde(default, borrow, rename = "deliveryKind")]
            delivery_kind: Option<&'a RawValue>,
            #[serde(borrow)]
            frame: &'a RawValue,
        }
        #[derive(Deserialize)]
        struct Frame<'a> {
            #[serde(rename = "fromSeq")]
            from_seq: u64,
            #[serde(rename = "toSeq")]
            to_seq: u64,
            #[serde(borrow)]
            payload: &'a RawValue,
        }
        #[derive(Deserialize)]
        struct Deltas<'a> {
            #[serde(borrow)]
            kind: Cow<'a, str>,
            #[serde(borrow)]
            deltas: Vec<&'a RawValue>,
        }
        let wire: Wire<'a> = object(params)?;
        if wire.wire_version != WIRE_VERSION
            || wire.kind != "complete"
            || Some(&*wire.subscription_id) != self.subscription_id.as_deref()
        {
            return None;
        }
        let frame: Frame<'a> = object(wire.frame)?;
        let last = self.seq?;
        if frame.to_seq <= last || frame.from_seq != last {
            return None;
        }
        let payload: Deltas<'a> = object(frame.payload)?;
        if payload.kind != "deltas" {
            return None;
        }
        let deltas = payload.deltas.into_iter().map(Delta::read).collect::<Option<Vec<_>>>()?;
        self.seq = Some(frame.to_seq);
        if raw_str(wire.delivery_kind).as_deref() == Some("recovery") {
            self.resyncing = false;
        }
        for delta in &deltas {
            if let Delta::Tree(delta) = delta {
                self.revised(delta);
            }
        }
        Some(deltas)
    }

    /// A state patch carries the revision the next guarded command names.
    fn revised(&mut self, delta: &Value) {
        if delta.get("op").and_then(Value::as_str) == Some("state.updated")
            && let Some(revision) = delta.pointer("/patch/revision").and_then(Value::as_u64)
        {
            self.revision = Some(revision);
        }
    }

    /// Fragments of one logical frame, reassembled in index order once all have come and checked
    /// as ZCode's own assembler does (3.15.1 `zcode-protocol-v4/wire-assembler.ts`): every
    /// fragment names the same count, size and checksum; the decoded parts, joined, have that
    /// size and that CRC-32.
    fn fragment(&mut self, wire: &Value) -> Result<Assembled, MapperError> {
        let id = wire
            .get("logicalFrameId")
            .and_then(Value::as_str)
            .ok_or_else(|| protocol("V4 fragment without id"))?;
        let number = |key: &str, what: &str| {
            wire.get(key)
                .and_then(Value::as_u64)
                .map(|n| n as usize)
                .ok_or_else(|| protocol(format!("V4 fragment without {what}")))
        };
        let index = number("fragmentIndex", "index")?;
        let count = number("fragmentCount", "count")?;
        let bytes = number("logicalBytes", "size")?;
        if count == 0
            || index >= count
            || count > MAX_FRAGMENTS
            || count > bytes
            || bytes > MAX_LOGICAL_BYTES
        {
            return Err(protocol("V4 fragment index out of range"));
        }
        let checksum = wire
            .get("checksum")
            .filter(|c| c.get("algorithm").and_then(Value::as_str) == Some("crc32"))
            .and_then(|c| c.get("value"))
            .and_then(Value::as_str)
            .filter(|v| {
                v.len() == 8 && v.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            })
            .ok_or_else(|| {
                protocol("V4 fragment without a crc32 checksum of 8 lowercase hex digits")
            })?;
        let data =
            crate::base64::decode(wire.get("dataBase64").and_then(Value::as_str).unwrap_or(""))
                .ok_or_else(|| protocol("V4 fragment data is not base64"))?;
        let assembly = self.fragments.entry(id.to_string()).or_insert_with(|| Assembly {
            parts: vec![None; count],
            bytes,
            checksum: checksum.to_string(),
        });
        if assembly.parts.len() != count || assembly.bytes != bytes || assembly.checksum != checksum
        {
            return Err(protocol(
                "V4 fragments of one frame disagree on their count, size or checksum",
            ));
        }
        match &assembly.parts[index] {
            Some(previous) if *previous != data => {
                return Err(protocol("V4 fragment repeated with other bytes"));
            }
            _ => assembly.parts[index] = Some(data),
        }
        if assembly.parts.iter().any(Option::is_none) {
            return Ok(Assembled::Incomplete);
        }
        let Some(assembly) = self.fragments.remove(id) else { return Ok(Assembled::Incomplete) };
        let whole: Vec<u8> = assembly.parts.into_iter().flatten().flatten().collect();
        if whole.len() != bytes {
            return Err(protocol("V4 frame reassembled to the wrong size"));
        }
        // The checksum covers exactly these bytes: the decoded fragments joined in index order,
        // before any UTF-8 or JSON decoding.
        if crate::crc32::hex(&whole) != assembly.checksum {
            return Ok(Assembled::Corrupt);
        }
        serde_json::from_slice(&whole)
            .map(Assembled::Frame)
            .map_err(|e| protocol(format!("V4 frame is not JSON: {e}")))
    }

    fn logical(&mut self, mut frame: Value, recovery: bool) -> Result<FrameOutcome, MapperError> {
        let from = frame
            .get("fromSeq")
            .and_then(Value::as_u64)
            .ok_or_else(|| protocol("V4 frame without fromSeq"))?;
        let to = frame
            .get("toSeq")
            .and_then(Value::as_u64)
            .ok_or_else(|| protocol("V4 frame without toSeq"))?;
        let payload =
            frame.get_mut("payload").ok_or_else(|| protocol("V4 frame without payload"))?;
        match payload.get("kind").and_then(Value::as_str) {
            Some("snapshot") => {
                let snapshot = payload
                    .get_mut("snapshot")
                    .map(Value::take)
                    .ok_or_else(|| protocol("V4 snapshot frame without snapshot"))?;
                self.seq = Some(to);
                self.resyncing = false;
                if let Some(epoch) = snapshot.get("logEpoch").and_then(Value::as_str) {
                    self.log_epoch = Some(epoch.to_string());
                }
                self.revision = snapshot.get("revision").and_then(Value::as_u64);
                Ok(FrameOutcome::Applied(Payload::Snapshot(snapshot)))
            }
            Some("deltas") => {
                let Some(last) = self.seq else {
                    return Ok(FrameOutcome::Skipped("deltas before the snapshot"));
                };
                if to <= last {
                    return Ok(FrameOutcome::Skipped("duplicate frame"));
                }
                if from != last {
                    if self.resyncing && recovery {
                        // Recovery continues from the base the resync named; anything else
                        // would leave a hole nobody can fill.
                        return Err(protocol(format!(
                            "V4 recovery frame starts at {from}, not at the resync base {last}"
                        )));
                    }
                    if self.resyncing {
                        return Ok(FrameOutcome::Skipped("frame past a gap, resync under way"));
                    }
                    self.resyncing = true;
                    return Ok(FrameOutcome::Gap("V4 sequence gap"));
                }
                let deltas = payload
                    .get_mut("deltas")
                    .and_then(Value::as_array_mut)
                    .map(std::mem::take)
                    .ok_or_else(|| protocol("V4 deltas frame without deltas"))?;
                self.seq = Some(to);
                if recovery {
                    self.resyncing = false;
                }
                for delta in &deltas {
                    self.revised(delta);
                }
                Ok(FrameOutcome::Applied(Payload::Deltas(deltas)))
            }
            other => Err(protocol(format!("V4 frame payload of unknown kind {other:?}"))),
        }
    }

    /// `v4/conversation/resync` params: from the last frame applied.
    pub fn resync_params(&self, session: &str) -> Value {
        let base = match (&self.log_epoch, self.seq) {
            (Some(epoch), Some(seq)) => json!({"logEpoch": epoch, "seq": seq}),
            _ => Value::Null,
        };
        json!({
            "subscriptionId": self.subscription_id,
            "base": base,
            "topic": format!("conversation/{session}"),
            "connectionId": self.connection_id,
        })
    }

    /// A `v4/command` envelope. The command id must be unique per attempt even across zcode-acp
    /// runs (ZCode deduplicates by it, persistently): the log epoch and sequence the session has
    /// reached, which only grow, plus a counter for commands issued at the same point.
    pub fn command(&mut self, session: &str, kind: &str, payload: Value, cas: bool) -> Value {
        self.commands += 1;
        let mut envelope = json!({
            "commandId": format!(
                "zcode-acp-{}-{}-{}",
                self.log_epoch.as_deref().unwrap_or("none"),
                self.seq.unwrap_or(0),
                self.commands
            ),
            "clientId": CLIENT_ID,
            "sessionId": session,
            "type": kind,
            "payload": payload,
            // Client clock, used by ZCode for telemetry only; the mapper has none.
            "issuedAt": 0,
        });
        if cas && let Some(revision) = self.revision {
            envelope["baseRevision"] = json!(revision);
        }
        envelope
    }
}

/// What a command acknowledgement says: accepted (with its result), or why not.
pub fn ack(result: &Value) -> Result<&Value, MapperError> {
    match result.get("status").and_then(Value::as_str) {
        Some("accepted") => Ok(result),
        Some(status) => {
            let reason = result.get("reasonCode").and_then(Value::as_str).unwrap_or("no reason");
            let message = result.get("message").and_then(Value::as_str).unwrap_or("");
            Err(crate::json::native(
                format!("ZCode did not accept the command ({status}: {reason}) {message}")
                    .trim_end()
                    .to_string(),
            ))
        }
        None => Err(protocol("v4/command reply has no status")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub() -> Subscription {
        let mut s = Subscription::new("s1");
        s.subscription_id = Some("sub-1".into());
        s
    }

    fn complete(frame: Value, delivery: &str) -> Value {
        json!({"wireVersion": 3, "kind": "complete", "deliveryKind": delivery, "logicalFrameId": "f", "logicalFrameOrdinal": 1, "topic": "conversation/s1", "subscriptionId": "sub-1", "frame": frame})
    }

    fn snapshot(to: u64) -> Value {
        complete(
            json!({"topic": "conversation/s1", "subscriptionId": "sub-1", "fromSeq": 0, "toSeq": to, "sentAt": 1,
            "payload": {"kind": "snapshot", "snapshot": {"logEpoch": "e1", "seq": to, "revision": 7, "meta": {"title": "T", "titleSource": "generated"}, "plan": null}}}),
            "initial",
        )
    }

    fn deltas(from: u64, to: u64, delivery: &str, patch: Value) -> Value {
        complete(
            json!({"topic": "conversation/s1", "subscriptionId": "sub-1", "fromSeq": from, "toSeq": to, "sentAt": 1,
            "payload": {"kind": "deltas", "deltas": [{"op": "state.updated", "patch": patch}]}}),
            delivery,
        )
    }

    fn applied_patch(outcome: FrameOutcome) -> Value {
        match outcome {
            FrameOutcome::Applied(Payload::Deltas(deltas)) => deltas[0]["patch"].clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_gap_starts_one_resync_and_recovery_frames_close_it() {
        let mut s = sub();
        let FrameOutcome::Applied(Payload::Snapshot(first)) = s.frame(snapshot(10)).unwrap() else {
            panic!()
        };
        assert_eq!(first["meta"]["title"], "T");
        assert_eq!(s.revision, Some(7));
        assert_eq!(
            applied_patch(s.frame(deltas(10, 11, "online", json!({"revision": 8}))).unwrap()),
            json!({"revision": 8})
        );
        assert_eq!(
            s.frame(deltas(10, 11, "online", json!({}))).unwrap(),
            FrameOutcome::Skipped("duplicate frame")
        );
        assert_eq!(
            s.frame(deltas(12, 13, "online", json!({}))).unwrap(),
            FrameOutcome::Gap("V4 sequence gap")
        );
        assert_eq!(s.resync_params("s1")["base"], json!({"logEpoch": "e1", "seq": 11}));
        assert_eq!(
            s.frame(deltas(13, 14, "online", json!({}))).unwrap(),
            FrameOutcome::Skipped("frame past a gap, resync under way")
        );
        let recovered = deltas(11, 14, "recovery", json!({"revision": 9, "plan": null}));
        assert_eq!(applied_patch(s.frame(recovered).unwrap())["revision"], 9);
        assert!(!s.resyncing);
        assert_eq!((s.seq, s.revision), (Some(14), Some(9)));
        assert!(matches!(
            s.frame(deltas(14, 15, "online", json!({}))).unwrap(),
            FrameOutcome::Applied(_)
        ));
        // A recovery that does not continue from the base would leave a hole: it is a break.
        assert_eq!(
            s.frame(deltas(17, 18, "online", json!({}))).unwrap(),
            FrameOutcome::Gap("V4 sequence gap")
        );
        assert!(s.frame(deltas(16, 18, "recovery", json!({}))).is_err());
    }

    fn fragments(text: &str, checksum: &str) -> Vec<Value> {
        let (a, b) = text.as_bytes().split_at(10);
        [a, b]
            .iter()
            .enumerate()
            .map(|(i, bytes)| json!({"wireVersion": 3, "kind": "fragment", "deliveryKind": "initial", "logicalFrameId": "L", "logicalFrameOrdinal": 1, "topic": "conversation/s1", "subscriptionId": "sub-1", "fragmentIndex": i, "fragmentCount": 2, "logicalBytes": text.len(), "checksum": {"algorithm": "crc32", "value": checksum}, "dataBase64": crate::base64::encode(bytes)}))
            .collect()
    }

    #[test]
    fn fragments_are_reassembled_and_checked() {
        let mut s = sub();
        let text = snapshot(3)["frame"].to_string();
        let parts = fragments(&text, &crate::crc32::hex(text.as_bytes()));
        assert_eq!(
            s.frame(parts[1].clone()).unwrap(),
            FrameOutcome::Skipped("fragment of an incomplete frame")
        );
        assert!(matches!(
            s.frame(parts[0].clone()).unwrap(),
            FrameOutcome::Applied(Payload::Snapshot(_))
        ));
        assert_eq!(s.seq, Some(3));
        assert!(s.frame(json!({"wireVersion": 2, "kind": "complete"})).is_err());
        let mut bad = parts[0].clone();
        bad["checksum"]["value"] = json!("ABCDEF01");
        assert!(s.frame(bad).is_err(), "a checksum that is not 8 lowercase hex digits");
        let mut other = parts[0].clone();
        other["checksum"]["algorithm"] = json!("sha256");
        assert!(s.frame(other).is_err());
    }

    #[test]
    fn a_checksum_mismatch_is_resynced_once_then_breaks() {
        let mut s = sub();
        s.frame(snapshot(3)).unwrap();
        let text = deltas(3, 4, "online", json!({"revision": 8}))["frame"].to_string();
        // Same length, one byte changed: only the checksum can tell.
        let corrupt = text.replacen("8", "9", 1);
        let parts = fragments(&corrupt, &crate::crc32::hex(text.as_bytes()));
        s.frame(parts[0].clone()).unwrap();
        assert_eq!(
            s.frame(parts[1].clone()).unwrap(),
            FrameOutcome::Gap("V4 fragment failed its checksum")
        );
        assert!(s.resyncing);
        assert_eq!(s.revision, Some(7), "nothing of the corrupt frame was applied");
        assert_eq!(s.resync_params("s1")["base"]["seq"], 3);
        let mut again = fragments(&corrupt, &crate::crc32::hex(text.as_bytes()));
        for part in &mut again {
            part["logicalFrameId"] = json!("L2");
            part["deliveryKind"] = json!("recovery");
        }
        s.frame(again[0].clone()).unwrap();
        assert!(s.frame(again[1].clone()).is_err(), "a second failure while recovering breaks");
    }

    fn raw(value: &Value) -> Box<RawValue> {
        RawValue::from_string(value.to_string()).unwrap()
    }

    #[test]
    fn frames_in_sequence_are_read_without_a_tree_and_anything_else_is_left_alone() {
        let mut s = sub();
        let append = json!({"op": "row.delta", "rowId": 4, "path": "text", "append": "hi"});
        // Before the snapshot nothing is taken; the general way says why.
        assert!(s.deltas(&raw(&deltas_frame(0, 1, json!([append])))).is_none());
        s.frame(snapshot(3)).unwrap();
        let text_row = json!({"op": "row.upserted", "row": {"rowId": 4, "turnId": "t", "kind": "reasoning", "text": "hi", "state": "complete"}});
        let header = json!({"op": "row.upserted", "row": {"rowId": 3, "turnId": "t", "kind": "turnHeader", "state": "running"}});
        let patch = json!({"op": "state.updated", "patch": {"revision": 9}});
        let wire = raw(&deltas_frame(3, 4, json!([append, text_row, header, patch])));
        let read = s.deltas(&wire).unwrap();
        let [Delta::Append(appended), Delta::TextRow(row), Delta::Tree(tree), Delta::Tree(_)] =
            &read[..]
        else {
            panic!("{read:?}")
        };
        assert_eq!((appended.row_id, &*appended.path, &*appended.append), (4, "text", "hi"));
        assert_eq!(
            (row.row_id, &*row.kind, &*row.turn_id, &*row.text),
            (4, "reasoning", "t", "hi")
        );
        assert_eq!(tree["row"]["kind"], "turnHeader");
        assert_eq!((s.seq, s.revision), (Some(4), Some(9)));
        for other in [
            deltas_frame(3, 4, json!([append])), // a duplicate
            deltas_frame(5, 6, json!([append])), // past a gap
            deltas_frame(4, 5, json!([[1, 2]])), // a delta that is not an object
            snapshot(5),
        ] {
            assert!(s.deltas(&raw(&other)).is_none(), "{other}");
            assert_eq!(s.seq, Some(4), "nothing changed for {other}");
        }
        let mut other_subscription = deltas_frame(4, 5, json!([append]));
        other_subscription["subscriptionId"] = json!("sub-0");
        assert!(s.deltas(&raw(&other_subscription)).is_none());
    }

    fn deltas_frame(from: u64, to: u64, deltas: Value) -> Value {
        complete(
            json!({"topic": "conversation/s1", "subscriptionId": "sub-1", "fromSeq": from, "toSeq": to, "sentAt": 1,
            "payload": {"kind": "deltas", "deltas": deltas}}),
            "online",
        )
    }

    #[test]
    fn command_ids_grow_with_the_log() {
        let mut s = sub();
        s.frame(snapshot(10)).unwrap();
        let a = s.command("s1", "stop", json!({}), false);
        let b = s.command("s1", "switchCollaborationMode", json!({"mode": "plan"}), true);
        assert_eq!(a["commandId"], "zcode-acp-e1-10-1");
        assert_eq!(b["commandId"], "zcode-acp-e1-10-2");
        assert_eq!(b["baseRevision"], 7);
        assert!(a.get("baseRevision").is_none());
        assert!(ack(&json!({"status": "accepted"})).is_ok());
        assert_eq!(
            ack(&json!({"status": "stale", "reasonCode": "guard.revision"})).unwrap_err().message,
            "ZCode did not accept the command (stale: guard.revision)"
        );
    }
}
