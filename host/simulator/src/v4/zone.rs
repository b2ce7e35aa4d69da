//! The A-zone values both servers publish the same way (3.15.1
//! `packages/shared/src/zcode-protocol-v4/snapshot.ts`): `control`, `inputRouting`, `usage`,
//! `plan` and the keys neither server simulates. Each server says what its session holds; the
//! shapes are written here once.

use serde_json::{Map, Value, json};

/// What a running turn shows in `control`.
pub struct Running<'a> {
    pub foreground_execution_id: &'a str,
    pub source_command_id: Option<&'a str>,
    pub started_at: u64,
    /// A tool runs, so a stop targets it rather than the model.
    pub tool_running: bool,
    pub stopping: bool,
}

/// `control`: the phase, what a stop would reach, and the running turn.
pub fn control(phase: &str, running: Option<Running>, last_error: &Value) -> Value {
    let (stop_state, target, works) = match running {
        Some(turn) => {
            let mut work = json!({"kind": "primaryTurn", "foregroundExecutionId": turn.foreground_execution_id,
                                  "startedAt": turn.started_at});
            if let Some(command) = turn.source_command_id {
                work["sourceCommandId"] = json!(command);
            }
            let target = if turn.tool_running { "tool" } else { "assistant" };
            (if turn.stopping { "stopping" } else { "stoppable" }, target, vec![work])
        }
        None => ("idle", "unknown", Vec::new()),
    };
    json!({
        "phase": phase,
        "sessionEnded": matches!(phase, "completedSuccess" | "completedInterrupted"),
        "canStop": !works.is_empty(),
        "stopState": stop_state,
        "stopTargetKind": target,
        "activeWorks": works,
        "lastError": last_error,
        "apiRetry": null,
    })
}

/// `inputRouting`: where the next input goes. A held session asks the client to choose.
pub fn input_routing(held: bool, running: bool, guide: bool) -> Value {
    let mode = match (held, running) {
        (true, _) => "choice",
        (false, true) if guide => "guide",
        (false, true) => "enqueue",
        (false, false) => "startNow",
    };
    json!({"mode": mode})
}

/// Token counts summed over a session's turns (`sessionUsageStateSchema.cumulative`).
pub struct Cumulative {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// `usage`: the context window is `null` until anything was used, and no compaction threshold
/// is set (3.15.1 `bootstrap/src/zcode-protocol/v4-bridge.ts`,
/// `sessionUsageSeedFromRuntimeContextUsage`).
pub fn usage(cumulative: &Cumulative, used_tokens: u64, max_tokens: u64) -> Value {
    let window = (used_tokens > 0).then(|| {
        json!({"usedTokens": used_tokens, "maxTokens": max_tokens, "autoCompactThresholdTokens": null})
    });
    json!({
        "contextWindow": window,
        "cumulative": {"inputTokens": cumulative.input, "outputTokens": cumulative.output,
                       "cacheReadTokens": cumulative.cache_read, "cacheWriteTokens": cumulative.cache_write},
    })
}

/// `plan`, the TodoWrite list (`planStateSchema`): `null` until a first list, statuses
/// `pending` / `inProgress` / `completed`. The item ids are the simulator's: the schema asks
/// only for a string.
pub fn plan(todos: &[Value], updated_at: u64) -> Value {
    if todos.is_empty() {
        return Value::Null;
    }
    let items: Vec<Value> = todos
        .iter()
        .enumerate()
        .map(|(index, todo)| {
            let status = match todo["status"].as_str() {
                Some("in_progress") => "inProgress",
                Some("completed") => "completed",
                _ => "pending",
            };
            json!({"id": format!("plan-{}", index + 1), "content": todo["content"], "status": status})
        })
        .collect();
    json!({"items": items, "updatedAt": updated_at})
}

/// The keys neither server simulates, at the values of a session that never used them.
pub fn unsimulated(zone: &mut Map<String, Value>) {
    zone.insert("modelTransition".into(), Value::Null);
    zone.insert("pendingCommands".into(), json!([]));
    zone.insert("backgroundWorks".into(), json!([]));
    let subagents = json!({"revision": 0, "childSessionIds": [], "running": [], "endedTotal": 0});
    zone.insert("subagents".into(), subagents);
    zone.insert("goal".into(), Value::Null);
    zone.insert("workspaceHookAdmission".into(), Value::Null);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_shows_what_a_stop_would_reach() {
        let idle = control("completedSuccess", None, &Value::Null);
        assert_eq!((&idle["canStop"], &idle["stopState"]), (&json!(false), &json!("idle")));
        assert_eq!(idle["sessionEnded"], true);
        let running = Running {
            foreground_execution_id: "fx_1",
            source_command_id: Some("c1"),
            started_at: 5,
            tool_running: true,
            stopping: true,
        };
        let busy = control("running", Some(running), &Value::Null);
        assert_eq!(
            (&busy["stopState"], &busy["stopTargetKind"]),
            (&json!("stopping"), &json!("tool"))
        );
        assert_eq!(busy["activeWorks"][0]["sourceCommandId"], "c1");
        assert_eq!(busy["sessionEnded"], false);
    }

    #[test]
    fn inputs_route_by_what_the_session_is_doing() {
        let mode = |held, running, guide| input_routing(held, running, guide)["mode"].clone();
        assert_eq!(mode(true, true, true), "choice");
        assert_eq!(mode(false, true, true), "guide");
        assert_eq!(mode(false, true, false), "enqueue");
        assert_eq!(mode(false, false, true), "startNow");
    }

    #[test]
    fn usage_has_no_window_until_something_was_used() {
        let cumulative = Cumulative { input: 3, output: 2, cache_read: 1, cache_write: 0 };
        assert!(usage(&cumulative, 0, 200)["contextWindow"].is_null());
        let used = usage(&cumulative, 10, 200);
        assert_eq!(
            used["contextWindow"],
            json!({"usedTokens": 10, "maxTokens": 200, "autoCompactThresholdTokens": null})
        );
        assert_eq!(used["cumulative"]["outputTokens"], 2);
    }

    #[test]
    fn a_todo_list_becomes_the_plan() {
        assert!(plan(&[], 1).is_null());
        let todos = [json!({"content": "a", "status": "in_progress"}), json!({"content": "b"})];
        let items = &plan(&todos, 9)["items"];
        assert_eq!(items[0], json!({"id": "plan-1", "content": "a", "status": "inProgress"}));
        assert_eq!((&items[1]["id"], &items[1]["status"]), (&json!("plan-2"), &json!("pending")));
    }
}
