//! A loaded session's history, oldest first, in bounded memory.
//!
//! The history of a load is paged backwards by `conversationRowsRangeV4` (`beforeRowId`), but
//! must reach the client oldest first, page by page, in bounded memory. So a first pass walks
//! back recording only the page boundaries (and keeps the newest page); a second pass fetches
//! the older pages again from the oldest on and streams each as it comes; the newest page goes
//! last. Rows appended meanwhile reach the client through the subscription's snapshot.

use zcode_contract::{ErrorKind, MapperError, Outgoing};
use zcode_mapper_sdk::json::error;
use zcode_v4::rows::Row;

use crate::session::ServicesSession;
use crate::session::calls;
use crate::session::open::OpenKind;
use crate::session::ops::{Next, Stage, bound, send, subscribe};
use zcode_v4::follow::feed::Page;

/// History pages at most (200 rows each).
const MAX_HISTORY_PAGES: usize = 5000;

/// The two passes over a loaded session's history.
pub struct Walk {
    /// `beforeRowId` of each page, newest page first (`None`: the tail).
    cursors: Vec<Option<u64>>,
    /// The newest page, streamed last.
    tail: Vec<Row>,
    epoch: Option<String>,
    /// The page the second pass fetches.
    next: usize,
    last_streamed: Option<u64>,
}

impl Walk {
    /// From the newest page back.
    pub fn new() -> Self {
        Self { cursors: vec![None], tail: Vec::new(), epoch: None, next: 0, last_streamed: None }
    }
}

fn check_epoch(walk: &mut Walk, page: &Page) -> Result<(), MapperError> {
    match &walk.epoch {
        None => walk.epoch = Some(page.log_epoch.clone()),
        Some(epoch) if *epoch != page.log_epoch => {
            return Err(error(
                ErrorKind::Native,
                "ZCode's history changed while it was being read; load the session again",
            ));
        }
        Some(_) => {}
    }
    Ok(())
}

/// Streams rows newer than the last streamed one.
fn stream(session: &mut ServicesSession, walk: &mut Walk, rows: &[Row]) -> Vec<String> {
    let workspace = session.follow.state.workspace.clone();
    let mut updates = Vec::new();
    for row in rows {
        if walk.last_streamed.is_some_and(|last| row.id <= last) {
            continue;
        }
        updates.extend(session.follow.state.tracker.history(row, &workspace));
        walk.last_streamed = Some(row.id);
    }
    updates
}

/// First pass: one more page walked back.
pub fn walked(
    session: &mut ServicesSession,
    mut walk: Box<Walk>,
    page: Page,
) -> Result<Next, MapperError> {
    check_epoch(&mut walk, &page)?;
    let index = walk.cursors.len() - 1;
    if page.has_more
        && let Some(first) = page.rows.first()
    {
        if walk.cursors.len() >= MAX_HISTORY_PAGES {
            return Err(error(ErrorKind::Unsupported, "The session's history is too long to load"));
        }
        if index == 0 {
            walk.tail = page.rows.clone();
        }
        walk.cursors.push(Some(first.id));
        let call = calls::rows_range(
            &session.follow.state.workspace,
            &bound(session)?.session_id,
            Some(first.id),
        );
        return Ok(send(Stage::Walk(walk), call));
    }
    // The oldest page: it goes first.
    let updates = stream(session, &mut walk, &page.rows);
    if index == 0 {
        return Ok(subscribe(session, OpenKind::Load, updates));
    }
    walk.next = index - 1;
    next_page(session, walk, updates)
}

/// Second pass: a page fetched again, streamed.
pub fn replayed(
    session: &mut ServicesSession,
    mut walk: Box<Walk>,
    page: Page,
) -> Result<Next, MapperError> {
    check_epoch(&mut walk, &page)?;
    let updates = stream(session, &mut walk, &page.rows);
    walk.next -= 1;
    next_page(session, walk, updates)
}

fn next_page(
    session: &mut ServicesSession,
    mut walk: Box<Walk>,
    mut updates: Vec<String>,
) -> Result<Next, MapperError> {
    if walk.next == 0 {
        let tail = std::mem::take(&mut walk.tail);
        updates.extend(stream(session, &mut walk, &tail));
        return Ok(subscribe(session, OpenKind::Load, updates));
    }
    let call = calls::rows_range(
        &session.follow.state.workspace,
        &bound(session)?.session_id,
        walk.cursors[walk.next],
    );
    let outgoing = Outgoing { updates, ..Outgoing::default() };
    Ok(Next::Send { stage: Stage::Replay(walk), calls: vec![call], outgoing, listen: None })
}
