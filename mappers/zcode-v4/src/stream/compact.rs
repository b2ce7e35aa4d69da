//! A streamed delta's whole line read as `JSON.stringify` wrote it
//! (`zcode_mapper_sdk::compact`): a complete deltas frame whose every delta is a text append,
//! its members in any order (in ZCode's own order, its fixed text is compared whole rather than
//! read name by name). What it does not plainly read is `None`, and the serde read
//! ([`super::read_line_deltas`]) takes the line: so a line is never read differently, only
//! sooner. Each member is taken once and every member has a place here; the members the serde
//! read passes over are passed over as scalars only.

use std::borrow::Cow;

use zcode_mapper_sdk::compact::{Reader, once};

use super::{
    CheckedDelta, CheckedFrame, CheckedParts, Delta, DeltaFrame, Deltas, LogicalParts, TextAppend,
};
use crate::wire::WIRE_VERSION;

/// The frame of `line` when it is a complete frame of the wire version, of subscription
/// `subscription_id`, whose deltas are text appends that continue the position `seq`.
pub fn read_line<'a>(line: &'a str, subscription_id: &str, seq: u64) -> Option<DeltaFrame<'a>> {
    let (frame, len) = read_leading(line, subscription_id, seq)?;
    (len == line.len()).then_some(frame)
}

/// [`read_line`] of the line `text` starts with, and that line's length: the text ends where
/// the line's object does, or goes on after a newline. A connection joins a read's lines so,
/// and the line is read where it starts, not found first by a scan for its end.
pub fn read_leading<'a>(
    text: &'a str,
    subscription_id: &str,
    seq: u64,
) -> Option<(DeltaFrame<'a>, usize)> {
    let (wire, len) = read_as_written(text, subscription_id).or_else(|| read_by_members(text))?;
    let plain = wire.version == WIRE_VERSION
        && wire.kind == "complete"
        && wire.subscription_id == subscription_id
        && wire.frame.kind == "deltas"
        && wire.frame.from_seq == seq
        && wire.frame.to_seq > seq;
    let frame = DeltaFrame {
        to_seq: wire.frame.to_seq,
        recovery: wire.delivery_kind == Some("recovery"),
        deltas: wire.frame.deltas,
    };
    plain.then_some((frame, len))
}

/// The line read member by member, in any order.
fn read_by_members(text: &str) -> Option<(Wire<'_>, usize)> {
    let mut reader = Reader::new(text);
    let (mut method, mut wire) = (None, None);
    reader.object(|r, name| match name {
        "method" => once(&mut method, r.plain_str().filter(|m| *m == "v4/conversation/frame")),
        "params" => once(&mut wire, read_wire(r)),
        _ => None,
    })?;
    method?;
    Some((wire?, reader.line_end()?))
}

/// The line as ZCode writes it (3.15.1 `wire.ts` and its conversation publisher, and the
/// logical frame's `sentAt` where 3.11.2 was seen writing it): the wire members, the logical
/// frame's and each delta's in that order, with every member [`read_by_members`] takes and no
/// other. The fixed text between the values is compared whole, and only what changes from line
/// to line is read: natively about half the time of reading every member's name, less in the
/// guest, where comparing a byte costs about what scanning it does (docs/performance.md, issue
/// 27). The subscription's own frames name it twice: both must be this one, and the logical
/// frame's topic must be the wire's. Anything else, members in another order among it, is
/// `None` here and read by members, so a line is read the same either way.
fn read_as_written<'a>(text: &'a str, subscription_id: &str) -> Option<(Wire<'a>, usize)> {
    let mut r = Reader::new(text);
    let wire = read_frame_as_written(&mut r, Some(subscription_id))?;
    Some((wire, r.line_end()?))
}

/// How long the streamed delta's frame `text` starts with is, when it is written as ZCode writes
/// one ([`read_as_written`]), of any subscription. A connection finds where such a frame ends in
/// a batch so, on its fixed text, rather than passing over each of its members: that pass was a
/// fifth of zcode-acp's CPU per Desktop delta in array lines (issue 27).
pub fn frame_len_as_written(text: &str) -> Option<usize> {
    let mut r = Reader::new(text);
    read_frame_as_written(&mut r, None)?;
    Some(r.offset())
}

