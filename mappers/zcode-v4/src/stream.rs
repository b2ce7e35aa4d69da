//! The frame that comes by the thousand, read without a tree of it: a complete deltas frame,
//! its text appends (`row.delta`) and text rows (`assistantText`, `reasoning`) borrowed from
//! the frame's text, any other delta as a tree. A turn streams one `row.delta` per text delta,
//! and its last frames carry its whole text (megabytes): neither is parsed into a tree to be
//! classified (F-24).
//!
//! Anything unusual is not read here ([`read_deltas`] answers `None`): the caller's general
//! reader, with its checks and errors, takes it. Each read takes what its caller's reader
//! would: Desktop's reads ([`read_deltas`], [`read_line_deltas`]) look at the members Desktop
//! reads, and the Services feed's ([`read_checked_frame`]) checks every member, as its reader
//! checks them.

use std::borrow::Cow;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::wire::{Delivery, Envelope, WIRE_VERSION};
use zcode_mapper_sdk::elide::Text;

mod compact;

pub use compact::{FRAME_HEAD, WireHead, frame_len_as_written, read_wire_head};

/// `raw` read as `T` when it is a JSON object: a derived struct also reads an array (by
/// position), which no ZCode frame is. `None` when it cannot be read so.
pub fn object<'a, T: Deserialize<'a>>(raw: &'a RawValue) -> Option<T> {
    if !raw.get().starts_with('{') {
        return None;
    }
    serde_json::from_str(raw.get()).ok()
}

/// `T` read only from a JSON object, as [`object`] reads one from text: a derived struct also
/// reads an array (by position), which no ZCode frame is.
pub(crate) struct MapOnly<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MapOnly<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Object<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Object<T> {
            type Value = T;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(Object(PhantomData)).map(MapOnly)
    }
}

/// A list read an element at a time, each from its own text as it is reached
/// ([`FromRaw`]): the deltas of a frame.
struct Each<T>(Vec<T>);

/// An element of a list [`Each`] reads; an error fails the list's read.
trait FromRaw<'a>: Sized {
    fn from_raw(raw: &'a RawValue) -> Result<Self, String>;
}

impl<'de: 'a, 'a, T: FromRaw<'a>> Deserialize<'de> for Each<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct List<'a, T>(PhantomData<(&'a (), T)>);
        impl<'de: 'a, 'a, T: FromRaw<'a>> Visitor<'de> for List<'a, T> {
            type Value = Each<T>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of deltas")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(1));
                while let Some(raw) = seq.next_element::<&'de RawValue>()? {
                    items.push(T::from_raw(raw).map_err(A::Error::custom)?);
                }
                Ok(Each(items))
            }
        }
        deserializer.deserialize_seq(List(PhantomData))
    }
}

/// A delta that is not an object fails the frame's read, as the frame is then not one
/// [`read_deltas`] takes.
impl<'a> FromRaw<'a> for Delta<'a> {
    fn from_raw(raw: &'a RawValue) -> Result<Self, String> {
        Delta::read(raw).ok_or_else(|| "not a delta".into())
    }
}

/// The string a raw member holds, borrowed unless it has escapes; `None` for any other value.
pub fn raw_str(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    #[derive(Deserialize)]
    struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
    let text = raw?.get();
    if !text.starts_with('"') {
        return None;
    }
    // A raw value is one valid JSON value: quoted, without a backslash, it is its own text. A
    // streamed delta's dozen routing members are taken so, not each run through a parser.
    if let Some(inner) = text[1..].strip_suffix('"')
        && !inner.contains('\\')
    {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<Text<'_>>(text).ok().map(|text| text.0)
}

/// One delta of a frame read by [`read_deltas`].
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

/// A text row (`assistantText`, `reasoning`), read without a tree. Its text may have been
/// elided by a framer that reads long lines as they come (`zcode_mapper_sdk::elide`).
#[derive(Debug, Deserialize)]
pub struct TextRow<'a> {
    #[serde(rename = "rowId")]
    pub row_id: u64,
    #[serde(borrow)]
    pub kind: Cow<'a, str>,
    #[serde(borrow, rename = "turnId")]
    pub turn_id: Cow<'a, str>,
    #[serde(borrow)]
    pub text: Text<'a>,
}

