//! One echo session: its operations, and its events, which come numbered: after a gap the
//! session asks the host for the `missed` chunks, then maps what it held back, in order.

use zcode_mapper_sdk::acp::prompt;
use zcode_mapper_sdk::acp::turn::Turn;
use zcode_mapper_sdk::acp::update::Chunk;
use zcode_mapper_sdk::prelude::*;
use zcode_mapper_sdk::sequence::{Order, Sequence};

use crate::wire::{self, Event, request};

const TIMEOUT_MS: u32 = 10_000;
const HISTORY_PAGE: u32 = 50;

/// Where an operation waits. `Done` finishes when resumed (after an acknowledgement, or nothing).
pub enum Stage {
    Opening(OpenKind),
    History { cursor: u64 },
    Done,
}

#[derive(Default)]
pub struct Session {
    workspace: String,
    /// The host's session, once open, and the route its events come by.
    session_id: Option<String>,
    route: String,
    turn: Turn,
    events: Sequence<Event>,
}

impl zcode_mapper_sdk::Session for Session {
    /// A request made while mapping asks for the chunks missed before this event.
    type Tag = u64;
    type Stage = Stage;

    fn new(init: &SessionInit) -> Self {
        Self { workspace: init.workspace.clone(), ..Self::default() }
    }

    /// `open` with a route made of its request id (unique per connection), registered before
    /// the request is written so no event of the new session can arrive unrouted.
    fn open(&mut self, params: SessionParams, id: u64) -> Result<Next<Stage>, MapperError> {
        params.refuse_mcp_servers("The echo host")?;
        if self.session_id.is_some() {
            return Err(internal("This session is already open"));
        }
        self.route = format!("echo-{id}");
        let mut open = json!({"cwd": self.workspace, "route": self.route});
        if let Some(session_id) = params.session_id {
            open["sessionId"] = json!(session_id);
        }
        let open = request(id, "open", open, TIMEOUT_MS);
        Ok(Next::send(Stage::Opening(params.kind), open).routing(&self.route))
    }

    fn prompt(&mut self, prompt: Vec<Block>, id: u64) -> Result<Next<Stage>, MapperError> {
        let text = prompt::text_for("The echo host", prompt)?;
        let params = self.with_session(json!({"text": text}))?;
        self.turn.start()?;
        Ok(Next::send(Stage::Done, request(id, "prompt", params, TIMEOUT_MS)))
    }

    /// Untracked (timeout 0): nothing to wait for, and the turn's end event answers it.
    fn cancel(&mut self, id: u64) -> Result<Next<Stage>, MapperError> {
        let cancel = request(id, "cancel", self.with_session(json!({}))?, 0);
        self.turn.cancel();
        Ok(Next::send(Stage::Done, cancel))
    }

    fn finish_turn(&mut self, _: u64) -> Result<Next<Stage>, MapperError> {
        self.turn.finish();
        Ok(Next::finished())
    }

    fn close(&mut self, id: u64) -> Result<Next<Stage>, MapperError> {
        let Some(session_id) = self.session_id.take() else { return Ok(Next::finished()) };
        let close = request(id, "close", json!({"sessionId": session_id}), TIMEOUT_MS);
        Ok(Next::send(Stage::Done, close).unrouting(std::mem::take(&mut self.route)))
    }

    fn resume(&mut self, stage: Stage, reply: Reply, id: u64) -> Result<Next<Stage>, MapperError> {
        let result = reply_value(reply, "The echo host")?;
        match stage {
            Stage::Opening(kind) => {
                let opened = Fields::native(&result, "echo open result")?;
                let session_id = opened.non_empty_str("sessionId")?;
                self.session_id = Some(session_id.to_string());
                match kind {
                    OpenKind::Create => Ok(Next::done(&json!({"sessionId": session_id}))),
                    OpenKind::Resume => Ok(Next::finished()),
                    OpenKind::Load => self.history(0, id),
                    OpenKind::Fork => Err(internal("echo cannot fork (the SDK refuses it first)")),
                }
            }
            // A page streams with the request for the next; the last waits for nothing.
            Stage::History { cursor } => {
                let page = Fields::native(&result, "echo history result")?;
                let updates =
                    page.array("entries")?.iter().map(replayed).collect::<Result<_, _>>()?;
                let next = match page.opt_u64("next")? {
                    Some(next) if next > cursor => self.history(next, id)?,
                    Some(_) => return Err(protocol("The echo history cursor went backwards")),
                    None => Next::Wait(Stage::Done, Outgoing::default()),
                };
                Ok(next.with_updates(updates))
            }
            Stage::Done => Ok(Next::finished()),
        }
    }

