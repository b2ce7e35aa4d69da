//! Reverse requests of the Agent that wait on the user or on a credential, and how each is
//! answered (`bootstrap/src/zcode-protocol/interaction-broker.ts` of 3.15.1).

use serde_json::{Map, Value, json};
use zcode_contract::{InteractionOutcome, MapperError, NativeWrite, SecretFill};

use crate::contract::CODING_PLAN_KEY_SOURCE;
use zcode_contract::InteractionRequest;
use zcode_mapper_sdk::acp::elicit::{self, Choice, NO_FORMS};
use zcode_mapper_sdk::acp::permission::DECLINE_OPTION;
use zcode_mapper_sdk::acp::plan;
use zcode_mapper_sdk::json::{protocol, text};

use crate::tools;
use crate::wire;
use crate::wire::acp_params;

/// ZCode's plan-approval question and its approving answer.
pub const PLAN_QUESTION: &str = "Review this implementation plan.";
pub const PLAN_APPROVE: &str = "approve";
/// Keeps ZCode planning: declines the approval (or carries the user's feedback, in a form).
pub const PLAN_REVISE: &str = "revise";
/// Offered when ZCode's options hold no denying one, so the core always has a way to refuse.
pub const SYNTHETIC_DENY: &str = "zcode-acp:deny";
/// The sentinel ZCode uses for an MCP elicitation field answered with free text.
const FREE_TEXT: &str = "__zcode_free_text__";

/// What a pending interaction is, and what its answer must look like.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// ZCode's options: the ACP option id, ZCode's own id when it names exactly this option
    /// (`None` when another option shares it), and the response object ZCode wants back.
    Permission {
        options: Vec<(String, Option<String>, Value)>,
    },
    /// AskUserQuestion and MCP elicitation: the questions, in form-field order.
    Questions {
        questions: Vec<Question>,
    },
    Plan,
}

/// One question of a form: its text (the key ZCode reads the answer under) and the values it
/// offers (`None`: free text).
#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    pub text: String,
    pub choices: Option<Vec<String>>,
}

/// One interaction ZCode waits on, keyed by its business `requestId` (stable across the
/// re-announces that come with new reverse-request ids).
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    pub request_id: String,
    /// The id of the newest announcement: answering any of them resolves ZCode's one request.
    pub reverse_id: Value,
    pub kind: Kind,
    pub answered: bool,
}

/// ACP kind of a ZCode permission option, by its kind, else by what it decides.
fn acp_kind(kind: &str, response: &Value) -> &'static str {
    match kind {
        "allow_once" | "allow" => "allow_once",
        "allow_always" | "allow_project" => "allow_always",
        "reject_always" => "reject_always",
        "reject_once" | "deny" | "reject" => "reject_once",
        _ if response.get("decision").and_then(Value::as_str) == Some("allow") => "allow_once",
        _ => "reject_once",
    }
}

/// A non-empty string member, or a protocol error naming it.
fn required_str<'a>(value: &'a Value, key: &str, what: &str) -> Result<&'a str, MapperError> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| protocol(format!("{what}: `{key}` is missing")))
}

