//! A session event read as `JSON.stringify` wrote it (`zcode_mapper_sdk::compact`): a
//! `model.streaming` event of the fields [`super::read`] takes, in any order, each once. What it
//! does not plainly read is `None`, and the serde read takes the event: so an event is never
//! read differently, only sooner. A tool call's `input` (kept as a tree) and every other event
//! type go to the serde read.

use zcode_mapper_sdk::compact::{Reader, once};

use super::{Payload, SessionEvent, Streaming, Text};

pub fn read(text: &str) -> Option<SessionEvent<'_>> {
    let (event, len) = read_leading(text)?;
    (len == text.len()).then_some(event)
}

/// [`read`] of the event `text` starts with, and its length: the text ends where the event
/// does, or goes on after a newline (the connection joins a read's events so, one a line).
pub fn read_leading(text: &str) -> Option<(SessionEvent<'_>, usize)> {
    let mut reader = Reader::new(text);
    let (mut dynamic_type, mut event) = (None, None);
    reader.object(|r, name| match name {
        "type" => once(&mut dynamic_type, r.plain_str().filter(|t| *t == "session.event")),
        "event" => once(&mut event, read_event(r)),
        _ => None,
    })?;
    dynamic_type?;
    Some((event?, reader.line_end()?))
}

/// `{eventId, sessionId, turnId?, seq, traceId?, timestamp, deliveryKind, type, payload}`:
/// the 3.11.2 event (reference zcode-host-3.11.md §5), `null` where absent may be.
fn read_event<'a>(r: &mut Reader<'a>) -> Option<SessionEvent<'a>> {
    let (mut event_id, mut session_id, mut turn_id, mut trace_id) = (None, None, None, None);
    let (mut seq, mut timestamp, mut delivery_kind, mut event_type, mut payload) =
        (None, None, None, None, None);
    r.object(|r, name| match name {
        "eventId" => once(&mut event_id, r.string().filter(|id| !id.is_empty())),
        "sessionId" => once(&mut session_id, r.string()),
        "turnId" => once(&mut turn_id, r.nullable(Reader::string)),
        "seq" => once(&mut seq, r.uint()),
        "traceId" => once(&mut trace_id, r.nullable(Reader::string)),
        // An integer, as `Date.now()` gives: read as f64, as the serde read reads it.
        "timestamp" => once(&mut timestamp, r.uint().map(|t| t as f64)),
        "deliveryKind" => once(&mut delivery_kind, r.string()),
        "type" => once(&mut event_type, r.plain_str().filter(|t| *t == "model.streaming")),
        "payload" => once(&mut payload, read_streaming(r)),
        _ => None,
    })?;
    let _checked = (event_id?, session_id?, delivery_kind?);
    Some(SessionEvent {
        seq: seq?,
        timestamp: timestamp?,
        event_type: Text(event_type?.into()),
        payload: Payload::Streaming(payload?),
    })
}

/// A `model.streaming` payload without `input`: `{kind, delta?, assistantMessageId?,
/// toolCallId?, toolName?}`.
fn read_streaming<'a>(r: &mut Reader<'a>) -> Option<Streaming<'a>> {
    let (mut kind, mut delta, mut message_id, mut tool_call_id, mut tool_name) =
        (None, None, None, None, None);
    let mut input = None;
    r.object(|r, name| match name {
        "kind" => once(&mut kind, r.string()),
        "delta" => once(&mut delta, r.nullable(Reader::string)),
        "assistantMessageId" => once(&mut message_id, r.nullable(Reader::string)),
        "toolCallId" => once(&mut tool_call_id, r.nullable(Reader::string)),
        "toolName" => once(&mut tool_name, r.nullable(Reader::string)),
        // Only as absent: a tool call's input is read as a tree by the serde read.
        "input" => once(&mut input, r.nullable(|_| None::<()>)),
        _ => None,
    })?;
    let text = |field: Option<Option<_>>| field.flatten().map(Text);
    Some(Streaming {
        kind: Text(kind?),
        delta: text(delta),
        assistant_message_id: text(message_id),
        tool_call_id: text(tool_call_id),
        tool_name: text(tool_name),
        input: None,
    })
}

#[cfg(test)]
mod tests;
