//! ACP v2 beside v1: negotiation per connection, and v2's prompt lifecycle over the same
//! coordinator (acknowledged at once, ended by exactly one idle `state_update`), held prompts,
//! cancellation, permissions that fail closed, resume with replay, close, config options.
//! The frames are checked raw; `tests/clients` drives the same surface with the TypeScript
//! SDK's v2 client and validates every frame against the v2 JSON Schema.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::*;

const REQUEST_CANCELLED: i64 = -32800;

fn v2_initialize_params(capabilities: Value) -> Value {
    json!({"protocolVersion": 2, "capabilities": capabilities,
           "info": {"name": "zcode-acp-e2e", "version": "0"}})
}

fn v2_agent(env: &TestEnv, policy: Policy, capabilities: Value) -> Agent {
    let mut agent = Agent::start_with(env, policy);
    let result = agent.call("initialize", v2_initialize_params(capabilities));
    assert_eq!(result["protocolVersion"], 2, "{result}");
    agent
}

fn new_v2_session(agent: &mut Agent, cwd: &Path) -> String {
    let result = agent.call("session/new", json!({"cwd": cwd}));
    result["sessionId"].as_str().expect("sessionId").to_string()
}

fn state(update: &Value) -> Option<&str> {
    (kind(update) == "state_update").then(|| update["state"].as_str().unwrap_or_default())
}

/// Waits until `session_id` has seen `n` idle updates with a stop reason; returns the updates.
fn wait_idles(agent: &Agent, session_id: &str, n: usize) -> Vec<Value> {
    agent.wait_for(&format!("{n} idle state updates"), |t| {
        let updates: Vec<Value> = t.updates(session_id).into_iter().map(|(_, u)| u).collect();
        let idles = updates.iter().filter(|u| is_turn_end(u)).count();
        (idles >= n).then_some(updates)
    })
}

fn is_turn_end(update: &Value) -> bool {
    state(update) == Some("idle") && update.get("stopReason").is_some()
}

#[test]
fn initialize_negotiates_the_version_per_connection() {
    // 2 and newer get v2, with `info` and v2 capabilities.
    for requested in [2, 99] {
        let env = TestEnv::new();
        let mut agent = Agent::start(&env);
        let mut params = v2_initialize_params(json!({}));
        params["protocolVersion"] = json!(requested);
        let result = agent.call("initialize", params);
        assert_eq!(result["protocolVersion"], 2, "asked for {requested}: {result}");
        assert_eq!(result["info"]["name"], "zcode-acp", "{result}");
        assert!(result["info"]["version"].is_string(), "{result}");
        let session = &result["capabilities"]["session"];
        assert_eq!(
            session["prompt"],
            json!({"image": {}, "audio": {}, "embeddedContext": {}}),
            "{result}"
        );
        assert_eq!(session["mcp"], json!({"stdio": {}, "http": {}}), "{result}");
        let mut keys: Vec<&String> = session.as_object().unwrap().keys().collect();
        keys.sort();
        // Fork where ZCode forks (V4, `tests/fork.rs`); never delete or additionalDirectories.
        let expected: &[&str] = if generation() == Generation::HostBridge {
            &["mcp", "prompt"]
        } else {
            &["fork", "mcp", "prompt"]
        };
        assert_eq!(keys, expected, "no delete or additionalDirectories: {result}");
        assert!(result.get("agentCapabilities").is_none(), "v1 fields in a v2 answer: {result}");
        assert_eq!(result.get("authMethods").cloned().unwrap_or(json!([])), json!([]));
        assert!(agent.seen_processes().is_empty(), "initialize started a process");
        assert!(agent.finish().success());
    }
    // A client that runs terminal auth is offered ZCode's login (v2 shape).
    let env = TestEnv::new();
    let mut agent = Agent::start(&env);
    let result = agent.call("initialize", v2_initialize_params(json!({"auth": {"terminal": {}}})));
    assert_eq!(
        result["authMethods"][0],
        json!({"type": "terminal", "methodId": "zcode-login", "name": "ZCode login",
               "description": "Sign in with ZCode's own login (opens a URL to visit in a browser)",
               "args": ["login"]}),
        "{result}"
    );
    assert!(agent.finish().success());
    // Below 1 is v1's own answer: version 1, v1 fields.
    let env = TestEnv::new();
    let mut agent = Agent::start(&env);
    let mut params = initialize_params(plain_client());
    params["protocolVersion"] = json!(0);
    let result = agent.call("initialize", params);
    assert_eq!(result["protocolVersion"], 1, "{result}");
    assert!(result["agentCapabilities"].is_object(), "{result}");
    assert!(agent.finish().success());
}