/// A `row.delta`: text appended to a row, read without a tree; one with any other member is
/// left to the caller's reader.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
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

/// A complete deltas frame that continues the log, read by [`read_deltas`].
#[derive(Debug)]
pub struct DeltaFrame<'a> {
    pub to_seq: u64,
    /// `deliveryKind` is `recovery`.
    pub recovery: bool,
    pub deltas: Deltas<'a>,
}

/// A frame's deltas. A streamed line holds one, which is kept in place: a list of its own
/// was an allocation and a free per delta in the guest (issue 27). Read as a slice, and shown
/// as one: how the deltas are held is no difference between two reads.
pub enum Deltas<'a> {
    One(Delta<'a>),
    Many(Vec<Delta<'a>>),
}

impl<'a> Deltas<'a> {
    /// None yet.
    pub const fn new() -> Self {
        Deltas::Many(Vec::new())
    }

    pub fn push(&mut self, delta: Delta<'a>) {
        match self {
            Deltas::Many(list) if list.is_empty() => *self = Deltas::One(delta),
            Deltas::Many(list) => list.push(delta),
            Deltas::One(_) => {
                let Deltas::One(first) = std::mem::take(self) else { unreachable!() };
                *self = Deltas::Many(vec![first, delta]);
            }
        }
    }
}

impl<'a> std::ops::Deref for Deltas<'a> {
    type Target = [Delta<'a>];

    fn deref(&self) -> &[Delta<'a>] {
        match self {
            Deltas::One(delta) => std::slice::from_ref(delta),
            Deltas::Many(list) => list,
        }
    }
}

impl Default for Deltas<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Deltas<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> From<Vec<Delta<'a>>> for Deltas<'a> {
    fn from(list: Vec<Delta<'a>>) -> Self {
        Deltas::Many(list)
    }
}

/// The members of a wire frame [`read_wire_deltas`] looks at, as they came: read from the
/// frame's text by [`read_deltas`], or by a caller in its own pass over the line the frame came
/// in (the frame then is not scanned once more for them).
#[derive(Debug, Default, Deserialize)]
pub struct WireMembers<'a> {
    #[serde(default, borrow, rename = "wireVersion")]
    pub wire_version: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub kind: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "subscriptionId")]
    pub subscription_id: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "deliveryKind")]
    pub delivery_kind: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub frame: Option<&'a RawValue>,
}

/// The frame notification `params` (the wire frame) when it is a complete frame of the wire
/// version, of subscription `subscription_id`, whose deltas continue the position `seq`
/// ([`crate::sequence::Order::Next`]) and are all objects; `None` for anything else.
pub fn read_deltas<'a>(
    params: &'a RawValue,
    subscription_id: &str,
    seq: u64,
) -> Option<DeltaFrame<'a>> {
    read_wire_deltas(object(params)?, subscription_id, seq)
}

/// The wire frame's `frame`, read in one pass with its payload and deltas: each is read once
/// here, not captured and read again (issue 27).
#[derive(Deserialize)]
struct Frame<'a> {
    #[serde(rename = "fromSeq")]
    from_seq: u64,
    #[serde(rename = "toSeq")]
    to_seq: u64,
    #[serde(borrow)]
    payload: MapOnly<FramePayload<'a>>,
}

#[derive(Deserialize)]
struct FramePayload<'a> {
    #[serde(borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    deltas: Each<Delta<'a>>,
}

impl<'a> Frame<'a> {
    /// The frame's deltas when they continue the position `seq`.
    fn continuing(self, seq: u64, recovery: bool) -> Option<DeltaFrame<'a>> {
        let MapOnly(payload) = self.payload;
        if self.to_seq <= seq || self.from_seq != seq || payload.kind != "deltas" {
            return None;
        }
        Some(DeltaFrame { to_seq: self.to_seq, recovery, deltas: payload.deltas.0.into() })
    }
}

