//! The V4 side of one session: the conversation subscription's frames (snapshot, deltas, a
//! sequence gap and its resync) and `v4/command` envelopes, on the V4 protocol of `zcode_v4`.
//!
//! This mapper reads frames leniently (a recording's frames are read as they came: only what
//! the mapping needs is checked), resyncs from the position reached and drops repeats
//! (`zcode_v4::sequence`); a checksum failure is resynced once, anything else it cannot read
//! breaks the turn.

use serde_json::{Value, json};
use zcode_contract::MapperError;
use zcode_mapper_sdk::json::protocol;
use zcode_v4::codec::{Base64, is_crc32_hex};
use zcode_v4::command::Command;
use zcode_v4::fragments::{self, Fragment, Limits, Problem};
use zcode_v4::sequence::{self, Order};
use zcode_v4::stream::{self, Delta, Deltas, WireMembers};
use zcode_v4::wire::WIRE_VERSION;

pub use zcode_v4::wire::Payload;

/// Bounds on what one fragmented frame may make the mapper hold: ZCode's own logical-frame limit
/// of 16 MiB (3.15.1 `conversation-topic-publisher.ts`); the fragment count only bounds memory,
/// and this mapper allows four times ZCode's 1024 (`PROTOCOL_V4_LIMITS`).
const LIMITS: Limits =
    Limits { max_fragments: 4096, max_logical_bytes: Limits::PROTOCOL.max_logical_bytes };

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

pub struct Subscription {
    pub connection_id: String,
    pub subscription_id: Option<String>,
    pub log_epoch: Option<String>,
    /// The `toSeq` of the last frame applied (`None` until the first snapshot).
    pub seq: Option<u64>,
    pub revision: Option<u64>,
    /// A resync is under way: frames past a gap wait for its recovery frames.
    pub resyncing: bool,
    /// Fragments of several logical frames may interleave, each read leniently.
    fragments: fragments::Assembler<()>,
    commands: u64,
}

impl Default for Subscription {
    fn default() -> Self {
        Self {
            connection_id: String::new(),
            subscription_id: None,
            log_epoch: None,
            seq: None,
            revision: None,
            resyncing: false,
            fragments: fragments::Assembler::new(LIMITS, Base64::Lenient, true)
                .eliding(zcode_v4::wire::TEXT_ROWS),
            commands: 0,
        }
    }
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
        self.fragments.reset();
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

