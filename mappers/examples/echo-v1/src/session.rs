//! One echo session: its operations and its events.
//!
//! Operations: `open` (with the route the host tags the session's events with), `history` in
//! pages for `session/load` (each page streams to the client while the next is asked for),
//! `prompt`, `cancel` (untracked: the host answers with the turn's end event), `close`.
//!
//! Events come numbered. A gap means events were lost: the session holds what arrives from then
//! on, asks the host for the `missed` chunks — a request made while mapping, issued by the SDK —
//! and maps them, then the held events, in order. A `ping` the host waits on is answered with
//! an untracked write, in or out of a turn.

use serde_json::{Value, json};
use zcode_mapper_sdk::contract::{
    Action, ErrorKind, MapperError, NativeData, NativeReply, NativeRequest, NativeWrite, Outgoing,
    SessionInit, SessionOp, Step, StopReason, Terminal,
};
use zcode_mapper_sdk::json::{Fields, error, internal, invalid_params, parse, protocol};
use zcode_mapper_sdk::ops::{Pending, done, reply_json};
use zcode_mapper_sdk::{Mapped, Request};

use crate::wire::{self, Event, request};

const TIMEOUT_MS: u32 = 10_000;
/// History entries per `history` request.
const HISTORY_PAGE: u32 = 50;

#[derive(Clone, Copy, PartialEq)]
enum Open {
    Create,
    Load,
    Resume,
}

enum Stage {
    Opening {
        open: Open,
        route: String,
    },
    History {
        cursor: u64,
    },
    /// The last history page was streamed; the load is done.
    Loaded,
    Prompt,
    Cancel,
    Close,
}

/// What an operation does next: wait in a stage for what it sent, or finish with a response.
enum Next {
    Wait(Stage, Outgoing),
    Done(Value),
}

fn wait(stage: Stage, outgoing: Outgoing) -> Result<Next, MapperError> {
    Ok(Next::Wait(stage, outgoing))
}

fn finished() -> Result<Next, MapperError> {
    Ok(Next::Done(json!({})))
}

/// What a request made while mapping was for.
#[derive(Debug)]
pub enum Tag {
    /// Chunks lost before event `before`.
    Missed { before: u32 },
}

#[derive(Clone)]
struct Native {
    session_id: String,
    route: String,
}

pub struct Session {
    workspace: String,
    native: Option<Native>,
    pending: Pending<Stage>,
    running: bool,
    cancelled: bool,
    last_seq: Option<u32>,
    /// While missed chunks are being fetched: the events that arrived since, in order.
    held: Option<Vec<Event>>,
}

impl Session {
    pub fn new(init: &SessionInit) -> Self {
        Self {
            workspace: init.workspace.clone(),
            native: None,
            pending: Pending::default(),
            running: false,
            cancelled: false,
            last_seq: None,
            held: None,
        }
    }

    fn native(&self) -> Result<&Native, MapperError> {
        self.native.as_ref().ok_or_else(|| internal("The echo session is not open"))
    }
}

impl zcode_mapper_sdk::Session for Session {
    type Tag = Tag;

    fn new(init: &SessionInit) -> Self {
        Session::new(init)
    }

    fn start(&mut self, op_id: u64, op: &SessionOp, id: u64) -> Step {
        let next = self.pending.check_new(op_id).and_then(|()| match op {
            SessionOp::Create(params) => self.open(Open::Create, params, id),
            SessionOp::Load(params) => self.open(Open::Load, params, id),
            SessionOp::Resume(params) => self.open(Open::Resume, params, id),
            SessionOp::Prompt(params) => self.prompt(params, id),
            SessionOp::Cancel => {
                let native = self.native()?;
                let cancel = request(
                    id,
                    "echo.cancel",
                    "cancel",
                    json!({"sessionId": native.session_id}),
                    0,
                );
                self.cancelled = self.running;
                wait(Stage::Cancel, sends(cancel))
            }
            SessionOp::FinishTurn => {
                self.running = false;
                finished()
            }
            SessionOp::SetMode(_) | SessionOp::SetConfigOption(_) => {
                Err(error(ErrorKind::Unsupported, "The echo host has no modes or options"))
            }
            SessionOp::Answer(answer) => {
                Err(internal(format!("Unknown or already answered interaction: {}", answer.key)))
            }
            SessionOp::Close => {
                let Some(native) = self.native.take() else { return finished() };
                let close = request(
                    id,
                    "echo.close",
                    "close",
                    json!({"sessionId": native.session_id}),
                    TIMEOUT_MS,
                );
                wait(Stage::Close, Outgoing { routes_removed: vec![native.route], ..sends(close) })
            }
        });
        self.step(op_id, next)
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, id: u64) -> Step {
        let next = self.pending.resume(op_id, reply).and_then(|resumed| {
            let result = match resumed.reply {
                Some((reply, label)) => reply_json(reply, "The echo host", &label),
                None => Ok(Value::Null),
            };
            self.advance(resumed.stage, result, id)
        });
        self.step(op_id, next)
    }

