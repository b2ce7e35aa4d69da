//! Session operations as step machines: each step writes its requests and the replies decide
//! the next step or the outcome.
//!
//! - create: `initialize` → `createSession{persistence:"immediate"}` → listen + subscribe.
//! - load: `initialize` → `resumeSession` → the history, oldest first (below) → listen +
//!   subscribe. resume: the same without the history.
//! - fork: `initialize` → `resumeSession` of the parent (loads it; the Services Server checks
//!   it belongs to the workspace) → its newest rows page → `forkAssistant` at the newest row
//!   that can fork (`zcode_v4::fork`) → done with the new session's id, which the core then
//!   loads (a `load` on this same session resource).
//! - prompt: (`setAutoDrain{true}` if a stop paused the queue) → `sendText{startNow}`; done
//!   when ZCode admitted the input. The turn's end comes from the frames.
//! - cancel: `setAutoDrain{false}` → `stop{expectedForegroundExecutionId}` → `deleteQueueItem`
//!   for what is queued (the plugin's sequence, V4S §4); the end comes from the frames.
//! - set-mode / set-config-option: `switchCollaborationMode` / `switchModelConfig`
//!   ([`super::settings`]).
//! - answer: `resolveInteraction`. close: dispose the listen, `unsubscribeConversationV4`; no
//!   `closeSession`, which may delete the product session (zcode-releases.md §3.6).
//!
//! The history of a load is walked in [`super::history`].

use std::collections::VecDeque;

use serde_json::{Value, json};
use zcode_contract::{ErrorKind, MapperError, NativeReply, OpResult, Outgoing, SessionOp, Step};

use crate::connection;
use crate::rpc::{self, Call};
use crate::session::calls;
use crate::session::command::{self, Ack, CAS_ATTEMPTS, Command};
use crate::session::history::{Walk, replayed, walked};
use crate::session::open::{self, Open, OpenKind};
use crate::session::upload::{self, Uploading};
use crate::session::{ServicesSession, prompt, settings};
use crate::sessions;
use zcode_mapper_sdk::json::{error, internal, invalid_params, parse, protocol};
use zcode_v4::acp::text;
use zcode_v4::acp::turn::TurnPhase;
use zcode_v4::follow::Bound;
use zcode_v4::follow::feed;
use zcode_v4::schema::Fields;

pub struct PendingOp {
    /// The request whose reply continues the op (`None`: the step awaited nothing).
    waiting: Option<(u64, String)>,
    stage: Stage,
}

pub(super) enum Stage {
    Initialize(Open),
    Session(Open),
    /// A fork: the parent resumed; its newest rows page next.
    ForkParent(Open),
    /// A fork: the parent's rows page read; the command next.
    ForkRows(Open),
    /// A fork: `forkAssistant` sent.
    ForkCommand(String),
    ConfirmMissing {
        session_id: String,
        failure: MapperError,
    },
    Walk(Box<Walk>),
    Replay(Box<Walk>),
    Subscribe(OpenKind),
    Commands(Box<Commands>),
    Upload(Box<Uploading>),
    Unsubscribe,
}

pub(super) struct Commands {
    steps: VecDeque<Command>,
    current: Option<(Command, u32)>,
    finish: Finish,
}

pub(super) enum Finish {
    Prompt { command_id: String, updates: Vec<String> },
    Cancel,
    Settings(settings::Change),
    Answer { updates: Vec<String> },
}

#[allow(clippy::large_enum_variant)] // a short-lived return value
pub(super) enum Next {
    /// Write `calls` (the last one continues the op) after `outgoing`; with `listen`, a frame
    /// listen for (workspace, session) goes first, its id becoming the session's route.
    Send {
        stage: Stage,
        calls: Vec<Call>,
        outgoing: Outgoing,
        listen: Option<(String, String)>,
    },
    Done(OpResult),
}

pub(super) fn done(response: Value, updates: Vec<String>) -> Next {
    Next::Done(OpResult { response: text(&response), updates })
}

pub(super) fn send(stage: Stage, call: Call) -> Next {
    Next::Send { stage, calls: vec![call], outgoing: Outgoing::default(), listen: None }
}

