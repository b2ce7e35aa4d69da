//! Things the host waits on: ordinary permission, structured input, plan approval (from a
//! permission or a structured-input request) and provider header recovery. Each becomes one
//! keyed interaction that gets exactly one native answer; nothing is ever allowed by default.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};
use zcode_contract::{
    Action, ErrorKind, Interaction, InteractionAnswer, InteractionOutcome, InteractionRequest,
    MapperError, PermissionRequest,
};

use crate::json::{Fields, error, internal, protocol, text};
use crate::ops::{self, ElicitationReply, Outbound};
use crate::state::{State, update};
use crate::tools::tool_kind;

const PLAN_TOOL: &str = "ExitPlanMode";
const PLAN_MESSAGE_FALLBACK: &str = "Review this implementation plan.";
const QUESTION_MESSAGE_FALLBACK: &str = "ZCode needs additional input";
const PLAN_FAILED: &str = "Plan approval request failed";
const NO_CLIENT_FOR_PLAN: &str = "No active client can approve the plan";
const NO_CLIENT_FOR_INPUT: &str = "No active client can handle structured input";
const BAD_ANSWER: &str = "Structured input answer does not match the requested form";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    Allow,
    Deny,
}

#[derive(Clone, Debug)]
struct Question {
    text: String,
    values: Vec<String>,
    multi: bool,
}

/// What the native side is waiting for, by interaction key.
#[derive(Clone, Debug)]
enum Pending {
    Permission {
        request_id: String,
        options: Vec<String>,
        deny: String,
    },
    /// Answered with the native deny option whatever the outcome.
    Deny {
        request_id: String,
        option: String,
    },
    /// Answered with a native decline whatever the outcome.
    Decline {
        request_id: String,
        reason: String,
    },
    Questions {
        request_id: String,
        questions: Vec<Question>,
    },
    PlanPermission {
        request_id: String,
        options: Vec<(String, Decision)>,
        deny: String,
    },
    PlanQuestion {
        request_id: String,
        question: String,
        values: Vec<String>,
    },
    ProviderHeaders {
        request_id: String,
    },
}

/// Open interactions and every key ever used (a key is never reused in a session).
#[derive(Default)]
pub struct Interactions {
    pending: BTreeMap<String, Pending>,
    seen: BTreeSet<String>,
}

impl Interactions {
    /// Registers `key`; false if it was used before (a re-delivered request).
    fn register(&mut self, key: &str, pending: Pending) -> bool {
        if !self.seen.insert(key.to_string()) {
            return false;
        }
        self.pending.insert(key.to_string(), pending);
        true
    }
}

fn interaction(key: &str, request: InteractionRequest) -> Action {
    Action::Interaction(Interaction { key: key.to_string(), request })
}

fn headless(key: &str, why: &str) -> Action {
    interaction(key, InteractionRequest::Headless(why.to_string()))
}

fn unsupported(message: &str) -> MapperError {
    error(ErrorKind::Unsupported, message)
}

// ----- native requests ------------------------------------------------------------------------

struct NativeOption {
    id: String,
    name: String,
    description: Option<String>,
    decision: Result<Decision, String>,
    remembers: bool,
}

fn native_options(options: &[Value]) -> Result<Vec<NativeOption>, MapperError> {
    if options.is_empty() {
        return Err(protocol("permission.request: field `options` must not be empty"));
    }
    options
        .iter()
        .map(|option| {
            let fields = Fields::native(option, "permission option")?;
            fields.only(&["optionId", "kind", "name", "description", "response"])?;
            fields.non_empty_str("kind")?;
            let response = fields.object("response", "permission option response")?;
            response.only(&["decision", "reason", "modifiedInput", "permissionUpdates"])?;
            response.opt_str("reason")?;
            let decision = match response.str("decision")? {
                "allow" => Ok(Decision::Allow),
                "deny" => Ok(Decision::Deny),
                other @ ("escalate" | "modify") => Err(other.to_string()),
                other => {
                    return Err(protocol(format!("permission option: unknown decision `{other}`")));
                }
            };
            let remembers =
                response.opt_array("permissionUpdates")?.is_some_and(|updates| !updates.is_empty());
            Ok(NativeOption {
                id: fields.non_empty_str("optionId")?.to_string(),
                name: fields.str("name")?.to_string(),
                description: fields.opt_str("description")?.map(str::to_string),
                decision,
                remembers,
            })
        })
        .collect::<Result<Vec<NativeOption>, MapperError>>()
        .and_then(unique_ids)
}