    fn map_event(&mut self, event: &NativeData) -> Result<Mapped<Tag>, MapperError> {
        let NativeData::Binary(bytes) = event else {
            return Err(protocol("Echo events are binary"));
        };
        let event = Event::parse(bytes)?;
        if let Some(held) = &mut self.held {
            let seq = event.seq();
            held.push(event);
            return Ok(Mapped::ignore(format!("event {seq} held until the missed ones arrive")));
        }
        self.accept(event)
    }

    fn map_reply(&mut self, tag: Tag, reply: &NativeReply) -> Result<Mapped<Tag>, MapperError> {
        let Tag::Missed { before } = tag;
        let result = reply_json(reply, "The echo host", "echo.missed")?;
        let fields = Fields::native(&result, "echo missed result")?;
        let mut mapped = Mapped::nothing();
        for missed in fields.array("chunks")? {
            let missed = Fields::native(missed, "missed chunk")?;
            let seq =
                u32::try_from(missed.u64("seq")?).map_err(|_| protocol("Echo seq is 32-bit"))?;
            if seq >= before || self.last_seq.is_some_and(|last| seq <= last) {
                return Err(protocol(format!(
                    "The echo host sent chunk {seq}, which was not missed"
                )));
            }
            self.last_seq = Some(seq);
            let text = missed.str("text")?;
            mapped.actions.push(match self.running {
                true => chunk("agent_message_chunk", text),
                false => Action::Ignore("a missed chunk outside a turn".to_string()),
            });
        }
        // What was missed is in; the rest follows in order (and may itself have gaps).
        self.last_seq = Some(before - 1);
        for event in self.held.take().unwrap_or_default() {
            if let Some(held) = &mut self.held {
                held.push(event);
                continue;
            }
            let next = self.accept(event)?;
            mapped.actions.extend(next.actions);
            mapped.writes.extend(next.writes);
            mapped.requests.extend(next.requests);
        }
        Ok(mapped)
    }
}

impl Session {
    fn step(&mut self, op_id: u64, next: Result<Next, MapperError>) -> Step {
        match next {
            Ok(Next::Wait(stage, outgoing)) => self.pending.wait(op_id, stage, outgoing),
            Ok(Next::Done(response)) => done(&response, Vec::new()),
            Err(problem) => Step::Done(Err(problem)),
        }
    }

    fn open(&mut self, open: Open, params: &str, id: u64) -> Result<Next, MapperError> {
        let params = parse(params, ErrorKind::InvalidParams, "session params")?;
        let fields = Fields::acp(&params, "session params")?;
        if fields.opt_array("mcpServers")?.is_some_and(|servers| !servers.is_empty()) {
            return Err(error(ErrorKind::Unsupported, "The echo host takes no MCP servers"));
        }
        if self.native.is_some() {
            return Err(internal("This session is already open"));
        }
        // Request ids are unique per connection, so a route made of one is too.
        let route = format!("echo-{id}");
        let mut open_params = json!({"cwd": self.workspace, "route": route});
        if open != Open::Create {
            open_params["sessionId"] = json!(fields.non_empty_str("sessionId")?);
        }
        let request = request(id, "echo.open", "open", open_params, TIMEOUT_MS);
        let outgoing = Outgoing { routes_added: vec![route.clone()], ..sends(request) };
        wait(Stage::Opening { open, route }, outgoing)
    }

    fn prompt(&mut self, params: &str, id: u64) -> Result<Next, MapperError> {
        let params = parse(params, ErrorKind::InvalidParams, "session/prompt params")?;
        let fields = Fields::acp(&params, "session/prompt params")?;
        let mut text = String::new();
        for block in fields.array("prompt")? {
            let block = Fields::acp(block, "prompt block")?;
            match block.str("type")? {
                "text" => text.push_str(block.str("text")?),
                other => {
                    return Err(invalid_params(format!(
                        "The echo host takes text only, not {other}"
                    )));
                }
            }
        }
        if self.running {
            return Err(internal("A prompt turn is already running in this session"));
        }
        let native = self.native()?;
        let prompt = request(
            id,
            "echo.prompt",
            "prompt",
            json!({"sessionId": native.session_id, "text": text}),
            TIMEOUT_MS,
        );
        self.running = true;
        self.cancelled = false;
        wait(Stage::Prompt, sends(prompt))
    }

