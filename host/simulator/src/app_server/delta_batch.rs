//! How the Agent thins streamed deltas on the legacy `session/event` stream. The V4
//! conversation carries every delta; the legacy stream merges them (3.15.1
//! `zcode-protocol/server-operations.ts`: `onSessionEvent` and the `*StreamingDeltaBatch*`
//! helpers; an older and a newer copy of that file in the code index, ids 68313815012 and
//! 70083493411, have the same constants):
//!
//! - a batch key is the delta's kind, assistant message, part and tool call (ZCode's key also
//!   has an input id and a parent tool use, which this simulator never writes);
//! - the first delta of a key goes out at once;
//! - later ones are merged until the text reaches 2048 UTF-16 units (4096 for tool input), or
//!   until 250 ms (750) of event time have passed since the key's last flush; a merged event is
//!   the last delta's event with the text joined;
//! - a delta of another key sends the pending batch first;
//! - any other event, even one the stream hides, sends the pending batch first and forgets the
//!   keys, so the next delta goes out at once again;
//! - there is no timer (so that a replay draws the same boundaries): a tail waits for the next
//!   event.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeltaKind {
    Text,
    Reasoning,
    ToolInput,
}

impl DeltaKind {
    fn name(self) -> &'static str {
        match self {
            DeltaKind::Text => "text_delta",
            DeltaKind::Reasoning => "reasoning_delta",
            DeltaKind::ToolInput => "tool_input_delta",
        }
    }

    /// `PROTOCOL_*_DELTA_BATCH_MAX_CHARS` (JavaScript string length: UTF-16 units).
    fn max_units(self) -> usize {
        if self == DeltaKind::ToolInput { 4 * 1024 } else { 2 * 1024 }
    }

    /// `PROTOCOL_*_DELTA_BATCH_MAX_INTERVAL_MS`.
    fn max_interval_ms(self) -> u64 {
        if self == DeltaKind::ToolInput { 750 } else { 250 }
    }
}

/// One streamed delta, as the turn writes it. Never empty: ZCode does not batch an empty one
/// (and the legacy stream hides it).
pub struct Delta<'a> {
    pub kind: DeltaKind,
    pub assistant_message_id: &'a str,
    /// Text and reasoning.
    pub part_id: Option<&'a str>,
    /// Tool input.
    pub tool_call_id: Option<&'a str>,
    pub text: &'a str,
    /// Text and reasoning: whether this is the segment's last delta.
    pub done: Option<bool>,
    pub turn_id: &'a str,
    pub at_ms: u64,
}

#[derive(Clone, Debug, PartialEq)]
struct Key {
    kind: DeltaKind,
    assistant_message_id: String,
    part_id: Option<String>,
    tool_call_id: Option<String>,
}

impl Key {
    fn of(delta: &Delta<'_>) -> Key {
        Key {
            kind: delta.kind,
            assistant_message_id: delta.assistant_message_id.to_owned(),
            part_id: delta.part_id.map(str::to_owned),
            tool_call_id: delta.tool_call_id.map(str::to_owned),
        }
    }

    fn is(&self, delta: &Delta<'_>) -> bool {
        self.kind == delta.kind
            && self.assistant_message_id == delta.assistant_message_id
            && self.part_id.as_deref() == delta.part_id
            && self.tool_call_id.as_deref() == delta.tool_call_id
    }
}

/// Merged deltas of one key, sent as one `model.streaming` event.
#[derive(Debug)]
pub struct Batch {
    key: Key,
    text: String,
    units: usize,
    done: Option<bool>,
    turn_id: String,
    at_ms: u64,
}

impl Batch {
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// The last merged delta's event time.
    pub fn at_ms(&self) -> u64 {
        self.at_ms
    }

    /// The event's payload, its members in the order a real Agent writes them (probe log \[A\]
    /// §7.2: `assistantMessageId`, `delta`, `done`, `kind`).
    pub fn payload(&self) -> Payload<'_> {
        Payload {
            assistant_message_id: &self.key.assistant_message_id,
            delta: &self.text,
            done: self.done,
            kind: self.key.kind.name(),
            part_id: self.key.part_id.as_deref(),
            tool_call_id: self.key.tool_call_id.as_deref(),
        }
    }
}

