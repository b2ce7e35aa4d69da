use serde_json::{Value, json};
use zcode_contract::{
    Action, ClientFeatures, Effects, InteractionAnswer, InteractionOutcome, InteractionRequest,
    MapperSession, NativeReply, Operations, Outgoing, ReplyBody, SessionInit, SessionInput,
    SessionOp, Step, StopReason, Terminal,
};

use zcode_mapper_sdk::native::NativeSession;

use super::AppServerSession;

/// Drives one session like the core does; request ids count up from 1.
struct Driver {
    session: NativeSession<AppServerSession>,
    next_id: u64,
    next_op: u64,
}

fn line(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

impl Driver {
    fn new(form: bool) -> Self {
        let init = SessionInit {
            facts: Default::default(),
            workspace: "/w".into(),
            client: ClientFeatures { plan_operations: false, form_elicitation: form },
        };
        Self { session: NativeSession(AppServerSession::new(&init)), next_id: 1, next_op: 1 }
    }

    /// Starts `op`; answers each request with the reply `answer` gives for its method; returns
    /// every request line sent, every outgoing step and the final step.
    fn run(
        &mut self,
        op: SessionOp,
        answer: &mut dyn FnMut(&Value) -> Value,
    ) -> (Vec<Value>, Vec<Outgoing>, Step) {
        let op_id = self.next_op;
        self.next_op += 1;
        let mut sent = Vec::new();
        let mut steps = Vec::new();
        let mut step = self.session.start(op_id, &op, self.next_id).unwrap();
        loop {
            let Step::Wait(out) = step else { return (sent, steps, step) };
            self.next_id += out.requests.len() as u64;
            let reply = out.requests.first().map(|r| {
                let frame = line(&r.bytes);
                sent.push(frame.clone());
                let result = answer(&frame);
                let body = match result.get("error") {
                    Some(error) => ReplyBody::Error(crate::wire::native_error(error)),
                    None => ReplyBody::Ok(result.to_string().into()),
                };
                NativeReply { id: r.id, body }
            });
            steps.push(out);
            step = self.session.resume(op_id, reply.as_ref(), self.next_id).unwrap();
        }
    }

    fn event(&mut self, frame: Value) -> Effects {
        self.session.map(vec![SessionInput::Event(frame.to_string().into())]).unwrap()
    }
}

fn create_state() -> Value {
    json!({"session": {"sessionId": "sess_1"},
      "slashCommands": [{"name": "compact", "description": "Compact the conversation context", "source": "builtin"},
                        {"name": "goal", "description": "Set a goal", "inputHint": "<objective>", "source": "builtin"}],
      "settings": {
        "mode": {"current": "build"},
        "model": {"current": {"providerId": "account:zai-individual-coding-plan", "modelId": "GLM-5.3"},
                  "available": [{"ref": {"providerId": "account:zai-individual-coding-plan", "modelId": "GLM-5.3"}, "label": "GLM-5.3", "providerLabel": "Z.ai"}]},
        "thoughtLevel": {"enabled": true, "current": "high", "available": [{"value": "low", "label": "Low"}, {"value": "high", "label": "High"}]}}})
}

/// The Agent of 3.15.1 as the tests' counterpart.
fn agent(v4: bool) -> impl FnMut(&Value) -> Value {
    move |frame| match frame["method"].as_str().unwrap() {
        "runtime/capabilities" if v4 => json!({"independentPlanState": true}),
        "runtime/capabilities" => {
            json!({"error": {"code": -32601, "message": "Method not found: runtime/capabilities"}})
        }
        "session/setMode" if frame["params"]["sessionId"] == "zcode-acp-mode-probe" => {
            json!({"error": {"code": -32004, "message": "Session is not active: zcode-acp-mode-probe"}})
        }
        "session/create" | "session/resume" => create_state(),
        "session/subscribe" => json!({"sessionId": "sess_1", "eventSeq": 4, "events": []}),
        "v4/connection/flow" if v4 => json!({}),
        "v4/connection/flow" => json!({"error": {"code": -32601, "message": "Method not found"}}),
        "v4/conversation/subscribe" => {
            json!({"ack": {"subscriptionId": "sub-1", "mode": "snapshot", "logEpoch": "e1"}})
        }
        "v4/command" => {
            json!({"commandId": frame["params"]["commandId"], "status": "accepted", "revisionAtDecision": 8})
        }
        "session/send" => json!({"sessionId": "sess_1", "accepted": true, "stateRevision": 3}),
        _ => json!({}),
    }
}

/// The 3.14.0 Agent: `runtime/capabilities` and V4, but a mode enum without `guarded`.
fn agent_314() -> impl FnMut(&Value) -> Value {
    let mut current = agent(true);
    move |frame| match frame["method"].as_str().unwrap() {
        "session/setMode" if frame["params"]["mode"] == "guarded" => json!({"error": {
            "code": -32602,
            "message": "Invalid params — mode: Invalid option: expected one of \"plan\"|\"build\"|\"edit\"|\"yolo\"|\"auto\""}}),
        _ => current(frame),
    }
}

fn opened(v4: bool, form: bool) -> Driver {
    let mut driver = Driver::new(form);
    let (sent, _, step) = driver
        .run(SessionOp::Create(json!({"cwd": "/w", "mcpServers": []}).to_string()), &mut agent(v4));
    assert!(matches!(step, Step::Done(Ok(_))), "{step:?}");
    assert!(!sent.iter().any(|f| f["method"] == "session/close"));
    if v4 {
        driver.event(json!({"method": "v4/conversation/frame", "params": {"wireVersion": 3, "kind": "complete", "deliveryKind": "initial", "logicalFrameId": "f1", "logicalFrameOrdinal": 1, "topic": "conversation/sess_1", "subscriptionId": "sub-1",
            "frame": {"topic": "conversation/sess_1", "subscriptionId": "sub-1", "fromSeq": 0, "toSeq": 5, "sentAt": 1, "payload": {"kind": "snapshot", "snapshot": {"logEpoch": "e1", "seq": 5, "revision": 7, "rows": {"window": [], "totalCount": 0, "firstRowId": null}}}}}}));
    }
    driver
}

fn prompt(driver: &mut Driver) -> Vec<Value> {
    let (sent, _, step) = driver.run(
        SessionOp::Prompt(
            json!({"sessionId": "sess_1", "prompt": [{"type": "text", "text": "Fix it"}]})
                .to_string(),
        ),
        &mut agent(true),
    );
    assert!(matches!(step, Step::Done(Ok(_))));
    sent
}

fn event(seq: u64, kind: &str, payload: Value) -> Value {
    json!({"method": "session/event", "params": {"eventId": format!("e{seq}"), "sessionId": "sess_1", "seq": seq, "timestamp": 1, "type": kind, "payload": payload}})
}

fn updates(effects: &Effects) -> Vec<Value> {
    effects
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Update(u) => Some(serde_json::from_str(u).unwrap()),
            _ => None,
        })
        .collect()
}

#[test]
fn creates_subscribes_both_streams_and_answers_with_modes_and_options() {
    let mut driver = Driver::new(true);
    let (sent, steps, step) = driver.run(SessionOp::Create(json!({"cwd": "/w", "mcpServers": [
        {"name": "files", "command": "/bin/mcp", "args": ["-v"], "env": [{"name": "A", "value": "1"}], "_meta": {"x": 1}},
        {"type": "http", "name": "docs", "url": "https://d", "headers": []}]}).to_string()), &mut agent(true));
    let methods: Vec<_> = sent.iter().map(|f| f["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        [
            "runtime/capabilities",
            "session/setMode",
            "session/create",
            "session/subscribe",
            "v4/connection/flow",
            "v4/conversation/subscribe"
        ]
    );
    // The `guarded` probe names no session of the Agent's.
    assert_eq!(sent[1]["params"], json!({"sessionId": "zcode-acp-mode-probe", "mode": "guarded"}));
    let sent = &sent[1..];
    assert_eq!(
        sent[1]["params"],
        json!({"workspace": {"workspacePath": "/w", "workspaceKey": "/w"}, "mcpServers": [
        {"name": "files", "command": "/bin/mcp", "args": ["-v"], "env": [{"name": "A", "value": "1"}]},
        {"name": "docs", "type": "http", "url": "https://d", "headers": []}]})
    );
    assert_eq!(
        sent[2]["params"],
        json!({"sessionId": "sess_1", "deliveryKind": "desktop-continuous", "includeSnapshot": false})
    );
    assert_eq!(
        sent[4]["params"],
        json!({"topic": "conversation/sess_1", "connectionId": "zcode-acp-sess_1", "clientMode": "desktop-continuous"})
    );
    // The routes exist before the subscribe is written: until V4 is subscribed, the legacy
    // events it carries come too.
    assert_eq!(steps[3].routes_added, ["session/sess_1", "session/sess_1/v4-carried"]);
    assert!(steps.iter().all(|s| s.routes_removed.is_empty()), "{steps:?}");
    let Step::Done(Ok(result)) = step else { panic!() };
    let response: Value = serde_json::from_str(&result.response).unwrap();
    assert_eq!(response["sessionId"], "sess_1");
    assert_eq!(response["modes"]["currentModeId"], "build");
    assert_eq!(
        response["modes"]["availableModes"].as_array().unwrap().len(),
        5,
        "3.15+ offers guarded"
    );
    assert_eq!(
        response["configOptions"][0]["currentValue"],
        "account:zai-individual-coding-plan/GLM-5.3"
    );
    assert_eq!(response["configOptions"][1]["currentValue"], "high");
    // The session's slash commands follow the response.
    assert_eq!(
        serde_json::from_str::<Value>(&result.updates[0]).unwrap(),
        json!({"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "compact", "description": "Compact the conversation context"},
            {"name": "goal", "description": "Set a goal", "input": {"hint": "<objective>"}}]})
    );

    // 3.14.x answers runtime/capabilities and has V4, but no `guarded`.
    let mut v314 = Driver::new(true);
    let (sent, _, step) =
        v314.run(SessionOp::Create(json!({"cwd": "/w"}).to_string()), &mut agent_314());
    assert_eq!(sent.len(), 6, "{sent:#?}");
    let Step::Done(Ok(result)) = step else { panic!() };
    let response: Value = serde_json::from_str(&result.response).unwrap();
    let modes: Vec<_> = response["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(modes, ["build", "edit", "plan", "yolo"], "3.14 has no guarded");

    let mut old = Driver::new(true);
    let (sent, _, step) =
        old.run(SessionOp::Create(json!({"cwd": "/w"}).to_string()), &mut agent(false));
    assert_eq!(sent.len(), 4, "no V4 subscribe when the Agent has no V4 flow");
    let Step::Done(Ok(result)) = step else { panic!() };
    let response: Value = serde_json::from_str(&result.response).unwrap();
    assert_eq!(
        response["modes"]["availableModes"].as_array().unwrap().len(),
        4,
        "an Agent without runtime/capabilities is not assumed to have guarded"
    );
}

