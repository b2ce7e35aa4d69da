//! `session/prompt` against every built-in simulator scenario: what the client sees (update
//! kinds and content, their order, interactions, stop reasons, errors) and what happens in
//! the workspace.

mod support;

use serde_json::{Value, json};
use support::*;

/// The updates of one turn: everything the session received after `before` updates.
fn turn_updates(agent: &Agent, session: &str, before: usize) -> Vec<Value> {
    agent.updates(session)[before..].to_vec()
}

/// Runs one prompt and returns (response frame, the turn's updates, the response's seq, the
/// seqs of the turn's updates).
fn run_turn(
    agent: &mut Agent,
    session: &str,
    text: &str,
) -> (Value, Vec<Value>, usize, Vec<usize>) {
    let before = agent.updates(session).len();
    let id = agent.send_request("session/prompt", text_prompt(session, text));
    let response = agent.wait_response(id);
    let response_seq = agent.response_seq(id);
    let all = agent.transcript().updates(session);
    let seqs = all[before..].iter().map(|(seq, _)| *seq).collect();
    (response, turn_updates(agent, session, before), response_seq, seqs)
}

/// The single tool call of a turn: its id and its updates.
fn only_tool(updates: &[Value]) -> (String, Vec<&Value>) {
    let announced: Vec<&Value> = updates.iter().filter(|u| kind(u) == "tool_call").collect();
    assert_eq!(announced.len(), 1, "exactly one tool call: {updates:#?}");
    let id = announced[0]["toolCallId"].as_str().expect("toolCallId").to_string();
    let all = tool_updates(updates, &id);
    (id, all)
}

#[test]
fn a_plain_prompt_streams_the_reply_in_order_and_ends_the_turn_with_usage() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    let (response, updates, response_seq, seqs) = run_turn(&mut agent, &session, "hello e2e world");
    let result = agent.result_of(&response, "plain prompt");
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    let usage = &result["usage"];
    assert!(usage["totalTokens"].as_u64().is_some_and(|n| n > 0), "usage present: {result}");
    assert!(usage["inputTokens"].as_u64().is_some() && usage["outputTokens"].as_u64().is_some());

    assert!(count(&updates, "agent_message_chunk") > 1, "the reply is streamed: {updates:#?}");
    assert_eq!(
        chunk_text(&updates, "agent_message_chunk"),
        "Hello from the ZCode simulator. You said: hello e2e world"
    );
    assert!(seqs.iter().all(|seq| *seq < response_seq), "an update came after the response");
    let usage_updates: Vec<&Value> = updates.iter().filter(|u| kind(u) == "usage_update").collect();
    assert!(!usage_updates.is_empty(), "usage_update during the turn");
    assert!(agent.agent_requests().is_empty(), "a plain reply asks nothing");
    assert!(agent.finish().success());
}

#[test]
fn reasoning_arrives_as_thought_chunks_before_the_answer() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    let (response, updates, _, _) = run_turn(&mut agent, &session, "sim:reason");
    assert_eq!(agent.result_of(&response, "sim:reason")["stopReason"], "end_turn");
    assert!(count(&updates, "agent_thought_chunk") > 1, "{updates:#?}");
    assert_eq!(
        chunk_text(&updates, "agent_thought_chunk"),
        "The user wants an answer. Let me think it through briefly before replying."
    );
    assert_eq!(
        chunk_text(&updates, "agent_message_chunk"),
        "Here is my answer, after thinking it through."
    );
    let last_thought = updates.iter().rposition(|u| kind(u) == "agent_thought_chunk").unwrap();
    let first_message = updates.iter().position(|u| kind(u) == "agent_message_chunk").unwrap();
    assert!(last_thought < first_message, "thoughts come before the answer");
    assert!(agent.finish().success());
}