/// ZCode resolves an answer by option id, first match: with two options under one id, a deny
/// (or the core's refusal) could select an allowing option. No answer is safe then, so the
/// request is a protocol break. (A `BTreeSet`: a `HashSet` would seed itself from
/// `wasi:random`, which the sandbox does not grant.)
fn unique_ids(options: Vec<NativeOption>) -> Result<Vec<NativeOption>, MapperError> {
    let mut seen = std::collections::BTreeSet::new();
    match options.iter().find(|option| !seen.insert(option.id.as_str())) {
        Some(twice) => {
            Err(protocol(format!("permission.request: option id `{}` is not unique", twice.id)))
        }
        None => Ok(options),
    }
}

fn plan_text(input: Option<&Value>) -> Result<&str, MapperError> {
    input
        .and_then(|input| input.get("plan"))
        .and_then(Value::as_str)
        .filter(|plan| !plan.trim().is_empty())
        .ok_or_else(|| protocol("ZCode plan approval has no plan content"))
}

/// The plan approval form: one required `optionId` choice.
fn plan_form(tool_call_id: Option<&str>, message: &str, choices: Vec<Value>) -> String {
    let mut form = json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {"optionId": {
                "type": "string",
                "title": "Plan approval",
                "description": message,
                "oneOf": choices,
            }},
            "required": ["optionId"],
        },
    });
    if let Some(id) = tool_call_id {
        form["toolCallId"] = json!(id);
    }
    text(&form)
}

fn choice(value: &str, title: &str, description: Option<&str>) -> Value {
    let mut choice = json!({"const": value, "title": title});
    if let Some(description) = description {
        choice["description"] = json!(description);
    }
    choice
}

/// Fails a request that cannot be shown: the host gets the fail-closed answer through a
/// headless interaction, and a running turn ends broken.
fn refuse(
    state: &mut State,
    key: &str,
    pending: Pending,
    why: &str,
    problem: Option<MapperError>,
) -> Vec<Action> {
    if !state.interactions.register(key, pending) {
        return vec![Action::Ignore(format!("re-delivered interaction {key}"))];
    }
    let mut actions = vec![headless(key, why)];
    if let Some(problem) = problem
        && state.running()
    {
        actions.extend(state.break_turn(problem));
    }
    actions
}

/// A validated `permission.request`.
struct NativePermission<'a> {
    key: String,
    request_id: &'a str,
    tool_call_id: &'a str,
    tool_name: &'a str,
    reason: &'a str,
    input: &'a Value,
    options: Vec<NativeOption>,
    /// The first option whose decision is `deny`.
    deny: String,
}

impl NativePermission<'_> {
    fn deny_pending(&self) -> Pending {
        Pending::Deny { request_id: self.request_id.to_string(), option: self.deny.clone() }
    }

    /// An option whose decision ACP cannot express, if any.
    fn unrepresentable(&self) -> Option<&str> {
        self.options.iter().find_map(|o| o.decision.as_ref().err()).map(String::as_str)
    }
}

fn parse_permission(request: &Value) -> Result<NativePermission<'_>, MapperError> {
    let fields = Fields::native(request, "permission.request")?;
    fields.only(&[
        "requestId",
        "sessionId",
        "turnId",
        "toolCallId",
        "toolName",
        "reason",
        "riskLevel",
        "input",
        "origin",
        "options",
    ])?;
    let request_id = fields.non_empty_str("requestId")?;
    fields.str("sessionId")?;
    fields.opt_str("turnId")?;
    let tool_name = fields.str("toolName")?;
    match fields.str("riskLevel")? {
        "low" | "medium" | "high" | "critical" => {}
        other => return Err(protocol(format!("permission.request: unknown riskLevel `{other}`"))),
    }
    let options = native_options(fields.array("options")?)?;
    let deny = options.iter().find(|o| o.decision == Ok(Decision::Deny)).map(|o| o.id.clone());
    let Some(deny) = deny else {
        return Err(protocol(if tool_name == PLAN_TOOL {
            "ZCode plan approval must provide both allow and deny options"
        } else {
            "ZCode permission request does not provide a native deny option"
        }));
    };
    Ok(NativePermission {
        key: format!("permission:{request_id}"),
        request_id,
        tool_call_id: fields.non_empty_str("toolCallId")?,
        tool_name,
        reason: fields.str("reason")?,
        input: fields.value("input")?,
        options,
        deny,
    })
}

