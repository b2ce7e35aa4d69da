//! A [`Session`] as the contract drives it: operations as step machines, batch mapping, and
//! the requests a session makes while mapping.
//!
//! An operation starts with the ACP request read into typed parameters (a request that does
//! not read is refused before the session sees it) and goes on with each reply it waits for,
//! checked against the stage it waits in ([`Pending`]).
//!
//! The core hands a session its input in batches (`map`) and, when the batch announced native
//! requests, asks for them right away with the ids it allots (`issue`); their replies come back
//! in a later batch. [`Mapping`] carries that protocol for any [`Session`]:
//!
//! - each input is mapped on its own; one that fails becomes a `terminal(broken)` action in its
//!   place (what it had made so far is dropped) and the rest of the batch is still mapped;
//! - a session returns [`Request`]s that encode themselves once their id is known; `Mapping`
//!   keeps them until `issue`, then remembers each tracked request's tag by id, and hands a
//!   reply back to the session with its tag (`map_reply`). A session never sees request ids.

use std::collections::BTreeMap;

use zcode_contract::{
    Action, Effects, MapperError, NativeReply, NativeRequest, NativeWrite, Outgoing, SessionInput,
    SessionOp, Step, Terminal,
};

use crate::acp::params::{self, ConfigChange, OpenKind, SessionParams};
use crate::acp::prompt;
use crate::json::internal;
use crate::ops::{Next, Pending};
use crate::{Session, SessionMachine};

/// Encodes a request once the core has given it an id.
type Encoder = Box<dyn FnOnce(u64) -> Vec<u8> + Send>;

/// A native request a session wants to make while mapping.
pub struct Request<T> {
    /// Handed back with the reply.
    pub tag: T,
    /// Name for diagnostics (never user data).
    pub label: String,
    /// How long the core waits for the reply; 0: none is expected (written, not tracked).
    pub timeout_ms: u32,
    encode: Encoder,
}

impl<T> Request<T> {
    pub fn new(
        tag: T,
        label: impl Into<String>,
        timeout_ms: u32,
        encode: impl FnOnce(u64) -> Vec<u8> + Send + 'static,
    ) -> Self {
        Self { tag, label: label.into(), timeout_ms, encode: Box::new(encode) }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Request<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("tag", &self.tag)
            .field("label", &self.label)
            .field("timeout_ms", &self.timeout_ms)
            .finish_non_exhaustive()
    }
}

/// What mapping one input makes, in order: actions, untracked writes, requests.
pub struct Mapped<T> {
    pub actions: Vec<Action>,
    pub writes: Vec<NativeWrite>,
    pub requests: Vec<Request<T>>,
}

impl<T> Default for Mapped<T> {
    fn default() -> Self {
        Self { actions: Vec::new(), writes: Vec::new(), requests: Vec::new() }
    }
}

impl<T> From<Vec<Action>> for Mapped<T> {
    fn from(actions: Vec<Action>) -> Self {
        Self { actions, ..Self::default() }
    }
}

impl<T> Mapped<T> {
    pub fn nothing() -> Self {
        Self::default()
    }

    pub fn action(action: Action) -> Self {
        vec![action].into()
    }

    /// One ACP update (JSON text, from [`crate::acp::update`]).
    pub fn update(update: String) -> Self {
        Self::action(Action::Update(update))
    }

    /// An `ignore` action: the input means nothing for ACP (named for logs, never silence).
    pub fn ignore(why: impl Into<String>) -> Self {
        Self::action(Action::Ignore(why.into()))
    }

    pub fn with_action(mut self, action: Action) -> Self {
        self.actions.push(action);
        self
    }

    pub fn with_write(mut self, write: NativeWrite) -> Self {
        self.writes.push(write);
        self
    }

    pub fn with_request(mut self, request: Request<T>) -> Self {
        self.requests.push(request);
        self
    }

    /// Appends what mapping another input made.
    pub fn append(&mut self, other: Mapped<T>) {
        self.actions.extend(other.actions);
        self.writes.extend(other.writes);
        self.requests.extend(other.requests);
    }
}

/// A [`Session`] driven through the contract.
pub struct Mapping<S: Session> {
    session: S,
    /// Operations waiting for a reply (or to be resumed without one).
    pending: Pending<S::Stage>,
    /// Requests the last `map` announced, waiting for their ids.
    announced: Vec<Request<S::Tag>>,
    /// Tags of issued requests that await a reply, by request id.
    issued: BTreeMap<u64, S::Tag>,
}

