//! The mapping state of one ZCode session: its operations as step machines, and the input the
//! Agent routes to it (legacy events, V4 frames, reverse requests).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use zcode_contract::{
    Action, Effects, ErrorKind, Interaction, InteractionAnswer, InteractionRequest, MapperError,
    NativeReply, NativeRequest, NativeWrite, OpResult, Outgoing, PermissionRequest, ReplyBody,
    SessionInit, SessionInput, SessionOp, Step, Terminal,
};

use crate::connection::{ok_body, session_route, workspace_ref};
use crate::conversation::{self, Conversation};
use crate::events::{self, Turn};
use crate::interactions::{self, Pending};
use crate::releases::{self, Profile};
use crate::subscription::{FrameOutcome, Subscription};
use crate::tools::Tools;
use crate::wire::{self, Frame, acp_params, native_value, object, raw_str, raw_value};
use zcode_mapper_sdk::json::{invalid_params, protocol, text};
use zcode_v4::command;
use zcode_v4::schema::native;

const TIMEOUT_MS: u32 = 60_000;
/// History replays stream this many updates a step.
const REPLAY_PAGE: usize = 200;

/// Where an opening operation (create, load, resume) is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Capabilities,
    GuardedProbe,
    Open,
    Messages,
    Replay,
    Subscribe,
    Flow,
    V4Subscribe,
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
    },
    Prompt {
        text: String,
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
    v4: Subscription,
    /// Requests announced by the last `map`, handed out by `issue`.
    announced: Vec<(String, Value)>,
    /// Legacy event sequence reached (events at or below are duplicates).
    event_seq: Option<u64>,
    mode: Option<String>,
    model: Option<(String, String)>,
    thought: Option<String>,
    models: Vec<Value>,
    thoughts: Vec<Value>,
    /// The MCP servers the session was opened with (a resume after an eviction sends them
    /// again: ZCode keeps them per runtime, not per session).
    mcp: Value,
    /// ACP `available_commands_update` from the opened session's slash commands.
    commands: Option<Value>,
    /// The V4 conversation: the turn's content where the Agent has V4.
    conversation: Conversation,
    /// The legacy stream ended the turn before the V4 frames carrying its last content came:
    /// the end waits for them (V4 frames are flushed on a timer, legacy events are not).
    pending_terminal: Option<Terminal>,
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

/// ACP MCP servers as the Agent's strict schema takes them (arrays of `{name, value}`, no
/// unknown keys: one extra key refuses the whole create).
fn mcp_servers(servers: Option<&Value>) -> Result<Value, MapperError> {
    let mut out = Vec::new();
    for server in servers.and_then(Value::as_array).into_iter().flatten() {
        let name = server
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid_params("MCP server without a name"))?;
        let entries = |key: &str| -> Value {
            json!(server.get(key).and_then(Value::as_array).into_iter().flatten()
                .filter_map(|e| Some(json!({"name": e.get("name")?.as_str()?, "value": e.get("value")?.as_str()?})))
                .collect::<Vec<_>>())
        };
        match server.get("type").and_then(Value::as_str) {
            Some(kind @ ("http" | "sse")) => {
                let url = server
                    .get("url")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid_params("MCP server without a url"))?;
                out.push(
                    json!({"name": name, "type": kind, "url": url, "headers": entries("headers")}),
                );
            }
            None | Some("stdio") => {
                let command = server
                    .get("command")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid_params("MCP server without a command"))?;
                let args: Vec<&str> = server
                    .get("args")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                out.push(
                    json!({"name": name, "command": command, "args": args, "env": entries("env")}),
                );
            }
            Some(other) => {
                return Err(invalid_params(format!(
                    "MCP transport {other} is not supported by ZCode"
                )));
            }
        }
    }
    Ok(json!(out))
}

/// ZCode refused the prompt because the session has no resident runtime (it was evicted):
/// `-32004` on the legacy path, `rejected` / `proto.sessionNotFound` over V4.
fn not_active(body: &Result<Value, MapperError>) -> bool {
    match body {
        Ok(ack) => {
            ack.get("status").and_then(Value::as_str) == Some("rejected")
                && ack.get("reasonCode").and_then(Value::as_str) == Some("proto.sessionNotFound")
        }
        Err(error) => error.kind == ErrorKind::NotFound,
    }
}

/// The session's slash commands (`slashCommands` of the session state: name, description,
/// an optional input hint) as an ACP `available_commands_update`; typed as prompt text, ZCode
/// runs them itself.
fn available_commands(state: &Value) -> Option<Value> {
    let commands: Vec<Value> = state
        .get("slashCommands")?
        .as_array()?
        .iter()
        .filter_map(|command| {
            let name = command.get("name")?.as_str()?;
            let description = command.get("description").and_then(Value::as_str).unwrap_or("");
            let mut acp = json!({"name": name, "description": description});
            if let Some(hint) = command.get("inputHint").and_then(Value::as_str) {
                acp["input"] = json!({"hint": hint});
            }
            Some(acp)
        })
        .collect();
    Some(json!({"sessionUpdate": "available_commands_update", "availableCommands": commands}))
}

/// `turn.completed` as the session reads it: the payload's `usage` and `resultType`, and
/// nothing of the rest (the turn's whole text is in `response`).
#[derive(Deserialize)]
struct Completed<'a> {
    #[serde(borrow)]
    payload: &'a RawValue,
}

#[derive(Deserialize)]
struct CompletedPayload<'a> {
    #[serde(default, deserialize_with = "wire::present")]
    usage: Option<Value>,
    #[serde(default, borrow, rename = "resultType")]
    result_type: Option<&'a RawValue>,
}