#[test]
fn prompts_and_stops_through_v4_where_the_agent_has_it() {
    let mut driver = opened(true, true);
    let sent = prompt(&mut driver);
    assert_eq!(sent[0]["method"], "v4/command");
    assert_eq!(sent[0]["params"]["type"], "sendText");
    assert_eq!(
        sent[0]["params"]["payload"],
        json!({"text": "Fix it", "requestedDelivery": "startNow"})
    );
    assert_eq!(sent[0]["params"]["commandId"], "zcode-acp-e1-5-1");
    let (sent, _, _) = driver.run(SessionOp::Cancel, &mut agent(true));
    assert_eq!(
        (sent[0]["params"]["type"].as_str(), sent[0]["params"]["payload"].clone()),
        (Some("stop"), json!({}))
    );

    let mut legacy = opened(false, true);
    let (sent, _, _) = legacy.run(SessionOp::Prompt(json!({"prompt": [{"type": "text", "text": "a"}, {"type": "resource_link", "uri": "file:///w/x", "name": "x"}]}).to_string()), &mut agent(false));
    assert_eq!(
        sent[0],
        json!({"id": sent[0]["id"], "method": "session/send", "params": {"sessionId": "sess_1", "content": "a\n\n[x](file:///w/x)"}})
    );
    let (_, _, step) = legacy.run(
        SessionOp::Prompt(json!({"prompt": [{"type": "image", "data": "x"}]}).to_string()),
        &mut agent(false),
    );
    assert!(
        matches!(step, Step::Done(Err(e)) if e.kind == zcode_contract::ErrorKind::InvalidParams)
    );

    // Attachments go inline on `session/send`, also where the session has V4.
    let png = "iVBORw0KGgo=";
    let rich = json!({"prompt": [
        {"type": "text", "text": "look"},
        {"type": "image", "data": png, "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "uri": "file:///w/hi.wav"},
        {"type": "resource", "resource": {"uri": "file:///w/a.bin", "blob": "AAE=", "mimeType": "application/octet-stream"}},
    ]});
    for v4 in [true, false] {
        let mut driver = opened(v4, true);
        let (sent, _, _) = driver.run(SessionOp::Prompt(rich.to_string()), &mut agent(v4));
        assert_eq!(sent[0]["method"], "session/send", "v4: {v4}");
        assert_eq!(
            sent[0]["params"],
            json!({"sessionId": "sess_1", "content": "look", "attachments": [
                {"kind": "image", "filename": "image.png", "mimeType": "image/png", "sizeBytes": 8, "dataBase64": png},
                {"kind": "audio", "filename": "hi.wav", "mimeType": "audio/wav", "sizeBytes": 4, "dataBase64": "UklGRg=="},
                {"kind": "file", "filename": "a.bin", "mimeType": "application/octet-stream", "sizeBytes": 2, "dataBase64": "AAE="},
            ]})
        );
    }

    let mut refused = opened(true, true);
    let (_, _, step) = refused.run(
        SessionOp::Prompt(json!({"prompt": [{"type": "text", "text": "x"}]}).to_string()),
        &mut |f: &Value| {
            if f["method"] == "v4/command" {
                json!({"commandId": "c", "status": "duplicate", "revisionAtDecision": 1})
            } else {
                json!({})
            }
        },
    );
    assert!(
        matches!(step, Step::Done(Err(e)) if e.message.contains("duplicate")),
        "a deduplicated send is never a silent success"
    );
}

/// `session/send` answered with a plain string is ZCode refusing the prompt in its own words
/// (live record, Desktop 3.12.3 / CLI 0.16.5: the stored model no longer resolves); taken as an
/// acceptance, the prompt waited for a turn that never starts.
#[test]
fn a_send_answered_with_a_string_is_a_refusal_in_zcodes_words() {
    const GONE: &str = "历史任务使用的模型已不可用，请从当前模型列表中选择一个可用模型后继续。";
    let mut legacy = opened(false, true);
    let mut refusing = |f: &Value| match f["method"].as_str() {
        Some("session/send") => json!(GONE),
        _ => agent(false)(f),
    };
    let text = json!({"sessionId": "sess_1", "prompt": [{"type": "text", "text": "x"}]});
    let (sent, _, step) = legacy.run(SessionOp::Prompt(text.to_string()), &mut refusing);
    assert_eq!(sent.len(), 1, "nothing sent after the refusal: {sent:?}");
    let Step::Done(Err(error)) = step else { panic!("{step:?}") };
    assert_eq!(error.kind, zcode_contract::ErrorKind::Native);
    assert_eq!(error.message, format!("ZCode refused the prompt: {GONE}"));
    // Neither an acceptance nor a reason: not taken for either.
    let (_, _, step) = legacy.run(SessionOp::Prompt(text.to_string()), &mut |f: &Value| {
        if f["method"] == "session/send" { json!(7) } else { json!({}) }
    });
    assert!(matches!(step, Step::Done(Err(e)) if e.kind == zcode_contract::ErrorKind::Protocol));
    // An acceptance is one still.
    let (_, _, step) = legacy.run(SessionOp::Prompt(text.to_string()), &mut agent(false));
    assert!(matches!(step, Step::Done(Ok(_))), "{step:?}");
}

/// Without V4 (3.14), the legacy stream carries the turn.
#[test]
fn maps_a_legacy_turn_of_text_thinking_and_tools() {
    let mut driver = opened(false, true);
    prompt(&mut driver);
    let effects = driver.event(event(
        5,
        "model.streaming",
        json!({"kind": "reasoning_delta", "delta": "hm"}),
    ));
    assert_eq!(
        updates(&effects),
        [
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}})
        ]
    );
    assert_eq!(
        updates(&driver.event(event(
            5,
            "model.streaming",
            json!({"kind": "text_delta", "delta": "x"})
        ))),
        Vec::<Value>::new(),
        "a repeated seq is a duplicate"
    );
    driver.event(event(6, "model.streaming", json!({"kind": "tool_call", "toolCallId": "t1", "toolName": "Edit", "input": {"file_path": "/w/a.rs", "old_string": "a", "new_string": "b"}})));
    let started = updates(&driver.event(event(
        7,
        "tool.updated",
        json!({"kind": "started", "toolCallId": "t1", "startedAt": 1}),
    )));
    assert_eq!(
        started,
        [json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"})]
    );
    let result = updates(&driver.event(event(8, "tool.updated", json!({"kind": "result", "toolCallId": "t1", "duration": 3, "result": {"success": true, "content": "ok"}}))));
    assert_eq!(result[0]["status"], "completed");
    assert_eq!(result[0]["content"][0]["type"], "diff");
    let text = updates(&driver.event(event(
        9,
        "model.streaming",
        json!({"kind": "text_delta", "delta": "Done"}),
    )));
    assert_eq!(text[0]["sessionUpdate"], "agent_message_chunk");
    let end = driver.event(event(10, "turn.completed", json!({"response": "Done", "tokenCount": 9, "toolCallCount": 1, "duration": 1, "resultType": "success", "usage": {"inputTokens": 6, "outputTokens": 3, "cacheReadTokens": 2}})));
    assert_eq!(end.actions, [Action::Terminal(Terminal::Stop(StopReason::EndTurn))]);
    let (_, _, step) = driver.run(SessionOp::FinishTurn, &mut agent(true));
    let Step::Done(Ok(usage)) = step else { panic!() };
    assert_eq!(
        serde_json::from_str::<Value>(&usage.response).unwrap(),
        json!({"inputTokens": 6, "outputTokens": 3, "totalTokens": 9, "cachedReadTokens": 2})
    );
}

#[test]
fn never_ends_a_legacy_turn_on_something_not_understood() {
    let mut driver = opened(false, true);
    prompt(&mut driver);
    let unknown = driver.event(event(5, "turn.reticulated", json!({})));
    assert!(
        matches!(&unknown.actions[0], Action::Terminal(Terminal::Broken(e)) if e.message.contains("turn.reticulated"))
    );
    let no_type = driver.event(event(
        6,
        "turn.completed",
        json!({"response": "", "tokenCount": 0, "toolCallCount": 0, "duration": 0}),
    ));
    assert!(matches!(&no_type.actions[0], Action::Terminal(Terminal::Failed(_))));
    let failed = driver.event(event(7, "turn.failed", json!({"error": {"type": "x", "message": "quota", "code": "model_request_failed"}, "turnPhase": "model"})));
    assert!(
        matches!(&failed.actions[0], Action::Terminal(Terminal::Failed(e)) if e.message == "quota")
    );
    let cancelled = driver.event(event(8, "turn.completed", json!({"resultType": "cancelled"})));
    assert_eq!(cancelled.actions, [Action::Terminal(Terminal::Stop(StopReason::Cancelled))]);
    let asked = driver.event(json!({"id": "server-9", "method": "interaction/requestSomethingNew", "params": {"sessionId": "sess_1"}}));
    assert_eq!(
        line(&asked.writes[0].bytes),
        json!({"id": "server-9", "error": {"code": -32601, "message": "zcode-acp does not serve interaction/requestSomethingNew"}})
    );
    assert!(matches!(&asked.actions[0], Action::Terminal(Terminal::Broken(_))));
}

fn permission_request(id: &str) -> Value {
    json!({"id": id, "method": "interaction/requestPermission", "params": {"requestId": "perm-1", "sessionId": "sess_1", "turnId": "turn-1", "toolCallId": "t1", "toolName": "Bash", "reason": "", "riskLevel": "medium", "input": {"command": "cargo test"},
        "options": [
            {"optionId": "allow", "kind": "allow", "name": "Allow", "response": {"decision": "allow"}},
            {"optionId": "allow_project", "kind": "allow_project", "name": "Always allow", "response": {"decision": "allow", "permissionUpdates": [{"type": "addRules", "rules": ["Bash(cargo test)"]}]}},
            {"optionId": "deny", "kind": "deny", "name": "Deny", "response": {"decision": "deny", "reason": "User denied"}}]}})
}

