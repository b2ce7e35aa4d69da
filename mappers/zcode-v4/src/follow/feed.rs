//! Following the conversation: physical frames in, logical frames applied in sequence, and
//! recovery when the stream is damaged or has a gap.
//!
//! Rules (ZCode 3.15.1 `zcode-protocol-v4/transport.ts`, `wire.ts`; V4S §5.1): a snapshot frame
//! has `fromSeq` 0 and `snapshot.seq == toSeq`; a delta frame must start at the current `seq`
//! and moves it to `toSeq`; logical frame ordinals strictly increase. A gap, an older frame or
//! damage in transit asks for a resync with `{base: null, forceSnapshot: true}`
//! (`resyncConversationV4` on the Services Server; a request announced by `map`); until the `recovery` snapshot arrives other frames are dropped,
//! and damage in the recovery itself is a protocol break. When a snapshot's window does not
//! reach back to the rows the client already knows, the rows in between are paged
//! (`conversationRowsRangeV4`) first, so nothing is lost; frames arriving meanwhile wait.

use serde_json::Value;
use zcode_contract::{Action, MapperError, NativeReply};

use zcode_mapper_sdk::json::protocol;

use super::{Follow, MapRequest, State, invalid_result, reply_value};
use crate::acp::interactions::Context;
use crate::acp::track::Emitted;
use crate::rows::{self, Row};
use crate::schema::Fields;
use crate::state::{Conversation, RowsWindow};
use crate::stream::{self, CheckedDelta, CheckedFrame};
use crate::wire::{self, Assembler, Delivery, Envelope, Payload, Wire, WireError};

/// Pages fetched to close one gap; more means the stream lost too much to catch up.
const MAX_CATCH_UP_PAGES: u32 = 10;
/// Frames held while a gap is being closed.
const MAX_HELD_FRAMES: usize = 1024;
const MAX_HELD_BYTES: usize = 32 * 1024 * 1024;

#[derive(Default)]
pub enum Phase {
    /// Subscribed; the initial snapshot has not arrived.
    #[default]
    AwaitSnapshot,
    Live,
    /// A resync was asked for; frames before the recovery snapshot are dropped.
    Recovering,
    /// A snapshot is held while older rows are paged.
    CatchingUp(Box<CatchUp>),
}

pub struct CatchUp {
    conversation: Conversation,
    window: Vec<Row>,
    watermark: u64,
    /// Rows between the watermark and the window, oldest first.
    collected: Vec<Row>,
    pages: u32,
    held: Vec<String>,
    held_bytes: usize,
}

#[derive(Default)]
pub struct Sync {
    pub phase: Phase,
    pub assembler: Assembler,
    pub last_ordinal: u64,
}

impl Sync {
    pub fn live(&self) -> bool {
        matches!(self.phase, Phase::Live)
    }
}

/// One page of `conversationRowsRangeV4`: `{rows (rowId ascending), atSeq, atRevision,
/// atLogEpoch, hasMore}`.
pub struct Page {
    pub rows: Vec<Row>,
    pub log_epoch: String,
    pub has_more: bool,
}

/// Reads a page; `label` names the call that fetched it.
pub fn page(result: &Value, label: &str) -> Result<Page, MapperError> {
    let read = || -> Result<Page, MapperError> {
        let fields = Fields::native(result, "rows page")?;
        let rows = fields.array("rows")?.iter().map(rows::parse).collect::<Result<Vec<_>, _>>()?;
        if rows.windows(2).any(|pair| pair[0].id >= pair[1].id) {
            return Err(protocol("rows page: rows are not in rowId order"));
        }
        fields.u64("atSeq")?;
        fields.u64("atRevision")?;
        Ok(Page {
            rows,
            log_epoch: fields.non_empty_str("atLogEpoch")?.to_string(),
            has_more: fields.bool("hasMore")?,
        })
    };
    read().map_err(|problem| invalid_result(label, &problem))
}

/// Frames from this size on are first read as a fragment, in place ([`wire::fragment`]): a
/// turn's last frame comes as fragments of about 0.8 MB of base64 each, which a tree would
/// copy (issue 27). A smaller frame is read as a tree at once, rather than after a failed read.
const FRAGMENT_IN_PLACE_FROM: usize = 64 * 1024;

