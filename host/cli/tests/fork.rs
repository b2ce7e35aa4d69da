//! `session/fork` on the releases whose ZCode forks (V4 `forkAssistant`: Desktop 4.0 through
//! the app-server, runtime 4.0 through the Services Server), over ACP v1 (unstable there) and
//! v2: advertised, the fork replays the parent's turns like a load and takes a prompt, and the
//! parent is left as it was. On a task-protocol release (3.12.3) fork is not advertised and is
//! refused with a clear error. Each test names its release (the suite's default is not used).

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::*;

const FORKING: [&str; 2] = ["desktop-4.0.0", "runtime-4.0.0"];
const METHOD_NOT_FOUND: i64 = -32601;

fn start(env: &TestEnv, release: &str) -> Agent {
    let args = ["--simulate", "--simulate-version", release];
    Agent::start_with_args(env, policy::refuse_all(), &args, &[])
}

/// The user messages among `updates`, in order.
fn user_messages(updates: &[Value]) -> Vec<String> {
    updates
        .iter()
        .filter(|u| kind(u) == "user_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The updates of `session` written before the response to request `id`.
fn before_response(agent: &Agent, session: &str, id: u64) -> Vec<Value> {
    let seq = agent.response_seq(id);
    let updates = agent.transcript().updates(session);
    updates.into_iter().filter(|(s, _)| *s < seq).map(|(_, u)| u).collect()
}

/// A v1 session with two finished turns, in a first agent process; returns its id.
fn parent_with_two_turns(env: &TestEnv, release: &str, workspace: &Path) -> String {
    let mut agent = start(env, release);
    let result = agent.initialize(plain_client());
    let caps = &result["agentCapabilities"]["sessionCapabilities"];
    assert_eq!(caps["fork"], json!({}), "{release}: fork is advertised: {result}");
    let parent = agent.new_session(workspace);
    agent.prompt_ok(&parent, "first words", "end_turn");
    agent.prompt_ok(&parent, "second words", "end_turn");
    assert!(agent.finish().success());
    parent
}

/// Loads `session` in a fresh process; returns the user messages its history replays.
fn replayed_user_messages(
    env: &TestEnv,
    release: &str,
    workspace: &Path,
    session: &str,
) -> Vec<String> {
    let mut agent = start(env, release);
    agent.initialize(plain_client());
    let id = agent.send_request(
        "session/load",
        json!({"sessionId": session, "cwd": workspace, "mcpServers": []}),
    );
    let response = agent.wait_response(id);
    agent.result_of(&response, "session/load");
    let messages = user_messages(&before_response(&agent, session, id));
    assert!(agent.finish().success());
    messages
}

#[test]
fn a_v1_fork_replays_the_turns_takes_a_prompt_and_leaves_the_parent_alone() {
    for release in FORKING {
        let env = TestEnv::new();
        let workspace = env.workspace("ws");
        let parent = parent_with_two_turns(&env, release, &workspace);

        let mut agent = start(&env, release);
        agent.initialize(plain_client());
        let id = agent.send_request(
            "session/fork",
            json!({"sessionId": parent, "cwd": workspace, "mcpServers": []}),
        );
        let response = agent.wait_response(id);
        let result = agent.result_of(&response, "session/fork");
        let child = result["sessionId"].as_str().expect("the fork's sessionId").to_string();
        assert_ne!(child, parent, "{release}: the fork is a new session");
        assert_eq!(result["modes"]["currentModeId"], "build", "{release}: {result}");
        assert!(result["configOptions"].as_array().is_some_and(|o| !o.is_empty()), "{result}");

        // The history replays before the answer, like a load's.
        let replayed = before_response(&agent, &child, id);
        assert_eq!(
            user_messages(&replayed),
            ["first words", "second words"],
            "{release}: {replayed:#?}"
        );
        assert!(
            chunk_text(&replayed, "agent_message_chunk").contains("second words"),
            "{release}: the answers replay too: {replayed:#?}"
        );
        // Nothing of the fork reaches the parent.
        assert!(agent.transcript().updates(&parent).is_empty(), "{release}");

        agent.prompt_ok(&child, "third words", "end_turn");
        assert!(agent.finish().success());

        // The parent is as it was; the fork kept its own third turn.
        let parent_history = replayed_user_messages(&env, release, &workspace, &parent);
        assert_eq!(parent_history, ["first words", "second words"], "{release}");
        let child_history = replayed_user_messages(&env, release, &workspace, &child);
        assert_eq!(child_history, ["first words", "second words", "third words"], "{release}");
    }
}

#[test]
fn a_fork_of_a_session_with_no_finished_turn_is_invalid_params() {
    for release in FORKING {
        let env = TestEnv::new();
        let workspace = env.workspace("ws");
        let mut agent = start(&env, release);
        agent.initialize(plain_client());
        let parent = agent.new_session(&workspace);
        let id = agent.send_request(
            "session/fork",
            json!({"sessionId": parent, "cwd": workspace, "mcpServers": []}),
        );
        let (code, message) = agent.error_of(&agent.wait_response(id), "session/fork");
        assert_eq!(code, -32602, "{release}: {message}");
        assert!(message.contains("no completed answer to fork"), "{release}: {message}");
        assert!(agent.finish().success());
    }
}

fn v2_initialize(agent: &mut Agent) -> Value {
    let params = json!({"protocolVersion": 2, "capabilities": {},
                        "info": {"name": "zcode-acp-e2e", "version": "0"}});
    let result = agent.call("initialize", params);
    assert_eq!(result["protocolVersion"], 2, "{result}");
    result
}

/// Waits until `session` has seen `n` turn ends (idle with a stop reason); returns them.
fn v2_turn_ends(agent: &Agent, session: &str, n: usize) -> Vec<Value> {
    agent.wait_for(&format!("{n} turn ends"), |t| {
        let ends: Vec<Value> = t
            .updates(session)
            .into_iter()
            .map(|(_, u)| u)
            .filter(|u| kind(u) == "state_update" && u["state"] == "idle")
            .filter(|u| u.get("stopReason").is_some())
            .collect();
        (ends.len() >= n).then_some(ends)
    })
}

#[test]
fn a_v2_fork_replays_then_marks_the_end_and_takes_a_prompt() {
    for release in FORKING {
        let env = TestEnv::new();
        let workspace = env.workspace("ws");
        let mut agent = start(&env, release);
        let init = v2_initialize(&mut agent);
        assert_eq!(init["capabilities"]["session"]["fork"], json!({}), "{release}: {init}");
        let created = agent.call("session/new", json!({"cwd": workspace}));
        let parent = created["sessionId"].as_str().expect("sessionId").to_string();
        agent.send_request("session/prompt", text_prompt(&parent, "first words"));
        v2_turn_ends(&agent, &parent, 1);
        agent.send_request("session/prompt", text_prompt(&parent, "second words"));
        v2_turn_ends(&agent, &parent, 2);
        let parent_updates = agent.transcript().updates(&parent).len();

        let id = agent.send_request("session/fork", json!({"sessionId": parent, "cwd": workspace}));
        let response = agent.wait_response(id);
        let result = agent.result_of(&response, "session/fork");
        let child = result["sessionId"].as_str().expect("the fork's sessionId").to_string();
        assert_ne!(child, parent);
        assert!(result["configOptions"].as_array().is_some_and(|o| !o.is_empty()), "{result}");
        let before = before_response(&agent, &child, id);
        let kinds: Vec<&str> = before.iter().map(kind).collect();
        let complete = kinds.iter().position(|k| *k == "replay_complete").expect("replay_complete");
        assert_eq!(
            user_messages(&before[..complete]),
            ["first words", "second words"],
            "{release}: {kinds:?}"
        );
        assert_eq!(kinds.get(complete + 1), Some(&"state_update"), "{release}: {kinds:?}");
        assert_eq!(before[complete + 1]["state"], "idle", "{release}");

        agent.send_request("session/prompt", text_prompt(&child, "third words"));
        let ends = v2_turn_ends(&agent, &child, 1);
        assert_eq!(ends[0]["stopReason"], "end_turn", "{release}: {ends:?}");
        // The parent saw nothing of it.
        assert_eq!(agent.transcript().updates(&parent).len(), parent_updates, "{release}");
        assert!(agent.finish().success());
    }
}

#[test]
fn on_the_task_protocol_fork_is_not_advertised_and_is_refused() {
    let release = "3.12.3";
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = start(&env, release);
    let result = agent.initialize(plain_client());
    let caps = &result["agentCapabilities"]["sessionCapabilities"];
    assert!(caps.get("fork").is_none(), "{result}");
    let parent = agent.new_session(&workspace);
    agent.prompt_ok(&parent, "first words", "end_turn");
    let id = agent.send_request(
        "session/fork",
        json!({"sessionId": parent, "cwd": workspace, "mcpServers": []}),
    );
    let (code, message) = agent.error_of(&agent.wait_response(id), "session/fork");
    assert_eq!(code, METHOD_NOT_FOUND, "{message}");
    assert!(message.contains("session/fork is not supported by this ZCode"), "{message}");
    assert!(agent.finish().success());

    let mut agent = start(&env, release);
    let init = v2_initialize(&mut agent);
    assert!(init["capabilities"]["session"].get("fork").is_none(), "{init}");
    let id = agent.send_request("session/fork", json!({"sessionId": parent, "cwd": workspace}));
    let (code, message) = agent.error_of(&agent.wait_response(id), "session/fork");
    assert_eq!(code, METHOD_NOT_FOUND, "{message}");
    assert!(message.contains("cannot fork sessions"), "{message}");
    assert!(agent.finish().success());
}
