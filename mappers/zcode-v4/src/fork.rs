//! A fork of a conversation: V4 `forkAssistant` (ZCode 3.15.1 `zcode-protocol-v4/command.ts`,
//! `rows.ts`), the same on every transport that carries V4 commands.
//!
//! - The target is a row: `forkAssistant: z.object({ target: conversationRowTargetSchema })`,
//!   `{rowId, entityId}`. ZCode marks the rows a fork may start from with `actions.canFork`
//!   (only keys that are true are sent): the last `assistantText` of a turn that completed
//!   successfully (`markStableForkAssistant` on a turn's success). A fork copies the
//!   conversation up to that row into a new session; the parent is not changed.
//! - `forkAssistant` is in `COMMANDS_REQUIRING_BASE_REVISION` and `ROW_TARGETING_COMMANDS`: its
//!   envelope carries `baseRevision` and `baseLogEpoch` (a rows page's `atRevision` and
//!   `atLogEpoch` are both).
//! - Its ACK carries the new session at once: `result: {type: "forkAssistant", sessionId}`
//!   ("accepted 亦可即时带（fork）").
//!
//! So a mapper reads the parent's newest rows page, forks at the newest row that can fork, and
//! then opens the new session like a loaded one.

use serde_json::{Value, json};
use zcode_contract::{ErrorKind, MapperError};
use zcode_mapper_sdk::ids::derived_uuid;
use zcode_mapper_sdk::json::{error, protocol};

use crate::command::{Ack, Command};
use crate::schema::{Fields, as_u64};

/// Where a fork starts: a row of the parent, and the parent's state the command is checked
/// against.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub row_id: u64,
    pub entity_id: String,
    pub revision: u64,
    pub log_epoch: String,
    pub seq: u64,
}

/// The newest row of a rows page (`conversationRowsRange` result: `{rows, atSeq, atRevision,
/// atLogEpoch, hasMore}`) that ZCode marks `canFork`. None: nothing in the page can fork (no
/// turn completed successfully in it).
pub fn target(page: &Value) -> Result<Target, MapperError> {
    let fields = Fields::native(page, "rows page")?;
    let revision = fields.u64("atRevision")?;
    let seq = fields.u64("atSeq")?;
    let log_epoch = fields.non_empty_str("atLogEpoch")?.to_string();
    for row in fields.array("rows")?.iter().rev() {
        let can_fork = row.pointer("/actions/canFork").and_then(Value::as_bool) == Some(true);
        if !can_fork || row.get("kind").and_then(Value::as_str) != Some("assistantText") {
            continue;
        }
        let row_id = row
            .get("rowId")
            .and_then(as_u64)
            .ok_or_else(|| protocol("rows page: a row that can fork has no rowId"))?;
        let entity_id = row.get("entityId").and_then(Value::as_str).filter(|e| !e.is_empty());
        let Some(entity_id) = entity_id else {
            return Err(protocol("rows page: a row that can fork has no entityId"));
        };
        return Ok(Target { row_id, entity_id: entity_id.to_string(), revision, log_epoch, seq });
    }
    Err(error(
        ErrorKind::InvalidParams,
        "The session has no completed answer to fork from (ZCode forks at the last answer of a \
         turn that completed)",
    ))
}

/// The `forkAssistant` command at `target`. Its id is derived from the parent, its state and
/// `request`, the core's id for the operation's first request, so two forks never share one.
pub fn command(parent: &str, target: &Target, request: u64) -> Command {
    let id = derived_uuid(&[
        "zcode-acp-fork",
        parent,
        &target.log_epoch,
        &target.seq.to_string(),
        &target.revision.to_string(),
        &target.row_id.to_string(),
        &request.to_string(),
    ]);
    let payload = json!({"target": {"rowId": target.row_id, "entityId": target.entity_id}});
    Command::new("forkAssistant", payload, id).with_log_epoch(&target.log_epoch)
}