/// A frame as read: a fragment in place, a streamed deltas frame with no tree of it, or a tree.
enum Read<'a> {
    Fragment(Wire<'a>),
    Deltas(CheckedFrame<'a>),
    Tree(Value),
}

pub fn on_event(
    session: &mut Follow,
    json: &str,
    out: &mut Vec<Action>,
) -> Result<(), MapperError> {
    let fragment = (json.len() >= FRAGMENT_IN_PLACE_FROM).then(|| wire::fragment(json)).flatten();
    // The frame a turn streams in, a thousand deltas at a time: a tree of it was most of what
    // the session held while a long turn streamed (issue 27).
    let read = match fragment {
        Some(fragment) => Read::Fragment(fragment),
        None => match stream::read_checked_frame(json) {
            Some(frame) => Read::Deltas(frame),
            None => Read::Tree(
                serde_json::from_str(json)
                    .map_err(|e| protocol(format!("A conversation frame is not JSON: {e}")))?,
            ),
        },
    };
    let route = match &read {
        Read::Fragment(fragment) => Some(fragment.envelope().route()),
        Read::Deltas(frame) => Some(frame.envelope.route()),
        Read::Tree(value) => wire::route_of(value),
    };
    let Some((topic, subscription)) = route else {
        return Err(protocol("A conversation frame names no topic or subscription"));
    };
    let Some(bound) = &session.state.bound else {
        out.push(Action::Ignore("frame before the session was opened".into()));
        return Ok(());
    };
    if topic != bound.topic {
        // ZCode fans conversation frames out per workspace: other sessions' frames share the route.
        out.push(Action::Ignore("frame of another conversation".into()));
        return Ok(());
    }
    if bound.subscription_id.as_deref() != Some(subscription) {
        out.push(Action::Ignore("frame of another subscription".into()));
        return Ok(());
    }
    if let Phase::CatchingUp(catch_up) = &mut session.state.sync.phase {
        catch_up.held_bytes += json.len();
        catch_up.held.push(json.to_string());
        if catch_up.held.len() > MAX_HELD_FRAMES || catch_up.held_bytes > MAX_HELD_BYTES {
            return Err(protocol(
                "Too many conversation frames arrived while a gap in the stream was being closed",
            ));
        }
        return Ok(());
    }
    intake(session, read, out)
}

fn intake(session: &mut Follow, read: Read<'_>, out: &mut Vec<Action>) -> Result<(), MapperError> {
    let wire = match read {
        Read::Fragment(fragment) => fragment,
        Read::Deltas(frame) => return intake_deltas(session, frame, out),
        Read::Tree(value) => match wire::parse(value) {
            Ok(wire) => wire,
            Err(WireError::Break(message)) => return Err(protocol(message)),
            Err(WireError::Fault(message)) => return fault(session, message, out),
        },
    };
    if !in_order(session, wire.envelope(), matches!(wire, Wire::Fragment { .. }), out)? {
        return Ok(());
    }
    let sync = &mut session.state.sync;
    let (envelope, frame) = match sync.assembler.accept(wire) {
        Ok(Some(done)) => done,
        Ok(None) => {
            out.push(Action::Ignore("fragment".into()));
            return Ok(());
        }
        Err(WireError::Fault(message)) => return fault(session, message, out),
        Err(WireError::Break(message)) => return Err(protocol(message)),
    };
    sync.last_ordinal = envelope.ordinal;
    let frame = match wire::logical(&envelope, frame) {
        Ok(frame) => frame,
        Err(WireError::Fault(message)) => return fault(session, message, out),
        Err(WireError::Break(message)) => return Err(protocol(message)),
    };
    session.state.clock = session.state.clock.max(frame.sent_at);
    match frame.payload {
        Payload::Snapshot(snapshot) => {
            let (conversation, rows) = Conversation::parse(&snapshot)?;
            let bound = session.state.bound.as_ref().expect("bound above");
            if conversation.session_id != bound.session_id {
                return Err(protocol("A snapshot of another session arrived on this subscription"));
            }
            if frame.from_seq != 0 || conversation.seq != frame.to_seq {
                return fault(session, "a snapshot frame's sequence is inconsistent".into(), out);
            }
            install(session, conversation, rows, out)
        }
        Payload::Deltas(deltas) => {
            let deltas = deltas.into_iter().map(CheckedDelta::Tree);
            apply_deltas(session, (frame.from_seq, frame.to_seq), deltas, out)
        }
    }
}

/// Whether a frame with `envelope` may go on: the recovery drops what comes before its
/// snapshot, and logical frame ordinals strictly increase (but for the fragments of one frame,
/// and a snapshot that restarts the stream). A frame out of order is a fault.
fn in_order(
    session: &mut Follow,
    envelope: &Envelope,
    fragment: bool,
    out: &mut Vec<Action>,
) -> Result<bool, MapperError> {
    let sync = &session.state.sync;
    let awaiting = matches!(sync.phase, Phase::AwaitSnapshot | Phase::Recovering);
    if matches!(sync.phase, Phase::Recovering) && envelope.delivery != Delivery::Recovery {
        out.push(Action::Ignore("frame before the recovery snapshot".into()));
        return Ok(false);
    }
    let continuing = sync.assembler.in_progress() && fragment;
    let restarts = awaiting && envelope.delivery != Delivery::Online;
    if !continuing && !restarts && envelope.ordinal <= sync.last_ordinal {
        let message =
            format!("frame ordinal {} does not follow {}", envelope.ordinal, sync.last_ordinal);
        fault(session, message, out)?;
        return Ok(false);
    }
    Ok(true)
}

/// A complete deltas frame read with no tree of it ([`stream::read_checked_frame`]): the
/// steps of [`intake`] for such a frame, whose checks the read made.
fn intake_deltas(
    session: &mut Follow,
    frame: CheckedFrame<'_>,
    out: &mut Vec<Action>,
) -> Result<(), MapperError> {
    let CheckedFrame { envelope, from_seq, to_seq, sent_at, deltas } = frame;
    if !in_order(session, &envelope, false, out)? {
        return Ok(());
    }
    let sync = &mut session.state.sync;
    match sync.assembler.check_complete() {
        Ok(()) => {}
        Err(WireError::Fault(message)) => return fault(session, message, out),
        Err(WireError::Break(message)) => return Err(protocol(message)),
    }
    sync.last_ordinal = envelope.ordinal;
    session.state.clock = session.state.clock.max(sent_at);
    apply_deltas(session, (from_seq, to_seq), deltas.into_iter(), out)
}

/// Applies a deltas frame `(fromSeq, toSeq]`, which must continue the log.
fn apply_deltas<'a>(
    session: &mut Follow,
    (from_seq, to_seq): (u64, u64),
    deltas: impl Iterator<Item = CheckedDelta<'a>>,
    out: &mut Vec<Action>,
) -> Result<(), MapperError> {
    let awaiting = matches!(session.state.sync.phase, Phase::AwaitSnapshot | Phase::Recovering);
    let Some(conversation) = &session.state.conversation else {
        return fault(session, "deltas arrived before a snapshot".into(), out);
    };
    if from_seq != conversation.seq || awaiting {
        let message = format!(
            "a gap in the conversation log (at {}, frame from {from_seq})",
            conversation.seq
        );
        return fault(session, message, out);
    }
    let mut state_changed = false;
    // By value: each delta (and what its row held) is dropped once it is mapped.
    for delta in deltas {
        state_changed |= match delta {
            CheckedDelta::Append(append) => {
                let state = &mut session.state;
                let emitted = state.tracker.delta(append.row_id, &append.path, &append.append)?;
                emit(state, emitted, out);
                false
            }
            CheckedDelta::Tree(delta) => apply_delta(&mut session.state, delta, out)?,
        };
    }
    session.state.conversation.as_mut().expect("checked above").seq = to_seq;
    if state_changed {
        state_updated(&mut session.state, out)?;
    }
    Ok(())
}

