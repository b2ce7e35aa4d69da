//! A session's `availability` zone: which actions the client may offer now (3.15.1
//! `zcode-protocol-v4/projection-state.ts`, `computeAvailability`). ZCode derives it from the
//! phase, a running or queued compaction (`compactOperationLock`) and the goal's status; the
//! simulator plays neither compaction nor goals, so the phase alone decides here.

use serde_json::{Value, json};

pub fn availability(phase: &str) -> Value {
    let allowed = || json!({"allowed": true});
    let denied = |reason: &str| json!({"allowed": false, "reasonCode": reason});
    let draft = phase == "draft";
    json!({
        // A draft has no finished turn: nothing to compact or fork yet. A running session
        // compacts after its turn (ZCode queues the command), so only a draft refuses.
        "compact": if draft { denied("idleCannotCompact") } else { allowed() },
        "fork": if draft { denied("forkTargetNotStable") } else { allowed() },
        "switchModelConfig": allowed(),
        "setFollowupMode": allowed(),
        "queueEdit": allowed(),
        "sendQueuedNow": if matches!(phase, "running" | "prewarming") {
            allowed()
        } else {
            denied("sendQueuedNowRequiresRunning")
        },
        "pauseGoal": denied("noGoalToPause"),
        "resumeGoal": denied("noGoalToResume"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusals(phase: &str) -> Vec<(String, String)> {
        let zone = availability(phase);
        let mut refused: Vec<(String, String)> = zone
            .as_object()
            .unwrap()
            .iter()
            .filter_map(|(action, value)| {
                Some((action.clone(), value.get("reasonCode")?.as_str()?.to_owned()))
            })
            .collect();
        refused.sort();
        refused
    }

    #[test]
    fn a_draft_can_neither_compact_nor_fork_and_a_running_session_can_do_both() {
        let pair = |action: &str, reason: &str| (action.to_owned(), reason.to_owned());
        let goals = [pair("pauseGoal", "noGoalToPause"), pair("resumeGoal", "noGoalToResume")];
        let idle = pair("sendQueuedNow", "sendQueuedNowRequiresRunning");
        let draft = [
            vec![pair("compact", "idleCannotCompact"), pair("fork", "forkTargetNotStable")],
            goals.to_vec(),
            vec![idle.clone()],
        ]
        .concat();
        assert_eq!(refusals("draft"), draft);
        assert_eq!(refusals("completedSuccess"), [goals.to_vec(), vec![idle]].concat());
        assert_eq!(refusals("running"), goals.to_vec());
    }
}