impl<S: Session> Mapping<S> {
    pub fn new(session: S) -> Self {
        Self {
            session,
            pending: Pending::default(),
            announced: Vec::new(),
            issued: BTreeMap::new(),
        }
    }

    pub fn session(&self) -> &S {
        &self.session
    }

    pub fn session_mut(&mut self) -> &mut S {
        &mut self.session
    }
}

impl<S: Session> SessionMachine for Mapping<S> {
    fn start(&mut self, op_id: u64, op: &SessionOp, first_request_id: u64) -> Step {
        let next = self
            .pending
            .check_new(op_id)
            .and_then(|()| start(&mut self.session, op, first_request_id));
        self.pending.step(op_id, next)
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first_request_id: u64) -> Step {
        let next = self.pending.resume(op_id, reply).and_then(|resumed| {
            let reply = resumed.reply.as_ref().map(|(reply, label)| (*reply, label.as_str()));
            self.session.resume(resumed.stage, reply, first_request_id)
        });
        self.pending.step(op_id, next)
    }

    /// Maps a batch in arrival order.
    fn map(&mut self, inputs: &[SessionInput]) -> Effects {
        let mut effects = Effects::default();
        if !self.announced.is_empty() {
            // The core issues what a batch announced before it maps the next one; requests
            // left over would never be sent, and whatever waits for them would wait forever.
            let stale = std::mem::take(&mut self.announced).len();
            effects.actions.push(broken(internal(format!(
                "{stale} native request(s) announced by mapping were never issued"
            ))));
        }
        for input in inputs {
            let mapped = match input {
                SessionInput::Event(event) => self.session.map_event(event),
                SessionInput::Reply(reply) => match self.issued.remove(&reply.id) {
                    Some(tag) => self.session.map_reply(tag, reply),
                    None => Err(internal(format!(
                        "Reply {} answers no request this session issued",
                        reply.id
                    ))),
                },
            };
            match mapped {
                Ok(mapped) => {
                    effects.actions.extend(mapped.actions);
                    effects.writes.extend(mapped.writes);
                    self.announced.extend(mapped.requests);
                }
                Err(problem) => effects.actions.push(broken(problem)),
            }
        }
        effects.requests = u32::try_from(self.announced.len()).unwrap_or(u32::MAX);
        effects
    }

    /// Hands out what the last `map` announced, with ids from `first_request_id` in order.
    fn issue(&mut self, first_request_id: u64) -> Outgoing {
        let mut outgoing = Outgoing::default();
        for (id, request) in (first_request_id..).zip(std::mem::take(&mut self.announced)) {
            if request.timeout_ms != 0 {
                self.issued.insert(id, request.tag);
            }
            outgoing.requests.push(NativeRequest {
                id,
                bytes: (request.encode)(id),
                label: request.label,
                timeout_ms: request.timeout_ms,
            });
        }
        outgoing
    }
}

/// Starts `op` on `session` with its parameters read.
fn start<S: Session>(
    session: &mut S,
    op: &SessionOp,
    id: u64,
) -> Result<Next<S::Stage>, MapperError> {
    let open = |kind, params: &str| SessionParams::read(kind, params);
    match op {
        SessionOp::Create(params) => session.open(open(OpenKind::Create, params)?, id),
        SessionOp::Load(params) => session.open(open(OpenKind::Load, params)?, id),
        SessionOp::Resume(params) => session.open(open(OpenKind::Resume, params)?, id),
        SessionOp::Fork(params) => session.fork(open(OpenKind::Fork, params)?, id),
        SessionOp::Prompt(params) => session.prompt(prompt::read(params)?, id),
        SessionOp::Cancel => session.cancel(id),
        SessionOp::FinishTurn => session.finish_turn(id),
        SessionOp::SetMode(params) => session.set_mode(params::mode_id(params)?, id),
        SessionOp::SetConfigOption(params) => {
            session.set_config_option(ConfigChange::read(params)?, id)
        }
        SessionOp::Answer(answer) => session.answer(answer, id),
        SessionOp::Close => session.close(id),
    }
}

fn broken(problem: MapperError) -> Action {
    Action::Terminal(Terminal::Broken(problem))
}

#[cfg(test)]
mod tests {
    use zcode_contract::{ErrorKind, NativeData, ReplyBody};

    use crate::acp::prompt;

    use super::*;

    /// Events are `"text"` (an update), `"ask"` (a request tagged with the event count),
    /// `"bad"` (an error after an action); a reply's text comes back as an update.
    #[derive(Default)]
    struct Probe {
        events: u32,
    }

