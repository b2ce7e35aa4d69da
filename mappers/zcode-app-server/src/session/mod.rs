//! The mapping state of one ZCode session: its operations as step machines, and the input the
//! Agent routes to it (legacy events, V4 frames, reverse requests).
//!
//! - [`open`]: create, load, resume, close;
//! - [`prompt`]: a prompt turn, cancel, the turn's end;
//! - [`settings`]: modes and config options;
//! - [`input`]: legacy events and V4 frames;
//! - [`reverse`]: the Agent's reverse requests and their answers.

mod input;
mod open;
mod prompt;
mod reverse;
mod settings;

use std::collections::BTreeMap;

use serde_json::{Value, json};
use zcode_contract::{
    Effects, ErrorKind, MapperError, NativeReply, NativeRequest, OpResult, Outgoing, ReplyBody,
    SessionInit, SessionInput, SessionOp, Step, Terminal,
};
use zcode_mapper_sdk::json::{protocol, text};
use zcode_v4::schema::native;

use crate::account::{AccountState, account_state};
use crate::connection::carried_route;
use crate::conversation::Conversation;
use crate::interactions::{self, Pending};
use crate::releases::{self, Profile};
use crate::subscription::Subscription;
use crate::tools::Tools;
use crate::wire;

const TIMEOUT_MS: u32 = 60_000;

/// Where an opening operation (create, load, resume) is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Capabilities,
    GuardedProbe,
    /// `provider/updateAccountConfig` sent (`crate::account`).
    AccountPush,
    Open,
    Messages,
    Replay,
    Subscribe,
    Flow,
    V4Subscribe,
    /// A fork: the parent's newest V4 rows page requested.
    ForkRows,
    /// A fork: `forkAssistant` sent.
    ForkCommand,
}

/// Where an opening operation is in a fork (`session/fork`): the parent is resumed and read,
/// and forked at its newest row that can fork; the core then loads the new session.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Forking {
    /// Not a fork.
    No,
    /// The parent is being resumed or read (`resume` names it).
    Parent,
    /// `forkAssistant` with this command id is out.
    Command(String),
}

/// Where a prompt is. ZCode evicts an idle session's runtime (APP §1.5, §8.20): the prompt is
/// then refused as not active (`-32004`, V4 `proto.sessionNotFound`) until the session is
/// resumed, so a refused prompt resumes the session, subscribes again and is sent once more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PromptStage {
    Sent,
    Resume,
    Subscribe,
    V4Subscribe,
    Resent,
}

enum Op {
    Opening {
        stage: Stage,
        replay: bool,
        resume: Option<String>,
        mcp: Value,
        pending_updates: Vec<String>,
        fork: Forking,
    },
    Prompt {
        prompt: prompt::NativePrompt,
        stage: PromptStage,
    },
    Cancel,
    Mode {
        mode: String,
        legacy: bool,
    },
    Model {
        provider: String,
        model: String,
        thought: Option<String>,
        legacy_step: u8,
    },
    Answer {
        key: String,
        answer: interactions::Answer,
        v4: bool,
    },
    Close,
}