#[test]
fn a_v2_session_new_pipelined_behind_initialize_is_served() {
    let env = TestEnv::new();
    let workspace = env.workspace("pipelined");
    let agent = Agent::start(&env);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": v2_initialize_params(json!({}))});
    let new =
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": workspace}});
    agent.send_raw(&format!("{initialize}\n{new}"));
    assert_eq!(agent.wait_response(1)["result"]["protocolVersion"], 2);
    let created = agent.wait_response(2);
    assert!(agent.result_of(&created, "session/new")["sessionId"].is_string(), "{created}");
    assert!(agent.finish().success());
}

#[test]
fn a_prompt_is_acknowledged_first_and_ends_with_exactly_one_idle() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = v2_agent(&env, policy::refuse_all(), json!({}));
    let session = new_v2_session(&mut agent, &workspace);
    let before = agent.transcript().frames.last().map_or(0, |f| f.seq);

    let id = agent.send_request("session/prompt", text_prompt(&session, "Hello v2"));
    let ack = agent.wait_response(id);
    let message_id =
        agent.result_of(&ack, "prompt")["messageId"].as_str().expect("messageId").to_string();
    wait_idles(&agent, &session, 1);
    let ack_seq = agent.response_seq(id);
    // Before the acknowledgement only the session's own metadata (sent after session/new)
    // may arrive; everything of the turn comes after it.
    let all = agent.transcript().updates(&session);
    let metadata = [
        "available_commands_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
    ];
    let early: Vec<&Value> =
        all.iter().filter(|(seq, _)| *seq > before && *seq < ack_seq).map(|(_, u)| u).collect();
    assert!(
        early.iter().all(|u| metadata.contains(&kind(u))),
        "before the acknowledgement: {early:#?}"
    );
    let updates: Vec<Value> =
        all.into_iter().filter(|(seq, _)| *seq > ack_seq).map(|(_, u)| u).collect();
    let kinds: Vec<&str> = updates.iter().map(kind).collect();
    assert_eq!(kinds[0], "user_message", "{kinds:?}");
    assert_eq!(updates[0]["messageId"], message_id);
    assert_eq!(updates[0]["content"], json!([{"type": "text", "text": "Hello v2"}]));
    assert_eq!(state(&updates[1]), Some("running"), "{:?}", updates[1]);
    let idles: Vec<&Value> = updates.iter().filter(|u| is_turn_end(u)).collect();
    assert_eq!(idles.len(), 1, "{updates:#?}");
    assert_eq!(idles[0]["stopReason"], "end_turn");
    assert!(idles[0]["usage"]["totalTokens"].is_u64(), "usage on the idle: {}", idles[0]);
    assert!(is_turn_end(updates.last().unwrap()), "the idle is the turn's last update");
    // The reply streams as chunks of one agent message.
    let chunks: Vec<&Value> = updates.iter().filter(|u| kind(u) == "agent_message_chunk").collect();
    assert!(chunks.len() >= 2, "{updates:#?}");
    assert!(chunks.iter().all(|c| c["messageId"] == chunks[0]["messageId"]), "{chunks:#?}");
    assert_ne!(chunks[0]["messageId"], message_id);
    assert!(chunk_text(&updates, "agent_message_chunk").contains("You said: Hello v2"));
    assert!(updates.iter().all(|u| kind(u) != "tool_call"), "v1's tool_call on a v2 wire");
    assert!(agent.finish().success());
}

