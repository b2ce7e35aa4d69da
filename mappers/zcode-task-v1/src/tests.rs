//! Session behaviour end to end: operations against scripted host replies, and events.
//! Every ACP object the session emits is checked against the ACP schema.

use serde_json::{Value, json};
use zcode_contract::{
    Action, ClientFeatures, ErrorKind, InteractionAnswer, InteractionOutcome, InteractionRequest,
    MapperError, NativeReply, OpResult, ReplyBody, SessionInit, SessionOp, Step, StopReason,
    Terminal,
};

use crate::TaskV1Session;
use crate::settings_tests::snapshot_json;
use zcode_host_common::acp_check;

/// A session plus a scripted host.
struct Driver {
    session: TaskV1Session,
    next_request: u64,
    next_op: u64,
    seq: u64,
}

/// What one operation did: the native requests it sent (parsed), and its outcome.
struct Run {
    requests: Vec<Value>,
    routes_added: Vec<String>,
    routes_removed: Vec<String>,
    outcome: Result<OpResult, MapperError>,
}

impl Run {
    fn methods(&self) -> Vec<String> {
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

    fn params(&self, index: usize) -> &Value {
        &self.requests[index]["params"]["params"]
    }

    fn ok(&self) -> &OpResult {
        self.outcome.as_ref().unwrap_or_else(|e| panic!("operation failed: {e:?}"))
    }

    fn response(&self) -> Value {
        serde_json::from_str(&self.ok().response).unwrap()
    }

    fn updates(&self) -> Vec<Value> {
        let updates: Vec<Value> =
            self.ok().updates.iter().map(|u| serde_json::from_str(u).unwrap()).collect();
        updates.iter().for_each(acp_check::session_update);
        updates
    }

    fn error(&self) -> &MapperError {
        self.outcome.as_ref().expect_err("operation should fail")
    }
}

fn update_kinds(updates: &[Value]) -> Vec<&str> {
    updates.iter().map(|u| u["sessionUpdate"].as_str().unwrap()).collect()
}

const WORKSPACE: &str = "/w";

fn workspace_state() -> Value {
    json!({"workspace": {"workspacePath": WORKSPACE}, "settings": snapshot_json()["settings"], "modelCatalog": {"providers": [{}], "available": []}})
}

impl Driver {
    fn new(plan_operations: bool, form_elicitation: bool) -> Self {
        let init = SessionInit {
            workspace: WORKSPACE.to_string(),
            client: ClientFeatures { plan_operations, form_elicitation },
        };
        Self { session: TaskV1Session::new(&init), next_request: 100, next_op: 1, seq: 0 }
    }

    /// Runs an operation, answering its requests with `replies` in order.
    fn run(&mut self, op: SessionOp, replies: Vec<ReplyBody>) -> Run {
        let op_id = self.next_op;
        self.next_op += 1;
        let mut replies = replies.into_iter();
        let mut run = Run {
            requests: Vec::new(),
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
                    assert_eq!(outgoing.requests.len(), 1);
                    let request = &outgoing.requests[0];
                    assert_eq!(request.id, self.next_request, "requests use the ids handed out");
                    assert!(request.bytes.ends_with(b"\n"));
                    let value: Value = serde_json::from_slice(&request.bytes).unwrap();
                    assert_eq!(value["id"], json!(request.id));
                    run.requests.push(value);
                    run.routes_added.extend(outgoing.routes_added);
                    run.routes_removed.extend(outgoing.routes_removed);
                    let body = replies.next().expect("a reply for every request");
                    self.next_request += 1;
                    let reply = NativeReply { id: request.id, body };
                    step = self.session.resume(op_id, &reply, self.next_request);
                }
            }
        }
    }

    fn create(&mut self) -> Run {
        let run = self.run(
            SessionOp::Create(json!({"cwd": WORKSPACE, "mcpServers": []}).to_string()),
            vec![
                ok(json!({"available": true})),
                ok(workspace_state()),
                ok(snapshot_json()),
                ok(json!({"subscribed": true})),
            ],
        );
        assert!(run.outcome.is_ok(), "create failed: {:?}", run.outcome);
        run
    }

    fn prompt(&mut self, text: &str) -> Run {
        let params = json!({"sessionId": "session-1", "prompt": [{"type": "text", "text": text}]});
        self.run(
            SessionOp::Prompt(params.to_string()),
            vec![ok(json!({"sessionId": "session-1", "accepted": true}))],
        )
    }

    fn answer(&mut self, key: &str, outcome: InteractionOutcome, reply: ReplyBody) -> Run {
        self.run(
            SessionOp::Answer(InteractionAnswer { key: key.to_string(), outcome }),
            vec![reply],
        )
    }

    fn event(&mut self, event: Value) -> Vec<Action> {
        match self.session.map_event(&event.to_string()) {
            Ok(actions) => {
                check_actions(&actions);
                actions
            }
            Err(problem) => vec![Action::Terminal(Terminal::Broken(problem))],
        }
    }

    fn try_event(&mut self, event: Value) -> Result<Vec<Action>, MapperError> {
        self.session.map_event(&event.to_string())
    }

    fn session_event(&mut self, event_type: &str, payload: Value) -> Vec<Action> {
        self.seq += 1;
        let seq = self.seq;
        self.event(json!({"type": "session.event", "event": {
            "eventId": format!("event-{seq}"), "sessionId": "session-1", "turnId": "turn-1", "seq": seq,
            "timestamp": 1_757_000_000_000_u64 + seq, "deliveryKind": "desktop-continuous",
            "type": event_type, "payload": payload,
        }}))
    }
}

fn ok(value: Value) -> ReplyBody {
    ReplyBody::Ok(value.to_string())
}

fn native_error(message: &str) -> ReplyBody {
    ReplyBody::Error(MapperError::new(ErrorKind::Native, message))
}

/// Every ACP object in the actions is valid ACP.
fn check_actions(actions: &[Action]) {
    for action in actions {
        match action {
            Action::Update(update) => acp_check::session_update_text(update),
            Action::Interaction(interaction) => match &interaction.request {
                InteractionRequest::Permission(p) => {
                    acp_check::permission(&serde_json::from_str(&p.request).unwrap())
                }
                InteractionRequest::Elicitation(e) => {
                    acp_check::elicitation(&serde_json::from_str(e).unwrap())
                }
                InteractionRequest::Headless(_) => {}
            },
            Action::Terminal(_) | Action::Ignore(_) => {}
        }
    }
}

fn updates_of(actions: &[Action]) -> Vec<Value> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Update(u) => Some(serde_json::from_str(u).unwrap()),
            _ => None,
        })
        .collect()
}

fn terminal(actions: &[Action]) -> Option<&Terminal> {
    actions.iter().find_map(|a| match a {
        Action::Terminal(t) => Some(t),
        _ => None,
    })
}

fn broken_message(actions: &[Action]) -> String {
    match terminal(actions) {
        Some(Terminal::Broken(problem)) => problem.message.clone(),
        other => panic!("expected a broken terminal, got {other:?}"),
    }
}

fn interaction(actions: &[Action]) -> (&str, &InteractionRequest) {
    actions
        .iter()
        .find_map(|a| match a {
            Action::Interaction(i) => Some((i.key.as_str(), &i.request)),
            _ => None,
        })
        .expect("an interaction")
}

fn running(plan_operations: bool, form_elicitation: bool) -> Driver {
    let mut driver = Driver::new(plan_operations, form_elicitation);
    driver.create();
    assert!(driver.prompt("go").outcome.is_ok());
    driver
}