    impl Session for Probe {
        type Tag = u32;
        type Stage = &'static str;

        fn new(_: &zcode_contract::SessionInit) -> Self {
            Self::default()
        }

        /// Sends `open` and waits for its reply.
        fn open(
            &mut self,
            params: SessionParams,
            id: u64,
        ) -> Result<Next<Self::Stage>, MapperError> {
            let request =
                NativeRequest { id, bytes: b"open".to_vec(), label: "open".into(), timeout_ms: 10 };
            assert_eq!(params.kind, OpenKind::Create);
            Ok(Next::send("opening", request))
        }

        fn prompt(
            &mut self,
            prompt: Vec<prompt::Block>,
            _: u64,
        ) -> Result<Next<Self::Stage>, MapperError> {
            Ok(Next::done(&serde_json::json!({"blocks": prompt.len()})))
        }

        /// Streams an update and waits for nothing.
        fn cancel(&mut self, _: u64) -> Result<Next<Self::Stage>, MapperError> {
            Ok(Next::Wait(
                "cancelling",
                Outgoing { updates: vec!["{}".into()], ..Outgoing::default() },
            ))
        }

        fn close(&mut self, _: u64) -> Result<Next<Self::Stage>, MapperError> {
            Err(internal("no close"))
        }

        fn resume(
            &mut self,
            stage: Self::Stage,
            reply: Option<(&NativeReply, &str)>,
            _: u64,
        ) -> Result<Next<Self::Stage>, MapperError> {
            let label = reply.map(|(_, label)| label);
            Ok(Next::done(&serde_json::json!({"stage": stage, "label": label})))
        }

        fn map_event(&mut self, event: &NativeData) -> Result<Mapped<u32>, MapperError> {
            self.events += 1;
            match event.as_text() {
                Some("ask") => {
                    let n = self.events;
                    Ok(Mapped::ignore("ask")
                        .with_request(Request::new(n, "probe.ask", 1000, move |id| {
                            format!("ask {n} as {id}").into_bytes()
                        }))
                        .with_request(Request::new(0, "probe.note", 0, |id| {
                            format!("note {id}").into_bytes()
                        })))
                }
                Some("bad") => Err(MapperError::new(ErrorKind::Protocol, "bad event")),
                Some(text) => Ok(Mapped::action(Action::Update(text.to_string()))
                    .with_write(NativeWrite::new("probe.ack", b"ack".to_vec()))),
                None => Err(MapperError::new(ErrorKind::Protocol, "binary")),
            }
        }

        fn map_reply(&mut self, tag: u32, reply: &NativeReply) -> Result<Mapped<u32>, MapperError> {
            match &reply.body {
                ReplyBody::Ok(data) => Ok(Mapped::action(Action::Update(format!(
                    "reply to {tag}: {}",
                    data.as_text().unwrap_or_default()
                )))),
                _ => Err(internal("lost")),
            }
        }
    }

    fn event(text: &str) -> SessionInput {
        SessionInput::Event(NativeData::from(text))
    }

    fn reply(id: u64, text: &str) -> SessionInput {
        SessionInput::Reply(NativeReply { id, body: ReplyBody::Ok(text.into()) })
    }

    fn broken_message(action: &Action) -> &str {
        match action {
            Action::Terminal(Terminal::Broken(problem)) => &problem.message,
            other => panic!("not broken: {other:?}"),
        }
    }

    #[test]
    fn maps_every_input_and_breaks_only_where_one_fails() {
        let mut mapping = Mapping::new(Probe::default());
        let effects = mapping.map(&[event("a"), event("bad"), event("b")]);
        assert_eq!(effects.actions.len(), 3);
        assert_eq!(effects.actions[0], Action::Update("a".into()));
        assert_eq!(broken_message(&effects.actions[1]), "bad event");
        assert_eq!(effects.actions[2], Action::Update("b".into()));
        assert_eq!(effects.writes.len(), 2);
        assert_eq!(effects.requests, 0);
    }

