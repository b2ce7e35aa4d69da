//! Structured input (`userInput.request` with questions): the questions become one ACP form
//! (the SDK's [`elicit`]), and the accepted content goes back with the answers keyed by
//! question text. A form the client cannot fill, or content that does not match it, declines.
//! A `plan_approval` request is plan approval ([`super::plan`]).

use serde_json::Value;
use zcode_mapper_sdk::acp::elicit::{self, Answer, Choice, Question};
use zcode_mapper_sdk::acp::{self};
use zcode_mapper_sdk::contract::{Action, InteractionOutcome, MapperError};
use zcode_mapper_sdk::json::Fields;

use super::{Pending, Target, plan, refuse, unsupported};
use crate::ops::{self, ElicitationReply, Outbound};
use crate::state::State;

const QUESTION_MESSAGE_FALLBACK: &str = "ZCode needs additional input";
const NO_CLIENT_FOR_INPUT: &str = "No active client can handle structured input";

/// Questions the host waits on.
#[derive(Clone, Debug)]
pub(super) struct Asked {
    request_id: String,
    questions: Vec<Question>,
}

/// A checked `userInput.request`, for the kind that handles it.
pub(super) struct InputRequest<'a> {
    pub key: String,
    pub request_id: &'a str,
    pub tool_call_id: Option<&'a str>,
    pub prompt: Option<&'a str>,
    pub questions: Vec<Question>,
    pub input: Option<&'a Value>,
}

/// `{question, header, options: [{value, label, description?}], multiSelect?}` each; a question
/// without options is answered with free text, even if multi-select.
fn questions(fields: &Fields<'_>) -> Result<Vec<Question>, MapperError> {
    let Some(items) = fields.opt_array("questions")? else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .map(|item| {
            let q = Fields::native(item, "userInput question")?;
            q.only(&["question", "header", "options", "multiSelect"])?;
            let text = q.non_empty_str("question")?;
            let header = q.non_empty_str("header")?;
            let choices = q
                .array("options")?
                .iter()
                .map(|option| {
                    let o = Fields::native(option, "userInput option")?;
                    o.only(&["value", "label", "description", "preview"])?;
                    Ok(Choice::new(o.str("value")?, o.str("label")?, o.opt_str("description")?))
                })
                .collect::<Result<Vec<_>, MapperError>>()?;
            let multi = q.opt_bool("multiSelect")?.unwrap_or(false);
            Ok(Question::new(header, text, choices, multi))
        })
        .collect()
}

/// `userInput.request`: structured questions, or plan approval (source A).
pub fn user_input_request(state: &mut State, request: &Value) -> Result<Vec<Action>, MapperError> {
    let fields = Fields::native(request, "userInput.request")?;
    fields.only(&[
        "requestId",
        "sessionId",
        "turnId",
        "toolCallId",
        "toolName",
        "prompt",
        "questions",
        "input",
        "origin",
        "schema",
    ])?;
    let request_id = fields.non_empty_str("requestId")?;
    fields.str("sessionId")?;
    fields.opt_str("turnId")?;
    fields.opt_str("toolName")?;
    let tool_call_id = fields.opt_str("toolCallId")?;
    let prompt = fields.opt_str("prompt")?.filter(|p| !p.is_empty());
    let questions = questions(&fields)?;
    let key = format!("input:{request_id}");
    if state.interactions.seen.contains(&key) {
        return Ok(vec![Action::Ignore(format!("re-delivered interaction {key}"))]);
    }
    let is_plan = fields.get("schema").and_then(|s| s.get("interaction")).and_then(Value::as_str)
        == Some("plan_approval");
    let decline = |reason: &str| Pending::Decline {
        request_id: request_id.to_string(),
        reason: reason.to_string(),
    };

    if is_plan {
        let request = InputRequest {
            key,
            request_id,
            tool_call_id,
            prompt,
            questions,
            input: fields.get("input"),
        };
        return Ok(plan::question(state, request));
    }

    if questions.is_empty() {
        let problem =
            unsupported("ZCode requested structured input without an active client interaction");
        return Ok(refuse(
            state,
            &key,
            decline(NO_CLIENT_FOR_INPUT),
            NO_CLIENT_FOR_INPUT,
            Some(problem),
        ));
    }
    if !state.running() {
        return Ok(refuse(state, &key, decline(NO_CLIENT_FOR_INPUT), NO_CLIENT_FOR_INPUT, None));
    }
    let message = prompt.unwrap_or(QUESTION_MESSAGE_FALLBACK);
    let request = elicit::ask(state.forms(), &key, message, tool_call_id, &questions);
    state.interactions.register(
        &key,
        Pending::Questions(Asked { request_id: request_id.to_string(), questions }),
    );
    Ok(vec![acp::interaction(&key, request)])
}

