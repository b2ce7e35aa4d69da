//! Plans as every generation shows them: the agent's todo list ([`Todos`]), and plan approval,
//! when the agent asks to leave plan mode ([`PlanView`], [`approval_form`], [`approval`]).
//!
//! The proposal is published before the approval question, removed when rejected, cancelled or
//! failed, and kept while an accepted plan runs. With plan operations it is its own markdown
//! plan (`plan_update`/`plan_removed`); without them it is the legacy single-entry `plan`,
//! cleared with an empty entry list. The question is one form with a single required choice,
//! `optionId`; only a submitted choice counts, anything else rejects.

use serde_json::{Value, json};
use zcode_contract::{InteractionOutcome, InteractionRequest};

use super::elicit::{self, Answer, Choice, NO_FORMS};
use super::permission::{self, DECLINE_OPTION, OptionKind, PermissionOption};
use super::update::{self, EntryStatus, PlanEntry, Priority};

/// The plan id of the todo list with plan operations.
pub const TODOS_PLAN_ID: &str = "zcode-todos";

/// The agent's todo list as the client sees it.
#[derive(Clone, Debug, Default)]
pub struct Todos {
    /// A list is shown, so an empty one must clear it.
    shown: bool,
}

impl Todos {
    /// The update that shows `entries`, or nothing when there was and is no list.
    pub fn update(&mut self, entries: &[PlanEntry<'_>], plan_operations: bool) -> Option<String> {
        let update = match (entries.is_empty(), plan_operations) {
            (true, _) if !self.shown => return None,
            (true, true) => update::plan_removed(TODOS_PLAN_ID),
            (false, true) => update::plan_items(TODOS_PLAN_ID, entries),
            (_, false) => update::plan(entries),
        };
        self.shown = !entries.is_empty();
        Some(update)
    }
}

struct Proposal {
    plan_id: String,
    content: String,
    accepted: bool,
}

/// The plan proposal of a pending or accepted approval.
#[derive(Default)]
pub struct PlanView {
    current: Option<Proposal>,
}

fn legacy_plan(content: &str, status: EntryStatus) -> String {
    update::plan(&[PlanEntry { content, priority: Priority::High, status }])
}

impl PlanView {
    /// Shows a new proposal, replacing any previous one.
    /// `key` names the native request that asked (one proposal per request).
    pub fn publish(&mut self, plan_operations: bool, key: &str, content: &str) -> Vec<String> {
        let mut updates = self.remove(plan_operations);
        let plan_id = format!("zcode-plan-proposal:{key}");
        updates.push(if plan_operations {
            update::plan_markdown(&plan_id, content)
        } else {
            legacy_plan(content, EntryStatus::Pending)
        });
        self.current = Some(Proposal { plan_id, content: content.to_string(), accepted: false });
        updates
    }

    /// The user approved the proposal: it stays visible (legacy view marks it in progress).
    pub fn accept(&mut self, plan_operations: bool) -> Vec<String> {
        let Some(proposal) = &mut self.current else {
            return Vec::new();
        };
        proposal.accepted = true;
        if plan_operations {
            Vec::new()
        } else {
            vec![legacy_plan(&proposal.content, EntryStatus::InProgress)]
        }
    }

    /// Takes the proposal down (rejection, cancellation, failure).
    pub fn remove(&mut self, plan_operations: bool) -> Vec<String> {
        let Some(proposal) = self.current.take() else {
            return Vec::new();
        };
        vec![if plan_operations {
            update::plan_removed(&proposal.plan_id)
        } else {
            update::plan(&[])
        }]
    }