/// `interaction/requestPermission` → ACP `session/request_permission` with ZCode's options one
/// to one, and the native option that denies.
pub fn permission(
    id: &Value,
    params: &Value,
    workspace: &str,
    tool_input: Option<&Value>,
) -> Result<(Pending, Value, String), MapperError> {
    let what = "interaction/requestPermission";
    let request_id = required_str(params, "requestId", what)?;
    let tool_call_id = required_str(params, "toolCallId", what)?;
    let tool_name = required_str(params, "toolName", what)?;
    let input = params.get("input").filter(|i| !i.is_null()).or(tool_input);
    let native = params
        .get("options")
        .and_then(Value::as_array)
        .filter(|o| !o.is_empty())
        .ok_or_else(|| protocol(format!("{what}: no options")))?;
    let mut options = Vec::new();
    let mut acp_options = Vec::new();
    let mut deny = None;
    let ids: Vec<&str> =
        native.iter().filter_map(|o| o.get("optionId").and_then(Value::as_str)).collect();
    for (index, option) in native.iter().enumerate() {
        let option_id = required_str(option, "optionId", what)?;
        let response = option
            .get("response")
            .cloned()
            .ok_or_else(|| protocol(format!("{what}: option {option_id} has no response")))?;
        let kind = acp_kind(option.get("kind").and_then(Value::as_str).unwrap_or(""), &response);
        // Two options under one id would make the client's choice (and a V4 answer by id,
        // which ZCode matches to the first) ambiguous: each gets an id of its own, and the
        // answer then goes back as the chosen option's own response.
        let shared = ids.iter().filter(|id| **id == option_id).count() > 1;
        let acp_id = if shared { format!("{option_id}#{index}") } else { option_id.to_string() };
        if deny.is_none() && response.get("decision").and_then(Value::as_str) == Some("deny") {
            deny = Some(acp_id.clone());
        }
        let name = option.get("name").and_then(Value::as_str).unwrap_or(option_id);
        acp_options.push(json!({"optionId": acp_id, "name": name, "kind": kind}));
        options.push((acp_id, (!shared).then(|| option_id.to_string()), response));
    }
    let deny = match deny {
        Some(deny) => deny,
        None => {
            acp_options
                .push(json!({"optionId": SYNTHETIC_DENY, "name": "Deny", "kind": "reject_once"}));
            options.push((SYNTHETIC_DENY.to_string(), None, json!({"decision": "deny"})));
            SYNTHETIC_DENY.to_string()
        }
    };
    // The title is the call's own, never ZCode's `reason`: a real reason is a risk-policy
    // sentence ("High risk tools require explicit approval", the Desktop 3.12.3 live record's
    // tool turn, issue 25 [B]), and the permission's tool call is an update of the call the
    // client already shows, so a reason as title renamed `Bash: printf ...` for good.
    let mut tool_call = json!({
        "toolCallId": tool_call_id,
        "title": tools::default_title(tool_name, input, workspace),
        "kind": tools::tool_kind(tool_name),
    });
    if let Some(input) = input {
        tool_call["rawInput"] = input.clone();
    }
    let locations = tools::locations(input, workspace);
    if !locations.is_empty() {
        tool_call["locations"] = json!(locations);
    }
    if let Some(diff) = tools::input_diff(tool_name, input, workspace) {
        tool_call["content"] = json!([diff]);
    }
    let pending = Pending {
        request_id: request_id.to_string(),
        reverse_id: id.clone(),
        kind: Kind::Permission { options },
        answered: false,
    };
    Ok((pending, json!({"toolCall": tool_call, "options": acp_options}), deny))
}

fn choice(value: &str, title: &str) -> Value {
    json!({"const": value, "title": title})
}

/// `interaction/requestUserInput` as the client can be asked it: the form ([`user_input_form`])
/// when it renders forms (`forms`). Without, plan approval and one single-choice question are
/// permissions (the SDK's `plan::ask_approval`, `elicit::choice_permission`); anything else is
/// not asked and gets a decline whose reason the model reads ([`NO_FORMS`]).
pub fn user_input(
    id: &Value,
    params: &Value,
    forms: bool,
) -> Result<(Pending, InteractionRequest), MapperError> {
    let (pending, form) = user_input_form(id, params)?;
    if forms {
        return Ok((pending, InteractionRequest::Elicitation(text(&form))));
    }
    let key = format!("input:{}", pending.request_id);
    let tool_call_id = params.get("toolCallId").and_then(Value::as_str);
    let request = match &pending.kind {
        Kind::Plan => {
            let choices = [
                Choice::new(PLAN_APPROVE, "Approve and start implementing", None),
                Choice::new(PLAN_REVISE, plan::KEEP_PLANNING, None),
            ];
            // The Agent's plan is a document no update shows: the permission carries it.
            let plan = params.pointer("/input/plan").and_then(Value::as_str);
            let plan = plan.filter(|p| !p.is_empty());
            let (rejecting, deny) = ([PLAN_REVISE], Some(PLAN_REVISE));
            plan::ask_approval(
                false,
                &key,
                tool_call_id,
                PLAN_QUESTION,
                plan,
                &choices,
                &rejecting,
                deny,
            )
        }
        Kind::Questions { questions } => {
            let field = form.pointer("/requestedSchema/properties/q0");
            let offered = field.and_then(|f| f.get("oneOf")).and_then(Value::as_array);
            let choices: Vec<Choice> = offered
                .into_iter()
                .flatten()
                .filter_map(|c| {
                    let value = c.get("const").and_then(Value::as_str)?;
                    Some(Choice::new(value, c.get("title").and_then(Value::as_str)?, None))
                })
                .collect();
            let single = matches!(questions.as_slice(), [Question { choices: Some(_), .. }]);
            let asked = match &questions[..] {
                [question] if single && !choices.is_empty() => {
                    elicit::choice_permission(&key, tool_call_id, &question.text, &choices)
                }
                _ => None,
            };
            asked.unwrap_or_else(|| InteractionRequest::Headless(NO_FORMS.to_string()))
        }
        Kind::Permission { .. } => unreachable!("user input is never a permission"),
    };
    Ok((pending, request))
}