/// The new session of an accepted fork.
pub fn forked(ack: &Ack) -> Result<String, MapperError> {
    match ack {
        Ack::Accepted(Some(result)) => {
            let fields = Fields::native(result, "forkAssistant result")?;
            if fields.str("type")? != "forkAssistant" {
                return Err(protocol("ZCode accepted the fork with an unexpected result"));
            }
            Ok(fields.non_empty_str("sessionId")?.to_string())
        }
        Ack::Accepted(None) => {
            Err(protocol("ZCode accepted the fork without naming the new session"))
        }
        Ack::Refused { status, reason } => {
            Err(error(ErrorKind::Native, format!("ZCode {status} the fork: {reason}")))
        }
        Ack::Stale { .. } => Err(error(
            ErrorKind::Native,
            "The session changed while it was being forked; fork it again",
        )),
        Ack::Noop => Err(error(ErrorKind::Native, "ZCode took no action on the fork")),
        Ack::Duplicate => Err(protocol(
            "ZCode took the fork for a command it already had (a repeated command id); no new \
             session was made",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(rows: Value) -> Value {
        json!({"rows": rows, "atSeq": 12, "atRevision": 7, "atLogEpoch": "e1", "hasMore": false})
    }

    fn text(row_id: u64, entity: &str, can_fork: bool) -> Value {
        let mut row = json!({"rowId": row_id, "turnId": "t", "entityId": entity, "createdAt": 1,
                             "kind": "assistantText", "text": "a", "state": "complete"});
        if can_fork {
            row["actions"] = json!({"canFork": true});
        }
        row
    }

    #[test]
    fn forks_at_the_newest_row_that_can_fork() {
        let rows = json!([text(2, "e2", true), text(5, "e5", true), text(6, "e6", false),
                          {"rowId": 7, "turnId": "u", "kind": "turnHeader", "actions": {"canFork": true}}]);
        let target = target(&page(rows)).unwrap();
        assert_eq!(
            target,
            Target {
                row_id: 5,
                entity_id: "e5".into(),
                revision: 7,
                log_epoch: "e1".into(),
                seq: 12
            }
        );
        let command = command("s1", &target, 40);
        let envelope = command.envelope("s1", Some(target.revision), json!(0));
        assert_eq!(envelope["type"], "forkAssistant");
        assert_eq!(envelope["payload"], json!({"target": {"rowId": 5, "entityId": "e5"}}));
        assert_eq!(envelope["baseRevision"], 7);
        assert_eq!(envelope["baseLogEpoch"], "e1");
        assert_ne!(command.command_id, super::command("s1", &target, 41).command_id);
    }

    #[test]
    fn refuses_a_session_without_a_completed_answer() {
        let error = target(&page(json!([text(1, "e1", false)]))).unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidParams);
        assert!(error.message.contains("no completed answer"), "{}", error.message);
        let nameless = json!([{"rowId": 1, "kind": "assistantText", "actions": {"canFork": true}}]);
        assert_eq!(target(&page(nameless)).unwrap_err().kind, ErrorKind::Protocol);
        assert!(target(&json!({"rows": []})).is_err(), "a page without its position");
    }

    #[test]
    fn reads_the_new_session_from_the_ack() {
        let accepted = Ack::Accepted(Some(json!({"type": "forkAssistant", "sessionId": "s2"})));
        assert_eq!(forked(&accepted).unwrap(), "s2");
        assert!(
            forked(&Ack::Accepted(Some(json!({"type": "createSession", "sessionId": "s2"}))))
                .is_err()
        );
        assert!(forked(&Ack::Accepted(None)).is_err());
        assert!(forked(&Ack::Duplicate).is_err());
        let refused =
            Ack::Refused { status: "rejected", reason: "proto.forkTargetNotStable".into() };
        assert_eq!(
            forked(&refused).unwrap_err().message,
            "ZCode rejected the fork: proto.forkTargetNotStable"
        );
        assert!(forked(&Ack::Stale { revision: 9 }).unwrap_err().message.contains("fork it again"));
    }
}