pub fn start(session: &mut ServicesSession, op_id: u64, op: &SessionOp, first: u64) -> Step {
    if session.ops.contains_key(&op_id) {
        return Step::Done(Err(internal(format!("Operation {op_id} is already running"))));
    }
    let next = match op {
        SessionOp::Create(params) => begin_open(session, OpenKind::Create, params),
        SessionOp::Load(params) => begin_open(session, OpenKind::Load, params),
        SessionOp::Resume(params) => begin_open(session, OpenKind::Resume, params),
        SessionOp::Fork(params) => begin_open(session, OpenKind::Fork, params),
        SessionOp::Prompt(params) => prompt_op(session, params),
        SessionOp::Cancel => cancel(session),
        SessionOp::FinishTurn => finish_turn(session),
        SessionOp::SetMode(params) => settings::set_mode(session, params),
        SessionOp::SetConfigOption(params) => settings::set_config_option(session, params),
        SessionOp::Answer(answer) => {
            let plan_operations = session.follow.state.plan_operations();
            session
                .follow
                .state
                .interactions
                .answer(answer, plan_operations, &mut session.follow.state.plan)
                .and_then(|answered| {
                    let updates = answered.updates;
                    match answered.answer {
                        None => Ok(done(json!({}), updates)),
                        Some(native) => {
                            let payload =
                                json!({"interactionId": answered.interaction_id, "answer": native});
                            let id = session.follow.state.command_id();
                            let steps = vec![Command::new("resolveInteraction", payload, id)];
                            commands(session, steps, Finish::Answer { updates })
                        }
                    }
                })
        }
        SessionOp::Close => close(session),
    };
    step(session, op_id, first, next)
}

pub fn resume(
    session: &mut ServicesSession,
    op_id: u64,
    reply: Option<&NativeReply>,
    first: u64,
) -> Step {
    let Some(op) = session.ops.remove(&op_id) else {
        return Step::Done(Err(internal(format!("Operation {op_id} is not waiting for a reply"))));
    };
    let result = match (&op.waiting, reply) {
        (Some((id, label)), Some(reply)) if reply.id == *id => rpc::reply_value(reply, label),
        (None, None) => Ok(Value::Null),
        (Some((id, _)), Some(reply)) => {
            return Step::Done(Err(internal(format!(
                "Reply {} does not answer request {id} of operation {op_id}",
                reply.id
            ))));
        }
        (Some(_), None) => {
            return Step::Done(Err(internal(format!(
                "Operation {op_id} resumed without its reply"
            ))));
        }
        (None, Some(reply)) => {
            return Step::Done(Err(internal(format!(
                "Operation {op_id} awaited no reply, got {}",
                reply.id
            ))));
        }
    };
    let next = advance(session, op.stage, result, first);
    step(session, op_id, first, next)
}

fn step(
    session: &mut ServicesSession,
    op_id: u64,
    first: u64,
    next: Result<Next, MapperError>,
) -> Step {
    match next {
        Ok(Next::Send { stage, calls, mut outgoing, listen }) => {
            let mut id = first;
            if let Some((workspace, session_id)) = listen {
                outgoing.requests.push(rpc::listen_frames(id, &workspace, &session_id));
                outgoing.routes_added.push(rpc::route(id));
                if let Some(bound) = &mut session.follow.state.bound {
                    bound.listen_id = id;
                }
                id += 1;
            }
            for call in calls {
                outgoing.requests.push(call.into_request(id));
                id += 1;
            }
            let waiting = outgoing
                .requests
                .last()
                .filter(|r| r.awaits_reply())
                .map(|r| (r.id, r.label.clone()));
            session.ops.insert(op_id, PendingOp { waiting, stage });
            Step::Wait(outgoing)
        }
        Ok(Next::Done(result)) => Step::Done(Ok(result)),
        Err(problem) => Step::Done(Err(problem)),
    }
}

pub(super) fn bound(session: &ServicesSession) -> Result<&Bound, MapperError> {
    session.follow.state.bound.as_ref().ok_or_else(|| internal("The native session is not open"))
}

// ----- create / load / resume ----------------------------------------------------------------

fn begin_open(
    session: &mut ServicesSession,
    kind: OpenKind,
    params: &str,
) -> Result<Next, MapperError> {
    let open = open::request(kind, params)?;
    if session.follow.state.bound.is_some() {
        return Err(internal("This session resource is already bound to a native session"));
    }
    session.follow.state.opening = true;
    let call = connection::initialize(&session.follow.state.workspace);
    Ok(send(Stage::Initialize(open), call))
}

