//! A permission is never allowed because something went wrong: an unknown option or a client
//! error denies natively and fails the turn; the file is never written. Also: one prompt at a
//! time per session.

mod support;

use serde_json::{Value, json};
use support::*;

/// After the agent is done, replays `session` in a fresh agent process and returns the tool
/// calls ZCode persisted: what the host really did with the permission.
fn persisted_tool_calls(env: &TestEnv, workspace: &std::path::Path, session: &str) -> Vec<Value> {
    let mut agent = Agent::start(env);
    agent.initialize(plain_client());
    agent.call("session/load", json!({"sessionId": session, "cwd": workspace, "mcpServers": []}));
    let tools: Vec<Value> =
        agent.updates(session).into_iter().filter(|u| kind(u) == "tool_call").collect();
    assert!(agent.finish().success());
    tools
}

/// A turn whose permission answer is unusable: the prompt fails, nothing is written, and
/// ZCode was told "deny" (its persisted tool call failed as denied).
fn assert_unusable_answer_denies(answer: Policy, expected_error: &str) {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_session(&env, answer, plain_client(), &workspace);

    let response = agent.prompt(&session, "sim:edit never.txt must not exist");
    let (code, message) = agent.error_of(&response, "prompt with an unusable permission answer");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    assert!(message.contains(expected_error), "{message:?} should mention {expected_error:?}");
    assert_eq!(agent.agent_requests().len(), 1, "asked once: {:#?}", agent.agent_requests());
    assert!(!workspace.join("never.txt").exists(), "the file was written");

    // Once the native turn has ended, the session works again.
    let result = agent.prompt_when_idle(&session, "next");
    assert_eq!(result["stopReason"], "end_turn");
    assert!(agent.finish().success());
    assert!(!workspace.join("never.txt").exists(), "the file was written");

    let tools = persisted_tool_calls(&env, &workspace, &session);
    let write = tools.iter().find(|t| t["rawInput"]["file_path"] == "never.txt");
    let write = write.unwrap_or_else(|| panic!("the Write tool was persisted: {tools:#?}"));
    assert_eq!(write["status"], "failed", "{write}");
    // Each generation words the native denial its own way ("Permission denied", "The user
    // denied this tool call."); what matters is that ZCode recorded a denial.
    assert!(write.to_string().to_lowercase().contains("denied"), "denied natively: {write}");
}

#[test]
fn an_unknown_option_is_a_denial_and_fails_the_turn() {
    assert_unusable_answer_denies(policy::permission_option("made-up-option"), "made-up-option");
}

#[test]
fn a_client_error_is_a_denial_and_fails_the_turn() {
    assert_unusable_answer_denies(
        policy::error(-32000, "the client broke down"),
        "permission request failed",
    );
}

#[test]
fn a_second_prompt_while_one_runs_is_refused_and_the_first_completes() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::hold(), plain_client(), &workspace);

    let first = agent.send_request("session/prompt", text_prompt(&session, "sim:edit busy.txt ok"));
    let permission = agent.wait_agent_request("session/request_permission", 0);

    let second = agent.prompt(&session, "me too");
    let (code, message) = agent.error_of(&second, "concurrent prompt");
    assert_eq!(code, INVALID_REQUEST, "{message}");
    assert!(message.contains("already active"), "{message}");

    // The first turn is unaffected: allow its edit and it completes normally.
    let allow = permission.params["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "allow_once")
        .unwrap()["optionId"]
        .clone();
    agent.respond(&permission.id, policy::selected(&allow));
    let response = agent.wait_response(first);
    assert_eq!(agent.result_of(&response, "first prompt")["stopReason"], "end_turn");
    assert_eq!(std::fs::read_to_string(workspace.join("busy.txt")).unwrap(), "ok\n");
    assert!(agent.finish().success());
}

#[test]
fn a_dismissed_permission_is_a_denial_and_the_turn_goes_on() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let dismiss: Policy =
        std::sync::Arc::new(|_, _| Reply::Result(json!({"outcome": {"outcome": "cancelled"}})));
    let (mut agent, session) = Agent::with_session(&env, dismiss, plain_client(), &workspace);

    // ACP: `cancelled` outside a session/cancel is the user dismissing the question.
    let result = agent.prompt_ok(&session, "sim:edit dismissed.txt no", "end_turn");
    assert!(result["usage"].is_object());
    assert_eq!(agent.agent_requests().len(), 1);
    assert!(!workspace.join("dismissed.txt").exists(), "a dismissed permission wrote the file");
    let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
    assert!(text.contains("Permission denied"), "{text:?}");
    assert!(agent.finish().success());
}

#[test]
fn a_failed_elicitation_fails_the_turn() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_session(
        &env,
        policy::error(-32603, "the form could not be shown"),
        form_client(),
        &workspace,
    );
    let response = agent.prompt(&session, "sim:question");
    let (code, message) = agent.error_of(&response, "question whose form failed");
    assert_eq!(code, INTERNAL_ERROR, "{message}");
    assert!(message.contains("elicitation request failed"), "{message}");
    assert_eq!(agent.agent_requests().len(), 1);
    let result = agent.prompt_when_idle(&session, "after the failed form");
    assert_eq!(result["stopReason"], "end_turn");
    assert!(agent.finish().success());
}

#[test]
fn an_answer_outside_the_form_is_not_passed_on_as_a_choice() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_session(
        &env,
        // Every field of the form (whatever a generation names them) gets a value it does not
        // offer.
        policy::elicitation(|params| {
            let mut content = serde_json::Map::new();
            for (name, field) in generation::form_fields(params) {
                let value =
                    if field["type"] == "array" { json!(["sideways"]) } else { json!("sideways") };
                content.insert(name, value);
            }
            json!({"action": "accept", "content": content})
        }),
        form_client(),
        &workspace,
    );
    // "sideways" is no offered value: ZCode must not receive it as the user's choice.
    // It is declined: the turn goes on without answers.
    agent.prompt_ok(&session, "sim:question", "end_turn");
    let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
    assert!(text.contains("No answers"), "the invalid answer was accepted: {text:?}");
    let tools: Vec<Value> =
        agent.updates(&session).into_iter().filter(|u| kind(u) == "tool_call_update").collect();
    assert!(!json!(tools).to_string().contains("sideways"), "{tools:#?}");
    assert!(agent.finish().success());
}