/// [`read_deltas`] of a wire frame's members already read. A member named twice is for the
/// caller to refuse, as [`read_deltas`] does (its read of the members fails).
pub fn read_wire_deltas<'a>(
    wire: WireMembers<'a>,
    subscription_id: &str,
    seq: u64,
) -> Option<DeltaFrame<'a>> {
    let wire_version = serde_json::from_str::<u64>(wire.wire_version?.get()).ok()?;
    if wire_version != WIRE_VERSION
        || raw_str(wire.kind)? != "complete"
        || raw_str(wire.subscription_id)? != subscription_id
    {
        return None;
    }
    let frame: Frame<'a> = object(wire.frame?)?;
    let recovery = raw_str(wire.delivery_kind).as_deref() == Some("recovery");
    frame.continuing(seq, recovery)
}

/// [`read_deltas`] of a whole `v4/conversation/frame` notification line, its envelope, the
/// wire frame and the frame read in one pass: a streamed delta's line is scanned once here,
/// not once for its envelope and again for its frame (issue 27). `None` for any other line,
/// and for any line whose read is not plainly this one's (a member named twice, a value of
/// another type, an `id`, `result` or `error` beside the method): the caller's general reader
/// takes it, and answers as it always did.
///
/// A line as ZCode writes one is read without serde's readers first ([`compact`]): that read
/// takes a line only as this one would, and costs a fraction of it.
pub fn read_line_deltas<'a>(
    line: &'a str,
    subscription_id: &str,
    seq: u64,
) -> Option<DeltaFrame<'a>> {
    compact::read_line(line, subscription_id, seq)
        .or_else(|| read_line_with_serde(line, subscription_id, seq))
}

/// The streamed delta's line `text` starts with, read as [`compact`] reads one, and that line's
/// length: the text ends there or goes on after a newline. `None` for anything else, which
/// the caller then finds the end of and reads as a line ([`read_line_deltas`]).
pub fn read_leading_line_deltas<'a>(
    text: &'a str,
    subscription_id: &str,
    seq: u64,
) -> Option<(DeltaFrame<'a>, usize)> {
    compact::read_leading(text, subscription_id, seq)
}

/// [`read_line_deltas`] with serde's readers only.
fn read_line_with_serde<'a>(
    line: &'a str,
    subscription_id: &str,
    seq: u64,
) -> Option<DeltaFrame<'a>> {
    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(deserialize_with = "frame_method")]
        #[allow(dead_code)] // Read only to be checked.
        method: (),
        #[serde(borrow)]
        params: MapOnly<Wire<'a>>,
        // Any of these, `null` too, makes the line a request or a reply.
        #[serde(default, deserialize_with = "present")]
        id: Option<IgnoredAny>,
        #[serde(default, deserialize_with = "present")]
        result: Option<IgnoredAny>,
        #[serde(default, deserialize_with = "present")]
        error: Option<IgnoredAny>,
    }
    #[derive(Deserialize)]
    struct Wire<'a> {
        #[serde(rename = "wireVersion")]
        wire_version: u64,
        #[serde(borrow)]
        kind: Cow<'a, str>,
        #[serde(borrow, rename = "subscriptionId")]
        subscription_id: Cow<'a, str>,
        #[serde(default, borrow, rename = "deliveryKind")]
        delivery_kind: Option<Cow<'a, str>>,
        #[serde(borrow)]
        frame: MapOnly<Frame<'a>>,
        // Read only so that a topic named twice is no frame of this read (the caller's
        // general reader decides).
        #[serde(default)]
        #[allow(dead_code)]
        topic: Option<IgnoredAny>,
    }
    fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<IgnoredAny>, D::Error> {
        IgnoredAny::deserialize(d).map(Some)
    }
    /// Stops the read at once on any other method: a legacy event's line costs its first
    /// member, not a scan.
    fn frame_method<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
        let method = Cow::<'de, str>::deserialize(d)?;
        (method == "v4/conversation/frame").then_some(()).ok_or_else(|| D::Error::custom("other"))
    }
    if !line.starts_with('{') {
        return None;
    }
    let MapOnly(line) = serde_json::from_str::<MapOnly<Line<'a>>>(line).ok()?;
    if line.id.is_some() || line.result.is_some() || line.error.is_some() {
        return None;
    }
    let MapOnly(wire) = line.params;
    if wire.wire_version != WIRE_VERSION
        || wire.kind != "complete"
        || wire.subscription_id != subscription_id
    {
        return None;
    }
    let MapOnly(frame) = wire.frame;
    frame.continuing(seq, wire.delivery_kind.as_deref() == Some("recovery"))
}

