//! Structured input (`userInput.request` with questions): the questions become one ACP form
//! (`answer_<i>` per question), and the accepted content goes back with the answers keyed by
//! question text. A form the client cannot fill, or content that does not match it, declines.
//! A `plan_approval` request is plan approval ([`super::plan`]).

use serde_json::{Map, Value, json};
use zcode_mapper_sdk::contract::{Action, InteractionOutcome, InteractionRequest, MapperError};
use zcode_mapper_sdk::json::{Fields, text};

use super::{Pending, Target, choice, interaction, plan, refuse, unsupported};
use crate::ops::{self, ElicitationReply, Outbound};
use crate::state::State;

const QUESTION_MESSAGE_FALLBACK: &str = "ZCode needs additional input";
const NO_CLIENT_FOR_INPUT: &str = "No active client can handle structured input";
const BAD_ANSWER: &str = "Structured input answer does not match the requested form";

#[derive(Clone, Debug)]
pub(super) struct Question {
    pub text: String,
    pub values: Vec<String>,
    pub multi: bool,
}

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
    pub questions: Vec<(Question, Value)>,
    pub input: Option<&'a Value>,
}

fn questions(fields: &Fields<'_>) -> Result<Vec<(Question, Value)>, MapperError> {
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
            let mut values = Vec::new();
            let mut choices = Vec::new();
            for option in q.array("options")? {
                let o = Fields::native(option, "userInput option")?;
                o.only(&["value", "label", "description", "preview"])?;
                let value = o.str("value")?;
                choices.push(choice(value, o.str("label")?, o.opt_str("description")?));
                values.push(value.to_string());
            }
            // A question without options is answered with free text, even if multi-select.
            let multi = q.opt_bool("multiSelect")?.unwrap_or(false) && !choices.is_empty();
            let mut schema = json!({"type": if multi { "array" } else { "string" }, "title": header, "description": text});
            if multi {
                schema["items"] = json!({"anyOf": choices});
                schema["minItems"] = json!(1);
            } else if !choices.is_empty() {
                schema["oneOf"] = json!(choices);
            }
            Ok((Question { text: text.to_string(), values, multi }, schema))
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
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (index, (_, schema)) in questions.iter().enumerate() {
        properties.insert(format!("answer_{index}"), schema.clone());
        required.push(json!(format!("answer_{index}")));
    }
    let mut form = json!({
        "mode": "form",
        "message": prompt.unwrap_or(QUESTION_MESSAGE_FALLBACK),
        "requestedSchema": {"type": "object", "properties": properties, "required": required},
    });
    if let Some(id) = tool_call_id {
        form["toolCallId"] = json!(id);
    }
    state.interactions.register(
        &key,
        Pending::Questions(Asked {
            request_id: request_id.to_string(),
            questions: questions.into_iter().map(|(question, _)| question).collect(),
        }),
    );
    Ok(vec![interaction(&key, InteractionRequest::Elicitation(text(&form)))])
}

/// An ACP elicitation result as the native side needs it.
pub(super) enum Elicited {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

pub(super) fn elicited(outcome: &InteractionOutcome) -> Result<Elicited, String> {
    let json = match outcome {
        InteractionOutcome::Elicited(json) => json,
        InteractionOutcome::Unavailable(reason) => return Err(reason.clone()),
        InteractionOutcome::Selected(_) => {
            return Err("The client answered a form with a permission option".to_string());
        }
    };
    let value: Value =
        serde_json::from_str(json).map_err(|_| "Malformed elicitation response".to_string())?;
    match value.get("action").and_then(Value::as_str) {
        Some("accept") => match value.get("content") {
            Some(Value::Object(content)) => Ok(Elicited::Accept(content.clone())),
            None | Some(Value::Null) => Ok(Elicited::Accept(Map::new())),
            Some(_) => Err("Malformed elicitation response".to_string()),
        },
        Some("decline") => Ok(Elicited::Decline),
        Some("cancel") => Ok(Elicited::Cancel),
        Some(other) => Err(format!("Unsupported ACP elicitation action: {other}")),
        None => Err("Malformed elicitation response".to_string()),
    }
}

/// The native content for accepted answers: the client's content, plus `answers` keyed by
/// question text, plus `answer` when there is a single question.
fn structured_content(
    questions: &[Question],
    content: Map<String, Value>,
) -> Result<Value, String> {
    let mut answers = Map::new();
    for (index, question) in questions.iter().enumerate() {
        let values: Vec<String> = match content.get(&format!("answer_{index}")) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(value)) if !question.multi => vec![value.clone()],
            Some(Value::Array(items)) if question.multi => items
                .iter()
                .map(|item| item.as_str().map(str::to_string).ok_or_else(|| BAD_ANSWER.to_string()))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(BAD_ANSWER.to_string()),
        };
        if !question.values.is_empty()
            && values.iter().any(|value| !question.values.contains(value))
        {
            return Err(BAD_ANSWER.to_string());
        }
        answers.insert(question.text.clone(), json!(values));
    }
    let single_answer = (questions.len() == 1).then(|| content.get("answer_0").cloned()).flatten();
    let mut native = content;
    native.insert("answers".to_string(), Value::Object(answers));
    if let Some(answer) = single_answer {
        native.insert("answer".to_string(), answer);
    }
    Ok(Value::Object(native))
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
    let native = match elicited(outcome) {
        Ok(Elicited::Accept(content)) => match structured_content(&asked.questions, content) {
            Ok(content) => ElicitationReply::Accept(content),
            Err(reason) => ElicitationReply::Decline(Some(reason)),
        },
        Ok(Elicited::Decline) => ElicitationReply::Decline(None),
        Ok(Elicited::Cancel) => ElicitationReply::Cancel,
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
}
