//! Each built-in scenario's event sequence, interactions and their real effects, stopping a
//! turn, and scenario files.

mod common;

use common::{Install, Sim, labels, open_session, prompt, session_events, streamed, terminal};
use serde_json::{Value, json};

struct Fixture {
    install: Install,
    sim: Sim,
    ws: String,
    session: String,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with_env(&[])
    }

    fn with_env(env: &[(&str, &str)]) -> Fixture {
        let install = Install::new();
        let mut sim = install.spawn_with(env);
        let ws = install.ws();
        let (session, _) = open_session(&mut sim, &ws);
        Fixture { install, sim, ws, session }
    }

    /// Sends a prompt and returns the events up to the first one `stop_at` accepts.
    fn prompt_until(&mut self, content: &str, stop_at: impl Fn(&Value) -> bool) -> Vec<Value> {
        prompt(&mut self.sim, &self.ws, &self.session, content).unwrap();
        self.sim.events_until(stop_at)
    }

    /// Sends a prompt and returns its events up to the terminal one.
    fn turn(&mut self, content: &str) -> Vec<Value> {
        self.prompt_until(content, common::is_terminal)
    }

    fn respond_permission(&mut self, request_id: &str, option_id: &str) -> Result<Value, String> {
        self.sim.task(
            "respondPermission",
            json!({"workspacePath": self.ws, "taskId": self.session, "requestId": request_id, "optionId": option_id}),
        )
    }

    fn respond_elicitation(&mut self, request_id: &str, answer: Value) -> Result<Value, String> {
        let mut params =
            json!({"workspacePath": self.ws, "taskId": self.session, "requestId": request_id});
        params.as_object_mut().unwrap().extend(answer.as_object().unwrap().clone());
        self.sim.task("respondElicitation", params)
    }

    fn stop(&mut self) {
        self.sim
            .task("stopGeneration", json!({"workspacePath": self.ws, "taskId": self.session}))
            .unwrap();
    }

    /// The session as the bridge answers `readSession`: each message part cut to its type.
    fn snapshot(&mut self) -> Value {
        self.sim.agent(
            "readSession",
            json!({"workspacePath": self.ws, "sessionId": self.session, "messageLimit": 100}),
        )
    }

    /// The session's messages, whole.
    fn messages(&mut self) -> Value {
        self.sim.agent(
            "readSessionMessages",
            json!({"workspacePath": self.ws, "sessionId": self.session, "limit": 100}),
        )
    }
}

fn is(kind: &'static str) -> impl Fn(&Value) -> bool {
    move |event| event["type"] == kind
}

/// The labels between the turn's opening (`state.updated`, `turn.started`, and for the first
/// prompt the title) and its closing (`state.updated`, terminal), checking both.
fn body(events: &[Value], terminal_label: &str) -> Vec<String> {
    let all = labels(events);
    let mut start = 2;
    assert_eq!(all[..2], ["state.updated", "turn.started"], "{all:?}");
    if all.get(2).map(String::as_str) == Some("session.titleUpdated") {
        assert_eq!(all[3], "snapshot");
        start = 4;
    }
    let end = all.len() - 2;
    assert_eq!(all[end..], ["state.updated".to_owned(), terminal_label.to_owned()], "{all:?}");
    all[start..end].to_vec()
}

const TOOL_OPENING: [&str; 5] = [
    "model.streaming:tool_input_start",
    "model.streaming:tool_input_delta",
    "model.streaming:tool_input_end",
    "model.streaming:tool_call",
    "tool.updated:scheduled",
];

fn seq(items: &[&[&str]]) -> Vec<String> {
    items.iter().flat_map(|part| part.iter().map(|label| label.to_string())).collect()
}

fn payload<'a>(events: &'a [Value], label: &str) -> &'a Value {
    let event = events
        .iter()
        .find(|event| common::label(event) == label)
        .unwrap_or_else(|| panic!("no {label}"));
    &event["event"]["payload"]
}

