//! Native request ids: one allocator per bridge, the only source of ids for every owner's
//! mapper calls — an operation's `start` and `resume`, and `issue` after mapping.
//!
//! The mapper learns its first id before a call and says how many it used only in the call's
//! answer, so ids are **reserved** before the guest call and **committed** after it. The
//! allocator's lock is held for those two bookkeeping steps only, never across the guest call:
//! the guest calls of two owners (the connection, sessions) run at once, each in a window of
//! ids of its own. The only lock held across a guest call is the owner's own machine lock.
//!
//! Invariants (each step holds the lock, so they hold between steps):
//! - every id a committed call used is below `next`, and no id is used by two calls;
//! - an open reservation's window lies below `next` and overlaps neither a used id nor
//!   another open window;
//! - a reservation that is still the newest when it commits gives back the part of its window
//!   it did not use: without another owner's call in between, ids are `1, 2, 3, …` as if
//!   handed out one call at a time; an older one leaves that part unused for ever (a gap).
//!
//! Ids stay far below 2^53 (JavaScript's exact integers, the bound of every native wire that
//! carries them as numbers): a gap is at most [`OPERATION_WINDOW`], so it takes 2^37 contended
//! calls to get there.

use std::sync::Mutex;

use zcode_contract::MapperFault;

use crate::sync::lock;

/// Identifies a session link inside one bridge.
pub(crate) type LinkId = u64;

/// Ids reserved for one `start` or `resume`, whose request count is known only afterwards.
/// A call that uses more fails only if another owner reserved after it meanwhile.
pub(crate) const OPERATION_WINDOW: u64 = 1 << 16;

/// The request ids of one bridge; they start at 1.
pub(crate) struct RequestIds(Mutex<Counter>);

struct Counter {
    /// The lowest id no used range and no open window covers.
    next: u64,
    /// `next` never goes back below this: past the ids of a call refused for running out of
    /// its window.
    floor: u64,
}

impl Default for RequestIds {
    fn default() -> Self {
        Self(Mutex::new(Counter { next: 1, floor: 1 }))
    }
}

impl RequestIds {
    /// Reserves `window` ids for one guest call, from [`Reservation::first`] on. Dropped without
    /// [`Reservation::commit`] (the call failed), it gives back what it can, like `commit(0)`.
    pub(crate) fn reserve(&self, window: u64) -> Reservation<'_> {
        let mut counter = lock(&self.0);
        let first = counter.next;
        counter.next = first + window;
        Reservation { ids: self, first, window, open: true }
    }

    fn release(&self, first: u64, window: u64, used: u64) -> Result<(), MapperFault> {
        let mut counter = lock(&self.0);
        if counter.next == first + window {
            // Nobody reserved after this call: `next` follows what it used, past its window
            // if need be.
            counter.next = (first + used).max(counter.floor);
            Ok(())
        } else if used <= window {
            Ok(())
        } else {
            // The ids past the window may be another call's: the output is refused, never
            // written. Its ids count as handed out all the same.
            counter.floor = counter.floor.max(first + used);
            counter.next = counter.next.max(counter.floor);
            Err(MapperFault(format!(
                "the mapper used {used} request ids in one call, more than the {window} reserved \
                 for it while another call was drawing ids"
            )))
        }
    }
}

/// Ids reserved for one guest call; see [`RequestIds::reserve`].
#[must_use = "a reservation is committed with the number of ids the call used"]
pub(crate) struct Reservation<'a> {
    ids: &'a RequestIds,
    first: u64,
    window: u64,
    open: bool,
}