pub struct AppServerSession {
    workspace: String,
    profile: Profile,
    id: Option<String>,
    ops: BTreeMap<u64, Op>,
    tools: Tools,
    running: bool,
    cancelled: bool,
    usage: Option<Value>,
    interactions: BTreeMap<String, Pending>,
    /// The client renders form elicitation (else questions are permissions or declined).
    forms: bool,
    v4: Subscription,
    /// The session holds its `connection::carried_route` (see `carried_routes`).
    holds_carried: bool,
    /// A close is under way: the session holds no route once it is sent.
    closing: bool,
    /// Requests announced by the last `map`, handed out by `issue`.
    announced: Vec<(String, Value)>,
    /// Legacy event sequence reached (events at or below are duplicates).
    event_seq: Option<u64>,
    /// Ids of the `session/events` requests issued to replay skipped events (the other
    /// requests a `map` issues are V4 resyncs).
    replays: Vec<u64>,
    /// Legacy events held while skipped ones are replayed (their params, as they came); `Some`
    /// while a replay is out.
    held: Option<Vec<String>>,
    /// Replayed events are being read: a gap among them is not replayed again.
    replaying: bool,
    /// The mode the client was last told of: by the answer that opened the session, a switch's
    /// answer or ZCode's state (`conversation::Context::shown_mode`).
    mode: Option<String>,
    model: Option<(String, String)>,
    thought: Option<String>,
    models: Vec<Value>,
    thoughts: Vec<Value>,
    /// The MCP servers the session was opened with (a resume after an eviction sends them
    /// again: ZCode keeps them per runtime, not per session).
    mcp: Value,
    /// ACP `available_commands_update` from the opened session's slash commands.
    commands: Option<String>,
    /// The V4 conversation: the turn's content where the Agent has V4.
    conversation: Conversation,
    /// The legacy stream ended the turn before the V4 frames carrying its last content came:
    /// the end waits for them (V4 frames are flushed on a timer, legacy events are not).
    pending_terminal: Option<Terminal>,
    /// The account push of this session's facts, and the plan providers left unlisted.
    account: AccountState,
}

fn request(id: u64, method: &str, params: Value) -> NativeRequest {
    NativeRequest {
        id,
        bytes: wire::request(id, method, params),
        label: method.to_string(),
        timeout_ms: TIMEOUT_MS,
    }
}

fn wait(requests: Vec<NativeRequest>) -> Step {
    Step::Wait(Outgoing { requests, ..Outgoing::default() })
}

fn done(response: Value, updates: Vec<String>) -> Step {
    Step::Done(Ok(OpResult { response: text(&response), updates }))
}

impl AppServerSession {
    pub fn new(init: &SessionInit) -> Self {
        Self {
            workspace: init.workspace.clone(),
            forms: init.client.form_elicitation,
            profile: releases::OLD,
            id: None,
            ops: BTreeMap::new(),
            tools: Tools::default(),
            running: false,
            cancelled: false,
            usage: None,
            interactions: BTreeMap::new(),
            v4: Subscription::default(),
            holds_carried: false,
            closing: false,
            announced: Vec::new(),
            event_seq: None,
            replays: Vec::new(),
            held: None,
            replaying: false,
            mode: None,
            model: None,
            thought: None,
            models: Vec::new(),
            thoughts: Vec::new(),
            commands: None,
            mcp: json!([]),
            conversation: Conversation::default(),
            pending_terminal: None,
            account: account_state(&init.facts),
        }
    }

    /// Adds to a step's `outgoing` what makes the session hold its `connection::carried_route`
    /// exactly while it is open without a V4 subscription: with one, the legacy events V4 also
    /// carries (every streamed delta among them) are dropped by the core instead of reaching
    /// the session. Every step that waits passes here, so the route goes with the first step
    /// after V4 is subscribed (a prompt's first, at the latest), and events routed before
    /// that are dropped by the session as ever.
    fn carried_routes(&mut self, outgoing: &mut Outgoing) {
        let Some(sid) = self.id.as_deref() else { return };
        let wanted = !self.v4.active() && !self.closing;
        if wanted != self.holds_carried {
            let routes =
                if wanted { &mut outgoing.routes_added } else { &mut outgoing.routes_removed };
            routes.push(carried_route(sid));
            self.holds_carried = wanted;
        }
    }

    fn routed(&mut self, step: Result<Step, MapperError>) -> Step {
        match step {
            Ok(Step::Wait(mut outgoing)) => {
                self.carried_routes(&mut outgoing);
                Step::Wait(outgoing)
            }
            Ok(done) => done,
            Err(error) => Step::Done(Err(error)),
        }
    }

    fn sid(&self) -> Result<&str, MapperError> {
        self.id
            .as_deref()
            .ok_or_else(|| MapperError::new(ErrorKind::NotFound, "The session is not open"))
    }