/// `permission.request`: an ordinary permission, or plan approval for `ExitPlanMode`.
pub fn permission_request(state: &mut State, request: &Value) -> Result<Vec<Action>, MapperError> {
    let permission = parse_permission(request)?;
    if state.interactions.seen.contains(&permission.key) {
        return Ok(vec![Action::Ignore(format!("re-delivered interaction {}", permission.key))]);
    }
    if permission.tool_name == PLAN_TOOL {
        Ok(plan_permission(state, permission))
    } else {
        Ok(ordinary_permission(state, permission))
    }
}

fn ordinary_permission(state: &mut State, permission: NativePermission<'_>) -> Vec<Action> {
    let key = permission.key.as_str();
    if let Some(decision) = permission.unrepresentable() {
        let problem = unsupported(&format!(
            "Native permission decision cannot be represented in ACP v1: {decision}"
        ));
        let why = "ZCode permission options cannot be shown";
        return refuse(state, key, permission.deny_pending(), why, Some(problem));
    }
    if !state.running() {
        let why = "ZCode asked for permission outside a prompt turn";
        return refuse(state, key, permission.deny_pending(), why, None);
    }
    let NativePermission { request_id, tool_call_id, tool_name, reason, input, .. } = permission;
    // Announce the tool first so clients can attach the question to it.
    let mut actions = Vec::new();
    state.tools.set_input(tool_call_id, Some(tool_name), Some(input));
    if let Some(announcement) =
        state.tools.announce(tool_call_id, Some(tool_name), &state.workspace)
    {
        actions.push(update(&announcement));
    }
    let acp_options: Vec<Value> = permission
        .options
        .iter()
        .map(|o| {
            let kind = match (o.decision == Ok(Decision::Allow), o.remembers) {
                (true, false) => "allow_once",
                (true, true) => "allow_always",
                (false, false) => "reject_once",
                (false, true) => "reject_always",
            };
            json!({"optionId": o.id, "name": o.name, "kind": kind})
        })
        .collect();
    let mut tool_call = json!({
        "toolCallId": tool_call_id,
        "title": if reason.is_empty() {
            crate::tools::default_title(tool_name, Some(input), &state.workspace)
        } else {
            reason.to_string()
        },
        "kind": tool_kind(tool_name),
        "rawInput": input,
    });
    let locations = crate::tools::locations(Some(input), &state.workspace);
    if !locations.is_empty() {
        tool_call["locations"] = json!(locations);
    }
    // The change itself, so the user sees what they allow.
    if let Some(diff) = crate::tools::input_diff(tool_name, Some(input), &state.workspace) {
        tool_call["content"] = json!([diff]);
    }
    let acp_request = json!({"toolCall": tool_call, "options": acp_options});
    state.interactions.register(
        key,
        Pending::Permission {
            request_id: request_id.to_string(),
            options: permission.options.iter().map(|o| o.id.clone()).collect(),
            deny: permission.deny.clone(),
        },
    );
    actions.push(interaction(
        key,
        InteractionRequest::Permission(PermissionRequest {
            request: text(&acp_request),
            deny_option: permission.deny.clone(),
        }),
    ));
    actions
}