/// Drops the live stream and asks for a recovery snapshot.
pub fn resync(session: &mut Follow, out: &mut Vec<Action>, why: &str) {
    session.state.sync.phase = Phase::Recovering;
    session.state.sync.assembler.reset();
    session.announce(MapRequest::Resync);
    out.push(Action::Ignore(format!("resynchronising the conversation: {why}")));
}

/// Damage or a gap: resync (a second fault while recovering is a protocol break).
fn fault(session: &mut Follow, message: String, out: &mut Vec<Action>) -> Result<(), MapperError> {
    if matches!(session.state.sync.phase, Phase::Recovering) {
        return Err(protocol(format!("The V4 recovery failed: {message}")));
    }
    resync(session, out, &message);
    Ok(())
}

/// A snapshot arrived: reconcile it with what the client knows, paging older rows first if the
/// window does not reach back far enough.
fn install(
    session: &mut Follow,
    conversation: Conversation,
    rows: RowsWindow,
    out: &mut Vec<Action>,
) -> Result<(), MapperError> {
    let watermark = session.state.tracker.watermark();
    if let (Some(watermark), Some(first)) = (watermark, rows.window.first())
        && first.id > watermark
        && rows.first_row_id != Some(first.id)
    {
        let before = first.id;
        session.state.sync.phase = Phase::CatchingUp(Box::new(CatchUp {
            conversation,
            window: rows.window,
            watermark,
            collected: Vec::new(),
            pages: 0,
            held: Vec::new(),
            held_bytes: 0,
        }));
        session.announce(MapRequest::RowsPage { before });
        out.push(Action::Ignore("paging rows the stream skipped".into()));
        return Ok(());
    }
    let coverage = rows.window.first().map(|row| row.id);
    finish(session, conversation, rows.window, coverage, out)
}