/// `interaction/requestUserInput` → an ACP form: plan approval (`schema.interaction ==
/// "plan_approval"`), MCP elicitation (`"mcp_elicitation"`, one question a schema field) or
/// AskUserQuestion (`questions[]`).
fn user_input_form(id: &Value, params: &Value) -> Result<(Pending, Value), MapperError> {
    let what = "interaction/requestUserInput";
    let request_id = required_str(params, "requestId", what)?;
    let interaction = params.pointer("/schema/interaction").and_then(Value::as_str);
    let prompt = params.get("prompt").and_then(Value::as_str).filter(|p| !p.is_empty());
    let pending = |kind| Pending {
        request_id: request_id.to_string(),
        reverse_id: id.clone(),
        kind,
        answered: false,
    };
    if interaction == Some("plan_approval") {
        let plan = params.pointer("/input/plan").and_then(Value::as_str).unwrap_or("");
        let message = if plan.is_empty() {
            PLAN_QUESTION.to_string()
        } else {
            format!("{PLAN_QUESTION}\n\n{plan}")
        };
        let form = json!({
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "decision": {"type": "string", "title": "Plan", "oneOf": [
                        choice(PLAN_APPROVE, "Approve and start implementing"),
                        choice(PLAN_REVISE, "Keep planning"),
                    ]},
                    "feedback": {"type": "string", "title": "Feedback", "description": "What to change in the plan (when keeping on planning)"},
                },
                "required": ["decision"],
            },
        });
        return Ok((pending(Kind::Plan), form));
    }
    let questions = params
        .get("questions")
        .or_else(|| params.pointer("/input/questions"))
        .and_then(Value::as_array)
        .filter(|q| !q.is_empty())
        .ok_or_else(|| protocol(format!("{what}: no questions")))?;
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut texts = Vec::new();
    for (index, question) in questions.iter().enumerate() {
        let text = required_str(question, "question", what)?;
        let header = question.get("header").and_then(Value::as_str).unwrap_or(text);
        let options: Vec<(&str, &str)> = question
            .get("options")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|o| {
                let value = o.get("value").or_else(|| o.get("label")).and_then(Value::as_str)?;
                Some((value, o.get("label").and_then(Value::as_str).unwrap_or(value)))
            })
            .collect();
        let free = options.iter().any(|(value, _)| *value == FREE_TEXT) || options.is_empty();
        let choices: Vec<Value> =
            options.iter().filter(|(v, _)| *v != FREE_TEXT).map(|(v, l)| choice(v, l)).collect();
        let field = if free {
            json!({"type": "string", "title": header, "description": text})
        } else if question.get("multiSelect").and_then(Value::as_bool) == Some(true) {
            json!({"type": "array", "title": header, "description": text, "items": {"anyOf": choices}})
        } else {
            json!({"type": "string", "title": header, "description": text, "oneOf": choices})
        };
        let key = format!("q{index}");
        properties.insert(key.clone(), field);
        required.push(json!(key));
        let offered = options.iter().filter(|(v, _)| *v != FREE_TEXT);
        texts.push(Question {
            text: text.to_string(),
            choices: (!free).then(|| offered.map(|(v, _)| v.to_string()).collect()),
        });
    }
    let message = prompt
        .map(str::to_string)
        .unwrap_or_else(|| texts.iter().map(|q| q.text.as_str()).collect::<Vec<_>>().join("\n"));
    let form = json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": properties, "required": required},
    });
    Ok((pending(Kind::Questions { questions: texts }), form))
}