// ----- create / load / resume / close -------------------------------------------------------

#[test]
fn creates_subscribes_and_publishes_the_session() {
    let mut driver = Driver::new(true, true);
    let servers = json!([
        {"name": "fs", "command": "/bin/mcp", "args": ["--x"], "env": [{"name": "A", "value": "1"}]},
        {"type": "http", "name": "web", "url": "https://mcp.example", "headers": [{"name": "H", "value": "v"}]},
    ]);
    let run = driver.run(
        SessionOp::Create(json!({"cwd": WORKSPACE, "mcpServers": servers}).to_string()),
        vec![
            ok(json!({"available": true})),
            ok(workspace_state()),
            ok(snapshot_json()),
            ok(json!({"subscribed": true})),
        ],
    );
    assert_eq!(
        run.methods(),
        ["agent.initialize", "agent.readWorkspaceState", "agent.createSession", "__subscribe"]
    );
    assert_eq!(
        run.params(2),
        &json!({"workspacePath": "/w", "persistence": "immediate", "mcpServers": [
            {"name": "fs", "command": "/bin/mcp", "args": ["--x"], "env": [{"name": "A", "value": "1"}]},
            {"type": "http", "name": "web", "url": "https://mcp.example", "headers": [{"name": "H", "value": "v"}]},
        ]})
    );
    assert_eq!(
        run.requests[3]["params"],
        json!({"subscriptionId": "zcode-acp-session-1-1", "target": {
        "workspacePath": "/w", "sessionId": "session-1", "deliveryKind": "desktop-continuous", "includeSnapshot": true}})
    );
    assert_eq!(run.routes_added, ["zcode-acp-session-1-1"]);
    let response = run.response();
    acp_check::new_session_response(&response);
    assert_eq!(response["sessionId"], "session-1");
    assert_eq!(response["modes"]["currentModeId"], "build");
    assert_eq!(response["modes"]["availableModes"].as_array().unwrap().len(), 4);
    assert_eq!(response["configOptions"][0]["id"], "zcode.model");
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
        let run = Driver::new(true, true).run(SessionOp::Create(params.to_string()), vec![]);
        assert!(run.requests.is_empty());
        assert_eq!((run.error().kind, run.error().message.as_str()), (kind, message));
    }
    let run = Driver::new(true, true).run(SessionOp::Create("nope".into()), vec![]);
    assert_eq!(run.error().message, "session/new params is not valid JSON");
}

#[test]
fn requires_sign_in_before_creating() {
    let mut driver = Driver::new(true, true);
    let run = driver.run(
        SessionOp::Create(json!({"cwd": "/w", "mcpServers": []}).to_string()),
        vec![
            ok(json!({"available": true})),
            ok(json!({"workspace": {"workspacePath": "/w"}, "settings": {}})),
        ],
    );
    assert_eq!(run.error().kind, ErrorKind::AuthRequired);
    let run = driver.run(SessionOp::Create(json!({"cwd": "/w", "mcpServers": []}).to_string()), vec![
        ok(json!({"available": false, "reasonCode": "provider_not_ready", "reason": "Not signed in"})),
    ]);
    assert_eq!(
        (run.error().kind, run.error().message.as_str()),
        (ErrorKind::AuthRequired, "Not signed in")
    );
}

#[test]
fn refuses_a_native_mode_outside_the_catalog() {
    let mut snapshot = snapshot_json();
    snapshot["settings"]["mode"]["current"] = json!("auto");
    let run = Driver::new(true, true).run(
        SessionOp::Create(json!({"cwd": "/w", "mcpServers": []}).to_string()),
        vec![ok(json!({"available": true})), ok(workspace_state()), ok(snapshot)],
    );
    assert_eq!(run.error().message, "ZCode returned a mode outside the published catalog: auto");
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
    let mut driver = Driver::new(true, true);
    let params = json!({"cwd": "/w", "sessionId": "session-1", "mcpServers": []});
    let run = driver.run(
        SessionOp::Load(params.to_string()),
        vec![
            ok(json!({"available": true})),
            ok(workspace_state()),
            ok(history_snapshot()),
            ok(json!({"subscribed": true})),
        ],
    );
    assert_eq!(
        run.methods(),
        ["agent.initialize", "agent.readWorkspaceState", "agent.resumeSession", "__subscribe"]
    );
    assert_eq!(
        run.params(2),
        &json!({"workspacePath": "/w", "sessionId": "session-1", "mcpServers": []})
    );
    let response = run.response();
    acp_check::load_session_response(&response);
    assert!(response.get("sessionId").is_none());
    let updates = run.updates();
    assert_eq!(
        updates[0],
        json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Read a.rs"}, "messageId": "m1"})
    );
    assert_eq!(
        updates[1],
        json!({"sessionUpdate": "user_message_chunk", "content": {"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs", "mimeType": "text/x-rust"}, "messageId": "m1"})
    );
    assert_eq!(
        updates[2],
        json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Looking"}, "messageId": "m2"})
    );
    assert_eq!(
        updates[3],
        json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read a.rs", "kind": "read", "status": "completed",
        "rawInput": {"file_path": "/w/a.rs"}, "rawOutput": "fn main() {}", "locations": [{"path": "/w/a.rs"}],
        "content": [{"type": "content", "content": {"type": "text", "text": "fn main() {}"}}]})
    );
    assert_eq!(
        updates[4],
        json!({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "Bash: false", "kind": "execute", "status": "failed",
        "rawInput": {"command": "false"}, "rawOutput": "exit 1",
        "content": [{"type": "content", "content": {"type": "text", "text": "exit 1"}}]})
    );
    assert_eq!(
        updates[5],
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done"}, "messageId": "m2"})
    );
    assert_eq!(
        update_kinds(&updates[6..]),
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
fn resumes_without_replay() {
    let mut driver = Driver::new(true, true);
    let params = json!({"cwd": "/w", "sessionId": "session-1", "mcpServers": []});
    let run = driver.run(
        SessionOp::Resume(params.to_string()),
        vec![
            ok(json!({"available": true})),
            ok(workspace_state()),
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
    let run = Driver::new(true, true).run(
        SessionOp::Load(params.clone()),
        vec![ok(json!({"available": true})), ok(workspace_state()), ok(foreign)],
    );
    assert_eq!(
        (run.error().kind, run.error().message.as_str()),
        (ErrorKind::InvalidParams, "Session belongs to a different workspace")
    );
    let mut odd = history_snapshot();
    odd["messages"][1]["parts"][2]["state"]["status"] = json!("paused");
    let run = Driver::new(true, true).run(
        SessionOp::Load(params.clone()),
        vec![ok(json!({"available": true})), ok(workspace_state()), ok(odd)],
    );
    assert_eq!(
        (run.error().kind, run.error().message.as_str()),
        (ErrorKind::Protocol, "Unsupported persisted tool status: paused")
    );
    let mut malformed = history_snapshot();
    malformed["messages"][1]["parts"][2] =
        json!({"type": "tool", "state": {"status": "completed"}});
    let run = Driver::new(true, true).run(
        SessionOp::Load(params),
        vec![ok(json!({"available": true})), ok(workspace_state()), ok(malformed)],
    );
    assert_eq!(run.error().message, "Persisted tool part is malformed");
}

#[test]
fn closes_and_unsubscribes() {
    let mut driver = Driver::new(true, true);
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
    let mut driver = Driver::new(true, true);
    driver.create();
    let run =
        driver.run(SessionOp::Close, vec![native_error("gone"), ok(json!({"unsubscribed": true}))]);
    assert_eq!(run.routes_removed, ["zcode-acp-session-1-1"]);
    assert_eq!(run.error().message, "gone");
}

// ----- prompts and streams ------------------------------------------------------------------

#[test]
fn sends_prompts_with_metadata_first_and_fresh_input_ids() {
    let mut driver = Driver::new(true, true);
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
    let mut driver = Driver::new(true, true);
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
    let mut driver = Driver::new(true, true);
    driver.create();
    let params = json!({"sessionId": "session-1", "prompt": [{"type": "text", "text": "x"}]});
    let run =
        driver.run(SessionOp::Prompt(params.to_string()), vec![ok(json!({"accepted": false}))]);
    assert_eq!(run.error().message, "ZCode did not accept the prompt");
    assert!(driver.prompt("again").outcome.is_ok());
}

#[test]
fn streams_text_and_reasoning() {
    let mut driver = running(true, true);
    let actions = driver.session_event(
        "model.streaming",
        json!({"kind": "text_delta", "delta": "Hi", "assistantMessageId": "a1"}),
    );
    assert_eq!(
        updates_of(&actions),
        [
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}, "messageId": "a1"})
        ]
    );
    let actions =
        driver.session_event("model.streaming", json!({"kind": "reasoning_delta", "delta": "hmm"}));
    assert_eq!(
        updates_of(&actions),
        [
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})
        ]
    );
    assert!(
        driver
            .session_event("model.streaming", json!({"kind": "text_delta", "delta": ""}))
            .is_empty()
    );
    let actions = driver.session_event("model.streaming", json!({"kind": "text_start"}));
    assert_eq!(broken_message(&actions), "Unsupported model stream kind: text_start");
}