#[test]
fn permissions_keep_zcode_options_and_are_answered_exactly_once() {
    let mut driver = opened(true, true);
    prompt(&mut driver);
    let asked = driver.event(permission_request("server-1"));
    assert_eq!(updates(&asked)[0]["title"], "Bash: cargo test");
    let Action::Interaction(interaction) = &asked.actions[1] else { panic!() };
    let InteractionRequest::Permission(request) = &interaction.request else { panic!() };
    assert_eq!(request.deny_option, "deny");
    let acp: Value = serde_json::from_str(&request.request).unwrap();
    let kinds: Vec<_> =
        acp["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    // A re-announce with a new id is the same question: nothing is asked again.
    let again = driver.event(permission_request("server-2"));
    assert!(
        again.actions.iter().all(|a| matches!(a, Action::Ignore(_))) && again.writes.is_empty()
    );

    // V4 answers first; its acknowledgement means the reverse request needs no reply.
    let answer = SessionOp::Answer(InteractionAnswer {
        key: interaction.key.clone(),
        outcome: InteractionOutcome::Selected("allow_project".into()),
    });
    let (sent, steps, step) = driver.run(answer.clone(), &mut |f: &Value| json!({"commandId": f["params"]["commandId"], "status": "accepted", "revisionAtDecision": 9}));
    assert_eq!(sent[0]["params"]["type"], "resolveInteraction");
    assert_eq!(
        sent[0]["params"]["payload"],
        json!({"interactionId": "perm-1", "answer": {"optionId": "allow_project"}})
    );
    assert!(steps.iter().all(|s| s.writes.is_empty()));
    assert!(matches!(step, Step::Done(Ok(_))));
    let (_, _, twice) = driver.run(answer, &mut agent(true));
    assert!(matches!(twice, Step::Done(Err(_))), "a second answer is refused, never sent");
    let late = driver.event(permission_request("server-3"));
    assert!(late.writes.is_empty(), "a re-announce crossing the answer gets no second answer");
}

#[test]
fn a_refused_v4_answer_goes_to_the_newest_reverse_request_once() {
    let mut driver = opened(true, true);
    prompt(&mut driver);
    let asked = driver.event(permission_request("server-1"));
    let Action::Interaction(interaction) = &asked.actions[1] else { panic!() };
    driver.event(permission_request("server-2"));
    let answer = SessionOp::Answer(InteractionAnswer {
        key: interaction.key.clone(),
        outcome: InteractionOutcome::Selected("allow_project".into()),
    });
    let (_, steps, step) = driver.run(answer, &mut |_: &Value| json!({"commandId": "c", "status": "rejected", "reasonCode": "proto.unknownInteraction", "revisionAtDecision": 9}));
    let writes: Vec<Value> =
        steps.iter().flat_map(|s| s.writes.iter().map(|w| line(&w.bytes))).collect();
    assert_eq!(
        writes,
        [
            json!({"id": "server-2", "result": {"decision": "allow", "permissionUpdates": [{"type": "addRules", "rules": ["Bash(cargo test)"]}]}})
        ]
    );
    assert!(matches!(step, Step::Done(Ok(_))));
}

#[test]
fn failures_and_stops_never_allow() {
    let mut legacy = opened(false, true);
    let (_, _, _) = legacy.run(
        SessionOp::Prompt(json!({"prompt": [{"type": "text", "text": "a"}]}).to_string()),
        &mut agent(false),
    );
    let asked = legacy.event(permission_request("server-1"));
    let Action::Interaction(interaction) = &asked.actions[1] else { panic!() };
    let (_, steps, _) = legacy.run(
        SessionOp::Answer(InteractionAnswer {
            key: interaction.key.clone(),
            outcome: InteractionOutcome::Unavailable("timeout".into()),
        }),
        &mut agent(false),
    );
    assert_eq!(
        line(&steps[0].writes[0].bytes),
        json!({"id": "server-1", "result": {"decision": "deny", "reason": "User denied"}})
    );
    // Outside a running turn ZCode is told no at once.
    let (_, _, _) = legacy.run(SessionOp::FinishTurn, &mut agent(false));
    let after = legacy.event(json!({"id": "server-7", "method": "interaction/requestPermission", "params": {"requestId": "perm-2", "sessionId": "sess_1", "toolCallId": "t2", "toolName": "Bash", "reason": "", "riskLevel": "low", "input": {},
        "options": [{"optionId": "ok", "kind": "allow_once", "name": "OK", "response": {"decision": "allow"}}]}}));
    assert_eq!(
        line(&after.writes[0].bytes),
        json!({"id": "server-7", "result": {"decision": "deny"}})
    );
}

#[test]
fn questions_plans_and_elicitations_become_forms() {
    let mut driver = opened(false, true);
    driver.run(
        SessionOp::Prompt(json!({"prompt": [{"type": "text", "text": "a"}]}).to_string()),
        &mut agent(false),
    );
    let asked = driver.event(json!({"id": "server-1", "method": "interaction/requestUserInput", "params": {"requestId": "q-1", "sessionId": "sess_1", "toolName": "AskUserQuestion", "schema": {"toolName": "AskUserQuestion"},
        "questions": [{"question": "Which DB?", "header": "DB", "options": [{"value": "pg", "label": "Postgres"}, {"value": "lite", "label": "SQLite"}]},
                      {"question": "Extras?", "header": "Extras", "multiSelect": true, "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]}]}}));
    let Action::Interaction(interaction) = &asked.actions[0] else { panic!() };
    let InteractionRequest::Elicitation(form) = &interaction.request else { panic!() };
    let form: Value = serde_json::from_str(form).unwrap();
    assert_eq!(
        form["requestedSchema"]["properties"]["q0"]["oneOf"][1],
        json!({"const": "lite", "title": "SQLite"})
    );
    assert_eq!(form["requestedSchema"]["properties"]["q1"]["type"], "array");
    let reply = json!({"action": "accept", "content": {"q0": "pg", "q1": ["a", "b"]}}).to_string();
    let (_, steps, _) = driver.run(
        SessionOp::Answer(InteractionAnswer {
            key: interaction.key.clone(),
            outcome: InteractionOutcome::Elicited(reply),
        }),
        &mut agent(false),
    );
    assert_eq!(
        line(&steps[0].writes[0].bytes),
        json!({"id": "server-1", "result": {"action": "accept", "content": {"answers": {"Which DB?": "pg", "Extras?": "a, b"}}}})
    );

    let plan = driver.event(json!({"id": "server-2", "method": "interaction/requestUserInput", "params": {"requestId": "plan-1", "sessionId": "sess_1", "toolName": "ExitPlanMode", "schema": {"interaction": "plan_approval", "toolName": "ExitPlanMode"}, "input": {"plan": "# Plan"},
        "questions": [{"question": "Review this implementation plan.", "header": "Plan", "options": [{"value": "approve", "label": "Approve"}]}]}}));
    let Action::Interaction(plan) = &plan.actions[0] else { panic!() };
    let feedback =
        json!({"action": "accept", "content": {"decision": "revise", "feedback": "Add tests"}})
            .to_string();
    let (_, steps, _) = driver.run(
        SessionOp::Answer(InteractionAnswer {
            key: plan.key.clone(),
            outcome: InteractionOutcome::Elicited(feedback),
        }),
        &mut agent(false),
    );
    assert_eq!(
        line(&steps[0].writes[0].bytes)["result"],
        json!({"action": "accept", "content": {"answers": {"Review this implementation plan.": "Add tests"}}})
    );

    let mcp = driver.event(json!({"id": "server-3", "method": "interaction/requestUserInput", "params": {"requestId": "mcp-elicit-1", "sessionId": "sess_1", "toolName": "McpElicitation",
        "schema": {"interaction": "mcp_elicitation", "serverName": "gh", "requestedSchema": {}}, "prompt": "Token name?",
        "questions": [{"question": "name", "header": "name", "options": [{"value": "__zcode_free_text__", "label": "Other"}]}]}}));
    let Action::Interaction(mcp) = &mcp.actions[0] else { panic!() };
    let InteractionRequest::Elicitation(form) = &mcp.request else { panic!() };
    assert_eq!(
        serde_json::from_str::<Value>(form).unwrap()["requestedSchema"]["properties"]["q0"],
        json!({"type": "string", "title": "name", "description": "name"})
    );

    let mut headless = opened(false, false);
    headless.run(
        SessionOp::Prompt(json!({"prompt": [{"type": "text", "text": "a"}]}).to_string()),
        &mut agent(false),
    );
    let asked = headless.event(json!({"id": "server-1", "method": "interaction/requestUserInput", "params": {"requestId": "q-1", "sessionId": "sess_1", "questions": [{"question": "Q", "header": "Q", "options": [{"value": "a", "label": "A"}]}]}}));
    let Action::Interaction(interaction) = &asked.actions[0] else { panic!() };
    // A client without forms is asked one single choice as a permission.
    assert!(matches!(interaction.request, InteractionRequest::Permission(_)));
    let (_, steps, _) = headless.run(
        SessionOp::Answer(InteractionAnswer {
            key: interaction.key.clone(),
            outcome: InteractionOutcome::Unavailable("no form".into()),
        }),
        &mut agent(false),
    );
    assert_eq!(
        line(&steps[0].writes[0].bytes)["result"],
        json!({"action": "decline", "reason": "no form"})
    );
}

#[test]
fn coding_plan_keys_are_filled_by_the_core_and_start_plan_is_refused_with_the_reason() {
    let mut driver = opened(true, true);
    prompt(&mut driver);
    let params = |mode: &str| {
        json!({"id": "server-4", "method": "interaction/requestProviderRuntimeHeaders", "params": {"requestId": "h1", "sessionId": "sess_1", "workspace": {"workspacePath": "/w", "workspaceKey": "/w"},
        "modelSelection": {"providerId": "account:zai-individual-coding-plan", "modelId": "GLM-5.3"}, "providerId": "account:zai-individual-coding-plan",
        "accountAccess": {"type": "zhipu-account", "accountType": "zai", "mode": mode, "entitled": true}, "reason": "model-request"}})
    };
    let filled = driver.event(params("individual-coding-plan"));
    let write = &filled.writes[0];
    let secret = write.secret.as_ref().unwrap();
    assert_eq!(secret.source, "coding-plan-api-key");
    assert_eq!(
        secret.args,
        [
            ("provider".to_string(), "account:zai-individual-coding-plan".to_string()),
            ("family".to_string(), "zai".to_string())
        ]
    );
    let bytes = String::from_utf8(write.bytes.clone()).unwrap();
    assert_eq!(bytes.matches(&secret.placeholder).count(), 1);
    assert_eq!(line(&secret.fallback)["result"]["headersApplied"], false);
    assert!(
        line(&secret.fallback)["result"]["errorMessage"].as_str().unwrap().contains("enc:v2"),
        "a 3.18 sign-in the core cannot read is named"
    );
    let refused = driver.event(params("start-plan"));
    let reply = line(&refused.writes[0].bytes);
    assert!(refused.writes[0].secret.is_none());
    assert_eq!(reply["result"]["headersApplied"], false);
    assert!(reply["result"]["errorMessage"].as_str().unwrap().contains("captcha"));
}

#[test]
fn a_v4_gap_is_resynced_and_modes_switch_with_their_revision() {
    let mut driver = opened(true, true);
    let frame = |from: u64, to: u64| {
        json!({"method": "v4/conversation/frame", "params": {"wireVersion": 3, "kind": "complete", "deliveryKind": "online", "logicalFrameId": "f", "logicalFrameOrdinal": 2, "topic": "conversation/sess_1", "subscriptionId": "sub-1",
        "frame": {"topic": "conversation/sess_1", "subscriptionId": "sub-1", "fromSeq": from, "toSeq": to, "sentAt": 1, "payload": {"kind": "deltas", "deltas": [{"op": "state.updated", "patch": {"revision": 12}}]}}}})
    };
    let gap = driver.event(frame(9, 10));
    assert_eq!(gap.requests, 1);
    let issued = driver.session.issue(40).unwrap();
    assert_eq!(
        line(&issued.requests[0].bytes),
        json!({"id": 40, "method": "v4/conversation/resync", "params": {"subscriptionId": "sub-1", "base": {"logEpoch": "e1", "seq": 5}, "topic": "conversation/sess_1", "connectionId": "zcode-acp-sess_1"}})
    );
    let ack = driver
        .session
        .map(vec![SessionInput::Reply(NativeReply {
            id: 40,
            body: ReplyBody::Ok(json!({"ack": {}}).to_string().into()),
        })])
        .unwrap();
    assert!(matches!(ack.actions[0], Action::Ignore(_)));

    let (sent, steps, step) = driver.run(SessionOp::SetMode(json!({"sessionId": "sess_1", "modeId": "guarded"}).to_string()), &mut |f: &Value| {
        if f["method"] == "v4/command" { json!({"commandId": "c", "status": "stale", "reasonCode": "guard.revision", "revisionAtDecision": 12}) } else { json!({}) }
    });
    assert_eq!(sent[0]["params"]["type"], "switchCollaborationMode");
    assert_eq!(sent[0]["params"]["baseRevision"], 7);
    assert_eq!(
        sent[1],
        json!({"id": sent[1]["id"], "method": "session/setMode", "params": {"sessionId": "sess_1", "mode": "guarded"}}),
        "a stale V4 switch falls back once"
    );
    assert!(steps.len() == 2);
    let Step::Done(Ok(result)) = step else { panic!() };
    assert_eq!(
        serde_json::from_str::<Value>(&result.updates[0]).unwrap(),
        json!({"sessionUpdate": "current_mode_update", "currentModeId": "guarded"})
    );
    let (_, _, step) =
        driver.run(SessionOp::SetMode(json!({"modeId": "auto"}).to_string()), &mut agent(true));
    assert!(matches!(step, Step::Done(Err(_))), "auto is not a mode ACP offers");
}

/// A mode is announced once, whichever comes first: the answer to the client's own switch, or
/// ZCode's state naming it (it repeats the mode just switched to, and changes it by itself too,
/// as when an approved plan leaves `plan`).
#[test]
fn a_mode_is_announced_once_whoever_tells_it_first() {
    let mut driver = opened(true, true);
    let mut seq = 5;
    let mut state = |driver: &mut Driver, mode: &str| {
        seq += 1;
        let patch = json!({"op": "state.updated", "patch": {"config": {"mode": mode}}});
        let effects = driver.event(json!({"method": "v4/conversation/frame", "params": {"wireVersion": 3, "kind": "complete", "deliveryKind": "online", "logicalFrameId": format!("f{seq}"), "logicalFrameOrdinal": seq, "topic": "conversation/sess_1", "subscriptionId": "sub-1",
            "frame": {"topic": "conversation/sess_1", "subscriptionId": "sub-1", "fromSeq": seq - 1, "toSeq": seq, "sentAt": 1, "payload": {"kind": "deltas", "deltas": [patch]}}}}));
        updates(&effects)
    };
    let switch = |driver: &mut Driver, mode: &str| {
        let op = SessionOp::SetMode(json!({"sessionId": "sess_1", "modeId": mode}).to_string());
        let (_, _, step) = driver.run(op, &mut agent(true));
        let Step::Done(Ok(result)) = step else { panic!("{step:?}") };
        result.updates.iter().map(|u| serde_json::from_str::<Value>(u).unwrap()).collect::<Vec<_>>()
    };
    let announced =
        |mode: &str| vec![json!({"sessionUpdate": "current_mode_update", "currentModeId": mode})];

    assert_eq!(switch(&mut driver, "plan"), announced("plan"));
    assert_eq!(state(&mut driver, "plan"), Vec::<Value>::new(), "the switch announced it");
    assert_eq!(state(&mut driver, "edit"), announced("edit"), "ZCode's own change");
    assert_eq!(state(&mut driver, "edit"), Vec::<Value>::new());
    assert_eq!(switch(&mut driver, "edit"), Vec::<Value>::new(), "the state announced it");
    assert_eq!(switch(&mut driver, "yolo"), announced("yolo"));
}

#[test]
fn a_v4_switch_to_the_current_mode_or_model_is_done_without_a_fallback() {
    let mut driver = opened(true, true);
    let mut unchanged = |f: &Value| {
        if f["method"] == "v4/command" {
            json!({"commandId": f["params"]["commandId"], "status": "noop",
                   "reasonCode": "config.unchanged", "revisionAtDecision": 7})
        } else {
            panic!("only the V4 switch is sent: {f}")
        }
    };
    let mode = json!({"sessionId": "sess_1", "modeId": "build"}).to_string();
    let (sent, _, step) = driver.run(SessionOp::SetMode(mode), &mut unchanged);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["params"]["type"], "switchCollaborationMode");
    let Step::Done(Ok(_)) = step else { panic!("{step:?}") };
    let model = json!({"sessionId": "sess_1", "configId": "model",
                       "value": "account:zai-individual-coding-plan/GLM-5.3"});
    let (sent, _, step) = driver.run(SessionOp::SetConfigOption(model.to_string()), &mut unchanged);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["params"]["type"], "switchModelConfig");
    assert_eq!(sent[0]["params"]["payload"]["thought"], "high");
    let Step::Done(Ok(result)) = step else { panic!("{step:?}") };
    let result: Value = serde_json::from_str(&result.response).unwrap();
    let options = result["configOptions"].as_array().unwrap();
    let model = options.iter().find(|o| o["category"] == "model").unwrap();
    assert_eq!(model["currentValue"], "account:zai-individual-coding-plan/GLM-5.3");
}

/// The legacy events V4 also carries come on their own route (`connection::carried_route`),
/// which the session holds while it is open without V4: once subscribed, it lets the route go
/// with its next step, and the core drops them.
#[test]
fn the_carried_route_is_held_only_without_v4() {
    for v4 in [true, false] {
        let mut driver = opened(v4, true);
        let prompt = json!({"sessionId": "sess_1", "prompt": [{"type": "text", "text": "Go"}]});
        let (_, steps, _) = driver.run(SessionOp::Prompt(prompt.to_string()), &mut agent(v4));
        let removed: Vec<&String> = steps.iter().flat_map(|s| &s.routes_removed).collect();
        let added: Vec<&String> = steps.iter().flat_map(|s| &s.routes_added).collect();
        assert!(added.is_empty(), "{added:?}");
        let (_, close, _) = driver.run(SessionOp::Close, &mut agent(v4));
        if v4 {
            assert_eq!(removed, ["session/sess_1/v4-carried"]);
            assert_eq!(steps[0].routes_removed, ["session/sess_1/v4-carried"], "before the send");
            assert_eq!(close[0].routes_removed, ["session/sess_1"]);
        } else {
            assert!(removed.is_empty(), "{removed:?}");
            assert_eq!(close[0].routes_removed, ["session/sess_1", "session/sess_1/v4-carried"]);
        }
        assert!(close.iter().all(|s| s.routes_added.is_empty()), "{close:?}");
    }
}

#[test]
fn close_releases_without_deleting() {
    let mut driver = opened(true, true);
    let (sent, steps, step) = driver.run(SessionOp::Close, &mut agent(true));
    assert_eq!(
        sent.iter().map(|f| f["method"].as_str().unwrap()).collect::<Vec<_>>(),
        ["v4/conversation/unsubscribe"]
    );
    assert_eq!(steps[0].routes_removed, ["session/sess_1", "session/sess_1/v4-carried"]);
    assert!(matches!(step, Step::Done(Ok(_))));
}

#[test]
fn load_replays_history_before_it_subscribes() {
    let mut driver = Driver::new(true);
    let messages = json!({"messages": [
        {"info": {"id": "m1", "role": "user"}, "parts": [{"type": "text", "text": "Hi"}]},
        {"info": {"id": "m2", "role": "assistant"}, "parts": [{"type": "reasoning", "text": "think"}, {"type": "tool", "callID": "t1", "tool": "Read", "state": {"status": "completed", "input": {"file_path": "/w/a"}, "output": "x"}}, {"type": "text", "text": "Hello"}]},
        {"info": {"id": "m2", "role": "assistant"}, "parts": [{"type": "text", "text": "Hello"}]},
        {"info": {"id": "m3", "role": "user", "semantics": {"transcriptVisibility": "hidden"}}, "parts": [{"type": "text", "text": "reminder"}]}]});
    let mut answer = agent(true);
    let (sent, steps, step) = driver.run(
        SessionOp::Load(json!({"sessionId": "sess_1", "cwd": "/w", "mcpServers": []}).to_string()),
        &mut |f: &Value| {
            if f["method"] == "session/messages" { messages.clone() } else { answer(f) }
        },
    );
    let methods: Vec<_> = sent.iter().map(|f| f["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        [
            "runtime/capabilities",
            "session/setMode",
            "session/resume",
            "session/messages",
            "session/subscribe",
            "v4/connection/flow",
            "v4/conversation/subscribe"
        ]
    );
    let streamed: Vec<Value> = steps
        .iter()
        .flat_map(|s| s.updates.iter().map(|u| serde_json::from_str(u).unwrap()))
        .collect();
    let kinds: Vec<_> = streamed.iter().map(|u| u["sessionUpdate"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["user_message_chunk", "agent_thought_chunk", "tool_call", "agent_message_chunk"]
    );
    assert_eq!(streamed[2]["status"], "completed");
    assert_eq!(
        streamed[2]["content"],
        json!([{"type": "content", "content": {"type": "text", "text": "x"}}]),
        "the tool's output as the live turn showed it"
    );
    let Step::Done(Ok(result)) = step else { panic!() };
    assert!(serde_json::from_str::<Value>(&result.response).unwrap().get("sessionId").is_none());
}

// ----- V4 conversation as the content source --------------------------------------------

/// A `v4/conversation/frame` of deltas on the tests' subscription.
fn frame(from: u64, to: u64, delivery: &str, deltas: Value) -> Value {
    json!({"method": "v4/conversation/frame", "params": {"wireVersion": 3, "kind": "complete", "deliveryKind": delivery, "logicalFrameId": format!("f{to}"), "logicalFrameOrdinal": to, "topic": "conversation/sess_1", "subscriptionId": "sub-1",
        "frame": {"topic": "conversation/sess_1", "subscriptionId": "sub-1", "fromSeq": from, "toSeq": to, "sentAt": 1, "payload": {"kind": "deltas", "deltas": deltas}}}})
}

fn row(id: u64, turn: &str, kind: &str, rest: Value) -> Value {
    let mut row =
        json!({"rowId": id, "turnId": turn, "createdAt": 1, "createdAtSeq": id, "kind": kind});
    row.as_object_mut().unwrap().extend(rest.as_object().unwrap().clone());
    row
}

fn header(id: u64, turn: &str, command: &str, state: &str) -> Value {
    row(
        id,
        turn,
        "turnHeader",
        json!({"origin": "userInput", "sourceCommandId": command, "state": state, "startedAt": 1}),
    )
}

const EDIT_INPUT: &str = r#"{"file_path":"/w/a.rs","old_string":"a","new_string":"b"}"#;

/// The same turn as the legacy stream carries it: thinking, text, an Edit that runs and
/// succeeds, more text, the end with usage.
fn legacy_turn() -> Vec<Value> {
    vec![
        event(5, "turn.started", json!({"turnId": "t1", "turnNumber": 1, "input": "Fix it"})),
        event(6, "model.streaming", json!({"kind": "reasoning_delta", "delta": "hm"})),
        event(7, "model.streaming", json!({"kind": "text_delta", "delta": "Run"})),
        event(8, "model.streaming", json!({"kind": "text_delta", "delta": "ning."})),
        event(
            9,
            "model.streaming",
            json!({"kind": "tool_input_start", "toolCallId": "t1", "toolName": "Edit"}),
        ),
        event(
            10,
            "model.streaming",
            json!({"kind": "tool_call", "toolCallId": "t1", "toolName": "Edit", "input": serde_json::from_str::<Value>(EDIT_INPUT).unwrap()}),
        ),
        event(
            11,
            "tool.updated",
            json!({"kind": "scheduled", "toolCallId": "t1", "toolName": "Edit"}),
        ),
        event(12, "tool.updated", json!({"kind": "started", "toolCallId": "t1", "startedAt": 1})),
        event(
            13,
            "tool.updated",
            json!({"kind": "result", "toolCallId": "t1", "result": {"success": true, "content": "ok"}}),
        ),
        event(14, "model.streaming", json!({"kind": "text_delta", "delta": "Done"})),
        event(15, "session.updated", json!({"usage": {"inputTokens": 6}, "contextWindow": 200})),
        event(
            16,
            "turn.completed",
            json!({"resultType": "success", "usage": {"inputTokens": 6, "outputTokens": 3}}),
        ),
    ]
}

/// The V4 frames ZCode projects from the same events (3.15.1 `product-projection.ts`): the
/// turn header, the prompt's echo, rows opened empty and grown by `row.delta`, the tool row
/// from input to result, the usage patch, and the header closed with the streaming rows.
fn v4_turn(command: &str) -> Vec<Value> {
    let input: Value = serde_json::from_str(EDIT_INPUT).unwrap();
    let tool = |status: &str, extra: Value| {
        let mut rest = json!({"toolCallId": "t1", "toolName": "Edit", "status": status, "inputText": EDIT_INPUT, "input": input});
        rest.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        row(5, "turn-1", "toolCall", rest)
    };
    vec![
        frame(
            5,
            7,
            "online",
            json!([
                {"op": "row.appended", "row": header(1, "turn-1", command, "running")},
                {"op": "row.appended", "row": row(2, "turn-1", "userInput", json!({"text": "Fix it", "origin": "realUser"}))},
                {"op": "row.appended", "row": row(3, "turn-1", "reasoning", json!({"text": "", "state": "streaming"}))},
                {"op": "row.delta", "rowId": 3, "path": "text", "append": "hm"},
                {"op": "row.upserted", "row": row(3, "turn-1", "reasoning", json!({"text": "hm", "state": "complete"}))},
                {"op": "row.appended", "row": row(4, "turn-1", "assistantText", json!({"text": "", "state": "streaming"}))},
                {"op": "row.delta", "rowId": 4, "path": "text", "append": "Running."},
                {"op": "state.updated", "patch": {"revision": 8}},
            ]),
        ),
        frame(
            7,
            9,
            "online",
            json!([
                {"op": "row.upserted", "row": row(4, "turn-1", "assistantText", json!({"text": "Running.", "state": "complete"}))},
                {"op": "row.appended", "row": row(5, "turn-1", "toolCall", json!({"toolCallId": "t1", "toolName": "Edit", "status": "inputStreaming", "inputText": ""}))},
                {"op": "row.delta", "rowId": 5, "path": "inputText", "append": EDIT_INPUT},
                {"op": "row.upserted", "row": tool("inputStreaming", json!({}))},
                {"op": "row.upserted", "row": tool("running", json!({"startedAt": 2}))},
            ]),
        ),
        frame(
            9,
            12,
            "online",
            json!([
                {"op": "row.upserted", "row": tool("success", json!({"output": {"text": "ok"}, "endedAt": 3}))},
                {"op": "row.appended", "row": row(6, "turn-1", "assistantText", json!({"text": "", "state": "streaming"}))},
                {"op": "row.delta", "rowId": 6, "path": "text", "append": "Done"},
                {"op": "state.updated", "patch": {"usage": {"contextWindow": {"usedTokens": 6, "maxTokens": 200, "autoCompactThresholdTokens": null}, "cumulative": {"inputTokens": 6, "outputTokens": 3, "cacheReadTokens": 0, "cacheWriteTokens": 0}}}},
            ]),
        ),
        frame(
            12,
            14,
            "online",
            json!([
                {"op": "row.upserted", "row": row(6, "turn-1", "assistantText", json!({"text": "Done", "state": "complete"}))},
                {"op": "row.upserted", "row": header(1, "turn-1", command, "completedSuccess")},
                {"op": "state.updated", "patch": {"revision": 9}},
            ]),
        ),
    ]
}

/// What the client sees: updates with consecutive chunks of one kind joined (V4 coalesces
/// appends, so chunk boundaries are not part of the surface), and the terminal.
fn surface(effects: &[Effects]) -> (Vec<Value>, Vec<Terminal>) {
    let mut out: Vec<Value> = Vec::new();
    let mut ends = Vec::new();
    for action in effects.iter().flat_map(|e| e.actions.iter()) {
        match action {
            Action::Update(u) => {
                let mut u: Value = serde_json::from_str(u).unwrap();
                // The raw native result is ZCode's own object, which differs by stream.
                u.as_object_mut().unwrap().remove("rawOutput");
                let kind = u["sessionUpdate"].as_str().unwrap().to_string();
                match out.last_mut() {
                    Some(last)
                        if kind.ends_with("_chunk") && last["sessionUpdate"] == kind.as_str() =>
                    {
                        let joined = format!(
                            "{}{}",
                            last["content"]["text"].as_str().unwrap(),
                            u["content"]["text"].as_str().unwrap()
                        );
                        last["content"]["text"] = json!(joined);
                    }
                    _ => out.push(u),
                }
            }
            Action::Terminal(t) => ends.push(t.clone()),
            _ => {}
        }
    }
    (out, ends)
}

#[test]
fn a_v4_turn_shows_what_the_legacy_stream_showed_and_nothing_twice() {
    let mut legacy = opened(false, true);
    prompt(&mut legacy);
    let legacy_effects: Vec<Effects> = legacy_turn().into_iter().map(|e| legacy.event(e)).collect();
    let (expected, legacy_end) = surface(&legacy_effects);
    assert_eq!(legacy_end, [Terminal::Stop(StopReason::EndTurn)]);
    let shape: Vec<_> = expected
        .iter()
        .map(|u| {
            format!(
                "{} {}",
                u["sessionUpdate"].as_str().unwrap(),
                u["status"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            "agent_thought_chunk ",
            "agent_message_chunk ",
            "tool_call pending",
            "tool_call_update in_progress",
            "tool_call_update completed",
            "agent_message_chunk ",
            "usage_update "
        ]
    );
    assert_eq!(expected[4]["content"][0]["type"], "diff");
    assert_eq!(expected[4]["content"][1]["content"]["text"], "ok");

    let mut driver = opened(true, true);
    let sent = prompt(&mut driver);
    let command = sent[0]["params"]["commandId"].as_str().unwrap().to_string();
    // Both streams run side by side; the legacy events arrive first (V4 is flushed on a timer).
    let mut effects: Vec<Effects> = legacy_turn().into_iter().map(|e| driver.event(e)).collect();
    assert!(
        effects.iter().all(|e| e.actions.iter().all(|a| matches!(a, Action::Ignore(_)))),
        "with V4, legacy content is not shown and the end waits: {effects:?}"
    );
    let frames = v4_turn(&command);
    let last = frames.len() - 1;
    for (i, frame) in frames.into_iter().enumerate() {
        let e = driver.event(frame);
        if i < last {
            assert!(!e.actions.iter().any(|a| matches!(a, Action::Terminal(_))));
        }
        effects.push(e);
    }
    let (actual, ends) = surface(&effects);
    assert_eq!(actual, expected);
    assert_eq!(ends, [Terminal::Stop(StopReason::EndTurn)]);
    // The end comes after the last content, in the frame that closed the turn header.
    let final_actions = &effects.last().unwrap().actions;
    assert!(matches!(final_actions.last(), Some(Action::Terminal(_))));
    let (_, _, step) = driver.run(SessionOp::FinishTurn, &mut agent(true));
    let Step::Done(Ok(usage)) = step else { panic!() };
    assert_eq!(
        serde_json::from_str::<Value>(&usage.response).unwrap(),
        json!({"inputTokens": 6, "outputTokens": 3, "totalTokens": 9}),
        "per-turn usage comes from the legacy end, which V4 does not carry"
    );
}

/// The connection joins a read's frames for the session, one a line
/// (`connection::a_reads_frames_for_a_session_cross_as_one_input`): the session maps each
/// line as it maps a frame that came alone, and a line it cannot read breaks the turn as that
/// frame would have, the lines after it mapped as ever.
#[test]
fn joined_frames_map_as_they_map_alone() {
    let check = |v4: bool, frames: &dyn Fn(&str) -> Vec<Value>| {
        let (mut alone, mut joined) = (opened(v4, true), opened(v4, true));
        let sent = prompt(&mut alone);
        let command = sent[0]["params"]["commandId"].as_str().unwrap_or_default().to_string();
        prompt(&mut joined);
        let frames = frames(&command);
        let mut expected = Effects::default();
        for effects in frames.iter().map(|frame| alone.event(frame.clone())) {
            expected.actions.extend(effects.actions);
            expected.writes.extend(effects.writes);
            expected.requests += effects.requests;
        }
        let text = frames.iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
        let actual = joined.session.map(vec![SessionInput::Event(text.into())]).unwrap();
        assert_eq!(actual, expected);
        expected
    };
    let ends = |effects: &Effects| {
        effects.actions.iter().filter(|a| matches!(a, Action::Terminal(_))).count()
    };
    let legacy = check(false, &|_| legacy_turn());
    assert_eq!(ends(&legacy), 1, "{legacy:?}");
    let both = check(true, &|command| legacy_turn().into_iter().chain(v4_turn(command)).collect());
    assert!(updates(&both).len() > 5 && ends(&both) == 1, "{both:?}");
    // A frame that cannot be read, in the middle: the turn breaks there, and what follows is
    // mapped as it would have been after a frame of its own.
    let broken = check(true, &|command| {
        let mut frames = v4_turn(command);
        frames.insert(2, json!({"method": "v4/conversation/frame", "params": {"wireVersion": 99}}));
        frames
    });
    assert!(
        broken.actions.iter().any(|a| matches!(a, Action::Terminal(Terminal::Broken(_)))),
        "{broken:?}"
    );
}

#[test]
fn the_turn_ends_when_both_streams_have_ended_it_in_either_order() {
    let mut driver = opened(true, true);
    let sent = prompt(&mut driver);
    let command = sent[0]["params"]["commandId"].as_str().unwrap().to_string();
    for frame in v4_turn(&command) {
        let e = driver.event(frame);
        assert!(
            !e.actions.iter().any(|a| matches!(a, Action::Terminal(_))),
            "no end before the legacy result"
        );
    }
    let end = driver.event(event(5, "turn.completed", json!({"resultType": "error_max_turns"})));
    assert_eq!(end.actions, [Action::Terminal(Terminal::Stop(StopReason::MaxTurnRequests))]);

    // A failed turn is held the same way; an unknown event never is.
    let mut driver = opened(true, true);
    let sent = prompt(&mut driver);
    let command = sent[0]["params"]["commandId"].as_str().unwrap().to_string();
    driver.event(frame(
        5,
        6,
        "online",
        json!([{"op": "row.appended", "row": header(1, "turn-1", &command, "running")}]),
    ));
    let failed = driver.event(event(
        5,
        "turn.failed",
        json!({"error": {"message": "quota", "code": "model_request_failed"}}),
    ));
    assert!(matches!(failed.actions[..], [Action::Ignore(_)]));
    let unknown = driver.event(event(6, "turn.reticulated", json!({})));
    assert!(matches!(&unknown.actions[0], Action::Terminal(Terminal::Broken(_))));
    let closed = driver.event(frame(
        6,
        7,
        "online",
        json!([{"op": "row.upserted", "row": header(1, "turn-1", &command, "failed")}]),
    ));
    assert!(
        matches!(&closed.actions[..], [Action::Ignore(_), Action::Terminal(Terminal::Failed(e))] if e.message == "quota")
    );
}

#[test]
fn a_gap_in_the_legacy_event_numbers_breaks_the_running_turn() {
    // ZCode replays what it kept, and it kept nothing of the gap: the turn breaks. (With V4
    // the legacy numbers skip by design: `a_legacy_delta_v4_carries_is_dropped_and_its_number_skipped`.)
    let mut driver = opened(false, true);
    prompt(&mut driver);
    let next = driver.event(event(5, "turn.started", json!({})));
    assert!(matches!(next.actions[..], [Action::Ignore(_)]));
    let completed = event(9, "turn.completed", json!({"resultType": "success"}));
    let replayed =
        replay(&mut driver, completed.clone(), 5, json!({"events": [completed["params"]]}));
    assert!(
        matches!(&replayed.actions[..], [Action::Terminal(Terminal::Broken(e)), ..] if e.message.contains("expected event 6, got 9")),
        "{replayed:?}"
    );
    // A replay ZCode refuses breaks it too.
    let mut driver = opened(false, true);
    prompt(&mut driver);
    driver.event(event(5, "turn.started", json!({})));
    let error = json!({"error": {"code": -32004, "message": "Session is not active: sess_1"}});
    let refused =
        replay(&mut driver, event(9, "turn.completed", json!({"resultType": "success"})), 5, error);
    assert!(
        matches!(&refused.actions[..], [Action::Terminal(Terminal::Broken(e))] if e.message.contains("could not replay") && e.message.contains("not active")),
        "{refused:?}"
    );
}

/// Skipped events ZCode still has are replayed (`session/events` `afterSeq`, "ZCode app-server
/// Session Protocol" probe log §8.3), and what came meanwhile waits behind them: the turn goes
/// on with nothing lost and nothing twice.
#[test]
fn skipped_legacy_events_are_replayed_and_the_turn_goes_on() {
    let mut driver = opened(false, true);
    prompt(&mut driver);
    let text = |seq: u64, delta: &str| {
        event(
            seq,
            "model.streaming",
            json!({"kind": "text_delta", "delta": delta, "assistantMessageId": "m1"}),
        )
    };
    driver.event(event(5, "turn.started", json!({"turnNumber": 0})));
    driver.event(text(6, "a"));
    // 7 and 8 never came; 9 shows the gap and 10 comes while the replay is out.
    let gap = driver.event(text(9, "d"));
    assert_eq!(gap.requests, 1, "{gap:?}");
    let issued = driver.session.issue(60).unwrap();
    assert_eq!(
        line(&issued.requests[0].bytes),
        json!({"id": 60, "method": "session/events", "params": {"sessionId": "sess_1", "afterSeq": 6}})
    );
    let held = driver.event(text(10, "e"));
    assert!(matches!(&held.actions[..], [Action::Ignore(why)] if why.contains("held")), "{held:?}");
    let events: Vec<Value> = [text(7, "b"), text(8, "c"), text(9, "d")]
        .into_iter()
        .map(|e| e["params"].clone())
        .collect();
    let replayed = driver
        .session
        .map(vec![SessionInput::Reply(NativeReply {
            id: 60,
            body: ReplyBody::Ok(json!({"events": events, "eventSeq": 9}).to_string().into()),
        })])
        .unwrap();
    let mut chunks = String::new();
    for action in &replayed.actions {
        match action {
            Action::Update(update) => {
                let update: Value = serde_json::from_str(update).unwrap();
                chunks.push_str(update["content"]["text"].as_str().unwrap_or(""));
            }
            Action::Terminal(end) => panic!("the turn ended: {end:?}"),
            _ => {}
        }
    }
    assert_eq!(chunks, "bcde", "the skipped text in order, then what was held, once each");
    // The turn goes on: its end ends it.
    let end = driver.event(event(11, "turn.completed", json!({"resultType": "success"})));
    assert!(
        end.actions
            .iter()
            .any(|a| matches!(a, Action::Terminal(Terminal::Stop(StopReason::EndTurn)))),
        "{end:?}"
    );
}

/// Sends `gap` (an event past a gap after `last`), checks the replay asked for, and answers
/// it with `answer`; returns what the answer mapped to.
fn replay(driver: &mut Driver, gap: Value, last: u64, answer: Value) -> Effects {
    let effects = driver.event(gap);
    assert_eq!(effects.requests, 1, "{effects:?}");
    let issued = driver.session.issue(70).unwrap();
    assert_eq!(line(&issued.requests[0].bytes)["params"]["afterSeq"], last);
    let body = match answer.get("error") {
        Some(error) => ReplyBody::Error(crate::wire::native_error(error)),
        None => ReplyBody::Ok(answer.to_string().into()),
    };
    driver.session.map(vec![SessionInput::Reply(NativeReply { id: 70, body })]).unwrap()
}

#[test]
fn a_legacy_delta_v4_carries_is_dropped_and_its_number_skipped() {
    let mut driver = opened(true, true);
    prompt(&mut driver);
    let delta =
        |seq: u64| event(seq, "model.streaming", json!({"kind": "text_delta", "delta": "x"}));
    let carried = Action::Ignore("model.streaming (carried by the V4 conversation)".to_string());
    assert_eq!(driver.event(delta(5)).actions, std::slice::from_ref(&carried));
    // However it is written: an escaped type, the members in another order.
    let escaped = r#"{"method":"session/event","params":{"payload":{"kind":"text_delta","delta":"y"},"type":"model.str\u0065aming","seq":6,"sessionId":"sess_1"}}"#;
    let effects =
        driver.session.map(vec![SessionInput::Event(escaped.to_string().into())]).unwrap();
    assert_eq!(effects.actions, std::slice::from_ref(&carried));
    assert_eq!(
        driver.event(delta(6)).actions,
        [Action::Ignore("duplicate session event".to_string())]
    );
    // A member named twice goes the general way: the last one counts, as in a tree.
    let twice = r#"{"method":"session/event","params":{"sessionId":"sess_1","seq":1,"seq":7,"type":"model.streaming","payload":{}}}"#;
    let effects = driver.session.map(vec![SessionInput::Event(twice.to_string().into())]).unwrap();
    assert_eq!(effects.actions, [carried]);
    // The connection routes these apart and the core drops them once V4 is subscribed
    // (`connection::carried_route`), so the numbers skip: no gap, no replay, and the turn ends.
    let skipped = driver.event(event(12, "turn.completed", json!({"resultType": "success"})));
    assert_eq!(skipped.requests, 0, "{skipped:?}");
    assert_eq!(skipped.actions, [Action::Ignore("turn end waits for the V4 conversation".into())]);
    // Numbers at or below the last one seen are still duplicates.
    assert_eq!(
        driver.event(delta(10)).actions,
        [Action::Ignore("duplicate session event".to_string())]
    );
}

#[test]
fn without_v4_the_legacy_delta_is_the_content() {
    let mut driver = opened(false, true);
    prompt(&mut driver);
    let effects =
        driver.event(event(5, "model.streaming", json!({"kind": "text_delta", "delta": "hi"})));
    assert_eq!(
        updates(&effects),
        [
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})
        ]
    );
    let unknown = driver.event(event(6, "model.streaming", json!({"kind": "text_sparkle"})));
    assert!(matches!(&unknown.actions[..], [Action::Terminal(Terminal::Broken(_))]), "{unknown:?}");
}

/// A V4 session whose turn streams into text row 2 of turn 1 (`a` so far).
fn streaming_text_row() -> Driver {
    let mut driver = opened(true, true);
    let sent = prompt(&mut driver);
    let command = sent[0]["params"]["commandId"].as_str().unwrap().to_string();
    driver.event(frame(5, 6, "online", json!([
        {"op": "row.appended", "row": header(1, "turn-1", &command, "running")},
        {"op": "row.appended", "row": row(2, "turn-1", "assistantText", json!({"text": "a", "state": "streaming"}))},
    ])));
    driver
}

/// A V4 delta that appends `text` to row 2's text.
fn append(text: &str) -> Value {
    json!({"op": "row.delta", "rowId": 2, "path": "text", "append": text})
}

#[test]
fn appended_text_reads_the_same_however_its_frame_is_written() {
    let mut driver = streaming_text_row();
    let chunk = |text: &str| json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}});
    let appended = driver.event(frame(6, 7, "online", json!([append("b"), append("c\n\"")])));
    assert_eq!(updates(&appended), [chunk("b"), chunk("c\n\"")]);
    // Members in another order, an escape, spaces.
    let escaped = r#"{"params": {"frame": {"payload": {"deltas": [{"append": "\u0064", "path": "text", "rowId": 2, "op": "row.delta"}], "kind": "deltas"}, "toSeq": 8, "fromSeq": 7}, "subscriptionId": "sub-1", "kind": "complete", "wireVersion": 3}, "method": "v4/conversation/frame"}"#;
    let effects =
        driver.session.map(vec![SessionInput::Event(escaped.to_string().into())]).unwrap();
    assert_eq!(updates(&effects), [chunk("d")]);
    // The same frame again is a duplicate; one past a gap is resynced, not shown.
    let again = driver.event(frame(7, 8, "online", json!([append("d")])));
    assert_eq!(again.actions, [Action::Ignore("duplicate frame".to_string())]);
    let past = driver.event(frame(9, 10, "online", json!([append("z")])));
    assert!(updates(&past).is_empty());
    assert_eq!(past.requests, 1);
    // A frame whose frame is a row of values is no frame.
    let mut shaped = frame(8, 9, "online", json!([append("e")]));
    shaped["params"]["frame"] = json!([8, 9, {"kind": "deltas", "deltas": [append("e")]}]);
    let refused = driver.event(shaped);
    assert!(
        matches!(&refused.actions[..], [Action::Terminal(Terminal::Broken(e))] if e.message == "V4 frame without fromSeq"),
        "{refused:?}"
    );
}

/// A frame that fails takes back what it added before failing, and only that: what the frames
/// before it in the same input showed stays.
#[test]
fn a_frame_that_fails_takes_back_only_its_own_updates() {
    let mut driver = streaming_text_row();
    let shown = frame(6, 7, "online", json!([append("b")]));
    let failing = frame(7, 8, "online", json!([append("c"), {"op": "row.reticulated"}]));
    let input = format!("{shown}\n{failing}");
    let effects = driver.session.map(vec![SessionInput::Event(input.into())]).unwrap();
    assert!(
        matches!(&effects.actions[..], [Action::Update(_), Action::Terminal(Terminal::Broken(e))] if e.message.contains("row.reticulated")),
        "{effects:?}"
    );
    assert_eq!(
        updates(&effects),
        [json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "b"}})]
    );
}

