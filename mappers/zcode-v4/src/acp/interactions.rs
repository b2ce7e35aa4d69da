//! What ZCode waits on: the V4 state's `pendingInteractions` (ZCode 3.15.1
//! `zcode-protocol-v4/snapshot.ts`) — permissions, structured input (questions, plan approval,
//! MCP elicitation) and workspace hook reviews — each surfaced once under the key
//! `interaction:<interactionId>` and answered exactly once with `resolveInteraction`.
//! Nothing is allowed by default: what cannot be shown gets the native refusal.
//!
//! The ACP shapes are those of the desktop-host generations
//! (`zcode-host-common/src/interactions.rs`): permission option kinds from the native
//! decision, questions as `answer_<i>` form fields, plan approval as a one-choice form with the
//! plan shown as a proposal.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use zcode_contract::{
    Action, ErrorKind, Interaction, InteractionAnswer, InteractionOutcome, InteractionRequest,
    MapperError,
};

use crate::acp::plan::PlanView;
use crate::acp::tools::{default_title, input_diff, locations, tool_kind};
use crate::acp::track::Tracker;
use crate::schema::Fields;
use zcode_mapper_sdk::acp::elicit::{self, Answer, Choice, Question};
use zcode_mapper_sdk::acp::permission::{self, OptionKind, PermissionOption};
use zcode_mapper_sdk::acp::plan::{Approval, approval, ask_approval};
use zcode_mapper_sdk::acp::update::ToolCallUpdate;
use zcode_mapper_sdk::json::{error, internal, protocol};

const PLAN_TOOL: &str = "ExitPlanMode";
const PLAN_MESSAGE_FALLBACK: &str = "Review this implementation plan.";
const QUESTION_MESSAGE_FALLBACK: &str = "ZCode needs additional input";
const PLAN_FAILED: &str = "Plan approval request failed";
const NO_CLIENT_FOR_PLAN: &str = "No active client can approve the plan";
const NO_CLIENT_FOR_INPUT: &str = "No active client can handle structured input";
/// ZCode's MCP elicitation marks a free-text field with this option value (zcode-releases.md
/// §3.5).
const FREE_TEXT_OPTION: &str = "__zcode_free_text__";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    Allow,
    Deny,
}

/// The native answer each open interaction will get.
#[derive(Clone, Debug)]
enum Pending {
    Permission {
        options: Vec<String>,
        deny: String,
    },
    /// Refused: answered with the native deny option whatever the outcome.
    Deny {
        option: String,
    },
    /// Refused: answered with a native decline whatever the outcome.
    Decline,
    Questions {
        questions: Vec<Question>,
    },
    /// A prompt without questions: one choice among `options`, or free text.
    Single {
        options: Vec<String>,
    },
    PlanPermission {
        options: Vec<(String, Decision)>,
        deny: String,
    },
    PlanQuestion {
        question: String,
        values: Vec<String>,
    },
    /// A workspace hook review: only the user can decide, in ZCode itself; nothing is sent.
    Unanswerable,
}

/// What a resolved interaction sends: the `resolveInteraction` answer (or nothing), the plan
/// view updates, and whether a plan was approved.
pub struct Answered {
    pub interaction_id: String,
    pub answer: Option<Value>,
    pub updates: Vec<String>,
    pub plan_approved: bool,
}

#[derive(Default)]
pub struct Interactions {
    pending: BTreeMap<String, (String, Pending)>,
    /// Every interaction id ever surfaced: ZCode repeats the list in every state update.
    seen: BTreeSet<String>,
}

/// The context a request is surfaced in.
pub struct Context<'a> {
    pub workspace: &'a str,
    pub running: bool,
    pub plan_operations: bool,
    /// The client renders form elicitation; without, questions are asked as permissions or
    /// declined (the SDK's `elicit::ask`, `plan::ask_approval`).
    pub forms: bool,
    pub tracker: &'a mut Tracker,
    pub plan: &'a mut PlanView,
}

fn key(interaction_id: &str) -> String {
    format!("interaction:{interaction_id}")
}

fn interaction(key: &str, request: InteractionRequest) -> Action {
    Action::Interaction(Interaction { key: key.to_string(), request })
}

