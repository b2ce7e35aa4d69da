//! Session operations as small state machines: each step sends one native request and the
//! reply decides the next step or the outcome.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use zcode_contract::{
    Action, ErrorKind, MapperError, NativeReply, OpResult, Outgoing, SessionInit, SessionOp, Step,
};

use crate::events;
use crate::history;
use crate::interactions;
use crate::json::{Fields, error, internal, invalid_params, parse, text};
use crate::ops::{self, Outbound};
use crate::prompt;
use crate::settings::{MODEL_OPTION, Snapshot, THOUGHT_LEVEL_OPTION, is_known_mode};
use crate::state::{Bound, State, TurnPhase};
use crate::text::derived_uuid;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OpenKind {
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
}

enum OpenStep {
    Initialize,
    WorkspaceState,
    Session,
    Subscribe { replay: Vec<String> },
}

enum Stage {
    Open { kind: OpenKind, step: OpenStep, session_id: Option<String>, mcp_servers: Value },
    Prompt { updates: Vec<String> },
    Cancel,
    FinishUsage,
    FinishSnapshot { usage: Value },
    SetMode,
    SetConfig { method: &'static str },
    Answer { updates: Vec<String> },
    CloseSession,
    Unsubscribe { close_error: Option<MapperError> },
}

/// What an operation does next (a short-lived return value, so its size does not matter).
#[allow(clippy::large_enum_variant)]
enum Next {
    Send {
        stage: Stage,
        outbound: Outbound,
        routes_added: Vec<String>,
        routes_removed: Vec<String>,
    },
    Done(OpResult),
}

fn send(stage: Stage, outbound: Outbound) -> Next {
    Next::Send { stage, outbound, routes_added: Vec::new(), routes_removed: Vec::new() }
}

fn done(response: Value, updates: Vec<String>) -> Next {
    Next::Done(OpResult { response: text(&response), updates })
}

struct PendingOp {
    request_id: u64,
    label: String,
    stage: Stage,
}

/// The mapping state of one native session.
pub struct TaskV1Session {
    state: State,
    ops: BTreeMap<u64, PendingOp>,
}

impl TaskV1Session {
    pub fn new(init: &SessionInit) -> Self {
        Self { state: State::new(init.workspace.clone(), init.client), ops: BTreeMap::new() }
    }

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
            SessionOp::Answer(answer) => interactions::answer(&mut self.state, answer)
                .map(|(updates, outbound)| send(Stage::Answer { updates }, outbound)),
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
        let next = self.advance(op.stage, result);
        self.step(op_id, first_request_id, next)
    }

    /// Maps one routed native event (errors outside a turn are returned, not swallowed).
    pub fn map_event(&mut self, payload: &str) -> Result<Vec<Action>, MapperError> {
        events::map_event(&mut self.state, payload)
    }