/// ACP v2 carries an image to ZCode like v1 does: the simulated Agent takes it only whole.
#[test]
fn a_prompt_with_an_image_ends_with_one_end_turn_idle() {
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = v2_agent(&env, policy::refuse_all(), json!({}));
    let session = new_v2_session(&mut agent, &workspace);
    let prompt = json!({"sessionId": session, "prompt": [
        {"type": "text", "text": "what is in it?"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
    ]});
    let id = agent.send_request("session/prompt", prompt);
    let ack = agent.wait_response(id);
    assert!(agent.result_of(&ack, "prompt")["messageId"].is_string(), "{ack}");
    let updates = wait_idles(&agent, &session, 1);
    let idles: Vec<&Value> = updates.iter().filter(|u| is_turn_end(u)).collect();
    assert_eq!(idles.len(), 1, "{updates:#?}");
    assert_eq!(idles[0]["stopReason"], "end_turn", "{updates:#?}");
    // A PNG declared as JPEG does not arrive as sent: the simulated Agent refuses it.
    let lying = json!({"sessionId": session, "prompt": [
        {"type": "image", "data": PNG, "mimeType": "image/jpeg"},
    ]});
    let id = agent.send_request("session/prompt", lying);
    let response = agent.wait_response(id);
    let (_, message) = agent.error_of(&response, "a PNG declared as JPEG");
    assert!(message.contains("the bytes are image/png"), "{message}");
    assert!(agent.finish().success());
}

#[test]
fn a_second_prompt_on_a_busy_session_is_held_and_run_in_arrival_order() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = v2_agent(&env, policy::refuse_all(), json!({}));
    let session = new_v2_session(&mut agent, &workspace);

    let first = agent.send_request("session/prompt", text_prompt(&session, "sim:reply first"));
    let second = agent.send_request("session/prompt", text_prompt(&session, "sim:reply second"));
    let third = agent.send_request("session/prompt", text_prompt(&session, "sim:reply third"));
    let updates = wait_idles(&agent, &session, 3);
    let acks: Vec<String> = [first, second, third]
        .iter()
        .map(|id| {
            let response = agent.wait_response(*id);
            agent.result_of(&response, "held prompt")["messageId"].as_str().unwrap().to_string()
        })
        .collect();
    assert!(agent.response_seq(first) < agent.response_seq(second));
    assert!(agent.response_seq(second) < agent.response_seq(third));
    // Each turn: its echo, then its text, then its idle — one after the other.
    let echoes: Vec<&Value> = updates.iter().filter(|u| kind(u) == "user_message").collect();
    let echoed: Vec<&str> = echoes.iter().map(|u| u["messageId"].as_str().unwrap()).collect();
    assert_eq!(echoed, acks.iter().map(String::as_str).collect::<Vec<_>>());
    let mut turns = Vec::new();
    let mut current = Vec::new();
    for update in &updates {
        current.push(update.clone());
        if is_turn_end(update) {
            turns.push(std::mem::take(&mut current));
        }
    }
    assert_eq!(turns.len(), 3);
    for (turn, word) in turns.iter().zip(["first", "second", "third"]) {
        assert_eq!(turn.iter().filter(|u| kind(u) == "user_message").count(), 1);
        assert!(chunk_text(turn, "agent_message_chunk").contains(word), "{turn:#?}");
        assert_eq!(turn.last().unwrap()["stopReason"], "end_turn");
    }
    assert!(agent.finish().success());
}

