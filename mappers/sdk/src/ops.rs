//! Operations as step machines: an operation sends what it needs, waits for at most one reply
//! (or for none: a step that only streams updates or writes is resumed at once), and the reply
//! decides its next step. [`Pending`] keeps the stage of each waiting operation and checks that
//! a resume answers what the operation waits for, so a mapper only writes its stages.

use std::collections::{BTreeMap, VecDeque};

use zcode_contract::{
    ErrorKind, MapperError, NativeData, NativeReply, NativeRequest, OpResult, Outgoing, ReplyBody,
    Step,
};

use crate::json::{internal, parse, protocol};

struct Waiting<S> {
    /// The request whose reply the operation waits for, with its label; `None`: it waits for
    /// nothing and is resumed without a reply.
    awaited: Option<(u64, String)>,
    stage: S,
}

/// The waiting operations of one connection or session, by op id, with their stage `S`.
pub struct Pending<S> {
    ops: BTreeMap<u64, Waiting<S>>,
}

impl<S> Default for Pending<S> {
    fn default() -> Self {
        Self { ops: BTreeMap::new() }
    }
}

/// A resumed operation: its stage, and the reply it waited for (with that request's label).
pub struct Resumed<'a, S> {
    pub stage: S,
    pub reply: Option<(&'a NativeReply, String)>,
}

impl<S> Pending<S> {
    /// An operation id must not be started twice.
    pub fn check_new(&self, op_id: u64) -> Result<(), MapperError> {
        if self.ops.contains_key(&op_id) {
            return Err(internal(format!("Operation {op_id} is already running")));
        }
        Ok(())
    }

    /// The operation waits in `stage` for what `outgoing` sends: the reply to its one request
    /// that awaits a reply, or nothing.
    pub fn wait(&mut self, op_id: u64, stage: S, outgoing: Outgoing) -> Step {
        let mut awaited = outgoing.requests.iter().filter(|request| request.awaits_reply());
        let first = awaited.next().map(|request| (request.id, request.label.clone()));
        if awaited.next().is_some() {
            return Step::Done(Err(internal(format!(
                "Operation {op_id} would wait for more than one reply"
            ))));
        }
        self.ops.insert(op_id, Waiting { awaited: first, stage });
        Step::Wait(outgoing)
    }