    fn step(&mut self, op_id: u64, request_id: u64, next: Result<Next, MapperError>) -> Step {
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

    // ----- create / load / resume ------------------------------------------------------------

    fn open(&mut self, kind: OpenKind, params: &str) -> Result<Next, MapperError> {
        let params = parse(params, ErrorKind::InvalidParams, kind.what())?;
        let fields = Fields::acp(&params, kind.what())?;
        if fields.opt_array("additionalDirectories")?.is_some_and(|dirs| !dirs.is_empty()) {
            return Err(error(
                ErrorKind::Unsupported,
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
        let stage = Stage::Open { kind, step: OpenStep::Initialize, session_id, mcp_servers };
        Ok(send(stage, ops::initialize(self.workspace())))
    }

    fn advance_open(
        &mut self,
        kind: OpenKind,
        step: OpenStep,
        session_id: Option<String>,
        mcp_servers: Value,
        result: Value,
    ) -> Result<Next, MapperError> {
        let workspace = self.workspace().to_string();
        let stage = |step| Stage::Open {
            kind,
            step,
            session_id: session_id.clone(),
            mcp_servers: mcp_servers.clone(),
        };
        match step {
            OpenStep::Initialize => {
                ops::check_initialized(&result)?;
                Ok(send(stage(OpenStep::WorkspaceState), ops::read_workspace_state(&workspace)))
            }
            OpenStep::WorkspaceState => {
                ops::check_workspace_state(&result)?;
                let outbound = match &session_id {
                    None => ops::create_session(&workspace, &mcp_servers),
                    Some(id) => ops::resume_session(&workspace, id, &mcp_servers),
                };
                Ok(send(stage(OpenStep::Session), outbound))
            }
            OpenStep::Session => {
                let source =
                    if kind == OpenKind::Create { "createSession" } else { "resumeSession" };
                let snapshot = Snapshot::parse(&result, source)?;
                if let Some(requested) = &session_id {
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
                let replay = match kind {
                    OpenKind::Load => history::replay(&snapshot.messages, &workspace)?,
                    _ => Vec::new(),
                };
                let native_id = snapshot.session.session_id.clone();
                self.state.settings.replace(snapshot);
                let subscription_id = self.state.next_subscription_id(&native_id);
                self.state.bound = Some(Bound {
                    session_id: native_id.clone(),
                    subscription_id: subscription_id.clone(),
                });
                let outbound = Outbound::Subscribe {
                    subscription_id: subscription_id.clone(),
                    workspace,
                    session_id: native_id,
                };
                Ok(Next::Send {
                    stage: stage(OpenStep::Subscribe { replay }),
                    outbound,
                    routes_added: vec![subscription_id],
                    routes_removed: Vec::new(),
                })
            }
            OpenStep::Subscribe { replay } => {
                if let Err(problem) = ops::check_acknowledged(&result, "subscribed", "__subscribe")
                {
                    self.state.bound = None;
                    return Err(problem);
                }
                let session_id = self.state.session_id()?.to_string();
                let modes = self.state.settings.mode_state();
                let config_options = self.state.settings.publish_config_options();
                let plan_operations = self.state.plan_operations();
                Ok(match kind {
                    OpenKind::Create => {
                        let updates = self.state.settings.metadata_updates(plan_operations);
                        done(
                            json!({"sessionId": session_id, "modes": modes, "configOptions": config_options}),
                            updates,
                        )
                    }
                    OpenKind::Load => {
                        let mut updates = replay;
                        updates.extend(self.state.settings.metadata_updates(plan_operations));
                        done(json!({"modes": modes, "configOptions": config_options}), updates)
                    }
                    OpenKind::Resume => {
                        done(json!({"modes": modes, "configOptions": config_options}), Vec::new())
                    }
                })
            }
        }
    }

    // ----- prompt turns --------------------------------------------------------------------

    fn prompt(&mut self, params: &str) -> Result<Next, MapperError> {
        let session_id = self.state.session_id()?.to_string();
        let params = parse(params, ErrorKind::InvalidParams, "session/prompt params")?;
        let fields = Fields::acp(&params, "session/prompt params")?;
        let native = prompt::convert(fields.array("prompt")?)?;
        if self.state.running() {
            return Err(internal("A prompt turn is already running in this session"));
        }
        let plan_operations = self.state.plan_operations();
        // A proposal left from an unfinished turn must not outlive it.
        let mut updates = self.state.plan.remove(plan_operations);
        updates.extend(self.state.settings.metadata_updates(plan_operations));
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

    fn cancel(&mut self) -> Result<Next, MapperError> {
        let session_id = self.state.session_id()?.to_string();
        if self.state.running() {
            self.state.cancelled = true;
        }
        Ok(send(Stage::Cancel, ops::stop_generation(self.workspace(), &session_id)))
    }

    fn finish_turn(&mut self) -> Result<Next, MapperError> {
        let session_id = self.state.session_id()?.to_string();
        Ok(send(Stage::FinishUsage, ops::get_task_token_usage(self.workspace(), &session_id)))
    }

    // ----- settings --------------------------------------------------------------------------

    fn set_mode(&mut self, params: &str) -> Result<Next, MapperError> {
        let params = parse(params, ErrorKind::InvalidParams, "session/set_mode params")?;
        let mode = Fields::acp(&params, "session/set_mode params")?.str("modeId")?;
        if !is_known_mode(mode) {
            return Err(invalid_params(format!("Unknown ZCode mode: {mode}")));
        }
        let session_id = self.state.session_id()?;
        Ok(send(Stage::SetMode, ops::set_mode(self.workspace(), session_id, mode)))
    }

    fn set_config_option(&mut self, params: &str) -> Result<Next, MapperError> {
        let params = parse(params, ErrorKind::InvalidParams, "session/set_config_option params")?;
        let fields = Fields::acp(&params, "session/set_config_option params")?;
        let config_id = fields.str("configId")?;
        let known = config_id == MODEL_OPTION || config_id == THOUGHT_LEVEL_OPTION;
        if !known || fields.opt_str("type")?.is_some_and(|kind| kind != "value_id") {
            return Err(invalid_params(format!("Unknown config option: {config_id}")));
        }
        let value = match fields.get("value") {
            Some(Value::String(value)) => value.as_str(),
            other => {
                let shown = other.map_or_else(|| "<missing>".to_string(), Value::to_string);
                return Err(invalid_params(if config_id == MODEL_OPTION {
                    format!("Unknown ZCode model: {shown}")
                } else {
                    format!("Unknown thought level: {shown}")
                }));
            }
        };
        let session_id = self.state.session_id()?;
        let workspace = self.workspace();
        if config_id == MODEL_OPTION {
            let model_ref = Value::Object(self.state.settings.advertised_model(value)?.clone());
            Ok(send(
                Stage::SetConfig { method: "setModel" },
                ops::set_model(workspace, session_id, &model_ref),
            ))
        } else {
            self.state.settings.check_advertised_thought_level(value)?;
            Ok(send(
                Stage::SetConfig { method: "setThoughtLevel" },
                ops::set_thought_level(workspace, session_id, value),
            ))
        }
    }

    // ----- close -------------------------------------------------------------------------------

    fn close(&mut self) -> Result<Next, MapperError> {
        let Some(bound) = &self.state.bound else {
            return Ok(done(json!({}), Vec::new()));
        };
        Ok(send(Stage::CloseSession, ops::close_session(self.workspace(), &bound.session_id)))
    }

    // ----- replies -----------------------------------------------------------------------------

    fn advance(
        &mut self,
        stage: Stage,
        result: Result<Value, MapperError>,
    ) -> Result<Next, MapperError> {
        let plan_operations = self.state.plan_operations();
        match stage {
            Stage::Open { kind, step, session_id, mcp_servers } => {
                self.advance_open(kind, step, session_id, mcp_servers, result?)
            }
            Stage::Prompt { updates } => {
                match result.and_then(|value| ops::check_prompt_accepted(&value)) {
                    Ok(()) => Ok(done(json!({}), updates)),
                    Err(problem) => {
                        self.state.phase = TurnPhase::Idle;
                        Err(problem)
                    }
                }
            }
            Stage::Cancel => {
                result?;
                // Taken down only once the stop was accepted; otherwise the turn's end does it.
                Ok(done(json!({}), self.state.plan.remove(plan_operations)))
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
                let snapshot = Snapshot::parse(&result?, "readSession")?;
                self.state.settings.replace(snapshot);
                let mut updates = self.state.settings.metadata_updates(plan_operations);
                updates.extend(self.state.plan.finish_turn(plan_operations));
                self.state.phase = TurnPhase::Idle;
                self.state.tools.clear();
                Ok(done(usage, updates))
            }
            Stage::SetMode => {
                let snapshot = Snapshot::parse(&result?, "setMode")?;
                let update = json!({"sessionUpdate": "current_mode_update", "currentModeId": snapshot.mode()});
                self.state.settings.replace(snapshot);
                Ok(done(json!({}), vec![text(&update)]))
            }
            Stage::SetConfig { method } => {
                let snapshot = Snapshot::parse(&result?, method)?;
                self.state.settings.replace(snapshot);
                let options = self.state.settings.publish_config_options();
                let update =
                    json!({"sessionUpdate": "config_option_update", "configOptions": options});
                Ok(done(json!({"configOptions": options}), vec![text(&update)]))
            }
            Stage::Answer { updates } => {
                result?;
                Ok(done(json!({}), updates))
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
                    None => Ok(done(json!({}), Vec::new())),
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
