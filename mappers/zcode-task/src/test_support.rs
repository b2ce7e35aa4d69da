//! Test support for the family's own tests: a minimal generation ([`Plain`]: opened after
//! `initialize`, the four-mode catalog, one model option) and a [`Driver`] that runs session
//! operations against scripted host replies and maps events, checking every ACP object it
//! sees against the ACP schema.

use serde_json::{Map, Value, json};
use zcode_mapper_sdk::acp::params::ConfigChange;
use zcode_mapper_sdk::acp::update;
use zcode_mapper_sdk::acp_check;
use zcode_mapper_sdk::contract::{
    Action, ClientFeatures, ErrorKind, InteractionAnswer, InteractionOutcome, InteractionRequest,
    MapperError, NativeData, NativeReply, OpResult, ReplyBody, SessionInit, SessionOp, Step,
    Terminal,
};
use zcode_mapper_sdk::json::invalid_params;
use zcode_mapper_sdk::{Mapping, Session as _, SessionMachine as _};

use crate::ops;
use crate::session::{GenStep, Generation, OpenRequest, Session, done};
use crate::settings::{Publisher, Snapshot, SnapshotRules};
use crate::state::State;

pub const WORKSPACE: &str = "/w";
const MODES: [&str; 4] = ["build", "edit", "plan", "yolo"];

fn check_model_ref(model_ref: &Map<String, Value>) -> Result<(), String> {
    match model_ref.get("modelId") {
        Some(Value::String(id)) if !id.is_empty() => Ok(()),
        _ => Err("model ref without modelId".to_string()),
    }
}

static RULES: SnapshotRules =
    SnapshotRules { modes: &MODES, model_ref: check_model_ref, current_model_required: true };

/// The smallest generation the session machine runs with.
#[derive(Default)]
pub struct Plain;

pub enum PlainStage {
    Initialize(OpenRequest),
    Session(OpenRequest),
    SetMode,
}

fn model_id(model_ref: &Map<String, Value>) -> &str {
    model_ref.get("modelId").and_then(Value::as_str).unwrap_or_default()
}

impl Publisher for Plain {
    fn publish_config_options(&mut self, snapshot: &Snapshot) -> Value {
        let model = &snapshot.settings.model;
        let options: Vec<Value> = model
            .available
            .iter()
            .map(|c| json!({"value": model_id(&c.model_ref), "name": model_id(&c.model_ref)}))
            .collect();
        let current = model.current.as_ref().map(model_id).unwrap_or_default();
        json!([{"id": "test.model", "name": "Model", "category": "model", "type": "select",
                "currentValue": current, "options": options}])
    }

    fn current_mode(&self, snapshot: &Snapshot) -> String {
        snapshot.mode().to_string()
    }
}

impl Generation for Plain {
    type Stage = PlainStage;

    fn snapshot_rules(&self) -> &'static SnapshotRules {
        &RULES
    }

    fn open(
        &mut self,
        state: &State,
        request: OpenRequest,
    ) -> Result<GenStep<PlainStage>, MapperError> {
        Ok(GenStep::Send {
            outbound: ops::initialize(&state.workspace),
            stage: PlainStage::Initialize(request),
        })
    }

    fn set_mode(&mut self, state: &State, mode: &str) -> Result<GenStep<PlainStage>, MapperError> {
        let outbound = ops::set_mode(&state.workspace, state.session_id()?, mode);
        Ok(GenStep::Send { stage: PlainStage::SetMode, outbound })
    }

    fn set_config_option(
        &mut self,
        _state: &State,
        _change: &ConfigChange,
    ) -> Result<GenStep<PlainStage>, MapperError> {
        Err(invalid_params("Config options belong to a real generation"))
    }

    fn advance(
        &mut self,
        state: &mut State,
        stage: PlainStage,
        result: Result<Value, MapperError>,
    ) -> Result<GenStep<PlainStage>, MapperError> {
        let result = result?;
        match stage {
            PlainStage::Initialize(request) => {
                ops::check_initialized(&result)?;
                let workspace = &state.workspace;
                let outbound = match &request.session_id {
                    None => ops::create_session(workspace, &request.mcp_servers),
                    Some(id) => ops::resume_session(workspace, id, &request.mcp_servers),
                };
                Ok(GenStep::Send { outbound, stage: PlainStage::Session(request) })
            }
            PlainStage::Session(request) => {
                let snapshot = Snapshot::parse(&result, request.source(), &RULES)?;
                Ok(GenStep::Opened { request, snapshot })
            }
            PlainStage::SetMode => {
                let snapshot = Snapshot::parse(&result, "setMode", &RULES)?;
                let update = update::current_mode(snapshot.mode());
                state.settings.replace(snapshot);
                Ok(GenStep::Done(done(json!({}), vec![update])))
            }
        }
    }

    fn mode_state(&self, state: &State) -> Value {
        let current = state.settings.snapshot().map_or("build", Snapshot::mode);
        let modes: Vec<Value> = MODES.iter().map(|id| json!({"id": id, "name": id})).collect();
        json!({"currentModeId": current, "availableModes": modes})
    }
}