fn advance(
    session: &mut ServicesSession,
    stage: Stage,
    result: Result<Value, MapperError>,
    first: u64,
) -> Result<Next, MapperError> {
    let workspace = session.follow.state.workspace.clone();
    match stage {
        Stage::Initialize(open) if open.kind == OpenKind::Fork => {
            connection::check_initialized(&result?)?;
            let parent = open.session_id.clone().unwrap_or_default();
            let call = Call::agent(
                "resumeSession",
                json!({"workspacePath": workspace, "sessionId": parent}),
            );
            Ok(send(Stage::ForkParent(open), call.timeout(rpc::OPEN_TIMEOUT_MS)))
        }
        Stage::ForkParent(open) => {
            let parent = open.session_id.clone().unwrap_or_default();
            let snapshot = match result {
                Err(failure) if failure.kind == ErrorKind::Native => {
                    let stage = Stage::ConfirmMissing { session_id: parent, failure };
                    return Ok(send(stage, sessions::list_call(&workspace)));
                }
                result => result?,
            };
            let opened = open::opened(&snapshot)
                .map_err(|e| rpc::invalid_result("zcode-agent.resumeSession", &e))?;
            if opened.workspace != workspace {
                return Err(invalid_params("Session belongs to a different workspace"));
            }
            if opened.session_id != parent {
                return Err(protocol("ZCode resumed a different session than requested"));
            }
            Ok(send(Stage::ForkRows(open), calls::rows_range(&workspace, &parent, None)))
        }
        Stage::ForkRows(open) => {
            let parent = open.session_id.clone().unwrap_or_default();
            let target = zcode_v4::fork::target(&result?).map_err(|e| match e.kind {
                ErrorKind::Protocol => rpc::invalid_result(calls::ROWS_LABEL, &e),
                _ => e,
            })?;
            let command = zcode_v4::fork::command(&parent, &target, first);
            let id = command.command_id.clone();
            let call = command::call(&command, &workspace, &parent, target.revision, 0.0);
            Ok(send(Stage::ForkCommand(id), call))
        }
        Stage::ForkCommand(command_id) => {
            let ack = command::parse_ack(&result?, &command_id)?;
            let child = zcode_v4::fork::forked(&ack)?;
            // Nothing is bound yet: the core loads the new session on this resource next.
            session.follow.state.opening = false;
            Ok(done(json!({"sessionId": child}), Vec::new()))
        }
        Stage::Initialize(open) => {
            connection::check_initialized(&result?)?;
            let call = match &open.session_id {
                None => Call::agent(
                    "createSession",
                    json!({"workspacePath": workspace, "persistence": "immediate", "mcpServers": open.mcp_servers}),
                ),
                Some(id) => Call::agent(
                    "resumeSession",
                    json!({"workspacePath": workspace, "sessionId": id, "mcpServers": open.mcp_servers}),
                ),
            };
            Ok(send(Stage::Session(open), call.timeout(rpc::OPEN_TIMEOUT_MS)))
        }
        Stage::Session(open) => match (result, &open.session_id) {
            // ZCode's error for an unknown session is free text: ask for its sessions instead.
            (Err(failure), Some(id)) if failure.kind == ErrorKind::Native => Ok(send(
                Stage::ConfirmMissing { session_id: id.clone(), failure },
                sessions::list_call(&workspace),
            )),
            (result, _) => opened(session, open, &result?),
        },
        Stage::ConfirmMissing { session_id, failure } => {
            let listed = result?;
            let known = listed.as_array().is_some_and(|sessions| {
                sessions.iter().any(|s| s["sessionId"] == session_id.as_str())
            });
            if known {
                Err(failure)
            } else {
                Err(error(ErrorKind::NotFound, format!("Unknown session: {session_id}")))
            }
        }
        Stage::Walk(walk) => walked(session, walk, feed::page(&result?, calls::ROWS_LABEL)?),
        Stage::Replay(walk) => replayed(session, walk, feed::page(&result?, calls::ROWS_LABEL)?),
        Stage::Subscribe(kind) => subscribed(session, kind, &result?),
        Stage::Commands(commands) => acknowledged(session, *commands, result),
        Stage::Upload(uploading) => {
            let next = upload::answered(session, *uploading, result);
            if next.is_err() {
                session.follow.state.turn = Default::default();
            }
            next
        }
        Stage::Unsubscribe => {
            result?;
            Ok(done(json!({}), Vec::new()))
        }
    }
}

