//! What the Agent routes to a session: legacy `session/event`s (in sequence, the ones V4
//! duplicates dropped unread), V4 conversation frames (the streamed deltas read without a
//! tree), the reply to a resync, and the Agent's reverse requests ([`super::reverse`]).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use zcode_contract::{Action, Effects, MapperError, ReplyBody, SessionInput, Terminal};
use zcode_mapper_sdk::joined;
use zcode_mapper_sdk::json::protocol;
use zcode_v4::schema::native;
use zcode_v4::stream::WireMembers;

use super::{AppServerSession, IntoError};
use crate::conversation::{self, Conversation};
use crate::events::{self, Turn};
use crate::subscription::FrameOutcome;
use crate::wire::{self, Frame, MemberNames, Members, object, raw_str, raw_value};

/// What the session reads of a routed notification's `params` in the envelope's own pass
/// (`wire::classify_as`): a legacy event's head ([`Head`]) and a V4 wire frame's members
/// ([`WireMembers`]). A streamed delta's two lines are then each scanned once here (issue 27);
/// what needs more of the parameters reads them from the line again ([`raw_params`]).
struct Routed;

impl MemberNames for Routed {
    const NAMES: &'static [&'static str] =
        &["seq", "type", "wireVersion", "kind", "subscriptionId", "deliveryKind", "frame", "topic"];
}

type RoutedParams<'a> = Members<'a, Routed>;

/// Whether the members read in the envelope's pass stand for the parameters: an object, no
/// member named twice (which one counts is the general reader's call: the last, as in a tree).
fn as_read(params: &RoutedParams<'_>) -> bool {
    params.is_object() && params.twice().is_none()
}

/// A legacy event's number and type, as they came.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(default, borrow)]
    seq: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "type")]
    kind: Option<&'a RawValue>,
}

impl<'a> Head<'a> {
    fn of(params: &RoutedParams<'a>) -> Option<Self> {
        as_read(params).then(|| Head { seq: params.get("seq"), kind: params.get("type") })
    }
}

fn wire_members<'a>(params: &RoutedParams<'a>) -> Option<WireMembers<'a>> {
    as_read(params).then(|| WireMembers {
        wire_version: params.get("wireVersion"),
        kind: params.get("kind"),
        subscription_id: params.get("subscriptionId"),
        delivery_kind: params.get("deliveryKind"),
        frame: params.get("frame"),
    })
}

/// The `params` of a line already read once, as they came: read again for the paths that need
/// more than the first pass kept (an event read whole, a gap held for replay, a frame read the
/// general way, a reverse request).
fn raw_params(line: &str) -> Result<Option<&RawValue>, MapperError> {
    Ok(match wire::classify(line)? {
        Frame::Notification { params, .. } | Frame::Request { params, .. } => params,
        Frame::Reply(_) => None,
    })
}

/// `turn.completed` as the session reads it: the payload's `usage` and `resultType`, and
/// nothing of the rest (the turn's whole text is in `response`).
#[derive(Deserialize)]
struct Completed<'a> {
    #[serde(borrow)]
    payload: &'a RawValue,
}

#[derive(Deserialize)]
struct CompletedPayload<'a> {
    #[serde(default, deserialize_with = "wire::present")]
    usage: Option<Value>,
    #[serde(default, borrow, rename = "resultType")]
    result_type: Option<&'a RawValue>,
}

impl AppServerSession {
    pub(super) fn map_one(&mut self, input: &SessionInput, effects: &mut Effects) {
        match input {
            SessionInput::Reply(reply) if self.replays.contains(&reply.id) => {
                self.replays.retain(|id| *id != reply.id);
                self.replayed(&reply.body.clone().into_error(), effects);
            }
            SessionInput::Reply(reply) => {
                // The reply to a resync: its recovery frames follow as events.
                if let ReplyBody::Error(error) = &reply.body.clone().into_error() {
                    effects.actions.push(Action::Terminal(Terminal::Broken(native(format!(
                        "ZCode could not resync the conversation: {}",
                        error.message
                    )))));
                } else {
                    effects.actions.push(Action::Ignore("resync acknowledged".to_string()));
                }
            }
            SessionInput::Event(data) => match data.as_text() {
                Some(text) => self.map_lines(text, effects),
                None => effects.actions.push(Action::Terminal(Terminal::Broken(protocol(
                    "ZCode sent binary data on its NDJSON pipe",
                )))),
            },
        }
    }