/// A snapshot as the host sends it (`createSession`, `resumeSession`, `readSession`, events).
pub fn snapshot_json() -> Value {
    json!({
        "session": {"sessionId": "session-1", "status": "idle", "workspace": {"workspacePath": "/w"}, "title": "Fix it", "updatedAt": 1_757_000_000_000_u64},
        "settings": {
            "model": {
                "current": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-5.2"},
                "available": [
                    {"ref": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-5.2"}, "label": "GLM-5.2", "providerLabel": "Z.ai - Coding Plan"},
                    {"ref": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-4.6", "variant": "fast"}, "label": "GLM-4.6"}
                ]
            },
            "thoughtLevel": {"enabled": true, "current": "low", "available": [{"value": "low", "label": "Low"}, {"value": "high", "label": "High"}]},
            "mode": {"current": "build"}
        },
        "messages": [],
        "runtime": {"contextUsage": {"used": 1200, "size": 200_000, "cost": {"amount": 0.01, "currency": "USD"}}},
        "todos": [{"content": "First", "status": "pending", "priority": "high"}],
        "slashCommands": [{"name": "init", "description": "Create AGENTS.md", "inputHint": "path"}, {"name": "review", "description": "Review"}]
    })
}

/// A session of generation `G` plus a scripted host.
pub struct Driver<G: Generation + Default + 'static = Plain> {
    pub session: Mapping<Session<G>>,
    next_request: u64,
    next_op: u64,
    /// The `seq` of the last session event sent.
    pub seq: u64,
}

/// What one operation did: the native requests it sent (parsed), the updates it streamed
/// while it waited, and its outcome.
pub struct Run {
    pub requests: Vec<Value>,
    pub streamed: Vec<Value>,
    /// How many steps streamed updates.
    pub pages: usize,
    pub routes_added: Vec<String>,
    pub routes_removed: Vec<String>,
    pub outcome: Result<OpResult, MapperError>,
}

impl Run {
    pub fn methods(&self) -> Vec<String> {
        self.requests
            .iter()
            .map(|r| match r["method"].as_str().unwrap() {
                "__call" => format!(
                    "{}.{}",
                    r["params"]["service"].as_str().unwrap(),
                    r["params"]["method"].as_str().unwrap()
                ),
                other => other.to_string(),
            })
            .collect()
    }

    pub fn params(&self, index: usize) -> &Value {
        &self.requests[index]["params"]["params"]
    }

    pub fn ok(&self) -> &OpResult {
        self.outcome.as_ref().unwrap_or_else(|e| panic!("operation failed: {e:?}"))
    }

    pub fn response(&self) -> Value {
        serde_json::from_str(&self.ok().response).unwrap()
    }

    pub fn updates(&self) -> Vec<Value> {
        let updates: Vec<Value> =
            self.ok().updates.iter().map(|u| serde_json::from_str(u).unwrap()).collect();
        updates.iter().for_each(acp_check::session_update);
        updates
    }

    pub fn error(&self) -> &MapperError {
        self.outcome.as_ref().expect_err("operation should fail")
    }
}

pub fn update_kinds(updates: &[Value]) -> Vec<String> {
    updates.iter().map(|u| update::kind(&u.to_string()).unwrap()).collect()
}

impl<G: Generation + Default> Driver<G> {
    pub fn new(plan_operations: bool, form_elicitation: bool) -> Self {
        let init = SessionInit {
            facts: Default::default(),
            workspace: WORKSPACE.to_string(),
            client: ClientFeatures { plan_operations, form_elicitation },
        };
        Self { session: Mapping::new(Session::new(&init)), next_request: 100, next_op: 1, seq: 0 }
    }
}

impl<G: Generation + Default + 'static> Driver<G> {
    /// Runs an operation, answering its requests with `replies` in order.
    pub fn run(&mut self, op: SessionOp, replies: Vec<ReplyBody>) -> Run {
        let op_id = self.next_op;
        self.next_op += 1;
        let mut replies = replies.into_iter();
        let mut run = Run {
            requests: Vec::new(),
            streamed: Vec::new(),
            pages: 0,
            routes_added: Vec::new(),
            routes_removed: Vec::new(),
            outcome: Err(MapperError::new(ErrorKind::Internal, "unfinished")),
        };
        let mut step = self.session.start(op_id, &op, self.next_request);
        loop {
            match step {
                Step::Done(outcome) => {
                    assert!(
                        replies.next().is_none(),
                        "operation finished before using every reply"
                    );
                    run.outcome = outcome;
                    return run;
                }
                Step::Wait(outgoing) => {
                    acp_check::outgoing(&outgoing);
                    if !outgoing.updates.is_empty() {
                        run.pages += 1;
                    }
                    run.streamed
                        .extend(outgoing.updates.iter().map(|u| serde_json::from_str(u).unwrap()));
                    run.routes_added.extend(outgoing.routes_added);
                    run.routes_removed.extend(outgoing.routes_removed);
                    assert!(outgoing.writes.is_empty(), "the task protocol writes only requests");
                    assert!(outgoing.requests.len() <= 1, "one request at a time");
                    let Some(request) = outgoing.requests.first() else {
                        step = self.session.resume(op_id, None, self.next_request);
                        continue;
                    };
                    assert_eq!(request.id, self.next_request, "requests use the ids handed out");
                    assert!(request.bytes.ends_with(b"\n"));
                    let value: Value = serde_json::from_slice(&request.bytes).unwrap();
                    assert_eq!(value["id"], json!(request.id));
                    run.requests.push(value);
                    let body = replies.next().expect("a reply for every request");
                    self.next_request += 1;
                    let reply = NativeReply { id: request.id, body };
                    step = self.session.resume(op_id, Some(&reply), self.next_request);
                }
            }
        }
    }

    pub fn prompt(&mut self, text: &str) -> Run {
        let params = json!({"sessionId": "session-1", "prompt": [{"type": "text", "text": text}]});
        self.run(
            SessionOp::Prompt(params.to_string()),
            vec![ok(json!({"sessionId": "session-1", "accepted": true}))],
        )
    }

    pub fn answer(&mut self, key: &str, outcome: InteractionOutcome, reply: ReplyBody) -> Run {
        self.run(
            SessionOp::Answer(InteractionAnswer { key: key.to_string(), outcome }),
            vec![reply],
        )
    }

    /// Maps an event as the core does: an error is a broken stream.
    pub fn event(&mut self, event: Value) -> Vec<Action> {
        match self.try_event(event) {
            Ok(actions) => {
                acp_check::actions(&actions);
                actions
            }
            Err(problem) => vec![Action::Terminal(Terminal::Broken(problem))],
        }
    }

    pub fn try_event(&mut self, event: Value) -> Result<Vec<Action>, MapperError> {
        self.try_event_text(&event.to_string())
    }

    /// An event as text, for what a [`Value`] cannot hold.
    pub fn try_event_text(&mut self, text: &str) -> Result<Vec<Action>, MapperError> {
        let mapped = self.session.session_mut().map_event(&NativeData::Text(text.to_string()))?;
        Ok(mapped.actions)
    }

    pub fn session_event(&mut self, event_type: &str, payload: Value) -> Vec<Action> {
        self.seq += 1;
        let seq = self.seq;
        self.event(json!({"type": "session.event", "event": {
            "eventId": format!("event-{seq}"), "sessionId": "session-1", "turnId": "turn-1", "seq": seq,
            "timestamp": 1_757_000_000_000_u64 + seq, "deliveryKind": "desktop-continuous",
            "type": event_type, "payload": payload,
        }}))
    }
}