fn opened(session: &mut ServicesSession, open: Open, result: &Value) -> Result<Next, MapperError> {
    let opened = open::opened(result)
        .map_err(|e| rpc::invalid_result("zcode-agent.createSession/resumeSession", &e))?;
    if let Some(requested) = &open.session_id {
        if opened.workspace != session.follow.state.workspace {
            return Err(invalid_params("Session belongs to a different workspace"));
        }
        if opened.session_id != *requested {
            return Err(protocol("ZCode resumed a different session than requested"));
        }
    }
    let state = &mut session.follow.state;
    state.settings.config = Some(opened.config);
    state.settings.thought_labels = opened.thought_labels;
    state.settings.models = opened.models;
    state.settings.commands = opened.commands;
    state.bound = Some(Bound {
        topic: format!("conversation/{}", opened.session_id),
        session_id: opened.session_id,
        listen_id: 0,
        subscription_id: None,
    });
    if open.kind == OpenKind::Load {
        let walk = Walk::new();
        let call =
            calls::rows_range(&session.follow.state.workspace, &bound(session)?.session_id, None);
        return Ok(send(Stage::Walk(Box::new(walk)), call));
    }
    Ok(subscribe(session, open.kind, Vec::new()))
}

/// Listen first, then subscribe, in one step: the route is registered before either is
/// written, so the initial snapshot cannot arrive unrouted.
pub(super) fn subscribe(
    session: &mut ServicesSession,
    kind: OpenKind,
    updates: Vec<String>,
) -> Next {
    let workspace = session.follow.state.workspace.clone();
    let bound = session.follow.state.bound.as_mut().expect("bound before subscribing");
    let call = Call::agent(
        "subscribeConversationV4",
        json!({"workspacePath": workspace, "sessionId": bound.session_id}),
    )
    .timeout(rpc::OPEN_TIMEOUT_MS);
    let session_id = bound.session_id.clone();
    Next::Send {
        stage: Stage::Subscribe(kind),
        calls: vec![call],
        outgoing: Outgoing { updates, ..Outgoing::default() },
        listen: Some((workspace, session_id)),
    }
}

fn subscribed(
    session: &mut ServicesSession,
    kind: OpenKind,
    result: &Value,
) -> Result<Next, MapperError> {
    let label = "zcode-agent.subscribeConversationV4";
    let read = || -> Result<String, MapperError> {
        let fields = Fields::native(result, "subscribe result")?;
        fields.only(&["ack"])?;
        let ack = fields.object("ack", "subscribe ack")?;
        ack.one_of("mode", &["snapshot", "resume"])?;
        ack.str("logEpoch")?;
        Ok(ack.non_empty_str("subscriptionId")?.to_string())
    };
    let subscription_id = read().map_err(|e| rpc::invalid_result(label, &e))?;
    let bound = session.follow.state.bound.as_mut().expect("bound before subscribing");
    bound.subscription_id = Some(subscription_id);
    let session_id = bound.session_id.clone();
    session.follow.state.opening = false;
    let modes = session.follow.state.settings.mode_state()?;
    let options = session.follow.state.settings.config_options();
    Ok(match kind {
        OpenKind::Create => {
            let updates = session.follow.state.metadata()?;
            done(
                json!({"sessionId": session_id, "modes": modes, "configOptions": options}),
                updates,
            )
        }
        OpenKind::Load => {
            let updates = session.follow.state.metadata()?;
            done(json!({"modes": modes, "configOptions": options}), updates)
        }
        // A fork is done before anything is subscribed (`Stage::ForkCommand`).
        OpenKind::Fork => return Err(internal("A fork subscribes nothing itself")),
        // A resume answers with nothing before its response (the core sends a load's or
        // resume's updates ahead of it): the metadata goes out with the next state change.
        OpenKind::Resume => done(json!({"modes": modes, "configOptions": options}), Vec::new()),
    })
}

// ----- prompt, cancel, finish ----------------------------------------------------------------