impl Reservation<'_> {
    /// The `first-request-id` to hand the mapper.
    pub(crate) fn first(&self) -> u64 {
        self.first
    }

    /// The call used `used` ids from [`first`](Self::first) on — whatever it returned, valid or
    /// not: an id is never handed out twice. Fails if they run past the window into ids that
    /// may be another call's.
    pub(crate) fn commit(mut self, used: usize) -> Result<(), MapperFault> {
        self.open = false;
        let used = u64::try_from(used).unwrap_or(u64::MAX);
        self.ids.release(self.first, self.window, used)
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.open {
            // A call that failed returned no request.
            let _ = self.ids.release(self.first, self.window, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(ids: &RequestIds, used: usize) -> u64 {
        let reservation = ids.reserve(OPERATION_WINDOW);
        let first = reservation.first();
        reservation.commit(used).unwrap();
        first
    }

    #[test]
    fn one_call_at_a_time_gets_consecutive_ids() {
        let ids = RequestIds::default();
        assert_eq!(call(&ids, 2), 1);
        assert_eq!(call(&ids, 0), 3);
        assert_eq!(call(&ids, 1), 3);
        // A call that failed used nothing.
        drop(ids.reserve(OPERATION_WINDOW));
        assert_eq!(call(&ids, 1), 4);
        // An exact reservation (mapping announced its count) is the same mechanism.
        let exact = ids.reserve(3);
        assert_eq!(exact.first(), 5);
        exact.commit(3).unwrap();
        assert_eq!(call(&ids, 1), 8);
    }

    #[test]
    fn the_newest_call_may_use_more_than_its_window() {
        let ids = RequestIds::default();
        let reservation = ids.reserve(2);
        reservation.commit(5).unwrap();
        assert_eq!(call(&ids, 1), 6);
    }

    #[test]
    fn overlapping_calls_get_disjoint_windows_and_the_newest_gives_back_its_rest() {
        let ids = RequestIds::default();
        let a = ids.reserve(OPERATION_WINDOW);
        let b = ids.reserve(OPERATION_WINDOW);
        let c = ids.reserve(2);
        let (a_first, b_first, c_first) = (a.first(), b.first(), c.first());
        assert_eq!(
            (a_first, b_first, c_first),
            (1, 1 + OPERATION_WINDOW, 1 + 2 * OPERATION_WINDOW)
        );
        // The oldest commits first: the rest of its window stays a gap.
        a.commit(3).unwrap();
        // The newest used nothing: it gives back its window, and the one before it is the
        // newest again.
        c.commit(0).unwrap();
        b.commit(2).unwrap();
        assert_eq!(call(&ids, 1), b_first + 2);
    }

    #[test]
    fn ids_under_an_open_window_are_never_handed_out() {
        let ids = RequestIds::default();
        let a = ids.reserve(OPERATION_WINDOW);
        let b = ids.reserve(OPERATION_WINDOW);
        let b_first = b.first();
        b.commit(1).unwrap();
        // b was the newest: `next` is just past its id, above all of a's window.
        assert_eq!(call(&ids, 1), b_first + 1);
        a.commit(1).unwrap();
        assert_eq!(call(&ids, 1), b_first + 2);
    }

    #[test]
    fn a_call_past_its_window_while_another_drew_ids_is_refused() {
        let ids = RequestIds::default();
        let a = ids.reserve(2);
        let b = ids.reserve(OPERATION_WINDOW);
        let fault = a.commit(3).unwrap_err();
        assert!(fault.0.contains("used 3 request ids in one call, more than the 2"), "{fault}");
        // The refused call's ids are not handed out again.
        b.commit(0).unwrap();
        assert_eq!(call(&ids, 1), 4);
    }

    /// Random interleavings of up to eight calls in flight: no id is used twice, and every
    /// used id stays below the next reservation.
    #[test]
    fn interleaved_calls_never_share_an_id() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut random = |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        for _ in 0..200 {
            let ids = RequestIds::default();
            let mut open: Vec<Reservation<'_>> = Vec::new();
            let mut used = std::collections::HashSet::new();
            for _ in 0..200 {
                if open.is_empty() || (open.len() < 8 && random(2) == 0) {
                    let window = [1, 2, 5, OPERATION_WINDOW][random(4) as usize];
                    let reservation = ids.reserve(window);
                    let first = reservation.first();
                    assert!(used.iter().all(|&id| id < first), "an id at or above {first} is used");
                    open.push(reservation);
                } else {
                    let reservation = open.swap_remove(random(open.len() as u64) as usize);
                    let (first, window) = (reservation.first(), reservation.window);
                    let n = random(window.min(6) + 1);
                    reservation.commit(n as usize).unwrap();
                    for id in first..first + n {
                        assert!(used.insert(id), "id {id} used twice");
                    }
                }
            }
        }
    }
}