impl Driver<Plain> {
    /// `session/new` through [`Plain`]: initialize, createSession, subscribe.
    pub fn create(&mut self) -> Run {
        let run = self.run(
            SessionOp::Create(json!({"cwd": WORKSPACE, "mcpServers": []}).to_string()),
            vec![
                ok(json!({"available": true})),
                ok(snapshot_json()),
                ok(json!({"subscribed": true})),
            ],
        );
        assert!(run.outcome.is_ok(), "create failed: {:?}", run.outcome);
        run
    }
}

pub fn ok(value: Value) -> ReplyBody {
    ReplyBody::Ok(value.to_string().into())
}

pub fn native_error(message: &str) -> ReplyBody {
    ReplyBody::Error(MapperError::new(ErrorKind::Native, message))
}

pub fn updates_of(actions: &[Action]) -> Vec<Value> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Update(u) => Some(serde_json::from_str(u).unwrap()),
            _ => None,
        })
        .collect()
}

pub fn terminal(actions: &[Action]) -> Option<&Terminal> {
    actions.iter().find_map(|a| match a {
        Action::Terminal(t) => Some(t),
        _ => None,
    })
}

pub fn broken_message(actions: &[Action]) -> String {
    match terminal(actions) {
        Some(Terminal::Broken(problem)) => problem.message.clone(),
        other => panic!("expected a broken terminal, got {other:?}"),
    }
}

