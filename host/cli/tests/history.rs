//! Sessions outlive the agent process: `session/load` replays the history before answering,
//! `session/resume` binds without replaying, and both check the session and its workspace.

mod support;

use serde_json::{Value, json};
use support::*;

/// Creates a session in a first agent process with a plain turn and a read turn; returns it.
fn session_with_history(env: &TestEnv, workspace: &std::path::Path) -> String {
    std::fs::write(workspace.join("README.md"), "persisted readme\n").unwrap();
    let (mut agent, session) =
        Agent::with_session(env, policy::refuse_all(), plain_client(), workspace);
    agent.prompt_ok(&session, "remember the e2e words", "end_turn");
    agent.prompt_ok(&session, "sim:read", "end_turn");
    assert!(agent.finish().success());
    session
}

const UNKNOWN: &str = "00000000-0000-4000-8000-000000000000";

fn text_of(update: &Value) -> &str {
    update["content"]["text"].as_str().unwrap_or_default()
}

#[test]
fn load_replays_the_history_before_answering_in_a_new_process() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let session = session_with_history(&env, &workspace);

    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    let id = agent.send_request(
        "session/load",
        json!({"sessionId": session, "cwd": workspace, "mcpServers": []}),
    );
    let response = agent.wait_response(id);
    let result = agent.result_of(&response, "session/load");
    assert_eq!(result["modes"]["currentModeId"], "build", "{result}");
    assert!(result["configOptions"].as_array().is_some_and(|o| !o.is_empty()), "{result}");

    let response_seq = agent.response_seq(id);
    let replayed: Vec<Value> = agent
        .transcript()
        .updates(&session)
        .into_iter()
        .filter(|(seq, _)| *seq < response_seq)
        .map(|(_, u)| u)
        .collect();
    let position = |pred: &dyn Fn(&Value) -> bool, what: &str| -> usize {
        replayed
            .iter()
            .position(pred)
            .unwrap_or_else(|| panic!("{what} not replayed: {replayed:#?}"))
    };
    let user_words = position(
        &|u| kind(u) == "user_message_chunk" && text_of(u) == "remember the e2e words",
        "the first user message",
    );
    let reply = position(
        &|u| {
            kind(u) == "agent_message_chunk"
                && text_of(u).contains("You said: remember the e2e words")
        },
        "the first reply",
    );
    let user_read =
        position(&|u| kind(u) == "user_message_chunk" && text_of(u) == "sim:read", "sim:read");
    let tool = position(&|u| kind(u) == "tool_call", "the read tool call");
    assert!(user_words < reply && reply < user_read && user_read < tool, "history order");
    let tool_call = &replayed[tool];
    assert_eq!(tool_call["kind"], "read", "{tool_call}");
    assert_eq!(tool_call["status"], "completed", "{tool_call}");
    assert!(tool_call.to_string().contains("persisted readme"), "{tool_call}");

    // The loaded session is live.
    let result = agent.prompt_ok(&session, "and after loading?", "end_turn");
    assert!(result["usage"].is_object());
    assert!(agent.finish().success());
}

#[test]
fn resume_binds_without_replaying() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let session = session_with_history(&env, &workspace);

    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    let result = agent
        .call("session/resume", json!({"sessionId": session, "cwd": workspace, "mcpServers": []}));
    assert_eq!(result["modes"]["currentModeId"], "build", "{result}");

    // A turn is the barrier: anything replayed would have arrived before its reply.
    let before = agent.updates(&session).len();
    agent.prompt_ok(&session, "resumed", "end_turn");
    let updates = agent.updates(&session);
    let history = ["user_message_chunk", "tool_call"];
    let replayed: Vec<&Value> =
        updates[..before].iter().filter(|u| history.contains(&kind(u))).collect();
    assert!(replayed.is_empty(), "resume replayed history: {replayed:#?}");
    let old_reply = updates.iter().any(|u| text_of(u).contains("remember the e2e words"));
    assert!(!old_reply, "an old message reached the client after resume");
    assert_eq!(
        chunk_text(&updates[before..], "agent_message_chunk"),
        "Hello from the ZCode simulator. You said: resumed"
    );
    assert!(agent.finish().success());
}

#[test]
fn a_session_is_refused_from_another_workspace() {
    let env = TestEnv::new();
    let home = env.workspace("home");
    let elsewhere = env.workspace("elsewhere");
    let session = session_with_history(&env, &home);

    // In a new process: ZCode says the session belongs elsewhere. (The Services Server asks
    // the workspace's own Agent, which does not have it: for this cwd the session is unknown.)
    let refused_with = match generation() {
        Generation::ServicesServer => RESOURCE_NOT_FOUND,
        _ => INVALID_PARAMS,
    };
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    for method in ["session/load", "session/resume"] {
        let response = agent
            .request(method, json!({"sessionId": session, "cwd": elsewhere, "mcpServers": []}));
        let (code, message) = agent.error_of(&response, &format!("{method} from another cwd"));
        assert_eq!(code, refused_with, "{method}: {message}");
    }
    // Nothing from the session leaked to the client.
    assert!(agent.updates(&session).is_empty(), "{:#?}", agent.updates(&session));

    // In the process that holds it: the binding refuses another workspace.
    agent.call("session/load", json!({"sessionId": session, "cwd": home, "mcpServers": []}));
    let response = agent
        .request("session/load", json!({"sessionId": session, "cwd": elsewhere, "mcpServers": []}));
    let (code, message) = agent.error_of(&response, "load of a bound session from another cwd");
    assert_eq!(code, INVALID_PARAMS, "{message}");
    // ... and the session is still usable from its own workspace.
    agent.prompt_ok(&session, "still mine", "end_turn");
    assert!(agent.finish().success());
}

#[test]
fn loading_or_resuming_an_unknown_session_is_not_found() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    for method in ["session/load", "session/resume"] {
        let response = agent
            .request(method, json!({"sessionId": UNKNOWN, "cwd": workspace, "mcpServers": []}));
        let (code, message) = agent.error_of(&response, &format!("{method} of an unknown session"));
        assert_eq!(code, RESOURCE_NOT_FOUND, "{method}: {response}");
        assert!(message.contains(UNKNOWN), "{message}");
    }
    assert!(agent.finish().success());
}

#[test]
fn session_methods_on_an_unknown_session_are_not_found() {
    let env = TestEnv::new();
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    for (method, params) in [
        ("session/prompt", text_prompt(UNKNOWN, "hello?")),
        ("session/set_mode", json!({"sessionId": UNKNOWN, "modeId": "plan"})),
        (
            "session/set_config_option",
            json!({"sessionId": UNKNOWN, "configId": "zcode.thought_level", "value": "high"}),
        ),
        ("session/close", json!({"sessionId": UNKNOWN})),
    ] {
        let response = agent.request(method, params);
        let (code, message) = agent.error_of(&response, method);
        assert_eq!(code, RESOURCE_NOT_FOUND, "{method}: {message}");
        assert!(message.contains(UNKNOWN), "{message}");
    }
    assert!(agent.finish().success());
}