    /// Takes the stage of a waiting operation, checking `reply` is what it waits for.
    pub fn resume<'a>(
        &mut self,
        op_id: u64,
        reply: Option<&'a NativeReply>,
    ) -> Result<Resumed<'a, S>, MapperError> {
        let Some(waiting) = self.ops.remove(&op_id) else {
            return Err(internal(format!("Operation {op_id} is not waiting")));
        };
        match (waiting.awaited, reply) {
            (None, None) => Ok(Resumed { stage: waiting.stage, reply: None }),
            (Some((id, label)), Some(reply)) if reply.id == id => {
                Ok(Resumed { stage: waiting.stage, reply: Some((reply, label)) })
            }
            (Some((id, _)), Some(reply)) => Err(internal(format!(
                "Reply {} does not answer request {id} of operation {op_id}",
                reply.id
            ))),
            (Some((id, _)), None) => {
                Err(internal(format!("Operation {op_id} waits for the reply to request {id}")))
            }
            (None, Some(reply)) => Err(internal(format!(
                "Operation {op_id} waits for no reply, got reply {}",
                reply.id
            ))),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// Updates in bounded pages, for an operation that streams a long list (a replayed history)
/// through `outgoing` instead of returning it in one result the core would have to hold.
pub struct Pager {
    rest: VecDeque<String>,
}

impl Pager {
    /// Updates per page.
    pub const MAX_UPDATES: usize = 100;
    /// Bytes of update text per page (a longer single update is a page of its own).
    pub const MAX_BYTES: usize = 512 * 1024;

    pub fn new(updates: Vec<String>) -> Self {
        Self { rest: updates.into() }
    }

    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next page: at least one update unless none are left.
    pub fn next_page(&mut self) -> Vec<String> {
        let mut page = Vec::new();
        let mut bytes = 0;
        while let Some(next) = self.rest.front() {
            let full = page.len() == Self::MAX_UPDATES || bytes + next.len() > Self::MAX_BYTES;
            if full && !page.is_empty() {
                break;
            }
            bytes += next.len();
            page.extend(self.rest.pop_front());
        }
        page
    }
}

/// The reply a resumed operation waited for, with that request's label; `None` after a step
/// that waited for nothing.
pub type Reply<'a> = Option<(&'a NativeReply, &'a str)>;

/// What an operation does next: wait in a stage for what it sends (a reply, or nothing), or
/// finish with its result. [`Pending::step`] turns it into the contract's [`Step`].
#[allow(clippy::large_enum_variant)] // a short-lived return value
pub enum Next<S> {
    Wait(S, Outgoing),
    Done(OpResult),
}

impl<S> Next<S> {
    /// Finished with `response` and no updates.
    pub fn done(response: &serde_json::Value) -> Self {
        Next::Done(result(response, Vec::new()))
    }

    /// Finished with an empty response (`{}`).
    pub fn finished() -> Self {
        Next::Done(OpResult { response: "{}".to_string(), updates: Vec::new() })
    }

    /// Waits in `stage` for the reply to `request`.
    pub fn send(stage: S, request: NativeRequest) -> Self {
        Next::Wait(stage, sends(request))
    }

    /// The same waiting step with the event `route` registered before its requests are
    /// written, so no event they cause can arrive unrouted. A finished step registers nothing.
    pub fn routing(self, route: &str) -> Self {
        match self {
            Next::Wait(stage, mut outgoing) => {
                outgoing.routes_added.push(route.to_string());
                Next::Wait(stage, outgoing)
            }
            done => done,
        }
    }

    /// The same waiting step with the event `route` given up.
    pub fn unrouting(self, route: String) -> Self {
        match self {
            Next::Wait(stage, mut outgoing) => {
                outgoing.routes_removed.push(route);
                Next::Wait(stage, outgoing)
            }
            done => done,
        }
    }

    /// The same step with `updates` sent first: streamed while it waits, or before its result.
    pub fn with_updates(self, mut updates: Vec<String>) -> Self {
        match self {
            Next::Wait(stage, mut outgoing) => {
                updates.append(&mut outgoing.updates);
                Next::Wait(stage, Outgoing { updates, ..outgoing })
            }
            Next::Done(mut result) => {
                updates.append(&mut result.updates);
                Next::Done(OpResult { updates, ..result })
            }
        }
    }
}

impl<S> Pending<S> {
    /// The step for what operation `op_id` does next: it waits in its stage, is done, or
    /// failed.
    pub fn step(&mut self, op_id: u64, next: Result<Next<S>, MapperError>) -> Step {
        match next {
            Ok(Next::Wait(stage, outgoing)) => self.wait(op_id, stage, outgoing),
            Ok(Next::Done(result)) => Step::Done(Ok(result)),
            Err(problem) => Step::Done(Err(problem)),
        }
    }
}

/// What an operation sends when it sends one request and nothing else.
pub fn sends(request: NativeRequest) -> Outgoing {
    Outgoing { requests: vec![request], ..Outgoing::default() }
}

/// An operation's result: the ACP response and the updates that go with it.
pub fn result(response: &serde_json::Value, updates: Vec<String>) -> OpResult {
    OpResult { response: response.to_string(), updates }
}

/// A finished operation with its ACP response and updates.
pub fn done(response: &serde_json::Value, updates: Vec<String>) -> Step {
    Step::Done(Ok(result(response, updates)))
}

/// The result text of a reply, or the error it carries. `what` names the request in errors
/// (for example `ZCode did not answer agent.initialize: timed out`).
pub fn reply_text<'a>(
    reply: &'a NativeReply,
    host: &str,
    label: &str,
) -> Result<&'a str, MapperError> {
    match &reply.body {
        ReplyBody::Ok(NativeData::Text(text)) => Ok(text),
        ReplyBody::Ok(NativeData::Binary(_)) => {
            Err(protocol(format!("The result of {label} is binary, not text")))
        }
        ReplyBody::Error(native) => Err(native.clone()),
        ReplyBody::Lost(reason) => Err(MapperError::new(
            ErrorKind::Native,
            format!("{host} did not answer {label}: {reason}"),
        )),
    }
}

