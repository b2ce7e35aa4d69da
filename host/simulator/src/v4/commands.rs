//! The V4 command vocabulary both servers decide commands in (3.15.1
//! `zcode-protocol-v4/command.ts`, the CLI's `command-inbox.ts`): the command types, which of
//! them need a CAS base, and the ACK `{commandId, status, reasonCode?, message?,
//! revisionAtDecision, result?}` a decision becomes. Which commands each server executes, and
//! how, is its own.

use serde_json::{Value, json};

/// Every command type of `commandPayloadSchemas` (3.15.1).
pub const COMMAND_TYPES: [&str; 35] = [
    "createSession",
    "createSelectionSideSession",
    "sendText",
    "sendGoalCommand",
    "stop",
    "compact",
    "forkAssistant",
    "applyFileRewind",
    "editUserQuery",
    "retryTurn",
    "setAssistantFeedback",
    "setHighspeedMetrics",
    "sendQueuedNow",
    "editQueueItem",
    "reorderQueueItem",
    "deleteQueueItem",
    "setAutoDrain",
    "resolveInteraction",
    "respondWorkspaceHookReview",
    "toggleWorkspaceHookReviewItem",
    "revokeWorkspaceHookTrust",
    "requestWorkspaceHookReview",
    "snoozeInteractionAutoResolution",
    "switchModelConfig",
    "switchCollaborationMode",
    "setFollowupMode",
    "pauseGoal",
    "resumeGoal",
    "cancelBackgroundWork",
    "resumeWorkflowRun",
    "startSavedWorkflow",
    "amendWorkflowRunSettings",
    "renameSession",
    "deleteSession",
    "discardSharedContext",
];

/// Commands that need `baseRevision` (`COMMANDS_REQUIRING_BASE_REVISION`).
pub const CAS_COMMANDS: [&str; 15] = [
    "applyFileRewind",
    "forkAssistant",
    "editUserQuery",
    "retryTurn",
    "setAssistantFeedback",
    "sendQueuedNow",
    "editQueueItem",
    "reorderQueueItem",
    "deleteQueueItem",
    "setAutoDrain",
    "switchModelConfig",
    "switchCollaborationMode",
    "setFollowupMode",
    "pauseGoal",
    "resumeGoal",
];

/// Commands that also need `baseLogEpoch` (`ROW_TARGETING_COMMANDS`).
pub const ROW_TARGETING_COMMANDS: [&str; 6] = [
    "applyFileRewind",
    "forkAssistant",
    "editUserQuery",
    "retryTurn",
    "setAssistantFeedback",
    "setHighspeedMetrics",
];

/// A command's decision before it becomes an ACK.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub status: &'static str,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub result: Option<Value>,
}

impl Decision {
    pub fn accepted(result: Option<Value>) -> Decision {
        Decision { status: "accepted", reason: None, message: None, result }
    }

    /// Any other status, with its reason code and (when there is one) a message.
    pub fn refused(status: &'static str, reason: &str, message: Option<String>) -> Decision {
        Decision { status, reason: Some(reason.to_owned()), message, result: None }
    }

    pub fn rejected(reason: &str, message: impl Into<String>) -> Decision {
        Decision::refused("rejected", reason, Some(message.into()))
    }

    /// Nothing to do, which a handler says with `V4CommandNoopError` (3.15.1 `v4-gateway.ts`).
    pub fn noop(reason: &str) -> Decision {
        Decision::refused("noop", reason, None)
    }

    /// A handler's error without a reason code of its own (`v4-gateway.ts`: every error a
    /// handler throws is `failed`, `fault.command.executionFailed` unless it names a code).
    pub fn failed(message: impl Into<String>) -> Decision {
        Decision::refused("failed", "fault.command.executionFailed", Some(message.into()))
    }

    /// A command the simulator does not execute, answered as ZCode answers a command its host
    /// has not wired (`v4-gateway.ts`, `V4CommandNotImplementedError`).
    pub fn not_implemented(kind: &str) -> Decision {
        let message = format!("zcode-sim does not simulate the {kind} command");
        Decision::refused("failed", "fault.command.notImplemented", Some(message))
    }

    pub fn ack(&self, command_id: &str, revision: u64) -> Value {
        let mut ack =
            json!({"commandId": command_id, "status": self.status, "revisionAtDecision": revision});
        if let Some(reason) = &self.reason {
            ack["reasonCode"] = json!(reason);
        }
        if let Some(message) = &self.message {
            ack["message"] = json!(message);
        }
        if let Some(result) = &self.result {
            ack["result"] = result.clone();
        }
        ack
    }
}

/// An answer that reached its interaction: `resolveInteraction`'s result (`command.ts`,
/// `commandResultSchema`) names who answered, and the permission option chosen.
pub fn resolved_by(client_id: &str, option: Option<&str>) -> Decision {
    let mut by = json!({"clientId": client_id});
    if let Some(option) = option {
        by["optionId"] = json!(option);
    }
    Decision::accepted(Some(json!({"type": "resolveInteraction", "resolvedBy": by})))
}