    #[test]
    fn issues_announced_requests_with_core_ids_and_routes_replies_by_tag() {
        let mut mapping = Mapping::new(Probe::default());
        let effects = mapping.map(&[event("x"), event("ask")]);
        assert_eq!(effects.requests, 2);
        let outgoing = mapping.issue(40);
        let issued: Vec<_> = outgoing
            .requests
            .iter()
            .map(|r| (r.id, String::from_utf8(r.bytes.clone()).unwrap(), r.timeout_ms))
            .collect();
        assert_eq!(issued, [(40, "ask 2 as 40".to_string(), 1000), (41, "note 41".to_string(), 0)]);
        assert!(mapping.issue(50).requests.is_empty(), "issued once");
        let effects = mapping.map(&[reply(40, "ok")]);
        assert_eq!(effects.actions, [Action::Update("reply to 2: ok".into())]);
        // The untracked request gets no reply; a reply for it, or a second one, is a break.
        let effects = mapping.map(&[reply(41, "?"), reply(40, "again")]);
        assert_eq!(
            broken_message(&effects.actions[0]),
            "Reply 41 answers no request this session issued"
        );
        assert_eq!(
            broken_message(&effects.actions[1]),
            "Reply 40 answers no request this session issued"
        );
    }

    fn response(step: Step) -> serde_json::Value {
        match step {
            Step::Done(Ok(result)) => serde_json::from_str(&result.response).unwrap(),
            other => panic!("not a response: {other:?}"),
        }
    }

    fn error(step: Step) -> MapperError {
        match step {
            Step::Done(Err(error)) => error,
            other => panic!("not an error: {other:?}"),
        }
    }

    #[test]
    fn starts_operations_with_typed_params_and_resumes_them_by_stage() {
        let mut mapping = Mapping::new(Probe::default());
        assert!(matches!(
            mapping.start(1, &SessionOp::Create("{\"cwd\":\"/w\"}".into()), 5),
            Step::Wait(_)
        ));
        let reply = NativeReply { id: 5, body: ReplyBody::Ok("{}".into()) };
        assert_eq!(
            response(mapping.resume(1, Some(&reply), 6)),
            serde_json::json!({"stage": "opening", "label": "open"})
        );
        assert!(matches!(mapping.start(2, &SessionOp::Cancel, 6), Step::Wait(_)));
        assert_eq!(
            response(mapping.resume(2, None, 6)),
            serde_json::json!({"stage": "cancelling", "label": null})
        );
        let prompt = r#"{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}"#;
        assert_eq!(
            response(mapping.start(3, &SessionOp::Prompt(prompt.into()), 6)),
            serde_json::json!({"blocks": 1})
        );
        // Parameters that do not read never reach the session.
        let bad = error(mapping.start(4, &SessionOp::Prompt("{}".into()), 6));
        assert_eq!(bad.message, "session/prompt params: missing field `prompt`");
        assert_eq!(error(mapping.resume(9, None, 6)).message, "Operation 9 is not waiting");
    }

    #[test]
    fn refuses_what_a_session_does_not_override() {
        let mut mapping = Mapping::new(Probe::default());
        let mode = error(mapping.start(1, &SessionOp::SetMode("{\"modeId\":\"x\"}".into()), 1));
        assert_eq!(
            (mode.kind, mode.message.as_str()),
            (ErrorKind::Unsupported, "This host has no session modes")
        );
        let option = error(mapping.start(
            2,
            &SessionOp::SetConfigOption("{\"configId\":\"m\",\"value\":\"a\"}".into()),
            1,
        ));
        assert_eq!(
            (option.kind, option.message.as_str()),
            (ErrorKind::InvalidParams, "Unknown config option: m")
        );
        let answer = zcode_contract::InteractionAnswer {
            key: "k".into(),
            outcome: zcode_contract::InteractionOutcome::Unavailable("x".into()),
        };
        let answered = error(mapping.start(3, &SessionOp::Answer(answer), 1));
        assert_eq!(answered.message, "Unknown or already answered interaction: k");
        assert_eq!(response(mapping.start(4, &SessionOp::FinishTurn, 1)), serde_json::json!({}));
    }

    #[test]
    fn builds_what_one_input_makes() {
        let mapped = Mapped::<()>::update("{}".into()).with_action(Action::Ignore("x".into()));
        assert_eq!(mapped.actions, [Action::Update("{}".into()), Action::Ignore("x".into())]);
        assert_eq!(Mapped::<()>::ignore("y").actions, [Action::Ignore("y".into())]);
    }

    #[test]
    fn requests_never_issued_break_the_next_batch() {
        let mut mapping = Mapping::new(Probe::default());
        assert_eq!(mapping.map(&[event("ask")]).requests, 2);
        let effects = mapping.map(&[event("y")]);
        assert_eq!(
            broken_message(&effects.actions[0]),
            "2 native request(s) announced by mapping were never issued"
        );
        assert_eq!(effects.actions[1], Action::Update("y".into()));
        assert_eq!(effects.requests, 0);
    }
}
