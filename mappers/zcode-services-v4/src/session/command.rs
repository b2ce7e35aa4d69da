//! V4 commands through `sendConversationCommandV4{workspacePath, sessionId, envelope}` (ZCode
//! 3.15.1 `zcode-protocol-v4/command.ts`).
//!
//! The envelope: `{commandId, clientId, sessionId, type, payload, issuedAt, baseRevision?}`.
//! `issuedAt` is the client's clock, for telemetry only ("服务端不用于任何裁决"); the mapper has
//! no clock and sends the CLI time of the last frame it saw. Commands that ZCode checks against
//! the state's revision (`COMMANDS_REQUIRING_BASE_REVISION`) carry `baseRevision`; an ACK
//! `stale` is retried with `revisionAtDecision` (at most 4 attempts, as the plugin does), with
//! the same `commandId`. Input admission (`sendText`) is never retried.

use serde_json::{Value, json};
use zcode_contract::{ErrorKind, MapperError};

use crate::hello::CLIENT_ID;
use crate::json::{Fields, error, protocol};
use crate::rpc::{self, Call};

/// Attempts of one CAS command (the first and three retries on `stale`).
pub const CAS_ATTEMPTS: u32 = 4;

/// Command types that must carry `baseRevision` (and that this mapper sends).
const CAS: [&str; 4] =
    ["setAutoDrain", "deleteQueueItem", "switchModelConfig", "switchCollaborationMode"];

/// One command to send.
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    pub kind: &'static str,
    pub payload: Value,
    pub command_id: String,
}

impl Command {
    pub fn new(kind: &'static str, payload: Value, command_id: String) -> Self {
        Self { kind, payload, command_id }
    }

    pub fn is_cas(&self) -> bool {
        CAS.contains(&self.kind)
    }

    pub fn call(
        &self,
        workspace: &str,
        session_id: &str,
        base_revision: u64,
        issued_at: f64,
    ) -> Call {
        let mut envelope = json!({
            "commandId": self.command_id,
            "clientId": CLIENT_ID,
            "sessionId": session_id,
            "type": self.kind,
            "payload": self.payload,
            // Whole milliseconds read as an integer, as a JavaScript clock writes them.
            "issuedAt": if issued_at.fract() == 0.0 && issued_at.abs() < 9.0e15 { json!(issued_at as i64) } else { json!(issued_at) },
        });
        if self.is_cas() {
            envelope["baseRevision"] = json!(base_revision);
        }
        Call::agent(
            "sendConversationCommandV4",
            json!({"workspacePath": workspace, "sessionId": session_id, "envelope": envelope}),
        )
        .timeout(rpc::COMMAND_TIMEOUT_MS)
    }
}

