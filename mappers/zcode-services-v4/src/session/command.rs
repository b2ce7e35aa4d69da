//! V4 commands through `sendConversationCommandV4{workspacePath, sessionId, envelope}` (ZCode
//! 3.15.1 `zcode-protocol-v4/command.ts`).
//!
//! The envelope: `{commandId, clientId, sessionId, type, payload, issuedAt, baseRevision?}`.
//! `issuedAt` is the client's clock, for telemetry only ("服务端不用于任何裁决"); the mapper has
//! no clock and sends the CLI time of the last frame it saw. Commands that ZCode checks against
//! the state's revision (`COMMANDS_REQUIRING_BASE_REVISION`) carry `baseRevision`; an ACK
//! `stale` is retried with `revisionAtDecision` (at most 4 attempts, as the plugin does), with
//! the same `commandId`. Input admission (`sendText`) is never retried. The envelope and ACK are
//! the family's (`zcode_v4::command`); the call that carries them is this transport's.

use serde_json::{Value, json};

use crate::rpc::{self, Call};

pub use zcode_v4::command::{Ack, CAS_ATTEMPTS, Command, check_input_accepted};

/// The call that sends `command`, CAS commands at `base_revision`.
pub fn call(
    command: &Command,
    workspace: &str,
    session_id: &str,
    base_revision: u64,
    issued_at: f64,
) -> Call {
    // Whole milliseconds read as an integer, as a JavaScript clock writes them.
    let issued_at = if issued_at.fract() == 0.0 && issued_at.abs() < 9.0e15 {
        json!(issued_at as i64)
    } else {
        json!(issued_at)
    };
    let envelope = command.envelope(session_id, Some(base_revision), issued_at);
    Call::agent(
        "sendConversationCommandV4",
        json!({"workspacePath": workspace, "sessionId": session_id, "envelope": envelope}),
    )
    .timeout(rpc::COMMAND_TIMEOUT_MS)
}

/// A command ACK, strictly (`commandAckSchema`), named after the call when it is not one.
pub fn parse_ack(result: &Value, command_id: &str) -> Result<Ack, zcode_contract::MapperError> {
    zcode_v4::command::parse_ack(result, command_id)
        .map_err(|problem| rpc::invalid_result("zcode-agent.sendConversationCommandV4", &problem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_envelopes_with_base_revisions_for_cas_commands() {
        let drain = Command::new("setAutoDrain", json!({"autoDrain": false}), "c1".into());
        let call = call(&drain, "/w", "s", 7, 1000.0);
        assert_eq!(call.method, "sendConversationCommandV4");
        assert_eq!(call.timeout_ms, 60_000);
        let envelope = &call.args[0]["envelope"];
        assert_eq!(envelope["baseRevision"], 7);
        assert_eq!(envelope["issuedAt"], 1000);
        assert_eq!(call.args[0]["sessionId"], "s");
        let stop = super::call(&Command::new("stop", json!({}), "c2".into()), "/w", "s", 7, 1.5);
        assert!(stop.args[0]["envelope"].get("baseRevision").is_none());
        assert_eq!(stop.args[0]["envelope"]["issuedAt"], 1.5);
    }
}
