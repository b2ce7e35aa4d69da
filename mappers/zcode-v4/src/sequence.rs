//! Sequence, gap and resync rules of a conversation subscription (ZCode 3.15.1
//! `zcode-protocol-v4/transport.ts`, `wire.ts`; V4S §5.1).
//!
//! - A snapshot frame carries the whole state at `toSeq` (its `fromSeq` is 0 and the
//!   snapshot's own `seq` is `toSeq`): it sets the position, whatever came before.
//! - A deltas frame covers `(fromSeq, toSeq]` and applies only where it continues the
//!   position reached ([`order`]). One that ends at or before it repeats what was applied; one
//!   that starts past it means frames were lost: a gap.
//! - Logical frame ordinals strictly increase on a subscription ([`ordinal_follows`]); the
//!   fragments of one frame share its ordinal.
//! - A gap, or damage in transit, is repaired by a resync of the subscription: either from the
//!   position reached (`base: {logEpoch, seq}` — [`resync_base`]; the recovery frames continue
//!   from it) or by a fresh snapshot (`base: null, forceSnapshot: true`). Until the recovery
//!   comes, frames past the gap are dropped; damage in the recovery itself is no transient
//!   fault (Desktop's own recovery also gives up after retrying the same content).
//!
//! Which repair a mapper asks for, and whether a repeated frame is dropped or resynced, is the
//! mapper's: the app-server mapper resyncs from its position and drops repeats; the Services
//! mapper asks for a snapshot on anything out of order.

use serde_json::{Value, json};

/// Where a deltas frame stands against the position reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// It continues the log: `fromSeq` is the position, `toSeq` past it.
    Next,
    /// It starts at the position and moves nothing (`toSeq` is not past it).
    Empty,
    /// It ends at or before the position: applied already.
    Repeat,
    /// It starts past the position (or overlaps it): frames were lost.
    Gap,
}

/// Where the frame `(from, to]` stands against the position `seq`.
pub fn order(seq: u64, from: u64, to: u64) -> Order {
    if from == seq {
        if to > seq { Order::Next } else { Order::Empty }
    } else if to <= seq {
        Order::Repeat
    } else {
        Order::Gap
    }
}

/// Whether a frame's ordinal follows the last one's (they strictly increase).
pub fn ordinal_follows(last: u64, ordinal: u64) -> bool {
    ordinal > last
}

/// The `base` of a resync from the position reached: `{logEpoch, seq}`, or `null` (a snapshot)
/// while either is unknown.
pub fn resync_base(log_epoch: Option<&str>, seq: Option<u64>) -> Value {
    match (log_epoch, seq) {
        (Some(epoch), Some(seq)) => json!({"logEpoch": epoch, "seq": seq}),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_frames_against_the_position() {
        assert_eq!(order(10, 10, 11), Order::Next);
        assert_eq!(order(10, 10, 10), Order::Empty);
        assert_eq!(order(10, 9, 10), Order::Repeat);
        assert_eq!(order(10, 3, 4), Order::Repeat);
        assert_eq!(order(10, 12, 13), Order::Gap);
        assert_eq!(order(10, 9, 12), Order::Gap);
        assert!(ordinal_follows(3, 4) && !ordinal_follows(4, 4));
        assert_eq!(resync_base(Some("e"), Some(3)), json!({"logEpoch": "e", "seq": 3}));
        assert_eq!(resync_base(None, Some(3)), Value::Null);
    }
}