#[test]
fn the_end_of_a_turn_is_read_without_its_text() {
    let finish = |end: &str| {
        let mut driver = opened(false, true);
        prompt(&mut driver);
        let effects =
            driver.session.map(vec![SessionInput::Event(end.to_string().into())]).unwrap();
        let (_, _, step) = driver.run(SessionOp::FinishTurn, &mut agent(false));
        let Step::Done(Ok(usage)) = step else { panic!("{step:?}") };
        (effects.actions, serde_json::from_str::<Value>(&usage.response).unwrap())
    };
    // Its text first, 8 MB of it, and escapes: what counts is read all the same.
    let end = format!(
        r#"{{"method":"session/event","params":{{"sessionId":"sess_1","seq":5,"type":"turn.completed","payload":{{"response":"{}","usage":{{"outputTokens":3,"inputTokens":6}},"result\u0054ype":"succ\u0065ss"}}}}}}"#,
        "x".repeat(8 << 20)
    );
    assert_eq!(
        finish(&end),
        (
            vec![Action::Terminal(Terminal::Stop(StopReason::EndTurn))],
            json!({"inputTokens": 6, "outputTokens": 3, "totalTokens": 9})
        )
    );
    // A payload it cannot read so goes the general way: no result type is no success.
    let (actions, usage) = finish(
        r#"{"method":"session/event","params":{"sessionId":"sess_1","seq":5,"type":"turn.completed","payload":[1]}}"#,
    );
    assert!(
        matches!(&actions[..], [Action::Terminal(Terminal::Failed(e))] if e.message == "ZCode ended the turn with result (none)"),
        "{actions:?}"
    );
    assert_eq!(usage, Value::Null);
    let (actions, _) = finish(
        r#"{"method":"session/event","params":{"sessionId":"sess_1","seq":5,"type":"turn.completed","payload":{"resultType":"cancelled","resultType":"success","usage":null}}}"#,
    );
    assert_eq!(
        actions,
        [Action::Terminal(Terminal::Stop(StopReason::EndTurn))],
        "the last one counts"
    );
}

