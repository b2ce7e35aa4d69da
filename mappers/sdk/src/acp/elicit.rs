//! Questions as an ACP elicitation form, and the client's answer decoded.
//!
//! A host that asks the user questions (each with a header, a text, and either choices or
//! free text) gets one form: question `i` is the form's required field `answer_<i>`, a string
//! (one of the choices, if any) or, for a multi-select question, an array of at least one
//! choice. The accepted content comes back keyed by question text as well ([`answers`]),
//! checked against the choices that were offered: content that does not match the form is
//! refused, never passed on. A mapper only says how its host asks and how it wants the answer.

use serde_json::{Map, Value, json};
use zcode_contract::{InteractionOutcome, InteractionRequest};

use super::permission::{self, DECLINE_OPTION, OptionKind, PermissionOption};

/// What a form answer that does not match the form is called in the native refusal.
pub const BAD_ANSWER: &str = "Structured input answer does not match the requested form";

/// Why a question is not asked of a client that cannot render forms. The host gets it with its
/// decline, so the model reads why there is no answer and the turn goes on.
pub const NO_FORMS: &str = "The user's ACP client cannot show this question (it does not \
support form elicitation), so it was not asked. Continue without the answer, or ask the user \
in plain text.";

/// The name of the option that declines a question asked as a permission.
pub const DECLINE_NAME: &str = "Decline to answer";

/// One choice of a question: the value sent back, and what the user sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub value: String,
    pub title: String,
    pub description: Option<String>,
}

impl Choice {
    pub fn new(value: &str, title: &str, description: Option<&str>) -> Self {
        Self {
            value: value.to_string(),
            title: title.to_string(),
            description: description.map(str::to_string),
        }
    }

    /// The JSON Schema `{const, title, description?}` of the choice.
    pub fn schema(&self) -> Value {
        let mut choice = json!({"const": self.value, "title": self.title});
        if let Some(description) = &self.description {
            choice["description"] = json!(description);
        }
        choice
    }
}

/// A question of a form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    /// Shown as the field's title.
    pub header: String,
    /// The question itself: the field's description, and the key of its answer natively.
    pub text: String,
    /// Empty: answered with free text.
    pub choices: Vec<Choice>,
    /// Several choices may be picked (only with choices).
    pub multi: bool,
}

impl Question {
    /// A question; `multi` holds only when there are choices to pick several of.
    pub fn new(header: &str, text: &str, choices: Vec<Choice>, multi: bool) -> Self {
        let multi = multi && !choices.is_empty();
        Self { header: header.to_string(), text: text.to_string(), choices, multi }
    }

    /// The field's JSON Schema.
    pub fn schema(&self) -> Value {
        let kind = if self.multi { "array" } else { "string" };
        let mut schema = json!({"type": kind, "title": self.header, "description": self.text});
        let choices: Vec<Value> = self.choices.iter().map(Choice::schema).collect();
        if self.multi {
            schema["items"] = json!({"anyOf": choices});
            schema["minItems"] = json!(1);
        } else if !choices.is_empty() {
            schema["oneOf"] = Value::Array(choices);
        }
        schema
    }

    /// Whether `value` is an answer the question allows.
    fn allows(&self, value: &str) -> bool {
        self.choices.is_empty() || self.choices.iter().any(|choice| choice.value == value)
    }
}

/// A form (`elicitation/create` params in form mode, without `sessionId`) with the given
/// fields, all required, attached to a tool call if there is one.
pub fn form(message: &str, tool_call_id: Option<&str>, fields: Vec<(String, Value)>) -> String {
    let required: Vec<Value> = fields.iter().map(|(name, _)| json!(name)).collect();
    let properties: Map<String, Value> = fields.into_iter().collect();
    let mut form = json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": properties, "required": required},
    });
    if let Some(id) = tool_call_id {
        form["toolCallId"] = json!(id);
    }
    form.to_string()
}

/// The form for `questions`: field `answer_<i>` per question.
pub fn questions_form(message: &str, tool_call_id: Option<&str>, questions: &[Question]) -> String {
    let fields = questions
        .iter()
        .enumerate()
        .map(|(index, question)| (format!("answer_{index}"), question.schema()))
        .collect();
    form(message, tool_call_id, fields)
}

/// One single-choice question asked as a permission, for a client without forms: one option
/// per choice (`allow_once`), and [`DECLINE_OPTION`] (`reject_once`) as the native decline.
/// Its answer reads like the form's ([`answer`]: the choice is `answer_0`). `None` when the
/// choices cannot be options (none, or one is the decline's id or given twice).
pub fn choice_permission(
    key: &str,
    tool_call_id: Option<&str>,
    title: &str,
    choices: &[Choice],
) -> Option<InteractionRequest> {
    let mut options: Vec<PermissionOption<'_>> = choices
        .iter()
        .map(|choice| PermissionOption {
            id: &choice.value,
            name: &choice.title,
            kind: OptionKind::AllowOnce,
        })
        .collect();
    if options.is_empty() || options.iter().any(|option| option.id == DECLINE_OPTION) {
        return None;
    }
    options.push(PermissionOption {
        id: DECLINE_OPTION,
        name: DECLINE_NAME,
        kind: OptionKind::RejectOnce,
    });
    permission::choice_request(key, tool_call_id, title, None, &options, DECLINE_OPTION)
}

