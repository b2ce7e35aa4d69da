//! The V4 side of one session: the conversation subscription's frames (snapshot, deltas, a
//! sequence gap and its resync), and `v4/command` envelopes.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use zcode_contract::MapperError;

use crate::json::protocol;

/// The wire version the 3.15.1 frames carry (`ZCODE_PROTOCOL_V4_WIRE_VERSION`).
pub const WIRE_VERSION: u64 = 3;
pub const CLIENT_ID: &str = "zcode-acp";

/// What a frame changed that ACP shows.
#[derive(Debug, Default, PartialEq)]
pub struct Changes {
    pub plan: Option<Value>,
    pub title: Option<String>,
    pub usage: Option<(u64, u64)>,
}

/// What to do with one `v4/conversation/frame`.
#[derive(Debug, PartialEq)]
pub enum FrameOutcome {
    Applied(Changes),
    /// A duplicate, a fragment still incomplete, or a frame of an older subscription.
    Skipped(&'static str),
    /// Frames were lost: resync from the last frame applied.
    Gap,
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
    fragments: BTreeMap<String, Vec<Option<Vec<u8>>>>,
    commands: u64,
}

impl Subscription {
    pub fn new(session: &str) -> Self {
        Self { connection_id: format!("zcode-acp-{session}"), ..Self::default() }
    }

    pub fn active(&self) -> bool {
        self.subscription_id.is_some()
    }

    /// A frame notification's params.
    pub fn frame(&mut self, wire: &Value) -> Result<FrameOutcome, MapperError> {
        if wire.get("wireVersion").and_then(Value::as_u64) != Some(WIRE_VERSION) {
            return Err(protocol(format!(
                "V4 frame of an unknown wire version: {}",
                wire.get("wireVersion").unwrap_or(&Value::Null)
            )));
        }
        if wire.get("subscriptionId").and_then(Value::as_str) != self.subscription_id.as_deref() {
            return Ok(FrameOutcome::Skipped("frame of another subscription"));
        }
        let frame = match wire.get("kind").and_then(Value::as_str) {
            Some("complete") => wire
                .get("frame")
                .cloned()
                .ok_or_else(|| protocol("V4 complete frame without `frame`"))?,
            Some("fragment") => match self.fragment(wire)? {
                Some(frame) => frame,
                None => return Ok(FrameOutcome::Skipped("fragment of an incomplete frame")),
            },
            other => return Err(protocol(format!("V4 frame of unknown kind {other:?}"))),
        };
        let recovery = wire.get("deliveryKind").and_then(Value::as_str) == Some("recovery");
        self.logical(&frame, recovery)
    }

    /// Fragments of one logical frame, reassembled in index order once all have come.
    fn fragment(&mut self, wire: &Value) -> Result<Option<Value>, MapperError> {
        let id = wire
            .get("logicalFrameId")
            .and_then(Value::as_str)
            .ok_or_else(|| protocol("V4 fragment without id"))?;
        let index = wire
            .get("fragmentIndex")
            .and_then(Value::as_u64)
            .ok_or_else(|| protocol("V4 fragment without index"))? as usize;
        let count = wire
            .get("fragmentCount")
            .and_then(Value::as_u64)
            .ok_or_else(|| protocol("V4 fragment without count"))? as usize;
        let bytes = wire
            .get("logicalBytes")
            .and_then(Value::as_u64)
            .ok_or_else(|| protocol("V4 fragment without size"))? as usize;
        if count == 0 || index >= count || count > 4096 {
            return Err(protocol("V4 fragment index out of range"));
        }
        let data =
            crate::base64::decode(wire.get("dataBase64").and_then(Value::as_str).unwrap_or(""))
                .ok_or_else(|| protocol("V4 fragment data is not base64"))?;
        let parts = self.fragments.entry(id.to_string()).or_insert_with(|| vec![None; count]);
        if parts.len() != count {
            return Err(protocol("V4 fragments of one frame disagree on their count"));
        }
        parts[index] = Some(data);
        if parts.iter().any(Option::is_none) {
            return Ok(None);
        }
        let parts = self.fragments.remove(id).unwrap_or_default();
        let whole: Vec<u8> = parts.into_iter().flatten().flatten().collect();
        if whole.len() != bytes {
            return Err(protocol("V4 frame reassembled to the wrong size"));
        }
        serde_json::from_slice(&whole)
            .map(Some)
            .map_err(|e| protocol(format!("V4 frame is not JSON: {e}")))
    }

