//! Cancellation: `session/cancel` and `$/cancel_request` while streaming, while a permission
//! is open, after the turn, and many times at once. A cancelled prompt answers `cancelled`,
//! exactly once, and nothing is allowed on the way.

mod support;

use serde_json::{Value, json};
use support::*;

/// Starts `sim:slow` (a long stoppable sleep after one chunk) and waits for its first chunk.
fn start_slow_turn(agent: &mut Agent, session: &str) -> u64 {
    let id = agent.send_request("session/prompt", text_prompt(session, "sim:slow 600000"));
    agent.wait_update(session, "the first chunk of the slow turn", |u| {
        kind(u) == "agent_message_chunk" && u["content"]["text"] == "Working on it"
    });
    id
}

/// Frames that answer request `id` (there must be exactly one).
fn answers_to(agent: &Agent, id: u64) -> Vec<Value> {
    let transcript = agent.transcript();
    transcript
        .frames
        .iter()
        .filter(|f| f.value.get("method").is_none() && f.value["id"] == id)
        .map(|f| f.value.clone())
        .collect()
}

#[test]
fn session_cancel_while_streaming_ends_the_turn_cancelled() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    let id = start_slow_turn(&mut agent, &session);
    agent.notify("session/cancel", json!({"sessionId": session}));
    let response = agent.wait_response(id);
    assert_eq!(agent.result_of(&response, "cancelled prompt")["stopReason"], "cancelled");
    let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
    assert!(!text.contains("done"), "the turn went on after the cancel: {text:?}");

    // The session takes the next prompt.
    let result = agent.prompt_when_idle(&session, "after the cancel");
    assert_eq!(result["stopReason"], "end_turn");
    assert!(agent.finish().success());
}

#[test]
fn cancel_during_a_permission_abandons_the_question_and_writes_nothing() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::hold(), plain_client(), &workspace);

    let id = agent.send_request("session/prompt", text_prompt(&session, "sim:edit held.txt no"));
    let permission = agent.wait_agent_request("session/request_permission", 0);
    agent.notify("session/cancel", json!({"sessionId": session}));
    let response = agent.wait_response(id);
    assert_eq!(
        agent.result_of(&response, "prompt cancelled at a permission")["stopReason"],
        "cancelled"
    );

    // The open question is withdrawn at the client.
    agent.wait_for("$/cancel_request for the permission request", |t| {
        t.notifications("$/cancel_request")
            .iter()
            .any(|f| f.value["params"]["requestId"] == permission.id)
            .then_some(())
    });
    // A client that answers late (as ACP asks after session/cancel) changes nothing.
    agent.respond(&permission.id, json!({"outcome": {"outcome": "cancelled"}}));
    let result = agent.prompt_when_idle(&session, "after the cancelled edit");
    assert_eq!(result["stopReason"], "end_turn");
    assert!(!workspace.join("held.txt").exists(), "a cancelled permission wrote the file");
    assert!(agent.finish().success());
}

#[test]
fn cancel_request_naming_the_prompt_cancels_the_turn() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    let id = start_slow_turn(&mut agent, &session);
    agent.notify("$/cancel_request", json!({"requestId": id}));
    let response = agent.wait_response(id);
    assert_eq!(
        agent.result_of(&response, "prompt cancelled by request id")["stopReason"],
        "cancelled"
    );

    let result = agent.prompt_when_idle(&session, "after $/cancel_request");
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(answers_to(&agent, id).len(), 1);
    assert!(agent.finish().success());
}

#[test]
fn cancel_after_the_turn_is_harmless() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    let first = agent.send_request("session/prompt", text_prompt(&session, "one"));
    let response = agent.wait_response(first);
    assert_eq!(agent.result_of(&response, "first prompt")["stopReason"], "end_turn");
    agent.notify("session/cancel", json!({"sessionId": session}));
    agent.notify("$/cancel_request", json!({"requestId": first}));
    agent.notify("session/cancel", json!({"sessionId": "no-such-session"}));

    // The next turn is not affected by the stale cancels.
    let result = agent.prompt_ok(&session, "two", "end_turn");
    assert!(result["usage"].is_object());
    assert_eq!(answers_to(&agent, first).len(), 1);
    let stray: Vec<Value> = agent
        .transcript()
        .frames
        .iter()
        .filter(|f| f.value.get("error").is_some())
        .map(|f| f.value.clone())
        .collect();
    assert!(stray.is_empty(), "cancels of nothing produced errors: {stray:#?}");
    assert!(agent.finish().success());
}

