//! `forkAssistant`, as both V4 servers decide it (3.15.1 `zcode-protocol-v4/command.ts`,
//! `rows.ts`): a fork starts at a row ZCode marks `actions.canFork` — the last complete
//! `assistantText` of a turn that completed successfully — and copies the conversation up to that
//! row into a new session. The parent is not changed. Each server makes the new session its
//! own way; the marks, the check and the cut are here.
//!
//! The mark is part of the row, sent like any change of it: on a turn's success ZCode sends the
//! turn's last `assistantText` again as a `row.upserted` with `state: "complete"` and
//! `actions: {...row.actions, canFork: true}`, right after the turn header's close and before
//! the control patch (`product-projection-actions.ts` `markStableForkAssistant`, called from the
//! turn-complete reduction when `resultType === "success"`). Rows rebuilt from stored history
//! carry the marks their turns earned ([`mark_stable`]). The command checks the row's own mark,
//! its state and its header (ZCode's row-action target check: `guard.forkAssistantOnly` for a
//! row that is not an `assistantText`, `guard.forkTargetNotStable` unless the row is complete,
//! `canFork`, and its header `completedSuccess`; the same code in the `forkAssistant` ACK).
use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use super::commands::Decision;

/// The rows a fork may start from.
pub fn stable_targets(rows: &[Value]) -> HashSet<u64> {
    let mut succeeded = HashSet::new();
    let mut last_text = HashMap::new();
    for row in rows {
        let turn = row["turnId"].as_str().unwrap_or_default();
        match (row["kind"].as_str(), row["state"].as_str()) {
            (Some("turnHeader"), Some("completedSuccess")) => {
                succeeded.insert(turn);
            }
            (Some("assistantText"), Some("complete")) => {
                last_text.insert(turn, row["rowId"].as_u64().unwrap_or(0));
            }
            _ => {}
        }
    }
    last_text.into_iter().filter(|(turn, _)| succeeded.contains(turn)).map(|(_, id)| id).collect()
}

/// Marks `row` as a fork target: complete, `actions.canFork: true` (other actions kept).
pub fn mark(row: &mut Value) {
    row["state"] = json!("complete");
    if !row["actions"].is_object() {
        row["actions"] = json!({});
    }
    row["actions"]["canFork"] = json!(true);
}

/// Marks the rows of stored history a fork may start from, as the turns' successes did.
pub fn mark_stable(rows: &mut [Value]) {
    let stable = stable_targets(rows);
    for row in rows.iter_mut() {
        if stable.contains(&row["rowId"].as_u64().unwrap_or(0)) {
            mark(row);
        }
    }
}

/// The row a turn's success marks: the turn's last `assistantText`, if it has one.
pub fn stable_answer_of(rows: &[Value], turn_id: &str) -> Option<u64> {
    rows.iter()
        .rev()
        .find(|row| row["kind"] == "assistantText" && row["turnId"] == turn_id)
        .and_then(|row| row["rowId"].as_u64())
}

/// Where a fork cuts the parent: the rows it copies (a prefix) and how many turns they hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub rows: usize,
    pub turns: usize,
}

/// Checks a `forkAssistant` payload (`{target: {rowId, entityId}}`) against the parent's rows.
#[allow(clippy::result_large_err)] // a refusal is the command's ACK, decided once
pub fn cut(rows: &[Value], payload: &Map<String, Value>) -> Result<Cut, Decision> {
    let target = payload.get("target").and_then(Value::as_object);
    let row_id = target.and_then(|t| t.get("rowId")).and_then(Value::as_u64);
    let entity = target.and_then(|t| t.get("entityId")).and_then(Value::as_str);
    let (Some(row_id), Some(entity)) = (row_id, entity) else {
        let message = "target: expected {rowId: number, entityId: string}";
        return Err(Decision::rejected("proto.invalidPayload", message));
    };
    let found = rows.iter().position(|row| row["rowId"].as_u64() == Some(row_id));
    let Some(index) = found.filter(|&index| rows[index]["entityId"] == entity) else {
        return Err(Decision::rejected("proto.rowNotFound", "No such row in this session"));
    };
    let row = &rows[index];
    if row["kind"] != "assistantText" {
        let message = "Only an assistant answer can be forked from";
        return Err(Decision::rejected("guard.forkAssistantOnly", message));
    }
    let header = rows.iter().find(|r| r["kind"] == "turnHeader" && r["turnId"] == row["turnId"]);
    let stable = row["state"] == "complete"
        && row["actions"]["canFork"] == true
        && header.is_some_and(|header| header["state"] == "completedSuccess");
    if !stable {
        let message = "The row is not the stable answer of a completed turn";
        return Err(Decision::rejected("guard.forkTargetNotStable", message));
    }
    let turns = rows[..=index].iter().filter(|row| row["kind"] == "turnHeader").count();
    Ok(Cut { rows: index + 1, turns })
}