/// A command ACK (`commandAckSchema`).
#[derive(Clone, Debug, PartialEq)]
pub enum Ack {
    /// `accepted`: the command took effect.
    Accepted(Option<Value>),
    /// `duplicate`: ZCode already had a command with this id and replays its result. The
    /// mapper never sends a command twice, so this command itself did nothing.
    Duplicate,
    /// Nothing to do (e.g. an interaction already resolved, `proto.alreadyResolved`).
    Noop,
    /// The base revision was not current: retry at `revision`.
    Stale { revision: u64 },
    /// `rejected` or `failed`, with ZCode's reason.
    Refused { status: &'static str, reason: String },
}

pub fn parse_ack(result: &Value, command_id: &str) -> Result<Ack, MapperError> {
    let label = "zcode-agent.sendConversationCommandV4";
    let read = || -> Result<Ack, MapperError> {
        let fields = Fields::native(result, "command ACK")?;
        if fields.str("commandId")? != command_id {
            return Err(protocol("ZCode acknowledged another command"));
        }
        let status = fields
            .one_of("status", &["accepted", "rejected", "stale", "duplicate", "noop", "failed"])?;
        let revision = fields.u64("revisionAtDecision")?;
        let reason = fields.opt_str("reasonCode")?.unwrap_or_default();
        let message = fields.opt_str("message")?.unwrap_or_default();
        let result = fields.get("result").filter(|r| !r.is_null()).cloned();
        if let Some(result) = &result {
            Fields::native(result, "command result")?.non_empty_str("type")?;
        }
        Ok(match status {
            "accepted" => Ack::Accepted(result),
            "duplicate" => Ack::Duplicate,
            "noop" => Ack::Noop,
            "stale" => Ack::Stale { revision },
            status => Ack::Refused {
                status,
                reason: match (reason.is_empty(), message.is_empty()) {
                    (false, false) => format!("{reason}: {message}"),
                    (false, true) => reason.to_string(),
                    (true, false) => message.to_string(),
                    (true, true) => "no reason given".to_string(),
                },
            },
        })
    };
    read().map_err(|problem| rpc::invalid_result(label, &problem))
}

/// An `accepted` input: `result` must be `inputAccepted` for exactly this command id (the
/// plugin's rule); anything else is a protocol break, never a resend.
pub fn check_input_accepted(ack: &Ack, command_id: &str) -> Result<String, MapperError> {
    match ack {
        Ack::Accepted(Some(result)) => {
            let fields = Fields::native(result, "sendText result")?;
            if fields.str("type")? != "inputAccepted" {
                return Err(protocol("ZCode accepted the prompt with an unexpected result"));
            }
            let delivery = fields.one_of("delivery", &["startNow", "queue", "guide"])?;
            if fields.str("inputId")? != command_id {
                return Err(protocol("ZCode accepted another input than the prompt"));
            }
            Ok(delivery.to_string())
        }
        Ack::Accepted(None) => Err(protocol("ZCode accepted the prompt without saying how")),
        Ack::Refused { status, reason } => {
            Err(error(ErrorKind::Native, format!("ZCode {status} the prompt: {reason}")))
        }
        Ack::Noop => Err(error(ErrorKind::Native, "ZCode took no action on the prompt")),
        Ack::Duplicate => Err(protocol(
            "ZCode took the prompt for an input it already had (a repeated command id); it was \
             not sent",
        )),
        Ack::Stale { .. } => Err(error(ErrorKind::Native, "ZCode refused the prompt as stale")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_envelopes_with_base_revisions_for_cas_commands() {
        let drain = Command::new("setAutoDrain", json!({"autoDrain": false}), "c1".into());
        let call = drain.call("/w", "s", 7, 1000.0);
        assert_eq!(call.method, "sendConversationCommandV4");
        assert_eq!(call.timeout_ms, 60_000);
        let envelope = &call.args[0]["envelope"];
        assert_eq!(envelope["baseRevision"], 7);
        assert_eq!(envelope["clientId"], "zcode-acp");
        assert_eq!(envelope["type"], "setAutoDrain");
        assert_eq!(call.args[0]["sessionId"], "s");
        let stop = Command::new("stop", json!({}), "c2".into()).call("/w", "s", 7, 1.0);
        assert!(stop.args[0]["envelope"].get("baseRevision").is_none());
    }

    #[test]
    fn reads_acks() {
        let ack = |value: Value| parse_ack(&value, "c");
        assert_eq!(
            ack(json!({"commandId": "c", "status": "accepted", "revisionAtDecision": 3})).unwrap(),
            Ack::Accepted(None)
        );
        assert_eq!(
            ack(json!({"commandId": "c", "status": "stale", "revisionAtDecision": 9})).unwrap(),
            Ack::Stale { revision: 9 }
        );
        assert_eq!(ack(json!({"commandId": "c", "status": "noop", "revisionAtDecision": 1, "reasonCode": "proto.alreadyResolved"})).unwrap(), Ack::Noop);
        assert_eq!(
            ack(json!({"commandId": "c", "status": "rejected", "revisionAtDecision": 1, "reasonCode": "guard.busy"})).unwrap(),
            Ack::Refused { status: "rejected", reason: "guard.busy".into() }
        );
        assert!(
            ack(json!({"commandId": "d", "status": "accepted", "revisionAtDecision": 1})).is_err()
        );
        let duplicate = json!({"commandId": "c", "status": "duplicate", "revisionAtDecision": 0,
                               "result": {"type": "inputAccepted", "delivery": "startNow", "inputId": "c"}});
        assert_eq!(ack(duplicate).unwrap(), Ack::Duplicate);
        assert!(
            check_input_accepted(&Ack::Duplicate, "c").unwrap_err().message.contains("not sent"),
            "a replayed result is no admission of this prompt"
        );
        assert!(
            ack(json!({"commandId": "c", "status": "queued", "revisionAtDecision": 1})).is_err()
        );
    }

    #[test]
    fn accepts_only_this_input() {
        let accepted = |result: Value| check_input_accepted(&Ack::Accepted(Some(result)), "c");
        assert_eq!(
            accepted(json!({"type": "inputAccepted", "delivery": "startNow", "inputId": "c"}))
                .unwrap(),
            "startNow"
        );
        assert!(
            accepted(json!({"type": "inputAccepted", "delivery": "startNow", "inputId": "x"}))
                .is_err()
        );
        assert!(accepted(json!({"type": "resolveInteraction"})).is_err());
        assert_eq!(
            check_input_accepted(
                &Ack::Refused { status: "rejected", reason: "guard.x".into() },
                "c"
            )
            .unwrap_err()
            .message,
            "ZCode rejected the prompt: guard.x"
        );
    }
}