#[test]
fn follows_the_tool_lifecycle() {
    let mut driver = running(true, true);
    assert!(
        driver
            .session_event(
                "model.streaming",
                json!({"kind": "tool_input_start", "toolCallId": "t1", "toolName": "Bash"})
            )
            .is_empty()
    );
    assert!(
        driver
            .session_event(
                "model.streaming",
                json!({"kind": "tool_input_delta", "toolCallId": "t1", "delta": "{\"command\":"})
            )
            .is_empty()
    );
    assert!(
        driver
            .session_event(
                "model.streaming",
                json!({"kind": "tool_input_delta", "toolCallId": "t1", "delta": "\"ls\"}"})
            )
            .is_empty()
    );
    assert!(
        driver
            .session_event("model.streaming", json!({"kind": "tool_input_end", "toolCallId": "t1"}))
            .is_empty()
    );
    let actions = driver.session_event(
        "model.streaming",
        json!({"kind": "tool_call", "toolCallId": "t1", "toolName": "Bash"}),
    );
    assert_eq!(
        updates_of(&actions),
        [
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Bash: ls", "kind": "execute", "status": "pending", "rawInput": {"command": "ls"}})
        ]
    );
    assert!(
        driver
            .session_event(
                "tool.updated",
                json!({"kind": "scheduled", "toolCallId": "t1", "toolName": "Bash"})
            )
            .is_empty()
    );
    let actions =
        driver.session_event("tool.updated", json!({"kind": "started", "toolCallId": "t1"}));
    assert_eq!(
        updates_of(&actions),
        [json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"})]
    );
    assert!(
        driver
            .session_event(
                "tool.updated",
                json!({"kind": "progress", "toolCallId": "t1", "elapsedMs": 5, "stdoutTail": "a"})
            )
            .is_empty()
    );
    let actions = driver.session_event(
        "tool.updated",
        json!({"kind": "result", "toolCallId": "t1", "result": {"content": "a.rs"}}),
    );
    assert_eq!(
        updates_of(&actions),
        [
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "rawOutput": {"content": "a.rs"}, "content": [{"type": "content", "content": {"type": "text", "text": "a.rs"}}]})
        ]
    );
    let actions =
        driver.session_event("tool.updated", json!({"kind": "progress", "toolCallId": "t1"}));
    assert_eq!(broken_message(&actions), "Invalid tool transition: progress after completed");
}

#[test]
fn announces_progress_first_tools_and_keeps_later_errors() {
    let mut driver = running(true, true);
    let actions = driver.session_event(
        "tool.updated",
        json!({"kind": "progress", "toolCallId": "t9", "toolName": "Grep"}),
    );
    assert_eq!(update_kinds(&updates_of(&actions)), ["tool_call", "tool_call_update"]);
    assert_eq!(updates_of(&actions)[0]["kind"], "search");
    let actions = driver.session_event(
        "tool.updated",
        json!({"kind": "error", "toolCallId": "t9", "error": {"message": "bad pattern"}}),
    );
    assert_eq!(
        updates_of(&actions),
        [
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t9", "status": "failed", "rawOutput": {"message": "bad pattern"}, "content": [{"type": "content", "content": {"type": "text", "text": "bad pattern"}}]})
        ]
    );
    assert_eq!(
        driver.session_event("tool.updated", json!({"kind": "batch"})),
        [Action::Ignore("tool.updated batch".into())]
    );
    assert_eq!(
        broken_message(&driver.session_event("tool.updated", json!({"kind": "result"}))),
        "Tool update has no ID"
    );
}

#[test]
fn rejects_tool_updates_of_unknown_kinds_and_stream_kinds_without_ids() {
    let mut driver = running(true, true);
    assert_eq!(
        broken_message(
            &driver.session_event("tool.updated", json!({"kind": "paused", "toolCallId": "t"}))
        ),
        "Unsupported tool update kind: paused"
    );
    let mut driver = running(true, true);
    assert_eq!(
        broken_message(&driver.session_event("model.streaming", json!({"kind": "tool_call"}))),
        "Missing toolCallId for stream kind: tool_call"
    );
}

#[test]
fn maps_terminal_results_to_stop_reasons() {
    let cases = [
        ("success", StopReason::EndTurn),
        ("max_tokens", StopReason::MaxTokens),
        ("token_limit", StopReason::MaxTokens),
        ("max_turn_requests", StopReason::MaxTurnRequests),
        ("request_limit", StopReason::MaxTurnRequests),
        ("refusal", StopReason::Refusal),
        ("cancelled", StopReason::Cancelled),
        ("interrupted", StopReason::Cancelled),
        ("stopped", StopReason::Cancelled),
    ];
    for (result_type, reason) in cases {
        let mut driver = running(true, true);
        let actions = driver.session_event("turn.completed", json!({"resultType": result_type}));
        assert_eq!(actions, [Action::Terminal(Terminal::Stop(reason))], "{result_type}");
    }
    // The unmappable end breaks the turn, and is also the native end the core waits for.
    let mut driver = running(true, true);
    let actions = driver.session_event("turn.completed", json!({"resultType": "overloaded"}));
    assert_eq!(broken_message(&actions), "Unsupported ZCode terminal result: overloaded");
    assert_eq!(actions.last(), Some(&Action::Terminal(Terminal::Stop(StopReason::Cancelled))));
    let mut driver = running(true, true);
    assert_eq!(
        broken_message(&driver.session_event("turn.completed", json!({}))),
        "Unsupported ZCode terminal result: <missing>"
    );
}