/// A `model.streaming` delta payload, written with no JSON tree.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Payload<'a> {
    assistant_message_id: &'a str,
    delta: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    done: Option<bool>,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    part_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

/// One session's live batching state (ZCode keeps it per session record).
#[derive(Debug, Default)]
pub struct Batcher {
    pending: Option<Batch>,
    /// The keys flushed since the last other event, with the event time of their last flush.
    /// ZCode keeps a set and a map that always hold the same keys; a turn has a few.
    flushed: Vec<(Key, u64)>,
}

impl Batcher {
    /// Takes one delta; returns the events due now, in order: the pending batch of another
    /// key, then this key's batch when it is complete.
    pub fn push(&mut self, delta: &Delta<'_>) -> impl Iterator<Item = Batch> + use<> {
        let other =
            self.pending.take_if(|batch| !batch.key.is(delta)).map(|batch| self.flush(batch));
        let units = delta.text.encode_utf16().count();
        let batch = match self.pending.take() {
            Some(mut batch) => {
                batch.text.push_str(delta.text);
                batch.units += units;
                batch.done = delta.done;
                batch.at_ms = delta.at_ms;
                batch
            }
            None => Batch {
                key: Key::of(delta),
                text: delta.text.to_owned(),
                units,
                done: delta.done,
                turn_id: delta.turn_id.to_owned(),
                at_ms: delta.at_ms,
            },
        };
        let last_flush = self.flushed.iter().find(|(key, _)| key.is(delta)).map(|(_, at)| *at);
        let due = match last_flush {
            None => true,
            Some(at) => {
                batch.units >= delta.kind.max_units()
                    || batch.at_ms.saturating_sub(at) >= delta.kind.max_interval_ms()
            }
        };
        let this = if due {
            Some(self.flush(batch))
        } else {
            self.pending = Some(batch);
            None
        };
        [other, this].into_iter().flatten()
    }

    /// Another event is about to go out: the pending batch first, and every key is new again.
    pub fn reset(&mut self) -> Option<Batch> {
        self.flushed.clear();
        self.pending.take()
    }