/// A complete deltas frame as the Services Server sends one while a turn streams, read from
/// its text with no tree of it: its envelope, its logical frame's sequence and clock, and its
/// deltas, each a `row.delta` borrowed from the text ([`TextAppend`]) or, any other, a tree.
#[derive(Debug)]
pub struct CheckedFrame<'a> {
    pub envelope: Envelope,
    pub from_seq: u64,
    pub to_seq: u64,
    pub sent_at: f64,
    pub deltas: Vec<CheckedDelta<'a>>,
}

#[derive(Debug)]
pub enum CheckedDelta<'a> {
    Append(TextAppend<'a>),
    Tree(Value),
}

/// A `row.delta` with exactly its members is borrowed; any other delta is a tree.
impl<'a> FromRaw<'a> for CheckedDelta<'a> {
    fn from_raw(raw: &'a RawValue) -> Result<Self, String> {
        match object::<TextAppend<'a>>(raw).filter(|d| d.op == "row.delta") {
            Some(append) => Ok(CheckedDelta::Append(append)),
            None => {
                serde_json::from_str(raw.get()).map(CheckedDelta::Tree).map_err(|e| e.to_string())
            }
        }
    }
}

/// [`read_deltas`] for a reader that checks every member (`wire::parse`, then `wire::logical`,
/// as the Services feed reads a frame): a complete deltas frame that those two accept as it
/// is, read in one pass with no tree of it (issue 27). Each delta that is a `row.delta` with
/// exactly its members is borrowed; any other is read as a tree, for the caller to check.
/// `None` for any other frame, and for any frame whose read is not plainly theirs (a member
/// named twice or unknown, a number written as a float, a logical frame that does not match
/// its envelope or runs backwards): the caller's reader takes it, and says what is wrong.
///
/// A frame as ZCode writes one is read without serde's readers first ([`compact`]): that read
/// takes a frame only as this one would, and costs a fraction of it.
pub fn read_checked_frame(json: &str) -> Option<CheckedFrame<'_>> {
    compact::read_checked(json).or_else(|| read_checked_with_serde(json))
}

/// [`read_checked_frame`] with serde's readers only.
fn read_checked_with_serde(json: &str) -> Option<CheckedFrame<'_>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Wire<'a> {
        wire_version: u64,
        #[serde(borrow)]
        kind: Cow<'a, str>,
        #[serde(borrow)]
        delivery_kind: Cow<'a, str>,
        #[serde(borrow)]
        logical_frame_id: Cow<'a, str>,
        logical_frame_ordinal: u64,
        #[serde(borrow)]
        topic: Cow<'a, str>,
        #[serde(borrow)]
        subscription_id: Cow<'a, str>,
        #[serde(borrow)]
        frame: MapOnly<Logical<'a>>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Logical<'a> {
        #[serde(borrow)]
        topic: Cow<'a, str>,
        #[serde(borrow)]
        subscription_id: Cow<'a, str>,
        from_seq: u64,
        to_seq: u64,
        sent_at: f64,
        #[serde(borrow)]
        payload: MapOnly<Payload<'a>>,
        // Allowed and not read, as `wire::logical` allows them.
        #[serde(default)]
        #[allow(dead_code)]
        ttft: Option<IgnoredAny>,
        #[serde(default)]
        #[allow(dead_code)]
        ttft_related: Option<IgnoredAny>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Payload<'a> {
        #[serde(borrow)]
        kind: Cow<'a, str>,
        #[serde(borrow)]
        deltas: Each<CheckedDelta<'a>>,
    }
    let MapOnly(wire) = serde_json::from_str::<MapOnly<Wire<'_>>>(json).ok()?;
    let MapOnly(logical) = wire.frame;
    let MapOnly(payload) = logical.payload;
    CheckedParts {
        wire_version: wire.wire_version,
        kind: wire.kind,
        delivery_kind: wire.delivery_kind,
        logical_frame_id: wire.logical_frame_id,
        logical_frame_ordinal: wire.logical_frame_ordinal,
        topic: wire.topic,
        subscription_id: wire.subscription_id,
        logical: LogicalParts {
            topic: logical.topic,
            subscription_id: logical.subscription_id,
            from_seq: logical.from_seq,
            to_seq: logical.to_seq,
            sent_at: logical.sent_at,
            payload_kind: payload.kind,
            deltas: payload.deltas.0,
        },
    }
    .checked()
}

