//! Session operations as small state machines: each step sends one native request and the
//! reply decides the next step or the outcome. The one exception streams: a `session/load`
//! sends its replayed history in bounded pages, each a step that waits for nothing, before it
//! subscribes (the host delivers the history in one reply; the pages keep any one step small).
//!
//! Prompts, cancel, finish-turn, interaction answers, close and the event stream are the same
//! in every generation of the desktop host and live here. Opening a session, modes and config
//! options differ: a [`Generation`] drives those steps with stages of its own, and hands the
//! opened native session back ([`GenStep::Opened`]) to be bound and subscribed here.

use serde_json::{Value, json};
use zcode_mapper_sdk::Mapped;
use zcode_mapper_sdk::acp::params::{ConfigChange, McpServer, SessionParams};
use zcode_mapper_sdk::acp::prompt::Block;
use zcode_mapper_sdk::contract::{
    ErrorKind, InteractionAnswer, MapperError, NativeData, NativeReply, OpResult, Outgoing,
    SessionInit,
};
use zcode_mapper_sdk::ops::{Next, Pager};

use crate::events::{self, Reader};
use crate::final_read;
use crate::history;
use crate::interactions;
use crate::ops::{self, Outbound};
use crate::prompt;
use crate::settings::{Publisher, Snapshot, SnapshotRules};
use crate::state::{Bound, State, TurnPhase};
use zcode_mapper_sdk::ids::derived_uuid;
use zcode_mapper_sdk::json::{error, internal, invalid_params, text};

pub use zcode_mapper_sdk::acp::params::OpenKind;

/// A checked `session/new`, `session/load` or `session/resume` request.
#[derive(Clone, Debug)]
pub struct OpenRequest {
    pub kind: OpenKind,
    /// The session to load or resume (`None` for create).
    pub session_id: Option<String>,
    /// The client's MCP servers in the host's shapes.
    pub mcp_servers: Value,
}

