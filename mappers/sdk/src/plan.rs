//! The plan proposal shown while the agent asks to leave plan mode: published before the
//! approval question, removed when rejected, cancelled or failed, kept while an accepted plan
//! runs. Every generation with a plan mode shows it by these rules.
//!
//! With plan operations the proposal is its own markdown plan (`plan_update`/`plan_removed`);
//! without them it is the legacy single-entry `plan`, cleared with an empty entry list.

use serde_json::{Value, json};

use crate::json::text;

struct Proposal {
    plan_id: String,
    content: String,
    accepted: bool,
}

#[derive(Default)]
pub struct PlanView {
    current: Option<Proposal>,
}

fn legacy_plan(content: &str, status: &str) -> Value {
    json!({"sessionUpdate": "plan", "entries": [{"content": content, "priority": "high", "status": status}]})
}

impl PlanView {
    /// Shows a new proposal, replacing any previous one.
    /// `key` names the native request that asked (one proposal per request).
    pub fn publish(&mut self, plan_operations: bool, key: &str, content: &str) -> Vec<String> {
        let mut updates = self.remove(plan_operations);
        let plan_id = format!("zcode-plan-proposal:{key}");
        let update = if plan_operations {
            json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": plan_id, "content": content}})
        } else {
            legacy_plan(content, "pending")
        };
        updates.push(text(&update));
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
            vec![text(&legacy_plan(&proposal.content, "in_progress"))]
        }
    }

    /// Takes the proposal down (rejection, cancellation, failure).
    pub fn remove(&mut self, plan_operations: bool) -> Vec<String> {
        let Some(proposal) = self.current.take() else {
            return Vec::new();
        };
        let update = if plan_operations {
            json!({"sessionUpdate": "plan_removed", "planId": proposal.plan_id})
        } else {
            json!({"sessionUpdate": "plan", "entries": []})
        };
        vec![text(&update)]
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
}