#[test]
fn the_default_reply_is_streamed_in_chunks() {
    let mut fixture = Fixture::new();
    let events = fixture.turn("Hello simulator");
    assert_eq!(body(&events, "turn.completed"), ["model.streaming:text_delta"]);
    let deltas =
        session_events(&events).iter().filter(|event| event["type"] == "model.streaming").count();
    assert!(deltas > 1);
    assert_eq!(
        streamed(&events, "text_delta"),
        "Hello from the ZCode simulator. You said: Hello simulator"
    );
    assert_eq!(payload(&events, "session.titleUpdated")["title"], "Hello simulator");
    let completed = &terminal(&events)["payload"];
    assert_eq!(completed["resultType"], "success");
    assert_eq!(completed["toolCallCount"], 0);
    let message_ids: Vec<&Value> = session_events(&events)
        .iter()
        .filter(|event| event["type"] == "model.streaming")
        .map(|event| &event["payload"]["assistantMessageId"])
        .collect();
    assert!(message_ids.windows(2).all(|pair| pair[0] == pair[1] && pair[0].is_string()));
    // The second prompt does not retitle the session.
    let events = fixture.turn("again");
    assert!(!labels(&events).contains(&"session.titleUpdated".to_owned()));
}

#[test]
fn reasoning_comes_before_the_reply() {
    let mut fixture = Fixture::new();
    let events = fixture.turn("sim:reason");
    assert_eq!(
        body(&events, "turn.completed"),
        ["model.streaming:reasoning_delta", "model.streaming:text_delta"]
    );
    assert!(!streamed(&events, "reasoning_delta").is_empty());
    let snapshot = fixture.messages();
    let parts = &snapshot["messages"][1]["parts"];
    assert_eq!(parts[0]["type"], "reasoning");
    assert_eq!(parts[0]["text"], streamed(&events, "reasoning_delta"));
    assert_eq!(parts[1]["type"], "text");
}

#[test]
fn the_read_tool_returns_the_real_file() {
    let mut fixture = Fixture::new();
    std::fs::write(fixture.install.workspace.join("notes.md"), "# Notes\nreal content\n").unwrap();
    let events = fixture.turn("sim:read notes.md");
    let expected = seq(&[
        &["model.streaming:text_delta"],
        &TOOL_OPENING,
        &["tool.updated:started", "tool.updated:result", "model.streaming:text_delta"],
    ]);
    assert_eq!(body(&events, "turn.completed"), expected);
    assert_eq!(
        payload(&events, "tool.updated:result")["result"]["content"],
        "# Notes\nreal content\n"
    );
    let call = payload(&events, "model.streaming:tool_call");
    assert_eq!(call["toolName"], "Read");
    assert_eq!(call["input"], json!({"file_path": "notes.md"}));
    let streamed_input = streamed(&events, "tool_input_delta");
    assert_eq!(serde_json::from_str::<Value>(&streamed_input).unwrap(), call["input"]);
    assert_eq!(terminal(&events)["payload"]["toolCallCount"], 1);
}