    /// The frame that comes by the thousand, read without a tree of it
    /// (`zcode_v4::stream`): a complete frame of this subscription that continues from the
    /// last frame applied, its wire members read in the caller's pass over the line. Its
    /// deltas, with the frame applied to the sequence; `None` (nothing changed) for anything
    /// else, which goes the general way ([`Subscription::frame`]), with its checks and errors.
    pub fn deltas<'a>(&mut self, wire: WireMembers<'a>) -> Option<Deltas<'a>> {
        let frame = stream::read_wire_deltas(wire, self.subscription_id.as_deref()?, self.seq?)?;
        Some(self.continued(frame))
    }

    /// [`Subscription::deltas`] of a whole notification line, read in one pass
    /// (`zcode_v4::stream::read_line_deltas`); `None` for any other line.
    pub fn line_deltas<'a>(&mut self, line: &'a str) -> Option<Deltas<'a>> {
        let frame = stream::read_line_deltas(line, self.subscription_id.as_deref()?, self.seq?)?;
        Some(self.continued(frame))
    }

    /// [`Subscription::line_deltas`] of the line `text` starts with, if it is a streamed
    /// delta's line as ZCode writes one (`zcode_v4::stream::read_leading_line_deltas`), and
    /// that line's length.
    pub fn leading_deltas<'a>(&mut self, text: &'a str) -> Option<(Deltas<'a>, usize)> {
        let (frame, len) =
            stream::read_leading_line_deltas(text, self.subscription_id.as_deref()?, self.seq?)?;
        Some((self.continued(frame), len))
    }

    /// A frame read by `zcode_v4::stream`, applied to the sequence: its deltas.
    fn continued<'a>(&mut self, frame: stream::DeltaFrame<'a>) -> Deltas<'a> {
        self.seq = Some(frame.to_seq);
        if frame.recovery {
            self.resyncing = false;
        }
        for delta in frame.deltas.iter() {
            if let Delta::Tree(delta) = delta {
                self.revised(delta);
            }
        }
        frame.deltas
    }

    /// A state patch carries the revision the next guarded command names.
    fn revised(&mut self, delta: &Value) {
        if delta.get("op").and_then(Value::as_str) == Some("state.updated")
            && let Some(revision) = delta.pointer("/patch/revision").and_then(Value::as_u64)
        {
            self.revision = Some(revision);
        }
    }

    /// A fragment, reassembled with the others of its logical frame once all have come
    /// (`zcode_v4::fragments`: any order, repeats compared, size and CRC-32 checked).
    fn fragment(&mut self, wire: &Value) -> Result<Assembled, MapperError> {
        let id = wire
            .get("logicalFrameId")
            .and_then(Value::as_str)
            .ok_or_else(|| protocol("V4 fragment without id"))?;
        let number = |key: &str, what: &str| {
            wire.get(key)
                .and_then(Value::as_u64)
                .ok_or_else(|| protocol(format!("V4 fragment without {what}")))
        };
        let index = number("fragmentIndex", "index")?;
        let count = number("fragmentCount", "count")?;
        let bytes = number("logicalBytes", "size")?;
        let out_of_range = || protocol("V4 fragment index out of range");
        if count == 0
            || index >= count
            || count > LIMITS.max_fragments
            || count > bytes
            || bytes > LIMITS.max_logical_bytes
        {
            return Err(out_of_range());
        }
        let checksum = wire
            .get("checksum")
            .filter(|c| c.get("algorithm").and_then(Value::as_str) == Some("crc32"))
            .and_then(|c| c.get("value"))
            .and_then(Value::as_str)
            .filter(|v| is_crc32_hex(v))
            .ok_or_else(|| {
                protocol("V4 fragment without a crc32 checksum of 8 lowercase hex digits")
            })?;
        let data = wire.get("dataBase64").and_then(Value::as_str).unwrap_or("");
        let fragment =
            Fragment { frame_id: id, meta: (), index, count, logical_bytes: bytes, checksum, data };
        let whole = match self.fragments.accept(fragment) {
            Ok(Some(((), whole))) => whole,
            Ok(None) => return Ok(Assembled::Incomplete),
            Err(Problem::Checksum) => return Ok(Assembled::Corrupt),
            Err(problem) => {
                return Err(match problem {
                    Problem::NotBase64 => protocol("V4 fragment data is not base64"),
                    Problem::Mismatch => protocol(
                        "V4 fragments of one frame disagree on their count, size or checksum",
                    ),
                    Problem::Conflict { .. } => protocol("V4 fragment repeated with other bytes"),
                    Problem::TooManyBytes | Problem::TooFewBytes => {
                        protocol("V4 frame reassembled to the wrong size")
                    }
                    Problem::NotJsonText => {
                        protocol("V4 frame holds a long string that is not JSON text")
                    }
                    Problem::Inconsistent | Problem::TooLarge | Problem::Checksum => out_of_range(),
                });
            }
        };
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
                match sequence::order(last, from, to) {
                    Order::Next => {}
                    Order::Empty | Order::Repeat => {
                        return Ok(FrameOutcome::Skipped("duplicate frame"));
                    }
                    // Recovery continues from the base the resync named; anything else would
                    // leave a hole nobody can fill.
                    Order::Gap if self.resyncing && recovery => {
                        return Err(protocol(format!(
                            "V4 recovery frame starts at {from}, not at the resync base {last}"
                        )));
                    }
                    Order::Gap if self.resyncing => {
                        return Ok(FrameOutcome::Skipped("frame past a gap, resync under way"));
                    }
                    Order::Gap => {
                        self.resyncing = true;
                        return Ok(FrameOutcome::Gap("V4 sequence gap"));
                    }
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
        json!({
            "subscriptionId": self.subscription_id,
            "base": sequence::resync_base(self.log_epoch.as_deref(), self.seq),
            "topic": format!("conversation/{session}"),
            "connectionId": self.connection_id,
        })
    }

    /// A `v4/command` envelope (CAS commands at the last revision seen), sent as native request
    /// `request`. The command id must be unique per attempt even across zcode-acp runs (ZCode
    /// deduplicates by it, persistently): the log epoch and sequence the session has reached,
    /// which only grow, plus a counter for commands issued at the same point. Before the
    /// subscription's first frame there is no sequence yet (the frame follows the ACK, and
    /// replies and events are not ordered with each other), and a reopened session counts its
    /// commands from 1 again: the request id, which grows for the whole connection, stands in
    /// for the sequence then (F-39). `issuedAt` is 0: the client clock, used by ZCode for
    /// telemetry only; the mapper has none.
    pub fn command(
        &mut self,
        session: &str,
        kind: &'static str,
        payload: Value,
        request: u64,
    ) -> Value {
        self.commands += 1;
        let point = match self.seq {
            Some(seq) => seq.to_string(),
            None => format!("r{request}"),
        };
        let id = format!(
            "zcode-acp-{}-{point}-{}",
            self.log_epoch.as_deref().unwrap_or("none"),
            self.commands
        );
        Command::new(kind, payload, id).envelope(session, self.revision, json!(0))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;
    use zcode_mapper_sdk::elide::Text;

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
            .map(|(i, bytes)| json!({"wireVersion": 3, "kind": "fragment", "deliveryKind": "initial", "logicalFrameId": "L", "logicalFrameOrdinal": 1, "topic": "conversation/s1", "subscriptionId": "sub-1", "fragmentIndex": i, "fragmentCount": 2, "logicalBytes": text.len(), "checksum": {"algorithm": "crc32", "value": checksum}, "dataBase64": zcode_v4::codec::encode_base64(bytes)}))
            .collect()
    }

    #[test]
    fn fragments_are_reassembled_and_checked() {
        let mut s = sub();
        let text = snapshot(3)["frame"].to_string();
        let parts = fragments(&text, &zcode_v4::codec::crc32_hex(text.as_bytes()));
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
        let parts = fragments(&corrupt, &zcode_v4::codec::crc32_hex(text.as_bytes()));
        s.frame(parts[0].clone()).unwrap();
        assert_eq!(
            s.frame(parts[1].clone()).unwrap(),
            FrameOutcome::Gap("V4 fragment failed its checksum")
        );
        assert!(s.resyncing);
        assert_eq!(s.revision, Some(7), "nothing of the corrupt frame was applied");
        assert_eq!(s.resync_params("s1")["base"]["seq"], 3);
        let mut again = fragments(&corrupt, &zcode_v4::codec::crc32_hex(text.as_bytes()));
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

    fn members(raw: &RawValue) -> WireMembers<'_> {
        stream::object(raw).unwrap()
    }

    #[test]
    fn frames_in_sequence_are_read_without_a_tree_and_anything_else_is_left_alone() {
        let mut s = sub();
        let append = json!({"op": "row.delta", "rowId": 4, "path": "text", "append": "hi"});
        // Before the snapshot nothing is taken; the general way says why.
        assert!(s.deltas(members(&raw(&deltas_frame(0, 1, json!([append]))))).is_none());
        s.frame(snapshot(3)).unwrap();
        let text_row = json!({"op": "row.upserted", "row": {"rowId": 4, "turnId": "t", "kind": "reasoning", "text": "hi", "state": "complete"}});
        let header = json!({"op": "row.upserted", "row": {"rowId": 3, "turnId": "t", "kind": "turnHeader", "state": "running"}});
        let patch = json!({"op": "state.updated", "patch": {"revision": 9}});
        let wire = raw(&deltas_frame(3, 4, json!([append, text_row, header, patch])));
        let read = s.deltas(members(&wire)).unwrap();
        let [Delta::Append(appended), Delta::TextRow(row), Delta::Tree(tree), Delta::Tree(_)] =
            &read[..]
        else {
            panic!("{read:?}")
        };
        assert_eq!((appended.row_id, &*appended.path, &*appended.append), (4, "text", "hi"));
        assert_eq!(
            (row.row_id, &*row.kind, &*row.turn_id, &row.text),
            (4, "reasoning", "t", &Text::Whole("hi".into()))
        );
        assert_eq!(tree["row"]["kind"], "turnHeader");
        assert_eq!((s.seq, s.revision), (Some(4), Some(9)));
        for other in [
            deltas_frame(3, 4, json!([append])), // a duplicate
            deltas_frame(5, 6, json!([append])), // past a gap
            deltas_frame(4, 5, json!([[1, 2]])), // a delta that is not an object
            snapshot(5),
        ] {
            assert!(s.deltas(members(&raw(&other))).is_none(), "{other}");
            assert_eq!(s.seq, Some(4), "nothing changed for {other}");
        }
        let mut other_subscription = deltas_frame(4, 5, json!([append]));
        other_subscription["subscriptionId"] = json!("sub-0");
        assert!(s.deltas(members(&raw(&other_subscription))).is_none());
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
        let a = s.command("s1", "stop", json!({}), 40);
        let b = s.command("s1", "switchCollaborationMode", json!({"mode": "plan"}), 41);
        assert_eq!(a["commandId"], "zcode-acp-e1-10-1");
        assert_eq!(b["commandId"], "zcode-acp-e1-10-2");
        assert_eq!(b["baseRevision"], 7);
        assert!(a.get("baseRevision").is_none());
    }

    #[test]
    fn a_command_before_the_first_frame_is_told_apart_by_its_request() {
        // A session reopened at the same log, whose first frame has not come yet, counts its
        // commands from 1 again: the request ids keep the two prompts apart (F-39).
        let first = Subscription::new("s1").command("s1", "sendText", json!({}), 12);
        let again = Subscription::new("s1").command("s1", "sendText", json!({}), 31);
        assert_eq!(first["commandId"], "zcode-acp-none-r12-1");
        assert_ne!(first["commandId"], again["commandId"]);
    }
}