/// The ACK result of an accepted fork (`commandResultSchema`).
pub fn accepted(child: &str) -> Decision {
    Decision::accepted(Some(json!({"type": "forkAssistant", "sessionId": child})))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: u64, turn: &str, kind: &str, state: &str) -> Value {
        json!({"rowId": id, "turnId": turn, "entityId": format!("e{id}"), "kind": kind, "state": state})
    }

    /// The rows as their turns left them: each success marked its last answer.
    fn rows() -> Vec<Value> {
        let mut rows = unmarked();
        mark_stable(&mut rows);
        rows
    }

    fn unmarked() -> Vec<Value> {
        vec![
            row(1, "t1", "turnHeader", "completedSuccess"),
            row(2, "t1", "assistantText", "complete"),
            row(3, "t1", "assistantText", "complete"),
            row(4, "t2", "turnHeader", "completedSuccess"),
            row(5, "t2", "assistantText", "complete"),
            row(6, "t3", "turnHeader", "failed"),
            row(7, "t3", "assistantText", "complete"),
        ]
    }

    fn target(row_id: u64, entity: &str) -> Map<String, Value> {
        json!({"target": {"rowId": row_id, "entityId": entity}}).as_object().unwrap().clone()
    }

    #[test]
    fn only_the_last_answer_of_a_successful_turn_can_fork() {
        let mut stable: Vec<u64> = stable_targets(&rows()).into_iter().collect();
        stable.sort();
        assert_eq!(stable, [3, 5]);
        let marked = rows();
        assert_eq!(marked[2]["actions"], json!({"canFork": true}));
        assert!(marked[1].get("actions").is_none());
        assert_eq!(stable_answer_of(&marked, "t1"), Some(3));
        assert_eq!(stable_answer_of(&marked, "t9"), None);
    }

    #[test]
    fn a_fork_needs_the_mark_the_turn_left() {
        // The same rows before any success marked them: nothing can fork.
        let refused = cut(&unmarked(), &target(5, "e5")).unwrap_err().reason;
        assert_eq!(refused.as_deref(), Some("guard.forkTargetNotStable"));
        let header = cut(&rows(), &target(4, "e4")).unwrap_err().reason;
        assert_eq!(header.as_deref(), Some("guard.forkAssistantOnly"));
    }

    #[test]
    fn cuts_after_the_target_counting_its_turns() {
        assert_eq!(cut(&rows(), &target(5, "e5")), Ok(Cut { rows: 5, turns: 2 }));
        assert_eq!(cut(&rows(), &target(3, "e3")), Ok(Cut { rows: 3, turns: 1 }));
        let refused = |id, entity: &str| cut(&rows(), &target(id, entity)).unwrap_err().reason;
        assert_eq!(refused(2, "e2").as_deref(), Some("guard.forkTargetNotStable"));
        assert_eq!(refused(7, "e7").as_deref(), Some("guard.forkTargetNotStable"));
        assert_eq!(refused(5, "e4").as_deref(), Some("proto.rowNotFound"));
        assert_eq!(refused(9, "e9").as_deref(), Some("proto.rowNotFound"));
        let bad = cut(&rows(), &Map::new()).unwrap_err();
        assert_eq!(bad.reason.as_deref(), Some("proto.invalidPayload"));
    }
}
