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