#[test]
fn cancel_answers_held_prompts_32800_and_ends_the_turn_cancelled() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = v2_agent(&env, policy::refuse_all(), json!({}));
    let session = new_v2_session(&mut agent, &workspace);

    let slow = agent.send_request("session/prompt", text_prompt(&session, "sim:slow 60000"));
    let held = agent.send_request("session/prompt", text_prompt(&session, "held, then cancelled"));
    let withdrawn = agent.send_request("session/prompt", text_prompt(&session, "withdrawn"));
    agent
        .wait_update(&session, "the slow turn's first chunk", |u| kind(u) == "agent_message_chunk");
    // `$/cancel_request` withdraws one held prompt; `session/cancel` the rest and the turn.
    agent.notify("$/cancel_request", json!({"requestId": withdrawn}));
    let (code, _) = agent.error_of(&agent.wait_response(withdrawn), "the withdrawn prompt");
    assert_eq!(code, REQUEST_CANCELLED);
    agent.notify("session/cancel", json!({"sessionId": session}));
    let (code, _) = agent.error_of(&agent.wait_response(held), "the held prompt");
    assert_eq!(code, REQUEST_CANCELLED);
    let updates = wait_idles(&agent, &session, 1);
    assert!(agent.result_of(&agent.wait_response(slow), "slow")["messageId"].is_string());
    let idles: Vec<&Value> = updates.iter().filter(|u| is_turn_end(u)).collect();
    assert_eq!(idles.len(), 1);
    assert_eq!(idles[0]["stopReason"], "cancelled");
    // The cancelled prompts were never inserted.
    assert_eq!(updates.iter().filter(|u| kind(u) == "user_message").count(), 1);
    // The session takes the next prompt.
    agent.send_request("session/prompt", text_prompt(&session, "after the cancel"));
    let updates = wait_idles(&agent, &session, 2);
    assert_eq!(updates.last().unwrap()["stopReason"], "end_turn");
    assert!(agent.finish().success());
}

/// A v2 client without form elicitation (issue 26): plan approval and a single-choice question
/// are permissions; a rejected plan keeps ZCode planning; the turns end normally.
#[test]
fn without_forms_plans_and_single_choices_are_permissions() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let scenario = r#"{"step":"question","questions":[{"question":"Which approach?","header":"Approach","options":[{"value":"quick","label":"Quick"},{"value":"thorough","label":"Thorough"}]}]}
{"step":"text","if":"allowed","text":"Answered."}
"#;
    std::fs::write(workspace.join("single.jsonl"), scenario).unwrap();
    let mut agent = v2_agent(&env, policy::permission_kind("allow_once"), json!({}));
    let session = new_v2_session(&mut agent, &workspace);

    let turns = [
        ("sim:plan", "Plan approved"),
        ("sim:file single.jsonl", "Answered."),
        ("sim:plan-input", "Plan approved"),
    ];
    for (n, (prompt, said)) in turns.into_iter().enumerate() {
        agent.send_request("session/prompt", text_prompt(&session, prompt));
        let updates = wait_idles(&agent, &session, n + 1);
        let request = agent.wait_agent_request("session/request_permission", n);
        let kinds = policy::option_kinds(&request.params);
        assert!(kinds.contains(&"allow_once") && kinds.contains(&"reject_once"), "{kinds:?}");
        let turn_start = updates.iter().rposition(|u| state(u) == Some("running")).unwrap();
        let turn = &updates[turn_start..];
        assert_eq!(updates.last().unwrap()["stopReason"], "end_turn", "{prompt}: {turn:#?}");
        assert!(chunk_text(turn, "agent_message_chunk").contains(said), "{prompt}: {turn:#?}");
    }

    agent.set_policy(policy::permission_kind("reject_once"));
    agent.send_request("session/prompt", text_prompt(&session, "sim:plan"));
    let updates = wait_idles(&agent, &session, 4);
    assert_eq!(updates.last().unwrap()["stopReason"], "end_turn");
    let turn_start = updates.iter().rposition(|u| state(u) == Some("running")).unwrap();
    assert!(chunk_text(&updates[turn_start..], "agent_message_chunk").contains("keep planning"));
    assert_eq!(agent.agent_requests().len(), 4);
    assert!(agent.finish().success());
}

