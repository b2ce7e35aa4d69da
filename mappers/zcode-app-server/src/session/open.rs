//! Opening a session (create, load, resume, fork): the Agent's capabilities and the `guarded`
//! probe, `session/create` or `session/resume`, a load's history replayed page by page, then
//! the legacy and V4 subscriptions; and closing it (unsubscribe only: ZCode's `session/close`
//! deletes the product session).
//!
//! A fork (`session/fork`) resumes the parent (its workspace checked), reads its newest V4 rows
//! page (`v4/conversation/rowsRange`), sends V4 `forkAssistant` at the newest row that can fork
//! (`zcode_v4::fork`; the legacy `session/fork` is deprecated in 3.15.1 and needs a file
//! checkpoint), and is done with the new session's id; the core then loads it on this session
//! resource like `session/load`. An Agent without V4 cannot fork.

use serde_json::{Value, json};
use zcode_contract::{
    ErrorKind, MapperError, NativeReply, NativeRequest, Outgoing, ReplyBody, SessionOp, Step,
};
use zcode_mapper_sdk::acp::params::McpServer;
use zcode_mapper_sdk::acp::update;
use zcode_mapper_sdk::json::{invalid_params, protocol};
use zcode_v4::acp::mcp_servers;

use super::{AppServerSession, Forking, Op, Stage, done, request, wait};
use crate::account;
use crate::connection::{ok_body, session_route, workspace_ref};
use crate::releases::{self, Profile};
use crate::subscription::Subscription;
use crate::wire::acp_params;

/// History replays stream this many updates a step.
const REPLAY_PAGE: usize = 200;

/// The session's slash commands (`slashCommands` of the session state: name, description,
/// an optional input hint) as an ACP `available_commands_update`; typed as prompt text, ZCode
/// runs them itself.
fn available_commands(state: &Value) -> Option<String> {
    let commands: Vec<update::Command<'_>> = state
        .get("slashCommands")?
        .as_array()?
        .iter()
        .filter_map(|command| {
            Some(update::Command {
                name: command.get("name")?.as_str()?,
                description: command.get("description").and_then(Value::as_str).unwrap_or(""),
                input_hint: command.get("inputHint").and_then(Value::as_str),
            })
        })
        .collect();
    Some(update::available_commands(&commands))
}

