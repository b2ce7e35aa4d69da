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
        let noop = Decision::refused("noop", "proto.alreadyResolved", None);
        assert_eq!(
            noop.ack("c", 4),
            json!({"commandId": "c", "status": "noop", "revisionAtDecision": 4, "reasonCode": "proto.alreadyResolved"})
        );
        let accepted = Decision::accepted(Some(json!({"type": "inputAccepted"})));
        assert_eq!(accepted.ack("c", 1)["result"]["type"], "inputAccepted");
        assert_eq!(replay(&accepted.ack("c", 1))["status"], "duplicate");
        let failed = Decision::refused("failed", "fault.command.executionFailed", Some("x".into()));
        assert_eq!(replay(&failed.ack("c", 1))["status"], "failed");
    }
}
