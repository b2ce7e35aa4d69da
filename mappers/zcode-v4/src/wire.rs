//! The physical V4 wire frame an `onDynamicConversationFrame` event carries, and the
//! reassembly of fragmented logical frames (ZCode 3.15.1 `zcode-protocol-v4/wire.ts`,
//! `wire-reassembly.ts`; `PROTOCOL_V4_LIMITS` in `core.ts`).
//!
//! A complete frame carries the logical frame itself; a large logical frame travels as
//! fragments of its UTF-8 JSON bytes, base64-encoded, with the byte count and a CRC-32 of the
//! whole. Reassembly ([`crate::fragments`]) accepts fragments in any order and identical
//! repeats, as ZCode's own assembler does; this reader takes one logical frame at a time, within
//! ZCode's own limits, and only canonical base64.
//!
//! Errors are of two kinds. A [`Fault`] is damage in transit (a bad checksum, base64, length
//! or fragment set): the remedy is a resync, which sends the state again. A
//! [`WireError::Break`] is a frame this mapper does not understand (a field, kind or version it
//! does not know): sending the same content again would not help, so it is a protocol break.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::codec::{Base64, is_crc32_hex};
use crate::fragments::{self, Elision, Fragment, Limits, Problem};
use crate::schema::Fields;
use zcode_mapper_sdk::elide::Path;

/// The wire version the 3.15.1 frames carry (`ZCODE_PROTOCOL_V4_WIRE_VERSION`).
pub const WIRE_VERSION: u64 = 3;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Damaged in transit: resync.
    Fault(String),
    /// Not understood: a protocol break.
    Break(String),
}

fn fault<T>(message: impl Into<String>) -> Result<T, WireError> {
    Err(WireError::Fault(message.into()))
}

fn broken(problem: zcode_contract::MapperError) -> WireError {
    WireError::Break(problem.message)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    Initial,
    Online,
    Recovery,
}

impl Delivery {
    /// The delivery a `deliveryKind` names.
    pub fn of(kind: &str) -> Option<Delivery> {
        match kind {
            "initial" => Some(Delivery::Initial),
            "online" => Some(Delivery::Online),
            "recovery" => Some(Delivery::Recovery),
            _ => None,
        }
    }
}

/// What every physical frame says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub delivery: Delivery,
    pub logical_frame_id: String,
    pub ordinal: u64,
    pub topic: String,
    pub subscription_id: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Wire<'a> {
    Complete {
        envelope: Envelope,
        frame: Value,
    },
    Fragment {
        envelope: Envelope,
        index: u64,
        count: u64,
        logical_bytes: u64,
        checksum: String,
        /// Borrowed from the event's text when read by [`fragment`].
        data: Cow<'a, str>,
    },
}

impl Wire<'_> {
    pub fn envelope(&self) -> &Envelope {
        match self {
            Wire::Complete { envelope, .. } | Wire::Fragment { envelope, .. } => envelope,
        }
    }
}

impl Envelope {
    /// The topic and subscription the frame claims.
    pub fn route(&self) -> (&str, &str) {
        (&self.topic, &self.subscription_id)
    }
}

/// The topic and subscription a frame claims, read before anything else: frames of other
/// conversations share the route (ZCode fans conversation frames out per workspace) and are
/// not this session's to judge.
pub fn route_of(value: &Value) -> Option<(&str, &str)> {
    Some((value.get("topic")?.as_str()?, value.get("subscriptionId")?.as_str()?))
}