fn prompt_op(session: &mut ServicesSession, params: &str) -> Result<Next, MapperError> {
    let params = parse(params, ErrorKind::InvalidParams, "session/prompt params")?;
    let fields = Fields::acp(&params, "session/prompt params")?;
    let prompt::Input { text, uploads } = prompt::input(fields.array("prompt")?)?;
    bound(session)?;
    if let Some(reason) = &session.follow.state.broken {
        return Err(protocol(format!(
            "This session stopped following ZCode ({reason}); load it again"
        )));
    }
    if session.follow.state.turn.running() {
        return Err(internal("A prompt turn is already running in this session"));
    }
    let conversation = session.follow.state.conversation.as_ref();
    let (routing, reason) =
        conversation.map_or(("startNow", None), |c| (c.input_routing.0, c.input_routing.1.clone()));
    if routing == "reject" {
        let reason = reason.unwrap_or_else(|| "no reason given".into());
        return Err(error(ErrorKind::Native, format!("ZCode does not accept input now: {reason}")));
    }
    let auto_drain = conversation.is_none_or(|c| c.auto_drain);
    let mut steps = Vec::new();
    if !auto_drain {
        let id = session.follow.state.command_id();
        steps.push(Command::new("setAutoDrain", json!({"autoDrain": true}), id));
    }
    let command_id = session.follow.state.command_id();
    let mut payload = json!({"text": text, "requestedDelivery": "startNow"});
    if routing == "choice" {
        // A queue held after a stop: send now and keep what others queued.
        payload["heldQueueDisposition"] = json!("keepQueueAndSend");
    }
    steps.push(Command::new("sendText", payload, command_id.clone()));
    let plan_operations = session.follow.state.plan_operations();
    // A proposal left from an unfinished turn must not outlive it.
    let mut updates = session.follow.state.plan.remove(plan_operations);
    updates.extend(session.follow.state.metadata()?);
    let watermark = session.follow.state.tracker.watermark();
    session.follow.state.turn.start(&command_id, watermark);
    session.follow.state.tracker.own_input(&command_id);
    let finish = Finish::Prompt { command_id, updates };
    if uploads.is_empty() {
        return commands(session, steps, finish);
    }
    let next = upload::next(session, Uploading::new(uploads, steps, finish));
    if next.is_err() {
        session.follow.state.turn = Default::default();
    }
    next
}

fn cancel(session: &mut ServicesSession) -> Result<Next, MapperError> {
    bound(session)?;
    let running = session.follow.state.turn.running();
    if running {
        session.follow.state.turn.cancelled = true;
    }
    let mut steps = Vec::new();
    let (auto_drain, can_stop, execution, queue) = match &session.follow.state.conversation {
        Some(c) => (
            c.auto_drain,
            c.control.can_stop,
            c.control
                .active_works
                .iter()
                .find(|w| w.kind == "primaryTurn" && w.foreground_execution_id.is_some())
                .or_else(|| {
                    c.control.active_works.iter().find(|w| w.foreground_execution_id.is_some())
                })
                .and_then(|w| w.foreground_execution_id.clone()),
            c.queue_items.clone(),
        ),
        None => (true, false, None, Vec::new()),
    };
    if auto_drain {
        let id = session.follow.state.command_id();
        steps.push(Command::new("setAutoDrain", json!({"autoDrain": false}), id));
    }
    if can_stop || running {
        let payload = match execution {
            Some(id) => json!({"expectedForegroundExecutionId": id}),
            None => json!({}),
        };
        let id = session.follow.state.command_id();
        steps.push(Command::new("stop", payload, id));
    }
    for item in queue {
        let id = session.follow.state.command_id();
        steps.push(Command::new("deleteQueueItem", json!({"queueItemId": item}), id));
    }
    if steps.is_empty() {
        return Ok(done(json!({}), Vec::new()));
    }
    commands(session, steps, Finish::Cancel)
}

/// Final metadata and the session's cumulative usage (the V4 state's `usage.cumulative`,
/// as the desktop generations report the session's totals).
fn finish_turn(session: &mut ServicesSession) -> Result<Next, MapperError> {
    let plan_operations = session.follow.state.plan_operations();
    let mut updates = session.follow.state.metadata()?;
    updates.extend(session.follow.state.plan.finish_turn(plan_operations));
    session.follow.state.turn = Default::default();
    let usage = match &session.follow.state.conversation {
        Some(c) => {
            let u = &c.usage;
            json!({
                "totalTokens": u.input + u.output + u.cache_read + u.cache_write,
                "inputTokens": u.input,
                "outputTokens": u.output,
                "cachedReadTokens": u.cache_read,
                "cachedWriteTokens": u.cache_write,
            })
        }
        None => Value::Null,
    };
    Ok(done(usage, updates))
}

// ----- commands ------------------------------------------------------------------------------

pub(super) fn commands(
    session: &mut ServicesSession,
    steps: Vec<Command>,
    finish: Finish,
) -> Result<Next, MapperError> {
    let commands = Commands { steps: steps.into(), current: None, finish };
    next_command(session, Box::new(commands), None)
}