/// The prompt as the one text ZCode takes.
fn prompt_text(params: &Value) -> Result<String, MapperError> {
    let blocks = params
        .get("prompt")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid_params("prompt is missing"))?;
    let mut parts = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                parts.push(block.get("text").and_then(Value::as_str).unwrap_or("").to_string())
            }
            Some("resource_link") => {
                let uri = block.get("uri").and_then(Value::as_str).unwrap_or("");
                let name = block.get("name").and_then(Value::as_str).unwrap_or(uri);
                parts.push(format!("[{name}]({uri})"));
            }
            Some("resource") => match block.pointer("/resource/text").and_then(Value::as_str) {
                Some(text) => {
                    let uri = block.pointer("/resource/uri").and_then(Value::as_str).unwrap_or("");
                    parts.push(format!("<resource uri=\"{uri}\">\n{text}\n</resource>"));
                }
                None => {
                    return Err(invalid_params(
                        "binary embedded resources are not supported by ZCode's Agent",
                    ));
                }
            },
            other => {
                return Err(invalid_params(format!(
                    "{} prompt content is not supported by ZCode's Agent",
                    other.unwrap_or("untyped")
                )));
            }
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() {
        return Err(invalid_params("The prompt has no text"));
    }
    Ok(text)
}

impl AppServerSession {
    pub fn new(init: &SessionInit) -> Self {
        Self {
            workspace: init.workspace.clone(),
            profile: releases::OLD,
            id: None,
            ops: BTreeMap::new(),
            tools: Tools::default(),
            running: false,
            cancelled: false,
            usage: None,
            interactions: BTreeMap::new(),
            v4: Subscription::default(),
            announced: Vec::new(),
            event_seq: None,
            mode: None,
            model: None,
            thought: None,
            models: Vec::new(),
            thoughts: Vec::new(),
            commands: None,
            mcp: json!([]),
            conversation: Conversation::default(),
            pending_terminal: None,
        }
    }

    fn sid(&self) -> Result<&str, MapperError> {
        self.id
            .as_deref()
            .ok_or_else(|| MapperError::new(ErrorKind::NotFound, "The session is not open"))
    }

    // ----- settings as ACP shows them ------------------------------------------------------

    fn settings(&mut self, state: &Value) {
        if let Some(mode) = state.pointer("/settings/mode/current").and_then(Value::as_str) {
            self.mode = Some(mode.to_string());
        }
        if let Some(current) = state.pointer("/settings/model/current")
            && let (Some(p), Some(m)) = (
                current.get("providerId").and_then(Value::as_str),
                current.get("modelId").and_then(Value::as_str),
            )
        {
            self.model = Some((p.to_string(), m.to_string()));
        }
        if let Some(available) =
            state.pointer("/settings/model/available").and_then(Value::as_array)
        {
            self.models = available.clone();
        }
        let thought = state.pointer("/settings/thoughtLevel");
        if let Some(levels) = thought.and_then(|t| t.get("available")).and_then(Value::as_array) {
            self.thoughts = levels.clone();
        }
        if let Some(level) = thought
            .and_then(|t| t.get("current").or_else(|| t.get("defaultLevel")))
            .and_then(Value::as_str)
        {
            self.thought = Some(level.to_string());
        }
    }

    fn modes(&self) -> Value {
        let available: Vec<Value> = releases::modes(self.profile)
            .iter()
            .map(|(id, name, description)| json!({"id": id, "name": name, "description": description}))
            .collect();
        json!({"currentModeId": self.mode.as_deref().unwrap_or("build"), "availableModes": available})
    }

    fn config_options(&self) -> Value {
        let mut options = Vec::new();
        let value = |p: &str, m: &str| format!("{p}/{m}");
        let models: Vec<Value> = self
            .models
            .iter()
            .filter_map(|m| {
                let p = m.pointer("/ref/providerId")?.as_str()?;
                let id = m.pointer("/ref/modelId")?.as_str()?;
                let mut option = json!({"value": value(p, id), "name": m.get("label").and_then(Value::as_str).unwrap_or(id)});
                if let Some(provider) = m.get("providerLabel").and_then(Value::as_str) {
                    option["description"] = json!(provider);
                }
                Some(option)
            })
            .collect();
        if let Some((p, m)) = &self.model {
            options.push(json!({"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": value(p, m), "options": models}));
        }
        let thoughts: Vec<Value> = self
            .thoughts
            .iter()
            .filter_map(|t| Some(json!({"value": t.get("value")?.as_str()?, "name": t.get("label").and_then(Value::as_str).or(t.get("value")?.as_str())?})))
            .collect();
        if let (Some(current), false) = (&self.thought, thoughts.is_empty()) {
            options.push(json!({"id": "thought_level", "name": "Thinking", "category": "thought_level", "type": "select", "currentValue": current, "options": thoughts}));
        }
        json!(options)
    }

    fn opened_response(&self, with_id: bool) -> Result<Value, MapperError> {
        let mut response = json!({"modes": self.modes(), "configOptions": self.config_options()});
        if with_id {
            response["sessionId"] = json!(self.sid()?);
        }
        Ok(response)
    }

    // ----- operations ----------------------------------------------------------------------