#[test]
fn reports_failed_turns_with_the_native_message() {
    let mut driver = running(true, true);
    let actions =
        driver.session_event("turn.failed", json!({"error": {"message": "Rate limited"}}));
    assert_eq!(
        actions,
        [Action::Terminal(Terminal::Failed(MapperError::new(ErrorKind::Native, "Rate limited")))]
    );
    let mut driver = running(true, true);
    let actions = driver.session_event("turn.failed", json!({}));
    assert_eq!(
        actions,
        [Action::Terminal(Terminal::Failed(MapperError::new(
            ErrorKind::Native,
            "ZCode turn failed"
        )))]
    );
}

#[test]
fn cancels_and_ends_cancelled() {
    let mut driver = running(true, true);
    let run = driver.run(SessionOp::Cancel, vec![ok(Value::Null)]);
    assert_eq!(run.methods(), ["task.stopGeneration"]);
    assert_eq!(run.params(0), &json!({"workspacePath": "/w", "taskId": "session-1"}));
    let actions = driver.session_event("turn.failed", json!({"error": {"message": "cancelled"}}));
    assert_eq!(actions, [Action::Terminal(Terminal::Stop(StopReason::Cancelled))]);
    let mut driver = running(true, true);
    driver.run(SessionOp::Cancel, vec![ok(Value::Null)]);
    let actions = driver.session_event("turn.completed", json!({"resultType": "success"}));
    assert_eq!(actions, [Action::Terminal(Terminal::Stop(StopReason::Cancelled))]);
}

#[test]
fn zcodes_own_end_of_a_broken_turn_frees_the_session() {
    for end in [("turn.completed", json!({"resultType": "success"})), ("turn.failed", json!({}))] {
        let mut driver = running(true, true);
        let actions = driver.session_event("model.streaming", json!({"kind": "text_start"}));
        assert_eq!(broken_message(&actions), "Unsupported model stream kind: text_start");
        // Stragglers of the broken turn are dropped; its end reaches the core exactly once.
        assert_eq!(
            driver.session_event("model.streaming", json!({"kind": "text_delta", "delta": "x"})),
            [Action::Ignore("model.streaming outside a turn".into())]
        );
        let actions = driver.session_event(end.0, end.1.clone());
        assert_eq!(actions, [Action::Terminal(Terminal::Stop(StopReason::Cancelled))], "{}", end.0);
        assert_eq!(
            driver.session_event(end.0, end.1),
            [Action::Ignore(format!("{} outside a turn", end.0))]
        );
    }
}

#[test]
fn drops_turn_events_outside_a_turn() {
    let mut driver = Driver::new(true, true);
    driver.create();
    assert_eq!(
        driver.session_event("model.streaming", json!({"kind": "text_delta", "delta": "old"})),
        [Action::Ignore("model.streaming outside a turn".into())]
    );
    assert_eq!(
        driver.session_event("turn.completed", json!({"resultType": "success"})),
        [Action::Ignore("turn.completed outside a turn".into())]
    );
    assert_eq!(
        driver.session_event("turn.started", json!({})),
        [Action::Ignore("turn.started".into())]
    );
    let mut driver = running(true, true);
    driver.session_event("turn.completed", json!({"resultType": "success"}));
    assert_eq!(
        driver.session_event("tool.updated", json!({"kind": "result", "toolCallId": "late"})),
        [Action::Ignore("tool.updated outside a turn".into())]
    );
}

#[test]
fn updates_titles_with_the_event_time() {
    let mut driver = Driver::new(true, true);
    driver.create();
    let actions = driver.session_event("session.titleUpdated", json!({"title": "New title"}));
    assert_eq!(
        updates_of(&actions),
        [
            json!({"sessionUpdate": "session_info_update", "title": "New title", "updatedAt": "2025-09-04T15:33:20.001Z"})
        ]
    );
}

#[test]
fn fails_closed_on_unknown_or_malformed_events() {
    // Outside a turn the error is returned; inside, the turn breaks.
    let mut driver = Driver::new(true, true);
    driver.create();
    let problem = driver.try_event(json!({"type": "session.deleted"})).unwrap_err();
    assert_eq!(
        (problem.kind, problem.message.as_str()),
        (ErrorKind::Protocol, "Unsupported ZCode dynamic event: session.deleted")
    );
    let problem = driver
        .try_event(json!({"type": "state.updated", "notification": {}, "extra": 1}))
        .unwrap_err();
    assert_eq!(problem.message, "Native event: unexpected field `extra`");
    let problem = driver.try_event(json!({"type": "state.updated"})).unwrap_err();
    assert_eq!(problem.message, "Native event: missing field `notification`");
    assert!(driver.try_event(json!("x")).is_err());

    let mut driver = running(true, true);
    let actions = driver.session_event("message.upserted", json!({}));
    assert_eq!(broken_message(&actions), "Unsupported ZCode event: message.upserted");
    // The broken turn is over: its stragglers are ignored, and ZCode's own end of it only
    // tells the core that the stopped turn has ended.
    assert_eq!(
        driver.session_event("model.streaming", json!({"kind": "text_delta", "delta": "x"})),
        [Action::Ignore("model.streaming outside a turn".into())]
    );
    assert_eq!(
        driver.session_event("turn.failed", json!({})),
        [Action::Terminal(Terminal::Stop(StopReason::Cancelled))]
    );

    let mut driver = running(true, true);
    let event = json!({"type": "session.event", "event": {"eventId": "e", "sessionId": "session-1", "seq": -1, "timestamp": 1, "deliveryKind": "desktop-continuous", "type": "turn.started", "payload": {}}});
    assert_eq!(
        broken_message(&driver.event(event)),
        "session.event: field `seq` must be a non-negative integer"
    );
    let mut driver = running(true, true);
    let event = json!({"type": "session.event", "event": {"eventId": "e", "sessionId": "session-1", "seq": 1, "timestamp": 1, "deliveryKind": "desktop-continuous", "type": "turn.started", "payload": {}, "x": 1}});
    assert_eq!(broken_message(&driver.event(event)), "session.event: unexpected field `x`");
}

#[test]
fn ignores_allowlisted_events() {
    let mut driver = running(true, true);
    for kind in [
        "session.updated",
        "streamRecovery.updated",
        "turn.started",
        "permission.requested",
        "permission.resolved",
        "checkpoint.created",
    ] {
        assert_eq!(driver.session_event(kind, json!({})), [Action::Ignore(kind.into())]);
    }
    assert_eq!(
        driver.event(json!({"type": "state.updated", "notification": null})),
        [Action::Ignore("state.updated".into())]
    );
    assert_eq!(
        driver.event(json!({"type": "userInput.response", "requestId": "r", "response": {}})),
        [Action::Ignore("userInput.response".into())]
    );
}