impl Interactions {
    /// Surfaces the interactions of `list` not seen before. Returns the actions and, when one
    /// cannot be shown during a running turn, the problem that breaks the turn.
    pub fn surface(
        &mut self,
        list: &[Value],
        cx: Context<'_>,
    ) -> Result<(Vec<Action>, Option<MapperError>), MapperError> {
        let mut actions = Vec::new();
        let mut problem = None;
        let Context { workspace, running, plan_operations, forms, tracker, plan } = cx;
        for item in list {
            let fields = Fields::native(item, "pending interaction")?;
            let id = fields.non_empty_str("interactionId")?.to_string();
            if !self.seen.insert(id.clone()) {
                continue;
            }
            let key = key(&id);
            let payload = fields.value("payload")?;
            let (mut found, pending, refusal) = match fields.str("kind")? {
                "permission" => {
                    let shown = Shown { running, plan_operations, forms };
                    permission(&key, payload, shown, workspace, tracker, plan)?
                }
                "userInput" => {
                    let shown = Shown { running, plan_operations, forms };
                    user_input(&key, payload, shown, plan)?
                }
                _ => (
                    vec![interaction(
                        &key,
                        InteractionRequest::Headless(
                            "ZCode asks for a workspace hook review".into(),
                        ),
                    )],
                    Pending::Unanswerable,
                    Some(error(
                        ErrorKind::Unsupported,
                        "ZCode asks for a workspace hook review, which only ZCode itself can answer: review \
                         the workspace's hooks with `zcode hooks trust`, then retry",
                    )),
                ),
            };
            if running && let Some(refusal) = refusal {
                problem.get_or_insert(refusal);
            }
            actions.append(&mut found);
            self.pending.insert(key, (id, pending));
        }
        Ok((actions, problem))
    }

    /// The core's answer as the native answer. An unknown or already answered key is an error.
    pub fn answer(
        &mut self,
        answer: &InteractionAnswer,
        plan_operations: bool,
        plan: &mut PlanView,
    ) -> Result<Answered, MapperError> {
        let (interaction_id, pending) = self.pending.remove(&answer.key).ok_or_else(|| {
            internal(format!("Unknown or already answered interaction: {}", answer.key))
        })?;
        let outcome = &answer.outcome;
        let mut answered =
            Answered { interaction_id, answer: None, updates: Vec::new(), plan_approved: false };
        answered.answer = match pending {
            Pending::Permission { options, deny } => Some(json!({"optionId": match outcome {
                InteractionOutcome::Selected(id) if options.contains(id) => id.clone(),
                _ => deny,
            }})),
            Pending::Deny { option } => Some(json!({"optionId": option})),
            Pending::Decline => Some(json!({"action": "decline"})),
            Pending::Unanswerable => None,
            Pending::Questions { questions } => Some(match elicit::answer(outcome) {
                Ok(Answer::Accept(content)) => match elicit::answers(&questions, content) {
                    Ok(content) => json!({"action": "accept", "content": content}),
                    Err(_) => json!({"action": "decline"}),
                },
                Ok(Answer::Cancel) => json!({"action": "cancel"}),
                Ok(Answer::Decline) | Err(_) => json!({"action": "decline"}),
            }),
            Pending::Single { options } => Some(match elicit::answer(outcome) {
                Ok(Answer::Accept(content)) => {
                    match content.get("answer_0").and_then(Value::as_str) {
                        Some(choice) if options.is_empty() => json!({"freeText": choice}),
                        Some(choice) if options.iter().any(|o| o == choice) => {
                            json!({"optionId": choice})
                        }
                        _ => json!({"action": "decline"}),
                    }
                }
                Ok(Answer::Cancel) => json!({"action": "cancel"}),
                Ok(Answer::Decline) | Err(_) => json!({"action": "decline"}),
            }),
            Pending::PlanPermission { options, deny } => {
                let chosen = selected_plan_option(outcome)
                    .and_then(|id| options.into_iter().find(|(option, _)| *option == id));
                match chosen {
                    Some((id, Decision::Allow)) => {
                        answered.updates = plan.accept(plan_operations);
                        answered.plan_approved = true;
                        Some(json!({"optionId": id}))
                    }
                    Some((id, Decision::Deny)) => {
                        answered.updates = plan.remove(plan_operations);
                        Some(json!({"optionId": id}))
                    }
                    None => {
                        answered.updates = plan.remove(plan_operations);
                        Some(json!({"optionId": deny}))
                    }
                }
            }
            Pending::PlanQuestion { question, values } => match selected_plan_option(outcome) {
                Some(id) if values.contains(&id) => {
                    answered.updates = plan.accept(plan_operations);
                    answered.plan_approved = true;
                    Some(
                        json!({"action": "accept", "content": {"answer_0": id, "answers": {question: [id]}, "answer": id}}),
                    )
                }
                _ => {
                    answered.updates = plan.remove(plan_operations);
                    let cancelled = matches!(elicit::answer(outcome), Ok(Answer::Cancel));
                    Some(json!({"action": if cancelled { "cancel" } else { "decline" }}))
                }
            },
        };
        Ok(answered)
    }
}

// ----- permissions ---------------------------------------------------------------------------

struct NativeOption {
    id: String,
    label: String,
    decision: Result<Decision, String>,
    remembers: bool,
}

