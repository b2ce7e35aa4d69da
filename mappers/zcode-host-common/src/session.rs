//! Session operations as small state machines: each step sends one native request and the
//! reply decides the next step or the outcome.
//!
//! Prompts, cancel, finish-turn, interaction answers, close and the event stream are the same
//! in every generation of the desktop host and live here. Opening a session, modes and config
//! options differ: a [`Generation`] drives those steps with stages of its own, and hands the
//! opened native session back ([`GenStep::Opened`]) to be bound and subscribed here.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use zcode_contract::{
    Action, ErrorKind, MapperError, NativeReply, OpResult, Outgoing, SessionInit, SessionOp, Step,
};

use crate::events::{self, Reader};
use crate::history;
use crate::interactions;
use crate::json::{Fields, error, internal, invalid_params, parse, text};
use crate::ops::{self, Outbound};
use crate::prompt;
use crate::settings::{Publisher, Snapshot, SnapshotRules};
use crate::state::{Bound, State, TurnPhase};
use crate::text::derived_uuid;

/// Which ACP request opens the native session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenKind {
    Create,
    Load,
    Resume,
}

impl OpenKind {
    fn what(self) -> &'static str {
        match self {
            OpenKind::Create => "session/new params",
            OpenKind::Load => "session/load params",
            OpenKind::Resume => "session/resume params",
        }
    }

    /// The native method whose snapshot opens the session.
    pub fn source(self) -> &'static str {
        if self == OpenKind::Create { "createSession" } else { "resumeSession" }
    }
}

/// A checked `session/new`, `session/load` or `session/resume` request.
#[derive(Clone, Debug)]
pub struct OpenRequest {
    pub kind: OpenKind,
    /// The session to load or resume (`None` for create).
    pub session_id: Option<String>,
    /// The client's MCP servers in the host's shapes.
    pub mcp_servers: Value,
}

/// A generation's answer to a step it drives.
#[allow(clippy::large_enum_variant)] // short-lived return value
pub enum GenStep<S> {
    /// Send one request; its reply comes back to [`Generation::advance`] with `stage`.
    Send { stage: S, outbound: Outbound },
    /// The operation is done.
    Done(OpResult),
    /// The native session is open with `snapshot` (from create or resume): the shared code
    /// checks it against the request, replays history for load, binds and subscribes.
    Opened { request: OpenRequest, snapshot: Snapshot },
}

/// What differs between generations of the desktop host protocol.
pub trait Generation: Publisher {
    /// The steps of the generation's own operations.
    type Stage;

    /// What a snapshot of this generation may hold.
    fn snapshot_rules(&self) -> &'static SnapshotRules;

    /// The first step of opening a native session (checked request, nothing bound yet).
    fn open(
        &mut self,
        state: &State,
        request: OpenRequest,
    ) -> Result<GenStep<Self::Stage>, MapperError>;

    /// `session/set_mode` with the requested mode id.
    fn set_mode(&mut self, state: &State, mode: &str) -> Result<GenStep<Self::Stage>, MapperError>;

    /// `session/set_config_option` with its parsed params.
    fn set_config_option(
        &mut self,
        state: &State,
        params: &Value,
    ) -> Result<GenStep<Self::Stage>, MapperError>;

    /// Continues one of the generation's steps with the reply to its request.
    fn advance(
        &mut self,
        state: &mut State,
        stage: Self::Stage,
        result: Result<Value, MapperError>,
    ) -> Result<GenStep<Self::Stage>, MapperError>;

    /// ACP `SessionModeState` for the cached snapshot.
    fn mode_state(&self, state: &State) -> Value;

    /// A prompt may be sent (the generation's preconditions hold).
    fn check_prompt(&self, _state: &State) -> Result<(), MapperError> {
        Ok(())
    }

    /// The host took a reply that approves a plan; returns the updates that follow from it.
    fn plan_approved(&mut self, _state: &mut State) -> Vec<String> {
        Vec::new()
    }
}

enum Stage<S> {
    Generation(S),
    Subscribe {
        kind: OpenKind,
        replay: Vec<String>,
    },
    Prompt {
        updates: Vec<String>,
    },
    Cancel,
    FinishUsage,
    FinishSnapshot {
        usage: Value,
    },
    Answer {
        updates: Vec<String>,
        plan_approved: bool,
    },
    CloseSession,
    Unsubscribe {
        close_error: Option<MapperError>,
    },
    /// Reopening failed natively: is the session unknown (not found) or did it fail otherwise?
    ConfirmMissing {
        session_id: String,
        failure: MapperError,
    },
}