#[test]
fn republishes_metadata_for_snapshots_during_a_turn() {
    let mut driver = Driver::new(true, true);
    driver.create();
    let mut changed = snapshot_json();
    changed["settings"]["mode"]["current"] = json!("plan");
    assert_eq!(
        driver.event(json!({"type": "snapshot", "snapshot": changed.clone()})),
        [Action::Ignore("snapshot (cached outside a turn)".into())]
    );
    let prompt = driver.prompt("go");
    // The prompt publishes what the cached snapshot changed, and only that.
    assert_eq!(
        prompt.updates(),
        [json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"})]
    );
    changed["todos"] = json!([]);
    let actions = driver.event(json!({"type": "snapshot", "snapshot": changed}));
    assert_eq!(
        updates_of(&actions),
        [json!({"sessionUpdate": "plan_removed", "planId": "zcode-todos"})]
    );
    let mut bad = snapshot_json();
    bad["settings"]["mode"]["current"] = json!("future-mode");
    assert_eq!(
        broken_message(&driver.event(json!({"type": "snapshot", "snapshot": bad}))),
        "ZCode returned a mode outside the published catalog: future-mode"
    );
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
    acp_check::usage(&response);
    assert_eq!(
        response,
        json!({"totalTokens": 30, "inputTokens": 20, "outputTokens": 10, "thoughtTokens": 4, "cachedReadTokens": 8, "cachedWriteTokens": 2})
    );
    assert_eq!(update_kinds(&run.updates()), ["session_info_update"]);
    let run = driver.run(SessionOp::FinishTurn, vec![ok(json!({"totalTokens": 1}))]);
    assert!(run.error().message.starts_with("Native result validation failed: getTaskTokenUsage"));
}

// ----- modes and config options -------------------------------------------------------------

#[test]
fn sets_modes_and_reports_the_returned_one() {
    let mut driver = Driver::new(true, true);
    driver.create();
    let run = driver.run(
        SessionOp::SetMode(json!({"sessionId": "session-1", "modeId": "auto"}).to_string()),
        vec![],
    );
    assert!(run.requests.is_empty());
    assert_eq!(
        (run.error().kind, run.error().message.as_str()),
        (ErrorKind::InvalidParams, "Unknown ZCode mode: auto")
    );
    let mut returned = snapshot_json();
    returned["settings"]["mode"]["current"] = json!("edit");
    let run = driver.run(
        SessionOp::SetMode(json!({"sessionId": "session-1", "modeId": "plan"}).to_string()),
        vec![ok(returned)],
    );
    assert_eq!(
        run.params(0),
        &json!({"workspacePath": "/w", "sessionId": "session-1", "mode": "plan"})
    );
    assert_eq!(
        run.updates(),
        [json!({"sessionUpdate": "current_mode_update", "currentModeId": "edit"})]
    );
    assert_eq!(run.response(), json!({}));
    let mut future = snapshot_json();
    future["settings"]["mode"]["current"] = json!("future-mode");
    let run = driver.run(
        SessionOp::SetMode(json!({"sessionId": "session-1", "modeId": "yolo"}).to_string()),
        vec![ok(future)],
    );
    assert_eq!(
        (run.error().kind, run.error().message.as_str()),
        (ErrorKind::Protocol, "ZCode returned a mode outside the published catalog: future-mode")
    );
}

#[test]
fn sets_models_and_thought_levels_from_advertised_values() {
    let mut driver = Driver::new(true, true);
    driver.create();
    let model = "[\"builtin:zai-coding-plan\",\"GLM-4.6\",\"fast\"]";
    let run = driver.run(
        SessionOp::SetConfigOption(
            json!({"sessionId": "session-1", "configId": "zcode.model", "value": model})
                .to_string(),
        ),
        vec![ok(snapshot_json())],
    );
    assert_eq!(
        run.params(0),
        &json!({"workspacePath": "/w", "sessionId": "session-1", "model": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-4.6", "variant": "fast"}, "persistAsWorkspaceLastUsed": true})
    );
    let response = run.response();
    acp_check::set_config_option_response(&response);
    assert_eq!(run.updates()[0]["sessionUpdate"], "config_option_update");
    assert_eq!(run.updates()[0]["configOptions"], response["configOptions"]);
    let run = driver.run(
        SessionOp::SetConfigOption(
            json!({"sessionId": "session-1", "configId": "zcode.thought_level", "value": "high"})
                .to_string(),
        ),
        vec![ok(snapshot_json())],
    );
    assert_eq!(run.params(0)["thoughtLevel"], "high");
    let cases = [
        (
            json!({"configId": "zcode.model", "value": "[\"x\",\"y\",null]"}),
            "Unknown ZCode model: [\"x\",\"y\",null]",
        ),
        (json!({"configId": "zcode.thought_level", "value": "max"}), "Unknown thought level: max"),
        (json!({"configId": "zcode.thought_level", "value": 3}), "Unknown thought level: 3"),
        (json!({"configId": "zcode.speed", "value": "x"}), "Unknown config option: zcode.speed"),
        (
            json!({"configId": "zcode.model", "type": "boolean", "value": true}),
            "Unknown config option: zcode.model",
        ),
    ];
    for (params, message) in cases {
        let run = driver.run(SessionOp::SetConfigOption(params.to_string()), vec![]);
        assert!(run.requests.is_empty());
        assert_eq!(
            (run.error().kind, run.error().message.as_str()),
            (ErrorKind::InvalidParams, message)
        );
    }
}

// ----- interactions -------------------------------------------------------------------------

fn permission_event(request_id: &str, tool_name: &str, options: Value) -> Value {
    json!({"type": "permission.request", "request": {
        "requestId": request_id, "sessionId": "session-1", "turnId": "turn-1", "toolCallId": "tool-1",
        "toolName": tool_name, "reason": "Run tests", "riskLevel": "medium",
        "input": {"command": "bun test", "plan": "# Plan\n\n1. Do it"}, "options": options,
    }})
}

fn allow_deny_options() -> Value {
    json!([
        {"optionId": "allow", "kind": "allow_once", "name": "Allow", "response": {"decision": "allow"}},
        {"optionId": "always", "kind": "allow_always", "name": "Always", "response": {"decision": "allow", "permissionUpdates": [{"rule": "Bash(bun test)"}]}},
        {"optionId": "deny", "kind": "reject_once", "name": "Deny", "response": {"decision": "deny"}},
    ])
}

#[test]
fn asks_permission_with_lossless_options() {
    let mut driver = running(true, true);
    let actions = driver.event(permission_event("perm-1", "Bash", allow_deny_options()));
    assert_eq!(update_kinds(&updates_of(&actions)), ["tool_call"]);
    let (key, request) = interaction(&actions);
    assert_eq!(key, "permission:perm-1");
    let InteractionRequest::Permission(permission) = request else { panic!("permission expected") };
    assert_eq!(permission.deny_option, "deny");
    let acp: Value = serde_json::from_str(&permission.request).unwrap();
    assert_eq!(
        acp,
        json!({
            "toolCall": {"toolCallId": "tool-1", "title": "Run tests", "kind": "execute", "rawInput": {"command": "bun test", "plan": "# Plan\n\n1. Do it"}},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "always", "name": "Always", "kind": "allow_always"},
                {"optionId": "deny", "name": "Deny", "kind": "reject_once"},
            ]
        })
    );
    let run = driver.answer(
        "permission:perm-1",
        InteractionOutcome::Selected("always".into()),
        ok(Value::Null),
    );
    assert_eq!(run.methods(), ["task.respondPermission"]);
    assert_eq!(
        run.params(0),
        &json!({"workspacePath": "/w", "requestId": "perm-1", "taskId": "session-1", "optionId": "always"})
    );
    // Exactly once: a second answer is refused without any request.
    let run = driver.run(
        SessionOp::Answer(InteractionAnswer {
            key: "permission:perm-1".into(),
            outcome: InteractionOutcome::Selected("allow".into()),
        }),
        vec![],
    );
    assert!(run.requests.is_empty());
    assert_eq!(
        (run.error().kind, run.error().message.as_str()),
        (ErrorKind::Internal, "Unknown or already answered interaction: permission:perm-1")
    );
    // A re-delivered request is not asked again.
    assert_eq!(
        driver.event(permission_event("perm-1", "Bash", allow_deny_options())),
        [Action::Ignore("re-delivered interaction permission:perm-1".into())]
    );
}

#[test]
fn denies_whenever_the_answer_is_not_a_known_option() {
    for outcome in [
        InteractionOutcome::Selected("nonsense".into()),
        InteractionOutcome::Unavailable("client went away".into()),
        InteractionOutcome::Elicited("{\"action\":\"accept\"}".into()),
    ] {
        let mut driver = running(true, true);
        driver.event(permission_event("p", "Bash", allow_deny_options()));
        let run = driver.answer("permission:p", outcome, ok(Value::Null));
        assert_eq!(run.params(0)["optionId"], "deny");
    }
}

#[test]
fn fails_closed_on_permissions_acp_cannot_show() {
    let mut driver = running(true, true);
    let options = json!([
        {"optionId": "allow", "kind": "allow_once", "name": "Allow", "response": {"decision": "allow"}},
        {"optionId": "esc", "kind": "escalate", "name": "Escalate", "response": {"decision": "escalate"}},
        {"optionId": "deny", "kind": "reject_once", "name": "Deny", "response": {"decision": "deny"}},
    ]);
    let actions = driver.event(permission_event("p", "Bash", options));
    assert!(matches!(interaction(&actions), ("permission:p", InteractionRequest::Headless(_))));
    assert_eq!(
        broken_message(&actions),
        "Native permission decision cannot be represented in ACP v1: escalate"
    );
    let run = driver.answer(
        "permission:p",
        InteractionOutcome::Unavailable("headless".into()),
        ok(Value::Null),
    );
    assert_eq!(run.params(0)["optionId"], "deny");

    let mut driver = running(true, true);
    let options = json!([{"optionId": "allow", "kind": "allow_once", "name": "Allow", "response": {"decision": "allow"}}]);
    let actions = driver.event(permission_event("p", "Bash", options));
    assert_eq!(
        broken_message(&actions),
        "ZCode permission request does not provide a native deny option"
    );
    assert!(actions.iter().all(|a| !matches!(a, Action::Interaction(_))));

    // One id on an allowing and a denying option: ZCode would resolve any answer under that
    // id to the first, allowing, option, so nothing may be answered at all.
    let mut driver = running(true, true);
    let options = json!([
        {"optionId": "x", "kind": "allow_once", "name": "Allow", "response": {"decision": "allow"}},
        {"optionId": "x", "kind": "reject_once", "name": "Deny", "response": {"decision": "deny"}},
    ]);
    let actions = driver.event(permission_event("p", "Bash", options));
    assert_eq!(broken_message(&actions), "permission.request: option id `x` is not unique");
    assert!(actions.iter().all(|a| !matches!(a, Action::Interaction(_))));

    let mut driver = running(true, true);
    let mut event = permission_event("p", "Bash", allow_deny_options());
    event["request"]["extra"] = json!(true);
    assert_eq!(
        broken_message(&driver.event(event)),
        "permission.request: unexpected field `extra`"
    );
}

#[test]
fn denies_permissions_outside_a_turn_headlessly() {
    let mut driver = Driver::new(true, true);
    driver.create();
    let actions = driver.event(permission_event("p", "Bash", allow_deny_options()));
    assert_eq!(actions.len(), 1);
    assert!(matches!(interaction(&actions), ("permission:p", InteractionRequest::Headless(_))));
    let run = driver.answer(
        "permission:p",
        InteractionOutcome::Unavailable("no prompt".into()),
        ok(Value::Null),
    );
    assert_eq!(run.params(0)["optionId"], "deny");
}

fn question_event(request_id: &str, questions: Value) -> Value {
    json!({"type": "userInput.request", "request": {
        "requestId": request_id, "sessionId": "session-1", "turnId": "turn-1", "toolCallId": "ask-1",
        "toolName": "AskUserQuestion", "prompt": "Pick options", "questions": questions,
    }})
}

fn two_questions() -> Value {
    json!([
        {"question": "Which mode?", "header": "Mode", "options": [{"value": "fast", "label": "Fast", "description": "Quick"}, {"value": "safe", "label": "Safe"}]},
        {"question": "Which files?", "header": "Files", "multiSelect": true, "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]},
    ])
}

#[test]
fn asks_structured_questions_as_a_form() {
    let mut driver = running(true, true);
    let actions = driver.event(question_event("q1", two_questions()));
    let (key, request) = interaction(&actions);
    assert_eq!(key, "input:q1");
    let InteractionRequest::Elicitation(form) = request else { panic!("elicitation expected") };
    let form: Value = serde_json::from_str(form).unwrap();
    assert_eq!(
        form,
        json!({
            "mode": "form", "toolCallId": "ask-1", "message": "Pick options",
            "requestedSchema": {"type": "object", "required": ["answer_0", "answer_1"], "properties": {
                "answer_0": {"type": "string", "title": "Mode", "description": "Which mode?", "oneOf": [{"const": "fast", "title": "Fast", "description": "Quick"}, {"const": "safe", "title": "Safe"}]},
                "answer_1": {"type": "array", "title": "Files", "description": "Which files?", "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]}, "minItems": 1},
            }}
        })
    );
    let accept =
        json!({"action": "accept", "content": {"answer_0": "fast", "answer_1": ["a", "b"]}});
    let run = driver.answer(
        "input:q1",
        InteractionOutcome::Elicited(accept.to_string()),
        ok(Value::Null),
    );
    assert_eq!(run.methods(), ["task.respondElicitation"]);
    assert_eq!(
        run.params(0),
        &json!({"workspacePath": "/w", "requestId": "q1", "taskId": "session-1", "action": "accept", "content": {
            "answer_0": "fast", "answer_1": ["a", "b"], "answers": {"Which mode?": ["fast"], "Which files?": ["a", "b"]},
        }})
    );
}

#[test]
fn answers_single_questions_with_answer_and_passes_declines() {
    let single = json!([{"question": "Which mode?", "header": "Mode", "options": [{"value": "fast", "label": "Fast"}]}]);
    let mut driver = running(true, true);
    driver.event(question_event("q", single.clone()));
    let accept = json!({"action": "accept", "content": {"answer_0": "fast"}});
    let run =
        driver.answer("input:q", InteractionOutcome::Elicited(accept.to_string()), ok(Value::Null));
    assert_eq!(
        run.params(0)["content"],
        json!({"answer_0": "fast", "answer": "fast", "answers": {"Which mode?": ["fast"]}})
    );

    for (outcome, expected) in [
        (json!({"action": "decline"}), json!({"action": "decline"})),
        (json!({"action": "cancel"}), json!({"action": "cancel"})),
        (
            json!({"action": "accept", "content": {"answer_0": "slow"}}),
            json!({"action": "decline", "reason": "Structured input answer does not match the requested form"}),
        ),
        (
            json!({"action": "maybe"}),
            json!({"action": "decline", "reason": "Unsupported ACP elicitation action: maybe"}),
        ),
    ] {
        let mut driver = running(true, true);
        driver.event(question_event("q", single.clone()));
        let run = driver.answer(
            "input:q",
            InteractionOutcome::Elicited(outcome.to_string()),
            ok(Value::Null),
        );
        let params = run.params(0);
        assert_eq!(params["action"], expected["action"]);
        assert_eq!(params.get("reason"), expected.get("reason"));
        assert!(params.get("content").is_none());
    }
    let mut driver = running(true, false);
    driver.event(question_event("q", single));
    let run = driver.answer(
        "input:q",
        InteractionOutcome::Unavailable("The client cannot render forms".into()),
        ok(Value::Null),
    );
    assert_eq!(
        run.params(0),
        &json!({"workspacePath": "/w", "requestId": "q", "taskId": "session-1", "action": "decline", "reason": "The client cannot render forms"})
    );
}

#[test]
fn declines_questionless_input_and_breaks_the_turn() {
    let mut driver = running(true, true);
    let actions = driver.event(json!({"type": "userInput.request", "request": {"requestId": "q", "sessionId": "session-1"}}));
    assert!(matches!(interaction(&actions), ("input:q", InteractionRequest::Headless(_))));
    assert_eq!(
        broken_message(&actions),
        "ZCode requested structured input without an active client interaction"
    );
    let run =
        driver.answer("input:q", InteractionOutcome::Unavailable("x".into()), ok(Value::Null));
    assert_eq!(run.params(0)["reason"], "No active client can handle structured input");
}

fn plan_input_event(request_id: &str) -> Value {
    json!({"type": "userInput.request", "request": {
        "requestId": request_id, "sessionId": "session-1", "turnId": "turn-1", "toolCallId": "exit-plan-tool",
        "toolName": "ExitPlanMode", "prompt": "Review this implementation plan.",
        "questions": [{"question": "Review this implementation plan.", "header": "Plan", "options": [{"value": "approve", "label": "Approve", "description": "Exit plan mode and start implementation."}]}],
        "input": {"plan": "# Proposed plan\n\n1. Change it"}, "schema": {"interaction": "plan_approval"},
    }})
}

fn plan_permission_options() -> Value {
    json!([
        {"optionId": "allow-plan", "kind": "allow_once", "name": "Approve", "response": {"decision": "allow"}},
        {"optionId": "deny-plan", "kind": "reject_once", "name": "Reject", "response": {"decision": "deny"}},
    ])
}

#[test]
fn approves_plans_asked_as_permissions() {
    let mut driver = running(true, true);
    let actions =
        driver.event(permission_event("plan-1", "ExitPlanMode", plan_permission_options()));
    assert_eq!(
        updates_of(&actions),
        [
            json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "zcode-plan-proposal:plan-1", "content": "# Plan\n\n1. Do it"}})
        ]
    );
    let (key, request) = interaction(&actions);
    assert_eq!(key, "permission:plan-1");
    let InteractionRequest::Elicitation(form) = request else { panic!("elicitation expected") };
    let form: Value = serde_json::from_str(form).unwrap();
    assert_eq!(
        form["requestedSchema"]["properties"]["optionId"],
        json!({"type": "string", "title": "Plan approval", "description": "Run tests",
        "oneOf": [{"const": "allow-plan", "title": "Approve"}, {"const": "deny-plan", "title": "Reject"}]})
    );
    assert_eq!(form["requestedSchema"]["required"], json!(["optionId"]));
    let accept = json!({"action": "accept", "content": {"optionId": "allow-plan"}});
    let run = driver.answer(
        "permission:plan-1",
        InteractionOutcome::Elicited(accept.to_string()),
        ok(Value::Null),
    );
    assert_eq!(run.params(0)["optionId"], "allow-plan");
    assert!(run.updates().is_empty(), "an accepted plan stays shown");
    driver.session_event("turn.completed", json!({"resultType": "success"}));
    let usage = json!({"totalTokens": 0, "inputTokens": 0, "outputTokens": 0, "reasoningTokens": 0, "cacheCreationTokens": 0, "cacheReadTokens": 0});
    let mut renamed = snapshot_json();
    renamed["session"]["title"] = json!("Renamed");
    let run = driver.run(SessionOp::FinishTurn, vec![ok(usage), ok(renamed)]);
    assert_eq!(
        run.updates().last().unwrap(),
        &json!({"sessionUpdate": "plan_removed", "planId": "zcode-plan-proposal:plan-1"})
    );
}