#[test]
fn an_allowed_edit_writes_the_file() {
    let mut fixture = Fixture::new();
    let events = fixture.prompt_until("sim:edit src/out.txt hello world", is("permission.request"));
    let request = &events.last().unwrap()["request"];
    assert_eq!(request["toolName"], "Write");
    assert_eq!(request["sessionId"], fixture.session.as_str());
    assert!(request["turnId"].is_string() && request["toolCallId"].is_string());
    assert_eq!(request["riskLevel"], "medium");
    assert_eq!(request["input"]["content"], "hello world\n");
    let decisions: Vec<&Value> = request["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| &option["response"]["decision"])
        .collect();
    assert!(decisions.contains(&&json!("allow")) && decisions.contains(&&json!("deny")));
    let target = fixture.install.workspace.join("src/out.txt");
    assert!(!target.exists(), "nothing is written before the answer");

    let request_id = request["requestId"].as_str().unwrap().to_owned();
    assert_eq!(
        fixture.respond_permission(&request_id, "bogus"),
        Err("Unknown permission option: bogus".into())
    );
    assert_eq!(fixture.respond_permission(&request_id, "allow"), Ok(Value::Null));
    let rest = fixture.sim.events_until_terminal();
    let mut all = events.clone();
    all.extend(rest.iter().cloned());
    let expected = seq(&[
        &["model.streaming:text_delta"],
        &TOOL_OPENING,
        &[
            "permission.requested",
            "permission.request",
            "permission.resolved",
            "tool.updated:started",
            "tool.updated:result",
            "checkpoint.created",
            "model.streaming:text_delta",
        ],
    ]);
    assert_eq!(body(&all, "turn.completed"), expected);
    assert_eq!(payload(&all, "permission.resolved")["decision"], "allow");
    assert_eq!(common::read(&target).as_deref(), Some("hello world\n"));
    assert!(streamed(&rest, "text_delta").starts_with("Wrote src/out.txt"));
    // The request is answered: answering again is an error.
    assert_eq!(
        fixture.respond_permission(&request_id, "allow"),
        Err(format!("Unknown permission request: {request_id}"))
    );
}

#[test]
fn a_denied_edit_writes_nothing() {
    let mut fixture = Fixture::new();
    let events = fixture.prompt_until("sim:edit denied.txt", is("permission.request"));
    let request_id = events.last().unwrap()["request"]["requestId"].as_str().unwrap().to_owned();
    fixture.respond_permission(&request_id, "deny").unwrap();
    let rest = fixture.sim.events_until_terminal();
    let after: Vec<String> = labels(&rest);
    assert_eq!(
        after,
        [
            "permission.resolved",
            "tool.updated:error",
            "model.streaming:text_delta",
            "state.updated",
            "turn.completed"
        ]
    );
    assert_eq!(
        payload(&rest, "tool.updated:error")["error"]["message"],
        "Permission denied by the user"
    );
    assert!(!fixture.install.workspace.join("denied.txt").exists());
    assert!(streamed(&rest, "text_delta").contains("not written"));
    assert_eq!(terminal(&rest)["payload"]["resultType"], "success");
    let tool = &fixture.messages()["messages"][1]["parts"][1];
    assert_eq!(tool["state"]["status"], "error");
}

#[test]
fn always_allow_and_modes_skip_the_permission_request() {
    let mut fixture = Fixture::new();
    let events = fixture.prompt_until("sim:edit a.txt", is("permission.request"));
    let request_id = events.last().unwrap()["request"]["requestId"].as_str().unwrap().to_owned();
    fixture.respond_permission(&request_id, "allow-always").unwrap();
    fixture.sim.events_until_terminal();
    let events = fixture.turn("sim:edit b.txt");
    assert!(!labels(&events).iter().any(|label| label.starts_with("permission")));
    assert!(fixture.install.workspace.join("b.txt").is_file());
    assert!(streamed(&events, "text_delta").ends_with("Wrote b.txt."));

    // In edit mode edits are automatic but commands still ask; in yolo mode nothing asks.
    fixture.sim.agent(
        "setMode",
        json!({"workspacePath": fixture.ws, "sessionId": fixture.session, "mode": "edit"}),
    );
    fixture.sim.next_event();
    let events = fixture.prompt_until("sim:shell cargo test", is("permission.request"));
    assert_eq!(events.last().unwrap()["request"]["toolName"], "Bash");
    fixture.stop();
    fixture.sim.events_until_terminal();
    fixture.sim.agent(
        "setMode",
        json!({"workspacePath": fixture.ws, "sessionId": fixture.session, "mode": "yolo"}),
    );
    fixture.sim.next_event();
    let events = fixture.turn("sim:shell cargo test");
    assert!(!labels(&events).iter().any(|label| label.starts_with("permission")));
    assert!(streamed(&events, "text_delta").contains("The command finished."));
    assert_eq!(payload(&events, "tool.updated:result")["result"]["exitCode"], 0);
}

#[test]
fn the_shell_tool_reports_progress() {
    let mut fixture = Fixture::new();
    let events = fixture.prompt_until("sim:shell ls -la", is("permission.request"));
    let request = &events.last().unwrap()["request"];
    assert_eq!(request["riskLevel"], "high");
    assert_eq!(request["input"]["command"], "ls -la");
    let request_id = request["requestId"].as_str().unwrap().to_owned();
    fixture.respond_permission(&request_id, "allow").unwrap();
    let rest = fixture.sim.events_until_terminal();
    assert_eq!(
        labels(&rest),
        [
            "permission.resolved",
            "tool.updated:started",
            "tool.updated:progress",
            "tool.updated:result",
            "model.streaming:text_delta",
            "state.updated",
            "turn.completed"
        ]
    );
    let progress: Vec<&Value> = session_events(&rest)
        .into_iter()
        .filter(|event| event["payload"]["kind"] == "progress")
        .collect();
    assert_eq!(progress.len(), 2);
    assert!(progress[0]["payload"]["stdoutTail"].as_str().unwrap().contains("ls -la"));
}

#[test]
fn a_structured_question_waits_for_the_answer() {
    let mut fixture = Fixture::new();
    let events = fixture.prompt_until("sim:question", is("userInput.request"));
    let expected = seq(&[&TOOL_OPENING, &["tool.updated:started", "userInput.request"]]);
    let all = labels(&events);
    assert_eq!(all[4..], expected[..], "{all:?}");
    let request = &events.last().unwrap()["request"];
    assert_eq!(request["toolName"], "AskUserQuestion");
    let questions = request["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 2);
    assert_eq!(questions[1]["multiSelect"], true);
    assert!(
        questions
            .iter()
            .all(|question| question["header"].is_string() && question["options"].is_array())
    );
    let request_id = request["requestId"].as_str().unwrap().to_owned();
    assert_eq!(
        fixture.respond_elicitation(&request_id, json!({"action": "maybe"})),
        Err("Unsupported elicitation action: maybe".into())
    );
    assert_eq!(
        fixture.respond_permission(&request_id, "allow"),
        Err(format!("Unknown permission request: {request_id}")),
        "a question is not a permission"
    );
    let content = json!({"answer_0": "fast", "answer_1": ["tests"],
        "answers": {"Which approach should I take?": ["fast"], "Which checks should run?": ["tests"]}});
    fixture
        .respond_elicitation(&request_id, json!({"action": "accept", "content": content}))
        .unwrap();
    let rest = fixture.sim.events_until_terminal();
    assert_eq!(
        labels(&rest),
        [
            "userInput.response",
            "tool.updated:result",
            "model.streaming:text_delta",
            "state.updated",
            "turn.completed"
        ]
    );
    assert_eq!(rest[0]["response"]["content"], content);
    let result = &payload(&rest, "tool.updated:result")["result"];
    assert!(result["content"].as_str().unwrap().contains("Which approach should I take?: fast"));
    assert!(streamed(&rest, "text_delta").contains("proceed"));
}

#[test]
fn a_declined_question_takes_the_denied_branch() {
    let mut fixture = Fixture::new();
    let events = fixture.prompt_until("sim:question", is("userInput.request"));
    let request_id = events.last().unwrap()["request"]["requestId"].as_str().unwrap().to_owned();
    fixture
        .respond_elicitation(&request_id, json!({"action": "decline", "reason": "busy"}))
        .unwrap();
    let rest = fixture.sim.events_until_terminal();
    assert!(labels(&rest).contains(&"tool.updated:error".to_owned()));
    assert!(streamed(&rest, "text_delta").contains("will not proceed"));
}

#[test]
fn plan_approval_through_exit_plan_mode_permission() {
    let mut fixture = Fixture::new();
    fixture.sim.agent(
        "setMode",
        json!({"workspacePath": fixture.ws, "sessionId": fixture.session, "mode": "plan"}),
    );
    fixture.sim.next_event();
    let events = fixture.prompt_until("sim:plan", is("permission.request"));
    let request = &events.last().unwrap()["request"];
    assert_eq!(request["toolName"], "ExitPlanMode");
    assert!(request["input"]["plan"].as_str().unwrap().starts_with("# Proposed plan"));
    let options: Vec<(&str, &str)> = request["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| {
            (option["optionId"].as_str().unwrap(), option["response"]["decision"].as_str().unwrap())
        })
        .collect();
    assert_eq!(options, [("allow-plan", "allow"), ("deny-plan", "deny")]);
    let request_id = request["requestId"].as_str().unwrap().to_owned();
    fixture.respond_permission(&request_id, "allow-plan").unwrap();
    let rest = fixture.sim.events_until_terminal();
    let snapshot =
        rest.iter().find(|event| event["type"] == "snapshot").expect("mode change snapshot");
    assert_eq!(
        snapshot["snapshot"]["settings"]["mode"]["current"], "build",
        "approval leaves plan mode"
    );
    assert!(streamed(&rest, "text_delta").contains("approved"));

    let events = fixture.prompt_until("sim:plan", is("permission.request"));
    let request_id = events.last().unwrap()["request"]["requestId"].as_str().unwrap().to_owned();
    fixture.respond_permission(&request_id, "deny-plan").unwrap();
    let rest = fixture.sim.events_until_terminal();
    assert_eq!(payload(&rest, "tool.updated:error")["error"]["message"], "User rejected the plan");
    assert!(streamed(&rest, "text_delta").contains("rejected"));
}

#[test]
fn plan_approval_through_user_input() {
    let mut fixture = Fixture::new();
    let events = fixture.prompt_until("sim:plan-input", is("userInput.request"));
    let request = &events.last().unwrap()["request"];
    assert_eq!(request["schema"], json!({"interaction": "plan_approval"}));
    assert_eq!(request["toolName"], "ExitPlanMode");
    assert!(!request["input"]["plan"].as_str().unwrap().trim().is_empty());
    let questions = request["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0]["options"][0]["value"], "approve");
    let request_id = request["requestId"].as_str().unwrap().to_owned();
    let content = json!({"answer_0": "approve", "answer": "approve", "answers": {"Review this implementation plan.": ["approve"]}});
    fixture
        .respond_elicitation(&request_id, json!({"action": "accept", "content": content}))
        .unwrap();
    let rest = fixture.sim.events_until_terminal();
    assert!(streamed(&rest, "text_delta").contains("approved"));

    let events = fixture.prompt_until("sim:plan-input", is("userInput.request"));
    let request_id = events.last().unwrap()["request"]["requestId"].as_str().unwrap().to_owned();
    fixture.respond_elicitation(&request_id, json!({"action": "cancel"})).unwrap();
    let rest = fixture.sim.events_until_terminal();
    assert!(streamed(&rest, "text_delta").contains("rejected"));
}

#[test]
fn todo_updates_publish_snapshots() {
    let mut fixture = Fixture::new();
    let events = fixture.turn("sim:todos");
    let todo_snapshots: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "snapshot")
        .map(|event| &event["snapshot"]["todos"])
        .collect();
    // The first snapshot is the title's; then one per todo update.
    assert_eq!(todo_snapshots.len(), 3);
    assert_eq!(todo_snapshots[1][0]["status"], "in_progress");
    assert_eq!(todo_snapshots[2][1]["status"], "completed");
    assert_eq!(fixture.snapshot()["todos"], *todo_snapshots[2]);
}

#[test]
fn provider_headers_that_are_not_applied_fail_the_turn() {
    let mut fixture = Fixture::new();
    let events = fixture.prompt_until("sim:headers", is("providerRuntimeHeaders.request"));
    let request = &events.last().unwrap()["request"];
    assert_eq!(request["reason"], "model-request");
    assert_eq!(request["providerId"], "builtin:zai-coding-plan");
    assert_eq!(request["workspace"]["workspacePath"], fixture.ws.as_str());
    assert_eq!(request["modelRef"]["modelId"], "GLM-5.2");
    let request_id = request["requestId"].as_str().unwrap().to_owned();
    let (ws, session) = (fixture.ws.clone(), fixture.session.clone());
    let params = |request_id: &str, response: Value| json!({"workspacePath": ws, "sessionId": session, "requestId": request_id, "response": response});
    let unknown = fixture.sim.call(
        "agent",
        "respondProviderRuntimeHeaders",
        params("nope", json!({"headersApplied": false})),
    );
    assert_eq!(unknown, Err("Unknown provider runtime headers request: nope".into()));
    let response = json!({"headersApplied": false, "errorMessage": "Interactive provider recovery is unavailable in the headless ACP adapter"});
    fixture.sim.agent("respondProviderRuntimeHeaders", params(&request_id, response));
    let rest = fixture.sim.events_until_terminal();
    let failed = terminal(&rest);
    assert_eq!(failed["type"], "turn.failed");
    assert!(
        failed["payload"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unavailable in the headless ACP adapter")
    );

    let events = fixture.prompt_until("sim:headers", is("providerRuntimeHeaders.request"));
    let request_id = events.last().unwrap()["request"]["requestId"].as_str().unwrap().to_owned();
    fixture.sim.agent(
        "respondProviderRuntimeHeaders",
        params(&request_id, json!({"headersApplied": true})),
    );
    let rest = fixture.sim.events_until_terminal();
    assert_eq!(terminal(&rest)["payload"]["resultType"], "success");
}

#[test]
fn a_long_stream_delivers_every_chunk_in_order() {
    let mut fixture = Fixture::new();
    let events = fixture.turn("sim:stream 5000");
    let deltas: Vec<&Value> = session_events(&events)
        .into_iter()
        .filter(|event| event["type"] == "model.streaming")
        .collect();
    assert_eq!(deltas.len(), 5000);
    assert!(
        deltas
            .windows(2)
            .all(|pair| pair[1]["seq"].as_u64().unwrap() == pair[0]["seq"].as_u64().unwrap() + 1)
    );
    assert!(deltas.iter().all(|event| event["payload"]["delta"] == "lorem ipsum "));
    let ids: std::collections::HashSet<&str> =
        deltas.iter().map(|event| event["eventId"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 5000);
    let text = &fixture.messages()["messages"][1]["parts"][0]["text"];
    assert_eq!(text.as_str().unwrap().len(), "lorem ipsum ".len() * 5000);
}

#[test]
fn stop_generation_cancels_a_slow_turn() {
    let mut fixture = Fixture::new();
    let events = fixture.prompt_until("sim:slow 600000", |event| {
        common::label(event) == "model.streaming:text_delta"
    });
    assert!(!events.is_empty());
    fixture.stop();
    fixture.stop(); // Stopping twice is harmless.
    let rest = fixture.sim.events_until_terminal();
    let completed = terminal(&rest);
    assert_eq!(completed["type"], "turn.completed");
    assert_eq!(completed["payload"]["resultType"], "cancelled");
    assert!(!streamed(&rest, "text_delta").contains("done"), "the rest of the turn never ran");
    // The partial reply is kept, and the session takes the next prompt.
    assert_eq!(fixture.messages()["messages"][1]["parts"][0]["text"], "Working on it");
    let events = fixture.turn("next");
    assert_eq!(terminal(&events)["payload"]["resultType"], "success");
}

#[test]
fn stopping_during_a_permission_interrupts_the_tool() {
    let mut fixture = Fixture::new();
    let events = fixture.prompt_until("sim:edit never.txt", is("permission.request"));
    let request_id = events.last().unwrap()["request"]["requestId"].as_str().unwrap().to_owned();
    fixture.stop();
    let rest = fixture.sim.events_until_terminal();
    assert_eq!(labels(&rest), ["tool.updated:error", "state.updated", "turn.completed"]);
    assert_eq!(
        payload(&rest, "tool.updated:error")["error"]["message"],
        "Tool execution was interrupted"
    );
    assert_eq!(terminal(&rest)["payload"]["resultType"], "cancelled");
    assert!(
        fixture.respond_permission(&request_id, "allow").is_err(),
        "the request died with the turn"
    );
    assert!(!fixture.install.workspace.join("never.txt").exists());
}

#[test]
fn failing_and_other_terminal_results() {
    let mut fixture = Fixture::new();
    let events = fixture.turn("sim:fail The model is overloaded");
    assert_eq!(body(&events, "turn.failed"), ["model.streaming:text_delta"]);
    assert_eq!(
        terminal(&events)["payload"],
        json!({"error": {"message": "The model is overloaded"}})
    );
    for result_type in ["max_tokens", "refusal", "max_turn_requests", "interrupted"] {
        let events = fixture.turn(&format!("sim:end {result_type}"));
        assert_eq!(terminal(&events)["payload"]["resultType"], result_type);
    }
    let unknown = prompt(&mut fixture.sim, &fixture.ws, &fixture.session, "sim:dance").unwrap_err();
    assert!(unknown.starts_with("Unknown simulator scenario: sim:dance"), "{unknown}");
}

#[test]
fn scenario_files_from_the_workspace_and_the_environment() {
    let install = Install::new();
    let scenario = install.state.join("custom.jsonl");
    std::fs::write(
        &scenario,
        "# custom\n{\"step\":\"reasoning\",\"chunks\":[\"hm\"]}\n{\"step\":\"session_event\",\"type\":\"checkpoint.created\",\"payload\":{\"checkpointId\":\"c1\"}}\n\
         {\"step\":\"event\",\"event\":{\"type\":\"state.updated\",\"notification\":{\"custom\":true}}}\n\
         {\"step\":\"usage\",\"input\":100,\"output\":7}\n{\"step\":\"text\",\"chunks\":[\"A\",\"B\"]}\n{\"step\":\"end\",\"result\":\"refusal\"}\n{\"step\":\"text\",\"text\":\"never\"}\n",
    )
    .unwrap();
    let mut sim = install.spawn_with(&[("ZCODE_SIM_SCENARIO", scenario.to_str().unwrap())]);
    let ws = install.ws();
    let (session, _) = open_session(&mut sim, &ws);
    prompt(&mut sim, &ws, &session, "sim:reason").unwrap();
    let events = sim.events_until_terminal();
    let all = labels(&events);
    assert_eq!(
        all[4..],
        [
            "model.streaming:reasoning_delta",
            "checkpoint.created",
            "state.updated",
            "model.streaming:text_delta",
            "state.updated",
            "turn.completed"
        ]
    );
    assert_eq!(streamed(&events, "text_delta"), "AB");
    assert_eq!(terminal(&events)["payload"]["resultType"], "refusal");
    let usage = sim.agent("getTaskTokenUsage", json!({"workspacePath": ws, "sessionId": session}));
    assert_eq!(
        (usage["inputTokens"].as_u64(), usage["outputTokens"].as_u64()),
        (Some(100), Some(7))
    );

    // The same file through `sim:file`, from the workspace, in a host without the variable.
    std::fs::copy(&scenario, install.workspace.join("my.jsonl")).unwrap();
    let mut plain = install.spawn();
    let (session, _) = open_session(&mut plain, &ws);
    prompt(&mut plain, &ws, &session, "sim:file my.jsonl").unwrap();
    assert_eq!(terminal(&plain.events_until_terminal())["payload"]["resultType"], "refusal");
    std::fs::write(install.workspace.join("bad.jsonl"), "{\"step\":\"text\"}\n").unwrap();
    let invalid = prompt(&mut plain, &ws, &session, "sim:file bad.jsonl").unwrap_err();
    assert!(invalid.contains("line 1: needs `text` or `chunks`"), "{invalid}");
}