/// How ZCode must be answered: the reply to the reverse request, and the same answer as a V4
/// `resolveInteraction` payload.
#[derive(Debug, PartialEq)]
pub struct Answer {
    pub reply: Value,
    pub v4: Value,
}

fn decline(reason: Option<&str>) -> Answer {
    let mut reply = json!({"action": "decline"});
    if let Some(reason) = reason {
        reply["reason"] = json!(reason);
    }
    Answer { reply, v4: json!({"action": "decline"}) }
}

fn accept(content: Value) -> Answer {
    Answer {
        reply: json!({"action": "accept", "content": content}),
        v4: json!({"action": "accept", "content": content}),
    }
}

/// An answer as ZCode takes it. Anything but a clear allow or accept becomes a deny or a
/// decline: a permission is never allowed because something failed.
pub fn answer(kind: &Kind, outcome: &InteractionOutcome) -> Result<Answer, MapperError> {
    match kind {
        Kind::Permission { options } => {
            let deny = || {
                options
                    .iter()
                    .find(|(_, _, r)| r.get("decision").and_then(Value::as_str) == Some("deny"))
            };
            let chosen = match outcome {
                InteractionOutcome::Selected(id) => {
                    options.iter().find(|(o, _, _)| o == id).or_else(deny)
                }
                _ => deny(),
            };
            let (_, native_id, response) = chosen
                .cloned()
                .unwrap_or_else(|| (String::new(), None, json!({"decision": "deny"})));
            // A V4 answer names ZCode's option id; an option without an id of its own (or the
            // synthetic deny) is answered only with its response, on the reverse request.
            let v4 = match native_id {
                Some(id) => json!({"optionId": id}),
                None if response.get("decision").and_then(Value::as_str) == Some("deny") => {
                    json!({"optionId": SYNTHETIC_DENY})
                }
                None => Value::Null,
            };
            Ok(Answer { reply: response, v4 })
        }
        Kind::Plan => {
            let result = match outcome {
                InteractionOutcome::Elicited(result) => result,
                // Asked as a permission: only the approving option approves.
                InteractionOutcome::Selected(id) if id == PLAN_APPROVE => {
                    return Ok(accept(json!({"answers": {PLAN_QUESTION: PLAN_APPROVE}})));
                }
                InteractionOutcome::Selected(_) => {
                    return Ok(decline(Some("The plan was not approved")));
                }
                InteractionOutcome::Unavailable(reason) => return Ok(decline(Some(reason))),
            };
            let result = acp_params(result)?;
            if result.get("action").and_then(Value::as_str) != Some("accept") {
                return Ok(decline(None));
            }
            let content = result.get("content").cloned().unwrap_or(Value::Null);
            let feedback = content
                .get("feedback")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|f| !f.is_empty());
            Ok(match (content.get("decision").and_then(Value::as_str), feedback) {
                (Some(PLAN_APPROVE), _) => {
                    accept(json!({"answers": {PLAN_QUESTION: PLAN_APPROVE}}))
                }
                // Feedback goes back as the plan's answer: ZCode keeps planning with it.
                (_, Some(feedback)) => accept(json!({"answers": {PLAN_QUESTION: feedback}})),
                _ => decline(Some("The plan was not approved")),
            })
        }
        Kind::Questions { questions } => {
            let result = match outcome {
                InteractionOutcome::Elicited(result) => result,
                // One single-choice question asked as a permission: its choice, or a decline.
                InteractionOutcome::Selected(id) => {
                    return Ok(match questions.as_slice() {
                        [Question { text, choices: Some(choices) }]
                            if id != DECLINE_OPTION && choices.contains(id) =>
                        {
                            accept(json!({"answers": {text.as_str(): id}}))
                        }
                        _ if id == DECLINE_OPTION => decline(None),
                        _ => decline(Some("The answer is not one of the offered choices")),
                    });
                }
                // Not asked (no forms) or not answered: the reason goes back with the decline.
                InteractionOutcome::Unavailable(reason) => return Ok(decline(Some(reason))),
            };
            let result = acp_params(result)?;
            match result.get("action").and_then(Value::as_str) {
                Some("accept") => {}
                Some("cancel") => {
                    return Ok(Answer {
                        reply: json!({"action": "cancel"}),
                        v4: json!({"action": "cancel"}),
                    });
                }
                _ => return Ok(decline(None)),
            }
            let mut answers = Map::new();
            for (index, question) in questions.iter().enumerate() {
                let value = result.pointer(&format!("/content/q{index}"));
                let picked: Vec<String> = match value {
                    Some(Value::String(s)) if !s.trim().is_empty() => vec![s.trim().to_string()],
                    Some(Value::Array(items)) => {
                        items.iter().filter_map(Value::as_str).map(str::to_string).collect()
                    }
                    Some(Value::Bool(b)) => vec![b.to_string()],
                    Some(Value::Number(n)) => vec![n.to_string()],
                    _ => Vec::new(),
                };
                // A value the form did not offer is never passed on as the user's choice: the
                // whole answer is declined (the client broke the form it was given).
                if let Some(choices) = &question.choices
                    && picked.iter().any(|p| !choices.contains(p))
                {
                    return Ok(decline(Some("The answer is not one of the offered choices")));
                }
                if !picked.is_empty() {
                    answers.insert(question.text.clone(), json!(picked.join(", ")));
                }
            }
            if answers.is_empty() {
                return Ok(decline(Some("No question was answered")));
            }
            Ok(accept(json!({"answers": answers})))
        }
    }
}