#[test]
fn the_read_tool_reports_the_real_file_content() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    std::fs::write(workspace.join("README.md"), "# e2e readme\nline two\n").unwrap();
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    let (response, updates, _, _) = run_turn(&mut agent, &session, "sim:read");
    assert_eq!(agent.result_of(&response, "sim:read")["stopReason"], "end_turn");
    let (_, tool) = only_tool(&updates);
    assert_eq!(tool[0]["sessionUpdate"], "tool_call");
    assert_eq!(tool[0]["kind"], "read", "{}", tool[0]);
    let path = workspace.join("README.md");
    assert_eq!(tool[0]["locations"], json!([{"path": path}]), "{}", tool[0]);
    assert_eq!(final_status(&tool), "completed", "{tool:#?}");
    assert_eq!(tool_content_text(&tool), "# e2e readme\nline two\n");
    // The tool call sits between "Let me read" and "That was".
    let tool_at = updates.iter().position(|u| kind(u) == "tool_call").unwrap();
    assert_eq!(chunk_text(&updates[..tool_at], "agent_message_chunk"), "Let me read README.md.");
    assert_eq!(chunk_text(&updates[tool_at..], "agent_message_chunk"), "That was README.md.");
    assert!(agent.agent_requests().is_empty(), "reading asks no permission");
    assert!(agent.finish().success());
}

#[test]
fn an_allowed_edit_writes_the_file() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_session(
        &env,
        policy::permission_kind("allow_once"),
        plain_client(),
        &workspace,
    );

    let (response, updates, _, _) =
        run_turn(&mut agent, &session, "sim:edit notes/allowed.txt written by e2e");
    assert_eq!(agent.result_of(&response, "allowed edit")["stopReason"], "end_turn");

    let requests = agent.agent_requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let permission = &requests[0];
    assert_eq!(permission.method, "session/request_permission");
    assert_eq!(permission.params["sessionId"], session.as_str());
    assert_eq!(permission.params["toolCall"]["kind"], "edit", "{:?}", permission.params);
    let kinds = policy::option_kinds(&permission.params);
    assert!(kinds.contains(&"allow_once") && kinds.contains(&"reject_once"), "{kinds:?}");

    let written = workspace.join("notes/allowed.txt");
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "written by e2e\n");
    let (id, tool) = only_tool(&updates);
    assert_eq!(permission.params["toolCall"]["toolCallId"], id.as_str(), "same tool call");
    assert_eq!(tool[0]["kind"], "edit");
    assert_eq!(final_status(&tool), "completed", "{tool:#?}");
    assert!(chunk_text(&updates, "agent_message_chunk").contains("Wrote notes/allowed.txt."));
    assert!(agent.finish().success());
}

#[test]
fn a_denied_edit_leaves_the_workspace_alone() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_session(
        &env,
        policy::permission_kind("reject_once"),
        plain_client(),
        &workspace,
    );

    let (response, updates, _, _) = run_turn(&mut agent, &session, "sim:edit denied.txt nope");
    assert_eq!(agent.result_of(&response, "denied edit")["stopReason"], "end_turn");

    let requests = agent.agent_requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let deny = requests[0].params["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "reject_once")
        .unwrap()["optionId"]
        .clone();
    let reply = requests[0].reply.as_ref().expect("answered");
    assert_eq!(reply["result"]["outcome"]["optionId"], deny, "the deny option was sent");

    assert!(!workspace.join("denied.txt").exists(), "a denied edit wrote the file");
    let (_, tool) = only_tool(&updates);
    assert_eq!(final_status(&tool), "failed", "{tool:#?}");
    assert!(
        chunk_text(&updates, "agent_message_chunk").contains("Permission denied"),
        "{updates:#?}"
    );
    assert!(agent.finish().success());
}

#[test]
fn a_shell_tool_asks_and_reports_its_output() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_session(
        &env,
        policy::permission_kind("allow_once"),
        plain_client(),
        &workspace,
    );

    let (response, updates, _, _) = run_turn(&mut agent, &session, "sim:shell echo e2e");
    assert_eq!(agent.result_of(&response, "shell")["stopReason"], "end_turn");
    let requests = agent.agent_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].params["toolCall"]["kind"], "execute");
    assert_eq!(requests[0].params["toolCall"]["rawInput"]["command"], "echo e2e");

    let (_, tool) = only_tool(&updates);
    assert_eq!(tool[0]["kind"], "execute");
    assert_eq!(final_status(&tool), "completed", "{tool:#?}");
    assert!(tool_content_text(&tool).contains("$ echo e2e\n(simulated output)\n"), "{tool:#?}");
    assert!(chunk_text(&updates, "agent_message_chunk").contains("The command finished."));
    assert!(agent.finish().success());
}

