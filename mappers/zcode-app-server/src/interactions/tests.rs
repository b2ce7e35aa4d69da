use serde_json::{Value, json};
use zcode_contract::InteractionOutcome;

use super::*;

fn colliding() -> (Pending, Value, String) {
    let params = json!({"requestId": "p-1", "sessionId": "s", "toolCallId": "t", "toolName": "Write",
        "input": {"file_path": "a.txt"}, "options": [
            {"optionId": "same", "kind": "allow_once", "name": "Allow", "response": {"decision": "allow"}},
            {"optionId": "same", "kind": "reject_once", "name": "Deny", "response": {"decision": "deny"}}]});
    permission(&json!("server-1"), &params, "/w", None).unwrap()
}

#[test]
fn options_sharing_an_id_get_ids_of_their_own_and_are_never_answered_by_it() {
    let (pending, request, deny) = colliding();
    let ids: Vec<&str> = request["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["same#0", "same#1"]);
    assert_eq!(deny, "same#1");
    // The allow goes back only as its own response: ZCode matches a V4 id to its first option.
    let allow = answer(&pending.kind, &InteractionOutcome::Selected("same#0".into())).unwrap();
    assert_eq!((allow.reply, allow.v4), (json!({"decision": "allow"}), Value::Null));
    // The deny never names the shared id either: an unknown V4 id denies.
    let refused = answer(&pending.kind, &InteractionOutcome::Selected("same#1".into())).unwrap();
    assert_eq!(refused.reply, json!({"decision": "deny"}));
    assert_eq!(refused.v4, json!({"optionId": SYNTHETIC_DENY}));
    let unknown = answer(&pending.kind, &InteractionOutcome::Selected("same".into())).unwrap();
    assert_eq!(unknown.reply, json!({"decision": "deny"}), "an id nobody offered denies");
}

#[test]
fn a_form_answer_outside_the_offered_choices_is_declined() {
    let params = json!({"requestId": "q-1", "questions": [
        {"question": "Pick", "header": "Pick", "options": [{"value": "a", "label": "A"}]},
        {"question": "Why", "header": "Why", "options": [{"value": "__zcode_free_text__", "label": "Other"}]}]});
    let (pending, form) = user_input_form(&json!("server-2"), &params).unwrap();
    assert_eq!(form["requestedSchema"]["required"], json!(["q0", "q1"]));
    let outcome = |content: Value| {
        InteractionOutcome::Elicited(json!({"action": "accept", "content": content}).to_string())
    };
    let ok = answer(&pending.kind, &outcome(json!({"q0": "a", "q1": "because"}))).unwrap();
    assert_eq!(
        ok.reply,
        json!({"action": "accept", "content": {"answers": {"Pick": "a", "Why": "because"}}})
    );
    let sideways = answer(&pending.kind, &outcome(json!({"q0": "sideways", "q1": "x"}))).unwrap();
    assert_eq!(sideways.reply["action"], "decline");
    let empty = answer(&pending.kind, &outcome(json!({}))).unwrap();
    assert_eq!(empty.reply["action"], "decline", "nothing answered is no answer");
}

/// A client without form elicitation (issue 26): plan approval with the plan, and one
/// single-choice question, are permissions; other questions are declined with the reason.
#[test]
fn without_forms_plans_and_single_choices_are_permissions() {
    use zcode_contract::InteractionRequest;
    use zcode_mapper_sdk::acp::elicit::NO_FORMS;
    use zcode_mapper_sdk::acp::permission::DECLINE_OPTION;

    let plan = json!({"requestId": "plan-1", "toolCallId": "exit-1", "schema": {"interaction": "plan_approval"}, "input": {"plan": "# Plan"},
        "questions": [{"question": "Review this implementation plan.", "header": "Plan", "options": [{"value": "approve", "label": "Approve"}]}]});
    let (pending, asked) = user_input(&json!("server-1"), &plan, false).unwrap();
    let InteractionRequest::Permission(asked) = asked else { panic!("{asked:?}") };
    assert_eq!(asked.deny_option, PLAN_REVISE);
    let request: Value = serde_json::from_str(&asked.request).unwrap();
    assert_eq!(request["toolCall"]["toolCallId"], "exit-1");
    assert_eq!(request["toolCall"]["content"][0]["content"]["text"], "# Plan");
    assert_eq!(
        request["options"],
        json!([{"optionId": "approve", "name": "Approve and start implementing", "kind": "allow_once"},
               {"optionId": "revise", "name": "No, keep planning", "kind": "reject_once"}])
    );
    let approved = answer(&pending.kind, &InteractionOutcome::Selected("approve".into())).unwrap();
    assert_eq!(
        approved.reply,
        json!({"action": "accept", "content": {"answers": {PLAN_QUESTION: "approve"}}})
    );
    let kept = answer(&pending.kind, &InteractionOutcome::Selected("revise".into())).unwrap();
    assert_eq!(kept.reply, json!({"action": "decline", "reason": "The plan was not approved"}));

    let single = json!({"requestId": "q-1", "questions": [
        {"question": "Pick", "header": "Pick", "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]}]});
    let (pending, asked) = user_input(&json!("server-2"), &single, false).unwrap();
    let InteractionRequest::Permission(asked) = asked else { panic!("{asked:?}") };
    assert_eq!(asked.deny_option, DECLINE_OPTION);
    let chose = answer(&pending.kind, &InteractionOutcome::Selected("b".into())).unwrap();
    assert_eq!(chose.reply, json!({"action": "accept", "content": {"answers": {"Pick": "b"}}}));
    let declined =
        answer(&pending.kind, &InteractionOutcome::Selected(DECLINE_OPTION.into())).unwrap();
    assert_eq!(declined.reply, json!({"action": "decline"}));
    let sideways = answer(&pending.kind, &InteractionOutcome::Selected("c".into())).unwrap();
    assert_eq!(sideways.reply["action"], "decline");

    let two = json!({"requestId": "q-2", "questions": [
        {"question": "Pick", "header": "Pick", "options": [{"value": "a", "label": "A"}]},
        {"question": "Why", "header": "Why", "options": []}]});
    let (pending, asked) = user_input(&json!("server-3"), &two, false).unwrap();
    assert_eq!(asked, InteractionRequest::Headless(NO_FORMS.to_string()));
    let declined =
        answer(&pending.kind, &InteractionOutcome::Unavailable(NO_FORMS.into())).unwrap();
    assert_eq!(declined.reply, json!({"action": "decline", "reason": NO_FORMS}));
    assert_eq!(declined.v4, json!({"action": "decline"}));
}