    fn map_event(&mut self, event: &NativeData) -> Result<Mapped<u64>, MapperError> {
        let NativeData::Binary(bytes) = event else {
            return Err(protocol("Echo events are binary"));
        };
        let (seq, event) = Event::parse(bytes)?;
        let order = self.events.arrive(seq.into(), event);
        self.ordered(order)
    }

    /// The missed chunks, then what was held back meanwhile, in order.
    fn map_reply(&mut self, before: u64, reply: &NativeReply) -> Result<Mapped<u64>, MapperError> {
        let result = reply_json(reply, "The echo host", "echo.missed")?;
        let mut mapped = Mapped::nothing();
        for missed in Fields::native(&result, "echo missed result")?.array("chunks")? {
            let missed = Fields::native(missed, "missed chunk")?;
            self.events.refill(missed.u64("seq")?, before)?;
            mapped.append(self.event(Event::Chunk(missed.str("text")?.to_string()))?);
        }
        for order in self.events.replay(before) {
            mapped.append(self.ordered(order)?);
        }
        Ok(mapped)
    }
}

impl Session {
    fn with_session(&self, mut params: Value) -> Result<Value, MapperError> {
        let not_open = || internal("The echo session is not open");
        params["sessionId"] = json!(self.session_id.as_ref().ok_or_else(not_open)?);
        Ok(params)
    }

    fn history(&self, cursor: u64, id: u64) -> Result<Next<Stage>, MapperError> {
        let params = self.with_session(json!({"cursor": cursor, "limit": HISTORY_PAGE}))?;
        Ok(Next::send(Stage::History { cursor }, request(id, "history", params, TIMEOUT_MS)))
    }

    fn ordered(&mut self, order: Order<Event>) -> Result<Mapped<u64>, MapperError> {
        match order {
            Order::Next(event) => self.event(event),
            Order::Missing { after, before } => {
                let params = self.with_session(json!({"after": after, "before": before}))?;
                let missed = Request::new(before, "echo.missed", TIMEOUT_MS, move |id| {
                    request(id, "missed", params, TIMEOUT_MS).bytes
                });
                Ok(Mapped::ignore(order.why()).with_request(missed))
            }
            seen_or_held => Ok(Mapped::ignore(seen_or_held.why())),
        }
    }

    fn event(&mut self, event: Event) -> Result<Mapped<u64>, MapperError> {
        Ok(match event {
            Event::Chunk(text) if self.turn.running() => Mapped::update(update::agent_text(&text)),
            Event::Chunk(_) => Mapped::ignore("a chunk outside a turn"),
            Event::End(reason) if self.turn.running() => {
                let reason = match reason.as_str() {
                    "cancelled" => StopReason::Cancelled,
                    "end_turn" => StopReason::EndTurn,
                    _ if self.turn.cancelled() => StopReason::Cancelled,
                    other => return Err(protocol(format!("Unknown echo stop reason: {other}"))),
                };
                Mapped::action(self.turn.stop(reason))
            }
            Event::End(_) => Mapped::ignore("a turn end outside a turn"),
            // The host waits for the answer, whatever the session is doing.
            Event::Ping(id) => {
                let answer = wire::frame(wire::ANSWER, id, &json!({"pong": true}));
                Mapped::ignore("ping").with_write(NativeWrite::new("echo.pong", answer))
            }
        })
    }
}