    /// Sends `batch`, noting when its key was last flushed.
    fn flush(&mut self, batch: Batch) -> Batch {
        match self.flushed.iter_mut().find(|(key, _)| *key == batch.key) {
            Some((_, at)) => *at = batch.at_ms,
            None => self.flushed.push((batch.key.clone(), batch.at_ms)),
        }
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text<'a>(part: &'a str, text: &'a str, at_ms: u64) -> Delta<'a> {
        Delta {
            kind: DeltaKind::Text,
            assistant_message_id: "msg_1",
            part_id: Some(part),
            tool_call_id: None,
            text,
            done: Some(false),
            turn_id: "turn_1",
            at_ms,
        }
    }

    fn sent(batcher: &mut Batcher, delta: &Delta<'_>) -> Vec<String> {
        batcher.push(delta).map(|batch| batch.text).collect()
    }

    #[test]
    fn the_first_delta_of_a_key_goes_out_at_once_and_the_rest_wait_for_2048_utf16_units() {
        let mut batcher = Batcher::default();
        assert_eq!(sent(&mut batcher, &text("p", "a", 0)), ["a"]);
        let chunk = "b".repeat(1000);
        assert!(sent(&mut batcher, &text("p", &chunk, 1)).is_empty());
        assert!(sent(&mut batcher, &text("p", &chunk, 2)).is_empty());
        // 2000 units, then 2000 + 48 = 2048: due.
        let tail = "c".repeat(48);
        assert_eq!(sent(&mut batcher, &text("p", &tail, 3)), [format!("{chunk}{chunk}{tail}")]);
        // A character outside the BMP is two units, as JavaScript counts `delta.length`.
        let wide = "😀".repeat(1023);
        assert!(sent(&mut batcher, &text("p", &wide, 4)).is_empty());
        assert_eq!(sent(&mut batcher, &text("p", "😀", 5)).len(), 1);
    }

    #[test]
    fn a_batch_goes_out_once_250_ms_of_event_time_have_passed_since_its_keys_last_flush() {
        let mut batcher = Batcher::default();
        assert_eq!(sent(&mut batcher, &text("p", "a", 1_000)), ["a"]);
        assert!(sent(&mut batcher, &text("p", "b", 1_100)).is_empty());
        assert!(sent(&mut batcher, &text("p", "c", 1_249)).is_empty());
        let mut last = text("p", "d", 1_250);
        last.done = Some(true);
        let batch: Vec<Batch> = batcher.push(&last).collect();
        assert_eq!(batch.len(), 1);
        // The merged event is the last delta's, with the text joined.
        assert_eq!(batch[0].text, "bcd");
        assert_eq!((batch[0].at_ms(), batch[0].turn_id()), (1_250, "turn_1"));
        let payload = serde_json::to_value(batch[0].payload()).unwrap();
        assert_eq!(
            payload,
            serde_json::json!({"assistantMessageId": "msg_1", "delta": "bcd", "done": true,
                               "kind": "text_delta", "partId": "p"})
        );
        // The clock restarts at that flush.
        assert!(sent(&mut batcher, &text("p", "e", 1_499)).is_empty());
        assert_eq!(sent(&mut batcher, &text("p", "f", 1_500)), ["ef"]);
    }

    #[test]
    fn a_delta_of_another_key_sends_the_pending_batch_first() {
        let mut batcher = Batcher::default();
        sent(&mut batcher, &text("p1", "a", 0));
        assert!(sent(&mut batcher, &text("p1", "b", 1)).is_empty());
        // `p2` is new: the pending `p1` batch, then `p2`'s first delta.
        assert_eq!(sent(&mut batcher, &text("p2", "c", 2)), ["b", "c"]);
        assert!(sent(&mut batcher, &text("p2", "d", 3)).is_empty());
        // `p1` was flushed before: it is merged again.
        assert_eq!(sent(&mut batcher, &text("p1", "e", 4)), ["d"]);
        assert_eq!(batcher.reset().map(|batch| batch.text).as_deref(), Some("e"));
    }

    #[test]
    fn another_event_sends_the_pending_batch_and_makes_every_key_new_again() {
        let mut batcher = Batcher::default();
        sent(&mut batcher, &text("p", "a", 0));
        sent(&mut batcher, &text("p", "b", 1));
        assert_eq!(batcher.reset().map(|batch| batch.text).as_deref(), Some("b"));
        assert!(batcher.reset().is_none());
        assert_eq!(sent(&mut batcher, &text("p", "c", 2)), ["c"]);
    }

    #[test]
    fn tool_input_waits_for_4096_units_or_750_ms() {
        let input = |chunk: &'static str, at_ms| Delta {
            kind: DeltaKind::ToolInput,
            assistant_message_id: "msg_1",
            part_id: None,
            tool_call_id: Some("call_1"),
            text: chunk,
            done: None,
            turn_id: "turn_1",
            at_ms,
        };
        let mut batcher = Batcher::default();
        assert_eq!(sent(&mut batcher, &input("{", 0)), ["{"]);
        let half: &'static str = "x".repeat(2048).leak();
        assert!(sent(&mut batcher, &input(half, 700)).is_empty());
        assert_eq!(sent(&mut batcher, &input(half, 749)).len(), 1);
        assert!(sent(&mut batcher, &input("}", 1_498)).is_empty());
        let batch: Vec<Batch> = batcher.push(&input("]", 1_499)).collect();
        assert_eq!(batch.len(), 1);
        let payload = serde_json::to_value(batch[0].payload()).unwrap();
        assert_eq!(
            payload,
            serde_json::json!({"assistantMessageId": "msg_1", "delta": "}]",
                               "kind": "tool_input_delta", "toolCallId": "call_1"})
        );
    }
}