/// What an operation does next (a short-lived return value, so its size does not matter).
#[allow(clippy::large_enum_variant)]
enum Next<S> {
    Send {
        stage: Stage<S>,
        outbound: Outbound,
        routes_added: Vec<String>,
        routes_removed: Vec<String>,
    },
    Done(OpResult),
}

fn send<S>(stage: Stage<S>, outbound: Outbound) -> Next<S> {
    Next::Send { stage, outbound, routes_added: Vec::new(), routes_removed: Vec::new() }
}

/// A finished operation: the ACP response and the updates to send before it.
pub fn done(response: Value, updates: Vec<String>) -> OpResult {
    OpResult { response: text(&response), updates }
}

struct PendingOp<S> {
    request_id: u64,
    label: String,
    stage: Stage<S>,
}

/// The mapping state of one native session, driven by generation `G`.
pub struct Session<G: Generation> {
    state: State,
    generation: G,
    ops: BTreeMap<u64, PendingOp<G::Stage>>,
    /// The session a load or resume asked for, while it is being reopened.
    opening: Option<String>,
}

impl<G: Generation + Default> Session<G> {
    pub fn new(init: &SessionInit) -> Self {
        Self {
            state: State::new(init.workspace.clone(), init.client),
            generation: G::default(),
            ops: BTreeMap::new(),
            opening: None,
        }
    }
}

impl<G: Generation> Session<G> {
    pub fn start(&mut self, op_id: u64, op: &SessionOp, first_request_id: u64) -> Step {
        if self.ops.contains_key(&op_id) {
            return Step::Done(Err(internal(format!("Operation {op_id} is already running"))));
        }
        let next = match op {
            SessionOp::Create(params) => self.open(OpenKind::Create, params),
            SessionOp::Load(params) => self.open(OpenKind::Load, params),
            SessionOp::Resume(params) => self.open(OpenKind::Resume, params),
            SessionOp::Prompt(params) => self.prompt(params),
            SessionOp::Cancel => self.cancel(),
            SessionOp::FinishTurn => self.finish_turn(),
            SessionOp::SetMode(params) => self.set_mode(params),
            SessionOp::SetConfigOption(params) => self.set_config_option(params),
            SessionOp::Answer(answer) => {
                interactions::answer(&mut self.state, answer).map(|answered| {
                    let stage = Stage::Answer {
                        updates: answered.updates,
                        plan_approved: answered.plan_approved,
                    };
                    send(stage, answered.outbound)
                })
            }
            SessionOp::Close => self.close(),
        };
        self.step(op_id, first_request_id, next)
    }

    pub fn resume(&mut self, op_id: u64, reply: &NativeReply, first_request_id: u64) -> Step {
        let Some(op) = self.ops.remove(&op_id) else {
            return Step::Done(Err(internal(format!(
                "Operation {op_id} is not waiting for a reply"
            ))));
        };
        if reply.id != op.request_id {
            return Step::Done(Err(internal(format!(
                "Reply {} does not answer request {} of operation {op_id}",
                reply.id, op.request_id
            ))));
        }
        let result = ops::reply_value(reply, &op.label);
        let next = match (result, &self.opening) {
            // The host's error for an unknown session is free text: ask for its sessions instead.
            (Err(failure), Some(session_id))
                if op.label == "agent.resumeSession" && failure.kind == ErrorKind::Native =>
            {
                let stage = Stage::ConfirmMissing { session_id: session_id.clone(), failure };
                Ok(send(stage, ops::list_sessions(self.workspace())))
            }
            (result, _) => self.advance(op.stage, result),
        };
        self.step(op_id, first_request_id, next)
    }

    /// Maps one routed native event (errors outside a turn are returned, not swallowed).
    pub fn map_event(&mut self, payload: &str) -> Result<Vec<Action>, MapperError> {
        let rules = self.generation.snapshot_rules();
        let reader = Reader { rules, publisher: &mut self.generation };
        events::map_event(&mut self.state, reader, payload)
    }

    fn step(
        &mut self,
        op_id: u64,
        request_id: u64,
        next: Result<Next<G::Stage>, MapperError>,
    ) -> Step {
        match next {
            Ok(Next::Send { stage, outbound, routes_added, routes_removed }) => {
                let request = outbound.into_request(request_id);
                let label = request.label.clone();
                self.ops.insert(op_id, PendingOp { request_id, label, stage });
                Step::Wait(Outgoing { routes_added, routes_removed, requests: vec![request] })
            }
            Ok(Next::Done(result)) => Step::Done(Ok(result)),
            Err(error) => Step::Done(Err(error)),
        }
    }

