//! The recording decorators: a `Mapper` whose connections and sessions pass every call through
//! to the real ones unchanged, and write the call and its result to the recording in the
//! golden-trace format (`zcode_golden::format`).
//!
//! Redacted recordings cannot use the live results as expectations: those derive from the
//! unredacted inputs (text echoed, paths joined, JSON fragments concatenated). So each real
//! instance gets a *shadow* instance of the same mapper that is fed the redacted inputs in
//! lockstep; its results are the expectations, and a replay performs exactly the calls the
//! shadow saw. Where a shadow result differs in shape from the live one, redaction changed the
//! mapper's behaviour and the line gets a comment saying so.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use zcode_contract::{
    AuthCommand, ConnectionOp, Contract, Effects, FactValue, Inbound, InteractionAnswer,
    InteractionOutcome, LaunchPlan, Mapper, MapperConnection, MapperError, MapperFault,
    MapperSession, NativeReply, Operations, Outgoing, ProbeRequest, ReplyBody, SessionInit,
    SessionInput, SessionOp, Step, VerifiedInstall,
};
use zcode_golden::{Call, Outcome, write_line};

use crate::redact::{LineRedactor, Redactor};
use crate::shape::shape;
use crate::sink::Sink;

const DIVERGENCE_NOTE: &str = "# redaction changed this result's shape: the expectation below is \
                               the mapper's answer to the redacted input\n";

/// State shared by every wrapped mapper, connection and session of one recording.
pub(crate) struct Shared {
    pub sink: Sink,
    /// `None` for an unredacted recording.
    redactor: Option<Mutex<Redactor>>,
    sessions: AtomicU64,
    divergences: AtomicU64,
}

impl Shared {
    pub fn new(sink: Sink, redacted: bool) -> Self {
        Self {
            sink,
            redactor: redacted.then(|| Mutex::new(Redactor::new())),
            sessions: AtomicU64::new(0),
            divergences: AtomicU64::new(0),
        }
    }

    pub fn redacted(&self) -> bool {
        self.redactor.is_some()
    }

    pub fn divergences(&self) -> u64 {
        self.divergences.load(Ordering::Relaxed)
    }