/// Options with their decision: `allowOnce` / `allowAlways` allow, `deny` denies, `custom`
/// decides by its `response.decision` (`escalate` / `modify` have no ACP form). Option ids must
/// be unique: ZCode resolves an answer by id, first match, so a duplicated id could turn a
/// refusal into an allow.
fn native_options(payload: &Fields<'_>) -> Result<Vec<NativeOption>, MapperError> {
    let mut seen = BTreeSet::new();
    let mut options = Vec::new();
    for option in payload.array("options")? {
        let fields = Fields::native(option, "permission option")?;
        let id = fields.non_empty_str("optionId")?.to_string();
        if !seen.insert(id.clone()) {
            return Err(protocol(format!("permission: option id `{id}` is not unique")));
        }
        let response = fields.opt_object("response", "permission option response")?;
        let response_decision = match &response {
            Some(response) => response.opt_str("decision")?,
            None => None,
        };
        let remembers = match &response {
            Some(response) => {
                response.opt_array("permissionUpdates")?.is_some_and(|updates| !updates.is_empty())
            }
            None => false,
        };
        let kind = fields.one_of("kind", &["allowOnce", "allowAlways", "deny", "custom"])?;
        let decision = match (kind, response_decision) {
            ("allowOnce" | "allowAlways", None | Some("allow")) => Ok(Decision::Allow),
            ("deny", None | Some("deny")) => Ok(Decision::Deny),
            ("custom", Some("allow")) => Ok(Decision::Allow),
            ("custom", Some("deny")) => Ok(Decision::Deny),
            (_, Some(other @ ("escalate" | "modify"))) => Err(other.to_string()),
            (kind, Some(other)) if ["allow", "deny"].contains(&other) => {
                return Err(protocol(format!(
                    "permission option `{id}`: kind {kind} contradicts decision {other}"
                )));
            }
            (_, Some(other)) => {
                return Err(protocol(format!(
                    "permission option `{id}`: unknown decision `{other}`"
                )));
            }
            ("custom", None) => Err("custom".to_string()),
            _ => unreachable!("kinds are checked above"),
        };
        options.push(NativeOption {
            remembers: remembers || kind == "allowAlways",
            label: fields.str("label")?.to_string(),
            decision,
            id,
        });
    }
    if options.is_empty() {
        return Err(protocol("permission: field `options` must not be empty"));
    }
    Ok(options)
}

type Surfaced = (Vec<Action>, Pending, Option<MapperError>);

/// What the client is shown a request in: a running turn, plan operations, forms.
#[derive(Clone, Copy)]
struct Shown {
    running: bool,
    plan_operations: bool,
    forms: bool,
}

fn headless(key: &str, why: &str) -> Vec<Action> {
    vec![interaction(key, InteractionRequest::Headless(why.to_string()))]
}

fn plan_text(value: Option<&Value>) -> Option<&str> {
    match value? {
        Value::String(text) => Some(text.as_str()),
        Value::Object(map) => map.get("plan").and_then(Value::as_str),
        _ => None,
    }
    .filter(|plan| !plan.trim().is_empty())
}

/// The tool's name and input, borrowed from the tracker (a write's input can be megabytes,
/// F-20); the request's `detail` stands in for an input the tracker does not know.
fn tool_view<'a>(
    tracker: &'a Tracker,
    tool_call_id: &str,
    tool_name: &'a str,
    detail: Option<&'a Value>,
) -> (String, Option<Cow<'a, Value>>) {
    let (name, input) = tracker.tool(tool_call_id).unwrap_or((tool_name, None));
    (name.to_string(), input.or(detail.map(Cow::Borrowed)))
}