/// Accepts a structured question: the second choice of the first question, all choices of
/// the second (the fields in the form's order, whatever a generation names them).
fn answer_questions(params: &Value) -> Value {
    let fields = generation::form_fields(params);
    let first = fields[0].1["oneOf"][1]["const"].clone();
    let all: Vec<Value> = fields[1].1["items"]["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["const"].clone())
        .collect();
    let mut content = serde_json::Map::new();
    content.insert(fields[0].0.clone(), first);
    content.insert(fields[1].0.clone(), json!(all));
    json!({"action": "accept", "content": content})
}

#[test]
fn a_structured_question_is_asked_through_form_elicitation() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::elicitation(answer_questions), form_client(), &workspace);

    let (response, updates, _, _) = run_turn(&mut agent, &session, "sim:question");
    assert_eq!(agent.result_of(&response, "question")["stopReason"], "end_turn");

    let requests = agent.agent_requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    let form = &requests[0];
    assert_eq!(form.method, "elicitation/create");
    assert_eq!(form.params["mode"], "form");
    assert_eq!(form.params["sessionId"], session.as_str());
    let schema = &form.params["requestedSchema"];
    let fields = generation::form_fields(&form.params);
    assert_eq!(fields.len(), 2, "{schema}");
    assert_eq!(fields[0].1["type"], "string", "{schema}");
    assert_eq!(fields[0].1["description"], "Which approach should I take?");
    assert_eq!(fields[1].1["type"], "array", "{schema}");
    assert_eq!(schema["required"], json!([fields[0].0, fields[1].0]));

    let (_, tool) = only_tool(&updates);
    assert_eq!(final_status(&tool), "completed", "{tool:#?}");
    // The host generations answer with option values, the Desktop Agent with labels (the
    // Agent sets each option's value to its label): compare without case.
    let answers = tool_content_text(&tool).to_lowercase();
    assert!(answers.contains("thorough") && answers.contains("tests") && answers.contains("lint"));
    assert!(chunk_text(&updates, "agent_message_chunk").contains("Thanks, I will proceed"));
    assert!(agent.finish().success());
}

#[test]
fn a_declined_structured_question_lets_the_turn_go_on_without_answers() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_session(
        &env,
        policy::elicitation(|_| json!({"action": "decline"})),
        form_client(),
        &workspace,
    );

    let (response, updates, _, _) = run_turn(&mut agent, &session, "sim:question");
    assert_eq!(agent.result_of(&response, "declined question")["stopReason"], "end_turn");
    assert_eq!(agent.agent_requests().len(), 1);
    let (_, tool) = only_tool(&updates);
    assert_eq!(final_status(&tool), "failed", "{tool:#?}");
    assert!(
        chunk_text(&updates, "agent_message_chunk").contains("No answers; I will not proceed.")
    );
    assert!(agent.finish().success());
}

/// A client without form elicitation (issue 26): a form it cannot be asked as a permission
/// (here two questions, one multi-select) is declined to ZCode natively, with a reason the
/// model reads, and the turn goes on.
#[test]
fn another_form_is_declined_natively_for_a_client_without_forms_and_the_turn_goes_on() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    let (response, updates, _, _) = run_turn(&mut agent, &session, "sim:question");
    assert_eq!(agent.result_of(&response, "question without forms")["stopReason"], "end_turn");
    assert!(agent.agent_requests().is_empty(), "nothing was asked: {:#?}", agent.agent_requests());
    let (_, tool) = only_tool(&updates);
    assert_eq!(final_status(&tool), "failed", "declined: {tool:#?}");
    assert!(chunk_text(&updates, "agent_message_chunk").contains("No answers"), "{updates:#?}");
    assert!(agent.finish().success());
}

/// One single-choice question, for [`a_single_choice_question_is_a_permission_without_forms`].
const SINGLE_CHOICE: &str = r#"{"step":"question","prompt":"One question","questions":[{"question":"Which approach should I take?","header":"Approach","options":[{"value":"quick","label":"Quick"},{"value":"thorough","label":"Thorough"}]}]}
{"step":"text","if":"allowed","text":"Answered."}
{"step":"text","if":"denied","text":"Not answered."}
"#;