pub fn parse(value: Value) -> Result<Wire<'static>, WireError> {
    let fields = Fields::native(&value, "V4 wire frame").map_err(broken)?;
    let version = fields.u64("wireVersion").map_err(broken)?;
    if version != WIRE_VERSION {
        return Err(WireError::Break(format!("V4 wire version {version} is not {WIRE_VERSION}")));
    }
    let kind = fields.one_of("kind", &["complete", "fragment"]).map_err(broken)?;
    let delivery_kind =
        fields.one_of("deliveryKind", &["initial", "online", "recovery"]).map_err(broken)?;
    let delivery = Delivery::of(delivery_kind).expect("one of the three");
    let envelope = Envelope {
        delivery,
        logical_frame_id: fields.non_empty_str("logicalFrameId").map_err(broken)?.to_string(),
        ordinal: fields.u64("logicalFrameOrdinal").map_err(broken)?,
        topic: fields.non_empty_str("topic").map_err(broken)?.to_string(),
        subscription_id: fields.non_empty_str("subscriptionId").map_err(broken)?.to_string(),
    };
    if envelope.ordinal == 0 {
        return Err(WireError::Break("V4 wire frame: logicalFrameOrdinal must be positive".into()));
    }
    const COMMON: [&str; 7] = [
        "wireVersion",
        "kind",
        "deliveryKind",
        "logicalFrameId",
        "logicalFrameOrdinal",
        "topic",
        "subscriptionId",
    ];
    if kind == "complete" {
        fields.only(&[&COMMON[..], &["frame"]].concat()).map_err(broken)?;
        let Value::Object(mut map) = value else { unreachable!("checked above") };
        let frame = map
            .remove("frame")
            .ok_or_else(|| WireError::Break("V4 wire frame: missing field `frame`".into()))?;
        return Ok(Wire::Complete { envelope, frame });
    }
    fields
        .only(
            &[
                &COMMON[..],
                &["fragmentIndex", "fragmentCount", "logicalBytes", "checksum", "dataBase64"],
            ]
            .concat(),
        )
        .map_err(broken)?;
    let checksum = fields.object("checksum", "V4 fragment checksum").map_err(broken)?;
    checksum.only(&["algorithm", "value"]).map_err(broken)?;
    checksum.one_of("algorithm", &["crc32"]).map_err(broken)?;
    let value_hex = checksum.str("value").map_err(broken)?;
    if !is_crc32_hex(value_hex) {
        return Err(WireError::Break(
            "V4 fragment checksum: `value` is not 8 lowercase hex digits".into(),
        ));
    }
    let index = fields.u64("fragmentIndex").map_err(broken)?;
    let count = fields.u64("fragmentCount").map_err(broken)?;
    let logical_bytes = fields.u64("logicalBytes").map_err(broken)?;
    let checksum = value_hex.to_string();
    fields.str("dataBase64").map_err(broken)?;
    // Checked above: the data is moved out of the frame, not copied (F-20).
    let Value::Object(mut map) = value else { unreachable!("checked above") };
    let Some(Value::String(data)) = map.remove("dataBase64") else { unreachable!("checked") };
    Ok(Wire::Fragment { index, count, logical_bytes, checksum, data: data.into(), envelope })
}

/// A fragment as [`parse`] accepts it, read from `json` in place: its data, about 0.8 MB of
/// base64 in each fragment of a turn's last frame, is borrowed rather than copied into a tree
/// (issue 27). `None` for anything else, including a fragment with anything unusual about it
/// (an escape in its data, a member twice): [`parse`] reads those, and says what is wrong.
pub fn fragment(json: &str) -> Option<Wire<'_>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Frame<'a> {
        wire_version: u64,
        kind: &'a str,
        delivery_kind: &'a str,
        logical_frame_id: &'a str,
        logical_frame_ordinal: u64,
        topic: &'a str,
        subscription_id: &'a str,
        fragment_index: u64,
        fragment_count: u64,
        logical_bytes: u64,
        #[serde(borrow)]
        checksum: Checksum<'a>,
        data_base64: &'a str,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Checksum<'a> {
        algorithm: &'a str,
        value: &'a str,
    }

    let frame: Frame<'_> = serde_json::from_str(json).ok()?;
    let delivery = Delivery::of(frame.delivery_kind)?;
    let usual = frame.wire_version == WIRE_VERSION
        && frame.kind == "fragment"
        && frame.logical_frame_ordinal > 0
        && [frame.logical_frame_id, frame.topic, frame.subscription_id]
            .iter()
            .all(|s| !s.is_empty())
        && frame.checksum.algorithm == "crc32"
        && is_crc32_hex(frame.checksum.value);
    usual.then(|| Wire::Fragment {
        envelope: Envelope {
            delivery,
            logical_frame_id: frame.logical_frame_id.to_string(),
            ordinal: frame.logical_frame_ordinal,
            topic: frame.topic.to_string(),
            subscription_id: frame.subscription_id.to_string(),
        },
        index: frame.fragment_index,
        count: frame.fragment_count,
        logical_bytes: frame.logical_bytes,
        checksum: frame.checksum.value.to_string(),
        data: Cow::Borrowed(frame.data_base64),
    })
}