fn permission(
    key: &str,
    payload: &Value,
    shown: Shown,
    workspace: &str,
    tracker: &mut Tracker,
    plan: &mut PlanView,
) -> Result<Surfaced, MapperError> {
    let Shown { running, plan_operations, forms } = shown;
    let fields = Fields::native(payload, "permission request")?;
    let tool_call_id = fields.str("toolCallId")?;
    let tool_name = fields.str("toolName")?;
    let summary = fields.str("summary")?;
    let options = native_options(&fields)?;
    let deny = options.iter().find(|o| o.decision == Ok(Decision::Deny)).map(|o| o.id.clone());
    let unrepresentable = options.iter().find_map(|o| o.decision.as_ref().err()).cloned();
    let Some(deny) = deny else {
        // No safe answer exists: the request itself is a protocol break.
        return Err(protocol(if tool_name == PLAN_TOOL {
            "ZCode plan approval must provide both allow and deny options"
        } else {
            "ZCode permission request does not provide a native deny option"
        }));
    };
    let refuse = |why: &str, problem: Option<MapperError>| -> Result<Surfaced, MapperError> {
        Ok((headless(key, why), Pending::Deny { option: deny.clone() }, problem))
    };
    let detail = fields.get("detail").filter(|d| d.is_object());

    if tool_name == PLAN_TOOL {
        let (_, input) = tool_view(tracker, tool_call_id, tool_name, detail);
        let problem = match &unrepresentable {
            Some(decision) => {
                Some(protocol(format!("ZCode plan option has unsupported decision: {decision}")))
            }
            None if !options.iter().any(|o| o.decision == Ok(Decision::Allow)) => {
                Some(protocol("ZCode plan approval must provide both allow and deny options"))
            }
            None => None,
        };
        let content = plan_text(fields.get("detail")).or_else(|| plan_text(input.as_deref()));
        let (Some(content), None) = (content, &problem) else {
            let problem =
                problem.unwrap_or_else(|| protocol("ZCode plan approval has no plan content"));
            return refuse(PLAN_FAILED, Some(problem));
        };
        if !running {
            return refuse(NO_CLIENT_FOR_PLAN, None);
        }
        let message = if summary.is_empty() { PLAN_MESSAGE_FALLBACK } else { summary };
        let interaction_id = key.trim_start_matches("interaction:");
        let mut actions: Vec<Action> = plan
            .publish(plan_operations, interaction_id, content)
            .into_iter()
            .map(Action::Update)
            .collect();
        let choices: Vec<Choice> =
            options.iter().map(|o| Choice::new(&o.id, &o.label, None)).collect();
        let rejecting: Vec<&str> = options
            .iter()
            .filter(|o| o.decision == Ok(Decision::Deny))
            .map(|o| o.id.as_str())
            .collect();
        let request =
            ask_plan(forms, key, Some(tool_call_id), message, &choices, &rejecting, Some(&deny));
        actions.push(interaction(key, request));
        let decisions = options
            .iter()
            .filter_map(|o| o.decision.clone().ok().map(|d| (o.id.clone(), d)))
            .collect();
        return Ok((actions, Pending::PlanPermission { options: decisions, deny }, None));
    }

    if let Some(decision) = unrepresentable {
        let problem = error(
            ErrorKind::Unsupported,
            format!("Native permission decision cannot be represented in ACP v1: {decision}"),
        );
        return refuse("ZCode permission options cannot be shown", Some(problem));
    }
    if !running {
        return refuse("ZCode asked for permission outside a prompt turn", None);
    }
    let mut actions = Vec::new();
    // The tool first, so clients can attach the question to it.
    if let Some(announcement) = tracker.announce_for_permission(tool_call_id, workspace) {
        actions.push(Action::Update(announcement));
    }
    // Read after the announcement, which changes the tracker.
    let (name, input) = tool_view(tracker, tool_call_id, tool_name, detail);
    let title = match summary {
        "" => default_title(&name, input.as_deref(), workspace),
        summary => summary.to_string(),
    };
    let found = locations(input.as_deref(), workspace);
    let diff: Vec<Value> = input_diff(&name, input.as_deref(), workspace).into_iter().collect();
    // Written from borrowed parts: a write's input can be megabytes (F-20).
    let tool_call = ToolCallUpdate {
        title: Some(&title),
        kind: Some(tool_kind(&name)),
        raw_input: input.as_deref(),
        locations: (!found.is_empty()).then_some(&found[..]),
        content: (!diff.is_empty()).then_some(&diff[..]),
        ..ToolCallUpdate::new(tool_call_id)
    };
    let acp_options: Vec<PermissionOption<'_>> = options
        .iter()
        .map(|o| PermissionOption {
            id: &o.id,
            name: &o.label,
            kind: OptionKind::of(o.decision == Ok(Decision::Allow), o.remembers),
        })
        .collect();
    actions.push(interaction(key, permission::request(&tool_call, &acp_options, &deny)));
    Ok((
        actions,
        Pending::Permission { options: options.into_iter().map(|o| o.id).collect(), deny },
        None,
    ))
}

// ----- structured input ----------------------------------------------------------------------

/// The plan approval as the client can be asked it: one required `optionId` choice, or a
/// permission without forms (no tool call named by an empty id).
fn ask_plan(
    forms: bool,
    key: &str,
    tool_call_id: Option<&str>,
    message: &str,
    choices: &[Choice],
    rejecting: &[&str],
    deny: Option<&str>,
) -> InteractionRequest {
    let tool_call_id = tool_call_id.filter(|id| !id.is_empty());
    // The plan is shown as a proposal (`PlanView`): the question needs no copy of it.
    ask_approval(forms, key, tool_call_id, message, None, choices, rejecting, deny)
}

fn questions(fields: &Fields<'_>) -> Result<Vec<Question>, MapperError> {
    let Some(items) = fields.opt_array("questions")? else {
        return Ok(Vec::new());
    };
    items
        .iter()
        .map(|item| {
            let q = Fields::native(item, "userInput question")?;
            let text = q.non_empty_str("question")?;
            let header = q.str("header")?;
            let mut choices = Vec::new();
            for option in q.array("options")? {
                let o = Fields::native(option, "userInput option")?;
                let value = o.str("value")?;
                if value == FREE_TEXT_OPTION {
                    continue;
                }
                choices.push(Choice::new(value, o.str("label")?, o.opt_str("description")?));
            }
            // A question without options is answered with free text, even if multi-select.
            let multi = q.opt_bool("multiSelect")?.unwrap_or(false);
            let title = if header.is_empty() { text } else { header };
            Ok(Question::new(title, text, choices, multi))
        })
        .collect()
}

