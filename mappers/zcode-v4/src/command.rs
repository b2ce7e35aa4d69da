//! V4 commands (ZCode 3.15.1 `zcode-protocol-v4/command.ts`): the envelope and its
//! acknowledgement, whatever call carries them (`v4/command` on the Agent's NDJSON pipe,
//! `sendConversationCommandV4` on the Services Server).
//!
//! The envelope: `{commandId, clientId, sessionId, type, payload, issuedAt, baseRevision?}`.
//! `issuedAt` is the client's clock, for telemetry only ("服务端不用于任何裁决"); a mapper has
//! no clock and sends what it knows. Commands that ZCode checks against the state's revision
//! (`COMMANDS_REQUIRING_BASE_REVISION`) carry `baseRevision`; an ACK `stale` names the
//! revision to retry at (`revisionAtDecision`). The command id must be unique per attempt even
//! across runs: ZCode deduplicates by it, persistently.

use serde_json::{Value, json};
use zcode_contract::{ErrorKind, MapperError};
use zcode_mapper_sdk::json::{error, protocol};

use crate::schema::{Fields, native};

/// The `clientId` of every command (and of the Services Server hello).
pub const CLIENT_ID: &str = "zcode-acp";

/// Attempts of one CAS command (the first and three retries on `stale`, as the Paseo plugin
/// does).
pub const CAS_ATTEMPTS: u32 = 4;

/// Command types that must carry `baseRevision` (of those the mappers send).
const CAS: [&str; 5] = [
    "setAutoDrain",
    "deleteQueueItem",
    "switchModelConfig",
    "switchCollaborationMode",
    "forkAssistant",
];

/// One command to send.
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    pub kind: &'static str,
    pub payload: Value,
    pub command_id: String,
    /// `baseLogEpoch`, for a command that targets a row (`ROW_TARGETING_COMMANDS`).
    pub base_log_epoch: Option<String>,
}

impl Command {
    pub fn new(kind: &'static str, payload: Value, command_id: String) -> Self {
        Self { kind, payload, command_id, base_log_epoch: None }
    }

    /// A row-targeting command, checked against the log epoch its row was read in.
    pub fn with_log_epoch(mut self, log_epoch: &str) -> Self {
        self.base_log_epoch = Some(log_epoch.to_string());
        self
    }

    /// Whether ZCode checks this command against the state's revision.
    pub fn is_cas(&self) -> bool {
        CAS.contains(&self.kind)
    }

    /// The envelope; `base_revision` is written for a CAS command only.
    pub fn envelope(
        &self,
        session_id: &str,
        base_revision: Option<u64>,
        issued_at: Value,
    ) -> Value {
        let mut envelope = json!({
            "commandId": self.command_id,
            "clientId": CLIENT_ID,
            "sessionId": session_id,
            "type": self.kind,
            "payload": self.payload,
            "issuedAt": issued_at,
        });
        if self.is_cas()
            && let Some(revision) = base_revision
        {
            envelope["baseRevision"] = json!(revision);
        }
        if let Some(epoch) = &self.base_log_epoch {
            envelope["baseLogEpoch"] = json!(epoch);
        }
        envelope
    }
}

/// A command ACK (`commandAckSchema`).
#[derive(Clone, Debug, PartialEq)]
pub enum Ack {
    /// `accepted`: the command took effect.
    Accepted(Option<Value>),
    /// `duplicate`: ZCode already had a command with this id and replays its result. A mapper
    /// never sends a command twice, so this command itself did nothing.
    Duplicate,
    /// Nothing to do (e.g. an interaction already resolved, `proto.alreadyResolved`).
    Noop,
    /// The base revision was not current: retry at `revision`.
    Stale { revision: u64 },
    /// `rejected` or `failed`, with ZCode's reason.
    Refused { status: &'static str, reason: String },
}

/// Reads an ACK strictly: it must answer `command_id`, with a known status.
pub fn parse_ack(result: &Value, command_id: &str) -> Result<Ack, MapperError> {
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
}

/// An `accepted` input: `result` must be `inputAccepted` for exactly this command id (the
/// plugin's rule); anything else is a protocol break, never a resend. The delivery ZCode chose.
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

/// An ACK read leniently: `accepted` (with the rest of the reply), else why not. Only the
/// status is required.
pub fn accepted(result: &Value) -> Result<&Value, MapperError> {
    match result.get("status").and_then(Value::as_str) {
        Some("accepted") => Ok(result),
        Some(status) => {
            let reason = result.get("reasonCode").and_then(Value::as_str).unwrap_or("no reason");
            let message = result.get("message").and_then(Value::as_str).unwrap_or("");
            Err(native(
                format!("ZCode did not accept the command ({status}: {reason}) {message}")
                    .trim_end()
                    .to_string(),
            ))
        }
        None => Err(protocol("v4/command reply has no status")),
    }
}

/// A settings switch that took effect, or found the session already so: ZCode 3.15.1 answers
/// a switch to the current mode or model `noop` `config.unchanged`
/// (`commands/handlers/model-config.ts`). Anything else is [`accepted`]'s refusal.
pub fn switched(result: &Value) -> Result<(), MapperError> {
    let unchanged = |key: &str, value: &str| result.get(key).and_then(Value::as_str) == Some(value);
    if unchanged("status", "noop") && unchanged("reasonCode", "config.unchanged") {
        return Ok(());
    }
    accepted(result).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_envelopes_with_base_revisions_for_cas_commands() {
        let drain = Command::new("setAutoDrain", json!({"autoDrain": false}), "c1".into());
        let envelope = drain.envelope("s", Some(7), json!(1000));
        assert_eq!(envelope["baseRevision"], 7);
        assert_eq!(envelope["clientId"], "zcode-acp");
        assert_eq!(envelope["type"], "setAutoDrain");
        assert_eq!(envelope["issuedAt"], 1000);
        assert!(drain.envelope("s", None, json!(0)).get("baseRevision").is_none());
        let stop = Command::new("stop", json!({}), "c2".into()).envelope("s", Some(7), json!(1));
        assert!(stop.get("baseRevision").is_none());
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

    #[test]
    fn reads_acks_leniently() {
        assert!(accepted(&json!({"status": "accepted"})).is_ok());
        assert_eq!(
            accepted(&json!({"status": "stale", "reasonCode": "guard.revision"}))
                .unwrap_err()
                .message,
            "ZCode did not accept the command (stale: guard.revision)"
        );
        assert!(accepted(&json!({})).is_err());
    }

    #[test]
    fn a_switch_to_the_current_value_is_a_switch_done() {
        let noop = |reason: &str| json!({"status": "noop", "reasonCode": reason});
        assert!(switched(&noop("config.unchanged")).is_ok());
        assert!(switched(&json!({"status": "accepted"})).is_ok());
        assert!(switched(&noop("guard.stopTargetChanged")).is_err());
        assert!(switched(&json!({"status": "stale", "reasonCode": "config.unchanged"})).is_err());
        assert!(switched(&json!({"status": "failed", "reasonCode": "x"})).is_err());
    }
}
