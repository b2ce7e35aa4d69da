//! The plan proposal shown while ZCode asks to leave plan mode, and the todo list, by the same
//! rules as the desktop-host generations (`zcode-host-common/src/plan.rs`, `settings.rs`): with
//! plan operations a proposal is a markdown plan (`plan_update` / `plan_removed`) and the todo
//! list an items plan `zcode-todos`; without them both use the single legacy `plan`.

use serde_json::{Value, json};

use crate::json::text;
use crate::v4::state::PlanItem;

pub const TODOS_PLAN_ID: &str = "zcode-todos";

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

    /// The user approved the proposal: it stays visible (the legacy view marks it in progress).
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

    /// The turn completed: an accepted plan has been carried out (the legacy view keeps it).
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

/// The todo list update for ZCode's plan items (`None`: nothing to show or clear). V4 plan items
/// have no priority; they are shown as `medium`.
pub fn todo_update(items: &[PlanItem], shown: &mut bool, plan_operations: bool) -> Option<Value> {
    let entries: Vec<Value> = items
        .iter()
        .map(|item| json!({"content": item.content, "status": item.status, "priority": "medium"}))
        .collect();
    let update = match (entries.is_empty(), plan_operations) {
        (true, _) if !*shown => return None,
        (true, true) => json!({"sessionUpdate": "plan_removed", "planId": TODOS_PLAN_ID}),
        (false, true) => {
            json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": TODOS_PLAN_ID, "entries": entries}})
        }
        (_, false) => json!({"sessionUpdate": "plan", "entries": entries}),
    };
    *shown = !entries.is_empty();
    Some(update)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposals_replace_and_remove() {
        let mut view = PlanView::default();
        let first = view.publish(true, "i1", "# Plan");
        assert_eq!(first.len(), 1);
        assert!(first[0].contains("zcode-plan-proposal:i1"));
        let second = view.publish(true, "i2", "# Better");
        assert!(second[0].contains("plan_removed"));
        assert!(view.accept(true).is_empty());
        assert_eq!(view.finish_turn(true).len(), 1);
        assert!(view.remove(true).is_empty());
        view.publish(false, "i3", "Do it");
        assert!(view.accept(false)[0].contains("in_progress"));
        assert!(view.finish_turn(false).is_empty());
    }

    #[test]
    fn todos_show_and_clear() {
        let mut shown = false;
        assert_eq!(todo_update(&[], &mut shown, true), None);
        let items = [PlanItem { content: "a".into(), status: "in_progress" }];
        let update = todo_update(&items, &mut shown, true).unwrap();
        assert_eq!(
            update["plan"]["entries"][0],
            json!({"content": "a", "status": "in_progress", "priority": "medium"})
        );
        assert_eq!(todo_update(&[], &mut shown, true).unwrap()["sessionUpdate"], "plan_removed");
        assert!(!shown);
    }
}
