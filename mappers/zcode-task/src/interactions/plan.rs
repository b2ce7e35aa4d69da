//! Plan approval: ZCode asks to leave plan mode either as an `ExitPlanMode` permission (source
//! B) or as a `plan_approval` structured-input request (source A). Both become one form with a
//! single choice, the plan is published while the question is open (`crate::plan`), and only an
//! explicit approving choice approves; anything else rejects and takes the proposal down.

use serde_json::{Value, json};
use zcode_mapper_sdk::acp::elicit::Choice;
use zcode_mapper_sdk::acp::plan::{Approval, approval, ask_approval};
use zcode_mapper_sdk::acp::{self};
use zcode_mapper_sdk::contract::{Action, InteractionOutcome, MapperError};
use zcode_mapper_sdk::json::protocol;

use super::permission::{Decision, NativePermission};
use super::questions::{InputRequest, decline_reply, reply};
use super::{Answered, Pending, Target, refuse};
use crate::ops::{self, ElicitationReply};
use crate::state::State;

pub(super) const PLAN_TOOL: &str = "ExitPlanMode";
const PLAN_MESSAGE_FALLBACK: &str = "Review this implementation plan.";
pub(super) const PLAN_FAILED: &str = "Plan approval request failed";
const NO_CLIENT_FOR_PLAN: &str = "No active client can approve the plan";

/// A plan approval asked as a permission: the native options that decide, and the deny.
#[derive(Clone, Debug)]
pub(super) struct AskedAsPermission {
    request_id: String,
    options: Vec<(String, Decision)>,
    deny: String,
}

/// A plan approval asked as a question: its text and the values that approve.
#[derive(Clone, Debug)]
pub(super) struct AskedAsQuestion {
    request_id: String,
    question: String,
    values: Vec<String>,
}

fn plan_text(input: Option<&Value>) -> Result<&str, MapperError> {
    input
        .and_then(|input| input.get("plan"))
        .and_then(Value::as_str)
        .filter(|plan| !plan.trim().is_empty())
        .ok_or_else(|| protocol("ZCode plan approval has no plan content"))
}

/// Plan approval asked as an `ExitPlanMode` permission (source B).
pub(super) fn permission(state: &mut State, permission: NativePermission<'_>) -> Vec<Action> {
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
    let choices: Vec<Choice> = permission
        .options
        .iter()
        .map(|o| Choice::new(&o.id, &o.name, o.description.as_deref()))
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
        Pending::PlanPermission(AskedAsPermission {
            request_id: permission.request_id.to_string(),
            options,
            deny: permission.deny.clone(),
        }),
    );
    let rejecting: Vec<&str> = permission
        .options
        .iter()
        .filter(|o| o.decision == Ok(Decision::Deny))
        .map(|o| o.id.as_str())
        .collect();
    let forms = state.forms();
    let tool_call_id = Some(permission.tool_call_id);
    let deny = Some(permission.deny.as_str());
    let request = ask_approval(forms, key, tool_call_id, message, None, &choices, &rejecting, deny);
    actions.push(acp::interaction(key, request));
    actions
}

/// Plan approval asked as a `plan_approval` structured-input request (source A).
pub(super) fn question(state: &mut State, request: InputRequest<'_>) -> Vec<Action> {
    let InputRequest { key, request_id, tool_call_id, prompt, questions, input } = request;
    let decline = |reason: &str| Pending::Decline {
        request_id: request_id.to_string(),
        reason: reason.to_string(),
    };
    let checked = plan_text(input).and_then(|plan| match questions.as_slice() {
        [question] if !question.multi && !question.choices.is_empty() => Ok((plan, question)),
        _ => Err(protocol("ZCode plan approval must ask exactly one single-choice question")),
    });
    let (plan, question) = match checked {
        Ok(found) => found,
        Err(problem) => {
            return refuse(state, &key, decline(PLAN_FAILED), PLAN_FAILED, Some(problem));
        }
    };
    if !state.running() {
        return refuse(state, &key, decline(NO_CLIENT_FOR_PLAN), NO_CLIENT_FOR_PLAN, None);
    }
    let message = prompt.unwrap_or(&question.text);
    let plan_operations = state.plan_operations();
    let mut actions: Vec<Action> = state
        .plan
        .publish(plan_operations, request_id, plan)
        .into_iter()
        .map(Action::Update)
        .collect();
    state.interactions.register(
        &key,
        Pending::PlanQuestion(AskedAsQuestion {
            request_id: request_id.to_string(),
            question: question.text.clone(),
            values: question.choices.iter().map(|choice| choice.value.clone()).collect(),
        }),
    );
    // ZCode's refusal here is a decline: without forms, "keep planning" declines.
    let request = ask_approval(
        state.forms(),
        &key,
        tool_call_id,
        message,
        None,
        &question.choices,
        &[],
        None,
    );
    actions.push(acp::interaction(&key, request));
    actions
}