/// Why a provider cannot get its runtime headers headlessly, by its account access mode.
fn header_refusal(mode: Option<&str>) -> String {
    match mode {
        Some("start-plan") => "Start Plan models need an Aliyun captcha that only the ZCode desktop app can solve; choose a GLM Coding Plan model for editor sessions".to_string(),
        Some(other) => format!("zcode-acp cannot authorise {other} account models; choose a GLM Coding Plan model"),
        None => "zcode-acp cannot authorise this provider's requests".to_string(),
    }
}

/// `interaction/requestProviderRuntimeHeaders`: an individual Coding Plan account gets the API
/// key Desktop stored for it, filled by the core (the mapper never sees it); anything else a
/// refusal that says why. Either answer keeps ZCode's result shape.
pub fn provider_headers(id: &Value, params: &Value) -> Result<NativeWrite, MapperError> {
    let what = "interaction/requestProviderRuntimeHeaders";
    let provider = required_str(params, "providerId", what)?;
    let access = params.get("accountAccess");
    let mode = access.and_then(|a| a.get("mode")).and_then(Value::as_str);
    let family = access.and_then(|a| a.get("accountType")).and_then(Value::as_str);
    let refusal =
        |message: &str| wire::result(id, json!({"headersApplied": false, "errorMessage": message}));
    match (mode, family) {
        (Some("individual-coding-plan"), Some(family @ ("zai" | "bigmodel"))) => {
            let placeholder = "@@zcode-acp:coding-plan-api-key@@";
            Ok(NativeWrite {
                bytes: wire::result(
                    id,
                    json!({"headersApplied": true, "requestAuth": {"apiKey": placeholder}}),
                ),
                label: "provider runtime headers".to_string(),
                secret: Some(SecretFill {
                    placeholder: placeholder.to_string(),
                    source: CODING_PLAN_KEY_SOURCE.to_string(),
                    args: vec![
                        ("provider".to_string(), provider.to_string()),
                        ("family".to_string(), family.to_string()),
                    ],
                    fallback: refusal(
                        "zcode-acp found no readable Coding Plan API key for the signed-in ZCode account: open ZCode once to sign in (ZCode 3.18 and later store the sign-in as enc:v2, which zcode-acp cannot read yet)",
                    ),
                }),
            })
        }
        _ => {
            Ok(NativeWrite::new("provider runtime headers refused", refusal(&header_refusal(mode))))
        }
    }
}

/// The reply to the reverse request for `answer` (used when it is not answered over V4).
pub fn reply_write(pending: &Pending, answer: &Answer) -> NativeWrite {
    NativeWrite::new("interaction answer", wire::result(&pending.reverse_id, answer.reply.clone()))
}

/// An ACP permission request as the JSON text the contract carries.
pub fn request_text(request: &Value) -> String {
    text(request)
}

#[cfg(test)]
mod tests;