#[test]
fn a_single_choice_question_is_a_permission_without_forms() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    std::fs::write(workspace.join("single.jsonl"), SINGLE_CHOICE).unwrap();
    let (mut agent, session) = Agent::with_session(
        &env,
        policy::permission_kind("allow_once"),
        plain_client(),
        &workspace,
    );

    let before = agent.updates(&session).len();
    agent.prompt_ok(&session, "sim:file single.jsonl", "end_turn");
    let requests = agent.agent_requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert_eq!(requests[0].method, "session/request_permission");
    let options = requests[0].params["options"].as_array().unwrap().clone();
    let kinds = policy::option_kinds(&requests[0].params);
    assert_eq!(kinds, ["allow_once", "allow_once", "reject_once"], "one option per choice");
    let names: Vec<&str> = options.iter().map(|o| o["name"].as_str().unwrap()).collect();
    assert_eq!(&names[..2], ["Quick", "Thorough"]);
    let updates = turn_updates(&agent, &session, before);
    let (_, tool) = only_tool(&updates);
    assert_eq!(final_status(&tool), "completed", "{tool:#?}");
    assert!(tool_content_text(&tool).to_lowercase().contains("quick"), "{tool:#?}");
    assert!(chunk_text(&updates, "agent_message_chunk").contains("Answered."));

    // The reject option declines: the turn goes on without an answer.
    agent.set_policy(policy::permission_kind("reject_once"));
    let before = agent.updates(&session).len();
    agent.prompt_ok(&session, "sim:file single.jsonl", "end_turn");
    let updates = turn_updates(&agent, &session, before);
    assert!(chunk_text(&updates, "agent_message_chunk").contains("Not answered."), "{updates:#?}");
    assert!(agent.finish().success());
}

/// Without form elicitation plan approval is an ordinary permission, as peers ask it: an
/// approving option ends the turn `end_turn` with the plan carried out; the reject keeps ZCode
/// planning. Both sources: the `ExitPlanMode` permission and the `plan_approval` input.
#[test]
fn plan_approval_is_a_permission_without_forms() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_session(
        &env,
        policy::permission_kind("allow_once"),
        plain_client(),
        &workspace,
    );
    for (n, scenario) in ["sim:plan", "sim:plan-input"].into_iter().enumerate() {
        agent.call("session/set_mode", json!({"sessionId": session, "modeId": "plan"}));
        let before = agent.updates(&session).len();
        agent.prompt_ok(&session, scenario, "end_turn");
        let requests = agent.agent_requests();
        assert_eq!(requests.len(), n + 1, "{scenario}: {requests:#?}");
        let asked = &requests[n];
        assert_eq!(asked.method, "session/request_permission", "{scenario}");
        let kinds = policy::option_kinds(&asked.params);
        assert!(
            kinds.contains(&"allow_once") && kinds.contains(&"reject_once"),
            "{scenario}: {kinds:?}"
        );
        let updates = turn_updates(&agent, &session, before);
        let text = chunk_text(&updates, "agent_message_chunk");
        assert!(text.contains("Plan approved"), "{scenario}: {updates:#?}");
        if generation() == Generation::AppServer {
            // The Agent's plan is a document no update shows: the permission carries it.
            assert!(asked.params.to_string().contains("Proposed plan"), "{}", asked.params);
        }
    }
    assert!(agent.finish().success());
}

#[test]
fn a_plan_rejected_through_a_permission_keeps_zcode_planning() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_session(
        &env,
        policy::permission_kind("reject_once"),
        plain_client(),
        &workspace,
    );
    agent.call("session/set_mode", json!({"sessionId": session, "modeId": "plan"}));
    for scenario in ["sim:plan", "sim:plan-input"] {
        let before = agent.updates(&session).len();
        agent.prompt_ok(&session, scenario, "end_turn");
        let updates = turn_updates(&agent, &session, before);
        let text = chunk_text(&updates, "agent_message_chunk");
        assert!(text.contains("Plan rejected; I will keep planning."), "{scenario}: {updates:#?}");
        let left = updates.iter().any(|u| u["currentModeId"] == "build");
        assert!(!left, "{scenario}: a rejected plan left plan mode: {updates:#?}");
    }
    assert_eq!(agent.agent_requests().len(), 2);
    assert!(agent.finish().success());
}