#[test]
fn a_permission_requires_action_and_fails_closed() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = v2_agent(&env, policy::permission_kind("allow_once"), json!({}));
    let session = new_v2_session(&mut agent, &workspace);

    agent.send_request("session/prompt", text_prompt(&session, "sim:edit allowed.txt yes"));
    let updates = wait_idles(&agent, &session, 1);
    let request = agent.wait_agent_request("session/request_permission", 0);
    assert!(request.params["title"].as_str().is_some_and(|t| !t.is_empty()), "{}", request.params);
    assert_eq!(request.params["subject"]["type"], "tool_call", "{}", request.params);
    let call_id = request.params["subject"]["toolCall"]["toolCallId"].clone();
    let states: Vec<&str> = updates.iter().filter_map(state).collect();
    assert_eq!(states, ["running", "requires_action", "running", "idle"], "{updates:#?}");
    let calls: Vec<&Value> = updates.iter().filter(|u| u["toolCallId"] == call_id).collect();
    assert!(calls.iter().all(|u| kind(u) == "tool_call_update"), "{calls:#?}");
    assert_eq!(calls.iter().filter_map(|u| u["status"].as_str()).next_back(), Some("completed"));
    assert!(workspace.join("allowed.txt").exists());
    assert_eq!(updates.last().unwrap()["stopReason"], "end_turn");

    // A client that fails the question: denied, the turn ends in error, nothing written.
    // A prompt right behind it is held until ZCode has stopped that turn, then runs.
    agent.set_policy(policy::error(-32603, "client exploded"));
    agent.send_request("session/prompt", text_prompt(&session, "sim:edit denied.txt no"));
    let behind = agent.send_request("session/prompt", text_prompt(&session, "right behind"));
    let updates = wait_idles(&agent, &session, 3);
    let idles: Vec<&Value> = updates.iter().filter(|u| is_turn_end(u)).collect();
    assert_eq!(idles[1]["stopReason"], "error", "{}", idles[1]);
    let message = idles[1]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("permission"), "{}", idles[1]);
    assert!(!workspace.join("denied.txt").exists(), "a failed question allowed the write");
    assert!(
        agent.result_of(&agent.wait_response(behind), "the prompt behind")["messageId"].is_string()
    );
    assert_eq!(idles[2]["stopReason"], "end_turn", "{}", idles[2]);
    assert!(agent.finish().success());
}