    /// The turn completed: an accepted plan has been carried out. With plan operations it is
    /// removed; the legacy view keeps showing it (there is nothing to replace it with).
    pub fn finish_turn(&mut self, plan_operations: bool) -> Vec<String> {
        match &self.current {
            Some(proposal) if proposal.accepted && !plan_operations => {
                self.current = None;
                Vec::new()
            }
            Some(_) => self.remove(plan_operations),
            None => Vec::new(),
        }
    }
}

/// The approval form: one required `optionId` choice among the host's options.
pub fn approval_form(tool_call_id: Option<&str>, message: &str, choices: &[Choice]) -> String {
    let choices: Vec<Value> = choices.iter().map(Choice::schema).collect();
    let field = json!({
        "type": "string",
        "title": "Plan approval",
        "description": message,
        "oneOf": choices,
    });
    elicit::form(message, tool_call_id, vec![("optionId".to_string(), field)])
}

/// The name of the reject option added when the host's refusal is a decline.
pub const KEEP_PLANNING: &str = "No, keep planning";

/// The approval as the client can be asked it: the [`approval_form`] when it renders forms
/// (`forms`); without, a permission (as peers ask it: the Claude adapter's `ExitPlanMode`),
/// one option per choice. The choices in `rejecting` are `reject_once`, the others
/// `allow_once`; `deny` is the host's own refusal among the choices, or `None` when the host's
/// refusal is a decline: then [`DECLINE_OPTION`] ([`KEEP_PLANNING`]) is added as the reject.
/// `plan` is the plan's text where no update shows it (the form's message carries it). The
/// answer reads like the form's ([`approval`]). Choices that cannot be options are not asked
/// ([`NO_FORMS`]): the host gets its refusal.
#[allow(clippy::too_many_arguments)]
pub fn ask_approval(
    forms: bool,
    key: &str,
    tool_call_id: Option<&str>,
    message: &str,
    plan: Option<&str>,
    choices: &[Choice],
    rejecting: &[&str],
    deny: Option<&str>,
) -> InteractionRequest {
    if forms {
        return InteractionRequest::Elicitation(approval_form(tool_call_id, message, choices));
    }
    let mut options: Vec<PermissionOption<'_>> = choices
        .iter()
        .map(|choice| PermissionOption {
            id: &choice.value,
            name: &choice.title,
            kind: OptionKind::of(!rejecting.contains(&choice.value.as_str()), false),
        })
        .collect();
    if deny.is_none() {
        options.push(PermissionOption {
            id: DECLINE_OPTION,
            name: KEEP_PLANNING,
            kind: OptionKind::RejectOnce,
        });
    }
    let deny = deny.unwrap_or(DECLINE_OPTION);
    permission::choice_request(key, tool_call_id, message, plan, &options, deny)
        .unwrap_or_else(|| InteractionRequest::Headless(NO_FORMS.to_string()))
}

/// What the user did with an approval form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Submitted this option (not yet checked against the offered ones).
    Chose(String),
    Declined,
    Cancelled,
    /// No usable answer: the client could not be asked, or sent no option.
    Unanswered,
}