#[test]
fn a_cancel_storm_yields_exactly_one_answer() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    let id = start_slow_turn(&mut agent, &session);
    for i in 0..20 {
        if i % 5 == 4 {
            agent.notify("$/cancel_request", json!({"requestId": id}));
        } else {
            agent.notify("session/cancel", json!({"sessionId": session}));
        }
    }
    let response = agent.wait_response(id);
    assert_eq!(agent.result_of(&response, "storm-cancelled prompt")["stopReason"], "cancelled");

    // A later turn is the barrier: by its end, a duplicate answer would have been written.
    let result = agent.prompt_when_idle(&session, "after the storm");
    assert_eq!(result["stopReason"], "end_turn");
    let answers = answers_to(&agent, id);
    assert_eq!(answers.len(), 1, "{answers:#?}");
    assert!(agent.finish().success());
}

#[test]
fn cancel_during_a_structured_question_withdraws_the_form() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_session(&env, policy::hold(), form_client(), &workspace);

    let id = agent.send_request("session/prompt", text_prompt(&session, "sim:question"));
    let form = agent.wait_agent_request("elicitation/create", 0);
    agent.notify("session/cancel", json!({"sessionId": session}));
    let response = agent.wait_response(id);
    assert_eq!(agent.result_of(&response, "prompt cancelled at a form")["stopReason"], "cancelled");
    agent.wait_for("$/cancel_request for the form", |t| {
        t.notifications("$/cancel_request")
            .iter()
            .any(|f| f.value["params"]["requestId"] == form.id)
            .then_some(())
    });
    agent.respond(&form.id, json!({"action": "cancel"}));
    let result = agent.prompt_when_idle(&session, "after the cancelled form");
    assert_eq!(result["stopReason"], "end_turn");
    assert!(agent.finish().success());
}

#[test]
fn cancel_request_at_a_permission_cancels_the_turn_and_writes_nothing() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::hold(), plain_client(), &workspace);

    let id = agent.send_request("session/prompt", text_prompt(&session, "sim:edit held2.txt no"));
    let permission = agent.wait_agent_request("session/request_permission", 0);
    agent.notify("$/cancel_request", json!({"requestId": id}));
    let response = agent.wait_response(id);
    assert_eq!(agent.result_of(&response, "prompt cancelled by id")["stopReason"], "cancelled");
    agent.respond(&permission.id, policy::selected(&json!("allow")));
    let result = agent.prompt_when_idle(&session, "after");
    assert_eq!(result["stopReason"], "end_turn");
    assert!(!workspace.join("held2.txt").exists(), "a late allow after cancel wrote the file");
    assert!(agent.finish().success());
}

#[test]
fn closing_a_session_during_a_prompt_answers_the_prompt_cancelled() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    let id = start_slow_turn(&mut agent, &session);
    let closed = agent.call("session/close", json!({"sessionId": session}));
    assert!(closed.is_object(), "{closed}");
    let response = agent.wait_response(id);
    assert_eq!(agent.result_of(&response, "prompt of a closed session")["stopReason"], "cancelled");
    let after = agent.prompt(&session, "closed?");
    assert_eq!(agent.error_of(&after, "prompt after close").0, RESOURCE_NOT_FOUND);

    // The session can be loaded again; its interrupted turn is over.
    agent.call("session/load", json!({"sessionId": session, "cwd": workspace, "mcpServers": []}));
    let result = agent.prompt_when_idle(&session, "back again");
    assert_eq!(result["stopReason"], "end_turn", "{}", agent.report());
    assert!(agent.finish().success());
}

/// The client's order is the agent's order: a cancel written right behind its prompt (no wait)
/// must cancel that prompt, even if it reaches the agent while the prompt is being sent.
fn cancel_right_behind_the_prompt(by_request_id: bool) {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);
    // Several rounds: the race between the two messages goes either way on a given run.
    for round in 0..8 {
        let id = agent.send_request("session/prompt", text_prompt(&session, "sim:slow 600000"));
        if by_request_id {
            agent.notify("$/cancel_request", json!({"requestId": id}));
        } else {
            agent.notify("session/cancel", json!({"sessionId": session}));
        }
        let response = agent.wait_response(id);
        let result = agent.result_of(&response, &format!("round {round}"));
        assert_eq!(result["stopReason"], "cancelled", "round {round}");
        // Wait until the stopped turn has ended natively before the next round.
        let result = agent.prompt_when_idle(&session, "between rounds");
        assert_eq!(result["stopReason"], "end_turn", "{}", agent.report());
    }
    assert!(agent.finish().success());
}

#[test]
fn session_cancel_right_behind_the_prompt_cancels_it() {
    cancel_right_behind_the_prompt(false);
}

#[test]
fn cancel_request_right_behind_the_prompt_cancels_it() {
    cancel_right_behind_the_prompt(true);
}