#[test]
fn resume_replays_from_the_start_then_marks_the_end_and_the_state() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let session = {
        let mut agent = v2_agent(&env, policy::permission_kind("allow_once"), json!({}));
        let session = new_v2_session(&mut agent, &workspace);
        agent.send_request("session/prompt", text_prompt(&session, "remember this"));
        wait_idles(&agent, &session, 1);
        assert!(agent.finish().success());
        session
    };

    let mut agent = v2_agent(&env, policy::refuse_all(), json!({}));
    let id = agent.send_request(
        "session/resume",
        json!({"sessionId": session, "cwd": workspace, "replayFrom": {"type": "start"}}),
    );
    let response = agent.wait_response(id);
    agent.result_of(&response, "resume with replay");
    let seq = agent.response_seq(id);
    let before: Vec<Value> = agent
        .transcript()
        .updates(&session)
        .into_iter()
        .filter(|(s, _)| *s < seq)
        .map(|(_, u)| u)
        .collect();
    let kinds: Vec<&str> = before.iter().map(kind).collect();
    let complete = kinds.iter().position(|k| *k == "replay_complete").expect("replay_complete");
    assert_eq!(kinds.iter().filter(|k| **k == "replay_complete").count(), 1, "{kinds:?}");
    assert!(
        chunk_text(&before[..complete], "user_message_chunk").contains("remember this"),
        "{kinds:?}"
    );
    assert!(
        chunk_text(&before[..complete], "agent_message_chunk").contains("You said: remember this")
    );
    let chunks = before[..complete].iter().filter(|u| kind(u).ends_with("_chunk"));
    assert!(
        chunks.clone().count() >= 2 && chunks.clone().all(|u| u["messageId"].is_string()),
        "{before:#?}"
    );
    assert_eq!(state(&before[complete + 1]), Some("idle"), "the state after the replay: {kinds:?}");
    assert_eq!(before.len(), complete + 2, "nothing between the state and the answer: {kinds:?}");

    // In V4 the session's title and usage come with the initial snapshot, which follows the
    // answer: let them arrive before looking at what the next resume sends.
    if generation() == Generation::ServicesServer {
        agent.wait_update(&session, "the title from the initial snapshot", |u| {
            kind(u) == "session_info_update"
        });
        agent.wait_update(&session, "the usage from the initial snapshot", |u| {
            kind(u) == "usage_update"
        });
    }
    // Without a cursor: no replay and no marker, but the state still comes first.
    let mark = agent.transcript().frames.last().map_or(0, |f| f.seq);
    let id = agent.send_request("session/resume", json!({"sessionId": session, "cwd": workspace}));
    agent.result_of(&agent.wait_response(id), "resume");
    let seq = agent.response_seq(id);
    let after: Vec<Value> = agent
        .transcript()
        .updates(&session)
        .into_iter()
        .filter(|(s, _)| *s > mark && *s < seq)
        .map(|(_, u)| u)
        .collect();
    // (Session metadata a generation sends once a session is open, such as its slash commands
    // or context usage, may still trail the first resume: it is neither replay nor state.)
    let after: Vec<&str> = after
        .iter()
        .map(kind)
        .filter(|k| !matches!(*k, "usage_update" | "available_commands_update"))
        .collect();
    assert_eq!(after, ["state_update"], "{after:#?}");
    // An unknown cursor is invalid params.
    let response = agent.request(
        "session/resume",
        json!({"sessionId": session, "cwd": workspace, "replayFrom": {"type": "message", "messageId": "m"}}),
    );
    assert_eq!(agent.error_of(&response, "unknown cursor").0, INVALID_PARAMS);
    // The resumed session works.
    agent.send_request("session/prompt", text_prompt(&session, "after resume"));
    wait_idles(&agent, &session, 1);
    assert!(agent.finish().success());
}

#[test]
fn close_cancels_held_prompts_ends_the_turn_and_then_nothing_is_sent() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = v2_agent(&env, policy::refuse_all(), json!({}));
    let session = new_v2_session(&mut agent, &workspace);

    agent.send_request("session/prompt", text_prompt(&session, "sim:slow 60000"));
    let held = agent.send_request("session/prompt", text_prompt(&session, "never"));
    agent
        .wait_update(&session, "the slow turn's first chunk", |u| kind(u) == "agent_message_chunk");
    let close = agent.send_request("session/close", json!({"sessionId": session}));
    agent.result_of(&agent.wait_response(close), "close");
    assert_eq!(agent.error_of(&agent.wait_response(held), "held").0, REQUEST_CANCELLED);
    let close_seq = agent.response_seq(close);
    let updates = agent.transcript().updates(&session);
    let idles: Vec<&(usize, Value)> = updates.iter().filter(|(_, u)| is_turn_end(u)).collect();
    assert_eq!(idles.len(), 1, "{updates:#?}");
    assert_eq!(idles[0].1["stopReason"], "cancelled");
    assert!(updates.iter().all(|(seq, _)| *seq < close_seq), "an update after the close answer");
    let response = agent.prompt(&session, "closed");
    assert_eq!(agent.error_of(&response, "prompt after close").0, RESOURCE_NOT_FOUND);
    assert!(agent.finish().success());
}