#[test]
fn removes_rejected_or_unanswerable_plan_proposals() {
    let cases = [
        (InteractionOutcome::Elicited(json!({"action": "decline"}).to_string()), "deny-plan"),
        (
            InteractionOutcome::Elicited(
                json!({"action": "accept", "content": {"optionId": "deny-plan"}}).to_string(),
            ),
            "deny-plan",
        ),
        (
            InteractionOutcome::Elicited(
                json!({"action": "accept", "content": {"optionId": "other"}}).to_string(),
            ),
            "deny-plan",
        ),
        (InteractionOutcome::Unavailable("The client cannot render forms".into()), "deny-plan"),
    ];
    for (outcome, option) in cases {
        let mut driver = running(true, false);
        driver.event(permission_event("plan-1", "ExitPlanMode", plan_permission_options()));
        let run = driver.answer("permission:plan-1", outcome, ok(Value::Null));
        assert_eq!(run.params(0)["optionId"], option);
        assert_eq!(
            run.updates(),
            [json!({"sessionUpdate": "plan_removed", "planId": "zcode-plan-proposal:plan-1"})]
        );
    }
}

#[test]
fn refuses_malformed_plan_permissions() {
    let mut driver = running(true, true);
    let mut event = permission_event("p", "ExitPlanMode", plan_permission_options());
    event["request"]["input"] = json!({"plan": "   "});
    let actions = driver.event(event);
    assert_eq!(broken_message(&actions), "ZCode plan approval has no plan content");
    let run =
        driver.answer("permission:p", InteractionOutcome::Unavailable("x".into()), ok(Value::Null));
    assert_eq!(run.params(0)["optionId"], "deny-plan");
    let mut driver = running(true, true);
    let options = json!([{"optionId": "deny-plan", "kind": "reject_once", "name": "Reject", "response": {"decision": "deny"}}]);
    assert_eq!(
        broken_message(&driver.event(permission_event("p", "ExitPlanMode", options))),
        "ZCode plan approval must provide both allow and deny options"
    );
}

