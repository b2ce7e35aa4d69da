//! Ordinary permission (`permission.request` for any tool but `ExitPlanMode`): the tool is
//! announced, the native options become ACP permission options, and an answer that is not one
//! of them selects the native deny option.

use serde_json::Value;
use zcode_mapper_sdk::acp::permission::{self, Offered, OptionKind, PermissionOption};
use zcode_mapper_sdk::acp::{self, update::ToolCallUpdate};
use zcode_mapper_sdk::contract::{Action, InteractionOutcome, MapperError};
use zcode_mapper_sdk::json::{Fields, protocol};

use super::{Pending, Target, plan, refuse, unsupported};
use crate::ops::{self, Outbound};
use crate::state::State;
use crate::tools::tool_kind;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Decision {
    Allow,
    Deny,
}

/// An ordinary permission the host waits on.
#[derive(Clone, Debug)]
pub(super) struct Asked {
    request_id: String,
    offered: Offered,
}

pub(super) struct NativeOption {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub decision: Result<Decision, String>,
    pub remembers: bool,
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

/// A validated `permission.request`.
pub(super) struct NativePermission<'a> {
    pub key: String,
    pub request_id: &'a str,
    pub tool_call_id: &'a str,
    pub tool_name: &'a str,
    pub reason: &'a str,
    pub input: &'a Value,
    pub options: Vec<NativeOption>,
    /// The first option whose decision is `deny`.
    pub deny: String,
}