/// The JSON result of a text reply (see [`reply_text`]).
pub fn reply_json(
    reply: &NativeReply,
    host: &str,
    label: &str,
) -> Result<serde_json::Value, MapperError> {
    parse(reply_text(reply, host, label)?, ErrorKind::Protocol, &format!("The result of {label}"))
}

/// The JSON result of the reply a resumed operation waited for (see [`reply_json`]), or `null`
/// when it waited for none: what a `resume` reads first.
pub fn reply_value(reply: Reply, host: &str) -> Result<serde_json::Value, MapperError> {
    match reply {
        Some((reply, label)) => reply_json(reply, host, label),
        None => Ok(serde_json::Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: u64, timeout_ms: u32) -> NativeRequest {
        NativeRequest { id, bytes: Vec::new(), label: format!("r{id}"), timeout_ms }
    }

    fn sends(requests: Vec<NativeRequest>) -> Outgoing {
        Outgoing { requests, ..Outgoing::default() }
    }

    fn ok(id: u64) -> NativeReply {
        NativeReply { id, body: ReplyBody::Ok("{}".into()) }
    }

    #[test]
    fn resumes_an_operation_with_the_reply_it_waits_for() {
        let mut pending = Pending::default();
        // An untracked request beside the tracked one is not waited for.
        assert!(matches!(
            pending.wait(1, "a", sends(vec![request(5, 0), request(6, 10)])),
            Step::Wait(_)
        ));
        assert_eq!(pending.check_new(1).unwrap_err().message, "Operation 1 is already running");
        let reply = ok(6);
        let resumed = pending.resume(1, Some(&reply)).unwrap();
        assert_eq!(resumed.stage, "a");
        assert_eq!(resumed.reply.unwrap().1, "r6");
        assert!(pending.is_empty());
        assert_eq!(pending.resume(1, None).err().unwrap().message, "Operation 1 is not waiting");
    }

    #[test]
    fn resumes_a_step_that_waits_for_nothing_without_a_reply() {
        let mut pending = Pending::default();
        let updates = Outgoing { updates: vec!["{}".into()], ..Outgoing::default() };
        pending.wait(2, "page", updates);
        assert!(pending.resume(2, None).unwrap().reply.is_none());
        pending.wait(2, "page", Outgoing::default());
        assert_eq!(
            pending.resume(2, Some(&ok(3))).err().unwrap().message,
            "Operation 2 waits for no reply, got reply 3"
        );
    }

    #[test]
    fn refuses_the_wrong_reply_or_two_awaited_ones() {
        let mut pending = Pending::default();
        pending.wait(1, (), sends(vec![request(7, 10)]));
        assert_eq!(
            pending.resume(1, Some(&ok(8))).err().unwrap().message,
            "Reply 8 does not answer request 7 of operation 1"
        );
        pending.wait(1, (), sends(vec![request(7, 10)]));
        assert_eq!(
            pending.resume(1, None).err().unwrap().message,
            "Operation 1 waits for the reply to request 7"
        );
        let step = pending.wait(3, (), sends(vec![request(1, 10), request(2, 10)]));
        assert!(
            matches!(step, Step::Done(Err(e)) if e.message == "Operation 3 would wait for more than one reply")
        );
    }

    #[test]
    fn steps_wait_finish_or_fail() {
        let mut pending = Pending::default();
        assert!(matches!(pending.step(1, Ok(Next::send("s", request(4, 10)))), Step::Wait(_)));
        assert_eq!(pending.resume(1, Some(&ok(4))).unwrap().stage, "s");
        let Step::Done(Ok(finished)) = pending.step(2, Ok(Next::finished())) else { panic!() };
        assert_eq!(finished.response, "{}");
        let Step::Done(Ok(done)) = pending.step(3, Ok(Next::done(&serde_json::json!([1])))) else {
            panic!()
        };
        assert_eq!(done.response, "[1]");
        assert!(matches!(pending.step(4, Err::<Next<&str>, _>(internal("x"))), Step::Done(Err(_))));
        assert!(pending.is_empty());
    }

    #[test]
    fn puts_updates_first() {
        let waiting =
            Next::Wait("s", Outgoing { updates: vec!["b".into()], ..Outgoing::default() });
        let Next::Wait("s", outgoing) = waiting.with_updates(vec!["a".into()]) else { panic!() };
        assert_eq!(outgoing.updates, ["a", "b"]);
        let done = Next::<()>::Done(result(&serde_json::json!({}), vec!["b".into()]));
        let Next::Done(done) = done.with_updates(vec!["a".into()]) else { panic!() };
        assert_eq!((done.response.as_str(), done.updates), ("{}", vec!["a".into(), "b".into()]));
    }

    #[test]
    fn pages_by_count_and_by_size() {
        let mut pager = Pager::new((0..250).map(|n| n.to_string()).collect());
        let sizes: Vec<usize> = std::iter::from_fn(|| {
            let page = pager.next_page();
            (!page.is_empty()).then_some(page.len())
        })
        .collect();
        assert_eq!(sizes, [100, 100, 50]);
        let big = "x".repeat(Pager::MAX_BYTES);
        let mut pager = Pager::new(vec!["a".into(), big.clone(), "b".into(), "c".into()]);
        assert_eq!(pager.next_page(), ["a"], "the big one does not fit after `a`");
        assert_eq!(pager.next_page(), [big], "a page of its own");
        assert_eq!(pager.next_page(), ["b", "c"]);
        assert!(pager.is_empty() && pager.next_page().is_empty());
    }

    #[test]
    fn reads_reply_results() {
        let reply = NativeReply { id: 1, body: ReplyBody::Ok("{\"a\":1}".into()) };
        assert_eq!(reply_json(&reply, "Host", "x.y").unwrap(), serde_json::json!({"a": 1}));
        let lost = NativeReply { id: 1, body: ReplyBody::Lost("timed out".into()) };
        assert_eq!(
            reply_json(&lost, "Host", "x.y").unwrap_err().message,
            "Host did not answer x.y: timed out"
        );
        let bad = NativeReply { id: 1, body: ReplyBody::Ok("{".into()) };
        assert_eq!(
            reply_json(&bad, "Host", "x.y").unwrap_err().message,
            "The result of x.y is not valid JSON"
        );
        let binary = NativeReply { id: 1, body: ReplyBody::Ok(NativeData::Binary(vec![1])) };
        assert_eq!(
            reply_text(&binary, "Host", "x.y").unwrap_err().message,
            "The result of x.y is binary, not text"
        );
    }

    #[test]
    fn reads_the_reply_a_resume_waited_for() {
        let reply = NativeReply { id: 1, body: ReplyBody::Ok("[1]".into()) };
        assert_eq!(reply_value(Some((&reply, "x.y")), "Host").unwrap(), serde_json::json!([1]));
        assert_eq!(reply_value(None, "Host").unwrap(), serde_json::Value::Null);
        let lost = NativeReply { id: 1, body: ReplyBody::Lost("gone".into()) };
        assert_eq!(
            reply_value(Some((&lost, "x.y")), "Host").unwrap_err().message,
            "Host did not answer x.y: gone"
        );
    }
}