pub fn interaction(actions: &[Action]) -> (&str, &InteractionRequest) {
    actions
        .iter()
        .find_map(|a| match a {
            Action::Interaction(i) => Some((i.key.as_str(), &i.request)),
            _ => None,
        })
        .expect("an interaction")
}

/// A created session with a prompt turn running.
pub fn running(plan_operations: bool, form_elicitation: bool) -> Driver {
    let mut driver = Driver::new(plan_operations, form_elicitation);
    driver.create();
    assert!(driver.prompt("go").outcome.is_ok());
    driver
}

// ----- native interaction requests ------------------------------------------------------

pub fn permission_event(request_id: &str, tool_name: &str, options: Value) -> Value {
    json!({"type": "permission.request", "request": {
        "requestId": request_id, "sessionId": "session-1", "turnId": "turn-1", "toolCallId": "tool-1",
        "toolName": tool_name, "reason": "Run tests", "riskLevel": "medium",
        "input": {"command": "bun test", "plan": "# Plan\n\n1. Do it"}, "options": options,
    }})
}

pub fn allow_deny_options() -> Value {
    json!([
        {"optionId": "allow", "kind": "allow_once", "name": "Allow", "response": {"decision": "allow"}},
        {"optionId": "always", "kind": "allow_always", "name": "Always", "response": {"decision": "allow", "permissionUpdates": [{"rule": "Bash(bun test)"}]}},
        {"optionId": "deny", "kind": "reject_once", "name": "Deny", "response": {"decision": "deny"}},
    ])
}

pub fn question_event(request_id: &str, questions: Value) -> Value {
    json!({"type": "userInput.request", "request": {
        "requestId": request_id, "sessionId": "session-1", "turnId": "turn-1", "toolCallId": "ask-1",
        "toolName": "AskUserQuestion", "prompt": "Pick options", "questions": questions,
    }})
}

pub fn two_questions() -> Value {
    json!([
        {"question": "Which mode?", "header": "Mode", "options": [{"value": "fast", "label": "Fast", "description": "Quick"}, {"value": "safe", "label": "Safe"}]},
        {"question": "Which files?", "header": "Files", "multiSelect": true, "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]},
    ])
}

pub fn plan_input_event(request_id: &str) -> Value {
    json!({"type": "userInput.request", "request": {
        "requestId": request_id, "sessionId": "session-1", "turnId": "turn-1", "toolCallId": "exit-plan-tool",
        "toolName": "ExitPlanMode", "prompt": "Review this implementation plan.",
        "questions": [{"question": "Review this implementation plan.", "header": "Plan", "options": [{"value": "approve", "label": "Approve", "description": "Exit plan mode and start implementation."}]}],
        "input": {"plan": "# Proposed plan\n\n1. Change it"}, "schema": {"interaction": "plan_approval"},
    }})
}

pub fn plan_permission_options() -> Value {
    json!([
        {"optionId": "allow-plan", "kind": "allow_once", "name": "Approve", "response": {"decision": "allow"}},
        {"optionId": "deny-plan", "kind": "reject_once", "name": "Reject", "response": {"decision": "deny"}},
    ])
}