/// `questions` as the client can be asked them: one [`questions_form`] when it renders forms
/// (`forms`); without, a single single-choice question becomes a permission
/// ([`choice_permission`]) and anything else is not asked: the core answers it unavailable
/// with [`NO_FORMS`] at once, which the mapper passes on as its host's decline.
pub fn ask(
    forms: bool,
    key: &str,
    message: &str,
    tool_call_id: Option<&str>,
    questions: &[Question],
) -> InteractionRequest {
    if forms {
        return InteractionRequest::Elicitation(questions_form(message, tool_call_id, questions));
    }
    let asked = match questions {
        [question] if !question.multi => {
            // The permission has no description: the question's text titles it.
            let title = if question.text.is_empty() { message } else { &question.text };
            choice_permission(key, tool_call_id, title, &question.choices)
        }
        _ => None,
    };
    asked.unwrap_or_else(|| InteractionRequest::Headless(NO_FORMS.to_string()))
}

/// What the client did with a form.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// Submitted, with this content (empty when it sent none).
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

/// The client's answer to a form, or why there is none to pass on (it could not be asked,
/// answered something else, or sent what ACP does not allow).
pub fn answer(outcome: &InteractionOutcome) -> Result<Answer, String> {
    let json = match outcome {
        InteractionOutcome::Elicited(json) => json,
        InteractionOutcome::Unavailable(reason) => return Err(reason.clone()),
        // A question asked as a permission ([`choice_permission`]): the choice or the decline.
        InteractionOutcome::Selected(id) if id == DECLINE_OPTION => return Ok(Answer::Decline),
        InteractionOutcome::Selected(id) => {
            return Ok(Answer::Accept(Map::from_iter([("answer_0".to_string(), json!(id))])));
        }
    };
    let malformed = || "Malformed elicitation response".to_string();
    let value: Value = serde_json::from_str(json).map_err(|_| malformed())?;
    match value.get("action").and_then(Value::as_str) {
        Some("accept") => match value.get("content") {
            Some(Value::Object(content)) => Ok(Answer::Accept(content.clone())),
            None | Some(Value::Null) => Ok(Answer::Accept(Map::new())),
            Some(_) => Err(malformed()),
        },
        Some("decline") => Ok(Answer::Decline),
        Some("cancel") => Ok(Answer::Cancel),
        Some(other) => Err(format!("Unsupported ACP elicitation action: {other}")),
        None => Err(malformed()),
    }
}