/// Answers a plan-approval form with the choice that means `choices` (each generation has
/// its own words for approving and rejecting a plan).
fn plan_choice(choices: &'static [&'static str]) -> Policy {
    policy::elicitation(move |params| {
        let (field, choice) = generation::field_offering(params, choices)
            .unwrap_or_else(|| panic!("none of {choices:?} offered: {params}"));
        json!({"action": "accept", "content": {field: choice}})
    })
}

#[test]
fn plan_approval_through_a_permission_shows_the_plan_then_asks() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_session(
        &env,
        plan_choice(&generation::PLAN_APPROVE),
        form_client(),
        &workspace,
    );
    agent.call("session/set_mode", json!({"sessionId": session, "modeId": "plan"}));

    let before = agent.updates(&session).len();
    let response = agent.prompt(&session, "sim:plan");
    assert_eq!(agent.result_of(&response, "plan")["stopReason"], "end_turn");
    let requests = agent.agent_requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert_eq!(requests[0].method, "elicitation/create");

    let transcript = agent.transcript().updates(&session)[before..].to_vec();
    if generation() != Generation::AppServer {
        let plan_at = transcript
            .iter()
            .find(|(_, u)| kind(u) == "plan" || kind(u) == "plan_update")
            .expect("the plan is shown");
        assert!(plan_at.1.to_string().contains("Proposed plan"), "{}", plan_at.1);
        assert!(plan_at.0 < requests[0].seq, "the plan is shown before the question");
    } else {
        // The Agent's plan is a document, not a to-do list: the question shows it.
        let message = requests[0].params["message"].as_str().unwrap_or_default();
        assert!(message.contains("Proposed plan"), "{}", requests[0].params);
    }
    let updates: Vec<Value> = transcript.iter().map(|(_, u)| u.clone()).collect();
    assert!(chunk_text(&updates, "agent_message_chunk").contains("Plan approved"), "{updates:#?}");
    // Approving the plan leaves plan mode.
    let switched =
        transcript.iter().any(|(seq, u)| *seq > requests[0].seq && u["currentModeId"] == "build");
    assert!(switched, "no switch back to build after approval: {updates:#?}");
    assert!(agent.finish().success());
}

#[test]
fn a_rejected_plan_is_taken_down() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, plan_choice(&generation::PLAN_REJECT), form_client(), &workspace);

    let before = agent.updates(&session).len();
    let response = agent.prompt(&session, "sim:plan");
    assert_eq!(agent.result_of(&response, "rejected plan")["stopReason"], "end_turn");
    let updates = turn_updates(&agent, &session, before);
    let plans: Vec<&Value> = updates.iter().filter(|u| kind(u) == "plan").collect();
    if generation() != Generation::AppServer {
        assert!(plans.len() >= 2, "shown, then removed: {plans:#?}");
        assert_eq!(plans.last().unwrap()["entries"], json!([]), "the plan is cleared");
    } else {
        assert!(plans.is_empty(), "the plan was only in the question: {plans:#?}");
    }
    assert!(chunk_text(&updates, "agent_message_chunk").contains("Plan rejected"));
    assert!(agent.finish().success());
}

#[test]
fn plan_approval_through_structured_input_is_a_form_too() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) = Agent::with_session(
        &env,
        plan_choice(&generation::PLAN_APPROVE),
        form_client(),
        &workspace,
    );

    let before = agent.updates(&session).len();
    let response = agent.prompt(&session, "sim:plan-input");
    assert_eq!(agent.result_of(&response, "plan-input")["stopReason"], "end_turn");
    assert_eq!(agent.agent_requests().len(), 1);
    let updates = turn_updates(&agent, &session, before);
    if generation() != Generation::AppServer {
        assert!(updates.iter().any(|u| kind(u) == "plan"), "{updates:#?}");
    }
    assert!(chunk_text(&updates, "agent_message_chunk").contains("Plan approved"));
    assert!(agent.finish().success());
}