/// Reassembles one logical frame at a time, its problems faults (a resync sends it again).
pub struct Assembler {
    fragments: fragments::Assembler<Envelope>,
}

/// What a fragmented logical frame need not hold: a text row's text, which a turn's last
/// frame upserts whole. The session checks it against what it streamed, and shows any rest
/// from the tail kept (`acp::track`). Only after `kind` named a text row: another client's
/// prompt (`userInput`) is shown whole.
pub const TEXT_ROWS: Elision = Elision {
    paths: &[Path {
        members: &["payload", "deltas", "row", "text"],
        when: Some(("kind", &["assistantText", "reasoning"])),
    }],
    min: 256 * 1024,
    tail: 64 * 1024,
};

impl Default for Assembler {
    fn default() -> Self {
        let fragments = fragments::Assembler::new(Limits::PROTOCOL, Base64::Canonical, false);
        Self { fragments: fragments.eliding(TEXT_ROWS) }
    }
}

impl Assembler {
    /// Drops a partial assembly (after a fault, or when a resync starts over).
    pub fn reset(&mut self) {
        self.fragments.reset();
    }

    pub fn in_progress(&self) -> bool {
        self.fragments.in_progress()
    }

    /// Whether a complete frame may come now: not between the fragments of another.
    pub fn check_complete(&self) -> Result<(), WireError> {
        if self.in_progress() {
            return fault("a complete frame arrived while fragments were being reassembled");
        }
        Ok(())
    }

    /// The logical frame a physical frame completes, if any.
    pub fn accept(&mut self, wire: Wire<'_>) -> Result<Option<(Envelope, Value)>, WireError> {
        let (envelope, index, count, logical_bytes, checksum, data) = match wire {
            Wire::Complete { envelope, frame } => {
                self.check_complete()?;
                return Ok(Some((envelope, frame)));
            }
            Wire::Fragment { envelope, index, count, logical_bytes, checksum, data } => {
                (envelope, index, count, logical_bytes, checksum, data)
            }
        };
        let frame_id = envelope.logical_frame_id.clone();
        let fragment = Fragment {
            frame_id: &frame_id,
            meta: envelope,
            index,
            count,
            logical_bytes,
            checksum: &checksum,
            data: &data,
        };
        let (envelope, logical) = match self.fragments.accept(fragment) {
            Ok(Some(done)) => done,
            Ok(None) => return Ok(None),
            Err(problem) => {
                return fault(match problem {
                    Problem::Inconsistent => format!(
                        "fragment {index} of {count} for {logical_bytes} bytes is inconsistent"
                    ),
                    Problem::TooLarge => {
                        format!("a logical frame of {logical_bytes} bytes exceeds 16 MiB")
                    }
                    Problem::Mismatch => {
                        "fragments of different logical frames are interleaved".into()
                    }
                    Problem::NotBase64 => "a fragment's data is not canonical base64".into(),
                    Problem::Conflict { index } => {
                        format!("fragment {index} arrived twice with different bytes")
                    }
                    Problem::TooManyBytes => {
                        "fragments hold more bytes than their logical frame".into()
                    }
                    Problem::TooFewBytes => {
                        "fragments hold fewer bytes than their logical frame".into()
                    }
                    Problem::Checksum => "a reassembled logical frame fails its CRC-32".into(),
                    Problem::NotJsonText => {
                        "a reassembled logical frame holds a string that is not JSON text".into()
                    }
                });
            }
        };
        let Ok(text) = std::str::from_utf8(&logical) else {
            return fault("a reassembled logical frame is not UTF-8");
        };
        match serde_json::from_str(text) {
            Ok(frame) => Ok(Some((envelope, frame))),
            Err(_) => fault("a reassembled logical frame is not JSON"),
        }
    }
}