impl OpenRequest {
    /// The native method whose snapshot opens the session.
    pub fn source(&self) -> &'static str {
        if self.kind == OpenKind::Create { "createSession" } else { "resumeSession" }
    }
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

    /// `session/set_config_option` with the change it asks for.
    fn set_config_option(
        &mut self,
        state: &State,
        change: &ConfigChange,
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

/// Where a waiting session operation is: in a step of the generation's, or in one of the
/// steps every generation shares.
pub enum Stage<S> {
    Generation(S),
    /// A `session/load` streams its history page by page before it subscribes.
    Replay {
        rest: Pager,
    },
    Subscribe {
        kind: OpenKind,
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

/// What an operation does next, before the core has handed out the id of its request (a
/// short-lived return value, so its size does not matter).
#[allow(clippy::large_enum_variant)]
enum Flow<S> {
    /// Stream `updates`, then send `outbound` (if any) and wait in `stage`: for its reply, or
    /// for nothing when there is no request.
    Send {
        stage: Stage<S>,
        updates: Vec<String>,
        outbound: Option<Outbound>,
        routes_added: Vec<String>,
        routes_removed: Vec<String>,
    },
    Done(OpResult),
}

fn send<S>(stage: Stage<S>, outbound: Outbound) -> Flow<S> {
    Flow::Send {
        stage,
        updates: Vec::new(),
        outbound: Some(outbound),
        routes_added: Vec::new(),
        routes_removed: Vec::new(),
    }
}

/// A finished operation: the ACP response and the updates that go with it (before the
/// response, or right after it for create, load and resume).
pub fn done(response: Value, updates: Vec<String>) -> OpResult {
    OpResult { response: text(&response), updates }
}

/// The mapping state of one native session, driven by generation `G`.
pub struct Session<G: Generation> {
    state: State,
    generation: G,
    /// The session a load or resume asked for, while it is being reopened.
    opening: Option<String>,
}

impl<G: Generation + Default> Session<G> {
    pub fn new(init: &SessionInit) -> Self {
        Self {
            state: State::new(init.workspace.clone(), init.client),
            generation: G::default(),
            opening: None,
        }
    }
}

impl<G: Generation> Session<G> {
    fn workspace(&self) -> &str {
        &self.state.workspace
    }

    /// A generation step as a step of this session.
    fn generation_step(&mut self, step: GenStep<G::Stage>) -> Result<Flow<G::Stage>, MapperError> {
        match step {
            GenStep::Send { stage, outbound } => Ok(send(Stage::Generation(stage), outbound)),
            GenStep::Done(result) => Ok(Flow::Done(result)),
            GenStep::Opened { request, snapshot } => self.opened(request, snapshot),
        }
    }

    // ----- create / load / resume ------------------------------------------------------------

    fn open_session(&mut self, params: SessionParams) -> Result<Flow<G::Stage>, MapperError> {
        if !params.additional_directories.is_empty() {
            return Err(invalid_params(
                "Installed ZCode host does not support ACP additionalDirectories",
            ));
        }
        if params.system_prompt {
            return Err(error(
                ErrorKind::Unsupported,
                "Installed ZCode host does not support ACP systemPrompt",
            ));
        }
        if self.state.bound.is_some() {
            return Err(internal("This session resource is already bound to a native session"));
        }
        self.opening = params.session_id.clone();
        let request = OpenRequest {
            kind: params.kind,
            session_id: params.session_id,
            mcp_servers: mcp_servers(&params.mcp_servers),
        };
        let step = self.generation.open(&self.state, request)?;
        self.generation_step(step)
    }

    /// The native session is open: check it is the one asked for, then subscribe.
    fn opened(
        &mut self,
        request: OpenRequest,
        snapshot: Snapshot,
    ) -> Result<Flow<G::Stage>, MapperError> {
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
        // Converted whole before anything streams: a history that cannot be replayed fails
        // the load without showing the client part of it.
        let replay = match request.kind {
            OpenKind::Load => history::replay(&snapshot.messages, &workspace)?,
            _ => Vec::new(),
        };
        let native_id = snapshot.session.session_id.clone();
        self.state.settings.replace(snapshot);
        let subscription_id = self.state.next_subscription_id(&native_id);
        self.state.bound = Some(Bound { session_id: native_id, subscription_id });
        self.replay_page(request.kind, Pager::new(replay))
    }

    /// Streams the next page of a load's history; the last page goes with the subscribe.
    fn replay_page(
        &mut self,
        kind: OpenKind,
        mut rest: Pager,
    ) -> Result<Flow<G::Stage>, MapperError> {
        let updates = rest.next_page();
        if !rest.is_empty() {
            return Ok(Flow::Send {
                stage: Stage::Replay { rest },
                updates,
                outbound: None,
                routes_added: Vec::new(),
                routes_removed: Vec::new(),
            });
        }
        let bound = self.state.bound()?.clone();
        let outbound = Outbound::Subscribe {
            subscription_id: bound.subscription_id.clone(),
            workspace: self.workspace().to_string(),
            session_id: bound.session_id,
        };
        Ok(Flow::Send {
            stage: Stage::Subscribe { kind },
            updates,
            outbound: Some(outbound),
            routes_added: vec![bound.subscription_id],
            routes_removed: Vec::new(),
        })
    }

    /// A step that waited for no reply (a page of history) goes on.
    fn streamed(&mut self, stage: Stage<G::Stage>) -> Result<Flow<G::Stage>, MapperError> {
        match stage {
            Stage::Replay { rest } => self.replay_page(OpenKind::Load, rest),
            _ => Err(internal("This operation step waits for a native reply")),
        }
    }

    fn subscribed(&mut self, kind: OpenKind, result: Value) -> Result<Flow<G::Stage>, MapperError> {
        if let Err(problem) = ops::check_acknowledged(&result, "subscribed", "__subscribe") {
            self.state.bound = None;
            return Err(problem);
        }
        let session_id = self.state.session_id()?.to_string();
        let modes = self.generation.mode_state(&self.state);
        let config_options = self.state.settings.config_options(&mut self.generation);
        let plan_operations = self.state.plan_operations();
        Ok(Flow::Done(match kind {
            OpenKind::Create => {
                let updates = self.metadata_updates(plan_operations);
                done(
                    json!({"sessionId": session_id, "modes": modes, "configOptions": config_options}),
                    updates,
                )
            }
            OpenKind::Load => {
                let updates = self.metadata_updates(plan_operations);
                done(json!({"modes": modes, "configOptions": config_options}), updates)
            }
            OpenKind::Resume => {
                done(json!({"modes": modes, "configOptions": config_options}), Vec::new())
            }
            // The task protocol cannot fork (its contract offers no `session/fork`).
            OpenKind::Fork => return Err(internal("The task protocol cannot fork sessions")),
        }))
    }

    fn metadata_updates(&mut self, plan_operations: bool) -> Vec<String> {
        self.state.settings.metadata_updates(plan_operations, &mut self.generation)
    }

    // ----- prompt turns --------------------------------------------------------------------

    fn start_turn(&mut self, blocks: Vec<Block>) -> Result<Flow<G::Stage>, MapperError> {
        let session_id = self.state.session_id()?.to_string();
        let native = prompt::convert(blocks)?;
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

    fn stop(&mut self) -> Result<Flow<G::Stage>, MapperError> {
        let session_id = self.state.session_id()?.to_string();
        if self.state.running() {
            self.state.cancelled = true;
        }
        Ok(send(Stage::Cancel, ops::stop_generation(self.workspace(), &session_id)))
    }

    fn finish(&mut self) -> Result<Flow<G::Stage>, MapperError> {
        let session_id = self.state.session_id()?.to_string();
        Ok(send(Stage::FinishUsage, ops::get_task_token_usage(self.workspace(), &session_id)))
    }

    // ----- settings ----------------------------------------------------------------------------

    // ----- close -------------------------------------------------------------------------------

    fn close_session(&mut self) -> Result<Flow<G::Stage>, MapperError> {
        let Some(bound) = &self.state.bound else {
            return Ok(Flow::Done(done(json!({}), Vec::new())));
        };
        Ok(send(Stage::CloseSession, ops::close_session(self.workspace(), &bound.session_id)))
    }

    // ----- replies -----------------------------------------------------------------------------

    fn advance(
        &mut self,
        stage: Stage<G::Stage>,
        result: Result<Value, MapperError>,
    ) -> Result<Flow<G::Stage>, MapperError> {
        let plan_operations = self.state.plan_operations();
        match stage {
            Stage::Generation(stage) => {
                let step = self.generation.advance(&mut self.state, stage, result)?;
                self.generation_step(step)
            }
            Stage::Replay { .. } => Err(internal("A history page waits for no native reply")),
            Stage::Subscribe { kind } => self.subscribed(kind, result?),
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
                    Ok(()) => Ok(Flow::Done(done(json!({}), updates))),
                    Err(problem) => {
                        self.state.phase = TurnPhase::Idle;
                        Err(problem)
                    }
                }
            }
            Stage::Cancel => {
                result?;
                // Taken down only once the stop was accepted; otherwise the turn's end does it.
                Ok(Flow::Done(done(json!({}), self.state.plan.remove(plan_operations))))
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
                Ok(Flow::Done(done(usage, updates)))
            }
            Stage::Answer { mut updates, plan_approved } => {
                result?;
                if plan_approved {
                    updates.extend(self.generation.plan_approved(&mut self.state));
                }
                Ok(Flow::Done(done(json!({}), updates)))
            }
            Stage::CloseSession => {
                // Unsubscribe even if the host failed to close, then report the failure.
                let subscription_id = self.state.bound()?.subscription_id.clone();
                Ok(Flow::Send {
                    stage: Stage::Unsubscribe { close_error: result.err() },
                    updates: Vec::new(),
                    outbound: Some(Outbound::Unsubscribe {
                        subscription_id: subscription_id.clone(),
                    }),
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
                    None => Ok(Flow::Done(done(json!({}), Vec::new()))),
                }
            }
        }
    }
}

impl<G: Generation + Default + 'static> zcode_mapper_sdk::Session for Session<G> {
    /// The task protocol's events never ask the mapper to send anything.
    type Tag = ();
    type Stage = Stage<G::Stage>;

    fn new(init: &SessionInit) -> Self {
        Session::new(init)
    }

    fn open(&mut self, params: SessionParams, id: u64) -> Result<Next<Self::Stage>, MapperError> {
        let flow = self.open_session(params)?;
        Ok(flow.next(id))
    }

    fn prompt(&mut self, prompt: Vec<Block>, id: u64) -> Result<Next<Self::Stage>, MapperError> {
        Ok(self.start_turn(prompt)?.next(id))
    }

    fn cancel(&mut self, id: u64) -> Result<Next<Self::Stage>, MapperError> {
        Ok(self.stop()?.next(id))
    }

    fn finish_turn(&mut self, id: u64) -> Result<Next<Self::Stage>, MapperError> {
        Ok(self.finish()?.next(id))
    }

    fn set_mode(&mut self, mode_id: String, id: u64) -> Result<Next<Self::Stage>, MapperError> {
        let step = self.generation.set_mode(&self.state, &mode_id)?;
        Ok(self.generation_step(step)?.next(id))
    }

    fn set_config_option(
        &mut self,
        change: ConfigChange,
        id: u64,
    ) -> Result<Next<Self::Stage>, MapperError> {
        let step = self.generation.set_config_option(&self.state, &change)?;
        Ok(self.generation_step(step)?.next(id))
    }

    fn answer(
        &mut self,
        answer: &InteractionAnswer,
        id: u64,
    ) -> Result<Next<Self::Stage>, MapperError> {
        let answered = interactions::answer(&mut self.state, answer)?;
        let stage =
            Stage::Answer { updates: answered.updates, plan_approved: answered.plan_approved };
        Ok(send(stage, answered.outbound).next(id))
    }

    fn close(&mut self, id: u64) -> Result<Next<Self::Stage>, MapperError> {
        Ok(self.close_session()?.next(id))
    }

    fn resume(
        &mut self,
        stage: Self::Stage,
        reply: Option<(&NativeReply, &str)>,
        id: u64,
    ) -> Result<Next<Self::Stage>, MapperError> {
        let Some((reply, label)) = reply else {
            return Ok(self.streamed(stage)?.next(id));
        };
        let result = match &stage {
            // The turn's whole message comes with it; only its parts' types are read.
            Stage::FinishSnapshot { .. } => final_read::snapshot_value(reply, label),
            _ => ops::reply_value(reply, label),
        };
        let flow = match (result, &self.opening) {
            // The host's error for an unknown session is free text: ask for its sessions.
            (Err(failure), Some(session_id))
                if label == "agent.resumeSession" && failure.kind == ErrorKind::Native =>
            {
                let stage = Stage::ConfirmMissing { session_id: session_id.clone(), failure };
                send(stage, ops::list_sessions(self.workspace()))
            }
            (result, _) => self.advance(stage, result)?,
        };
        Ok(flow.next(id))
    }

    /// Maps one routed native event (errors outside a turn are returned, not swallowed).
    fn map_event(&mut self, payload: &NativeData) -> Result<Mapped<()>, MapperError> {
        let rules = self.generation.snapshot_rules();
        let reader = Reader { rules, publisher: &mut self.generation };
        events::map_events(&mut self.state, reader, payload).map(Mapped::from)
    }
}

impl<S> Flow<S> {
    /// The contract's next step, with `id` for the request.
    fn next(self, id: u64) -> Next<Stage<S>> {
        match self {
            Flow::Send { stage, updates, outbound, routes_added, routes_removed } => {
                let requests = outbound.map(|o| o.into_request(id)).into_iter().collect();
                let outgoing = Outgoing {
                    updates,
                    routes_added,
                    routes_removed,
                    writes: Vec::new(),
                    requests,
                };
                Next::Wait(stage, outgoing)
            }
            Flow::Done(result) => Next::Done(result),
        }
    }
}

/// The client's MCP servers in the host's shapes: stdio `{name, command, args, env}`, http/sse
/// `{type, name, url, headers}` (name/value pairs kept as given).
fn mcp_servers(servers: &[McpServer]) -> Value {
    let pairs = |pairs: &[(String, String)]| -> Vec<Value> {
        pairs.iter().map(|(name, value)| json!({"name": name, "value": value})).collect()
    };
    let converted = servers.iter().map(|server| match server {
        McpServer::Stdio { name, command, args, env } => {
            json!({"name": name, "command": command, "args": args, "env": pairs(env)})
        }
        McpServer::Http { name, url, headers } | McpServer::Sse { name, url, headers } => {
            json!({"type": server.transport(), "name": name, "url": url, "headers": pairs(headers)})
        }
    });
    Value::Array(converted.collect())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use zcode_mapper_sdk::contract::{Action, ErrorKind, SessionOp, Step, StopReason, Terminal};

    use zcode_mapper_sdk::SessionMachine as _;

    use crate::test_support::*;

    #[test]
    fn refuses_unsupported_session_parameters_before_any_request() {
        let cases = [
            (
                json!({"cwd": "/w", "mcpServers": [], "additionalDirectories": ["/x"]}),
                ErrorKind::InvalidParams,
                "Installed ZCode host does not support ACP additionalDirectories",
            ),
            (
                json!({"cwd": "/w", "mcpServers": [], "systemPrompt": {"mode": "append", "content": []}}),
                ErrorKind::Unsupported,
                "Installed ZCode host does not support ACP systemPrompt",
            ),
            (
                json!({"cwd": "/w", "mcpServers": [{"type": "acp", "name": "x", "id": "y"}]}),
                ErrorKind::Unsupported,
                "Unsupported MCP server type: acp",
            ),
            (
                json!({"cwd": "/w", "mcpServers": [{"name": "x"}]}),
                ErrorKind::InvalidParams,
                "MCP server: missing field `command`",
            ),
        ];
        for (params, kind, message) in cases {
            let run =
                Driver::<Plain>::new(true, true).run(SessionOp::Create(params.to_string()), vec![]);
            assert!(run.requests.is_empty());
            assert_eq!((run.error().kind, run.error().message.as_str()), (kind, message));
        }
        let run = Driver::<Plain>::new(true, true).run(SessionOp::Create("nope".into()), vec![]);
        assert_eq!(run.error().message, "session/new params is not valid JSON");
    }

    fn history_snapshot() -> Value {
        let mut snapshot = snapshot_json();
        snapshot["messages"] = json!([
            {"info": {"messageId": "m1", "role": "user"}, "parts": [
                {"type": "text", "text": "Read a.rs"},
                {"type": "file", "url": "file:///w/a.rs", "filename": "a.rs", "mime": "text/x-rust"}
            ]},
            {"info": {"messageId": "m2", "role": "assistant"}, "parts": [
                {"type": "step-start"},
                {"type": "reasoning", "text": "Looking"},
                {"type": "tool", "callId": "c1", "tool": "Read", "state": {"status": "completed", "title": "Read a.rs", "input": {"file_path": "/w/a.rs"}, "output": "fn main() {}"}},
                {"type": "tool", "callId": "c2", "tool": "Bash", "state": {"status": "error", "input": {"command": "false"}, "error": "exit 1"}},
                {"type": "text", "text": "Done"}
            ]}
        ]);
        snapshot
    }

    #[test]
    fn loads_a_session_with_its_history() {
        let mut driver = Driver::<Plain>::new(true, true);
        let params = json!({"cwd": "/w", "sessionId": "session-1", "mcpServers": []});
        let run = driver.run(
            SessionOp::Load(params.to_string()),
            vec![
                ok(json!({"available": true})),
                ok(history_snapshot()),
                ok(json!({"subscribed": true})),
            ],
        );
        assert_eq!(run.methods(), ["agent.initialize", "agent.resumeSession", "__subscribe"]);
        assert_eq!(
            run.params(1),
            &json!({"workspacePath": "/w", "sessionId": "session-1", "mcpServers": []})
        );
        let response = run.response();
        zcode_mapper_sdk::acp_check::load_session_response(&response);
        assert!(response.get("sessionId").is_none());
        // The history streams before the response, in one page with the subscribe.
        assert_eq!(run.pages, 1);
        let replay = &run.streamed;
        assert_eq!(
            replay[0],
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Read a.rs"}, "messageId": "m1"})
        );
        assert_eq!(
            replay[1],
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs", "mimeType": "text/x-rust"}, "messageId": "m1"})
        );
        assert_eq!(
            replay[2],
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Looking"}, "messageId": "m2"})
        );
        assert_eq!(
            replay[3],
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read a.rs", "kind": "read", "status": "completed",
            "rawInput": {"file_path": "/w/a.rs"}, "rawOutput": "fn main() {}", "locations": [{"path": "/w/a.rs"}],
            "content": [{"type": "content", "content": {"type": "text", "text": "fn main() {}"}}]})
        );
        assert_eq!(
            replay[4],
            json!({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "Bash: false", "kind": "execute", "status": "failed",
            "rawInput": {"command": "false"}, "rawOutput": "exit 1",
            "content": [{"type": "content", "content": {"type": "text", "text": "exit 1"}}]})
        );
        assert_eq!(
            replay[5],
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done"}, "messageId": "m2"})
        );
        assert_eq!(replay.len(), 6);
        // Session metadata follows the response.
        assert_eq!(
            update_kinds(&run.updates()),
            [
                "available_commands_update",
                "config_option_update",
                "current_mode_update",
                "session_info_update",
                "usage_update",
                "plan_update",
            ]
        );
    }

    #[test]
    fn streams_a_long_history_in_bounded_pages_before_subscribing() {
        let mut snapshot = snapshot_json();
        let parts: Vec<Value> =
            (0..250).map(|n| json!({"type": "text", "text": format!("line {n}")})).collect();
        snapshot["messages"] =
            json!([{"info": {"messageId": "m1", "role": "user"}, "parts": parts}]);
        let mut driver = Driver::<Plain>::new(true, true);
        let params = json!({"cwd": "/w", "sessionId": "session-1", "mcpServers": []});
        driver.session.start(1, &SessionOp::Load(params.to_string()), 1);
        driver.session.resume(1, Some(&reply(1, json!({"available": true}))), 2);
        let mut pages = Vec::new();
        let mut step = driver.session.resume(1, Some(&reply(2, snapshot)), 3);
        loop {
            let Step::Wait(outgoing) = step else { panic!("load ended early: {step:?}") };
            pages.push(outgoing.updates.len());
            if !outgoing.requests.is_empty() {
                // The last page goes out with the subscribe and its route, nothing before.
                assert_eq!(outgoing.requests[0].label, "__subscribe");
                assert_eq!(outgoing.routes_added, ["zcode-acp-session-1-1"]);
                break;
            }
            assert!(outgoing.routes_added.is_empty());
            step = driver.session.resume(1, None, 3);
        }
        assert_eq!(pages, [100, 100, 50]);
        // A reply while a page waits for nothing is refused.
        let mut driver = Driver::<Plain>::new(true, true);
        let mut long = snapshot_json();
        long["messages"] = json!([{"info": {"role": "user"}, "parts": (0..150).map(|n| json!({"type": "text", "text": n.to_string()})).collect::<Vec<_>>()}]);
        driver.session.start(1, &SessionOp::Load(params.to_string()), 1);
        driver.session.resume(1, Some(&reply(1, json!({"available": true}))), 2);
        driver.session.resume(1, Some(&reply(2, long)), 3);
        let Step::Done(Err(problem)) = driver.session.resume(1, Some(&reply(3, json!({}))), 4)
        else {
            panic!("a reply to a page is an error")
        };
        assert_eq!(problem.message, "Operation 1 waits for no reply, got reply 3");
    }

    fn reply(id: u64, value: Value) -> zcode_mapper_sdk::contract::NativeReply {
        zcode_mapper_sdk::contract::NativeReply { id, body: ok(value) }
    }

    #[test]
    fn resumes_without_replay() {
        let mut driver = Driver::<Plain>::new(true, true);
        let params = json!({"cwd": "/w", "sessionId": "session-1", "mcpServers": []});
        let run = driver.run(
            SessionOp::Resume(params.to_string()),
            vec![
                ok(json!({"available": true})),
                ok(history_snapshot()),
                ok(json!({"subscribed": true})),
            ],
        );
        assert!(run.ok().updates.is_empty());
        assert_eq!(run.response()["modes"]["currentModeId"], "build");
    }

    #[test]
    fn refuses_foreign_or_broken_history() {
        let params = json!({"cwd": "/w", "sessionId": "session-1", "mcpServers": []}).to_string();
        let mut foreign = history_snapshot();
        foreign["session"]["workspace"]["workspacePath"] = json!("/elsewhere");
        let run = Driver::<Plain>::new(true, true).run(
            SessionOp::Load(params.clone()),
            vec![ok(json!({"available": true})), ok(foreign)],
        );
        assert_eq!(
            (run.error().kind, run.error().message.as_str()),
            (ErrorKind::InvalidParams, "Session belongs to a different workspace")
        );
        let mut odd = history_snapshot();
        odd["messages"][1]["parts"][2]["state"]["status"] = json!("paused");
        let run = Driver::<Plain>::new(true, true)
            .run(SessionOp::Load(params.clone()), vec![ok(json!({"available": true})), ok(odd)]);
        assert_eq!(
            (run.error().kind, run.error().message.as_str()),
            (ErrorKind::Protocol, "Unsupported persisted tool status: paused")
        );
        let mut malformed = history_snapshot();
        malformed["messages"][1]["parts"][2] =
            json!({"type": "tool", "state": {"status": "completed"}});
        let run = Driver::<Plain>::new(true, true)
            .run(SessionOp::Load(params), vec![ok(json!({"available": true})), ok(malformed)]);
        assert_eq!(run.error().message, "Persisted tool part is malformed");
    }

    #[test]
    fn closes_and_unsubscribes() {
        let mut driver = Driver::<Plain>::new(true, true);
        driver.create();
        let run =
            driver.run(SessionOp::Close, vec![ok(Value::Null), ok(json!({"unsubscribed": true}))]);
        assert_eq!(run.methods(), ["agent.closeSession", "__unsubscribe"]);
        assert_eq!(run.params(0), &json!({"workspacePath": "/w", "sessionId": "session-1"}));
        assert_eq!(run.requests[1]["params"], json!({"subscriptionId": "zcode-acp-session-1-1"}));
        assert_eq!(run.routes_removed, ["zcode-acp-session-1-1"]);
        assert_eq!(run.response(), json!({}));
        // Closing again (or a never-opened session) needs no host traffic.
        assert!(driver.run(SessionOp::Close, vec![]).requests.is_empty());
    }

    #[test]
    fn unsubscribes_even_when_the_host_cannot_close() {
        let mut driver = Driver::<Plain>::new(true, true);
        driver.create();
        let run = driver
            .run(SessionOp::Close, vec![native_error("gone"), ok(json!({"unsubscribed": true}))]);
        assert_eq!(run.routes_removed, ["zcode-acp-session-1-1"]);
        assert_eq!(run.error().message, "gone");
    }

    #[test]
    fn sends_prompts_with_metadata_first_and_fresh_input_ids() {
        let mut driver = Driver::<Plain>::new(true, true);
        driver.create();
        let params = json!({"sessionId": "session-1", "prompt": [
            {"type": "text", "text": "Look at"},
            {"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs"},
        ]});
        let run =
            driver.run(SessionOp::Prompt(params.to_string()), vec![ok(json!({"accepted": true}))]);
        assert_eq!(run.methods(), ["agent.sendPrompt"]);
        let sent = run.params(0);
        assert_eq!(sent["content"], "Look at");
        assert_eq!(
            sent["attachments"],
            json!([{"kind": "file", "filename": "a.rs", "mimeType": "application/octet-stream", "localPath": "/w/a.rs"}])
        );
        let first_input = sent["inputId"].as_str().unwrap().to_string();
        assert_eq!(first_input.len(), 36);
        // Nothing changed since session/new announced the metadata: it is not repeated.
        assert_eq!(run.updates(), Vec::<Value>::new());
        assert_eq!(run.response(), json!({}));
        driver.session_event("turn.completed", json!({"resultType": "success"}));
        let second = driver.prompt("again");
        assert_ne!(second.params(0)["inputId"].as_str().unwrap(), first_input);
    }

    #[test]
    fn refuses_bad_prompt_content_without_sending() {
        let mut driver = Driver::<Plain>::new(true, true);
        driver.create();
        let params = json!({"sessionId": "session-1", "prompt": [{"type": "image", "data": "!!", "mimeType": "image/png"}]});
        let run = driver.run(SessionOp::Prompt(params.to_string()), vec![]);
        assert!(run.requests.is_empty());
        assert_eq!(run.error().kind, ErrorKind::InvalidParams);
        // No turn started: a new prompt is fine.
        assert!(driver.prompt("ok").outcome.is_ok());
    }

    #[test]
    fn reports_a_refused_prompt_and_allows_another() {
        let mut driver = Driver::<Plain>::new(true, true);
        driver.create();
        let params = json!({"sessionId": "session-1", "prompt": [{"type": "text", "text": "x"}]});
        let run =
            driver.run(SessionOp::Prompt(params.to_string()), vec![ok(json!({"accepted": false}))]);
        assert_eq!(run.error().message, "ZCode did not accept the prompt");
        assert!(driver.prompt("again").outcome.is_ok());
    }

    #[test]
    fn cancels_and_ends_cancelled() {
        let mut driver = running(true, true);
        let run = driver.run(SessionOp::Cancel, vec![ok(Value::Null)]);
        assert_eq!(run.methods(), ["task.stopGeneration"]);
        assert_eq!(run.params(0), &json!({"workspacePath": "/w", "taskId": "session-1"}));
        let actions =
            driver.session_event("turn.failed", json!({"error": {"message": "cancelled"}}));
        assert_eq!(actions, [Action::Terminal(Terminal::Stop(StopReason::Cancelled))]);
        let mut driver = running(true, true);
        driver.run(SessionOp::Cancel, vec![ok(Value::Null)]);
        let actions = driver.session_event("turn.completed", json!({"resultType": "success"}));
        assert_eq!(actions, [Action::Terminal(Terminal::Stop(StopReason::Cancelled))]);
    }

    #[test]
    fn finishes_turns_with_usage_and_fresh_metadata() {
        let mut driver = running(true, true);
        driver.session_event("turn.completed", json!({"resultType": "success"}));
        let usage = json!({"sessionId": "session-1", "totalTokens": 30, "inputTokens": 20, "outputTokens": 10, "reasoningTokens": 4, "cacheCreationTokens": 2, "cacheReadTokens": 8});
        let mut renamed = snapshot_json();
        renamed["session"]["title"] = json!("Renamed");
        let run = driver.run(SessionOp::FinishTurn, vec![ok(usage), ok(renamed)]);
        assert_eq!(run.methods(), ["agent.getTaskTokenUsage", "agent.readSession"]);
        assert_eq!(run.params(0), &json!({"workspacePath": "/w", "sessionId": "session-1"}));
        assert_eq!(
            run.params(1),
            &json!({"workspacePath": "/w", "sessionId": "session-1", "deliveryKind": "desktop-continuous", "messageLimit": 1, "afterSeq": 0})
        );
        let response = run.response();
        zcode_mapper_sdk::acp_check::usage(&response);
        assert_eq!(
            response,
            json!({"totalTokens": 30, "inputTokens": 20, "outputTokens": 10, "thoughtTokens": 4, "cachedReadTokens": 8, "cachedWriteTokens": 2})
        );
        assert_eq!(update_kinds(&run.updates()), ["session_info_update"]);
        let run = driver.run(SessionOp::FinishTurn, vec![ok(json!({"totalTokens": 1}))]);
        assert!(
            run.error().message.starts_with("Native result validation failed: getTaskTokenUsage")
        );
    }

    #[test]
    fn rejects_operations_in_the_wrong_state() {
        let mut driver = Driver::<Plain>::new(true, true);
        let prompt =
            json!({"sessionId": "session-1", "prompt": [{"type": "text", "text": "too early"}]})
                .to_string();
        let run = driver.run(SessionOp::Prompt(prompt.clone()), vec![]);
        assert!(run.requests.is_empty());
        assert_eq!(run.error().message, "The native session is not open");
        driver.create();
        let params = json!({"cwd": "/w", "mcpServers": []}).to_string();
        let run = driver.run(SessionOp::Create(params), vec![]);
        assert_eq!(
            run.error().message,
            "This session resource is already bound to a native session"
        );
        let mut driver = running(true, true);
        let run = driver.run(SessionOp::Prompt(prompt), vec![]);
        assert_eq!(run.error().message, "A prompt turn is already running in this session");
    }
}