/// Why an envelope lacks the CAS members its type needs, if it does. ZCode's envelope parser
/// (`parseCommandEnvelope`) refuses it before any session is looked at, as `rejected`
/// `proto.invalidPayload` with this message.
pub fn missing_base(kind: &str, has_revision: bool, has_log_epoch: bool) -> Option<&'static str> {
    let lacks = (CAS_COMMANDS.contains(&kind) && !has_revision)
        || (ROW_TARGETING_COMMANDS.contains(&kind) && !has_log_epoch);
    lacks.then_some("CAS commands require baseRevision and baseLogEpoch")
}

/// A CAS command's base against the session's, in ZCode's order (`command-inbox.ts`,
/// `decide`): a row-targeting command's log epoch first, then the revision. Only CAS commands
/// are compared (`setHighspeedMetrics` targets rows but is not one). `raced` (a fault that
/// makes the next compare lose) is asked only when the revision is compared. A stale ACK has
/// no message.
pub fn stale_base(
    kind: &str,
    base: (Option<u64>, Option<&str>),
    current: (u64, &str),
    raced: impl FnOnce() -> bool,
) -> Option<Decision> {
    if !CAS_COMMANDS.contains(&kind) {
        return None;
    }
    let reason = if ROW_TARGETING_COMMANDS.contains(&kind) && base.1 != Some(current.1) {
        "proto.staleLogEpoch"
    } else if raced() || base.0 != Some(current.0) {
        "proto.staleRevision"
    } else {
        return None;
    };
    Some(Decision::refused("stale", reason, None))
}

/// Whether a retry of the same `commandId` replays this decision. ZCode does not remember a
/// refusal at admission (`command-inbox.ts`, `decide`: `remember: false`) and remembers every
/// settled outcome (`settle`). Its handlers' errors all settle as `failed` (`v4-gateway.ts`),
/// so `stale` and `rejected` only ever come from admission, and are decided afresh.
pub fn remembered(decision: &Decision) -> bool {
    !matches!(decision.status, "stale" | "rejected")
}

/// A repeated command's first ACK, replayed: `duplicate` unless the command failed (a failure
/// stays a failure).
pub fn replay(first: &Value) -> Value {
    let mut replay = first.clone();
    if matches!(replay["status"].as_str(), Some("accepted" | "noop")) {
        replay["status"] = json!("duplicate");
    }
    replay
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_carry_only_what_was_decided() {
        let noop = Decision::noop("proto.alreadyResolved");
        assert_eq!(
            noop.ack("c", 4),
            json!({"commandId": "c", "status": "noop", "revisionAtDecision": 4, "reasonCode": "proto.alreadyResolved"})
        );
        let accepted = Decision::accepted(Some(json!({"type": "inputAccepted"})));
        assert_eq!(accepted.ack("c", 1)["result"]["type"], "inputAccepted");
        assert_eq!(replay(&accepted.ack("c", 1))["status"], "duplicate");
        let failed = Decision::failed("x");
        assert_eq!(replay(&failed.ack("c", 1))["status"], "failed");
    }

    #[test]
    fn a_cas_command_without_its_base_is_an_invalid_envelope() {
        assert!(missing_base("switchModelConfig", false, false).is_some());
        assert_eq!(missing_base("switchModelConfig", true, false), None);
        // Row-targeting commands need the epoch too, `setHighspeedMetrics` (not CAS) included.
        assert!(missing_base("forkAssistant", true, false).is_some());
        assert!(missing_base("setHighspeedMetrics", false, false).is_some());
        assert_eq!(missing_base("setHighspeedMetrics", false, true), None);
        assert_eq!(missing_base("sendText", false, false), None);
    }

    #[test]
    fn the_log_epoch_is_compared_before_the_revision_and_only_for_cas_commands() {
        let reason = |kind, base, raced: bool| {
            stale_base(kind, base, (7, "epoch-a"), || raced).map(|decision| decision.reason)
        };
        let epoch = Some(Some("proto.staleLogEpoch".to_owned()));
        let revision = Some(Some("proto.staleRevision".to_owned()));
        // Both stale: the epoch is what is reported.
        assert_eq!(reason("forkAssistant", (Some(6), Some("epoch-b")), false), epoch);
        assert_eq!(reason("forkAssistant", (Some(6), Some("epoch-a")), false), revision);
        assert_eq!(reason("forkAssistant", (Some(7), Some("epoch-a")), false), None);
        // Not row-targeting: no epoch is compared.
        assert_eq!(reason("switchModelConfig", (Some(7), None), false), None);
        assert_eq!(reason("switchModelConfig", (Some(7), None), true), revision);
        // Not CAS: nothing is compared, and the race fault is not spent.
        let mut asked = false;
        let decision =
            stale_base("setHighspeedMetrics", (None, Some("old")), (7, "epoch-a"), || {
                asked = true;
                true
            });
        assert_eq!((decision, asked), (None, false));
        let stale = stale_base("retryTurn", (Some(1), Some("epoch-a")), (7, "epoch-a"), || false);
        assert_eq!(
            stale.map(|decision| (decision.status, decision.message)),
            Some(("stale", None))
        );
    }

    #[test]
    fn refusals_are_decided_afresh_and_outcomes_are_replayed() {
        let outcomes =
            [Decision::accepted(None), Decision::noop("x"), Decision::not_implemented("compact")];
        assert!(outcomes.iter().all(remembered));
        let refusals =
            [Decision::refused("stale", "proto.staleRevision", None), Decision::rejected("x", "y")];
        assert!(!refusals.iter().any(remembered));
    }
}