/// The logical frame (`createTopicFrameSchema`): `(fromSeq, toSeq]` of the conversation log.
#[derive(Clone, Debug, PartialEq)]
pub struct LogicalFrame {
    pub from_seq: u64,
    pub to_seq: u64,
    /// The CLI's clock (ms): the only time the mapper knows.
    pub sent_at: f64,
    pub payload: Payload,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Payload {
    Snapshot(Value),
    Deltas(Vec<Value>),
}

/// Reads a logical frame; its topic and subscription must be the envelope's (a mismatch is
/// ZCode's `frameAssemblyMetadataMismatch`, a fault).
pub fn logical(envelope: &Envelope, frame: Value) -> Result<LogicalFrame, WireError> {
    let fields = Fields::native(&frame, "V4 logical frame").map_err(broken)?;
    fields
        .only(&[
            "topic",
            "subscriptionId",
            "fromSeq",
            "toSeq",
            "sentAt",
            "payload",
            "ttft",
            "ttftRelated",
        ])
        .map_err(broken)?;
    if fields.str("topic").map_err(broken)? != envelope.topic
        || fields.str("subscriptionId").map_err(broken)? != envelope.subscription_id
    {
        return fault("a logical frame names another topic or subscription than its envelope");
    }
    let from_seq = fields.u64("fromSeq").map_err(broken)?;
    let to_seq = fields.u64("toSeq").map_err(broken)?;
    let sent_at = fields.f64("sentAt").map_err(broken)?;
    if to_seq < from_seq {
        return fault(format!("a logical frame runs backwards ({from_seq} to {to_seq})"));
    }
    let payload = fields.object("payload", "V4 frame payload").map_err(broken)?;
    let snapshot = match payload.one_of("kind", &["snapshot", "deltas"]).map_err(broken)? {
        "snapshot" => {
            payload.only(&["kind", "snapshot"]).map_err(broken)?;
            payload.value("snapshot").map_err(broken)?;
            true
        }
        _ => {
            payload.only(&["kind", "deltas"]).map_err(broken)?;
            payload.array("deltas").map_err(broken)?;
            false
        }
    };
    // Checked above: the payload is moved out of the frame, not copied (F-20).
    let mut frame = frame;
    let payload = &mut frame["payload"];
    let payload = if snapshot {
        Payload::Snapshot(payload["snapshot"].take())
    } else {
        let Value::Array(deltas) = payload["deltas"].take() else { unreachable!("checked") };
        Payload::Deltas(deltas)
    };
    Ok(LogicalFrame { from_seq, to_seq, sent_at, payload })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::codec::{crc32_hex, encode_base64};

    fn envelope_json(kind: &str) -> Value {
        json!({"wireVersion": 3, "kind": kind, "deliveryKind": "online", "logicalFrameId": "f1",
               "logicalFrameOrdinal": 4, "topic": "conversation/s", "subscriptionId": "sub"})
    }

    fn fragment_values(logical: &[u8], pieces: usize) -> Vec<Value> {
        let size = logical.len().div_ceil(pieces);
        logical
            .chunks(size)
            .enumerate()
            .map(|(index, chunk)| {
                let mut value = envelope_json("fragment");
                value["fragmentIndex"] = json!(index);
                value["fragmentCount"] = json!(logical.chunks(size).count());
                value["logicalBytes"] = json!(logical.len());
                value["checksum"] = json!({"algorithm": "crc32", "value": crc32_hex(logical)});
                value["dataBase64"] = json!(encode_base64(chunk));
                value
            })
            .collect()
    }

    fn fragments(logical: &[u8], pieces: usize) -> Vec<Wire<'static>> {
        fragment_values(logical, pieces).into_iter().map(|value| parse(value).unwrap()).collect()
    }

