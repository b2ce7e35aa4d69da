//! The plan proposal shown while ZCode asks to leave plan mode (the SDK's [`PlanView`], as on
//! the desktop-host generations), and the todo list by the same rules as theirs
//! (`zcode-task/src/settings.rs`): with plan operations an items plan `zcode-todos`, without
//! them the single legacy `plan`.

use serde_json::{Value, json};
pub use zcode_mapper_sdk::plan::PlanView;

use crate::state::PlanItem;

pub const TODOS_PLAN_ID: &str = "zcode-todos";

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