/// Plan approval asked as an `ExitPlanMode` permission (source B).
fn plan_permission(state: &mut State, permission: NativePermission<'_>) -> Vec<Action> {
    let key = permission.key.as_str();
    let checked = match permission.unrepresentable() {
        Some(decision) => {
            Err(protocol(format!("ZCode plan option has unsupported decision: {decision}")))
        }
        None if !permission.options.iter().any(|o| o.decision == Ok(Decision::Allow)) => {
            Err(protocol("ZCode plan approval must provide both allow and deny options"))
        }
        None => plan_text(Some(permission.input)),
    };
    let plan = match checked {
        Ok(plan) => plan,
        Err(problem) => {
            return refuse(state, key, permission.deny_pending(), PLAN_FAILED, Some(problem));
        }
    };
    if !state.running() {
        return refuse(state, key, permission.deny_pending(), NO_CLIENT_FOR_PLAN, None);
    }
    let reason = permission.reason;
    let message = if reason.is_empty() { PLAN_MESSAGE_FALLBACK } else { reason };
    let choices = permission
        .options
        .iter()
        .map(|o| choice(&o.id, &o.name, o.description.as_deref()))
        .collect();
    let plan_operations = state.plan_operations();
    let mut actions: Vec<Action> = state
        .plan
        .publish(plan_operations, permission.request_id, plan)
        .into_iter()
        .map(Action::Update)
        .collect();
    let options = permission
        .options
        .iter()
        .filter_map(|o| o.decision.clone().ok().map(|d| (o.id.clone(), d)))
        .collect();
    state.interactions.register(
        key,
        Pending::PlanPermission {
            request_id: permission.request_id.to_string(),
            options,
            deny: permission.deny.clone(),
        },
    );
    let form = plan_form(Some(permission.tool_call_id), message, choices);
    actions.push(interaction(key, InteractionRequest::Elicitation(form)));
    actions
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
        let checked = plan_text(fields.get("input")).and_then(|plan| match questions.as_slice() {
            [(question, _)] if !question.multi && !question.values.is_empty() => {
                Ok((plan, question))
            }
            _ => Err(protocol("ZCode plan approval must ask exactly one single-choice question")),
        });
        let (plan, question) = match checked {
            Ok(found) => found,
            Err(problem) => {
                return Ok(refuse(state, &key, decline(PLAN_FAILED), PLAN_FAILED, Some(problem)));
            }
        };
        if !state.running() {
            return Ok(refuse(state, &key, decline(NO_CLIENT_FOR_PLAN), NO_CLIENT_FOR_PLAN, None));
        }
        let message = prompt.unwrap_or(&question.text);
        let choices = match &questions[0].1["oneOf"] {
            Value::Array(choices) => choices.clone(),
            _ => Vec::new(),
        };
        let plan_operations = state.plan_operations();
        let mut actions: Vec<Action> = state
            .plan
            .publish(plan_operations, request_id, plan)
            .into_iter()
            .map(Action::Update)
            .collect();
        state.interactions.register(
            &key,
            Pending::PlanQuestion {
                request_id: request_id.to_string(),
                question: question.text.clone(),
                values: question.values.clone(),
            },
        );
        actions.push(interaction(
            &key,
            InteractionRequest::Elicitation(plan_form(tool_call_id, message, choices)),
        ));
        return Ok(actions);
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
        Pending::Questions {
            request_id: request_id.to_string(),
            questions: questions.into_iter().map(|(question, _)| question).collect(),
        },
    );
    Ok(vec![interaction(&key, InteractionRequest::Elicitation(text(&form)))])
}

/// `providerRuntimeHeaders.request`: never applied headlessly; the running turn cannot go on.
pub fn provider_headers_request(
    state: &mut State,
    request: &Value,
) -> Result<Vec<Action>, MapperError> {
    let fields = Fields::native(request, "providerRuntimeHeaders.request")?;
    fields.only(&[
        "requestId",
        "sessionId",
        "turnId",
        "workspace",
        "modelRef",
        "providerId",
        "reason",
    ])?;
    let request_id = fields.non_empty_str("requestId")?;
    fields.str("sessionId")?;
    fields.opt_str("turnId")?;
    fields.object("workspace", "providerRuntimeHeaders.request workspace")?.str("workspacePath")?;
    let model = fields.object("modelRef", "providerRuntimeHeaders.request modelRef")?;
    model.str("providerId")?;
    model.str("modelId")?;
    fields.str("providerId")?;
    match fields.str("reason")? {
        "model-request" | "captcha-retry" => {}
        other => {
            return Err(protocol(format!(
                "providerRuntimeHeaders.request: unknown reason `{other}`"
            )));
        }
    }
    let key = format!("headers:{request_id}");
    let problem = unsupported(
        "ZCode requested interactive provider header recovery, which is unavailable headlessly",
    );
    let pending = Pending::ProviderHeaders { request_id: request_id.to_string() };
    Ok(refuse(
        state,
        &key,
        pending,
        "ZCode requested interactive provider header recovery",
        Some(problem),
    ))
}

// ----- answers ------------------------------------------------------------------------------