    /// Read in place, a fragment is what `parse` makes of it, its data borrowed; anything
    /// `parse` would judge (or could read only as a tree) is left to it.
    #[test]
    fn a_fragment_is_read_in_place_as_parse_reads_it() {
        for value in fragment_values(&logical_text(), 3) {
            let json = value.to_string();
            let read = fragment(&json).expect("read in place");
            assert!(matches!(&read, Wire::Fragment { data: Cow::Borrowed(_), .. }));
            assert_eq!(read, parse(value.clone()).unwrap());
            let changed = |change: &dyn Fn(&mut Value)| {
                let mut value = value.clone();
                change(&mut value);
                value.to_string()
            };
            let escaped = json.replacen("\"dataBase64\":\"", "\"dataBase64\":\"\\u0041", 1);
            assert!(parse(serde_json::from_str(&escaped).unwrap()).is_ok());
            for unusual in [
                escaped,
                json.replacen('{', "{\"wireVersion\":3,", 1),
                changed(&|v| v["extra"] = json!(1)),
                changed(&|v| v["kind"] = json!("complete")),
                changed(&|v| v["wireVersion"] = json!(2)),
                changed(&|v| v["deliveryKind"] = json!("later")),
                changed(&|v| v["logicalFrameOrdinal"] = json!(0)),
                changed(&|v| v["topic"] = json!("")),
                changed(&|v| v["checksum"]["algorithm"] = json!("md5")),
                changed(&|v| v["checksum"]["value"] = json!("ABCDEF01")),
                changed(&|v| v["fragmentIndex"] = json!(-1)),
            ] {
                assert_eq!(fragment(&unusual), None, "{unusual}");
            }
        }
    }