    fn start_op(&mut self, op_id: u64, op: &SessionOp, first: u64) -> Result<Step, MapperError> {
        match op {
            SessionOp::Create(params) | SessionOp::Load(params) | SessionOp::Resume(params) => {
                let params = acp_params(params)?;
                let resume = match op {
                    SessionOp::Create(_) => None,
                    _ => Some(
                        params
                            .get("sessionId")
                            .and_then(Value::as_str)
                            .ok_or_else(|| invalid_params("sessionId is missing"))?
                            .to_string(),
                    ),
                };
                let mcp = mcp_servers(params.get("mcpServers"))?;
                self.mcp = mcp.clone();
                self.ops.insert(
                    op_id,
                    Op::Opening {
                        stage: Stage::Capabilities,
                        replay: matches!(op, SessionOp::Load(_)),
                        resume,
                        mcp,
                        pending_updates: Vec::new(),
                    },
                );
                Ok(wait(vec![request(first, "runtime/capabilities", json!({}))]))
            }
            SessionOp::Prompt(params) => {
                let text = prompt_text(&acp_params(params)?)?;
                let sid = self.sid()?.to_string();
                self.running = true;
                self.cancelled = false;
                self.usage = None;
                self.pending_terminal = None;
                self.tools.clear();
                let send = self.send_prompt(&sid, &text, first);
                self.ops.insert(op_id, Op::Prompt { text, stage: PromptStage::Sent });
                Ok(wait(vec![send]))
            }
            SessionOp::Cancel => {
                let sid = self.sid()?.to_string();
                self.cancelled = true;
                self.ops.insert(op_id, Op::Cancel);
                // `session/stop` only aborts the current model request; the V4 stop is what the
                // Desktop's stop button sends (reference APP §8.2).
                Ok(wait(vec![if self.v4.active() {
                    request(first, "v4/command", self.v4.command(&sid, "stop", json!({})))
                } else {
                    request(first, "session/stop", json!({"sessionId": sid}))
                }]))
            }
            SessionOp::FinishTurn => {
                self.running = false;
                self.tools.clear();
                self.conversation.unwatch();
                self.pending_terminal = None;
                Ok(done(events::acp_usage(self.usage.take().as_ref()), Vec::new()))
            }
            SessionOp::SetMode(params) => {
                let params = acp_params(params)?;
                let mode = params
                    .get("modeId")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid_params("modeId is missing"))?;
                self.set_mode(op_id, mode, first)
            }
            SessionOp::SetConfigOption(params) => {
                let params = acp_params(params)?;
                let value = params
                    .get("value")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid_params("value is missing"))?;
                match params.get("configId").and_then(Value::as_str) {
                    Some("mode") => self.set_mode(op_id, value, first),
                    Some("model") => {
                        let (provider, model) = value
                            .split_once('/')
                            .ok_or_else(|| invalid_params(format!("Unknown model {value}")))?;
                        if !self.models.iter().any(|m| {
                            m.pointer("/ref/providerId").and_then(Value::as_str) == Some(provider)
                                && m.pointer("/ref/modelId").and_then(Value::as_str) == Some(model)
                        }) {
                            return Err(invalid_params(format!("Unknown model {value}")));
                        }
                        let thought = self.thought.clone();
                        self.set_model(
                            op_id,
                            provider.to_string(),
                            model.to_string(),
                            thought,
                            first,
                        )
                    }
                    Some("thought_level") => {
                        let (provider, model) = self
                            .model
                            .clone()
                            .ok_or_else(|| invalid_params("The session has no model"))?;
                        if !self
                            .thoughts
                            .iter()
                            .any(|t| t.get("value").and_then(Value::as_str) == Some(value))
                        {
                            return Err(invalid_params(format!("Unknown thinking level {value}")));
                        }
                        self.set_model(op_id, provider, model, Some(value.to_string()), first)
                    }
                    other => Err(invalid_params(format!(
                        "Unknown config option {}",
                        other.unwrap_or("(none)")
                    ))),
                }
            }
            SessionOp::Answer(answer) => self.answer(op_id, answer, first),
            SessionOp::Close => {
                let sid = self.sid()?.to_string();
                // ACP close frees resources and never deletes; the Agent's `session/close` deletes
                // the product session (3.15.1 server.ts), so it is never sent.
                let mut outgoing =
                    Outgoing { routes_removed: vec![session_route(&sid)], ..Outgoing::default() };
                if let Some(subscription) = self.v4.subscription_id.clone() {
                    outgoing.requests.push(request(first, "v4/conversation/unsubscribe", json!({
                        "topic": format!("conversation/{sid}"), "subscriptionId": subscription, "connectionId": self.v4.connection_id,
                    })));
                }
                self.v4.subscription_id = None;
                self.ops.insert(op_id, Op::Close);
                Ok(Step::Wait(outgoing))
            }
        }
    }

    /// The prompt's text to ZCode: V4 `sendText` where the session has V4, else `session/send`.
    fn send_prompt(&mut self, sid: &str, text: &str, first: u64) -> NativeRequest {
        if self.v4.active() {
            let command = self.v4.command(
                sid,
                "sendText",
                json!({"text": text, "requestedDelivery": "startNow"}),
            );
            // ZCode attributes the turn to this command (`turnHeader.sourceCommandId`).
            self.conversation.watch(command["commandId"].as_str().map(str::to_string));
            request(first, "v4/command", command)
        } else {
            request(first, "session/send", json!({"sessionId": sid, "content": text}))
        }
    }

    /// The prompt operation after a reply: done when ZCode accepted it; an evicted session is
    /// resumed and subscribed again, then the prompt is sent once more.
    fn prompt_step(
        &mut self,
        op_id: u64,
        text: String,
        stage: PromptStage,
        reply: Option<&NativeReply>,
        first: u64,
    ) -> Result<Step, MapperError> {
        let reply = reply.ok_or_else(|| protocol("prompt resumed without a reply"))?;
        let sid = self.sid()?.to_string();
        let next = |this: &mut Self, stage, req| {
            this.ops.insert(op_id, Op::Prompt { text: text.clone(), stage });
            Ok(wait(vec![req]))
        };
        match stage {
            PromptStage::Sent | PromptStage::Resent => {
                let body = ok_body(&reply.body, "prompt");
                if stage == PromptStage::Sent && not_active(&body) {
                    let workspace = workspace_ref(&self.workspace);
                    let params =
                        json!({"sessionId": sid, "workspace": workspace, "mcpServers": self.mcp});
                    return next(
                        self,
                        PromptStage::Resume,
                        request(first, "session/resume", params),
                    );
                }
                let accepted = body.and_then(|body| {
                    if body.get("status").is_some() {
                        command::accepted(&body).map(|_| ())
                    } else {
                        Ok(())
                    }
                });
                match accepted {
                    Ok(()) => Ok(done(json!({}), Vec::new())),
                    Err(error) => Err(error),
                }
            }
            PromptStage::Resume => {
                let state = ok_body(&reply.body, "session/resume")?;
                self.settings(&state);
                let params = json!({"sessionId": sid, "deliveryKind": "desktop-continuous", "includeSnapshot": false});
                next(self, PromptStage::Subscribe, request(first, "session/subscribe", params))
            }
            PromptStage::Subscribe => {
                let result = ok_body(&reply.body, "session/subscribe")?;
                self.event_seq = result.get("eventSeq").and_then(Value::as_u64);
                if !self.v4.active() {
                    let send = self.send_prompt(&sid, &text, first);
                    return next(self, PromptStage::Resent, send);
                }
                let params = json!({"topic": format!("conversation/{sid}"), "connectionId": self.v4.connection_id, "clientMode": "desktop-continuous"});
                next(
                    self,
                    PromptStage::V4Subscribe,
                    request(first, "v4/conversation/subscribe", params),
                )
            }
            PromptStage::V4Subscribe => {
                let result = ok_body(&reply.body, "v4/conversation/subscribe")?;
                let ack =
                    result.get("ack").ok_or_else(|| protocol("v4 subscribe without an ack"))?;
                self.v4.resubscribed(
                    ack.get("subscriptionId").and_then(Value::as_str).map(str::to_string),
                    ack.get("logEpoch").and_then(Value::as_str).map(str::to_string),
                );
                let send = self.send_prompt(&sid, &text, first);
                next(self, PromptStage::Resent, send)
            }
        }
    }

    fn set_mode(&mut self, op_id: u64, mode: &str, first: u64) -> Result<Step, MapperError> {
        if !releases::modes(self.profile).iter().any(|(id, _, _)| *id == mode) {
            return Err(invalid_params(format!("Unknown mode {mode}")));
        }
        let sid = self.sid()?.to_string();
        let v4 = self.v4.active() && self.v4.revision.is_some();
        self.ops.insert(op_id, Op::Mode { mode: mode.to_string(), legacy: !v4 });
        Ok(wait(vec![if v4 {
            request(
                first,
                "v4/command",
                self.v4.command(&sid, "switchCollaborationMode", json!({"mode": mode})),
            )
        } else {
            request(first, "session/setMode", json!({"sessionId": sid, "mode": mode}))
        }]))
    }

    fn set_model(
        &mut self,
        op_id: u64,
        provider: String,
        model: String,
        thought: Option<String>,
        first: u64,
    ) -> Result<Step, MapperError> {
        let sid = self.sid()?.to_string();
        let v4 = self.v4.active() && self.v4.revision.is_some() && thought.is_some();
        let step = if v4 {
            let payload = json!({"provider": provider, "model": model, "thought": thought});
            request(first, "v4/command", self.v4.command(&sid, "switchModelConfig", payload))
        } else {
            request(
                first,
                "session/setModel",
                json!({"sessionId": sid, "model": {"providerId": provider, "modelId": model}}),
            )
        };
        self.ops.insert(
            op_id,
            // Legacy: the thinking level follows the model only when it is what changes (a level
            // kept across a model switch may not exist for the new model).
            Op::Model {
                legacy_step: if v4 {
                    0
                } else if thought != self.thought {
                    1
                } else {
                    3
                },
                provider,
                model,
                thought,
            },
        );
        Ok(wait(vec![step]))
    }

    fn answer(
        &mut self,
        op_id: u64,
        answer: &InteractionAnswer,
        first: u64,
    ) -> Result<Step, MapperError> {
        let pending = self
            .interactions
            .get_mut(&answer.key)
            .ok_or_else(|| protocol(format!("No ZCode interaction {}", answer.key)))?;
        if pending.answered {
            return Err(protocol(format!("ZCode interaction {} was answered already", answer.key)));
        }
        pending.answered = true;
        let pending = pending.clone();
        let native_answer = interactions::answer(&pending.kind, &answer.outcome)?;
        let sid = self.sid()?.to_string();
        // Both paths reach the same ZCode request and the first answer wins; only one is sent.
        if self.profile.v4_resolve_interaction && self.v4.active() && !native_answer.v4.is_null() {
            let payload = json!({"interactionId": pending.request_id, "answer": native_answer.v4});
            let command = self.v4.command(&sid, "resolveInteraction", payload);
            self.ops.insert(
                op_id,
                Op::Answer { key: answer.key.clone(), answer: native_answer, v4: true },
            );
            return Ok(wait(vec![request(first, "v4/command", command)]));
        }
        let write = interactions::reply_write(&pending, &native_answer);
        self.ops.insert(
            op_id,
            Op::Answer { key: answer.key.clone(), answer: native_answer, v4: false },
        );
        Ok(Step::Wait(Outgoing { writes: vec![write], ..Outgoing::default() }))
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
            Op::Opening { stage, replay, resume, mcp, pending_updates } => {
                self.opening(op_id, stage, replay, resume, mcp, pending_updates, reply, first)
            }
            Op::Prompt { text, stage } => {
                let step = self.prompt_step(op_id, text, stage, reply, first);
                if step.is_err() {
                    self.running = false;
                    self.conversation.unwatch();
                }
                step
            }
            // Whatever the stop's fate, the turn ends through its events or the core's drain.
            Op::Cancel => Ok(done(json!({}), Vec::new())),
            Op::Mode { mode, legacy } => {
                let reply = reply.ok_or_else(|| protocol("set-mode resumed without a reply"))?;
                let outcome = ok_body(&reply.body, "mode").and_then(|body| {
                    if legacy { Ok(()) } else { command::accepted(&body).map(|_| ()) }
                });
                match outcome {
                    Ok(()) => {
                        let update =
                            json!({"sessionUpdate": "current_mode_update", "currentModeId": mode});
                        // Announced already when ZCode's state change came before the answer.
                        let updates = self.mode_seen(Action::Update(text(&update)));
                        let updates = updates.map(|_| text(&update)).into_iter().collect();
                        Ok(done(json!({}), updates))
                    }
                    // A V4 switch that lost a race with another change: the legacy call has no
                    // revision guard.
                    Err(_) if !legacy => {
                        let sid = self.sid()?.to_string();
                        self.ops.insert(op_id, Op::Mode { mode: mode.clone(), legacy: true });
                        Ok(wait(vec![request(
                            first,
                            "session/setMode",
                            json!({"sessionId": sid, "mode": mode}),
                        )]))
                    }
                    Err(error) => Err(error),
                }
            }
            Op::Model { provider, model, thought, legacy_step } => {
                let reply =
                    reply.ok_or_else(|| protocol("set-config-option resumed without a reply"))?;
                let body = ok_body(&reply.body, "model switch")?;
                if legacy_step == 0 {
                    command::accepted(&body)?;
                } else if legacy_step == 1
                    && let Some(level) = &thought
                {
                    {
                        let sid = self.sid()?.to_string();
                        self.ops.insert(
                            op_id,
                            Op::Model { provider, model, thought: thought.clone(), legacy_step: 2 },
                        );
                        return Ok(wait(vec![request(
                            first,
                            "session/setThoughtLevel",
                            json!({"sessionId": sid, "thoughtLevel": level}),
                        )]));
                    }
                }
                if let Some(state) = body.get("settings").map(|_| &body) {
                    self.settings(state);
                } else {
                    self.model = Some((provider, model));
                    if thought.is_some() {
                        self.thought = thought;
                    }
                }
                let options = self.config_options();
                let update =
                    json!({"sessionUpdate": "config_option_update", "configOptions": options});
                Ok(done(json!({"configOptions": options}), vec![text(&update)]))
            }
            Op::Answer { key, answer, v4 } => {
                if !v4 {
                    return Ok(done(json!({}), Vec::new()));
                }
                let accepted = reply.and_then(|r| match &r.body {
                    ReplyBody::Ok(data) => {
                        native_value(data.as_text().unwrap_or(""), "v4/command").ok()
                    }
                    _ => None,
                });
                let status =
                    accepted.as_ref().and_then(|a| a.get("status")).and_then(Value::as_str);
                // Accepted, or `noop` (already resolved): ZCode has its answer. Anything else
                // and the reverse request is still waiting: answer it there, once.
                if matches!(status, Some("accepted" | "noop" | "duplicate")) {
                    return Ok(done(json!({}), Vec::new()));
                }
                let pending = self
                    .interactions
                    .get(&key)
                    .ok_or_else(|| protocol("answered interaction vanished"))?;
                let write = interactions::reply_write(pending, &answer);
                self.ops.insert(op_id, Op::Answer { key, answer, v4: false });
                Ok(Step::Wait(Outgoing { writes: vec![write], ..Outgoing::default() }))
            }
            Op::Close => {
                self.id = None;
                Ok(done(json!({}), Vec::new()))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn opening(
        &mut self,
        op_id: u64,
        stage: Stage,
        replay: bool,
        resume: Option<String>,
        mcp: Value,
        mut pending_updates: Vec<String>,
        reply: Option<&NativeReply>,
        first: u64,
    ) -> Result<Step, MapperError> {
        let next = |this: &mut Self, stage: Stage, pending_updates: Vec<String>| {
            this.ops.insert(
                op_id,
                Op::Opening {
                    stage,
                    replay,
                    resume: resume.clone(),
                    mcp: mcp.clone(),
                    pending_updates,
                },
            );
        };
        match stage {
            Stage::Capabilities => {
                let reply = reply.ok_or_else(|| protocol("open resumed without a reply"))?;
                self.profile =
                    Profile::detect(ok_body(&reply.body, "runtime/capabilities").ok().as_ref());
                if self.profile.v4_resolve_interaction {
                    next(self, Stage::GuardedProbe, Vec::new());
                    let probe =
                        json!({"sessionId": releases::GUARDED_PROBE_SESSION, "mode": "guarded"});
                    return Ok(wait(vec![request(first, "session/setMode", probe)]));
                }
                next(self, Stage::Open, Vec::new());
                Ok(wait(vec![self.open_request(first, resume.as_deref(), &mcp)]))
            }
            Stage::GuardedProbe => {
                let reply = reply.ok_or_else(|| protocol("open resumed without a reply"))?;
                self.profile = self.profile.with_guarded_probe(&reply.body);
                next(self, Stage::Open, Vec::new());
                Ok(wait(vec![self.open_request(first, resume.as_deref(), &mcp)]))
            }
            Stage::Open => {
                let reply = reply.ok_or_else(|| protocol("open resumed without a reply"))?;
                let state = ok_body(
                    &reply.body,
                    if resume.is_some() { "session/resume" } else { "session/create" },
                )?;
                // The Agent resumes a session whatever workspace it is given; a session is only
                // ever opened in its own, so nothing of it reaches a client of another.
                if resume.is_some()
                    && let Some(own) =
                        state.pointer("/session/workspace/workspacePath").and_then(Value::as_str)
                    && own != self.workspace
                {
                    return Err(invalid_params(format!(
                        "The session belongs to the workspace {own}, not {}",
                        self.workspace
                    )));
                }
                let sid = match &resume {
                    Some(id) => id.clone(),
                    None => state
                        .pointer("/session/sessionId")
                        .and_then(Value::as_str)
                        .ok_or_else(|| protocol("session/create result has no session id"))?
                        .to_string(),
                };
                self.settings(&state);
                self.commands = available_commands(&state);
                self.v4 = Subscription::new(&sid);
                self.id = Some(sid.clone());
                let route = session_route(&sid);
                if replay {
                    next(self, Stage::Messages, Vec::new());
                    return Ok(Step::Wait(Outgoing {
                        routes_added: vec![route],
                        requests: vec![request(
                            first,
                            "session/messages",
                            json!({"sessionId": sid}),
                        )],
                        ..Outgoing::default()
                    }));
                }
                next(self, Stage::Subscribe, Vec::new());
                Ok(Step::Wait(Outgoing {
                    routes_added: vec![route],
                    requests: vec![request(
                        first,
                        "session/subscribe",
                        json!({"sessionId": sid, "deliveryKind": "desktop-continuous", "includeSnapshot": false}),
                    )],
                    ..Outgoing::default()
                }))
            }
            Stage::Messages => {
                let reply = reply.ok_or_else(|| protocol("load resumed without a reply"))?;
                let messages = ok_body(&reply.body, "session/messages")?;
                let updates = crate::history::replay(&messages, &self.workspace)?;
                next(self, Stage::Replay, updates);
                Ok(Step::Wait(Outgoing::default()))
            }
            // The history streams page by page before the session subscribes, so it comes
            // before the load's response and before any live event.
            Stage::Replay if !pending_updates.is_empty() => {
                let rest = pending_updates.split_off(pending_updates.len().min(REPLAY_PAGE));
                next(self, Stage::Replay, rest);
                Ok(Step::Wait(Outgoing { updates: pending_updates, ..Outgoing::default() }))
            }
            Stage::Replay => {
                let sid = self.sid()?.to_string();
                next(self, Stage::Subscribe, Vec::new());
                Ok(wait(vec![request(
                    first,
                    "session/subscribe",
                    json!({"sessionId": sid, "deliveryKind": "desktop-continuous", "includeSnapshot": false}),
                )]))
            }
            Stage::Subscribe => {
                let reply = reply.ok_or_else(|| protocol("subscribe resumed without a reply"))?;
                let result = ok_body(&reply.body, "session/subscribe")?;
                self.event_seq = result.get("eventSeq").and_then(Value::as_u64);
                let flow = request(
                    first,
                    "v4/connection/flow",
                    json!({"connectionId": self.v4.connection_id, "state": "drained"}),
                );
                next(self, Stage::Flow, pending_updates);
                Ok(wait(vec![flow]))
            }
            Stage::Flow => {
                let reply = reply.ok_or_else(|| protocol("flow resumed without a reply"))?;
                if ok_body(&reply.body, "v4/connection/flow").is_err() {
                    // No V4 on this Agent: everything goes through legacy session/*.
                    return self.opened(resume.is_none(), pending_updates);
                }
                let sid = self.sid()?.to_string();
                let subscribe = request(
                    first,
                    "v4/conversation/subscribe",
                    json!({
                        "topic": format!("conversation/{sid}"), "connectionId": self.v4.connection_id, "clientMode": "desktop-continuous",
                    }),
                );
                next(self, Stage::V4Subscribe, pending_updates);
                Ok(wait(vec![subscribe]))
            }
            Stage::V4Subscribe => {
                let reply =
                    reply.ok_or_else(|| protocol("v4 subscribe resumed without a reply"))?;
                if let Ok(result) = ok_body(&reply.body, "v4/conversation/subscribe")
                    && let Some(ack) = result.get("ack")
                {
                    self.v4.subscription_id =
                        ack.get("subscriptionId").and_then(Value::as_str).map(str::to_string);
                    self.v4.log_epoch =
                        ack.get("logEpoch").and_then(Value::as_str).map(str::to_string);
                }
                self.opened(resume.is_none(), pending_updates)
            }
        }
    }

    /// `session/create`, or `session/resume` of the session being loaded or resumed.
    fn open_request(&self, first: u64, resume: Option<&str>, mcp: &Value) -> NativeRequest {
        let workspace = workspace_ref(&self.workspace);
        match resume {
            None => {
                request(first, "session/create", json!({"workspace": workspace, "mcpServers": mcp}))
            }
            Some(id) => request(
                first,
                "session/resume",
                json!({"sessionId": id, "workspace": workspace, "mcpServers": mcp}),
            ),
        }
    }

    fn opened(&mut self, created: bool, _updates: Vec<String>) -> Result<Step, MapperError> {
        let updates = self.commands.take().map(|update| text(&update)).into_iter().collect();
        Ok(done(self.opened_response(created)?, updates))
    }

    // ----- input ---------------------------------------------------------------------------

    fn map_one(&mut self, input: &SessionInput, effects: &mut Effects) {
        match input {
            SessionInput::Reply(reply) => {
                // The reply to a resync: its recovery frames follow as events.
                if let ReplyBody::Error(error) = &reply.body.clone().into_error() {
                    effects.actions.push(Action::Terminal(Terminal::Broken(native(format!(
                        "ZCode could not resync the conversation: {}",
                        error.message
                    )))));
                } else {
                    effects.actions.push(Action::Ignore("resync acknowledged".to_string()));
                }
            }
            SessionInput::Event(data) => {
                let Some(line) = data.as_text() else {
                    effects.actions.push(Action::Terminal(Terminal::Broken(protocol(
                        "ZCode sent binary data on its NDJSON pipe",
                    ))));
                    return;
                };
                let read = wire::classify(line).and_then(|frame| match frame {
                    Frame::Notification { method, params } => {
                        self.notification(&method, params, effects)
                    }
                    Frame::Request { id, method, params } => {
                        let (id, params) = (raw_value(Some(id))?, raw_value(params)?);
                        self.reverse_request(id, &method, &params, effects);
                        Ok(())
                    }
                    Frame::Reply(_) => {
                        effects
                            .actions
                            .push(Action::Ignore("reply routed as an event".to_string()));
                        Ok(())
                    }
                });
                if let Err(error) = read {
                    effects.actions.push(Action::Terminal(Terminal::Broken(error)));
                }
            }
        }
    }

    /// A notification routed to the session, its parameters as they came.
    fn notification(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        effects: &mut Effects,
    ) -> Result<(), MapperError> {
        if method == "session/event" {
            return self.legacy_event(params, effects);
        }
        if method == "v4/conversation/frame"
            && let Some(deltas) = params.and_then(|params| self.v4.deltas(params))
        {
            let mut cx =
                conversation::Context { tools: &mut self.tools, workspace: &self.workspace };
            let actions = self.conversation.apply_deltas(&deltas, &mut cx);
            self.applied(actions, effects);
            return Ok(());
        }
        let params = raw_value(params)?;
        self.read_notification(method, params, effects);
        Ok(())
    }

    /// A legacy `session/event`. Its number and type are read first, alone: an event this
    /// stream only ignores (with V4, every text delta comes twice) is dropped without its
    /// payload being read. Params the head cannot be read from go the general way, which has
    /// the errors.
    fn legacy_event(
        &mut self,
        params: Option<&RawValue>,
        effects: &mut Effects,
    ) -> Result<(), MapperError> {
        #[derive(Deserialize)]
        struct Head<'a> {
            #[serde(default, borrow)]
            seq: Option<&'a RawValue>,
            #[serde(default, borrow, rename = "type")]
            kind: Option<&'a RawValue>,
        }
        let head = params.and_then(object::<Head<'_>>);
        let Some(head) = head else {
            let params = raw_value(params)?;
            if self.in_sequence(params.get("seq").and_then(Value::as_u64), effects) {
                self.map_event(&params, effects);
            }
            return Ok(());
        };
        // The sequence sees every event, dropped or not.
        let seq = head.seq.and_then(|raw| serde_json::from_str::<u64>(raw.get()).ok());
        if !self.in_sequence(seq, effects) {
            return Ok(());
        }
        let kind = raw_str(head.kind);
        if let Some(why) = kind.as_deref().and_then(|kind| events::ignored(kind, !self.v4.active()))
        {
            effects.actions.push(Action::Ignore(why));
            return Ok(());
        }
        // The end of the turn carries the turn's whole text (`response`): read without it.
        if kind.as_deref() == Some("turn.completed")
            && let Some(completed) = params.and_then(object::<Completed<'_>>)
            && let Some(payload) = object::<CompletedPayload<'_>>(completed.payload)
        {
            let result_type = raw_str(payload.result_type);
            let actions =
                events::completed(&mut self.turn(), payload.usage, result_type.as_deref());
            self.event_actions(Ok(actions), effects);
            return Ok(());
        }
        self.map_event(&raw_value(params)?, effects);
        Ok(())
    }

    /// What the legacy stream's mapping needs of the session.
    fn turn(&mut self) -> Turn<'_> {
        Turn {
            tools: &mut self.tools,
            workspace: &self.workspace,
            running: self.running,
            usage: &mut self.usage,
            content: !self.v4.active(),
        }
    }

    /// Checks a legacy event's number: `false` when the event goes no further (a duplicate, or
    /// a gap that broke the turn).
    fn in_sequence(&mut self, seq: Option<u64>, effects: &mut Effects) -> bool {
        if let (Some(seq), Some(last)) = (seq, self.event_seq)
            && seq <= last
            && seq != 0
        {
            effects.actions.push(Action::Ignore("duplicate session event".to_string()));
            return false;
        }
        if let Some(seq) = seq.filter(|s| *s != 0) {
            let expected = self.event_seq.map(|last| last + 1);
            self.event_seq = Some(seq);
            // Session events are numbered one by one; a jump means some never came (the
            // turn's result among them, perhaps): the turn cannot be trusted to end.
            if let Some(expected) = expected.filter(|e| seq > *e && self.running) {
                effects.actions.push(Action::Terminal(Terminal::Broken(protocol(format!(
                    "ZCode skipped session events: expected event {expected}, got {seq}"
                )))));
                return false;
            }
        }
        true
    }

    /// A legacy event in sequence, read whole.
    fn map_event(&mut self, params: &Value, effects: &mut Effects) {
        let actions = events::map(&mut self.turn(), params);
        self.event_actions(actions, effects);
    }

    fn event_actions(&mut self, actions: Result<Vec<Action>, MapperError>, effects: &mut Effects) {
        let v4_content = self.v4.active();
        match actions {
            Ok(actions) => {
                for action in actions {
                    match action {
                        // With V4 the turn's last content may still be in a frame on
                        // its way: the end is held until the V4 turn header closes.
                        Action::Terminal(end @ (Terminal::Stop(_) | Terminal::Failed(_)))
                            if v4_content && !self.conversation.turn_closed() =>
                        {
                            self.pending_terminal = Some(end);
                            effects.actions.push(Action::Ignore(
                                "turn end waits for the V4 conversation".to_string(),
                            ));
                        }
                        other => effects.actions.push(other),
                    }
                }
            }
            Err(error) => effects.actions.push(Action::Terminal(Terminal::Broken(error))),
        }
    }

    fn read_notification(&mut self, method: &str, params: Value, effects: &mut Effects) {
        match method {
            "v4/conversation/frame" => match self.v4.frame(params) {
                Ok(FrameOutcome::Applied(payload)) => {
                    let mut cx = conversation::Context {
                        tools: &mut self.tools,
                        workspace: &self.workspace,
                    };
                    let actions = self.conversation.apply(payload, &mut cx);
                    self.applied(actions, effects);
                }
                Ok(FrameOutcome::Skipped(why)) => {
                    effects.actions.push(Action::Ignore(why.to_string()))
                }
                Ok(FrameOutcome::Gap(why)) => {
                    let Some(sid) = self.id.clone() else { return };
                    self.announced
                        .push(("v4/conversation/resync".to_string(), self.v4.resync_params(&sid)));
                    effects.requests += 1;
                    effects.actions.push(Action::Ignore(format!("{why}: resync")));
                }
                Err(error) => effects.actions.push(Action::Terminal(Terminal::Broken(error))),
            },
            other => effects.actions.push(Action::Ignore(format!("notification {other}"))),
        }
    }

    /// What a V4 frame applied to the conversation shows; a turn end the legacy stream gave
    /// is let through once the V4 turn header has closed.
    fn applied(&mut self, actions: Result<Vec<Action>, MapperError>, effects: &mut Effects) {
        match actions {
            Ok(actions) => {
                let actions: Vec<Action> =
                    actions.into_iter().filter_map(|a| self.mode_seen(a)).collect();
                if actions.is_empty() {
                    effects.actions.push(Action::Ignore("v4 frame applied".into()));
                }
                effects.actions.extend(actions);
            }
            Err(error) => {
                effects.actions.push(Action::Terminal(Terminal::Broken(error)));
                return;
            }
        }
        if self.conversation.turn_closed()
            && let Some(end) = self.pending_terminal.take()
        {
            effects.actions.push(Action::Terminal(end));
        }
    }

    /// A mode the client already has is not announced again (the V4 state repeats the mode a
    /// `set_mode` just switched to); any other mode is now the session's.
    fn mode_seen(&mut self, action: Action) -> Option<Action> {
        let Action::Update(update) = &action else { return Some(action) };
        // Read only when it can be one (not a text chunk, each of which came here as a tree).
        if !update.contains("current_mode_update") {
            return Some(action);
        }
        let Ok(value) = serde_json::from_str::<Value>(update) else { return Some(action) };
        if value.get("sessionUpdate").and_then(Value::as_str) != Some("current_mode_update") {
            return Some(action);
        }
        let mode = value.get("currentModeId").and_then(Value::as_str).map(str::to_string);
        if mode == self.mode {
            return None;
        }
        self.mode = mode;
        Some(action)
    }

    fn reverse_request(&mut self, id: Value, method: &str, params: &Value, effects: &mut Effects) {
        let outcome = match method {
            "interaction/requestPermission" => self.permission(id.clone(), params, effects),
            "interaction/requestUserInput" => self.user_input(id.clone(), params, effects),
            "interaction/requestProviderRuntimeHeaders" => {
                interactions::provider_headers(&id, params).map(|write| {
                    effects.writes.push(write);
                    effects
                        .actions
                        .push(Action::Ignore("provider runtime headers answered".to_string()));
                })
            }
            other => {
                // Never silence: ZCode gets an error, and the turn fails saying what was asked.
                effects.writes.push(NativeWrite::new(
                    "unknown request",
                    wire::error_reply(&id, -32601, &format!("zcode-acp does not serve {other}")),
                ));
                effects.actions.push(Action::Terminal(Terminal::Broken(MapperError::new(
                    ErrorKind::Unsupported,
                    format!("ZCode asked zcode-acp for {other}, which it does not know"),
                ))));
                Ok(())
            }
        };
        if let Err(error) = outcome {
            effects.writes.push(NativeWrite::new(
                "malformed request",
                wire::error_reply(&id, -32602, &error.message),
            ));
            effects.actions.push(Action::Terminal(Terminal::Broken(error)));
        }
    }

    /// A repeat of a known interaction: newest id kept, nothing asked twice.
    fn reannounce(&mut self, key: &str, id: &Value, effects: &mut Effects) -> bool {
        match self.interactions.get_mut(key) {
            Some(pending) => {
                pending.reverse_id = id.clone();
                effects.actions.push(Action::Ignore("re-announced interaction".to_string()));
                true
            }
            None => false,
        }
    }

    fn permission(
        &mut self,
        id: Value,
        params: &Value,
        effects: &mut Effects,
    ) -> Result<(), MapperError> {
        let request_id = params.get("requestId").and_then(Value::as_str).unwrap_or_default();
        let key = format!("permission:{request_id}");
        if self.reannounce(&key, &id, effects) {
            return Ok(());
        }
        let tool_call =
            params.get("toolCallId").and_then(Value::as_str).unwrap_or_default().to_string();
        let input = self.tools.input(&tool_call).cloned();
        let (pending, request, deny) =
            interactions::permission(&id, params, &self.workspace, input.as_ref())?;
        if !self.running || self.cancelled {
            // After a stop ZCode may keep asking while it winds down: deny, never ask.
            let answer = interactions::answer(
                &pending.kind,
                &zcode_contract::InteractionOutcome::Unavailable("no running turn".into()),
            )?;
            effects.writes.push(interactions::reply_write(&pending, &answer));
            effects
                .actions
                .push(Action::Ignore("permission outside a running turn denied".to_string()));
            self.interactions.insert(key, Pending { answered: true, ..pending });
            return Ok(());
        }
        self.tools.set(
            &tool_call,
            params.get("toolName").and_then(Value::as_str),
            params.get("input"),
        );
        if let Some(announce) = self.tools.announce(&tool_call, &self.workspace) {
            effects.actions.push(Action::Update(text(&announce)));
        }
        self.interactions.insert(key.clone(), pending);
        effects.actions.push(Action::Interaction(Interaction {
            key,
            request: InteractionRequest::Permission(PermissionRequest {
                request: interactions::request_text(&request),
                deny_option: deny,
            }),
        }));
        Ok(())
    }

    fn user_input(
        &mut self,
        id: Value,
        params: &Value,
        effects: &mut Effects,
    ) -> Result<(), MapperError> {
        let request_id = params.get("requestId").and_then(Value::as_str).unwrap_or_default();
        let key = format!("input:{request_id}");
        if self.reannounce(&key, &id, effects) {
            return Ok(());
        }
        let (pending, form) = interactions::user_input(&id, params)?;
        // A client without forms is the core's to refuse: it declines natively and fails the
        // turn, so a question nobody could see never ends as if it had been answered.
        let request = if !self.running || self.cancelled {
            InteractionRequest::Headless(
                "ZCode asked a question outside a running turn".to_string(),
            )
        } else {
            InteractionRequest::Elicitation(text(&form))
        };
        self.interactions.insert(key.clone(), pending);
        effects.actions.push(Action::Interaction(Interaction { key, request }));
        Ok(())
    }
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
        self.start_op(op_id, op, first).unwrap_or_else(|e| Step::Done(Err(e)))
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, first: u64) -> Step {
        self.resume_op(op_id, reply, first).unwrap_or_else(|e| Step::Done(Err(e)))
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
            .map(|(i, (method, params))| request(first + i as u64, &method, params))
            .collect();
        Outgoing { requests, ..Outgoing::default() }
    }
}

#[cfg(test)]
mod tests;
