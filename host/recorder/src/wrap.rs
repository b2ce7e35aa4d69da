//! The recording decorators: a `Mapper` whose connections and sessions pass every call through
//! to the real ones unchanged, and write the call and its result to the recording.
//!
//! Redacted recordings cannot use the live results as expectations: those derive from the
//! unredacted inputs (text echoed, paths joined, JSON fragments concatenated). So each real
//! instance gets a *shadow* instance of the same mapper that is fed the redacted inputs in
//! lockstep; its results are the expectations, and a replay performs exactly the calls the
//! shadow saw. Where a shadow result differs in shape from the live one, redaction changed the
//! mapper's behaviour and the line gets a comment saying so.

use std::borrow::Borrow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use zcode_contract::{
    Action, AuthCommand, ConnectionOp, Contract, Inbound, InteractionAnswer, InteractionOutcome,
    LaunchPlan, Mapper, MapperConnection, MapperError, MapperFault, MapperSession, NativeReply,
    ReplyBody, SessionInit, SessionOp, Step, VerifiedInstall,
};

use crate::encode;
use crate::redact::{LineRedactor, Redactor};
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

    /// Writes one call line with the outcome's expectation.
    fn write_call(&self, fields: Vec<(&'static str, Value)>, outcome: Outcome) {
        match outcome {
            Outcome::Live(result) => self.write_line(fields, Some(result), false),
            Outcome::Shadow { live, shadow } => {
                let diverged = encode::shape(&live) != encode::shape(&shadow);
                self.write_line(fields, Some(shadow), diverged);
            }
            Outcome::Unchecked => self.write_line(fields, None, false),
        }
    }

    /// Writes one line, after a note when redaction changed the mapper's result.
    fn write_line(
        &self,
        mut fields: Vec<(&'static str, Value)>,
        expect: Option<Value>,
        diverged: bool,
    ) {
        let mut text = String::new();
        if diverged {
            self.diverged();
            text.push_str(DIVERGENCE_NOTE);
        }
        if let Some(expect) = expect {
            fields.push(("expect", expect));
        }
        text.push_str(&encode::line(&fields));
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
enum Outcome {
    /// Unredacted: the live result.
    Live(Value),
    /// Redacted: the shadow's result for the redacted input, and the live one to compare.
    Shadow { live: Value, shadow: Value },
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

    /// The input as recorded (encoded) and the line's outcome: the live input and result, or
    /// the redacted input and the shadow's result for it.
    fn follow<I: ?Sized + ToOwned>(
        &mut self,
        shared: &Shared,
        input: &I,
        live: impl FnOnce() -> Value,
        redact: impl FnOnce(&mut Redactor, &I) -> I::Owned,
        call_shadow: impl FnOnce(&mut S, &I) -> Value,
        encode_input: impl Fn(&I) -> Value,
    ) -> (Value, Outcome) {
        match self {
            Mirror::Live => (encode_input(input), Outcome::Live(live())),
            Mirror::Shadow(shadow) => {
                let redacted = shared.redact(|r| redact(r, input));
                let shadow = call_shadow(shadow, redacted.borrow());
                (encode_input(redacted.borrow()), Outcome::Shadow { live: live(), shadow })
            }
            Mirror::Missing => {
                let redacted = shared.redact(|r| redact(r, input));
                (encode_input(redacted.borrow()), Outcome::Unchecked)
            }
        }
    }
}

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
        let mut fields = vec![("call", json!("connection.new"))];
        if let Some(fault) = failure {
            fields.push(("expect", encode::fault(&fault)));
        }
        self.shared.sink.write(&encode::line(&fields));
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
        let mut fields = vec![
            ("call", json!("session.new")),
            ("name", json!(name)),
            ("init", encode::init(&recorded_init)),
        ];
        if let Some(fault) = failure {
            fields.push(("expect", encode::fault(&fault)));
        }
        self.shared.sink.write(&encode::line(&fields));
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
        let (recorded, outcome) = match &mut self.mirror {
            Mirror::Live => (bytes.to_vec(), Outcome::Live(encode::inbound_result(live))),
            Mirror::Shadow(shadow) => {
                let redacted = shared.redact(|r| self.lines.push(r, bytes));
                if redacted.is_empty() {
                    return;
                }
                let shadow = encode::inbound_result(&shadow.push(&redacted));
                (redacted, Outcome::Shadow { live: encode::inbound_result(live), shadow })
            }
            Mirror::Missing => {
                let redacted = shared.redact(|r| self.lines.push(r, bytes));
                if redacted.is_empty() {
                    return;
                }
                (redacted, Outcome::Unchecked)
            }
        };
        let fields = vec![("call", json!("connection.push")), ("bytes", encode::bytes(&recorded))];
        shared.write_call(fields, outcome);
    }

    /// Records the end of output. Redacted: the unterminated tail is pushed first; the shadow's
    /// tail push and finish together answer for the live finish.
    fn record_finish(&mut self, live: &Result<Vec<Inbound>, MapperError>) {
        let shared = &self.shared;
        let finish = vec![("call", json!("connection.finish"))];
        let shadow = match &mut self.mirror {
            Mirror::Live => {
                return shared.write_call(finish, Outcome::Live(encode::inbound_result(live)));
            }
            Mirror::Missing => return shared.write_call(finish, Outcome::Unchecked),
            Mirror::Shadow(shadow) => shadow,
        };
        let tail = shared.redact(|r| self.lines.finish(r));
        let mut from_tail = Ok(Vec::new());
        if !tail.is_empty() {
            from_tail = shadow.push(&tail);
            let fields = vec![("call", json!("connection.push")), ("bytes", encode::bytes(&tail))];
            shared.write_line(fields, Some(encode::inbound_result(&from_tail)), false);
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
        let diverged = encode::shape(&encode::inbound_result(live))
            != encode::shape(&encode::inbound_result(&combined));
        shared.write_line(finish, Some(encode::inbound_result(&finished)), diverged);
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

    fn start(
        &mut self,
        op_id: u64,
        op: &ConnectionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let result = self.real.start(op_id, op, first_request_id);
        if self.shared.sink.active() {
            let (op, outcome) = self.mirror.follow(
                &self.shared,
                op,
                || encode::step_result(&result),
                redact_connection_op,
                |shadow, op| encode::step_result(&shadow.start(op_id, op, first_request_id)),
                encode::connection_op,
            );
            let fields = vec![
                ("call", json!("connection.start")),
                ("opId", json!(op_id)),
                ("op", op),
                ("firstRequestId", json!(first_request_id)),
            ];
            self.shared.write_call(fields, outcome);
        }
        result
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: &NativeReply,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let result = self.real.resume(op_id, reply, first_request_id);
        if self.shared.sink.active() {
            let (reply, outcome) = self.mirror.follow(
                &self.shared,
                reply,
                || encode::step_result(&result),
                redact_reply,
                |shadow, reply| encode::step_result(&shadow.resume(op_id, reply, first_request_id)),
                encode::reply,
            );
            let fields = vec![
                ("call", json!("connection.resume")),
                ("opId", json!(op_id)),
                ("reply", reply),
                ("firstRequestId", json!(first_request_id)),
            ];
            self.shared.write_call(fields, outcome);
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

impl MapperSession for RecordingSession {
    fn start(
        &mut self,
        op_id: u64,
        op: &SessionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let result = self.real.start(op_id, op, first_request_id);
        if self.shared.sink.active() {
            let (op, outcome) = self.mirror.follow(
                &self.shared,
                op,
                || encode::step_result(&result),
                redact_session_op,
                |shadow, op| encode::step_result(&shadow.start(op_id, op, first_request_id)),
                encode::session_op,
            );
            let fields = vec![
                ("call", json!("session.start")),
                ("name", json!(self.name)),
                ("opId", json!(op_id)),
                ("op", op),
                ("firstRequestId", json!(first_request_id)),
            ];
            self.shared.write_call(fields, outcome);
        }
        result
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: &NativeReply,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let result = self.real.resume(op_id, reply, first_request_id);
        if self.shared.sink.active() {
            let (reply, outcome) = self.mirror.follow(
                &self.shared,
                reply,
                || encode::step_result(&result),
                redact_reply,
                |shadow, reply| encode::step_result(&shadow.resume(op_id, reply, first_request_id)),
                encode::reply,
            );
            let fields = vec![
                ("call", json!("session.resume")),
                ("name", json!(self.name)),
                ("opId", json!(op_id)),
                ("reply", reply),
                ("firstRequestId", json!(first_request_id)),
            ];
            self.shared.write_call(fields, outcome);
        }
        result
    }

    fn map_event(&mut self, payload: &str) -> Result<Vec<Action>, MapperFault> {
        let result = self.real.map_event(payload);
        if self.shared.sink.active() {
            let (payload, outcome) = self.mirror.follow(
                &self.shared,
                payload,
                || encode::actions_result(&result),
                |r, payload| r.json_text(payload),
                |shadow, payload| encode::actions_result(&shadow.map_event(payload)),
                encode::json_text,
            );
            let fields = vec![
                ("call", json!("session.map-event")),
                ("name", json!(self.name)),
                ("payload", payload),
            ];
            self.shared.write_call(fields, outcome);
        }
        result
    }
}

// ----- redacting typed inputs ------------------------------------------------------------------

fn redact_init(r: &mut Redactor, init: &SessionInit) -> SessionInit {
    SessionInit { workspace: r.text(&init.workspace), client: init.client }
}

fn redact_connection_op(r: &mut Redactor, op: &ConnectionOp) -> ConnectionOp {
    match op {
        ConnectionOp::Setup => ConnectionOp::Setup,
        ConnectionOp::Probe(path) => ConnectionOp::Probe(r.text(path)),
        ConnectionOp::ListSessions(params) => ConnectionOp::ListSessions(r.json_text(params)),
    }
}

fn redact_session_op(r: &mut Redactor, op: &SessionOp) -> SessionOp {
    match op {
        SessionOp::Create(params) => SessionOp::Create(r.json_text(params)),
        SessionOp::Load(params) => SessionOp::Load(r.json_text(params)),
        SessionOp::Resume(params) => SessionOp::Resume(r.json_text(params)),
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
        ReplyBody::Ok(text) => ReplyBody::Ok(r.json_text(text)),
        ReplyBody::Error(error) => ReplyBody::Error(MapperError {
            kind: error.kind,
            message: r.text(&error.message),
            data: error.data.as_deref().map(|data| r.json_text(data)),
        }),
        ReplyBody::Lost(reason) => ReplyBody::Lost(r.text(reason)),
    };
    NativeReply { id: reply.id, body }
}