    fn workspace(&self) -> &str {
        &self.state.workspace
    }

    /// A generation step as a step of this session.
    fn generation_step(&mut self, step: GenStep<G::Stage>) -> Result<Next<G::Stage>, MapperError> {
        match step {
            GenStep::Send { stage, outbound } => Ok(send(Stage::Generation(stage), outbound)),
            GenStep::Done(result) => Ok(Next::Done(result)),
            GenStep::Opened { request, snapshot } => self.opened(request, snapshot),
        }
    }

    // ----- create / load / resume ------------------------------------------------------------

    fn open(&mut self, kind: OpenKind, params: &str) -> Result<Next<G::Stage>, MapperError> {
        let params = parse(params, ErrorKind::InvalidParams, kind.what())?;
        let fields = Fields::acp(&params, kind.what())?;
        if fields.opt_array("additionalDirectories")?.is_some_and(|dirs| !dirs.is_empty()) {
            return Err(invalid_params(
                "Installed ZCode host does not support ACP additionalDirectories",
            ));
        }
        if fields.get("systemPrompt").is_some() {
            return Err(error(
                ErrorKind::Unsupported,
                "Installed ZCode host does not support ACP systemPrompt",
            ));
        }
        let mcp_servers =
            mcp_servers(fields.opt_array("mcpServers")?.map(Vec::as_slice).unwrap_or_default())?;
        let session_id = match kind {
            OpenKind::Create => None,
            OpenKind::Load | OpenKind::Resume => {
                Some(fields.non_empty_str("sessionId")?.to_string())
            }
        };
        if self.state.bound.is_some() {
            return Err(internal("This session resource is already bound to a native session"));
        }
        self.opening = session_id.clone();
        let request = OpenRequest { kind, session_id, mcp_servers };
        let step = self.generation.open(&self.state, request)?;
        self.generation_step(step)
    }

    /// The native session is open: check it is the one asked for, then subscribe.
    fn opened(
        &mut self,
        request: OpenRequest,
        snapshot: Snapshot,
    ) -> Result<Next<G::Stage>, MapperError> {
        let workspace = self.workspace().to_string();
        if let Some(requested) = &request.session_id {
            if snapshot.workspace() != workspace {
                return Err(invalid_params("Session belongs to a different workspace"));
            }
            if snapshot.session.session_id != *requested {
                return Err(error(
                    ErrorKind::Protocol,
                    "ZCode resumed a different session than requested",
                ));
            }
        }
        let replay = match request.kind {
            OpenKind::Load => history::replay(&snapshot.messages, &workspace)?,
            _ => Vec::new(),
        };
        let native_id = snapshot.session.session_id.clone();
        self.state.settings.replace(snapshot);
        let subscription_id = self.state.next_subscription_id(&native_id);
        self.state.bound =
            Some(Bound { session_id: native_id.clone(), subscription_id: subscription_id.clone() });
        let outbound = Outbound::Subscribe {
            subscription_id: subscription_id.clone(),
            workspace,
            session_id: native_id,
        };
        Ok(Next::Send {
            stage: Stage::Subscribe { kind: request.kind, replay },
            outbound,
            routes_added: vec![subscription_id],
            routes_removed: Vec::new(),
        })
    }

    fn subscribed(
        &mut self,
        kind: OpenKind,
        replay: Vec<String>,
        result: Value,
    ) -> Result<Next<G::Stage>, MapperError> {
        if let Err(problem) = ops::check_acknowledged(&result, "subscribed", "__subscribe") {
            self.state.bound = None;
            return Err(problem);
        }
        let session_id = self.state.session_id()?.to_string();
        let modes = self.generation.mode_state(&self.state);
        let config_options = self.state.settings.config_options(&mut self.generation);
        let plan_operations = self.state.plan_operations();
        Ok(Next::Done(match kind {
            OpenKind::Create => {
                let updates = self.metadata_updates(plan_operations);
                done(
                    json!({"sessionId": session_id, "modes": modes, "configOptions": config_options}),
                    updates,
                )
            }
            OpenKind::Load => {
                let mut updates = replay;
                updates.extend(self.metadata_updates(plan_operations));
                done(json!({"modes": modes, "configOptions": config_options}), updates)
            }
            OpenKind::Resume => {
                done(json!({"modes": modes, "configOptions": config_options}), Vec::new())
            }
        }))
    }

