//! Numbered events, mapped once each and in order, for a host that can resend what was lost.
//!
//! [`Sequence::arrive`] sorts each event: the next one is mapped, one seen before is dropped,
//! and one after a gap starts a recovery: it is held, and so is everything that arrives until
//! the mapper has fetched the missing events, fed them in with [`Sequence::fill`] and taken
//! the held ones back with [`Sequence::recovered`], to pass through `arrive` again in order
//! (they may find a gap of their own).

use zcode_contract::MapperError;

use crate::json::protocol;

/// Where an arriving event stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Order<E> {
    /// Next in order: map it.
    Next(E),
    /// Seen already (delivered twice): drop it.
    Seen(u64),
    /// Events after `after` and before `before` are missing; the event is held until they
    /// are in.
    Missing { after: u64, before: u64 },
    /// Held: a recovery is under way.
    Held(u64),
}

impl<E> Order<E> {
    /// What became of the event, for an `ignore` action when it is not mapped now.
    pub fn why(&self) -> String {
        match self {
            Order::Next(_) => "the next event in order".to_string(),
            Order::Seen(seq) => format!("event {seq} already seen"),
            Order::Missing { after, before } => {
                format!("events {} to {} missed", after + 1, before - 1)
            }
            Order::Held(seq) => format!("event {seq} held until the missed ones arrive"),
        }
    }
}

/// The sequence of one stream's events.
#[derive(Clone, Debug)]
pub struct Sequence<E> {
    last: Option<u64>,
    /// During a recovery: what arrived since the gap, in order.
    held: Option<Vec<(u64, E)>>,
}

impl<E> Default for Sequence<E> {
    fn default() -> Self {
        Self { last: None, held: None }
    }
}

impl<E> Sequence<E> {
    pub fn arrive(&mut self, seq: u64, event: E) -> Order<E> {
        if let Some(held) = &mut self.held {
            held.push((seq, event));
            return Order::Held(seq);
        }
        match self.last {
            Some(last) if seq <= last => Order::Seen(seq),
            Some(last) if seq > last + 1 => {
                self.held = Some(vec![(seq, event)]);
                Order::Missing { after: last, before: seq }
            }
            _ => {
                self.last = Some(seq);
                Order::Next(event)
            }
        }
    }

    /// A missing event of the recovery that ends at `before` came in; `false` if it is not one
    /// that was missing (or not in order).
    pub fn fill(&mut self, seq: u64, before: u64) -> bool {
        if seq >= before || self.last.is_some_and(|last| seq <= last) {
            return false;
        }
        self.last = Some(seq);
        true
    }

    /// [`Sequence::fill`], with an event that was not missing a protocol error: `"Event <seq> was
    /// not missing"`.
    pub fn refill(&mut self, seq: u64, before: u64) -> Result<(), MapperError> {
        match self.fill(seq, before) {
            true => Ok(()),
            false => Err(protocol(format!("Event {seq} was not missing"))),
        }
    }

    /// The recovery that ends at `before` is over: the held events, to arrive again in order.
    pub fn recovered(&mut self, before: u64) -> Vec<(u64, E)> {
        self.last = Some(before - 1);
        self.held.take().unwrap_or_default()
    }

    /// The recovery that ends at `before` is over: the held events arrive again, in order, and
    /// this is what to map of them (anything after a new gap is held again, so the last may be
    /// [`Order::Missing`], and none is [`Order::Held`]).
    pub fn replay(&mut self, before: u64) -> Vec<Order<E>> {
        let held = self.recovered(before);
        let orders = held.into_iter().map(|(seq, event)| self.arrive(seq, event));
        orders.filter(|order| !matches!(order, Order::Held(_))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_in_order_and_drops_what_came_twice() {
        let mut sequence = Sequence::default();
        assert_eq!(sequence.arrive(1, "a"), Order::Next("a"));
        assert_eq!(sequence.arrive(2, "b"), Order::Next("b"));
        assert_eq!(sequence.arrive(2, "b"), Order::Seen(2));
    }

    #[test]
    fn holds_what_follows_a_gap_until_it_is_filled() {
        let mut sequence = Sequence::default();
        sequence.arrive(1, "a");
        assert_eq!(sequence.arrive(4, "d"), Order::Missing { after: 1, before: 4 });
        assert_eq!(sequence.arrive(5, "e"), Order::Held(5));
        assert!(!sequence.fill(4, 4), "4 was not missing");
        assert!(sequence.fill(2, 4));
        assert!(!sequence.fill(2, 4), "twice");
        assert_eq!(sequence.refill(2, 4).unwrap_err().message, "Event 2 was not missing");
        assert!(sequence.refill(3, 4).is_ok());
        let held = sequence.recovered(4);
        assert_eq!(held, [(4, "d"), (5, "e")]);
        let again: Vec<_> = held.into_iter().map(|(seq, e)| sequence.arrive(seq, e)).collect();
        assert_eq!(again, [Order::Next("d"), Order::Next("e")]);
    }

    #[test]
    fn a_held_event_may_find_a_gap_of_its_own() {
        let mut sequence = Sequence::default();
        sequence.arrive(1, "a");
        sequence.arrive(3, "c");
        sequence.arrive(6, "f");
        sequence.fill(2, 3);
        let again: Vec<_> =
            sequence.recovered(3).into_iter().map(|(seq, e)| sequence.arrive(seq, e)).collect();
        assert_eq!(again, [Order::Next("c"), Order::Missing { after: 3, before: 6 }]);
        assert_eq!(sequence.recovered(6), [(6, "f")]);
    }

    #[test]
    fn says_why_an_event_is_not_mapped_now() {
        let mut sequence = Sequence::default();
        sequence.arrive(1, "a");
        assert_eq!(sequence.arrive(1, "a").why(), "event 1 already seen");
        assert_eq!(sequence.arrive(4, "d").why(), "events 2 to 3 missed");
        assert_eq!(sequence.arrive(5, "e").why(), "event 5 held until the missed ones arrive");
        assert_eq!(Order::Next("x").why(), "the next event in order");
    }

    #[test]
    fn replays_what_was_held_up_to_a_new_gap() {
        let mut sequence = Sequence::default();
        sequence.arrive(1, "a");
        sequence.arrive(3, "c");
        sequence.arrive(4, "d");
        sequence.arrive(6, "f");
        sequence.arrive(7, "g");
        assert!(sequence.fill(2, 3));
        assert_eq!(
            sequence.replay(3),
            [Order::Next("c"), Order::Next("d"), Order::Missing { after: 4, before: 6 }]
        );
        assert!(sequence.fill(5, 6));
        assert_eq!(sequence.replay(6), [Order::Next("f"), Order::Next("g")]);
        assert_eq!(sequence.arrive(8, "h"), Order::Next("h"));
    }
}