#[test]
fn only_the_turn_of_the_prompt_is_shown() {
    let mut driver = opened(true, true);
    let sent = prompt(&mut driver);
    let command = sent[0]["params"]["commandId"].as_str().unwrap().to_string();
    // Another client's command starts a turn first (queued before ours): not ours.
    let other = driver.event(frame(5, 6, "online", json!([
        {"op": "row.appended", "row": header(1, "turn-0", "their-command", "running")},
        {"op": "row.appended", "row": row(2, "turn-0", "assistantText", json!({"text": "theirs", "state": "streaming"}))},
        {"op": "row.delta", "rowId": 2, "path": "text", "append": " more"},
        {"op": "row.upserted", "row": header(1, "turn-0", "their-command", "completedSuccess")},
    ])));
    assert!(updates(&other).is_empty());
    let ours = driver.event(frame(6, 7, "online", json!([
        {"op": "row.appended", "row": header(3, "turn-1", &command, "running")},
        {"op": "row.appended", "row": row(4, "turn-1", "assistantText", json!({"text": "mine", "state": "streaming"}))},
    ])));
    assert_eq!(
        updates(&ours),
        [
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "mine"}})
        ]
    );
    let end = driver.event(event(5, "turn.completed", json!({"resultType": "success"})));
    assert!(
        matches!(end.actions[..], [Action::Ignore(_)]),
        "their closed header does not end our turn"
    );
}