/// The accepted content of a [`questions_form`] as a host reads it: the client's content, plus
/// `answers` (each question's text → the list of its chosen values), plus `answer` (the single
/// question's answer) when there is one question. Content that does not match the form is
/// [`BAD_ANSWER`].
pub fn answers(questions: &[Question], content: Map<String, Value>) -> Result<Value, String> {
    let bad = || BAD_ANSWER.to_string();
    let mut answers = Map::new();
    for (index, question) in questions.iter().enumerate() {
        let values: Vec<String> = match content.get(&format!("answer_{index}")) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(value)) if !question.multi => vec![value.clone()],
            Some(Value::Array(items)) if question.multi => items
                .iter()
                .map(|item| item.as_str().map(str::to_string).ok_or_else(bad))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(bad()),
        };
        if !values.iter().all(|value| question.allows(value)) {
            return Err(bad());
        }
        answers.insert(question.text.clone(), json!(values));
    }
    let single = (questions.len() == 1).then(|| content.get("answer_0").cloned()).flatten();
    let mut native = content;
    native.insert("answers".to_string(), Value::Object(answers));
    if let Some(answer) = single {
        native.insert("answer".to_string(), answer);
    }
    Ok(Value::Object(native))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp_check;

    fn questions() -> Vec<Question> {
        vec![
            Question::new(
                "Scope",
                "Which files?",
                vec![Choice::new("a", "A", Some("first")), Choice::new("b", "B", None)],
                true,
            ),
            Question::new("Name", "What name?", Vec::new(), true),
        ]
    }

    #[test]
    fn builds_one_form_for_all_questions() {
        let form: Value =
            serde_json::from_str(&questions_form("Answer these", Some("t1"), &questions()))
                .unwrap();
        acp_check::elicitation(&form);
        assert_eq!(
            form,
            json!({"mode": "form", "message": "Answer these", "toolCallId": "t1", "requestedSchema": {
            "type": "object", "required": ["answer_0", "answer_1"], "properties": {
                "answer_0": {"type": "array", "title": "Scope", "description": "Which files?", "minItems": 1,
                             "items": {"anyOf": [{"const": "a", "title": "A", "description": "first"}, {"const": "b", "title": "B"}]}},
                "answer_1": {"type": "string", "title": "Name", "description": "What name?"},
            }}})
        );
        let single = Question::new("H", "Pick", vec![Choice::new("x", "X", None)], false);
        assert_eq!(single.schema()["oneOf"], json!([{"const": "x", "title": "X"}]));
    }

    #[test]
    fn decodes_the_answer() {
        let elicited = |json: Value| answer(&InteractionOutcome::Elicited(json.to_string()));
        let content = json!({"answer_0": ["a"]});
        assert_eq!(
            elicited(json!({"action": "accept", "content": content})).unwrap(),
            Answer::Accept(content.as_object().unwrap().clone())
        );
        assert_eq!(elicited(json!({"action": "accept"})).unwrap(), Answer::Accept(Map::new()));
        assert_eq!(elicited(json!({"action": "decline"})).unwrap(), Answer::Decline);
        assert_eq!(elicited(json!({"action": "cancel"})).unwrap(), Answer::Cancel);
        assert_eq!(
            elicited(json!({"action": "later"})).unwrap_err(),
            "Unsupported ACP elicitation action: later"
        );
        assert_eq!(
            elicited(json!({"action": "accept", "content": 1})).unwrap_err(),
            "Malformed elicitation response"
        );
        assert_eq!(answer(&InteractionOutcome::Unavailable("gone".into())).unwrap_err(), "gone");
    }

    #[test]
    fn asks_a_single_choice_as_a_permission_without_forms() {
        let single = Question::new(
            "Approach",
            "Which approach?",
            vec![Choice::new("fast", "Fast", None), Choice::new("thorough", "Thorough", None)],
            false,
        );
        let asked = ask(false, "input:q1", "Answer", Some("t1"), std::slice::from_ref(&single));
        let InteractionRequest::Permission(asked) = asked else { panic!("{asked:?}") };
        assert_eq!(asked.deny_option, DECLINE_OPTION);
        let value: Value = serde_json::from_str(&asked.request).unwrap();
        acp_check::permission(&value);
        assert_eq!(
            value,
            json!({"toolCall": {"toolCallId": "t1", "title": "Which approach?"}, "options": [
                {"optionId": "fast", "name": "Fast", "kind": "allow_once"},
                {"optionId": "thorough", "name": "Thorough", "kind": "allow_once"},
                {"optionId": DECLINE_OPTION, "name": DECLINE_NAME, "kind": "reject_once"}]})
        );
        // The choice reads like the form's answer, checked against the choices.
        let selected = |id: &str| answer(&InteractionOutcome::Selected(id.into())).unwrap();
        let Answer::Accept(content) = selected("thorough") else { panic!() };
        let native = answers(std::slice::from_ref(&single), content).unwrap();
        assert_eq!(native["answers"], json!({"Which approach?": ["thorough"]}));
        assert_eq!(native["answer"], "thorough");
        let Answer::Accept(content) = selected("sideways") else { panic!() };
        assert_eq!(answers(&[single], content).unwrap_err(), BAD_ANSWER);
        assert_eq!(selected(DECLINE_OPTION), Answer::Decline);
        // With forms it stays a form.
        let form = ask(true, "k", "Answer", None, &questions());
        assert!(matches!(form, InteractionRequest::Elicitation(_)), "{form:?}");
    }

    #[test]
    fn declines_other_questions_without_forms() {
        // Several questions, a multi-select one, free text: not asked, the host declines.
        let free = Question::new("Name", "What name?", Vec::new(), false);
        for questions in [questions(), questions()[..1].to_vec(), vec![free]] {
            assert_eq!(
                ask(false, "k", "Answer", None, &questions),
                InteractionRequest::Headless(NO_FORMS.to_string())
            );
        }
        // A choice that is the decline's id cannot be told from it: not asked either.
        let clash = vec![Choice::new(DECLINE_OPTION, "Odd", None)];
        assert!(choice_permission("k", None, "?", &clash).is_none());
    }

    #[test]
    fn keys_answers_by_question_and_refuses_what_was_not_offered() {
        let content = |value: Value| value.as_object().unwrap().clone();
        let native =
            answers(&questions(), content(json!({"answer_0": ["a", "b"], "answer_1": "Bo"})));
        assert_eq!(
            native.unwrap(),
            json!({"answer_0": ["a", "b"], "answer_1": "Bo", "answers": {"Which files?": ["a", "b"], "What name?": ["Bo"]}})
        );
        let one = [Question::new("H", "Pick", vec![Choice::new("x", "X", None)], false)];
        assert_eq!(
            answers(&one, content(json!({"answer_0": "x"}))).unwrap(),
            json!({"answer_0": "x", "answers": {"Pick": ["x"]}, "answer": "x"})
        );
        assert_eq!(answers(&one, content(json!({"answer_0": "y"}))).unwrap_err(), BAD_ANSWER);
        assert_eq!(answers(&one, content(json!({"answer_0": ["x"]}))).unwrap_err(), BAD_ANSWER);
        assert_eq!(
            answers(&questions(), content(json!({"answer_0": [1]}))).unwrap_err(),
            BAD_ANSWER
        );
    }
}