/// [`read_as_written`] up to the frame's end, of `subscription_id` or of any subscription.
fn read_frame_as_written<'a>(
    r: &mut Reader<'a>,
    subscription_id: Option<&str>,
) -> Option<Wire<'a>> {
    r.literal(FRAME_HEAD)?;
    let WireHead { version, kind, delivery_kind, topic } = read_wire_head(r)?;
    r.literal(r#","subscriptionId":"#)?;
    // Read, not compared: then the id holds nothing JSON escapes, and it can be compared where
    // it comes again.
    let subscription = r.plain_str().filter(|s| subscription_id.is_none_or(|id| *s == id))?;
    // The topic again, compared: it holds nothing JSON escapes (it was read plain).
    r.literal(r#","frame":{"topic":""#)?;
    r.literal(topic)?;
    r.literal(r#"","subscriptionId":""#)?;
    r.literal(subscription)?;
    r.literal(r#"","#)?;
    // 3.15.1 writes `sentAt` after `toSeq`; a 3.11.2 Agent was seen writing it first.
    let sent_first = r.literal(r#""sentAt":"#).is_some();
    if sent_first {
        r.uint()?;
        r.literal(",")?;
    }
    r.literal(r#""fromSeq":"#)?;
    let from_seq = r.uint()?;
    r.literal(r#","toSeq":"#)?;
    let to_seq = r.uint()?;
    if !sent_first {
        r.literal(r#","sentAt":"#)?;
        r.uint()?;
    }
    r.literal(r#","payload":{"kind":"#)?;
    let frame_kind = r.usual_str("deltas")?;
    r.literal(r#","deltas":"#)?;
    let mut deltas = Deltas::new();
    r.array(|r| read_append_as_written(r).map(|a| deltas.push(Delta::Append(a))))?;
    r.literal("}}}}")?;
    let frame = Frame { from_seq, to_seq, kind: frame_kind, deltas };
    Some(Wire {
        version,
        kind,
        delivery_kind: Some(delivery_kind),
        subscription_id: subscription,
        frame,
    })
}

/// How ZCode opens a V4 conversation frame notification: the line up to its wire frame.
pub const FRAME_HEAD: &str = r#"{"method":"v4/conversation/frame","params":"#;

/// The members a wire frame opens with, up to its topic.
pub struct WireHead<'a> {
    pub version: u64,
    pub kind: &'a str,
    pub delivery_kind: &'a str,
    pub topic: &'a str,
}

/// A wire frame's members up to its topic, as ZCode writes them (`wireVersion`, `kind`,
/// `deliveryKind`, `logicalFrameId`, `logicalFrameOrdinal`, `topic`: the order a strace of
/// Desktop 3.11.2 quotes, and 3.15.1's `wire.ts`), the fixed text between their values compared
/// whole. The reader is then past the topic. `None` for any other text: the caller reads it by
/// member names. The session's read of a streamed line ([`read_leading`]) and the connection's
/// routing of a V4 line on its head both start here.
#[inline]
pub fn read_wire_head<'a>(r: &mut Reader<'a>) -> Option<WireHead<'a>> {
    r.literal(r#"{"wireVersion":"#)?;
    let version = r.uint()?;
    r.literal(r#","kind":"#)?;
    let kind = r.usual_str("complete")?;
    r.literal(r#","deliveryKind":"#)?;
    let delivery_kind = r.usual_str("online")?;
    r.literal(r#","logicalFrameId":"#)?;
    r.plain_str()?;
    r.literal(r#","logicalFrameOrdinal":"#)?;
    r.uint()?;
    r.literal(r#","topic":"#)?;
    let topic = r.plain_str()?;
    Some(WireHead { version, kind, delivery_kind, topic })
}

/// [`read_append`] of a delta as ZCode writes it: `op`, `rowId`, `path`, `append`.
fn read_append_as_written<'a>(r: &mut Reader<'a>) -> Option<TextAppend<'a>> {
    // Only a text append is read here, and its path is almost always `text`: both compared.
    r.literal(r#"{"op":"row.delta","rowId":"#)?;
    let row_id = r.uint()?;
    let path = match r.literal(r#","path":"text","append":"#) {
        Some(()) => Cow::Borrowed("text"),
        None => {
            r.literal(r#","path":"#)?;
            let path = r.string()?;
            r.literal(r#","append":"#)?;
            path
        }
    };
    let append = r.string()?;
    r.literal("}")?;
    Some(TextAppend { op: Cow::Borrowed("row.delta"), row_id, path, append })
}

#[derive(Debug)]
struct Wire<'a> {
    version: u64,
    kind: &'a str,
    delivery_kind: Option<&'a str>,
    subscription_id: &'a str,
    frame: Frame<'a>,
}

#[derive(Debug)]
struct Frame<'a> {
    from_seq: u64,
    to_seq: u64,
    kind: &'a str,
    deltas: Deltas<'a>,
}

/// The wire frame: `wireVersion`, `kind`, `deliveryKind`, `logicalFrameId`,
/// `logicalFrameOrdinal`, `topic`, `subscriptionId` and `frame` (ZCode 3.15.1 `wire.ts`).
fn read_wire<'a>(r: &mut Reader<'a>) -> Option<Wire<'a>> {
    let (mut version, mut kind, mut delivery_kind, mut subscription_id, mut frame) =
        (None, None, None, None, None);
    let mut passed = [false; 3];
    r.object(|r, name| match name {
        "wireVersion" => once(&mut version, r.uint()),
        "kind" => once(&mut kind, r.plain_str()),
        "deliveryKind" => once(&mut delivery_kind, r.plain_str()),
        "subscriptionId" => once(&mut subscription_id, r.plain_str()),
        "frame" => once(&mut frame, read_frame(r)),
        "logicalFrameId" => pass(r, &mut passed[0]),
        "logicalFrameOrdinal" => pass(r, &mut passed[1]),
        "topic" => pass(r, &mut passed[2]),
        _ => None,
    })?;
    Some(Wire {
        version: version?,
        kind: kind?,
        delivery_kind,
        subscription_id: subscription_id?,
        frame: frame?,
    })
}

/// The logical frame: `topic`, `subscriptionId`, `fromSeq`, `toSeq`, `sentAt` and `payload`
/// (`kind`, `deltas`), in whichever order a release writes them.
fn read_frame<'a>(r: &mut Reader<'a>) -> Option<Frame<'a>> {
    let (mut from_seq, mut to_seq, mut payload) = (None, None, None);
    let mut passed = [false; 3];
    r.object(|r, name| match name {
        "fromSeq" => once(&mut from_seq, r.uint()),
        "toSeq" => once(&mut to_seq, r.uint()),
        "payload" => once(&mut payload, read_payload(r)),
        "topic" => pass(r, &mut passed[0]),
        "subscriptionId" => pass(r, &mut passed[1]),
        "sentAt" => pass(r, &mut passed[2]),
        _ => None,
    })?;
    let (kind, deltas) = payload?;
    Some(Frame { from_seq: from_seq?, to_seq: to_seq?, kind, deltas })
}

fn read_payload<'a>(r: &mut Reader<'a>) -> Option<(&'a str, Deltas<'a>)> {
    let (mut kind, mut deltas) = (None, None);
    r.object(|r, name| match name {
        "kind" => once(&mut kind, r.plain_str()),
        "deltas" => {
            let mut list = Deltas::new();
            let mut each = |r: &mut Reader<'a>| read_append(r).map(|a| list.push(Delta::Append(a)));
            once(&mut deltas, r.array(&mut each).map(|()| list))
        }
        _ => None,
    })?;
    Some((kind?, deltas?))
}

/// `{op: "row.delta", rowId, path, append}`, nothing more.
fn read_append<'a>(r: &mut Reader<'a>) -> Option<TextAppend<'a>> {
    let (mut op, mut row_id, mut path, mut append) = (None, None, None, None);
    r.object(|r, name| match name {
        "op" => once(&mut op, r.plain_str().filter(|op| *op == "row.delta")),
        "rowId" => once(&mut row_id, r.uint()),
        "path" => once(&mut path, r.string()),
        "append" => once(&mut append, r.string()),
        _ => None,
    })?;
    Some(TextAppend { op: Cow::Borrowed(op?), row_id: row_id?, path: path?, append: append? })
}

/// [`super::read_checked_frame`]'s frame as `JSON.stringify` wrote it: the Services feed's
/// wire frame (`wireVersion`, `kind`, `deliveryKind`, `logicalFrameId`, `logicalFrameOrdinal`,
/// `topic`, `subscriptionId`, `frame`), its logical frame (`topic`, `subscriptionId`,
/// `fromSeq`, `toSeq`, `sentAt`, `payload`, `ttft` and `ttftRelated` passed over) and payload
/// (`kind`, `deltas`), every member required but the passed ones, none other; each delta a
/// text append. The checks are the serde read's own (`CheckedParts::checked`).
pub fn read_checked(json: &str) -> Option<CheckedFrame<'_>> {
    let mut reader = Reader::new(json);
    let (mut version, mut kind, mut delivery_kind, mut id, mut ordinal) =
        (None, None, None, None, None);
    let (mut topic, mut subscription_id, mut logical) = (None, None, None);
    reader.object(|r, name| match name {
        "wireVersion" => once(&mut version, r.uint()),
        "kind" => once(&mut kind, r.string()),
        "deliveryKind" => once(&mut delivery_kind, r.string()),
        "logicalFrameId" => once(&mut id, r.string()),
        "logicalFrameOrdinal" => once(&mut ordinal, r.uint()),
        "topic" => once(&mut topic, r.string()),
        "subscriptionId" => once(&mut subscription_id, r.string()),
        "frame" => once(&mut logical, read_checked_logical(r)),
        _ => None,
    })?;
    reader.at_end().then_some(())?;
    CheckedParts {
        wire_version: version?,
        kind: kind?,
        delivery_kind: delivery_kind?,
        logical_frame_id: id?,
        logical_frame_ordinal: ordinal?,
        topic: topic?,
        subscription_id: subscription_id?,
        logical: logical?,
    }
    .checked()
}

fn read_checked_logical<'a>(r: &mut Reader<'a>) -> Option<LogicalParts<'a>> {
    let (mut topic, mut subscription_id, mut from_seq, mut to_seq) = (None, None, None, None);
    let (mut sent_at, mut payload, mut ttft, mut ttft_related) = (None, None, None, None);
    r.object(|r, name| match name {
        "topic" => once(&mut topic, r.string()),
        "subscriptionId" => once(&mut subscription_id, r.string()),
        "fromSeq" => once(&mut from_seq, r.uint()),
        "toSeq" => once(&mut to_seq, r.uint()),
        // An integer, as `Date.now()` gives: read as f64, as the serde read reads it.
        "sentAt" => once(&mut sent_at, r.uint().map(|t| t as f64)),
        "payload" => once(&mut payload, read_checked_payload(r)),
        "ttft" => once(&mut ttft, r.value_text()),
        "ttftRelated" => once(&mut ttft_related, r.value_text()),
        _ => None,
    })?;
    let (payload_kind, deltas) = payload?;
    Some(LogicalParts {
        topic: topic?,
        subscription_id: subscription_id?,
        from_seq: from_seq?,
        to_seq: to_seq?,
        sent_at: sent_at?,
        payload_kind,
        deltas,
    })
}

fn read_checked_payload<'a>(r: &mut Reader<'a>) -> Option<(Cow<'a, str>, Vec<CheckedDelta<'a>>)> {
    let (mut kind, mut deltas) = (None, None);
    r.object(|r, name| match name {
        "kind" => once(&mut kind, r.string()),
        "deltas" => {
            let mut list = Vec::new();
            let mut each =
                |r: &mut Reader<'a>| read_append(r).map(|a| list.push(CheckedDelta::Append(a)));
            once(&mut deltas, r.array(&mut each).map(|()| list))
        }
        _ => None,
    })?;
    Some((kind?, deltas?))
}

/// A member the serde read passes over, passed over once.
fn pass(r: &mut Reader<'_>, seen: &mut bool) -> Option<()> {
    if std::mem::replace(seen, true) {
        return None;
    }
    r.skip_scalar()
}

#[cfg(test)]
mod tests;