fn user_input(
    key: &str,
    payload: &Value,
    shown: Shown,
    plan: &mut PlanView,
) -> Result<Surfaced, MapperError> {
    let Shown { running, plan_operations, forms } = shown;
    let fields = Fields::native(payload, "userInput request")?;
    let prompt = fields.str("prompt")?;
    let free_text = fields.bool("freeText")?;
    let tool_call_id = fields.opt_str("toolCallId")?;
    let questions = questions(&fields)?;
    let refuse = |why: &str, problem: Option<MapperError>| -> Result<Surfaced, MapperError> {
        Ok((headless(key, why), Pending::Decline, problem))
    };
    let is_plan = fields.get("schema").and_then(|s| s.get("interaction")).and_then(Value::as_str)
        == Some("plan_approval");
    if is_plan {
        let checked = plan_text(fields.get("input"))
            .ok_or_else(|| protocol("ZCode plan approval has no plan content"))
            .and_then(|content| match questions.as_slice() {
                [question] if !question.multi && !question.choices.is_empty() => {
                    Ok((content, question))
                }
                _ => {
                    Err(protocol("ZCode plan approval must ask exactly one single-choice question"))
                }
            });
        let (content, question) = match checked {
            Ok(found) => found,
            Err(problem) => return refuse(PLAN_FAILED, Some(problem)),
        };
        if !running {
            return refuse(NO_CLIENT_FOR_PLAN, None);
        }
        let message = if prompt.is_empty() { question.text.as_str() } else { prompt };
        let interaction_id = key.trim_start_matches("interaction:");
        let mut actions: Vec<Action> = plan
            .publish(plan_operations, interaction_id, content)
            .into_iter()
            .map(Action::Update)
            .collect();
        // ZCode's refusal here is a decline: without forms, "keep planning" declines.
        let request = ask_plan(forms, key, tool_call_id, message, &question.choices, &[], None);
        actions.push(interaction(key, request));
        let pending = Pending::PlanQuestion {
            question: question.text.clone(),
            values: question.choices.iter().map(|choice| choice.value.clone()).collect(),
        };
        return Ok((actions, pending, None));
    }
    if fields.opt_bool("sensitive")? == Some(true) {
        let problem = error(
            ErrorKind::Unsupported,
            "ZCode asks for sensitive input, which only ZCode itself may collect",
        );
        return refuse("ZCode asks for sensitive input", Some(problem));
    }
    let message = if prompt.is_empty() { QUESTION_MESSAGE_FALLBACK } else { prompt };
    let tool_call_id = tool_call_id.filter(|id| !id.is_empty());
    let (request, pending) = if questions.is_empty() {
        let options: Vec<(String, String)> = match fields.opt_array("options")? {
            Some(options) => options
                .iter()
                .map(|o| {
                    let o = Fields::native(o, "userInput option")?;
                    Ok((o.non_empty_str("optionId")?.to_string(), o.str("label")?.to_string()))
                })
                .collect::<Result<_, MapperError>>()?,
            None => Vec::new(),
        };
        if options.is_empty() && !free_text {
            let problem = error(
                ErrorKind::Unsupported,
                "ZCode requested structured input without anything to answer",
            );
            return refuse(NO_CLIENT_FOR_INPUT, Some(problem));
        }
        let choices: Vec<Choice> =
            options.iter().map(|(id, label)| Choice::new(id, label, None)).collect();
        // One choice among options, or free text: the single question of `elicit::ask`.
        let question = Question::new(message, message, choices, false);
        let request = if forms {
            let schema = question.schema();
            let form = elicit::form(message, tool_call_id, vec![("answer_0".to_string(), schema)]);
            InteractionRequest::Elicitation(form)
        } else {
            elicit::ask(forms, key, message, tool_call_id, std::slice::from_ref(&question))
        };
        (request, Pending::Single { options: options.into_iter().map(|(id, _)| id).collect() })
    } else {
        let request = elicit::ask(forms, key, message, tool_call_id, &questions);
        (request, Pending::Questions { questions })
    };
    if !running {
        return refuse(NO_CLIENT_FOR_INPUT, None);
    }
    Ok((vec![interaction(key, request)], pending, None))
}

// ----- answers -------------------------------------------------------------------------------