    fn metadata_updates(&mut self, plan_operations: bool) -> Vec<String> {
        self.state.settings.metadata_updates(plan_operations, &mut self.generation)
    }

    // ----- prompt turns --------------------------------------------------------------------

    fn prompt(&mut self, params: &str) -> Result<Next<G::Stage>, MapperError> {
        let session_id = self.state.session_id()?.to_string();
        let params = parse(params, ErrorKind::InvalidParams, "session/prompt params")?;
        let fields = Fields::acp(&params, "session/prompt params")?;
        let native = prompt::convert(fields.array("prompt")?)?;
        if self.state.running() {
            return Err(internal("A prompt turn is already running in this session"));
        }
        self.generation.check_prompt(&self.state)?;
        let plan_operations = self.state.plan_operations();
        // A proposal left from an unfinished turn must not outlive it.
        let mut updates = self.state.plan.remove(plan_operations);
        updates.extend(self.metadata_updates(plan_operations));
        let input_id = self.input_id(&session_id);
        self.state.start_turn();
        let outbound = ops::send_prompt(
            self.workspace(),
            &session_id,
            &input_id,
            &native.content,
            native.attachments,
        );
        Ok(send(Stage::Prompt { updates }, outbound))
    }

    /// A fresh input id without randomness: session, prompt counter, and the native session's
    /// last update time and last message, so a restarted adapter does not repeat an id.
    fn input_id(&mut self, session_id: &str) -> String {
        let number = self.state.next_prompt_number().to_string();
        let snapshot = self.state.settings.snapshot();
        let updated =
            snapshot.and_then(|s| s.session.updated_at).map(|t| t.to_string()).unwrap_or_default();
        let last_message = snapshot
            .and_then(|s| s.messages.last())
            .and_then(|m| m.info.message_id.clone())
            .unwrap_or_default();
        derived_uuid(&["zcode-acp-input", session_id, &number, &updated, &last_message])
    }

    fn cancel(&mut self) -> Result<Next<G::Stage>, MapperError> {
        let session_id = self.state.session_id()?.to_string();
        if self.state.running() {
            self.state.cancelled = true;
        }
        Ok(send(Stage::Cancel, ops::stop_generation(self.workspace(), &session_id)))
    }

    fn finish_turn(&mut self) -> Result<Next<G::Stage>, MapperError> {
        let session_id = self.state.session_id()?.to_string();
        Ok(send(Stage::FinishUsage, ops::get_task_token_usage(self.workspace(), &session_id)))
    }

    // ----- settings ----------------------------------------------------------------------------

    fn set_mode(&mut self, params: &str) -> Result<Next<G::Stage>, MapperError> {
        let params = parse(params, ErrorKind::InvalidParams, "session/set_mode params")?;
        let mode = Fields::acp(&params, "session/set_mode params")?.str("modeId")?;
        let step = self.generation.set_mode(&self.state, mode)?;
        self.generation_step(step)
    }

    fn set_config_option(&mut self, params: &str) -> Result<Next<G::Stage>, MapperError> {
        let params = parse(params, ErrorKind::InvalidParams, "session/set_config_option params")?;
        Fields::acp(&params, "session/set_config_option params")?;
        let step = self.generation.set_config_option(&self.state, &params)?;
        self.generation_step(step)
    }

    // ----- close -------------------------------------------------------------------------------

    fn close(&mut self) -> Result<Next<G::Stage>, MapperError> {
        let Some(bound) = &self.state.bound else {
            return Ok(Next::Done(done(json!({}), Vec::new())));
        };
        Ok(send(Stage::CloseSession, ops::close_session(self.workspace(), &bound.session_id)))
    }

    // ----- replies -----------------------------------------------------------------------------