/// What [`read_checked_frame`] reads of a frame, before it is checked.
struct CheckedParts<'a> {
    wire_version: u64,
    kind: Cow<'a, str>,
    delivery_kind: Cow<'a, str>,
    logical_frame_id: Cow<'a, str>,
    logical_frame_ordinal: u64,
    topic: Cow<'a, str>,
    subscription_id: Cow<'a, str>,
    logical: LogicalParts<'a>,
}

/// What [`read_checked_frame`] reads of a logical frame and its payload.
struct LogicalParts<'a> {
    topic: Cow<'a, str>,
    subscription_id: Cow<'a, str>,
    from_seq: u64,
    to_seq: u64,
    sent_at: f64,
    payload_kind: Cow<'a, str>,
    deltas: Vec<CheckedDelta<'a>>,
}

impl<'a> CheckedParts<'a> {
    /// The frame, when `wire::parse` and `wire::logical` would take it as it is.
    fn checked(self) -> Option<CheckedFrame<'a>> {
        let delivery = Delivery::of(&self.delivery_kind)?;
        let logical = self.logical;
        let plain = self.wire_version == WIRE_VERSION
            && self.kind == "complete"
            && self.logical_frame_ordinal > 0
            && [&self.logical_frame_id, &self.topic, &self.subscription_id]
                .iter()
                .all(|s| !s.is_empty())
            && logical.topic == self.topic
            && logical.subscription_id == self.subscription_id
            && logical.to_seq >= logical.from_seq
            && logical.payload_kind == "deltas";
        plain.then(|| CheckedFrame {
            envelope: Envelope {
                delivery,
                logical_frame_id: self.logical_frame_id.into_owned(),
                ordinal: self.logical_frame_ordinal,
                topic: self.topic.into_owned(),
                subscription_id: self.subscription_id.into_owned(),
            },
            from_seq: logical.from_seq,
            to_seq: logical.to_seq,
            sent_at: logical.sent_at,
            deltas: logical.deltas,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn raw(value: &Value) -> Box<RawValue> {
        RawValue::from_string(value.to_string()).unwrap()
    }

    fn frame(from: u64, to: u64, deltas: Value) -> Value {
        json!({"wireVersion": 3, "kind": "complete", "deliveryKind": "online", "logicalFrameId": "f",
               "logicalFrameOrdinal": 1, "topic": "conversation/s1", "subscriptionId": "sub-1",
               "frame": {"topic": "conversation/s1", "subscriptionId": "sub-1", "fromSeq": from,
                         "toSeq": to, "sentAt": 1, "payload": {"kind": "deltas", "deltas": deltas}}})
    }

    /// Pushed one by one, deltas read back as the list of them would, in order, however many.
    #[test]
    fn deltas_read_back_as_pushed() {
        for count in 0..4 {
            let trees: Vec<Value> =
                (0..count).map(|n| json!({"op": "row.removed", "n": n})).collect();
            let mut deltas = Deltas::new();
            for tree in &trees {
                deltas.push(Delta::Tree(tree.clone()));
            }
            let list: Vec<Delta<'_>> = trees.into_iter().map(Delta::Tree).collect();
            assert_eq!(deltas.len(), count);
            assert_eq!(format!("{deltas:?}"), format!("{list:?}"));
            assert_eq!(format!("{:?}", Deltas::from(list)), format!("{deltas:?}"));
        }
    }

    #[test]
    fn reads_frames_in_sequence_and_leaves_anything_else_alone() {
        let append = json!({"op": "row.delta", "rowId": 4, "path": "text", "append": "hi"});
        let text_row = json!({"op": "row.upserted", "row": {"rowId": 4, "turnId": "t", "kind": "reasoning", "text": "hi", "state": "complete"}});
        let header = json!({"op": "row.upserted", "row": {"rowId": 3, "turnId": "t", "kind": "turnHeader", "state": "running"}});
        let wire = raw(&frame(3, 4, json!([append, text_row, header])));
        let read = read_deltas(&wire, "sub-1", 3).unwrap();
        assert_eq!((read.to_seq, read.recovery), (4, false));
        let [Delta::Append(appended), Delta::TextRow(row), Delta::Tree(tree)] = &read.deltas[..]
        else {
            panic!("{read:?}")
        };
        assert_eq!((appended.row_id, &*appended.path, &*appended.append), (4, "text", "hi"));
        assert_eq!(
            (row.row_id, &*row.kind, &*row.turn_id, &row.text),
            (4, "reasoning", "t", &Text::Whole("hi".into()))
        );
        assert_eq!(tree["row"]["kind"], "turnHeader");
        for (other, subscription, seq) in [
            (frame(3, 4, json!([append])), "sub-0", 3), // another subscription
            (frame(3, 4, json!([append])), "sub-1", 4), // a repeat
            (frame(5, 6, json!([append])), "sub-1", 4), // past a gap
            (frame(4, 5, json!([[1, 2]])), "sub-1", 4), // a delta that is not an object
        ] {
            assert!(read_deltas(&raw(&other), subscription, seq).is_none(), "{other}");
        }
        // A payload that is not an object, though a struct could be read from it by position.
        let mut by_position = frame(4, 5, json!([append]));
        by_position["frame"]["payload"] = json!(["deltas", [append]]);
        assert!(read_deltas(&raw(&by_position), "sub-1", 4).is_none());
        let mut recovery = frame(4, 5, json!([append]));
        recovery["deliveryKind"] = json!("recovery");
        assert!(read_deltas(&raw(&recovery), "sub-1", 4).unwrap().recovery);
    }

    /// A complete deltas frame is read as `wire::parse` and `wire::logical` read it, with no
    /// tree; whatever those two would judge otherwise is not read here.
    #[test]
    fn a_checked_frame_reads_as_the_checked_tree_reads() {
        use crate::wire::{self, Payload, Wire};

        let append = json!({"op": "row.delta", "rowId": 4, "path": "text", "append": "h\"é"});
        let header =
            json!({"op": "row.upserted", "row": {"rowId": 3, "turnId": "t", "kind": "turnHeader"}});
        let float = json!({"op": "row.delta", "rowId": 4.0, "path": "text", "append": "!"});
        let extra = json!({"op": "row.delta", "rowId": 4, "path": "text", "append": "!", "x": 1});
        let mut wire = frame(3, 7, json!([append, header, float, extra]));
        wire["frame"]["ttft"] = json!(12);
        let text = wire.to_string();
        let read = read_checked_frame(&text).unwrap();
        let Ok(Wire::Complete { envelope, frame }) = wire::parse(wire.clone()) else { panic!() };
        let logical = wire::logical(&envelope, frame).unwrap();
        assert_eq!(read.envelope, envelope);
        assert_eq!((read.from_seq, read.to_seq, read.sent_at), (3, 7, logical.sent_at));
        let Payload::Deltas(trees) = logical.payload else { panic!() };
        let [
            CheckedDelta::Append(a),
            CheckedDelta::Tree(h),
            CheckedDelta::Tree(f),
            CheckedDelta::Tree(e),
        ] = &read.deltas[..]
        else {
            panic!("{read:?}")
        };
        assert_eq!((a.row_id, &*a.path, &*a.append), (4, "text", "h\"é"));
        assert_eq!([h, f, e], [&trees[1], &trees[2], &trees[3]]);

        let twice =
            text.replacen(r#""kind":"complete","#, r#""kind":"complete","kind":"complete","#, 1);
        assert_ne!(twice, text);
        let mut others = vec![twice];
        for (path, value) in [
            ("/wireVersion", json!(2)),
            ("/kind", json!("fragment")),
            ("/deliveryKind", json!("later")),
            ("/logicalFrameOrdinal", json!(0)),
            ("/logicalFrameOrdinal", json!(2.0)),
            ("/topic", json!("")),
            ("/extra", json!(1)),
            ("/frame/topic", json!("conversation/other")),
            ("/frame/subscriptionId", json!("sub-2")),
            ("/frame/toSeq", json!(2)),
            ("/frame/extra", json!(1)),
            ("/frame/payload/kind", json!("snapshot")),
            ("/frame/payload/extra", json!(1)),
            ("/frame/payload/deltas", json!({})),
            ("/frame", json!([3, 7])),
        ] {
            let mut other = wire.clone();
            let (parent, key) = path.rsplit_once('/').unwrap();
            other.pointer_mut(parent).unwrap()[key] = value;
            others.push(other.to_string());
        }
        for other in others {
            assert!(read_checked_frame(&other).is_none(), "{other}");
        }
    }

    #[test]
    fn a_raw_string_reads_as_a_parser_reads_it() {
        let texts = [r#""""#, r#""a b""#, r#""é\u00e9\"\n""#, r#""\\""#, "1", "null", r#"["a"]"#];
        for text in texts {
            let raw = RawValue::from_string(text.to_string()).unwrap();
            let parsed = serde_json::from_str::<Value>(text).unwrap();
            assert_eq!(raw_str(Some(&raw)).as_deref(), parsed.as_str(), "{text}");
        }
        assert!(raw_str(None).is_none());
    }

    /// The one-pass read of a whole line takes exactly the lines whose frame `read_deltas`
    /// takes, and reads them the same; anything it does not plainly read goes to the caller.
    #[test]
    fn a_whole_line_is_read_in_one_pass_as_its_frame_would_be() {
        let append = json!({"op": "row.delta", "rowId": 4, "path": "text", "append": "h\"é"});
        let header =
            json!({"op": "row.upserted", "row": {"rowId": 3, "turnId": "t", "kind": "turnHeader"}});
        let params = frame(3, 4, json!([append, header]));
        let line = json!({"jsonrpc": "2.0", "method": "v4/conversation/frame", "params": params});
        let (line, wire) = (line.to_string(), raw(&params));
        let (one, two) = (read_line_deltas(&line, "sub-1", 3), read_deltas(&wire, "sub-1", 3));
        assert_eq!(format!("{one:?}"), format!("{two:?}"));
        assert_eq!(one.unwrap().deltas.len(), 2);
        // The same members in another order, the method last, a name escaped.
        let reordered = format!(
            r#"{{"params":{{"frame":{},"subscriptionId":"sub-1","kind":"complete","wireV\u0065rsion":3}},"method":"v4/conversation/frame"}}"#,
            params["frame"]
        );
        assert_eq!(read_line_deltas(&reordered, "sub-1", 3).unwrap().to_seq, 4);
        let mut recovery = json!({"method": "v4/conversation/frame", "params": params.clone()});
        recovery["params"]["deliveryKind"] = json!("recovery");
        assert!(read_line_deltas(&recovery.to_string(), "sub-1", 3).unwrap().recovery);
        let with = |key: &str, value: Value| {
            let mut line = json!({"method": "v4/conversation/frame", "params": params.clone()});
            line[key] = value;
            line.to_string()
        };
        let twice =
            line.replacen(r#""kind":"complete","#, r#""kind":"complete","kind":"complete","#, 1);
        assert_ne!(twice, line);
        for other in [
            with("method", json!("session/event")),
            with("method", json!(7)),
            with("id", json!(null)),
            with("id", json!(9)),
            with("result", json!({})),
            with("error", json!({})),
            with("params", json!([3, "complete"])),
            twice,
            format!("[{line}]"),
            line.replace("sub-1", "sub-0"),
            line.replace(r#""wireVersion":3"#, r#""wireVersion":"3""#),
        ] {
            assert!(read_line_deltas(&other, "sub-1", 3).is_none(), "{other}");
        }
        assert!(read_line_deltas(&line, "sub-1", 4).is_none(), "a repeat");
    }

    #[test]
    fn a_wire_frame_read_elsewhere_is_taken_as_its_members_say() {
        let append = json!({"op": "row.delta", "rowId": 4, "path": "text", "append": "hi"});
        let wire = raw(&frame(3, 4, json!([append])));
        let members: WireMembers<'_> = object(&wire).unwrap();
        assert_eq!(read_wire_deltas(members, "sub-1", 3).unwrap().to_seq, 4);
        for absent in ["wireVersion", "kind", "subscriptionId", "frame"] {
            let mut other = frame(3, 4, json!([append]));
            other.as_object_mut().unwrap().remove(absent);
            let other = raw(&other);
            assert!(read_wire_deltas(object(&other).unwrap(), "sub-1", 3).is_none(), "{absent}");
        }
    }
}