/// The option id a plan approval form was answered with.
fn selected_plan_option(outcome: &InteractionOutcome) -> Option<String> {
    match approval(outcome) {
        Approval::Chose(id) => Some(id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn surface(
        list: Value,
        running: bool,
    ) -> (Interactions, Vec<Action>, Option<MapperError>, PlanView) {
        surface_for(list, running, true)
    }

    fn surface_for(
        list: Value,
        running: bool,
        forms: bool,
    ) -> (Interactions, Vec<Action>, Option<MapperError>, PlanView) {
        let mut interactions = Interactions::default();
        let mut tracker = Tracker::default();
        let mut plan = PlanView::default();
        let cx = Context {
            workspace: "/w",
            running,
            plan_operations: true,
            forms,
            tracker: &mut tracker,
            plan: &mut plan,
        };
        let (actions, problem) = interactions.surface(list.as_array().unwrap(), cx).unwrap();
        (interactions, actions, problem, plan)
    }

    fn permission_item(options: Value) -> Value {
        json!([{"interactionId": "i1", "kind": "permission", "anchorRowId": 3, "createdAt": 1,
                "payload": {"kind": "permission", "toolCallId": "c1", "toolName": "Bash", "summary": "Run ls",
                            "detail": {"command": "ls"}, "options": options}}])
    }

    fn answer(key: &str, outcome: InteractionOutcome) -> InteractionAnswer {
        InteractionAnswer { key: key.into(), outcome }
    }

    #[test]
    fn permissions_map_options_and_answer_once() {
        let options = json!([
            {"optionId": "allowOnce", "label": "Allow once", "kind": "allowOnce"},
            {"optionId": "allowAlways", "label": "Always allow in this project", "kind": "allowAlways", "response": {"decision": "allow", "permissionUpdates": [{}]}},
            {"optionId": "deny", "label": "Deny", "kind": "deny"},
        ]);
        let (mut interactions, actions, problem, mut plan) =
            surface(permission_item(options.clone()), true);
        assert!(problem.is_none());
        let [
            Action::Interaction(Interaction {
                key,
                request: InteractionRequest::Permission(request),
            }),
        ] = actions.as_slice()
        else {
            panic!("{actions:?}")
        };
        assert_eq!(key, "interaction:i1");
        assert_eq!(request.deny_option, "deny");
        let acp: Value = serde_json::from_str(&request.request).unwrap();
        assert_eq!(
            acp["toolCall"],
            json!({"toolCallId": "c1", "title": "Run ls", "kind": "execute", "rawInput": {"command": "ls"}})
        );
        let kinds: Vec<_> = acp["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
        let selected = interactions
            .answer(&answer(key, InteractionOutcome::Selected("allowOnce".into())), true, &mut plan)
            .unwrap();
        assert_eq!(
            (selected.interaction_id.as_str(), selected.answer.unwrap()),
            ("i1", json!({"optionId": "allowOnce"}))
        );
        assert!(
            interactions
                .answer(
                    &answer(key, InteractionOutcome::Selected("allowOnce".into())),
                    true,
                    &mut plan
                )
                .is_err()
        );
        // The same list again surfaces nothing.
        let mut tracker = Tracker::default();
        let cx = Context {
            workspace: "/w",
            running: true,
            plan_operations: true,
            forms: true,
            tracker: &mut tracker,
            plan: &mut plan,
        };
        assert!(
            interactions
                .surface(permission_item(options).as_array().unwrap(), cx)
                .unwrap()
                .0
                .is_empty()
        );
    }

    #[test]
    fn anything_but_an_offered_option_denies() {
        let options = json!([{"optionId": "ok", "label": "Allow", "kind": "allowOnce"}, {"optionId": "no", "label": "Deny", "kind": "deny"}]);
        let (mut interactions, _, _, mut plan) = surface(permission_item(options), true);
        let denied = interactions
            .answer(
                &answer("interaction:i1", InteractionOutcome::Selected("fullAccess".into())),
                true,
                &mut plan,
            )
            .unwrap();
        assert_eq!(denied.answer.unwrap(), json!({"optionId": "no"}));
    }

    #[test]
    fn refuses_what_cannot_be_shown() {
        let outside = json!([{"optionId": "ok", "label": "Allow", "kind": "allowOnce"}, {"optionId": "no", "label": "Deny", "kind": "deny"}]);
        let (mut interactions, actions, problem, mut plan) =
            surface(permission_item(outside), false);
        assert!(matches!(
            &actions[0],
            Action::Interaction(Interaction { request: InteractionRequest::Headless(_), .. })
        ));
        assert!(problem.is_none());
        assert_eq!(
            interactions
                .answer(
                    &answer("interaction:i1", InteractionOutcome::Unavailable("x".into())),
                    true,
                    &mut plan
                )
                .unwrap()
                .answer
                .unwrap(),
            json!({"optionId": "no"})
        );
        let escalate = json!([{"optionId": "up", "label": "Escalate", "kind": "custom", "response": {"decision": "escalate"}}, {"optionId": "no", "label": "Deny", "kind": "deny"}]);
        let (_, _, problem, _) = surface(permission_item(escalate), true);
        assert_eq!(
            problem.unwrap().message,
            "Native permission decision cannot be represented in ACP v1: escalate"
        );
        let mut interactions = Interactions::default();
        let mut tracker = Tracker::default();
        let mut plan = PlanView::default();
        let no_deny =
            permission_item(json!([{"optionId": "ok", "label": "Allow", "kind": "allowOnce"}]));
        let cx = Context {
            workspace: "/w",
            running: true,
            plan_operations: true,
            forms: true,
            tracker: &mut tracker,
            plan: &mut plan,
        };
        assert_eq!(
            interactions.surface(no_deny.as_array().unwrap(), cx).err().unwrap().message,
            "ZCode permission request does not provide a native deny option"
        );
        let twice = permission_item(
            json!([{"optionId": "x", "label": "Allow", "kind": "allowOnce"}, {"optionId": "x", "label": "Deny", "kind": "deny"}]),
        );
        let mut tracker = Tracker::default();
        let cx = Context {
            workspace: "/w",
            running: true,
            plan_operations: true,
            forms: true,
            tracker: &mut tracker,
            plan: &mut plan,
        };
        assert!(Interactions::default().surface(twice.as_array().unwrap(), cx).is_err());
        let hooks = json!([{"interactionId": "h", "kind": "workspaceHookReview", "anchorRowId": null, "createdAt": 1, "payload": {"kind": "workspaceHookReview", "interactionId": "h"}}]);
        let (mut interactions, actions, problem, mut plan) = surface(hooks, true);
        assert!(matches!(
            &actions[0],
            Action::Interaction(Interaction { request: InteractionRequest::Headless(_), .. })
        ));
        assert!(problem.unwrap().message.contains("zcode hooks trust"));
        assert!(
            interactions
                .answer(
                    &answer("interaction:h", InteractionOutcome::Unavailable("x".into())),
                    true,
                    &mut plan
                )
                .unwrap()
                .answer
                .is_none()
        );
    }

    #[test]
    fn questions_become_forms_and_answers_native_content() {
        let list = json!([{"interactionId": "q", "kind": "userInput", "anchorRowId": 1, "createdAt": 1,
            "payload": {"kind": "userInput", "prompt": "Pick", "freeText": false, "toolName": "AskUserQuestion", "toolCallId": "c9",
                        "questions": [{"question": "Which?", "header": "Choice", "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]}]}}]);
        let (mut interactions, actions, _, mut plan) = surface(list, true);
        let Action::Interaction(Interaction {
            request: InteractionRequest::Elicitation(form), ..
        }) = &actions[0]
        else {
            panic!()
        };
        let form: Value = serde_json::from_str(form).unwrap();
        assert_eq!(form["toolCallId"], "c9");
        assert_eq!(
            form["requestedSchema"]["properties"]["answer_0"]["oneOf"][1],
            json!({"const": "b", "title": "B"})
        );
        let accepted = interactions
            .answer(
                &answer(
                    "interaction:q",
                    InteractionOutcome::Elicited(
                        r#"{"action":"accept","content":{"answer_0":"b"}}"#.into(),
                    ),
                ),
                true,
                &mut plan,
            )
            .unwrap();
        assert_eq!(
            accepted.answer.unwrap(),
            json!({"action": "accept", "content": {"answer_0": "b", "answers": {"Which?": ["b"]}, "answer": "b"}})
        );
    }

    #[test]
    fn plan_approval_shows_the_plan_and_approves() {
        let list = json!([{"interactionId": "p", "kind": "userInput", "anchorRowId": 1, "createdAt": 1,
            "payload": {"kind": "userInput", "prompt": "", "freeText": false, "input": {"plan": "# Plan"}, "schema": {"interaction": "plan_approval"},
                        "questions": [{"question": "Review this implementation plan.", "header": "Plan", "options": [{"value": "approve", "label": "Approve"}]}]}}]);
        let (mut interactions, actions, _, mut plan) = surface(list, true);
        assert!(matches!(&actions[0], Action::Update(update) if update.contains("plan_update")));
        let approved = interactions
            .answer(
                &answer(
                    "interaction:p",
                    InteractionOutcome::Elicited(
                        r#"{"action":"accept","content":{"optionId":"approve"}}"#.into(),
                    ),
                ),
                true,
                &mut plan,
            )
            .unwrap();
        assert!(approved.plan_approved);
        assert_eq!(approved.answer.unwrap()["content"]["answer"], "approve");
    }

    fn asked(actions: &[Action]) -> &InteractionRequest {
        actions
            .iter()
            .find_map(|a| match a {
                Action::Interaction(i) => Some(&i.request),
                _ => None,
            })
            .expect("an interaction")
    }

    fn permission_of(request: &InteractionRequest) -> (Value, &str) {
        let InteractionRequest::Permission(p) = request else { panic!("{request:?}") };
        (serde_json::from_str(&p.request).unwrap(), &p.deny_option)
    }

    /// A client without form elicitation (issue 26): plan approval and one single-choice
    /// question are permissions, other questions are declined.
    #[test]
    fn without_forms_questions_are_permissions_or_declined() {
        let options = json!([{"optionId": "ok", "label": "Approve", "kind": "allowOnce"}, {"optionId": "no", "label": "Keep planning", "kind": "deny"}]);
        let mut plan_item = permission_item(options);
        plan_item[0]["payload"]["toolName"] = json!("ExitPlanMode");
        plan_item[0]["payload"]["detail"] = json!({"plan": "# Plan"});
        let (mut interactions, actions, problem, mut plan) = surface_for(plan_item, true, false);
        assert!(problem.is_none());
        let (request, deny) = permission_of(asked(&actions));
        assert_eq!(deny, "no");
        assert_eq!(
            request["options"],
            json!([{"optionId": "ok", "name": "Approve", "kind": "allow_once"},
                   {"optionId": "no", "name": "Keep planning", "kind": "reject_once"}])
        );
        let approved = interactions
            .answer(
                &answer("interaction:i1", InteractionOutcome::Selected("ok".into())),
                true,
                &mut plan,
            )
            .unwrap();
        assert!(approved.plan_approved);
        assert_eq!(approved.answer.unwrap(), json!({"optionId": "ok"}));

        let plan_input = json!([{"interactionId": "p", "kind": "userInput", "anchorRowId": 1, "createdAt": 1,
            "payload": {"kind": "userInput", "prompt": "", "freeText": false, "input": {"plan": "# Plan"}, "schema": {"interaction": "plan_approval"},
                        "questions": [{"question": "Review this implementation plan.", "header": "Plan", "options": [{"value": "approve", "label": "Approve"}]}]}}]);
        let (mut interactions, actions, _, mut plan) = surface_for(plan_input, true, false);
        let (request, deny) = permission_of(asked(&actions));
        assert_eq!(deny, permission::DECLINE_OPTION);
        assert_eq!(request["options"][1]["kind"], "reject_once");
        let kept = InteractionOutcome::Selected(permission::DECLINE_OPTION.into());
        let kept = interactions.answer(&answer("interaction:p", kept), true, &mut plan).unwrap();
        assert!(!kept.plan_approved);
        assert_eq!(kept.answer.unwrap(), json!({"action": "decline"}));

        let single = json!([{"interactionId": "q", "kind": "userInput", "anchorRowId": 1, "createdAt": 1,
            "payload": {"kind": "userInput", "prompt": "Pick", "freeText": false, "toolCallId": "c9",
                        "questions": [{"question": "Which?", "header": "Choice", "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]}]}}]);
        let (mut interactions, actions, _, mut plan) = surface_for(single, true, false);
        let (request, _) = permission_of(asked(&actions));
        assert_eq!(request["toolCall"], json!({"toolCallId": "c9", "title": "Which?"}));
        let chose = InteractionOutcome::Selected("b".into());
        let chose = interactions.answer(&answer("interaction:q", chose), true, &mut plan).unwrap();
        assert_eq!(
            chose.answer.unwrap(),
            json!({"action": "accept", "content": {"answer_0": "b", "answers": {"Which?": ["b"]}, "answer": "b"}})
        );

        let options_only = json!([{"interactionId": "o", "kind": "userInput", "anchorRowId": 1, "createdAt": 1,
            "payload": {"kind": "userInput", "prompt": "Pick one", "freeText": false, "options": [{"optionId": "x", "label": "X"}]}}]);
        let (mut interactions, actions, _, mut plan) = surface_for(options_only, true, false);
        let (request, _) = permission_of(asked(&actions));
        assert_eq!(request["toolCall"]["toolCallId"], "zcode-acp:interaction:o");
        let chose = InteractionOutcome::Selected("x".into());
        let chose = interactions.answer(&answer("interaction:o", chose), true, &mut plan).unwrap();
        assert_eq!(chose.answer.unwrap(), json!({"optionId": "x"}));

        let free = json!([{"interactionId": "f", "kind": "userInput", "anchorRowId": 1, "createdAt": 1,
            "payload": {"kind": "userInput", "prompt": "Name it", "freeText": true}}]);
        let (mut interactions, actions, problem, mut plan) = surface_for(free, true, false);
        assert!(problem.is_none(), "the turn goes on");
        let InteractionRequest::Headless(why) = asked(&actions) else { panic!("{actions:?}") };
        assert_eq!(why, elicit::NO_FORMS);
        let declined = InteractionOutcome::Unavailable(why.clone());
        let declined =
            interactions.answer(&answer("interaction:f", declined), true, &mut plan).unwrap();
        assert_eq!(declined.answer.unwrap(), json!({"action": "decline"}));
    }
}