impl AppServerSession {
    /// A create, load or resume: the Agent's capabilities first.
    pub(super) fn begin_open(
        &mut self,
        op_id: u64,
        op: &SessionOp,
        params: &str,
        first: u64,
    ) -> Result<Step, MapperError> {
        let params = acp_params(params)?;
        self.closing = false;
        if matches!(op, SessionOp::Fork(_))
            && params
                .get("additionalDirectories")
                .and_then(Value::as_array)
                .is_some_and(|dirs| !dirs.is_empty())
        {
            return Err(invalid_params("ZCode works in the session's cwd only"));
        }
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
        let servers = params.get("mcpServers").and_then(Value::as_array);
        let mcp =
            mcp_servers(&McpServer::read_all(servers.map(Vec::as_slice).unwrap_or_default())?);
        self.mcp = mcp.clone();
        self.ops.insert(
            op_id,
            Op::Opening {
                stage: Stage::Capabilities,
                replay: matches!(op, SessionOp::Load(_)),
                resume,
                mcp,
                pending_updates: Vec::new(),
                fork: match op {
                    SessionOp::Fork(_) => Forking::Parent,
                    _ => Forking::No,
                },
            },
        );
        Ok(wait(vec![request(first, "runtime/capabilities", json!({}))]))
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn opening(
        &mut self,
        op_id: u64,
        stage: Stage,
        replay: bool,
        resume: Option<String>,
        mcp: Value,
        mut pending_updates: Vec<String>,
        fork: Forking,
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
                    fork: fork.clone(),
                },
            );
        };
        match stage {
            Stage::Open | Stage::ForkRows | Stage::ForkCommand if fork != Forking::No => {
                let reply = reply.ok_or_else(|| protocol("fork resumed without a reply"))?;
                let parent = resume.clone().unwrap_or_default();
                let (stage, fork, request) =
                    match self.forking(stage, &fork, &parent, reply, first)? {
                        Ok(next) => next,
                        // Forked: nothing is bound; the core loads the new session next.
                        Err(child) => return Ok(done(json!({"sessionId": child}), Vec::new())),
                    };
                self.ops.insert(
                    op_id,
                    Op::Opening {
                        stage,
                        replay,
                        resume: resume.clone(),
                        mcp: mcp.clone(),
                        pending_updates,
                        fork,
                    },
                );
                Ok(wait(vec![request]))
            }
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
                let stage = self.first_open_stage();
                next(self, stage, Vec::new());
                Ok(wait(vec![self.push_or_open(first, resume.as_deref(), &mcp)]))
            }
            Stage::GuardedProbe => {
                let reply = reply.ok_or_else(|| protocol("open resumed without a reply"))?;
                self.profile = self.profile.with_guarded_probe(&reply.body);
                let stage = self.first_open_stage();
                next(self, stage, Vec::new());
                Ok(wait(vec![self.push_or_open(first, resume.as_deref(), &mcp)]))
            }
            Stage::AccountPush => {
                let reply =
                    reply.ok_or_else(|| protocol("account push resumed without a reply"))?;
                self.account_pushed(&reply.body)?;
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
                self.check_account_models(&state);
                self.commands = available_commands(&state);
                self.v4 = Subscription::new(&sid);
                self.id = Some(sid.clone());
                let mut outgoing =
                    Outgoing { routes_added: vec![session_route(&sid)], ..Outgoing::default() };
                let (stage, method, params) = if replay {
                    (Stage::Messages, "session/messages", json!({"sessionId": sid}))
                } else {
                    let params = json!({"sessionId": sid, "deliveryKind": "desktop-continuous", "includeSnapshot": false});
                    (Stage::Subscribe, "session/subscribe", params)
                };
                next(self, stage, Vec::new());
                outgoing.requests.push(request(first, method, params));
                Ok(Step::Wait(outgoing))
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
                self.event_seq = super::subscribed_seq(&result);
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
            Stage::ForkRows | Stage::ForkCommand => Err(protocol("fork step out of order")),
        }
    }

    /// One step of a fork: the parent's `session/resume` answered (its workspace checked; its
    /// rows page next), the rows page read (the command next), the command acknowledged
    /// (`Err`: the new session's id).
    #[allow(clippy::type_complexity)]
    fn forking(
        &mut self,
        stage: Stage,
        fork: &Forking,
        parent: &str,
        reply: &NativeReply,
        first: u64,
    ) -> Result<Result<(Stage, Forking, NativeRequest), String>, MapperError> {
        match (stage, fork) {
            (Stage::Open, _) => {
                let state = ok_body(&reply.body, "session/resume")?;
                if let Some(own) =
                    state.pointer("/session/workspace/workspacePath").and_then(Value::as_str)
                    && own != self.workspace
                {
                    return Err(invalid_params(format!(
                        "The session belongs to the workspace {own}, not {}",
                        self.workspace
                    )));
                }
                let rows = request(
                    first,
                    "v4/conversation/rowsRange",
                    json!({"sessionId": parent, "limit": 200}),
                );
                Ok(Ok((Stage::ForkRows, Forking::Parent, rows)))
            }
            (Stage::ForkRows, _) => {
                let page = ok_body(&reply.body, "v4/conversation/rowsRange").map_err(|e| {
                    MapperError::new(
                        e.kind,
                        format!("This ZCode Agent cannot fork (no V4 conversation): {}", e.message),
                    )
                })?;
                let target = zcode_v4::fork::target(&page)?;
                let command = zcode_v4::fork::command(parent, &target, first);
                let id = command.command_id.clone();
                let envelope = command.envelope(parent, Some(target.revision), json!(0));
                let send = request(first, "v4/command", envelope);
                Ok(Ok((Stage::ForkCommand, Forking::Command(id), send)))
            }
            (Stage::ForkCommand, Forking::Command(id)) => {
                let ack = ok_body(&reply.body, "v4/command")?;
                let ack = zcode_v4::command::parse_ack(&ack, id)?;
                Ok(Err(zcode_v4::fork::forked(&ack)?))
            }
            _ => Err(protocol("fork step out of order")),
        }
    }

    /// `session/create`, or `session/resume` of the session being loaded or resumed.
    pub(super) fn open_request(
        &self,
        first: u64,
        resume: Option<&str>,
        mcp: &Value,
    ) -> NativeRequest {
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

    pub(super) fn opened(
        &mut self,
        created: bool,
        _updates: Vec<String>,
    ) -> Result<Step, MapperError> {
        let updates = self.commands.take().into_iter().collect();
        Ok(done(self.opened_response(created)?, updates))
    }

    pub(super) fn opened_response(&self, with_id: bool) -> Result<Value, MapperError> {
        let mut response = json!({"modes": self.modes(), "configOptions": self.config_options()});
        if let Some(meta) = account::unlisted_meta(&self.account.unlisted) {
            response["_meta"] = meta;
        }
        if with_id {
            response["sessionId"] = json!(self.sid()?);
        }
        Ok(response)
    }

    /// ACP close frees resources and never deletes: the subscriptions end, the route goes.
    pub(super) fn close(&mut self, op_id: u64, first: u64) -> Result<Step, MapperError> {
        let sid = self.sid()?.to_string();
        // ACP close frees resources and never deletes; the Agent's `session/close` deletes
        // the product session (3.15.1 server.ts), so it is never sent.
        let mut outgoing =
            Outgoing { routes_removed: vec![session_route(&sid)], ..Outgoing::default() };
        self.closing = true;
        if let Some(subscription) = self.v4.subscription_id.clone() {
            outgoing.requests.push(request(first, "v4/conversation/unsubscribe", json!({
                "topic": format!("conversation/{sid}"), "subscriptionId": subscription, "connectionId": self.v4.connection_id,
            })));
        }
        self.v4.subscription_id = None;
        self.ops.insert(op_id, Op::Close);
        Ok(Step::Wait(outgoing))
    }

    /// Before the native open: the account push when this session's facts entitle a Coding
    /// Plan (as Desktop pushes before `session/create`, Z3151 `zcodeAgentService.ts`
    /// `ensureAccountProviderConfigSynced`), else the open itself.
    fn push_or_open(&self, first: u64, resume: Option<&str>, mcp: &Value) -> NativeRequest {
        match &self.account.push {
            Some(push) => request(first, "provider/updateAccountConfig", push.clone()),
            None => self.open_request(first, resume, mcp),
        }
    }

    fn first_open_stage(&self) -> Stage {
        match self.account.push {
            Some(_) => Stage::AccountPush,
            None => Stage::Open,
        }
    }

    /// The push's answer: an Agent without the method (`-32601`) lists no plan models, said
    /// in the unlisted reasons; a `receivedRevision` other than the one sent breaks the
    /// protocol (Desktop treats it as an error too).
    fn account_pushed(&mut self, body: &ReplyBody) -> Result<(), MapperError> {
        let sent = self.account.push.as_ref().and_then(|p| p.get("revision")).cloned();
        match body {
            ReplyBody::Error(error) if error.kind == ErrorKind::Unsupported => {
                let why = "this ZCode Agent has no provider/updateAccountConfig".to_string();
                let entitled = std::mem::take(&mut self.account.entitled);
                self.account.unlisted.extend(entitled.into_iter().map(|id| (id, why.clone())));
                Ok(())
            }
            _ => {
                let result = ok_body(body, "provider/updateAccountConfig")?;
                match result.get("receivedRevision") {
                    Some(received) if Some(received) != sent.as_ref() => Err(protocol(format!(
                        "provider/updateAccountConfig received revision {received}, not the one sent"
                    ))),
                    _ => Ok(()),
                }
            }
        }
    }

    /// After the open: an entitled provider whose models the Agent does not list means the
    /// push was received but not applied (`docs/coding-plan.md` F5, F9); it is said, never
    /// retried.
    fn check_account_models(&mut self, state: &Value) {
        // A state without a model list says nothing either way.
        let Some(models) = state.pointer("/settings/model/available").and_then(Value::as_array)
        else {
            return;
        };
        let listed = |provider: &str| {
            models
                .iter()
                .any(|m| m.pointer("/ref/providerId").and_then(Value::as_str) == Some(provider))
        };
        let (kept, ignored): (Vec<String>, Vec<String>) =
            std::mem::take(&mut self.account.entitled).into_iter().partition(|id| listed(id));
        self.account.entitled = kept;
        self.account
            .unlisted
            .extend(ignored.into_iter().map(|id| (id, account::REASON_IGNORED.to_string())));
    }
}
