//! When an awaited native request times out.
//!
//! A request's timeout is the time ZCode has to answer it. The answer comes on the host's
//! stdout, and the stdout reader stops reading while a session's queue is full (backpressure
//! from a slow client, [`crate::SESSION_QUEUE`]): for that time the answer may sit in the pipe,
//! written and unread, behind another session's backlog. Those waits are ours, not ZCode's, so
//! a deadline moves by every one of them that happens after its request was sent.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::shared::lock;

/// The stdout reader's waits for sessions to take its input.
#[derive(Default)]
pub(crate) struct ReaderWaits(Mutex<Waits>);

#[derive(Default)]
struct Waits {
    /// When the wait going on now began.
    since: Option<Instant>,
    /// The waits that have ended, in all.
    ended: Duration,
}

impl ReaderWaits {
    /// A wait of the reader, counted until the guard is dropped.
    pub(crate) fn begin(&self) -> Waiting<'_> {
        lock(&self.0).since = Some(Instant::now());
        Waiting(self)
    }

    /// All the waits so far, the one going on now included.
    fn total(&self) -> Duration {
        let waits = lock(&self.0);
        waits.ended + waits.since.map_or(Duration::ZERO, |since| since.elapsed())
    }
}

pub(crate) struct Waiting<'a>(&'a ReaderWaits);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut waits = lock(&self.0.0);
        if let Some(since) = waits.since.take() {
            waits.ended += since.elapsed();
        }
    }
}

/// The deadline of one request.
pub(crate) struct Deadline {
    sent: Instant,
    /// The reader's waits before the request was sent, which do not move its deadline.
    waited_before: Duration,
    timeout: Duration,
}

impl Deadline {
    /// The deadline of a request sent now.
    pub(crate) fn start(waits: &ReaderWaits, timeout: Duration) -> Self {
        Self { sent: Instant::now(), waited_before: waits.total(), timeout }
    }

    /// When the request times out, as far as is known now: while the reader waits, this
    /// moves on with the clock.
    pub(crate) fn at(&self, waits: &ReaderWaits) -> Instant {
        let waited = waits.total().saturating_sub(self.waited_before);
        self.sent + self.timeout + waited
    }

    pub(crate) fn passed(&self, waits: &ReaderWaits) -> bool {
        Instant::now() >= self.at(waits)
    }

    /// Resolves once the request has timed out.
    pub(crate) async fn elapsed(&self, waits: &ReaderWaits) {
        while !self.passed(waits) {
            tokio::time::sleep_until(self.at(waits)).await;
        }
    }
}