/// The approval the client's answer to an [`approval_form`] (or its permission, see
/// [`ask_approval`]) gives.
pub fn approval(outcome: &InteractionOutcome) -> Approval {
    match outcome {
        InteractionOutcome::Selected(id) if id == DECLINE_OPTION => return Approval::Declined,
        InteractionOutcome::Selected(id) => return Approval::Chose(id.clone()),
        _ => {}
    }
    match elicit::answer(outcome) {
        Ok(Answer::Accept(content)) => match content.get("optionId").and_then(Value::as_str) {
            Some(id) => Approval::Chose(id.to_string()),
            None => Approval::Unanswered,
        },
        Ok(Answer::Decline) => Approval::Declined,
        Ok(Answer::Cancel) => Approval::Cancelled,
        Err(_) => Approval::Unanswered,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp_check;

    fn parsed(updates: Vec<String>) -> Vec<Value> {
        let values: Vec<Value> = updates.iter().map(|u| serde_json::from_str(u).unwrap()).collect();
        values.iter().for_each(acp_check::session_update);
        values
    }

    #[test]
    fn replaces_and_removes_markdown_proposals() {
        let mut view = PlanView::default();
        assert_eq!(
            parsed(view.publish(true, "r1", "# Plan")),
            [
                json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "zcode-plan-proposal:r1", "content": "# Plan"}})
            ]
        );
        let replaced = parsed(view.publish(true, "r2", "# Better"));
        assert_eq!(
            replaced[0],
            json!({"sessionUpdate": "plan_removed", "planId": "zcode-plan-proposal:r1"})
        );
        assert_eq!(replaced[1]["plan"]["planId"], "zcode-plan-proposal:r2");
        assert!(view.accept(true).is_empty());
        assert_eq!(
            parsed(view.finish_turn(true)),
            [json!({"sessionUpdate": "plan_removed", "planId": "zcode-plan-proposal:r2"})]
        );
        assert!(view.remove(true).is_empty(), "removal happens once");
    }

    #[test]
    fn uses_the_legacy_plan_without_plan_operations() {
        let mut view = PlanView::default();
        assert_eq!(
            parsed(view.publish(false, "r", "Do it")),
            [
                json!({"sessionUpdate": "plan", "entries": [{"content": "Do it", "priority": "high", "status": "pending"}]})
            ]
        );
        assert_eq!(
            parsed(view.accept(false)),
            [
                json!({"sessionUpdate": "plan", "entries": [{"content": "Do it", "priority": "high", "status": "in_progress"}]})
            ]
        );
        assert!(view.finish_turn(false).is_empty(), "an accepted legacy plan stays visible");
        view.publish(false, "s", "Other");
        assert_eq!(parsed(view.remove(false)), [json!({"sessionUpdate": "plan", "entries": []})]);
    }

    #[test]
    fn shows_and_clears_the_todo_list() {
        let entry =
            PlanEntry { content: "First", priority: Priority::High, status: EntryStatus::Pending };
        let mut todos = Todos::default();
        assert_eq!(todos.update(&[], true), None, "nothing shown, nothing to clear");
        assert_eq!(
            parsed(todos.update(&[entry], true).into_iter().collect()),
            [
                json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "zcode-todos", "entries": [{"content": "First", "status": "pending", "priority": "high"}]}})
            ]
        );
        assert_eq!(
            parsed(todos.update(&[], true).into_iter().collect()),
            [json!({"sessionUpdate": "plan_removed", "planId": "zcode-todos"})]
        );
        todos.update(&[entry], false);
        assert_eq!(
            parsed(todos.update(&[], false).into_iter().collect()),
            [json!({"sessionUpdate": "plan", "entries": []})]
        );
    }

    #[test]
    fn asks_for_approval_and_reads_the_choice() {
        let choices = [Choice::new("ok", "Approve", Some("Go")), Choice::new("no", "Reject", None)];
        let form: Value =
            serde_json::from_str(&approval_form(Some("t"), "Review the plan", &choices)).unwrap();
        acp_check::elicitation(&form);
        assert_eq!(
            form["requestedSchema"],
            json!({"type": "object", "required": ["optionId"], "properties": {"optionId": {
                "type": "string", "title": "Plan approval", "description": "Review the plan",
                "oneOf": [{"const": "ok", "title": "Approve", "description": "Go"}, {"const": "no", "title": "Reject"}]}}})
        );
        let elicited = |json: Value| approval(&InteractionOutcome::Elicited(json.to_string()));
        assert_eq!(
            elicited(json!({"action": "accept", "content": {"optionId": "ok"}})),
            Approval::Chose("ok".into())
        );
        assert_eq!(elicited(json!({"action": "accept", "content": {}})), Approval::Unanswered);
        assert_eq!(elicited(json!({"action": "decline"})), Approval::Declined);
        assert_eq!(elicited(json!({"action": "cancel"})), Approval::Cancelled);
        assert_eq!(approval(&InteractionOutcome::Unavailable("x".into())), Approval::Unanswered);
    }

    #[test]
    fn asks_for_approval_as_a_permission_without_forms() {
        let choices = [Choice::new("ok", "Approve", None), Choice::new("no", "Reject", None)];
        // The host's deny is among the choices: it is the reject option.
        let asked =
            ask_approval(false, "p:1", Some("t"), "Review", None, &choices, &["no"], Some("no"));
        let InteractionRequest::Permission(asked) = asked else { panic!("{asked:?}") };
        assert_eq!(asked.deny_option, "no");
        let value: Value = serde_json::from_str(&asked.request).unwrap();
        acp_check::permission(&value);
        assert_eq!(
            value,
            json!({"toolCall": {"toolCallId": "t", "title": "Review"}, "options": [
                {"optionId": "ok", "name": "Approve", "kind": "allow_once"},
                {"optionId": "no", "name": "Reject", "kind": "reject_once"}]})
        );
        let selected = |id: &str| approval(&InteractionOutcome::Selected(id.into()));
        assert_eq!(selected("ok"), Approval::Chose("ok".into()));
        assert_eq!(selected("no"), Approval::Chose("no".into()));

        // A host that refuses by declining: "keep planning" is added, and declines.
        let asked = ask_approval(false, "p:2", None, "Review", None, &choices[..1], &[], None);
        let InteractionRequest::Permission(asked) = asked else { panic!("{asked:?}") };
        assert_eq!(asked.deny_option, DECLINE_OPTION);
        let value: Value = serde_json::from_str(&asked.request).unwrap();
        acp_check::permission(&value);
        assert_eq!(value["toolCall"]["toolCallId"], "zcode-acp:p:2");
        assert_eq!(
            value["options"][1],
            json!({"optionId": DECLINE_OPTION, "name": KEEP_PLANNING, "kind": "reject_once"})
        );
        assert_eq!(selected(DECLINE_OPTION), Approval::Declined);

        // With forms it is the form.
        let form = ask_approval(true, "p", None, "Review", None, &choices, &["no"], Some("no"));
        assert!(matches!(form, InteractionRequest::Elicitation(_)));
        // Without usable choices it is not asked.
        let none = ask_approval(false, "p", None, "Review", None, &[], &[], Some("no"));
        assert_eq!(none, InteractionRequest::Headless(NO_FORMS.to_string()));
    }
}