impl NativePermission<'_> {
    pub fn deny_pending(&self) -> Pending {
        Pending::Deny { request_id: self.request_id.to_string(), option: self.deny.clone() }
    }

    /// An option whose decision ACP cannot express, if any.
    pub fn unrepresentable(&self) -> Option<&str> {
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
        return Err(protocol(if tool_name == plan::PLAN_TOOL {
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
    if permission.tool_name == plan::PLAN_TOOL {
        Ok(plan::permission(state, permission))
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
        actions.push(Action::Update(announcement));
    }
    let options: Vec<PermissionOption<'_>> = permission
        .options
        .iter()
        .map(|o| PermissionOption {
            id: &o.id,
            name: &o.name,
            kind: OptionKind::of(o.decision == Ok(Decision::Allow), o.remembers),
        })
        .collect();
    let title = if reason.is_empty() {
        crate::tools::default_title(tool_name, Some(input), &state.workspace)
    } else {
        reason.to_string()
    };
    let locations = crate::tools::locations(Some(input), &state.workspace);
    // The change itself, so the user sees what they allow.
    let diff: Vec<Value> =
        crate::tools::input_diff(tool_name, Some(input), &state.workspace).into_iter().collect();
    let tool_call = ToolCallUpdate {
        title: Some(&title),
        kind: Some(tool_kind(tool_name)),
        raw_input: Some(input),
        locations: (!locations.is_empty()).then_some(&locations[..]),
        content: (!diff.is_empty()).then_some(&diff[..]),
        ..ToolCallUpdate::new(tool_call_id)
    };
    let request = permission::request(&tool_call, &options, &permission.deny);
    let offered = Offered::new(permission.options.iter().map(|o| o.id.clone()), &permission.deny);
    state
        .interactions
        .register(key, Pending::Permission(Asked { request_id: request_id.to_string(), offered }));
    actions.push(acp::interaction(key, request));
    actions
}

pub(super) fn respond(to: Target<'_>, request_id: &str, option: &str) -> Outbound {
    ops::respond_permission(to.workspace, to.session_id, request_id, option)
}

/// The chosen option if the native side offered it, else the native deny.
pub(super) fn answer(to: Target<'_>, asked: Asked, outcome: &InteractionOutcome) -> Outbound {
    respond(to, &asked.request_id, asked.offered.choose(outcome))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use zcode_mapper_sdk::contract::{
        Action, ErrorKind, InteractionAnswer, InteractionOutcome, InteractionRequest, SessionOp,
    };

    use crate::test_support::*;

    #[test]
    fn asks_permission_with_lossless_options() {
        let mut driver = running(true, true);
        let actions = driver.event(permission_event("perm-1", "Bash", allow_deny_options()));
        assert_eq!(update_kinds(&updates_of(&actions)), ["tool_call"]);
        let (key, request) = interaction(&actions);
        assert_eq!(key, "permission:perm-1");
        let InteractionRequest::Permission(permission) = request else {
            panic!("permission expected")
        };
        assert_eq!(permission.deny_option, "deny");
        let acp: Value = serde_json::from_str(&permission.request).unwrap();
        assert_eq!(
            acp,
            json!({
                "toolCall": {"toolCallId": "tool-1", "title": "Run tests", "kind": "execute", "rawInput": {"command": "bun test", "plan": "# Plan\n\n1. Do it"}},
                "options": [
                    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "always", "name": "Always", "kind": "allow_always"},
                    {"optionId": "deny", "name": "Deny", "kind": "reject_once"},
                ]
            })
        );
        let run = driver.answer(
            "permission:perm-1",
            InteractionOutcome::Selected("always".into()),
            ok(Value::Null),
        );
        assert_eq!(run.methods(), ["task.respondPermission"]);
        assert_eq!(
            run.params(0),
            &json!({"workspacePath": "/w", "requestId": "perm-1", "taskId": "session-1", "optionId": "always"})
        );
        // Exactly once: a second answer is refused without any request.
        let run = driver.run(
            SessionOp::Answer(InteractionAnswer {
                key: "permission:perm-1".into(),
                outcome: InteractionOutcome::Selected("allow".into()),
            }),
            vec![],
        );
        assert!(run.requests.is_empty());
        assert_eq!(
            (run.error().kind, run.error().message.as_str()),
            (ErrorKind::Internal, "Unknown or already answered interaction: permission:perm-1")
        );
        // A re-delivered request is not asked again.
        assert_eq!(
            driver.event(permission_event("perm-1", "Bash", allow_deny_options())),
            [Action::Ignore("re-delivered interaction permission:perm-1".into())]
        );
    }

    #[test]
    fn denies_whenever_the_answer_is_not_a_known_option() {
        for outcome in [
            InteractionOutcome::Selected("nonsense".into()),
            InteractionOutcome::Unavailable("client went away".into()),
            InteractionOutcome::Elicited("{\"action\":\"accept\"}".into()),
        ] {
            let mut driver = running(true, true);
            driver.event(permission_event("p", "Bash", allow_deny_options()));
            let run = driver.answer("permission:p", outcome, ok(Value::Null));
            assert_eq!(run.params(0)["optionId"], "deny");
        }
    }

    #[test]
    fn fails_closed_on_permissions_acp_cannot_show() {
        let mut driver = running(true, true);
        let options = json!([
            {"optionId": "allow", "kind": "allow_once", "name": "Allow", "response": {"decision": "allow"}},
            {"optionId": "esc", "kind": "escalate", "name": "Escalate", "response": {"decision": "escalate"}},
            {"optionId": "deny", "kind": "reject_once", "name": "Deny", "response": {"decision": "deny"}},
        ]);
        let actions = driver.event(permission_event("p", "Bash", options));
        assert!(matches!(interaction(&actions), ("permission:p", InteractionRequest::Headless(_))));
        assert_eq!(
            broken_message(&actions),
            "Native permission decision cannot be represented in ACP v1: escalate"
        );
        let run = driver.answer(
            "permission:p",
            InteractionOutcome::Unavailable("headless".into()),
            ok(Value::Null),
        );
        assert_eq!(run.params(0)["optionId"], "deny");

        let mut driver = running(true, true);
        let options = json!([{"optionId": "allow", "kind": "allow_once", "name": "Allow", "response": {"decision": "allow"}}]);
        let actions = driver.event(permission_event("p", "Bash", options));
        assert_eq!(
            broken_message(&actions),
            "ZCode permission request does not provide a native deny option"
        );
        assert!(actions.iter().all(|a| !matches!(a, Action::Interaction(_))));

        // One id on an allowing and a denying option: ZCode would resolve any answer under that
        // id to the first, allowing, option, so nothing may be answered at all.
        let mut driver = running(true, true);
        let options = json!([
            {"optionId": "x", "kind": "allow_once", "name": "Allow", "response": {"decision": "allow"}},
            {"optionId": "x", "kind": "reject_once", "name": "Deny", "response": {"decision": "deny"}},
        ]);
        let actions = driver.event(permission_event("p", "Bash", options));
        assert_eq!(broken_message(&actions), "permission.request: option id `x` is not unique");
        assert!(actions.iter().all(|a| !matches!(a, Action::Interaction(_))));

        let mut driver = running(true, true);
        let mut event = permission_event("p", "Bash", allow_deny_options());
        event["request"]["extra"] = json!(true);
        assert_eq!(
            broken_message(&driver.event(event)),
            "permission.request: unexpected field `extra`"
        );
    }

    #[test]
    fn denies_permissions_outside_a_turn_headlessly() {
        let mut driver = Driver::<Plain>::new(true, true);
        driver.create();
        let actions = driver.event(permission_event("p", "Bash", allow_deny_options()));
        assert_eq!(actions.len(), 1);
        assert!(matches!(interaction(&actions), ("permission:p", InteractionRequest::Headless(_))));
        let run = driver.answer(
            "permission:p",
            InteractionOutcome::Unavailable("no prompt".into()),
            ok(Value::Null),
        );
        assert_eq!(run.params(0)["optionId"], "deny");
    }
}