    fn logical(&mut self, frame: &Value, recovery: bool) -> Result<FrameOutcome, MapperError> {
        let from = frame
            .get("fromSeq")
            .and_then(Value::as_u64)
            .ok_or_else(|| protocol("V4 frame without fromSeq"))?;
        let to = frame
            .get("toSeq")
            .and_then(Value::as_u64)
            .ok_or_else(|| protocol("V4 frame without toSeq"))?;
        let payload = frame.get("payload").ok_or_else(|| protocol("V4 frame without payload"))?;
        match payload.get("kind").and_then(Value::as_str) {
            Some("snapshot") => {
                let snapshot = payload
                    .get("snapshot")
                    .ok_or_else(|| protocol("V4 snapshot frame without snapshot"))?;
                self.seq = Some(to);
                self.resyncing = false;
                if let Some(epoch) = snapshot.get("logEpoch").and_then(Value::as_str) {
                    self.log_epoch = Some(epoch.to_string());
                }
                self.revision = snapshot.get("revision").and_then(Value::as_u64);
                Ok(FrameOutcome::Applied(changes(snapshot)))
            }
            Some("deltas") => {
                let Some(last) = self.seq else {
                    return Ok(FrameOutcome::Skipped("deltas before the snapshot"));
                };
                if to <= last {
                    return Ok(FrameOutcome::Skipped("duplicate frame"));
                }
                if from != last {
                    if self.resyncing && !recovery {
                        return Ok(FrameOutcome::Skipped("frame past a gap, resync under way"));
                    }
                    self.resyncing = true;
                    return Ok(FrameOutcome::Gap);
                }
                self.seq = Some(to);
                if recovery {
                    self.resyncing = false;
                }
                let mut out = Changes::default();
                for delta in payload.get("deltas").and_then(Value::as_array).into_iter().flatten() {
                    if delta.get("op").and_then(Value::as_str) == Some("state.updated")
                        && let Some(patch) = delta.get("patch")
                    {
                        if let Some(revision) = patch.get("revision").and_then(Value::as_u64) {
                            self.revision = Some(revision);
                        }
                        let next = changes(patch);
                        out.plan = next.plan.or(out.plan);
                        out.title = next.title.or(out.title);
                        out.usage = next.usage.or(out.usage);
                    }
                }
                Ok(FrameOutcome::Applied(out))
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

/// The parts of a snapshot or a state patch that ACP shows.
fn changes(state: &Value) -> Changes {
    let plan = state.get("plan").map(|plan| {
        let entries: Vec<Value> = plan
            .get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|item| {
                let status = match item.get("status").and_then(Value::as_str) {
                    Some("inProgress") => "in_progress",
                    Some("completed") => "completed",
                    _ => "pending",
                };
                json!({"content": item.get("content").and_then(Value::as_str).unwrap_or(""), "priority": "medium", "status": status})
            })
            .collect();
        json!({"sessionUpdate": "plan", "entries": entries})
    });
    let title = state
        .pointer("/meta/title")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let usage = state.pointer("/usage/contextWindow").and_then(|w| {
        Some((w.get("usedTokens")?.as_f64()? as u64, w.get("maxTokens")?.as_f64()? as u64))
    });
    Changes { plan, title, usage }
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

    #[test]
    fn a_gap_starts_one_resync_and_recovery_frames_close_it() {
        let mut s = sub();
        assert!(
            matches!(s.frame(&snapshot(10)).unwrap(), FrameOutcome::Applied(c) if c.title.as_deref() == Some("T"))
        );
        assert_eq!(s.revision, Some(7));
        assert!(matches!(
            s.frame(&deltas(10, 11, "online", json!({"revision": 8}))).unwrap(),
            FrameOutcome::Applied(_)
        ));
        assert_eq!(
            s.frame(&deltas(10, 11, "online", json!({}))).unwrap(),
            FrameOutcome::Skipped("duplicate frame")
        );
        assert_eq!(s.frame(&deltas(12, 13, "online", json!({}))).unwrap(), FrameOutcome::Gap);
        assert_eq!(s.resync_params("s1")["base"], json!({"logEpoch": "e1", "seq": 11}));
        assert_eq!(
            s.frame(&deltas(13, 14, "online", json!({}))).unwrap(),
            FrameOutcome::Skipped("frame past a gap, resync under way")
        );
        let recovered = deltas(
            11,
            14,
            "recovery",
            json!({"revision": 9, "plan": {"items": [{"id": "1", "content": "Do it", "status": "inProgress"}], "updatedAt": 1}}),
        );
        let FrameOutcome::Applied(changes) = s.frame(&recovered).unwrap() else { panic!() };
        assert_eq!(changes.plan.unwrap()["entries"][0]["status"], "in_progress");
        assert!(!s.resyncing);
        assert_eq!((s.seq, s.revision), (Some(14), Some(9)));
        assert!(matches!(
            s.frame(&deltas(14, 15, "online", json!({}))).unwrap(),
            FrameOutcome::Applied(_)
        ));
    }

    #[test]
    fn fragments_are_reassembled_and_checked() {
        let mut s = sub();
        let text = snapshot(3)["frame"].to_string();
        let (a, b) = text.as_bytes().split_at(10);
        let part = |i: u64, bytes: &[u8]| json!({"wireVersion": 3, "kind": "fragment", "deliveryKind": "initial", "logicalFrameId": "L", "logicalFrameOrdinal": 1, "topic": "conversation/s1", "subscriptionId": "sub-1", "fragmentIndex": i, "fragmentCount": 2, "logicalBytes": text.len(), "checksum": {"algorithm": "crc32", "value": "00000000"}, "dataBase64": crate::base64::encode(bytes)});
        assert_eq!(
            s.frame(&part(1, b)).unwrap(),
            FrameOutcome::Skipped("fragment of an incomplete frame")
        );
        assert!(matches!(s.frame(&part(0, a)).unwrap(), FrameOutcome::Applied(_)));
        assert_eq!(s.seq, Some(3));
        assert!(s.frame(&json!({"wireVersion": 2, "kind": "complete"})).is_err());
    }

    #[test]
    fn command_ids_grow_with_the_log() {
        let mut s = sub();
        s.frame(&snapshot(10)).unwrap();
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