/// An ACP elicitation result as the native side needs it.
enum Elicited {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

fn elicited(outcome: &InteractionOutcome) -> Result<Elicited, String> {
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

fn selected_plan_option(outcome: &InteractionOutcome) -> Result<Option<String>, Elicited> {
    match elicited(outcome) {
        Ok(Elicited::Accept(content)) => {
            Ok(content.get("optionId").and_then(Value::as_str).map(str::to_string))
        }
        Ok(other) => Err(other),
        Err(_) => Ok(None),
    }
}

/// The native reply to an interaction answer, and what the client hears about it.
pub struct Answered {
    /// Plan view updates to send once the host took the reply.
    pub updates: Vec<String>,
    pub outbound: Outbound,
    /// The reply approves a plan: the host leaves planning once it takes it.
    pub plan_approved: bool,
}

impl Answered {
    fn plain(outbound: Outbound) -> Self {
        Self { updates: Vec::new(), outbound, plan_approved: false }
    }

    fn with_updates(updates: Vec<String>, outbound: Outbound) -> Self {
        Self { updates, outbound, plan_approved: false }
    }

    fn approving(updates: Vec<String>, outbound: Outbound) -> Self {
        Self { updates, outbound, plan_approved: true }
    }
}

/// Turns the core's answer into the native reply (and plan view updates). An unknown or
/// already-answered key is an error without any native request.
pub fn answer(state: &mut State, answer: &InteractionAnswer) -> Result<Answered, MapperError> {
    let pending = state.interactions.pending.remove(&answer.key).ok_or_else(|| {
        internal(format!("Unknown or already answered interaction: {}", answer.key))
    })?;
    let workspace = state.workspace.clone();
    let session_id = state.session_id()?.to_string();
    let (ws, sid) = (workspace.as_str(), session_id.as_str());
    let plan_operations = state.plan_operations();
    let outcome = &answer.outcome;
    let reply = |request_id: &str, reply| ops::respond_elicitation(ws, sid, request_id, reply);
    Ok(match pending {
        Pending::Permission { request_id, options, deny } => {
            let option = match outcome {
                InteractionOutcome::Selected(id) if options.contains(id) => id.clone(),
                _ => deny,
            };
            Answered::plain(ops::respond_permission(ws, sid, &request_id, &option))
        }
        Pending::Deny { request_id, option } => {
            Answered::plain(ops::respond_permission(ws, sid, &request_id, &option))
        }
        Pending::Decline { request_id, reason } => {
            Answered::plain(reply(&request_id, ElicitationReply::Decline(Some(reason))))
        }
        Pending::ProviderHeaders { request_id } => {
            Answered::plain(ops::refuse_provider_headers(ws, sid, &request_id))
        }
        Pending::Questions { request_id, questions } => {
            let native = match elicited(outcome) {
                Ok(Elicited::Accept(content)) => match structured_content(&questions, content) {
                    Ok(content) => ElicitationReply::Accept(content),
                    Err(reason) => ElicitationReply::Decline(Some(reason)),
                },
                Ok(Elicited::Decline) => ElicitationReply::Decline(None),
                Ok(Elicited::Cancel) => ElicitationReply::Cancel,
                Err(reason) => ElicitationReply::Decline(Some(reason)),
            };
            Answered::plain(reply(&request_id, native))
        }
        Pending::PlanPermission { request_id, options, deny } => {
            let chosen = selected_plan_option(outcome)
                .ok()
                .flatten()
                .and_then(|id| options.into_iter().find(|(option, _)| *option == id));
            match chosen {
                Some((id, Decision::Allow)) => Answered::approving(
                    state.plan.accept(plan_operations),
                    ops::respond_permission(ws, sid, &request_id, &id),
                ),
                Some((id, Decision::Deny)) => Answered::with_updates(
                    state.plan.remove(plan_operations),
                    ops::respond_permission(ws, sid, &request_id, &id),
                ),
                None => Answered::with_updates(
                    state.plan.remove(plan_operations),
                    ops::respond_permission(ws, sid, &request_id, &deny),
                ),
            }
        }
        Pending::PlanQuestion { request_id, question, values } => {
            match selected_plan_option(outcome) {
                Ok(Some(id)) if values.contains(&id) => {
                    let content =
                        json!({"answer_0": id, "answers": {question: [id]}, "answer": id});
                    Answered::approving(
                        state.plan.accept(plan_operations),
                        reply(&request_id, ElicitationReply::Accept(content)),
                    )
                }
                Ok(_) => {
                    let reason = match outcome {
                        InteractionOutcome::Unavailable(reason) => reason.clone(),
                        _ => PLAN_FAILED.to_string(),
                    };
                    Answered::with_updates(
                        state.plan.remove(plan_operations),
                        reply(&request_id, ElicitationReply::Decline(Some(reason))),
                    )
                }
                Err(Elicited::Cancel) => Answered::with_updates(
                    state.plan.remove(plan_operations),
                    reply(&request_id, ElicitationReply::Cancel),
                ),
                Err(_) => Answered::with_updates(
                    state.plan.remove(plan_operations),
                    reply(&request_id, ElicitationReply::Decline(None)),
                ),
            }
        }
    })
}