    fn advance(
        &mut self,
        stage: Stage,
        result: Result<Value, MapperError>,
        id: u64,
    ) -> Result<Next, MapperError> {
        match stage {
            Stage::Opening { open, route } => {
                let result = result?;
                let session_id = Fields::native(&result, "echo open result")?
                    .non_empty_str("sessionId")?
                    .to_string();
                self.native = Some(Native { session_id: session_id.clone(), route });
                match open {
                    Open::Create => Ok(Next::Done(json!({"sessionId": session_id}))),
                    Open::Resume => finished(),
                    Open::Load => self.history(0, id),
                }
            }
            Stage::History { cursor } => {
                let result = result?;
                let fields = Fields::native(&result, "echo history result")?;
                let updates =
                    fields.array("entries")?.iter().map(replayed).collect::<Result<_, _>>()?;
                // The page streams now, with the request for the next one; the last page
                // waits for nothing and the load ends when it is resumed.
                let (stage, mut outgoing) = match fields.opt_u64("next")? {
                    Some(next) if next > cursor => self.history_request(next, id)?,
                    Some(_) => return Err(protocol("The echo history cursor went backwards")),
                    None => (Stage::Loaded, Outgoing::default()),
                };
                outgoing.updates = updates;
                wait(stage, outgoing)
            }
            Stage::Prompt | Stage::Close => result.and_then(|_| finished()),
            Stage::Loaded | Stage::Cancel => finished(),
        }
    }

    fn history(&self, cursor: u64, id: u64) -> Result<Next, MapperError> {
        let (stage, outgoing) = self.history_request(cursor, id)?;
        wait(stage, outgoing)
    }

    fn history_request(&self, cursor: u64, id: u64) -> Result<(Stage, Outgoing), MapperError> {
        let params = json!({"sessionId": self.native()?.session_id, "cursor": cursor, "limit": HISTORY_PAGE});
        let history = request(id, "echo.history", "history", params, TIMEOUT_MS);
        Ok((Stage::History { cursor }, sends(history)))
    }

    /// Maps an event in sequence, or starts fetching what was missed before it.
    fn accept(&mut self, event: Event) -> Result<Mapped<Tag>, MapperError> {
        let seq = event.seq();
        match self.last_seq {
            Some(last) if seq <= last => {
                return Ok(Mapped::ignore(format!("event {seq} already seen")));
            }
            Some(last) if seq > last + 1 => {
                let session_id = self.native()?.session_id.clone();
                self.held = Some(vec![event]);
                let params = json!({"method": "missed", "params": {"sessionId": session_id, "after": last, "before": seq}});
                let missed = Request::new(
                    Tag::Missed { before: seq },
                    "echo.missed",
                    TIMEOUT_MS,
                    move |id| wire::frame(wire::REQUEST, id, &params),
                );
                return Ok(Mapped::ignore(format!("events {} to {} missed", last + 1, seq - 1))
                    .with_request(missed));
            }
            _ => self.last_seq = Some(seq),
        }
        Ok(match event {
            Event::Chunk { text, .. } if self.running => {
                Mapped::action(chunk("agent_message_chunk", &text))
            }
            Event::Chunk { .. } => Mapped::ignore("a chunk outside a turn"),
            Event::End { reason, .. } if self.running => {
                let reason = match (reason.as_str(), self.cancelled) {
                    (_, true) | ("cancelled", _) => StopReason::Cancelled,
                    ("end_turn", _) => StopReason::EndTurn,
                    (other, _) => {
                        return Err(protocol(format!("Unknown echo stop reason: {other}")));
                    }
                };
                self.running = false;
                Mapped::action(Action::Terminal(Terminal::Stop(reason)))
            }
            Event::End { .. } => Mapped::ignore("a turn end outside a turn"),
            // The host waits for the answer, whatever the session is doing.
            Event::Ping { id, .. } => {
                let answer = wire::frame(wire::ANSWER, id, &json!({"pong": true}));
                Mapped::ignore("ping").with_write(NativeWrite::new("echo.pong", answer))
            }
        })
    }
}

fn sends(request: NativeRequest) -> Outgoing {
    Outgoing { requests: vec![request], ..Outgoing::default() }
}

fn chunk(kind: &str, text: &str) -> Action {
    Action::Update(
        json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}).to_string(),
    )
}

/// A history entry `{role: "user" | "agent", text}` as a replayed message chunk.
fn replayed(entry: &Value) -> Result<String, MapperError> {
    let entry = Fields::native(entry, "echo history entry")?;
    let kind = match entry.str("role")? {
        "user" => "user_message_chunk",
        "agent" => "agent_message_chunk",
        other => return Err(protocol(format!("Unknown echo history role: {other}"))),
    };
    let Action::Update(update) = chunk(kind, entry.str("text")?) else { unreachable!() };
    Ok(update)
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
    use crate::wire::{self, Reader};

    fn mapping() -> Mapping<Session> {
        let init = SessionInit { workspace: "/w".into(), client: ClientFeatures::default() };
        Mapping::new(Session::new(&init))
    }

    fn ok(id: u64, value: Value) -> NativeReply {
        NativeReply { id, body: ReplyBody::Ok(value.to_string().into()) }
    }

    /// The JSON of a request frame, checked to carry `id`.
    fn sent(bytes: &[u8], id: u64) -> Value {
        let mut reader = Reader(&bytes[4..]);
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
        let mut reader = Reader(&effects.writes[0].bytes[4..]);
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