    fn logical_text() -> Vec<u8> {
        json!({"topic": "conversation/s", "subscriptionId": "sub", "fromSeq": 1, "toSeq": 2, "sentAt": 5,
               "payload": {"kind": "deltas", "deltas": [{"op": "row.delta", "rowId": 1, "path": "text", "append": "héllo wörld"}]}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn reassembles_fragments_in_any_order_with_repeats() {
        let text = logical_text();
        let mut parts = fragments(&text, 5);
        parts.reverse();
        let repeat = parts[1].clone();
        parts.insert(2, repeat);
        let mut assembler = Assembler::default();
        let mut done = None;
        for part in parts {
            if let Some(found) = assembler.accept(part).unwrap() {
                assert!(done.is_none(), "completed once");
                done = Some(found);
            }
        }
        let (envelope, frame) = done.unwrap();
        let frame = logical(&envelope, frame).unwrap();
        assert_eq!((frame.from_seq, frame.to_seq), (1, 2));
        assert!(!assembler.in_progress());
    }

    /// F-20: fragments are decoded into the frame in place; a repeat of one already placed is
    /// still compared, and the frame is still whole after fragments out of order.
    #[test]
    fn repeats_of_placed_fragments_are_compared() {
        let text = logical_text();
        let parts = fragments(&text, 4);
        let mut assembler = Assembler::default();
        assert_eq!(assembler.accept(parts[0].clone()), Ok(None));
        assert_eq!(assembler.accept(parts[0].clone()), Ok(None), "an identical repeat");
        assert_eq!(assembler.accept(parts[2].clone()), Ok(None), "early");
        let Wire::Fragment { envelope, index, count, logical_bytes, checksum, .. } =
            parts[0].clone()
        else {
            unreachable!()
        };
        let other = Wire::Fragment {
            envelope,
            index,
            count,
            logical_bytes,
            checksum,
            data: encode_base64(b"zz").into(),
        };
        assert!(matches!(assembler.accept(other), Err(WireError::Fault(_))), "changed bytes");
        let mut assembler = Assembler::default();
        for index in [1, 3, 0, 2] {
            let done = assembler.accept(parts[index].clone()).unwrap();
            assert_eq!(done.is_some(), index == 2, "fragment {index}");
        }
    }

    #[test]
    fn a_wrong_checksum_or_broken_fragment_set_is_a_fault() {
        let text = logical_text();
        let mut parts = fragments(&text, 3);
        if let Wire::Fragment { checksum, .. } = &mut parts[0] {
            *checksum = "00000000".into();
        }
        let mut assembler = Assembler::default();
        assert_eq!(assembler.accept(parts.remove(0)), Ok(None));
        assert!(
            matches!(assembler.accept(parts.remove(0)), Err(WireError::Fault(_))),
            "interleaved checksums"
        );

        let mut parts = fragments(&text, 3);
        for part in &mut parts {
            if let Wire::Fragment { checksum, .. } = part {
                *checksum = "00000000".into();
            }
        }
        let mut assembler = Assembler::default();
        let results: Vec<_> = parts.into_iter().map(|p| assembler.accept(p)).collect();
        assert_eq!(
            results[2],
            Err(WireError::Fault("a reassembled logical frame fails its CRC-32".into()))
        );

        let mut assembler = Assembler::default();
        let mut parts = fragments(&text, 2);
        assembler.accept(parts.remove(0)).unwrap();
        let complete = parse({
            let mut v = envelope_json("complete");
            v["frame"] = json!({});
            v
        })
        .unwrap();
        assert!(matches!(assembler.accept(complete), Err(WireError::Fault(_))));

        let mut bad = envelope_json("fragment");
        bad["fragmentIndex"] = json!(0);
        bad["fragmentCount"] = json!(1);
        bad["logicalBytes"] = json!(2);
        bad["checksum"] = json!({"algorithm": "crc32", "value": crc32_hex(b"hi")});
        bad["dataBase64"] = json!("aGk");
        assert_eq!(
            Assembler::default().accept(parse(bad).unwrap()),
            Err(WireError::Fault("a fragment's data is not canonical base64".into()))
        );
    }

    #[test]
    fn unknown_shapes_are_breaks() {
        let mut other = envelope_json("complete");
        other["frame"] = json!({});
        other["extra"] = json!(1);
        assert_eq!(
            parse(other).unwrap_err(),
            WireError::Break("V4 wire frame: unknown field `extra`".into())
        );
        let mut version = envelope_json("complete");
        version["wireVersion"] = json!(4);
        assert_eq!(
            parse(version).unwrap_err(),
            WireError::Break("V4 wire version 4 is not 3".into())
        );
        let kind = json!({"wireVersion": 3, "kind": "delta"});
        assert!(matches!(parse(kind), Err(WireError::Break(_))));
        let mut checksum = envelope_json("fragment");
        for (k, v) in [
            ("fragmentIndex", json!(0)),
            ("fragmentCount", json!(1)),
            ("logicalBytes", json!(1)),
            ("dataBase64", json!("YQ==")),
        ] {
            checksum[k] = v;
        }
        checksum["checksum"] = json!({"algorithm": "crc32", "value": "ABCDEF01"});
        assert!(matches!(parse(checksum), Err(WireError::Break(_))));
    }

    #[test]
    fn reads_logical_frames_strictly() {
        let envelope = match parse({
            let mut v = envelope_json("complete");
            v["frame"] = json!({});
            v
        })
        .unwrap()
        {
            Wire::Complete { envelope, .. } => envelope,
            _ => unreachable!(),
        };
        let frame = json!({"topic": "conversation/s", "subscriptionId": "sub", "fromSeq": 0, "toSeq": 3, "sentAt": 1,
                           "payload": {"kind": "snapshot", "snapshot": {"x": 1}}});
        assert_eq!(logical(&envelope, frame).unwrap().payload, Payload::Snapshot(json!({"x": 1})));
        let other = json!({"topic": "conversation/t", "subscriptionId": "sub", "fromSeq": 0, "toSeq": 0, "sentAt": 1,
                           "payload": {"kind": "deltas", "deltas": []}});
        assert!(matches!(logical(&envelope, other), Err(WireError::Fault(_))));
        let backwards = json!({"topic": "conversation/s", "subscriptionId": "sub", "fromSeq": 5, "toSeq": 4, "sentAt": 1,
                               "payload": {"kind": "deltas", "deltas": []}});
        assert!(matches!(logical(&envelope, backwards), Err(WireError::Fault(_))));
        let unknown = json!({"topic": "conversation/s", "subscriptionId": "sub", "fromSeq": 0, "toSeq": 0, "sentAt": 1,
                             "payload": {"kind": "patch"}});
        assert!(matches!(logical(&envelope, unknown), Err(WireError::Break(_))));
    }

    /// A turn's last frame upserts its whole text again, fragmented when long. Reassembled, a
    /// text row's text is elided (after its `kind`), a prompt's is not; the tracker still checks
    /// the elided text against what it streamed and shows what it adds from its tail.
    #[test]
    fn a_long_text_row_is_elided_while_reassembled_and_still_checked() {
        use crate::acp::track::Tracker;
        use crate::rows;
        use zcode_mapper_sdk::elide::{ELIDED, Text};

        let streamed = "lorem ipsum ".repeat(30_000);
        let framed = |text: &str| {
            let rows = json!([
                {"op": "row.upserted", "row": {"rowId": 2, "turnId": "t", "createdAt": 1, "createdAtSeq": 1, "kind": "assistantText", "text": text, "state": "complete"}},
                {"op": "row.appended", "row": {"rowId": 3, "turnId": "t", "createdAt": 1, "createdAtSeq": 1, "kind": "userInput", "origin": "realUser", "text": streamed}},
            ]);
            let logical = json!({"topic": "conversation/s", "subscriptionId": "sub", "fromSeq": 1, "toSeq": 2,
                                 "sentAt": 5, "payload": {"kind": "deltas", "deltas": rows}});
            let mut assembler = Assembler::default();
            let parts = fragments(logical.to_string().as_bytes(), 12);
            let mut done = None;
            for part in parts {
                done = assembler.accept(part).unwrap();
            }
            let (_, mut frame) = done.unwrap();
            let mut deltas = frame["payload"]["deltas"].take();
            (deltas[0]["row"].take(), deltas[1]["row"].take())
        };
        let (text_row, prompt) = framed(&format!("{streamed}the end"));
        assert_eq!(text_row["text"][ELIDED]["bytes"], streamed.len() + 7);
        assert_eq!(prompt["text"], streamed.as_str(), "a prompt's text is whole");
        assert!(rows::parse(&text_row).is_err(), "a row of history is never elided");

        // A tracker that streamed the text, then the whole row upserted.
        let upserted = |text: &str| {
            let mut tracker = Tracker::default();
            let empty = json!({"rowId": 2, "turnId": "t", "createdAt": 1, "createdAtSeq": 1, "kind": "assistantText", "text": "", "state": "streaming"});
            tracker.appended(&rows::parse(&empty).unwrap(), "/w").unwrap();
            tracker.delta(2, "text", &streamed).unwrap();
            let row = rows::parse_owned(framed(text).0).unwrap();
            let out = tracker.upserted(&row, "/w")?;
            let texts = out.updates.into_iter().map(crate::acp::track::Update::into_text);
            Ok::<_, zcode_contract::MapperError>(texts.collect::<Vec<_>>())
        };
        let rewritten = streamed.replacen("lorem", "Lorem", 1);
        assert!(upserted(&rewritten).unwrap_err().message.contains("rewrote"));
        let unkept = upserted(&format!("{streamed}{}", "x".repeat(100_000))).unwrap_err();
        assert!(unkept.message.contains("100000 bytes of text it had not streamed"), "{unkept:?}");
        let shown = upserted(&format!("{streamed}the end")).unwrap();
        assert_eq!(shown.len(), 1);
        let shown: Value = serde_json::from_str(&shown[0]).unwrap();
        assert_eq!(shown["content"]["text"], "the end");
        assert!(upserted(&streamed).unwrap().is_empty());
        let upsert = |row: Value| rows::parse_owned(row).unwrap();
        assert!(matches!(
            upsert(framed("short").0).body,
            rows::RowBody::AssistantText { text: Text::Whole(_), .. }
        ));
    }
}