/// A history entry `{role: "user" | "agent", text}` as a replayed message chunk.
fn replayed(entry: &Value) -> Result<String, MapperError> {
    let entry = Fields::native(entry, "echo history entry")?;
    let chunk = match entry.str("role")? {
        "user" => Chunk::User,
        "agent" => Chunk::Agent,
        other => return Err(protocol(format!("Unknown echo history role: {other}"))),
    };
    Ok(update::text_chunk(chunk, entry.str("text")?, None))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use zcode_mapper_sdk::SessionMachine as _;
    use zcode_mapper_sdk::acp_check;
    use zcode_mapper_sdk::contract::{
        Action, ClientFeatures, NativeData, NativeReply, ReplyBody, SessionInit, SessionInput,
        SessionOp, Step, StopReason, Terminal,
    };
    use zcode_mapper_sdk::mapping::Mapping;

    use super::Session;
    use zcode_mapper_sdk::Session as _;
    use zcode_mapper_sdk::framing::Reader;

    use crate::wire;

    fn mapping() -> Mapping<Session> {
        let init = SessionInit {
            facts: Default::default(),
            workspace: "/w".into(),
            client: ClientFeatures::default(),
        };
        Mapping::new(Session::new(&init))
    }

    fn ok(id: u64, value: Value) -> NativeReply {
        NativeReply { id, body: ReplyBody::Ok(value.to_string().into()) }
    }

    /// The JSON of a request frame, checked to carry `id`.
    fn sent(bytes: &[u8], id: u64) -> Value {
        let mut reader = Reader::new(&bytes[4..], "request");
        assert_eq!((reader.u8().unwrap(), reader.u64().unwrap()), (wire::REQUEST, id));
        serde_json::from_slice(reader.rest()).unwrap()
    }

    fn wait(step: Step) -> zcode_mapper_sdk::contract::Outgoing {
        match step {
            Step::Wait(outgoing) => {
                acp_check::outgoing(&outgoing);
                outgoing
            }
            other => panic!("expected a wait, got {other:?}"),
        }
    }

    fn response(step: Step) -> Value {
        match step {
            Step::Done(Ok(result)) => serde_json::from_str(&result.response).unwrap(),
            other => panic!("expected a response, got {other:?}"),
        }
    }

    fn open(mapping: &mut Mapping<Session>) {
        let params = json!({"cwd": "/w", "mcpServers": []}).to_string();
        let outgoing = wait(mapping.start(1, &SessionOp::Create(params), 7));
        assert_eq!(outgoing.routes_added, ["echo-7"]);
        assert_eq!(
            sent(&outgoing.requests[0].bytes, 7),
            json!({"method": "open", "params": {"cwd": "/w", "route": "echo-7"}})
        );
        let created = response(mapping.resume(1, Some(&ok(7, json!({"sessionId": "echo-1"}))), 8));
        acp_check::new_session_response(&created);
        assert_eq!(created, json!({"sessionId": "echo-1"}));
    }

    fn prompting(text: &str) -> Mapping<Session> {
        let mut mapping = mapping();
        open(&mut mapping);
        let params = json!({"sessionId": "echo-1", "prompt": [{"type": "text", "text": text}]});
        let outgoing = wait(mapping.start(2, &SessionOp::Prompt(params.to_string()), 8));
        assert_eq!(
            sent(&outgoing.requests[0].bytes, 8)["params"],
            json!({"sessionId": "echo-1", "text": text})
        );
        assert_eq!(response(mapping.resume(2, Some(&ok(8, json!({}))), 9)), json!({}));
        mapping
    }

    fn event(kind: u8, seq: u32, payload: &[u8]) -> SessionInput {
        let bytes = [&[kind][..], &seq.to_be_bytes(), payload].concat();
        SessionInput::Event(NativeData::Binary(bytes))
    }

    fn text_of(action: &Action) -> String {
        let Action::Update(update) = action else { panic!("not an update: {action:?}") };
        let update: Value = serde_json::from_str(update).unwrap();
        update["content"]["text"].as_str().unwrap().to_string()
    }

    #[test]
    fn streams_a_turn_and_ends_it() {
        let mut mapping = prompting("hi there");
        let effects =
            mapping.map(&[event(1, 1, b"hi "), event(1, 2, b"there"), event(2, 3, b"end_turn")]);
        acp_check::effects(&effects);
        assert_eq!(effects.actions.len(), 3);
        assert_eq!(
            (text_of(&effects.actions[0]), text_of(&effects.actions[1])),
            ("hi ".into(), "there".into())
        );
        assert_eq!(effects.actions[2], Action::Terminal(Terminal::Stop(StopReason::EndTurn)));
        assert_eq!(effects.requests, 0);
        // Delivered twice: seen already.
        let again = mapping.map(&[event(1, 2, b"there")]);
        assert!(
            matches!(&again.actions[..], [Action::Ignore(why)] if why == "event 2 already seen")
        );
    }

    #[test]
    fn fetches_missed_events_and_maps_what_was_held_in_order() {
        let mut mapping = prompting("a b c d");
        let effects = mapping.map(&[event(1, 1, b"a "), event(1, 3, b"c "), event(1, 4, b"d")]);
        assert_eq!(text_of(&effects.actions[0]), "a ");
        assert!(
            matches!(&effects.actions[1], Action::Ignore(why) if why == "events 2 to 2 missed")
        );
        assert!(matches!(&effects.actions[2], Action::Ignore(why) if why.contains("held")));
        assert_eq!(effects.requests, 1, "the SDK issues the request the gap made");
        let outgoing = mapping.issue(40);
        assert_eq!(outgoing.requests[0].label, "echo.missed");
        assert_eq!(
            sent(&outgoing.requests[0].bytes, 40),
            json!({"method": "missed", "params": {"sessionId": "echo-1", "after": 1, "before": 3}})
        );
        // The end comes before the missed chunk does: it is held too.
        let held = mapping.map(&[event(2, 5, b"end_turn")]);
        assert!(matches!(&held.actions[..], [Action::Ignore(_)]));
        let reply = SessionInput::Reply(ok(40, json!({"chunks": [{"seq": 2, "text": "b "}]})));
        let effects = mapping.map(&[reply]);
        acp_check::effects(&effects);
        let texts: Vec<String> = effects.actions[..3].iter().map(text_of).collect();
        assert_eq!(texts, ["b ", "c ", "d"]);
        assert_eq!(effects.actions[3], Action::Terminal(Terminal::Stop(StopReason::EndTurn)));
    }

    #[test]
    fn a_failed_fetch_of_missed_events_breaks_the_stream() {
        let mut mapping = prompting("a b c");
        mapping.map(&[event(1, 1, b"a "), event(1, 3, b"c")]);
        mapping.issue(40);
        let lost = NativeReply { id: 40, body: ReplyBody::Lost("timed out".into()) };
        let effects = mapping.map(&[SessionInput::Reply(lost)]);
        assert!(
            matches!(&effects.actions[..], [Action::Terminal(Terminal::Broken(e))] if e.message == "The echo host did not answer echo.missed: timed out")
        );
        let wrong = prompting("x").map(&[SessionInput::Reply(ok(9, json!({})))]);
        assert!(matches!(&wrong.actions[..], [Action::Terminal(Terminal::Broken(_))]));
    }

    #[test]
    fn answers_pings_with_an_untracked_write() {
        let mut mapping = prompting("[ping]");
        let effects = mapping.map(&[event(3, 1, &9u64.to_be_bytes())]);
        assert_eq!(effects.requests, 0);
        assert_eq!(effects.writes.len(), 1);
        let mut reader = Reader::new(&effects.writes[0].bytes[4..], "answer");
        assert_eq!((reader.u8().unwrap(), reader.u64().unwrap()), (wire::ANSWER, 9));
        assert_eq!(reader.rest(), br#"{"pong":true}"#);
    }

    #[test]
    fn cancels_with_an_untracked_request_and_ends_cancelled() {
        let mut mapping = prompting("long");
        let outgoing = wait(mapping.start(3, &SessionOp::Cancel, 9));
        assert_eq!(outgoing.requests[0].timeout_ms, 0, "no reply is expected");
        assert_eq!(response(mapping.resume(3, None, 10)), json!({}));
        let effects = mapping.map(&[event(2, 1, b"end_turn")]);
        assert_eq!(effects.actions, [Action::Terminal(Terminal::Stop(StopReason::Cancelled))]);
    }

    #[test]
    fn loads_history_page_by_page_before_it_is_done() {
        let mut mapping = mapping();
        let params = json!({"cwd": "/w", "sessionId": "echo-1", "mcpServers": []}).to_string();
        wait(mapping.start(1, &SessionOp::Load(params), 1));
        let first = wait(mapping.resume(1, Some(&ok(1, json!({"sessionId": "echo-1"}))), 2));
        assert_eq!(
            sent(&first.requests[0].bytes, 2)["params"],
            json!({"sessionId": "echo-1", "cursor": 0, "limit": 50})
        );
        let page = json!({"entries": [{"role": "user", "text": "hi"}, {"role": "agent", "text": "hi"}], "next": 2});
        let second = wait(mapping.resume(1, Some(&ok(2, page)), 3));
        assert_eq!(second.updates.len(), 2, "the first page streams with the request for the next");
        assert_eq!(sent(&second.requests[0].bytes, 3)["params"]["cursor"], 2);
        let last = wait(mapping.resume(
            1,
            Some(&ok(3, json!({"entries": [{"role": "user", "text": "more"}], "next": null}))),
            4,
        ));
        assert_eq!(last.updates.len(), 1);
        assert!(last.requests.is_empty(), "the last page waits for nothing");
        assert_eq!(response(mapping.resume(1, None, 4)), json!({}));
    }

    #[test]
    fn refuses_what_the_echo_host_cannot_do() {
        let mut mapping = prompting("x");
        let text = mapping.map(&[SessionInput::Event(NativeData::from("{}"))]);
        assert!(
            matches!(&text.actions[..], [Action::Terminal(Terminal::Broken(e))] if e.message == "Echo events are binary")
        );
        let image = json!({"sessionId": "echo-1", "prompt": [{"type": "image", "data": "", "mimeType": "image/png"}]});
        let step = mapping.start(5, &SessionOp::Prompt(image.to_string()), 20);
        assert!(
            matches!(step, Step::Done(Err(e)) if e.message == "The echo host takes text only, not image")
        );
        let step = mapping.start(6, &SessionOp::SetMode("{}".into()), 20);
        assert!(matches!(step, Step::Done(Err(_))));
    }
}