    fn start_op(&mut self, op_id: u64, op: &SessionOp, first: u64) -> Result<Step, MapperError> {
        match op {
            SessionOp::Create(params)
            | SessionOp::Load(params)
            | SessionOp::Resume(params)
            | SessionOp::Fork(params) => self.begin_open(op_id, op, params, first),
            SessionOp::Prompt(params) => self.begin_prompt(op_id, params, first),
            SessionOp::Cancel => self.cancel(op_id, first),
            SessionOp::FinishTurn => self.finish_turn(),
            SessionOp::SetMode(params) => self.set_mode_op(op_id, params, first),
            SessionOp::SetConfigOption(params) => self.set_config_option(op_id, params, first),
            SessionOp::Answer(answer) => self.answer(op_id, answer, first),
            SessionOp::Close => self.close(op_id, first),
        }
    }

    fn resume_op(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first: u64,
    ) -> Result<Step, MapperError> {
        let op =
            self.ops.remove(&op_id).ok_or_else(|| protocol(format!("no session op {op_id}")))?;
        match op {
            Op::Opening { stage, replay, resume, mcp, pending_updates, fork } => {
                self.opening(op_id, stage, replay, resume, mcp, pending_updates, fork, reply, first)
            }
            Op::Prompt { prompt, stage } => {
                let step = self.prompt_step(op_id, prompt, stage, reply, first);
                if step.is_err() {
                    self.running = false;
                    self.conversation.unwatch();
                }
                step
            }
            // Whatever the stop's fate, the turn ends through its events or the core's drain.
            Op::Cancel => Ok(done(json!({}), Vec::new())),
            Op::Mode { mode, legacy } => self.mode_replied(op_id, mode, legacy, reply, first),
            Op::Model { provider, model, thought, legacy_step } => {
                self.model_replied(op_id, (provider, model, thought, legacy_step), reply, first)
            }
            Op::Answer { key, answer, v4 } => self.answer_replied(op_id, (key, answer, v4), reply),
            Op::Close => {
                self.id = None;
                Ok(done(json!({}), Vec::new()))
            }
        }
    }
}

/// The event sequence a `session/subscribe` answer leaves the session at. A real answer is
/// `{eventSeq, events, sessionId}`, `events` the log from the cursor on ("ZCode app-server
/// Session Protocol" probe log, CLI 0.16.x, §5.2; the Desktop 3.12.3 live record, Q1): the
/// mapper subscribes without a cursor, so what it carries is already in the history read, and
/// only moves the sequence on.
fn subscribed_seq(result: &Value) -> Option<u64> {
    let listed = result.get("events").and_then(Value::as_array).into_iter().flatten();
    let last = listed.filter_map(|event| event.get("seq").and_then(Value::as_u64)).max();
    result.get("eventSeq").and_then(Value::as_u64).max(last)
}

trait IntoError {
    fn into_error(self) -> ReplyBody;
}

impl IntoError for ReplyBody {
    /// Lost replies read as errors with their reason.
    fn into_error(self) -> ReplyBody {
        match self {
            ReplyBody::Lost(why) => ReplyBody::Error(native(format!("no answer: {why}"))),
            other => other,
        }
    }
}

/// The session maps whole batches itself (a V4 delta and the legacy event it duplicates may
/// arrive in one batch), so it is its own state machine rather than an SDK `Session`.
impl zcode_mapper_sdk::SessionMachine for AppServerSession {
    fn start(&mut self, op_id: u64, op: &SessionOp, first: u64) -> Step {
        let step = self.start_op(op_id, op, first);
        self.routed(step)
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first: u64) -> Step {
        let step = self.resume_op(op_id, reply, first);
        self.routed(step)
    }

    fn map(&mut self, inputs: &[SessionInput]) -> Effects {
        let mut effects = Effects::default();
        for input in inputs {
            self.map_one(input, &mut effects);
        }
        effects
    }

    fn issue(&mut self, first: u64) -> Outgoing {
        let requests = std::mem::take(&mut self.announced)
            .into_iter()
            .enumerate()
            .map(|(i, (method, params))| {
                if method == "session/events" {
                    self.replays.push(first + i as u64);
                }
                request(first + i as u64, &method, params)
            })
            .collect();
        Outgoing { requests, ..Outgoing::default() }
    }
}

#[cfg(test)]
mod tests;
