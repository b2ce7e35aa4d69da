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
    let (pending, form) = user_input(&json!("server-2"), &params).unwrap();
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