#[test]
fn modes_model_and_thought_level_are_config_options() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = v2_agent(&env, policy::refuse_all(), json!({}));
    let created = agent.call("session/new", json!({"cwd": workspace}));
    let session = created["sessionId"].as_str().unwrap().to_string();
    let options = created["configOptions"].as_array().expect("configOptions");
    let categories: Vec<&str> = options.iter().filter_map(|o| o["category"].as_str()).collect();
    assert!(categories.contains(&"mode") && categories.contains(&"model"), "{created}");
    assert!(created.get("modes").is_none(), "v1 modes in a v2 answer: {created}");
    let mode = options.iter().find(|o| o["category"] == "mode").unwrap();
    let other = mode["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .find(|v| *v != mode["currentValue"])
        .expect("a second mode")
        .to_string();
    let result = agent.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": mode["configId"], "type": "id", "value": other}),
    );
    let listed = result["configOptions"].as_array().expect("the whole list");
    let now = listed.iter().find(|o| o["category"] == "mode").unwrap();
    assert_eq!(now["currentValue"], other, "{result}");
    assert!(listed.iter().any(|o| o["category"] == "model"), "{result}");
    let bad = agent.request(
        "session/set_config_option",
        json!({"sessionId": session, "configId": mode["configId"], "type": "id", "value": "no-such-mode"}),
    );
    assert_eq!(agent.error_of(&bad, "unknown mode").0, INVALID_PARAMS);
    assert!(agent.finish().success());
}

#[test]
fn auth_login_confirms_the_terminal_login_and_sessions_take_v2_mcp_servers() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    // Signed in: ZCode's credentials file exists (its content is never read).
    let credentials = env.path().join("home/.zcode/v2");
    std::fs::create_dir_all(&credentials).unwrap();
    std::fs::write(credentials.join("credentials.json"), "{}").unwrap();
    let mut agent = v2_agent(&env, policy::refuse_all(), json!({"auth": {"terminal": {}}}));
    assert_eq!(agent.call("auth/login", json!({"methodId": "zcode-login"})), json!({}));
    let unknown = agent.request("auth/login", json!({"methodId": "password"}));
    assert_eq!(agent.error_of(&unknown, "an unknown auth method").0, INVALID_PARAMS);
    // v2 tags every MCP server and makes args, env and headers optional.
    let servers = json!([
        {"type": "stdio", "name": "local", "command": "/bin/true"},
        {"type": "http", "name": "remote", "url": "https://mcp.invalid/"}
    ]);
    let created = agent.call("session/new", json!({"cwd": workspace, "mcpServers": servers}));
    assert!(created["sessionId"].is_string(), "{created}");
    let sse = json!([{"type": "sse", "name": "old", "url": "https://mcp.invalid/"}]);
    let refused = agent.request("session/new", json!({"cwd": workspace, "mcpServers": sse}));
    assert_eq!(agent.error_of(&refused, "an SSE server").0, INVALID_PARAMS);
    assert!(agent.finish().success());

    // Signed out: auth/login and session/new say so (-32000, with what to do).
    if !skip_unless(
        "auth_login_confirms_the_terminal_login_and_sessions_take_v2_mcp_servers (signed out)",
        generation() != Generation::AppServer,
        "the Desktop Agent has no sign-in gate at session creation; its first model request \
         asks for the account's key (desktop_app_server.rs)",
    ) {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent =
        Agent::start_with_env(&env, policy::refuse_all(), &[("ZCODE_SIM_SIGNED_OUT", "1")]);
    agent.call("initialize", v2_initialize_params(json!({"auth": {"terminal": {}}})));
    let login = agent.request("auth/login", json!({"methodId": "zcode-login"}));
    assert_eq!(agent.error_of(&login, "login while signed out").0, -32000);
    let created = agent.request("session/new", json!({"cwd": workspace}));
    assert_eq!(agent.error_of(&created, "session/new while signed out").0, -32000);
    assert!(created["error"]["data"].to_string().contains("zcode-acp login"), "{created}");
    assert!(agent.finish().success());
}