#[test]
fn a_failing_turn_is_a_json_rpc_error_never_end_turn() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    let (response, updates, _, _) = run_turn(&mut agent, &session, "sim:fail the model fell over");
    let (code, message) = agent.error_of(&response, "sim:fail");
    assert_eq!(code, INTERNAL_ERROR);
    assert!(message.contains("the model fell over"), "{message}");
    assert_eq!(chunk_text(&updates, "agent_message_chunk"), "Starting.", "streamed before failing");

    let result = agent.prompt_when_idle(&session, "and now?");
    assert_eq!(result["stopReason"], "end_turn", "the session survives a failed turn");
    assert!(agent.finish().success());
}

#[test]
fn a_blank_prompt_is_answered_never_left_hanging() {
    let why = "the task protocol of 3.11-3.12 takes a blank prompt as any other and runs a turn";
    if !applies(&[Generation::AppServer, Generation::ServicesServer], why) {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);
    let blank = json!([{"type": "text", "text": " \n\t"}]);
    let response = agent.request("session/prompt", json!({"sessionId": session, "prompt": blank}));
    // Refused by the mapper as invalid parameters, before ZCode is asked: ZCode 3.15.1's
    // `sendText` would fail it anyway (`failed` `proto.invalidPayload`).
    let (code, message) = agent.error_of(&response, "a blank prompt");
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("no text") || message.contains("no content"), "{message}");
    // The session is still usable afterwards.
    agent.prompt_ok(&session, "after the blank one", "end_turn");
    assert!(agent.finish().success());
}

#[test]
fn native_result_types_map_to_their_stop_reasons() {
    let why = "V4 turn headers end completedSuccess, completedInterrupted or failed: there is no \
               result type to map (an unknown header state: runtime_services.rs)";
    if !applies(&[Generation::HostBridge, Generation::AppServer], why) {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    for (result_type, stop_reason) in generation::result_types() {
        agent.prompt_ok(&session, &format!("sim:end {result_type}"), stop_reason);
    }

    // An unknown result is an error, never rounded to a stop reason.
    let response = agent.prompt(&session, "sim:end exploded");
    let (_, message) = agent.error_of(&response, "sim:end exploded");
    assert!(message.contains("exploded"), "{message}");
    assert!(agent.finish().success());
}

#[test]
fn todos_become_a_plan() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);

    let (response, updates, _, _) = run_turn(&mut agent, &session, "sim:todos");
    assert_eq!(agent.result_of(&response, "todos")["stopReason"], "end_turn");
    let plans: Vec<&Value> = updates.iter().filter(|u| kind(u) == "plan").collect();
    assert!(plans.len() >= 2, "{updates:#?}");
    let last = &plans.last().unwrap()["entries"];
    assert_eq!(last[0]["content"], "Read the code");
    assert_eq!(last[0]["status"], "completed");
    assert_eq!(last[2]["status"], "in_progress");
    assert!(agent.finish().success());
}

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// A PDF's first bytes (`%PDF-1.4`), as an embedded binary resource.
const PDF: &str = "JVBERi0xLjQK";