pub(super) fn answer_permission(
    state: &mut State,
    to: Target<'_>,
    asked: AskedAsPermission,
    outcome: &InteractionOutcome,
) -> Answered {
    let plan_operations = state.plan_operations();
    let respond =
        |id: &str| ops::respond_permission(to.workspace, to.session_id, &asked.request_id, id);
    let chosen = match approval(outcome) {
        Approval::Chose(id) => asked.options.iter().find(|(option, _)| *option == id),
        _ => None,
    };
    match chosen {
        Some((id, Decision::Allow)) => {
            Answered::approving(state.plan.accept(plan_operations), respond(id))
        }
        Some((id, Decision::Deny)) => {
            Answered::with_updates(state.plan.remove(plan_operations), respond(id))
        }
        None => Answered::with_updates(state.plan.remove(plan_operations), respond(&asked.deny)),
    }
}

pub(super) fn answer_question(
    state: &mut State,
    to: Target<'_>,
    asked: AskedAsQuestion,
    outcome: &InteractionOutcome,
) -> Answered {
    let plan_operations = state.plan_operations();
    let AskedAsQuestion { request_id, question, values } = asked;
    match approval(outcome) {
        Approval::Chose(id) if values.contains(&id) => {
            let content = json!({"answer_0": id, "answers": {question: [id]}, "answer": id});
            Answered::approving(
                state.plan.accept(plan_operations),
                reply(to, &request_id, ElicitationReply::Accept(content)),
            )
        }
        Approval::Chose(_) | Approval::Unanswered => {
            let reason = match outcome {
                InteractionOutcome::Unavailable(reason) => reason.clone(),
                _ => PLAN_FAILED.to_string(),
            };
            Answered::with_updates(
                state.plan.remove(plan_operations),
                decline_reply(to, &request_id, Some(reason)),
            )
        }
        Approval::Cancelled => Answered::with_updates(
            state.plan.remove(plan_operations),
            reply(to, &request_id, ElicitationReply::Cancel),
        ),
        Approval::Declined => Answered::with_updates(
            state.plan.remove(plan_operations),
            decline_reply(to, &request_id, None),
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use zcode_mapper_sdk::contract::{
        Action, InteractionOutcome, InteractionRequest, SessionOp, StopReason, Terminal,
    };

    use crate::test_support::*;

    #[test]
    fn approves_plans_asked_as_permissions() {
        let mut driver = running(true, true);
        let actions =
            driver.event(permission_event("plan-1", "ExitPlanMode", plan_permission_options()));
        assert_eq!(
            updates_of(&actions),
            [
                json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "zcode-plan-proposal:plan-1", "content": "# Plan\n\n1. Do it"}})
            ]
        );
        let (key, request) = interaction(&actions);
        assert_eq!(key, "permission:plan-1");
        let InteractionRequest::Elicitation(form) = request else { panic!("elicitation expected") };
        let form: Value = serde_json::from_str(form).unwrap();
        assert_eq!(
            form["requestedSchema"]["properties"]["optionId"],
            json!({"type": "string", "title": "Plan approval", "description": "Run tests",
            "oneOf": [{"const": "allow-plan", "title": "Approve"}, {"const": "deny-plan", "title": "Reject"}]})
        );
        assert_eq!(form["requestedSchema"]["required"], json!(["optionId"]));
        let accept = json!({"action": "accept", "content": {"optionId": "allow-plan"}});
        let run = driver.answer(
            "permission:plan-1",
            InteractionOutcome::Elicited(accept.to_string()),
            ok(Value::Null),
        );
        assert_eq!(run.params(0)["optionId"], "allow-plan");
        assert!(run.updates().is_empty(), "an accepted plan stays shown");
        driver.session_event("turn.completed", json!({"resultType": "success"}));
        let usage = json!({"totalTokens": 0, "inputTokens": 0, "outputTokens": 0, "reasoningTokens": 0, "cacheCreationTokens": 0, "cacheReadTokens": 0});
        let mut renamed = snapshot_json();
        renamed["session"]["title"] = json!("Renamed");
        let run = driver.run(SessionOp::FinishTurn, vec![ok(usage), ok(renamed)]);
        assert_eq!(
            run.updates().last().unwrap(),
            &json!({"sessionUpdate": "plan_removed", "planId": "zcode-plan-proposal:plan-1"})
        );
    }

    #[test]
    fn removes_rejected_or_unanswerable_plan_proposals() {
        let cases = [
            (InteractionOutcome::Elicited(json!({"action": "decline"}).to_string()), "deny-plan"),
            (
                InteractionOutcome::Elicited(
                    json!({"action": "accept", "content": {"optionId": "deny-plan"}}).to_string(),
                ),
                "deny-plan",
            ),
            (
                InteractionOutcome::Elicited(
                    json!({"action": "accept", "content": {"optionId": "other"}}).to_string(),
                ),
                "deny-plan",
            ),
            (InteractionOutcome::Unavailable("The client cannot render forms".into()), "deny-plan"),
        ];
        for (outcome, option) in cases {
            let mut driver = running(true, false);
            driver.event(permission_event("plan-1", "ExitPlanMode", plan_permission_options()));
            let run = driver.answer("permission:plan-1", outcome, ok(Value::Null));
            assert_eq!(run.params(0)["optionId"], option);
            assert_eq!(
                run.updates(),
                [json!({"sessionUpdate": "plan_removed", "planId": "zcode-plan-proposal:plan-1"})]
            );
        }
    }

    #[test]
    fn refuses_malformed_plan_permissions() {
        let mut driver = running(true, true);
        let mut event = permission_event("p", "ExitPlanMode", plan_permission_options());
        event["request"]["input"] = json!({"plan": "   "});
        let actions = driver.event(event);
        assert_eq!(broken_message(&actions), "ZCode plan approval has no plan content");
        let run = driver.answer(
            "permission:p",
            InteractionOutcome::Unavailable("x".into()),
            ok(Value::Null),
        );
        assert_eq!(run.params(0)["optionId"], "deny-plan");
        let mut driver = running(true, true);
        let options = json!([{"optionId": "deny-plan", "kind": "reject_once", "name": "Reject", "response": {"decision": "deny"}}]);
        assert_eq!(
            broken_message(&driver.event(permission_event("p", "ExitPlanMode", options))),
            "ZCode plan approval must provide both allow and deny options"
        );
    }

    #[test]
    fn approves_plans_asked_as_questions() {
        let mut driver = running(false, true);
        let actions = driver.event(plan_input_event("plan-q"));
        assert_eq!(
            updates_of(&actions),
            [
                json!({"sessionUpdate": "plan", "entries": [{"content": "# Proposed plan\n\n1. Change it", "priority": "high", "status": "pending"}]})
            ]
        );
        let (key, request) = interaction(&actions);
        assert_eq!(key, "input:plan-q");
        let InteractionRequest::Elicitation(form) = request else { panic!("elicitation expected") };
        let form: Value = serde_json::from_str(form).unwrap();
        assert_eq!(form["toolCallId"], "exit-plan-tool");
        assert_eq!(
            form["requestedSchema"]["properties"]["optionId"]["oneOf"],
            json!([{"const": "approve", "title": "Approve", "description": "Exit plan mode and start implementation."}])
        );
        let accept = json!({"action": "accept", "content": {"optionId": "approve"}});
        let run = driver.answer(
            "input:plan-q",
            InteractionOutcome::Elicited(accept.to_string()),
            ok(Value::Null),
        );
        assert_eq!(
            run.params(0),
            &json!({"workspacePath": "/w", "requestId": "plan-q", "taskId": "session-1", "action": "accept",
            "content": {"answer_0": "approve", "answers": {"Review this implementation plan.": ["approve"]}, "answer": "approve"}})
        );
        assert_eq!(
            run.updates(),
            [
                json!({"sessionUpdate": "plan", "entries": [{"content": "# Proposed plan\n\n1. Change it", "priority": "high", "status": "in_progress"}]})
            ]
        );

        let mut driver = running(true, true);
        driver.event(plan_input_event("plan-q"));
        let run = driver.answer(
            "input:plan-q",
            InteractionOutcome::Elicited(json!({"action": "cancel"}).to_string()),
            ok(Value::Null),
        );
        assert_eq!(run.params(0)["action"], "cancel");
        assert_eq!(
            run.updates(),
            [json!({"sessionUpdate": "plan_removed", "planId": "zcode-plan-proposal:plan-q"})]
        );
        let mut driver = running(true, true);
        driver.event(plan_input_event("plan-q"));
        let accept = json!({"action": "accept", "content": {"optionId": "reject"}});
        let run = driver.answer(
            "input:plan-q",
            InteractionOutcome::Elicited(accept.to_string()),
            ok(Value::Null),
        );
        assert_eq!(
            (run.params(0)["action"].as_str(), run.params(0)["reason"].as_str()),
            (Some("decline"), Some("Plan approval request failed"))
        );
    }

    #[test]
    fn removes_accepted_proposals_when_cancelled_or_failed() {
        let mut driver = running(true, true);
        driver.event(plan_input_event("plan-q"));
        let accept = json!({"action": "accept", "content": {"optionId": "approve"}});
        driver.answer(
            "input:plan-q",
            InteractionOutcome::Elicited(accept.to_string()),
            ok(Value::Null),
        );
        let run = driver.run(SessionOp::Cancel, vec![ok(Value::Null)]);
        assert_eq!(
            run.updates(),
            [json!({"sessionUpdate": "plan_removed", "planId": "zcode-plan-proposal:plan-q"})]
        );
        assert_eq!(
            driver.session_event("turn.failed", json!({"error": {"message": "stopped"}})),
            [Action::Terminal(Terminal::Stop(StopReason::Cancelled))]
        );

        let mut driver = running(true, true);
        driver.event(plan_input_event("plan-q"));
        let actions = driver.session_event("turn.failed", json!({"error": {"message": "boom"}}));
        assert_eq!(
            updates_of(&actions),
            [json!({"sessionUpdate": "plan_removed", "planId": "zcode-plan-proposal:plan-q"})]
        );
        assert!(matches!(terminal(&actions), Some(Terminal::Failed(_))));
    }

    #[test]
    fn replaces_an_earlier_proposal() {
        let mut driver = running(true, true);
        driver.event(plan_input_event("one"));
        let actions = driver.event(plan_input_event("two"));
        assert_eq!(update_kinds(&updates_of(&actions)), ["plan_removed", "plan_update"]);
        assert_eq!(updates_of(&actions)[0]["planId"], "zcode-plan-proposal:one");
    }

    #[test]
    fn declines_plan_approval_outside_a_turn() {
        let mut driver = Driver::<Plain>::new(true, true);
        driver.create();
        let actions = driver.event(plan_input_event("plan-q"));
        assert_eq!(actions.len(), 1);
        assert!(matches!(interaction(&actions), ("input:plan-q", InteractionRequest::Headless(_))));
        let run = driver.answer(
            "input:plan-q",
            InteractionOutcome::Unavailable("x".into()),
            ok(Value::Null),
        );
        assert_eq!(run.params(0)["reason"], "No active client can approve the plan");
    }

    /// A client without form elicitation is asked the plan as a permission (issue 26).
    #[test]
    fn asks_plans_as_permissions_without_forms() {
        let mut driver = running(true, false);
        let actions =
            driver.event(permission_event("plan-1", "ExitPlanMode", plan_permission_options()));
        let (key, request) = interaction(&actions);
        let InteractionRequest::Permission(asked) = request else { panic!("{request:?}") };
        assert_eq!(asked.deny_option, "deny-plan");
        let asked: Value = serde_json::from_str(&asked.request).unwrap();
        assert_eq!(
            asked["options"],
            json!([{"optionId": "allow-plan", "name": "Approve", "kind": "allow_once"},
                   {"optionId": "deny-plan", "name": "Reject", "kind": "reject_once"}])
        );
        let run =
            driver.answer(key, InteractionOutcome::Selected("allow-plan".into()), ok(Value::Null));
        assert_eq!(run.params(0)["optionId"], "allow-plan");

        // Asked as a question, "keep planning" is the reject: ZCode gets a decline.
        let mut driver = running(true, false);
        let actions = driver.event(plan_input_event("plan-q"));
        let (key, request) = interaction(&actions);
        let InteractionRequest::Permission(asked) = request else { panic!("{request:?}") };
        assert_eq!(asked.deny_option, "zcode-acp:decline");
        let options: Value =
            serde_json::from_str::<Value>(&asked.request).unwrap()["options"].clone();
        assert_eq!(options[0]["optionId"], "approve");
        assert_eq!(options[1]["kind"], "reject_once");
        let run =
            driver.answer(key, InteractionOutcome::Selected("approve".into()), ok(Value::Null));
        assert_eq!(run.params(0)["action"], "accept");
        assert_eq!(run.params(0)["content"]["answer_0"], "approve");
        let mut driver = running(true, false);
        driver.event(plan_input_event("plan-q"));
        let rejected = InteractionOutcome::Selected("zcode-acp:decline".into());
        let run = driver.answer("input:plan-q", rejected, ok(Value::Null));
        assert_eq!(run.params(0)["action"], "decline");
        assert!(run.params(0).get("reason").is_none(), "{}", run.params(0));
        assert_eq!(
            run.updates(),
            [json!({"sessionUpdate": "plan_removed", "planId": "zcode-plan-proposal:plan-q"})]
        );
    }
}