fn finish(
    session: &mut Follow,
    conversation: Conversation,
    rows: Vec<Row>,
    coverage: Option<u64>,
    out: &mut Vec<Action>,
) -> Result<(), MapperError> {
    let state = &mut session.state;
    let watermark = state.tracker.watermark();
    let workspace = state.workspace.clone();
    if let Some(from) = coverage.filter(|_| watermark.is_some()) {
        let present: Vec<u64> = rows.iter().map(|row| row.id).collect();
        state.tracker.forget_missing(from, &present);
    }
    for row in &rows {
        let emitted = if state.tracker.knows(row.id) {
            state.tracker.upserted(row, &workspace)?
        } else if watermark.is_some_and(|w| row.id > w) {
            state.tracker.appended(row, &workspace)?
        } else {
            state.tracker.baseline(row);
            Emitted::default()
        };
        emit(state, emitted, out);
    }
    state.settings.adopt(&conversation.config, conversation.revision);
    state.conversation = Some(conversation);
    state.sync.phase = Phase::Live;
    state_updated(state, out)
}

fn emit(state: &mut State, emitted: Emitted, out: &mut Vec<Action>) {
    for signal in &emitted.signals {
        state.turn.signal(signal);
    }
    // Each update's value is dropped as soon as its text is made (F-20).
    out.extend(emitted.updates.into_iter().map(|update| Action::Update(update.into_text())));
}

/// Applies one delta; true when it changed the state (not only rows).
fn apply_delta(
    state: &mut State,
    mut delta: Value,
    out: &mut Vec<Action>,
) -> Result<bool, MapperError> {
    let fields = Fields::native(&delta, "V4 delta")?;
    let op = fields.one_of(
        "op",
        &[
            "row.appended",
            "row.upserted",
            "row.removed",
            "row.delta",
            "state.updated",
            "pluginUi.resourceUpdated",
            "pluginUi.resourceListChanged",
            "pluginUi.instanceClosed",
            "pluginUi.appToolCall",
            "workflowRun.updated",
            "workflowRun.removed",
        ],
    )?;
    let workspace = state.workspace.clone();
    let emitted = match op {
        "row.appended" | "row.upserted" => {
            fields.only(&["op", "row"])?;
            fields.value("row")?;
            let row = rows::parse_owned(delta["row"].take())?;
            if op == "row.appended" {
                state.tracker.appended(&row, &workspace)?
            } else {
                state.tracker.upserted(&row, &workspace)?
            }
        }
        "row.removed" => {
            fields.only(&["op", "fromRowId"])?;
            state.tracker.removed(fields.u64("fromRowId")?);
            out.push(Action::Ignore("rows removed (an edit or retry elsewhere)".into()));
            return Ok(false);
        }
        "row.delta" => {
            fields.only(&["op", "rowId", "path", "append"])?;
            state.tracker.delta(fields.u64("rowId")?, fields.str("path")?, fields.str("append")?)?
        }
        "state.updated" => {
            fields.only(&["op", "patch"])?;
            let conversation = state.conversation.as_mut().expect("deltas follow a snapshot");
            conversation.apply_patch(fields.value("patch")?)?;
            return Ok(true);
        }
        // Live-only plugin UI traffic and per-run workflow increments (this client does not
        // declare `workflowRunDeltas`): nothing of them reaches ACP.
        other => {
            out.push(Action::Ignore(other.to_string()));
            return Ok(false);
        }
    };
    emit(state, emitted, out);
    Ok(false)
}

