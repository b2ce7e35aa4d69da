//! The plan proposal shown while ZCode asks to leave plan mode (the SDK's [`PlanView`], as on
//! the desktop-host generations), and the todo list by the same rules as theirs
//! (`zcode-task/src/settings.rs`): with plan operations an items plan `zcode-todos`, without
//! them the single legacy `plan`.

pub use zcode_mapper_sdk::acp::plan::PlanView;
use zcode_mapper_sdk::acp::update::{self, EntryStatus, PlanEntry, Priority};

use crate::state::PlanItem;

pub const TODOS_PLAN_ID: &str = "zcode-todos";

/// The todo list update for ZCode's plan items (`None`: nothing to show or clear). V4 plan items
/// have no priority; they are shown as `medium`.
pub fn todo_update(items: &[PlanItem], shown: &mut bool, plan_operations: bool) -> Option<String> {
    let entries: Vec<PlanEntry<'_>> = items
        .iter()
        .map(|item| PlanEntry {
            content: &item.content,
            priority: Priority::Medium,
            status: match item.status {
                "in_progress" => EntryStatus::InProgress,
                "completed" => EntryStatus::Completed,
                _ => EntryStatus::Pending,
            },
        })
        .collect();
    let update = match (entries.is_empty(), plan_operations) {
        (true, _) if !*shown => return None,
        (true, true) => update::plan_removed(TODOS_PLAN_ID),
        (false, true) => update::plan_items(TODOS_PLAN_ID, &entries),
        (_, false) => update::plan(&entries),
    };
    *shown = !entries.is_empty();
    Some(update)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn todos_show_and_clear() {
        let read = |update: String| serde_json::from_str::<Value>(&update).unwrap();
        let mut shown = false;
        assert_eq!(todo_update(&[], &mut shown, true), None);
        let items = [PlanItem { content: "a".into(), status: "in_progress" }];
        let update = read(todo_update(&items, &mut shown, true).unwrap());
        assert_eq!(
            update["plan"]["entries"][0],
            json!({"content": "a", "status": "in_progress", "priority": "medium"})
        );
        assert_eq!(
            read(todo_update(&[], &mut shown, true).unwrap())["sessionUpdate"],
            "plan_removed"
        );
        assert!(!shown);
    }
}