pub(super) fn reply(to: Target<'_>, request_id: &str, reply: ElicitationReply) -> Outbound {
    ops::respond_elicitation(to.workspace, to.session_id, request_id, reply)
}

pub(super) fn decline_reply(to: Target<'_>, request_id: &str, reason: Option<String>) -> Outbound {
    reply(to, request_id, ElicitationReply::Decline(reason))
}

/// The fail-closed answer of a request that could not be asked.
pub(super) fn decline(to: Target<'_>, request_id: &str, reason: String) -> Outbound {
    decline_reply(to, request_id, Some(reason))
}

pub(super) fn answer(to: Target<'_>, asked: Asked, outcome: &InteractionOutcome) -> Outbound {
    let native = match elicit::answer(outcome) {
        Ok(Answer::Accept(content)) => match elicit::answers(&asked.questions, content) {
            Ok(content) => ElicitationReply::Accept(content),
            Err(reason) => ElicitationReply::Decline(Some(reason)),
        },
        Ok(Answer::Decline) => ElicitationReply::Decline(None),
        Ok(Answer::Cancel) => ElicitationReply::Cancel,
        Err(reason) => ElicitationReply::Decline(Some(reason)),
    };
    reply(to, &asked.request_id, native)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use zcode_mapper_sdk::contract::{InteractionOutcome, InteractionRequest};

    use crate::test_support::*;

    #[test]
    fn asks_structured_questions_as_a_form() {
        let mut driver = running(true, true);
        let actions = driver.event(question_event("q1", two_questions()));
        let (key, request) = interaction(&actions);
        assert_eq!(key, "input:q1");
        let InteractionRequest::Elicitation(form) = request else { panic!("elicitation expected") };
        let form: Value = serde_json::from_str(form).unwrap();
        assert_eq!(
            form,
            json!({
                "mode": "form", "toolCallId": "ask-1", "message": "Pick options",
                "requestedSchema": {"type": "object", "required": ["answer_0", "answer_1"], "properties": {
                    "answer_0": {"type": "string", "title": "Mode", "description": "Which mode?", "oneOf": [{"const": "fast", "title": "Fast", "description": "Quick"}, {"const": "safe", "title": "Safe"}]},
                    "answer_1": {"type": "array", "title": "Files", "description": "Which files?", "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]}, "minItems": 1},
                }}
            })
        );
        let accept =
            json!({"action": "accept", "content": {"answer_0": "fast", "answer_1": ["a", "b"]}});
        let run = driver.answer(
            "input:q1",
            InteractionOutcome::Elicited(accept.to_string()),
            ok(Value::Null),
        );
        assert_eq!(run.methods(), ["task.respondElicitation"]);
        assert_eq!(
            run.params(0),
            &json!({"workspacePath": "/w", "requestId": "q1", "taskId": "session-1", "action": "accept", "content": {
                "answer_0": "fast", "answer_1": ["a", "b"], "answers": {"Which mode?": ["fast"], "Which files?": ["a", "b"]},
            }})
        );
    }

    #[test]
    fn answers_single_questions_with_answer_and_passes_declines() {
        let single = json!([{"question": "Which mode?", "header": "Mode", "options": [{"value": "fast", "label": "Fast"}]}]);
        let mut driver = running(true, true);
        driver.event(question_event("q", single.clone()));
        let accept = json!({"action": "accept", "content": {"answer_0": "fast"}});
        let run = driver.answer(
            "input:q",
            InteractionOutcome::Elicited(accept.to_string()),
            ok(Value::Null),
        );
        assert_eq!(
            run.params(0)["content"],
            json!({"answer_0": "fast", "answer": "fast", "answers": {"Which mode?": ["fast"]}})
        );

        for (outcome, expected) in [
            (json!({"action": "decline"}), json!({"action": "decline"})),
            (json!({"action": "cancel"}), json!({"action": "cancel"})),
            (
                json!({"action": "accept", "content": {"answer_0": "slow"}}),
                json!({"action": "decline", "reason": "Structured input answer does not match the requested form"}),
            ),
            (
                json!({"action": "maybe"}),
                json!({"action": "decline", "reason": "Unsupported ACP elicitation action: maybe"}),
            ),
        ] {
            let mut driver = running(true, true);
            driver.event(question_event("q", single.clone()));
            let run = driver.answer(
                "input:q",
                InteractionOutcome::Elicited(outcome.to_string()),
                ok(Value::Null),
            );
            let params = run.params(0);
            assert_eq!(params["action"], expected["action"]);
            assert_eq!(params.get("reason"), expected.get("reason"));
            assert!(params.get("content").is_none());
        }
        let mut driver = running(true, false);
        driver.event(question_event("q", single));
        let run = driver.answer(
            "input:q",
            InteractionOutcome::Unavailable("The client cannot render forms".into()),
            ok(Value::Null),
        );
        assert_eq!(
            run.params(0),
            &json!({"workspacePath": "/w", "requestId": "q", "taskId": "session-1", "action": "decline", "reason": "The client cannot render forms"})
        );
    }

    #[test]
    fn declines_questionless_input_and_breaks_the_turn() {
        let mut driver = running(true, true);
        let actions = driver.event(json!({"type": "userInput.request", "request": {"requestId": "q", "sessionId": "session-1"}}));
        assert!(matches!(interaction(&actions), ("input:q", InteractionRequest::Headless(_))));
        assert_eq!(
            broken_message(&actions),
            "ZCode requested structured input without an active client interaction"
        );
        let run =
            driver.answer("input:q", InteractionOutcome::Unavailable("x".into()), ok(Value::Null));
        assert_eq!(run.params(0)["reason"], "No active client can handle structured input");
    }

    /// Without form elicitation one single-choice question is a permission; anything else is
    /// declined with a reason the model reads (issue 26).
    #[test]
    fn asks_a_single_choice_as_a_permission_and_declines_other_forms_without_forms() {
        let single = json!([{"question": "Which mode?", "header": "Mode", "options": [
            {"value": "fast", "label": "Fast"}, {"value": "safe", "label": "Safe"}]}]);
        let mut driver = running(true, false);
        let actions = driver.event(question_event("q", single.clone()));
        let (key, request) = interaction(&actions);
        let InteractionRequest::Permission(asked) = request else { panic!("{request:?}") };
        let asked: Value = serde_json::from_str(&asked.request).unwrap();
        assert_eq!(asked["toolCall"], json!({"toolCallId": "ask-1", "title": "Which mode?"}));
        assert_eq!(asked["options"].as_array().unwrap().len(), 3);
        let run = driver.answer(key, InteractionOutcome::Selected("safe".into()), ok(Value::Null));
        assert_eq!(run.params(0)["action"], "accept");
        assert_eq!(run.params(0)["content"]["answers"], json!({"Which mode?": ["safe"]}));

        let mut driver = running(true, false);
        driver.event(question_event("q", single));
        let declined = InteractionOutcome::Selected("zcode-acp:decline".into());
        let run = driver.answer("input:q", declined, ok(Value::Null));
        assert_eq!(run.params(0)["action"], "decline");

        let two = json!([
            {"question": "Which mode?", "header": "Mode", "options": [{"value": "fast", "label": "Fast"}]},
            {"question": "Name?", "header": "Name", "options": []}]);
        let mut driver = running(true, false);
        let actions = driver.event(question_event("q2", two));
        let (key, request) = interaction(&actions);
        let InteractionRequest::Headless(why) = request else { panic!("{request:?}") };
        assert!(why.contains("cannot show this question"), "{why}");
        let why = why.clone();
        let run = driver.answer(key, InteractionOutcome::Unavailable(why.clone()), ok(Value::Null));
        assert_eq!(run.params(0)["action"], "decline");
        assert_eq!(run.params(0)["reason"], why.as_str());
    }
}