    fn advance(
        &mut self,
        stage: Stage<G::Stage>,
        result: Result<Value, MapperError>,
    ) -> Result<Next<G::Stage>, MapperError> {
        let plan_operations = self.state.plan_operations();
        match stage {
            Stage::Generation(stage) => {
                let step = self.generation.advance(&mut self.state, stage, result)?;
                self.generation_step(step)
            }
            Stage::Subscribe { kind, replay } => self.subscribed(kind, replay, result?),
            Stage::ConfirmMissing { session_id, failure } => {
                let known = result?.as_array().is_some_and(|sessions| {
                    sessions.iter().any(|s| s["sessionId"] == session_id.as_str())
                });
                if known {
                    Err(failure)
                } else {
                    Err(error(ErrorKind::NotFound, format!("Unknown session: {session_id}")))
                }
            }
            Stage::Prompt { updates } => {
                match result.and_then(|value| ops::check_prompt_accepted(&value)) {
                    Ok(()) => Ok(Next::Done(done(json!({}), updates))),
                    Err(problem) => {
                        self.state.phase = TurnPhase::Idle;
                        Err(problem)
                    }
                }
            }
            Stage::Cancel => {
                result?;
                // Taken down only once the stop was accepted; otherwise the turn's end does it.
                Ok(Next::Done(done(json!({}), self.state.plan.remove(plan_operations))))
            }
            Stage::FinishUsage => {
                let usage = ops::usage(&result?)?;
                let session_id = self.state.session_id()?;
                Ok(send(
                    Stage::FinishSnapshot { usage },
                    ops::read_session(self.workspace(), session_id),
                ))
            }
            Stage::FinishSnapshot { usage } => {
                let rules = self.generation.snapshot_rules();
                let snapshot = Snapshot::parse(&result?, "readSession", rules)?;
                self.state.settings.replace(snapshot);
                let mut updates = self.metadata_updates(plan_operations);
                updates.extend(self.state.plan.finish_turn(plan_operations));
                self.state.phase = TurnPhase::Idle;
                self.state.tools.clear();
                Ok(Next::Done(done(usage, updates)))
            }
            Stage::Answer { mut updates, plan_approved } => {
                result?;
                if plan_approved {
                    updates.extend(self.generation.plan_approved(&mut self.state));
                }
                Ok(Next::Done(done(json!({}), updates)))
            }
            Stage::CloseSession => {
                // Unsubscribe even if the host failed to close, then report the failure.
                let subscription_id = self.state.bound()?.subscription_id.clone();
                Ok(Next::Send {
                    stage: Stage::Unsubscribe { close_error: result.err() },
                    outbound: Outbound::Unsubscribe { subscription_id: subscription_id.clone() },
                    routes_added: Vec::new(),
                    routes_removed: vec![subscription_id],
                })
            }
            Stage::Unsubscribe { close_error } => {
                self.state.bound = None;
                self.state.phase = TurnPhase::Idle;
                ops::check_acknowledged(&result?, "unsubscribed", "__unsubscribe")?;
                match close_error {
                    Some(problem) => Err(problem),
                    None => Ok(Next::Done(done(json!({}), Vec::new()))),
                }
            }
        }
    }
}

/// ACP MCP server configurations in the host's shapes: stdio `{name, command, args, env}`,
/// http/sse `{type, name, url, headers}` (name/value pairs kept as given).
fn mcp_servers(servers: &[Value]) -> Result<Value, MapperError> {
    let pairs = |fields: &Fields<'_>, key: &str| -> Result<Value, MapperError> {
        let items = fields.opt_array(key)?.map(Vec::as_slice).unwrap_or_default();
        let pairs = items
            .iter()
            .map(|item| {
                let pair = Fields::acp(item, "MCP server name/value pair")?;
                Ok(json!({"name": pair.str("name")?, "value": pair.str("value")?}))
            })
            .collect::<Result<Vec<_>, MapperError>>()?;
        Ok(Value::Array(pairs))
    };
    let converted = servers
        .iter()
        .map(|server| {
            let fields = Fields::acp(server, "MCP server")?;
            let name = fields.non_empty_str("name")?;
            match fields.opt_str("type")? {
                None | Some("stdio") => {
                    let args = fields.opt_array("args")?.cloned().unwrap_or_default();
                    if !args.iter().all(Value::is_string) {
                        return Err(invalid_params("MCP server: args must be strings"));
                    }
                    Ok(json!({
                        "name": name,
                        "command": fields.non_empty_str("command")?,
                        "args": args,
                        "env": pairs(&fields, "env")?,
                    }))
                }
                Some(kind @ ("http" | "sse")) => Ok(json!({
                    "type": kind,
                    "name": name,
                    "url": fields.non_empty_str("url")?,
                    "headers": pairs(&fields, "headers")?,
                })),
                Some(other) => Err(error(
                    ErrorKind::Unsupported,
                    format!("Unsupported MCP server type: {other}"),
                )),
            }
        })
        .collect::<Result<Vec<_>, MapperError>>()?;
    Ok(Value::Array(converted))
}