/// After a state change: interactions not surfaced yet, and metadata that changed.
fn state_updated(state: &mut State, out: &mut Vec<Action>) -> Result<(), MapperError> {
    let Some(conversation) = &state.conversation else { return Ok(()) };
    state.settings.adopt(&conversation.config, conversation.revision);
    let interactions = conversation.interactions.clone();
    let plan_operations = state.plan_operations();
    let cx = Context {
        workspace: &state.workspace,
        running: state.turn.running() && !state.turn.cancelled,
        plan_operations,
        forms: state.client.form_elicitation,
        tracker: &mut state.tracker,
        plan: &mut state.plan,
    };
    let (actions, problem) = state.interactions.surface(&interactions, cx)?;
    out.extend(actions);
    if let Some(problem) = problem
        && let Some(action) = state.turn.break_turn(problem)
    {
        let plan_operations = state.plan_operations();
        out.extend(state.plan.remove(plan_operations).into_iter().map(Action::Update));
        out.push(action);
    }
    if !state.opening {
        out.extend(state.metadata()?.into_iter().map(Action::Update));
    }
    Ok(())
}

/// A reply to a request `map` announced.
pub fn on_reply(
    session: &mut Follow,
    reply: &NativeReply,
    out: &mut Vec<Action>,
) -> Result<(), MapperError> {
    let Some(request) = session.in_flight.remove(&reply.id) else {
        out.push(Action::Ignore("reply to no request of this session".into()));
        return Ok(());
    };
    match request {
        MapRequest::Resync => {
            let result = reply_value(reply, session.labels.resync).map_err(|problem| {
                protocol(format!("The V4 resync failed: {}", problem.message))
            })?;
            let ack = Fields::native(&result, "resync result")?.object("ack", "resync ack")?;
            ack.non_empty_str("subscriptionId")?;
            out.push(Action::Ignore("resync acknowledged".into()));
            Ok(())
        }
        MapRequest::RowsPage { .. } => {
            let result = reply_value(reply, session.labels.rows_page)?;
            let page = page(&result, session.labels.rows_page)?;
            let Phase::CatchingUp(catch_up) = &mut session.state.sync.phase else {
                return Err(protocol("A rows page arrived outside a catch-up"));
            };
            if page.log_epoch != catch_up.conversation.log_epoch {
                return Err(protocol(
                    "ZCode's conversation log changed while a gap was being closed",
                ));
            }
            let reached =
                page.rows.first().is_none_or(|row| row.id <= catch_up.watermark) || !page.has_more;
            let mut older: Vec<Row> =
                page.rows.into_iter().filter(|row| row.id > catch_up.watermark).collect();
            let before = older.first().map(|row| row.id);
            older.append(&mut catch_up.collected);
            catch_up.collected = older;
            catch_up.pages += 1;
            if !reached {
                if catch_up.pages >= MAX_CATCH_UP_PAGES {
                    return Err(protocol(
                        "The conversation stream skipped too many rows to catch up",
                    ));
                }
                let before = before.expect("not reached means a row above the watermark");
                session.announce(MapRequest::RowsPage { before });
                return Ok(());
            }
            let Phase::CatchingUp(catch_up) =
                std::mem::replace(&mut session.state.sync.phase, Phase::Live)
            else {
                unreachable!("matched above")
            };
            let CatchUp { conversation, window, mut collected, held, .. } = *catch_up;
            let coverage = collected.first().or(window.first()).map(|row| row.id);
            collected.extend(window);
            finish(session, conversation, collected, coverage, out)?;
            for frame in held {
                on_event(session, &frame, out)?;
            }
            Ok(())
        }
    }
}

/// At the end of a batch: does the turn end?
pub fn settle(session: &mut Follow, out: &mut Vec<Action>) -> Result<(), MapperError> {
    let state = &mut session.state;
    let Some(conversation) = &state.conversation else { return Ok(()) };
    if let Some(terminal) = state.turn.check(conversation, state.sync.live()) {
        let keep_proposal =
            matches!(terminal, zcode_contract::Terminal::Stop(zcode_contract::StopReason::EndTurn));
        if !keep_proposal {
            let plan_operations = state.plan_operations();
            out.extend(state.plan.remove(plan_operations).into_iter().map(Action::Update));
        }
        out.push(Action::Terminal(terminal));
    }
    Ok(())
}