fn next_command(
    session: &mut ServicesSession,
    mut commands: Box<Commands>,
    retry_at: Option<u64>,
) -> Result<Next, MapperError> {
    let (command, attempts) = match (commands.current.take(), retry_at) {
        (Some((command, attempts)), Some(_)) => (command, attempts + 1),
        _ => match commands.steps.pop_front() {
            Some(command) => (command, 1),
            None => return finished(session, *commands),
        },
    };
    let bound = bound(session)?;
    let revision =
        retry_at.or(session.follow.state.conversation.as_ref().map(|c| c.revision)).unwrap_or(0);
    let call = command::call(
        &command,
        &session.follow.state.workspace,
        &bound.session_id,
        revision,
        session.follow.state.clock,
    );
    commands.current = Some((command, attempts));
    Ok(send(Stage::Commands(commands), call))
}

fn acknowledged(
    session: &mut ServicesSession,
    commands: Commands,
    result: Result<Value, MapperError>,
) -> Result<Next, MapperError> {
    let (command, attempts) = commands.current.clone().expect("a command is in flight");
    let decided_at = result.as_ref().ok().and_then(|ack| ack["revisionAtDecision"].as_u64());
    let outcome = result
        .and_then(|result| command::parse_ack(&result, &command.command_id))
        .and_then(|ack| match ack {
            Ack::Stale { revision } if command.is_cas() && attempts < CAS_ATTEMPTS => {
                Ok(Some(revision))
            }
            ack if command.kind == "sendText" => {
                command::check_input_accepted(&ack, &command.command_id).map(|delivery| {
                    session.follow.state.turn.starts_now = delivery == "startNow";
                    None
                })
            }
            Ack::Accepted(_) | Ack::Noop => Ok(None),
            Ack::Duplicate => Err(protocol(format!(
                "ZCode took {} for a command it already had (a repeated command id)",
                command.kind
            ))),
            Ack::Stale { .. } => Err(error(
                ErrorKind::Native,
                format!("ZCode kept refusing {} as stale", command.kind),
            )),
            Ack::Refused { status, reason } => {
                Err(error(ErrorKind::Native, format!("ZCode {status} {}: {reason}", command.kind)))
            }
        });
    match outcome {
        Ok(Some(revision)) => next_command(session, Box::new(commands), Some(revision)),
        Ok(None) => {
            if command.kind == "sendText" {
                session.follow.state.turn.accepted = true;
            }
            if settings::COMMANDS.contains(&command.kind)
                && let Some(revision) = decided_at
            {
                session.follow.state.settings.decided(revision);
            }
            next_command(session, Box::new(commands), None)
        }
        Err(problem) => {
            if matches!(commands.finish, Finish::Prompt { .. }) {
                session.follow.state.turn = Default::default();
            }
            Err(problem)
        }
    }
}

fn finished(session: &mut ServicesSession, commands: Commands) -> Result<Next, MapperError> {
    let state = &mut session.follow.state;
    Ok(match commands.finish {
        Finish::Prompt { command_id, updates } => {
            debug_assert_eq!(state.turn.command_id.as_deref(), Some(command_id.as_str()));
            done(json!({}), updates)
        }
        Finish::Cancel => {
            state.turn.stop_sent = true;
            let plan_operations = state.plan_operations();
            // Taken down only once the stop was accepted; otherwise the turn's end does it.
            done(json!({}), state.plan.remove(plan_operations))
        }
        Finish::Settings(change) => settings::applied(state, change)?,
        Finish::Answer { updates } => done(json!({}), updates),
    })
}

// ----- close ---------------------------------------------------------------------------------

fn close(session: &mut ServicesSession) -> Result<Next, MapperError> {
    let Some(bound) = session.follow.state.bound.take() else {
        return Ok(done(json!({}), Vec::new()));
    };
    if session.follow.state.turn.phase == TurnPhase::Running {
        session.follow.state.turn.phase = TurnPhase::Ended;
    }
    let outgoing = Outgoing {
        routes_removed: vec![rpc::route(bound.listen_id)],
        writes: vec![rpc::dispose_listen(bound.listen_id)],
        ..Outgoing::default()
    };
    let calls = match bound.subscription_id {
        Some(subscription_id) => vec![Call::agent(
            "unsubscribeConversationV4",
            json!({"workspacePath": session.follow.state.workspace, "subscriptionId": subscription_id}),
        )],
        None => Vec::new(),
    };
    Ok(Next::Send { stage: Stage::Unsubscribe, calls, outgoing, listen: None })
}