/// The Desktop Agent takes text, embedded text resources and links as text, and images, audio
/// and binary resources as `session/send` attachments. The simulated Agent refuses a send whose
/// attachment did not arrive whole (bytes, MIME type, name) and records the attachments, so the
/// replay after a load shows each one exactly as sent.
fn rich_prompt_content_on_the_desktop_agent() {
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);
    let prompt = json!([
        {"type": "text", "text": "look at these"},
        {"type": "image", "data": PNG, "mimeType": "image/png", "uri": "file:///virtual/dot.png"},
        {"type": "audio", "data": "UklGRgAAAABXQVZF", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "file:///virtual/spec.pdf", "blob": PDF,
            "mimeType": "application/pdf"}},
        {"type": "resource", "resource": {"uri": "file:///virtual/context.txt",
            "text": "embedded context", "mimeType": "text/plain"}},
        {"type": "resource_link", "uri": "file:///virtual/notes.md", "name": "notes.md"},
    ]);
    let result = agent.call("session/prompt", json!({"sessionId": session, "prompt": prompt}));
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
    assert!(text.contains("look at these") && text.contains("embedded context"), "{text:?}");
    assert!(text.contains("notes.md"), "{text:?}");

    // An image whose bytes are not what its MIME type says does not arrive as sent: the
    // simulated Agent refuses it, naming the mismatch.
    let lying = json!([{"type": "image", "data": PNG, "mimeType": "image/jpeg"}]);
    let response = agent.request("session/prompt", json!({"sessionId": session, "prompt": lying}));
    let (_, message) = agent.error_of(&response, "a PNG declared as JPEG");
    assert!(message.contains("declared image/jpeg but the bytes are image/png"), "{message}");
    agent.prompt_ok(&session, "still here", "end_turn");
    assert!(agent.finish().success());

    // The replay shows each attachment as the Agent recorded it: name, MIME type and bytes.
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    agent.call("session/load", json!({"sessionId": session, "cwd": workspace, "mcpServers": []}));
    let user: Vec<Value> =
        agent.updates(&session).into_iter().filter(|u| kind(u) == "user_message_chunk").collect();
    let links: Vec<(&str, &str, &str)> = user
        .iter()
        .filter(|u| u["content"]["type"] == "resource_link")
        .map(|u| {
            let c = &u["content"];
            (
                c["name"].as_str().unwrap(),
                c["mimeType"].as_str().unwrap(),
                c["uri"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        links,
        [
            ("dot.png", "image/png", format!("data:image/png;base64,{PNG}").as_str()),
            ("audio.wav", "audio/wav", "data:audio/wav;base64,UklGRgAAAABXQVZF"),
            ("spec.pdf", "application/pdf", format!("data:application/pdf;base64,{PDF}").as_str()),
        ],
        "{user:#?}"
    );
    assert!(agent.finish().success());
}

#[test]
fn rich_prompt_content_is_accepted_and_kept_in_the_history() {
    if generation() == Generation::AppServer {
        return rich_prompt_content_on_the_desktop_agent();
    }
    let why = "the Services Server uploads attachments and records them as V4 rows: \
               runtime_services.rs tests the upload, the sendText and the replay";
    if !applies(&[Generation::HostBridge], why) {
        return;
    }
    let env = TestEnv::new();
    let workspace = env.workspace("ws");
    std::fs::write(workspace.join("notes.md"), "# notes\n").unwrap();
    let (mut agent, session) =
        Agent::with_session(&env, policy::refuse_all(), plain_client(), &workspace);
    let notes_uri = format!("file://{}", workspace.join("notes.md").display());
    let prompt = json!([
        {"type": "text", "text": "look at these"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRgAAAABXQVZF", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "file:///virtual/context.txt",
            "text": "embedded context", "mimeType": "text/plain"}},
        {"type": "resource_link", "uri": notes_uri, "name": "notes.md"},
    ]);
    let result = agent.call("session/prompt", json!({"sessionId": session, "prompt": prompt}));
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    let text = chunk_text(&agent.updates(&session), "agent_message_chunk");
    assert!(text.contains("look at these"), "{text:?}");

    // Content that cannot be represented is refused, not dropped.
    for (prompt, why) in [
        (json!([]), "an empty prompt"),
        (
            json!([{"type": "resource_link", "uri": "file:relative.txt", "name": "r"}]),
            "a relative file",
        ),
        (json!([{"type": "image", "data": "%%%", "mimeType": "image/png"}]), "bad base64"),
    ] {
        let response =
            agent.request("session/prompt", json!({"sessionId": session, "prompt": prompt}));
        let (code, message) = agent.error_of(&response, why);
        assert_eq!(code, INVALID_PARAMS, "{why}: {message}");
    }
    assert!(agent.finish().success());

    // The attachments are part of the persisted user message.
    let mut agent = Agent::start(&env);
    agent.initialize(plain_client());
    agent.call("session/load", json!({"sessionId": session, "cwd": workspace, "mcpServers": []}));
    let user: Vec<Value> =
        agent.updates(&session).into_iter().filter(|u| kind(u) == "user_message_chunk").collect();
    assert!(user.iter().any(|u| u["content"]["text"] == "look at these"), "{user:#?}");
    let links: Vec<&Value> =
        user.iter().filter(|u| u["content"]["type"] == "resource_link").collect();
    assert!(links.iter().any(|u| u["content"]["name"] == "notes.md"), "{links:#?}");
    assert_eq!(links.len(), 4, "image, audio, resource and link: {user:#?}");
    assert!(agent.finish().success());
}