    fn redact<T>(&self, redact: impl FnOnce(&mut Redactor) -> T) -> T {
        let redactor = self.redactor.as_ref().expect("only redacted recordings redact");
        redact(&mut redactor.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// Writes one call line with the expectation `recorded` gives it.
    fn write_call(&self, call: &Call, recorded: Recorded) {
        match recorded {
            Recorded::Live(outcome) => self.write_line(call, Some(&outcome), false),
            Recorded::Shadow { live, shadow } => {
                let diverged = shape(&live.to_value()) != shape(&shadow.to_value());
                self.write_line(call, Some(&shadow), diverged);
            }
            Recorded::Unchecked => self.write_line(call, None, false),
        }
    }

    /// Writes one line, after a note when redaction changed the mapper's result. A created
    /// resource gets an expectation only when creating it failed.
    fn write_line(&self, call: &Call, expect: Option<&Outcome>, diverged: bool) {
        let mut text = String::new();
        if diverged {
            self.diverged();
            text.push_str(DIVERGENCE_NOTE);
        }
        let expect = expect.filter(|outcome| **outcome != Outcome::Created).map(Outcome::to_value);
        text.push_str(&write_line(call, expect.as_ref()));
        text.push('\n');
        self.sink.write(&text);
    }

    fn diverged(&self) {
        if self.divergences.fetch_add(1, Ordering::Relaxed) == 0 {
            tracing::warn!(
                target: "zcode_acp::recording",
                "redaction changed a mapper result; the recording marks such lines with a comment"
            );
        }
    }
}

/// What a recorded line expects.
enum Recorded {
    /// Unredacted: the live result.
    Live(Outcome),
    /// Redacted: the shadow's result for the redacted input, and the live one to compare.
    Shadow { live: Outcome, shadow: Outcome },
    /// No shadow (it could not be created): the input is recorded without an expectation.
    Unchecked,
}

/// The instance that produces a line's expectation.
enum Mirror<S: ?Sized> {
    /// Unredacted recording: the live instance itself.
    Live,
    /// Redacted recording: a second instance of the same mapper, fed the redacted inputs.
    Shadow(Box<S>),
    /// Redacted recording whose shadow could not be created.
    Missing,
}

impl<S: ?Sized> Mirror<S> {
    fn new(
        shared: &Shared,
        create: impl FnOnce() -> Result<Box<S>, MapperFault>,
    ) -> (Self, Option<MapperFault>) {
        if !shared.redacted() {
            return (Mirror::Live, None);
        }
        match create() {
            Ok(shadow) => (Mirror::Shadow(shadow), None),
            Err(fault) => (Mirror::Missing, Some(fault)),
        }
    }

    /// Records one call: the input as recorded (the live one, or redacted by `redact`) goes
    /// into the line `call` builds, and the shadow (if any) performs the call on it.
    fn record<I: Clone>(
        &mut self,
        shared: &Shared,
        input: &I,
        live: Outcome,
        redact: impl FnOnce(&mut Redactor, &I) -> I,
        perform: impl FnOnce(&mut S, &I) -> Outcome,
        call: impl FnOnce(I) -> Call,
    ) {
        let (recorded_input, recorded) = match self {
            Mirror::Live => (input.clone(), Recorded::Live(live)),
            Mirror::Shadow(shadow) => {
                let redacted = shared.redact(|r| redact(r, input));
                let shadow = perform(shadow, &redacted);
                (redacted, Recorded::Shadow { live, shadow })
            }
            Mirror::Missing => (shared.redact(|r| redact(r, input)), Recorded::Unchecked),
        };
        shared.write_call(&call(recorded_input), recorded);
    }
}

/// For calls without input.
fn nothing(_: &mut Redactor, _: &()) {}

// ----- the mapper ------------------------------------------------------------------------------

pub(crate) struct RecordingMapper {
    pub inner: Arc<dyn Mapper>,
    pub shared: Arc<Shared>,
}

impl Mapper for RecordingMapper {
    fn source(&self) -> &str {
        self.inner.source()
    }

    fn contract(&self) -> &Contract {
        self.inner.contract()
    }

    fn launch_plan(&self, install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        self.inner.launch_plan(install)
    }

    fn auth_plan(
        &self,
        install: &VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError> {
        self.inner.auth_plan(install, command)
    }

    fn connection(&self) -> Result<Box<dyn MapperConnection>, MapperFault> {
        let real = self.inner.connection();
        if !self.shared.sink.active() {
            return real;
        }
        let (mirror, shadow_fault) = Mirror::new(&self.shared, || self.inner.connection());
        let failure =
            if self.shared.redacted() { shadow_fault } else { real.as_ref().err().cloned() };
        let outcome = failure.map_or(Outcome::Created, Outcome::Fault);
        self.shared.write_line(&Call::ConnectionNew, Some(&outcome), false);
        Ok(Box::new(RecordingConnection {
            real: real?,
            mirror,
            lines: LineRedactor::default(),
            shared: self.shared.clone(),
        }))
    }

    fn session(&self, init: &SessionInit) -> Result<Box<dyn MapperSession>, MapperFault> {
        let real = self.inner.session(init);
        if !self.shared.sink.active() {
            return real;
        }
        let name = format!("s{}", self.shared.sessions.fetch_add(1, Ordering::Relaxed) + 1);
        let recorded_init = match self.shared.redacted() {
            true => self.shared.redact(|r| redact_init(r, init)),
            false => init.clone(),
        };
        let (mirror, shadow_fault) =
            Mirror::new(&self.shared, || self.inner.session(&recorded_init));
        let failure =
            if self.shared.redacted() { shadow_fault } else { real.as_ref().err().cloned() };
        let outcome = failure.map_or(Outcome::Created, Outcome::Fault);
        let call = Call::SessionNew { name: name.clone(), init: recorded_init };
        self.shared.write_line(&call, Some(&outcome), false);
        Ok(Box::new(RecordingSession { real: real?, mirror, name, shared: self.shared.clone() }))
    }
}

// ----- connections -----------------------------------------------------------------------------

struct RecordingConnection {
    real: Box<dyn MapperConnection>,
    mirror: Mirror<dyn MapperConnection>,
    /// Redacted recordings push whole lines: a line split across pushes cannot be redacted
    /// piecewise.
    lines: LineRedactor,
    shared: Arc<Shared>,
}

impl RecordingConnection {
    /// Records pushed bytes. Redacted: only the lines completed so far, so a push that
    /// completes nothing is not recorded at all (it changes no mapper state but a buffer).
    fn record_push(&mut self, bytes: &[u8], live: &Result<Vec<Inbound>, MapperError>) {
        let shared = &self.shared;
        let live = Outcome::from(live.clone());
        let (recorded, outcome) = match &mut self.mirror {
            Mirror::Live => (bytes.to_vec(), Recorded::Live(live)),
            Mirror::Shadow(shadow) => {
                let redacted = shared.redact(|r| self.lines.push(r, bytes));
                if redacted.is_empty() {
                    return;
                }
                let shadow = Outcome::from(shadow.push(&redacted));
                (redacted, Recorded::Shadow { live, shadow })
            }
            Mirror::Missing => {
                let redacted = shared.redact(|r| self.lines.push(r, bytes));
                if redacted.is_empty() {
                    return;
                }
                (redacted, Recorded::Unchecked)
            }
        };
        shared.write_call(&Call::ConnectionPush { bytes: recorded }, outcome);
    }

    /// Records the end of output. Redacted: the unterminated tail is pushed first; the shadow's
    /// tail push and finish together answer for the live finish.
    fn record_finish(&mut self, live: &Result<Vec<Inbound>, MapperError>) {
        let shared = &self.shared;
        let live = Outcome::from(live.clone());
        let shadow = match &mut self.mirror {
            Mirror::Live => {
                return shared.write_call(&Call::ConnectionFinish, Recorded::Live(live));
            }
            Mirror::Missing => {
                return shared.write_call(&Call::ConnectionFinish, Recorded::Unchecked);
            }
            Mirror::Shadow(shadow) => shadow,
        };
        let tail = shared.redact(|r| self.lines.finish(r));
        let mut from_tail = Ok(Vec::new());
        if !tail.is_empty() {
            from_tail = shadow.push(&tail);
            let outcome = Outcome::from(from_tail.clone());
            shared.write_line(&Call::ConnectionPush { bytes: tail }, Some(&outcome), false);
        }
        let finished = shadow.finish();
        let combined = match (from_tail, &finished) {
            (Ok(mut items), Ok(rest)) => {
                items.extend(rest.iter().cloned());
                Ok(items)
            }
            (Err(error), _) => Err(error),
            (Ok(_), Err(error)) => Err(error.clone()),
        };
        let diverged = shape(&live.to_value()) != shape(&Outcome::from(combined).to_value());
        shared.write_line(&Call::ConnectionFinish, Some(&Outcome::from(finished)), diverged);
    }
}

impl MapperConnection for RecordingConnection {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        let result = self.real.push(bytes);
        if self.shared.sink.active() {
            self.record_push(bytes, &result);
        }
        result
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        let result = self.real.finish();
        if self.shared.sink.active() {
            self.record_finish(&result);
        }
        result
    }

    fn identity(&mut self) -> Result<Option<String>, MapperFault> {
        let result = self.real.identity();
        if self.shared.sink.active() {
            self.mirror.record(
                &self.shared,
                &(),
                Outcome::from(result.clone()),
                nothing,
                |shadow, ()| shadow.identity().into(),
                |()| Call::ConnectionIdentity,
            );
        }
        result
    }
}

impl Operations<ConnectionOp> for RecordingConnection {
    fn start(
        &mut self,
        op_id: u64,
        op: &ConnectionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let result = self.real.start(op_id, op, first_request_id);
        if self.shared.sink.active() {
            self.mirror.record(
                &self.shared,
                op,
                Outcome::from(result.clone()),
                redact_connection_op,
                |shadow, op| shadow.start(op_id, op, first_request_id).into(),
                |op| Call::ConnectionStart { op_id, op, first_request_id },
            );
        }
        result
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let result = self.real.resume(op_id, reply, first_request_id);
        if self.shared.sink.active() {
            self.mirror.record(
                &self.shared,
                &reply.cloned(),
                Outcome::from(result.clone()),
                redact_optional_reply,
                |shadow, reply| shadow.resume(op_id, reply.as_ref(), first_request_id).into(),
                |reply| Call::ConnectionResume { op_id, reply, first_request_id },
            );
        }
        result
    }
}

// ----- sessions --------------------------------------------------------------------------------

struct RecordingSession {
    real: Box<dyn MapperSession>,
    mirror: Mirror<dyn MapperSession>,
    name: String,
    shared: Arc<Shared>,
}

impl Operations<SessionOp> for RecordingSession {
    fn start(
        &mut self,
        op_id: u64,
        op: &SessionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let result = self.real.start(op_id, op, first_request_id);
        if self.shared.sink.active() {
            let name = self.name.clone();
            self.mirror.record(
                &self.shared,
                op,
                Outcome::from(result.clone()),
                redact_session_op,
                |shadow, op| shadow.start(op_id, op, first_request_id).into(),
                |op| Call::SessionStart { name, op_id, op, first_request_id },
            );
        }
        result
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let result = self.real.resume(op_id, reply, first_request_id);
        if self.shared.sink.active() {
            let name = self.name.clone();
            self.mirror.record(
                &self.shared,
                &reply.cloned(),
                Outcome::from(result.clone()),
                redact_optional_reply,
                |shadow, reply| shadow.resume(op_id, reply.as_ref(), first_request_id).into(),
                |reply| Call::SessionResume { name, op_id, reply, first_request_id },
            );
        }
        result
    }
}

impl MapperSession for RecordingSession {
    fn map(&mut self, inputs: Vec<SessionInput>) -> Result<Effects, MapperFault> {
        if !self.shared.sink.active() {
            return self.real.map(inputs);
        }
        let result = self.real.map(inputs.clone());
        let name = self.name.clone();
        self.mirror.record(
            &self.shared,
            &inputs,
            Outcome::from(result.clone()),
            |r, inputs| inputs.iter().map(|input| redact_input(r, input)).collect(),
            |shadow, inputs| shadow.map(inputs.clone()).into(),
            |inputs| Call::SessionMap { name, inputs },
        );
        result
    }

    fn issue(&mut self, first_request_id: u64) -> Result<Outgoing, MapperFault> {
        let result = self.real.issue(first_request_id);
        if self.shared.sink.active() {
            let name = self.name.clone();
            self.mirror.record(
                &self.shared,
                &(),
                Outcome::from(result.clone()),
                nothing,
                |shadow, ()| shadow.issue(first_request_id).into(),
                |()| Call::SessionIssue { name, first_request_id },
            );
        }
        result
    }
}

// ----- redacting typed inputs ------------------------------------------------------------------

/// Facts hold no credential (presence verdicts only), but their JSON may hold paths and the
/// user's settings: redacted like any JSON. The shadow mapper then sees redacted settings, so a
/// session that pushes account state diverges from it there; unredacted recordings replay it.
fn redact_init(r: &mut Redactor, init: &SessionInit) -> SessionInit {
    SessionInit {
        facts: redact_facts(r, &init.facts),
        workspace: r.text(&init.workspace),
        client: init.client,
    }
}

fn redact_facts(r: &mut Redactor, facts: &[(String, FactValue)]) -> Vec<(String, FactValue)> {
    facts
        .iter()
        .map(|(name, value)| {
            let value = match value {
                FactValue::Json(json) => FactValue::Json(r.json_text(json)),
                presence => presence.clone(),
            };
            (name.clone(), value)
        })
        .collect()
}

fn redact_connection_op(r: &mut Redactor, op: &ConnectionOp) -> ConnectionOp {
    match op {
        ConnectionOp::Setup => ConnectionOp::Setup,
        // `doctor`'s probe carries the same facts as a session, redacted the same way.
        ConnectionOp::Probe(probe) => ConnectionOp::Probe(ProbeRequest {
            workspace: r.text(&probe.workspace),
            facts: redact_facts(r, &probe.facts),
        }),
        ConnectionOp::ListSessions(params) => ConnectionOp::ListSessions(r.json_text(params)),
    }
}

fn redact_session_op(r: &mut Redactor, op: &SessionOp) -> SessionOp {
    match op {
        SessionOp::Create(params) => SessionOp::Create(r.json_text(params)),
        SessionOp::Load(params) => SessionOp::Load(r.json_text(params)),
        SessionOp::Resume(params) => SessionOp::Resume(r.json_text(params)),
        SessionOp::Fork(params) => SessionOp::Fork(r.json_text(params)),
        SessionOp::Prompt(params) => SessionOp::Prompt(r.json_text(params)),
        SessionOp::SetMode(params) => SessionOp::SetMode(r.json_text(params)),
        SessionOp::SetConfigOption(params) => SessionOp::SetConfigOption(r.json_text(params)),
        SessionOp::Answer(answer) => SessionOp::Answer(InteractionAnswer {
            // Keys and option ids are the mapper's own identifiers, not user data.
            key: answer.key.clone(),
            outcome: match &answer.outcome {
                InteractionOutcome::Selected(option) => {
                    InteractionOutcome::Selected(option.clone())
                }
                InteractionOutcome::Elicited(response) => {
                    InteractionOutcome::Elicited(r.json_text(response))
                }
                InteractionOutcome::Unavailable(why) => {
                    InteractionOutcome::Unavailable(r.text(why))
                }
            },
        }),
        SessionOp::Cancel | SessionOp::FinishTurn | SessionOp::Close => op.clone(),
    }
}

fn redact_reply(r: &mut Redactor, reply: &NativeReply) -> NativeReply {
    let body = match &reply.body {
        ReplyBody::Ok(data) => ReplyBody::Ok(r.native_data(data)),
        ReplyBody::Error(error) => ReplyBody::Error(MapperError {
            kind: error.kind,
            message: r.text(&error.message),
            data: error.data.as_deref().map(|data| r.json_text(data)),
        }),
        ReplyBody::Lost(reason) => ReplyBody::Lost(r.text(reason)),
    };
    NativeReply { id: reply.id, body }
}

fn redact_optional_reply(r: &mut Redactor, reply: &Option<NativeReply>) -> Option<NativeReply> {
    reply.as_ref().map(|reply| redact_reply(r, reply))
}

fn redact_input(r: &mut Redactor, input: &SessionInput) -> SessionInput {
    match input {
        SessionInput::Event(data) => SessionInput::Event(r.native_data(data)),
        SessionInput::Reply(reply) => SessionInput::Reply(redact_reply(r, reply)),
    }
}