    /// The frames a read joined for the session, one a line (`joined::lines`), in order. A
    /// streamed delta's line is read where it starts, so the text is not scanned once for its
    /// line ends and again for its frames; any other line is split off and read as it came.
    fn map_lines(&mut self, mut text: &str, effects: &mut Effects) {
        loop {
            let len = match self.v4.leading_deltas(text) {
                Some((deltas, len)) => {
                    self.apply_deltas(&deltas, effects);
                    len
                }
                None => {
                    let line = joined::lines(text).next().unwrap_or_default();
                    self.map_line(line, effects);
                    line.len()
                }
            };
            // Past the line and its newline; the last line ends the text.
            let Some(rest) = text.get(len + 1..) else { return };
            text = rest;
        }
    }

    /// One frame the Agent sent the session, as it came: what breaks is a broken terminal, and
    /// the next line is mapped as it would have been.
    fn map_line(&mut self, line: &str, effects: &mut Effects) {
        // A streamed delta's frame, read in one pass; anything else, the general way.
        if let Some(deltas) = self.v4.line_deltas(line) {
            self.apply_deltas(&deltas, effects);
            return;
        }
        let read = wire::classify_as::<RoutedParams<'_>>(line).and_then(|frame| match frame {
            Frame::Notification { method, params } => {
                self.notification(line, &method, &params.unwrap_or_default(), effects)
            }
            Frame::Request { .. } => self.reverse_line(line, effects),
            Frame::Reply(_) => {
                effects.actions.push(Action::Ignore("reply routed as an event".to_string()));
                Ok(())
            }
        });
        if let Err(error) = read {
            effects.actions.push(Action::Terminal(Terminal::Broken(error)));
        }
    }

    /// A reverse request of the Agent (a few a turn), its parameters read from the line again.
    fn reverse_line(&mut self, line: &str, effects: &mut Effects) -> Result<(), MapperError> {
        if let Frame::Request { id, method, params } = wire::classify(line)? {
            let (id, params) = (raw_value(Some(id))?, raw_value(params)?);
            self.reverse_request(id, &method, &params, effects);
        }
        Ok(())
    }

    /// A notification routed to the session: `line` as it came, `params` what the envelope's
    /// pass read of it. The two that come with every streamed delta, a legacy event and a V4
    /// deltas frame, go on from those members; anything else is read from the line again.
    fn notification(
        &mut self,
        line: &str,
        method: &str,
        params: &RoutedParams<'_>,
        effects: &mut Effects,
    ) -> Result<(), MapperError> {
        if method == "session/event" {
            // While skipped events are replayed, what comes meanwhile is held as it came.
            return match Head::of(params).filter(|_| self.held.is_none()) {
                Some(head) => self.legacy_head(head, || raw_params(line), effects),
                None => self.legacy_event(raw_params(line)?, effects),
            };
        }
        if method == "v4/conversation/frame" {
            // The connection routed the frame on its first `topic` and read no further
            // (`wire::leading_frame_topic`): which of two would count is a guess.
            if params.named_twice("topic") {
                return Err(protocol(
                    "ZCode wrote parameters that cannot be read: duplicate field `topic`",
                ));
            }
            if let Some(deltas) = wire_members(params).and_then(|wire| self.v4.deltas(wire)) {
                self.apply_deltas(&deltas, effects);
                return Ok(());
            }
        }
        let params = raw_value(raw_params(line)?)?;
        self.read_notification(method, params, effects);
        Ok(())
    }

    /// A legacy `session/event`. Its number and type are read first, alone: an event this
    /// stream only ignores (with V4, every text delta comes twice) is dropped without its
    /// payload being read. Params the head cannot be read from go the general way, which has
    /// the errors.
    pub(super) fn legacy_event(
        &mut self,
        params: Option<&RawValue>,
        effects: &mut Effects,
    ) -> Result<(), MapperError> {
        // While skipped events are replayed, what comes meanwhile waits behind them.
        if let Some(held) = &mut self.held {
            held.push(params.map_or_else(|| "null".to_string(), |p| p.get().to_string()));
            effects.actions.push(Action::Ignore("held behind a replay".to_string()));
            return Ok(());
        }
        let head = params.and_then(object::<Head<'_>>);
        let Some(head) = head else {
            let params = raw_value(params)?;
            let seq = params.get("seq").and_then(Value::as_u64);
            if self.in_sequence(seq, || Ok(params.to_string()), effects)? {
                self.map_event(&params, effects);
            }
            return Ok(());
        };
        self.legacy_head(head, || Ok(params), effects)
    }

    /// A legacy event whose head is read. `params` gives the event as it came, for what needs
    /// more than the head (a gap holds it, an event shown is read): an event dropped as V4's
    /// duplicate, a streamed delta's, never needs it.
    fn legacy_head<'p>(
        &mut self,
        head: Head<'_>,
        params: impl Fn() -> Result<Option<&'p RawValue>, MapperError>,
        effects: &mut Effects,
    ) -> Result<(), MapperError> {
        // The sequence sees every event that reaches the session, dropped or not.
        let seq = head.seq.and_then(|raw| serde_json::from_str::<u64>(raw.get()).ok());
        let text = || Ok(params()?.map_or("null", RawValue::get).to_string());
        if !self.in_sequence(seq, text, effects)? {
            return Ok(());
        }
        let kind = raw_str(head.kind);
        if let Some(why) = kind.as_deref().and_then(|kind| events::ignored(kind, !self.v4.active()))
        {
            effects.actions.push(Action::Ignore(why));
            return Ok(());
        }
        let params = params()?;
        // The end of the turn carries the turn's whole text (`response`): read without it.
        if kind.as_deref() == Some("turn.completed")
            && let Some(completed) = params.and_then(object::<Completed<'_>>)
            && let Some(payload) = object::<CompletedPayload<'_>>(completed.payload)
        {
            let result_type = raw_str(payload.result_type);
            let actions =
                events::completed(&mut self.turn(), payload.usage, result_type.as_deref());
            self.event_actions(Ok(actions), effects);
            return Ok(());
        }
        self.map_event(&raw_value(params)?, effects);
        Ok(())
    }

    fn apply_deltas(&mut self, deltas: &[zcode_v4::stream::Delta<'_>], effects: &mut Effects) {
        self.applied(effects, |conversation, cx, out| conversation.apply_deltas(deltas, cx, out));
    }

    /// What the legacy stream's mapping needs of the session.
    pub(super) fn turn(&mut self) -> Turn<'_> {
        Turn {
            tools: &mut self.tools,
            workspace: &self.workspace,
            running: self.running,
            usage: &mut self.usage,
            content: !self.v4.active(),
        }
    }

    /// Checks a legacy event's number: `false` when the event goes no further (a duplicate, an
    /// event held while skipped ones are replayed, or a gap that broke the turn). `params`
    /// gives the event as it came, held when it shows a gap (read only then).
    pub(super) fn in_sequence(
        &mut self,
        seq: Option<u64>,
        params: impl FnOnce() -> Result<String, MapperError>,
        effects: &mut Effects,
    ) -> Result<bool, MapperError> {
        if let (Some(seq), Some(last)) = (seq, self.event_seq)
            && seq <= last
            && seq != 0
        {
            effects.actions.push(Action::Ignore("duplicate session event".to_string()));
            return Ok(false);
        }
        if let Some(seq) = seq.filter(|s| *s != 0) {
            let last = self.event_seq;
            // Session events are numbered one by one; a jump means some never came (the
            // turn's result among them, perhaps). A real stream was seen missing events
            // ("ZCode app-server Session Protocol" probe log, CLI 0.16.x, §6.3), and ZCode
            // keeps them to replay (`session/events` with `afterSeq`, §8.3): they are asked
            // for, once, and this event waits behind them.
            //
            // With V4 subscribed, the events V4 also carries are routed apart and dropped
            // (`connection::carried_route`): their numbers are skipped by design, and V4's own
            // sequence guards what they show.
            if let Some(last) = last.filter(|l| seq > l + 1 && self.running && !self.v4.active()) {
                if let Some(sid) = self.id.clone().filter(|_| !self.replaying) {
                    self.held = Some(vec![params()?]);
                    self.announced.push((
                        "session/events".to_string(),
                        json!({"sessionId": sid, "afterSeq": last}),
                    ));
                    effects.requests += 1;
                    effects.actions.push(Action::Ignore(format!(
                        "ZCode skipped session events after {last}: replaying them"
                    )));
                    return Ok(false);
                }
                self.event_seq = Some(seq);
                effects.actions.push(Action::Terminal(Terminal::Broken(protocol(format!(
                    "ZCode skipped session events: expected event {}, got {seq}",
                    last + 1
                )))));
                return Ok(false);
            }
            self.event_seq = Some(seq);
        }
        Ok(true)
    }

    /// The reply to a replay of skipped events: they are read in order, then the events held
    /// meanwhile. What is still missing then (ZCode's log keeps only turn-level events, the
    /// live record of Desktop 3.12.3 found) breaks the turn, as a failed replay does.
    fn replayed(&mut self, body: &ReplyBody, effects: &mut Effects) {
        let held = self.held.take().unwrap_or_default();
        let events = match body {
            ReplyBody::Ok(data) => data
                .as_text()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
                .and_then(|result| result.get("events").and_then(Value::as_array).cloned())
                .ok_or_else(|| protocol("ZCode answered session/events without its events")),
            ReplyBody::Error(error) => Err(protocol(format!(
                "ZCode could not replay the skipped session events: {}",
                error.message
            ))),
            ReplyBody::Lost(why) => {
                Err(protocol(format!("ZCode could not replay the skipped session events: {why}")))
            }
        };
        let events = match events {
            Ok(events) => events,
            Err(error) => {
                effects.actions.push(Action::Terminal(Terminal::Broken(error)));
                return;
            }
        };
        self.replaying = true;
        let texts = events.iter().map(Value::to_string).chain(held);
        for text in texts {
            let read = RawValue::from_string(text)
                .map_err(|e| protocol(format!("ZCode replayed an event that cannot be read: {e}")))
                .and_then(|raw| self.legacy_event(Some(&raw), effects));
            if let Err(error) = read {
                effects.actions.push(Action::Terminal(Terminal::Broken(error)));
                break;
            }
        }
        self.replaying = false;
    }

    /// A legacy event in sequence, read whole.
    pub(super) fn map_event(&mut self, params: &Value, effects: &mut Effects) {
        let actions = events::map(&mut self.turn(), params);
        self.event_actions(actions, effects);
    }

    pub(super) fn event_actions(
        &mut self,
        actions: Result<Vec<Action>, MapperError>,
        effects: &mut Effects,
    ) {
        let v4_content = self.v4.active();
        match actions {
            Ok(actions) => {
                for action in actions {
                    match action {
                        // With V4 the turn's last content may still be in a frame on
                        // its way: the end is held until the V4 turn header closes.
                        Action::Terminal(end @ (Terminal::Stop(_) | Terminal::Failed(_)))
                            if v4_content && !self.conversation.turn_closed() =>
                        {
                            self.pending_terminal = Some(end);
                            effects.actions.push(Action::Ignore(
                                "turn end waits for the V4 conversation".to_string(),
                            ));
                        }
                        other => effects.actions.push(other),
                    }
                }
            }
            Err(error) => effects.actions.push(Action::Terminal(Terminal::Broken(error))),
        }
    }

    pub(super) fn read_notification(&mut self, method: &str, params: Value, effects: &mut Effects) {
        match method {
            "v4/conversation/frame" => match self.v4.frame(params) {
                Ok(FrameOutcome::Applied(payload)) => {
                    self.applied(effects, |conversation, cx, out| {
                        conversation.apply(payload, cx, out)
                    });
                }
                Ok(FrameOutcome::Skipped(why)) => {
                    effects.actions.push(Action::Ignore(why.to_string()))
                }
                Ok(FrameOutcome::Gap(why)) => {
                    let Some(sid) = self.id.clone() else { return };
                    self.announced
                        .push(("v4/conversation/resync".to_string(), self.v4.resync_params(&sid)));
                    effects.requests += 1;
                    effects.actions.push(Action::Ignore(format!("{why}: resync")));
                }
                Err(error) => effects.actions.push(Action::Terminal(Terminal::Broken(error))),
            },
            other => effects.actions.push(Action::Ignore(format!("notification {other}"))),
        }
    }

    /// A V4 frame applied to the conversation by `apply`, which adds what it shows to the
    /// batch's actions: a streamed line's actions go there directly, with no list of their own
    /// (issue 27). An error takes back what the frame added and breaks the turn; a turn end
    /// the legacy stream gave is let through once the V4 turn header has closed.
    pub(super) fn applied(
        &mut self,
        effects: &mut Effects,
        apply: impl FnOnce(
            &mut Conversation,
            &mut conversation::Context<'_>,
            &mut Vec<Action>,
        ) -> Result<(), MapperError>,
    ) {
        let mut cx = conversation::Context {
            tools: &mut self.tools,
            workspace: &self.workspace,
            shown_mode: &mut self.mode,
        };
        let before = effects.actions.len();
        match apply(&mut self.conversation, &mut cx, &mut effects.actions) {
            Ok(()) if effects.actions.len() == before => {
                effects.actions.push(Action::Ignore("v4 frame applied".into()));
            }
            Ok(()) => {}
            Err(error) => {
                effects.actions.truncate(before);
                effects.actions.push(Action::Terminal(Terminal::Broken(error)));
                return;
            }
        }
        if self.conversation.turn_closed()
            && let Some(end) = self.pending_terminal.take()
        {
            effects.actions.push(Action::Terminal(end));
        }
    }
}