#[test]
fn approves_plans_asked_as_questions() {
    let mut driver = running(false, true);
    let actions = driver.event(plan_input_event("plan-q"));
    assert_eq!(
        updates_of(&actions),
        [
            json!({"sessionUpdate": "plan", "entries": [{"content": "# Proposed plan\n\n1. Change it", "priority": "high", "status": "pending"}]})
        ]
    );
    let (key, request) = interaction(&actions);
    assert_eq!(key, "input:plan-q");
    let InteractionRequest::Elicitation(form) = request else { panic!("elicitation expected") };
    let form: Value = serde_json::from_str(form).unwrap();
    assert_eq!(form["toolCallId"], "exit-plan-tool");
    assert_eq!(
        form["requestedSchema"]["properties"]["optionId"]["oneOf"],
        json!([{"const": "approve", "title": "Approve", "description": "Exit plan mode and start implementation."}])
    );
    let accept = json!({"action": "accept", "content": {"optionId": "approve"}});
    let run = driver.answer(
        "input:plan-q",
        InteractionOutcome::Elicited(accept.to_string()),
        ok(Value::Null),
    );
    assert_eq!(
        run.params(0),
        &json!({"workspacePath": "/w", "requestId": "plan-q", "taskId": "session-1", "action": "accept",
        "content": {"answer_0": "approve", "answers": {"Review this implementation plan.": ["approve"]}, "answer": "approve"}})
    );
    assert_eq!(
        run.updates(),
        [
            json!({"sessionUpdate": "plan", "entries": [{"content": "# Proposed plan\n\n1. Change it", "priority": "high", "status": "in_progress"}]})
        ]
    );

    let mut driver = running(true, true);
    driver.event(plan_input_event("plan-q"));
    let run = driver.answer(
        "input:plan-q",
        InteractionOutcome::Elicited(json!({"action": "cancel"}).to_string()),
        ok(Value::Null),
    );
    assert_eq!(run.params(0)["action"], "cancel");
    assert_eq!(
        run.updates(),
        [json!({"sessionUpdate": "plan_removed", "planId": "zcode-plan-proposal:plan-q"})]
    );
    let mut driver = running(true, true);
    driver.event(plan_input_event("plan-q"));
    let accept = json!({"action": "accept", "content": {"optionId": "reject"}});
    let run = driver.answer(
        "input:plan-q",
        InteractionOutcome::Elicited(accept.to_string()),
        ok(Value::Null),
    );
    assert_eq!(
        (run.params(0)["action"].as_str(), run.params(0)["reason"].as_str()),
        (Some("decline"), Some("Plan approval request failed"))
    );
}