#[test]
fn a_sequence_gap_mid_turn_is_resynced_and_loses_nothing() {
    let mut driver = opened(true, true);
    let sent = prompt(&mut driver);
    let command = sent[0]["params"]["commandId"].as_str().unwrap().to_string();
    let first = driver.event(frame(5, 6, "online", json!([
        {"op": "row.appended", "row": header(1, "turn-1", &command, "running")},
        {"op": "row.appended", "row": row(2, "turn-1", "assistantText", json!({"text": "Hel", "state": "streaming"}))},
    ])));
    assert_eq!(updates(&first)[0]["content"]["text"], "Hel");
    // Frame (6, 8] is lost; the next one cannot be applied.
    let gap = driver.event(frame(
        8,
        9,
        "online",
        json!([{"op": "row.delta", "rowId": 2, "path": "text", "append": "!"}]),
    ));
    assert_eq!(gap.requests, 1);
    assert!(updates(&gap).is_empty());
    let issued = driver.session.issue(50).unwrap();
    assert_eq!(
        line(&issued.requests[0].bytes)["params"]["base"],
        json!({"logEpoch": "e1", "seq": 6})
    );
    let past = driver.event(frame(
        9,
        10,
        "online",
        json!([{"op": "row.delta", "rowId": 2, "path": "text", "append": "?"}]),
    ));
    assert!(updates(&past).is_empty(), "frames past the gap wait for the recovery");
    // ZCode could not resume from the base and sends a recovery snapshot: the rows as they are.
    let snapshot = json!({"method": "v4/conversation/frame", "params": {"wireVersion": 3, "kind": "complete", "deliveryKind": "recovery", "logicalFrameId": "r", "logicalFrameOrdinal": 20, "topic": "conversation/sess_1", "subscriptionId": "sub-1",
    "frame": {"topic": "conversation/sess_1", "subscriptionId": "sub-1", "fromSeq": 0, "toSeq": 10, "sentAt": 1, "payload": {"kind": "snapshot", "snapshot": {"logEpoch": "e1", "seq": 10, "revision": 9, "meta": {"title": "Greeting", "titleSource": "generated"}, "plan": null,
        "rows": {"totalCount": 3, "firstRowId": 1, "window": [
            header(1, "turn-1", &command, "running"),
            row(2, "turn-1", "assistantText", json!({"text": "Hello!?", "state": "complete"})),
            row(3, "turn-1", "reasoning", json!({"text": "done", "state": "complete"})),
        ]}}}}}});
    let recovered = driver.event(snapshot);
    assert_eq!(
        updates(&recovered),
        [
            json!({"sessionUpdate": "session_info_update", "title": "Greeting"}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lo!?"}}),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "done"}}),
        ]
    );
    // Replaying the same rows again shows nothing new.
    let again = driver.event(frame(10, 11, "online", json!([{"op": "row.upserted", "row": row(2, "turn-1", "assistantText", json!({"text": "Hello!?", "state": "complete"}))}])));
    assert!(updates(&again).is_empty());
}

#[test]
fn a_v4_stream_it_cannot_read_breaks_the_turn() {
    let broken = |deltas: Value| {
        let mut driver = opened(true, true);
        let sent = prompt(&mut driver);
        let command = sent[0]["params"]["commandId"].as_str().unwrap().to_string();
        driver.event(frame(5, 6, "online", json!([
            {"op": "row.appended", "row": header(1, "turn-1", &command, "running")},
            {"op": "row.appended", "row": row(2, "turn-1", "assistantText", json!({"text": "abc", "state": "streaming"}))},
        ])));
        let e = driver.event(frame(6, 7, "online", deltas));
        match e.actions.last() {
            Some(Action::Terminal(Terminal::Broken(error))) => error.message.clone(),
            other => panic!("{other:?}"),
        }
    };
    assert!(broken(json!([{"op": "row.moved", "rowId": 2}])).contains("row.moved"));
    assert!(
        broken(json!([{"op": "row.appended", "row": row(3, "turn-1", "hologram", json!({}))}]))
            .contains("hologram")
    );
    assert!(broken(json!([{"op": "row.upserted", "row": row(2, "turn-1", "assistantText", json!({"text": "xyz", "state": "complete"}))}])).contains("rewrote"));
    assert!(broken(json!([{"op": "row.delta", "rowId": 2, "path": "text"}])).contains("append"));
    // Text appends read typed fail closed as the tree did.
    assert_eq!(
        broken(json!([["row.delta", 2, "text", "x"]])),
        "V4 delta without `op`",
        "a delta is an object, not a row of values"
    );
    assert_eq!(
        broken(json!([{"op": "row.delta", "rowId": 2.0, "path": "text", "append": "x"}])),
        "V4 row delta whose `rowId` is not a row id"
    );
    assert_eq!(
        broken(json!([{"op": "row.delta", "rowId": 2, "path": "colour", "append": "x"}])),
        "V4 row delta of unknown path colour"
    );
    assert_eq!(
        broken(json!([{"op": "row.delta", "rowId": 2, "path": "text", "append": 7}])),
        "V4 row delta whose `append` is not a string"
    );
    assert!(broken(json!([{"op": "row.appended", "row": row(3, "turn-1", "toolCall", json!({"toolCallId": "x", "toolName": "Bash", "status": "levitating", "inputText": "{}"}))}])).contains("levitating"));
}

#[test]
fn titles_and_usage_come_from_v4_once() {
    let mut driver = opened(true, true);
    let titled = driver.event(frame(5, 6, "online", json!([{"op": "state.updated", "patch": {"meta": {"title": "Fix it", "titleSource": "generated"}, "revision": 8}}])));
    assert_eq!(
        updates(&titled),
        [json!({"sessionUpdate": "session_info_update", "title": "Fix it"})]
    );
    let same = driver.event(frame(6, 7, "online", json!([{"op": "state.updated", "patch": {"meta": {"title": "Fix it", "titleSource": "generated"}}}])));
    assert!(updates(&same).is_empty());
    let legacy = driver.event(event(5, "session.titleUpdated", json!({"title": "Fix it"})));
    assert!(updates(&legacy).is_empty(), "the legacy title is the same fact");
}

#[test]
fn an_evicted_session_is_resumed_and_the_prompt_sent_again() {
    let mut driver = opened(true, true);
    let mut commands = 0;
    let mut evicted = agent(true);
    let (sent, _, step) = driver.run(
        SessionOp::Prompt(json!({"prompt": [{"type": "text", "text": "Fix it"}]}).to_string()),
        &mut |f: &Value| match f["method"].as_str().unwrap() {
            "v4/command" => {
                commands += 1;
                if commands == 1 {
                    json!({"commandId": f["params"]["commandId"], "status": "rejected",
                           "reasonCode": "proto.sessionNotFound", "revisionAtDecision": 0})
                } else {
                    json!({"commandId": f["params"]["commandId"], "status": "accepted", "revisionAtDecision": 1})
                }
            }
            "v4/conversation/subscribe" => {
                json!({"ack": {"subscriptionId": "sub-2", "mode": "snapshot", "logEpoch": "e2"}})
            }
            _ => evicted(f),
        },
    );
    assert!(matches!(step, Step::Done(Ok(_))), "{step:?}");
    let methods: Vec<_> = sent.iter().map(|f| f["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        [
            "v4/command",
            "session/resume",
            "session/subscribe",
            "v4/conversation/subscribe",
            "v4/command"
        ]
    );
    assert_eq!(sent[1]["params"]["sessionId"], "sess_1");
    assert_eq!(sent[1]["params"]["mcpServers"], json!([]));
    assert_ne!(sent[0]["params"]["commandId"], sent[4]["params"]["commandId"]);
    assert_eq!(sent[4]["params"]["payload"]["text"], "Fix it");
    // Frames of the new subscription are applied; the old one's are not.
    let old = driver.event(json!({"method": "v4/conversation/frame", "params": {"wireVersion": 3, "kind": "complete", "deliveryKind": "online", "logicalFrameId": "f", "logicalFrameOrdinal": 2, "topic": "conversation/sess_1", "subscriptionId": "sub-1",
        "frame": {"topic": "conversation/sess_1", "subscriptionId": "sub-1", "fromSeq": 5, "toSeq": 6, "sentAt": 1, "payload": {"kind": "deltas", "deltas": []}}}}));
    assert!(
        matches!(&old.actions[..], [Action::Ignore(why)] if why.contains("another subscription"))
    );

    // Refused twice: no loop, the prompt fails with ZCode's reason.
    let mut driver = opened(true, true);
    let mut always = agent(true);
    let (_, _, step) = driver.run(
        SessionOp::Prompt(json!({"prompt": [{"type": "text", "text": "again"}]}).to_string()),
        &mut |f: &Value| match f["method"].as_str().unwrap() {
            "v4/command" => json!({"commandId": f["params"]["commandId"], "status": "rejected",
                                   "reasonCode": "proto.sessionNotFound", "revisionAtDecision": 0}),
            _ => always(f),
        },
    );
    assert!(
        matches!(&step, Step::Done(Err(e)) if e.message.contains("proto.sessionNotFound")),
        "{step:?}"
    );
}

// ----- the account push (crate::account) ---------------------------------------------------

/// A session whose facts entitle the zai individual Coding Plan.
fn entitled_driver() -> Driver {
    use zcode_contract::{FactValue, Presence};
    let json = |name: &str, value: Value| (name.to_string(), FactValue::Json(value.to_string()));
    let present = |name: String| (name, FactValue::Presence(Presence::Present));
    let facts = vec![
        json(crate::account::TABLE_REVISION, json!(31)),
        json(crate::account::TABLE_PATH, json!("/z/resources/config/provider/zcode-builtin.json")),
        json(crate::account::FAMILY, json!("zai")),
        json(crate::account::SELECTIONS, json!({"zai": {"kind": "individual-coding-plan"}})),
        present(format!("{}zai", crate::account::SIGNED_IN)),
        present(format!("{}zai", crate::account::PLAN_KEY)),
    ];
    let init = SessionInit {
        facts,
        workspace: "/w".into(),
        client: ClientFeatures { plan_operations: false, form_elicitation: false },
    };
    Driver { session: NativeSession(AppServerSession::new(&init)), next_id: 1, next_op: 1 }
}

fn create_op() -> SessionOp {
    SessionOp::Create(json!({"cwd": "/w", "mcpServers": []}).to_string())
}

#[test]
fn an_entitled_plan_is_pushed_before_the_session_is_created() {
    let mut driver = entitled_driver();
    let mut base = agent(true);
    let mut answer = |frame: &Value| match frame["method"].as_str().unwrap() {
        "provider/updateAccountConfig" => json!({
            "receivedRevision": frame["params"]["revision"], "providerCount": 2, "status": "received"
        }),
        _ => base(frame),
    };
    let (sent, _, step) = driver.run(create_op(), &mut answer);
    let methods: Vec<&str> = sent.iter().map(|f| f["method"].as_str().unwrap()).collect();
    let push = methods.iter().position(|m| *m == "provider/updateAccountConfig").unwrap();
    assert_eq!(methods[push + 1], "session/create", "{methods:?}");
    let Step::Done(Ok(result)) = step else { panic!("{step:?}") };
    let response: Value = serde_json::from_str(&result.response).unwrap();
    assert!(response.get("_meta").is_none(), "the plan's models are listed: {response}");
}

#[test]
fn an_agent_without_the_push_is_skipped_and_said() {
    let mut driver = entitled_driver();
    let mut base = agent(true);
    let mut answer = |frame: &Value| match frame["method"].as_str().unwrap() {
        "provider/updateAccountConfig" => {
            json!({"error": {"code": -32601, "message": "Method not found"}})
        }
        _ => base(frame),
    };
    let (_, _, step) = driver.run(create_op(), &mut answer);
    let Step::Done(Ok(result)) = step else { panic!("{step:?}") };
    let response: Value = serde_json::from_str(&result.response).unwrap();
    let unlisted = &response["_meta"]["zcodeAcp"]["unlistedAccountProviders"];
    assert_eq!(unlisted[0]["providerId"], "account:zai-individual-coding-plan");
    assert!(unlisted[0]["reason"].as_str().unwrap().contains("provider/updateAccountConfig"));
}

#[test]
fn a_push_answered_with_another_revision_breaks_the_protocol() {
    let mut driver = entitled_driver();
    let mut base = agent(true);
    let mut answer = |frame: &Value| match frame["method"].as_str().unwrap() {
        "provider/updateAccountConfig" => {
            json!({"receivedRevision": "someone-else", "providerCount": 2, "status": "received"})
        }
        _ => base(frame),
    };
    let (_, _, step) = driver.run(create_op(), &mut answer);
    let Step::Done(Err(error)) = step else { panic!("{step:?}") };
    assert_eq!(error.kind, zcode_contract::ErrorKind::Protocol, "{error:?}");
}

#[test]
fn a_push_the_agent_ignored_is_said_after_the_create() {
    let mut driver = entitled_driver();
    let mut base = agent(true);
    let mut answer = |frame: &Value| match frame["method"].as_str().unwrap() {
        "provider/updateAccountConfig" => json!({
            "receivedRevision": frame["params"]["revision"], "providerCount": 2, "status": "received"
        }),
        "session/create" => {
            let mut state = create_state();
            state["settings"]["model"]["available"] = json!([]);
            state
        }
        _ => base(frame),
    };
    let (_, _, step) = driver.run(create_op(), &mut answer);
    let Step::Done(Ok(result)) = step else { panic!("{step:?}") };
    let response: Value = serde_json::from_str(&result.response).unwrap();
    assert_eq!(
        response["_meta"]["zcodeAcp"]["unlistedAccountProviders"][0]["reason"],
        crate::account::REASON_IGNORED
    );
}

/// The routed lines read in the envelope's one pass (issue 27), and what goes the old way.
mod one_pass;
