//! When an awaited native request times out.
//!
//! A request's timeout is the time ZCode has to answer it. The answer comes on the host's
//! stdout, and the stdout reader stops reading while a session's queue is full (backpressure
//! from a slow client, [`crate::SESSION_QUEUE`]): for that time the answer may sit in the pipe,
//! written and unread, behind that session's backlog. Those waits are ours, not ZCode's, so a
//! deadline moves by every one of them that happens after its request was sent — except waits
//! on the queue of the session that sent it: a session that takes no input while its own
//! operation waits (one being opened, or one past its set-aside bound) would otherwise wait for
//! a reply that only the timeout can free.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::ids::LinkId;
use crate::sync::lock;

/// The stdout reader's waits for sessions to take its input.
#[derive(Default)]
pub(crate) struct ReaderWaits(Mutex<Waits>);

#[derive(Default)]
struct Waits {
    /// The wait going on now: since when, and on whose queue.
    current: Option<(Instant, LinkId)>,
    /// The waits that have ended, in all.
    ended: Duration,
    /// The same, per session waited on.
    ended_on: HashMap<LinkId, Duration>,
}

impl ReaderWaits {
    /// A wait of the reader on `link`'s queue, counted until the guard is dropped.
    pub(crate) fn begin(&self, link: LinkId) -> Waiting<'_> {
        lock(&self.0).current = Some((Instant::now(), link));
        Waiting(self)
    }

    /// All the waits so far that count for a request of `owner` (a session, or the
    /// connection), the one going on now included.
    fn counted_for(&self, owner: Option<LinkId>) -> Duration {
        let waits = lock(&self.0);
        let own = owner.and_then(|link| waits.ended_on.get(&link).copied()).unwrap_or_default();
        let ongoing = match waits.current {
            Some((since, link)) if Some(link) != owner => since.elapsed(),
            _ => Duration::ZERO,
        };
        waits.ended - own + ongoing
    }

    /// A session is gone: its requests are too.
    pub(crate) fn forget(&self, link: LinkId) {
        lock(&self.0).ended_on.remove(&link);
    }
}

pub(crate) struct Waiting<'a>(&'a ReaderWaits);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut waits = lock(&self.0.0);
        if let Some((since, link)) = waits.current.take() {
            let waited = since.elapsed();
            waits.ended += waited;
            *waits.ended_on.entry(link).or_default() += waited;
        }
    }
}

/// The deadline of one request.
pub(crate) struct Deadline {
    sent: Instant,
    /// The session that sent the request; `None` for the connection.
    owner: Option<LinkId>,
    /// The counted waits before the request was sent, which do not move its deadline.
    waited_before: Duration,
    timeout: Duration,
}

impl Deadline {
    /// The deadline of a request `owner` sends now.
    pub(crate) fn start(waits: &ReaderWaits, owner: Option<LinkId>, timeout: Duration) -> Self {
        let waited_before = waits.counted_for(owner);
        Self { sent: Instant::now(), owner, waited_before, timeout }
    }

    /// When the request times out, as far as is known now: while the reader waits on another
    /// session, this moves on with the clock.
    pub(crate) fn at(&self, waits: &ReaderWaits) -> Instant {
        let waited = waits.counted_for(self.owner).saturating_sub(self.waited_before);
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