#[test]
fn removes_accepted_proposals_when_cancelled_or_failed() {
    let mut driver = running(true, true);
    driver.event(plan_input_event("plan-q"));
    let accept = json!({"action": "accept", "content": {"optionId": "approve"}});
    driver.answer(
        "input:plan-q",
        InteractionOutcome::Elicited(accept.to_string()),
        ok(Value::Null),
    );
    let run = driver.run(SessionOp::Cancel, vec![ok(Value::Null)]);
    assert_eq!(
        run.updates(),
        [json!({"sessionUpdate": "plan_removed", "planId": "zcode-plan-proposal:plan-q"})]
    );
    assert_eq!(
        driver.session_event("turn.failed", json!({"error": {"message": "stopped"}})),
        [Action::Terminal(Terminal::Stop(StopReason::Cancelled))]
    );

    let mut driver = running(true, true);
    driver.event(plan_input_event("plan-q"));
    let actions = driver.session_event("turn.failed", json!({"error": {"message": "boom"}}));
    assert_eq!(
        updates_of(&actions),
        [json!({"sessionUpdate": "plan_removed", "planId": "zcode-plan-proposal:plan-q"})]
    );
    assert!(matches!(terminal(&actions), Some(Terminal::Failed(_))));
}

#[test]
fn replaces_an_earlier_proposal() {
    let mut driver = running(true, true);
    driver.event(plan_input_event("one"));
    let actions = driver.event(plan_input_event("two"));
    assert_eq!(update_kinds(&updates_of(&actions)), ["plan_removed", "plan_update"]);
    assert_eq!(updates_of(&actions)[0]["planId"], "zcode-plan-proposal:one");
}

#[test]
fn declines_plan_approval_outside_a_turn() {
    let mut driver = Driver::new(true, true);
    driver.create();
    let actions = driver.event(plan_input_event("plan-q"));
    assert_eq!(actions.len(), 1);
    assert!(matches!(interaction(&actions), ("input:plan-q", InteractionRequest::Headless(_))));
    let run =
        driver.answer("input:plan-q", InteractionOutcome::Unavailable("x".into()), ok(Value::Null));
    assert_eq!(run.params(0)["reason"], "No active client can approve the plan");
}

#[test]
fn refuses_provider_header_recovery() {
    let mut driver = running(true, true);
    let event = json!({"type": "providerRuntimeHeaders.request", "request": {
        "requestId": "h1", "sessionId": "session-1", "turnId": "turn-1", "workspace": {"workspacePath": "/w"},
        "modelRef": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-5.2"}, "providerId": "builtin:zai-coding-plan", "reason": "captcha-retry",
    }});
    let actions = driver.event(event);
    assert!(matches!(interaction(&actions), ("headers:h1", InteractionRequest::Headless(_))));
    match terminal(&actions) {
        Some(Terminal::Broken(problem)) => {
            assert_eq!(problem.kind, ErrorKind::Unsupported);
            assert_eq!(
                problem.message,
                "ZCode requested interactive provider header recovery, which is unavailable headlessly"
            );
        }
        other => panic!("expected broken, got {other:?}"),
    }
    let run = driver.answer(
        "headers:h1",
        InteractionOutcome::Unavailable("headless".into()),
        ok(Value::Null),
    );
    assert_eq!(run.methods(), ["agent.respondProviderRuntimeHeaders"]);
    assert_eq!(
        run.params(0),
        &json!({"workspacePath": "/w", "sessionId": "session-1", "requestId": "h1",
        "response": {"headersApplied": false, "errorMessage": "Interactive provider recovery is unavailable in the headless ACP adapter"}})
    );
}

#[test]
fn keeps_interaction_keys_unique_across_kinds() {
    let mut driver = running(true, true);
    driver.event(permission_event("same", "Bash", allow_deny_options()));
    let actions = driver.event(question_event("same", two_questions()));
    assert_eq!(interaction(&actions).0, "input:same");
}

#[test]
fn rejects_answers_for_unknown_keys() {
    let mut driver = running(true, true);
    let run = driver.run(
        SessionOp::Answer(InteractionAnswer {
            key: "permission:nope".into(),
            outcome: InteractionOutcome::Selected("allow".into()),
        }),
        vec![],
    );
    assert!(run.requests.is_empty());
    assert_eq!(run.error().kind, ErrorKind::Internal);
}

#[test]
fn rejects_operations_in_the_wrong_state() {
    let mut driver = Driver::new(true, true);
    let prompt =
        json!({"sessionId": "session-1", "prompt": [{"type": "text", "text": "too early"}]})
            .to_string();
    let run = driver.run(SessionOp::Prompt(prompt.clone()), vec![]);
    assert!(run.requests.is_empty());
    assert_eq!(run.error().message, "The native session is not open");
    driver.create();
    let params = json!({"cwd": "/w", "mcpServers": []}).to_string();
    let run = driver.run(SessionOp::Create(params), vec![]);
    assert_eq!(run.error().message, "This session resource is already bound to a native session");
    let mut driver = running(true, true);
    let run = driver.run(SessionOp::Prompt(prompt), vec![]);
    assert_eq!(run.error().message, "A prompt turn is already running in this session");
}

#[test]
fn session_events_must_come_in_sequence_during_a_turn() {
    let mut driver = running(true, true);
    let first =
        driver.session_event("model.streaming", json!({"kind": "text_delta", "delta": "a"}));
    assert_eq!(update_kinds(&updates_of(&first)), ["agent_message_chunk"]);
    // The same event delivered again (a replayed backlog) is ignored, not shown twice.
    let seq = driver.seq;
    driver.seq -= 1;
    let again =
        driver.session_event("model.streaming", json!({"kind": "text_delta", "delta": "a"}));
    assert!(matches!(again.as_slice(), [Action::Ignore(why)] if why.contains("already seen")));
    // A lost event mid-turn breaks the turn instead of silently dropping content.
    driver.seq = seq + 1;
    let gap = driver.session_event("model.streaming", json!({"kind": "text_delta", "delta": "c"}));
    assert_eq!(
        broken_message(&gap),
        format!("ZCode session events out of sequence: expected seq {}, got {}", seq + 1, seq + 2)
    );
    // A gap before the native end: the turn breaks, and that end is reported with it.
    let mut driver = running(true, true);
    driver.session_event("model.streaming", json!({"kind": "text_delta", "delta": "a"}));
    driver.seq += 1;
    let actions = driver.session_event("turn.completed", json!({"resultType": "success"}));
    assert!(broken_message(&actions).contains("out of sequence"));
    assert_eq!(actions.last(), Some(&Action::Terminal(Terminal::Stop(StopReason::Cancelled))));
}
