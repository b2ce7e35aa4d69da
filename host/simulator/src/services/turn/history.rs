//! `sim:history <n>`: seeds a session with `n` finished messages (user and assistant taking
//! turns) before the prompt's own turn, so paged history (`conversationRowsRangeV4`,
//! `session/load`) can be exercised and benchmarked. A services-only trigger.

use serde_json::{Value, json};

use crate::common::clock::now_ms;
use crate::common::turn::big_history_reply;
use crate::services::conversation::{Batch, Conversation};
use crate::services::server::{Server, Shared};

pub const DEFAULT_MESSAGES: u64 = 10_000;
/// Seeding stops here: beyond it the session file alone gets unwieldy.
const MAX_MESSAGES: u64 = 1_000_000;
/// Rows per frame, well below the 1 MiB physical frame.
const ROWS_PER_FRAME: usize = 200;

/// The message count of a `sim:history [n]` prompt, or `None` for any other prompt.
pub fn history_count(prompt: &str) -> Option<u64> {
    let first = prompt.lines().next().unwrap_or("").trim();
    let rest = first.strip_prefix("sim:history")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    match rest.trim() {
        "" => Some(DEFAULT_MESSAGES),
        number => number.parse().ok().map(|n: u64| n.min(MAX_MESSAGES)),
    }
}

/// Appends `messages` messages as finished exchanges, in frames of [`ROWS_PER_FRAME`] rows.
pub fn seed(server: &Server, shared: &Shared, messages: u64) {
    let mut conversation = shared.lock().expect("conversation lock");
    let mut batch = Batch::default();
    let mut written = 0;
    while written < messages {
        let exchange = written / 2 + 1;
        let turn_id = format!("turn_history_{}_{exchange}", uuid::Uuid::new_v4().simple());
        let at = now_ms();
        let base = |kind: &str, entity: String| json!({"kind": kind, "turnId": turn_id, "productTurnId": turn_id, "entityId": entity, "createdAt": at});
        let header = finished_header(base("turnHeader", format!("turn:{turn_id}")));
        conversation.append_row(&mut batch, header);
        let command_id = format!("history-{exchange}");
        let mut user = base("userInput", format!("input:{command_id}"));
        user["text"] = json!(format!("History message {}", written + 1));
        user["origin"] = json!("realUser");
        user["sourceCommandId"] = json!(command_id);
        conversation.append_row(&mut batch, user);
        written += 1;
        if written < messages {
            let mut reply = base("assistantText", format!("text:{turn_id}"));
            reply["assistantResponseId"] = json!(format!("resp_{turn_id}"));
            reply["text"] = json!(format!("Reply to history message {written}."));
            reply["state"] = json!("complete");
            // The mark its turn's success left (`v4/fork.rs`).
            reply["actions"] = json!({"canFork": true});
            conversation.append_row(&mut batch, reply);
            written += 1;
        }
        if batch.len() >= ROWS_PER_FRAME {
            conversation.commit(std::mem::take(&mut batch));
        }
    }
    conversation.commit(batch);
    server.persist(&conversation);
}

/// The `big-history` fault: puts `bytes` of finished exchanges (a turn header, the user input
/// "History message k", the reply [`big_history_reply`], as the app-server's fault writes them) before the conversation's own rows,
/// which keep their order after them. Row ids are renumbered, so it is only for a
/// conversation nobody follows yet: the first history read of a load.
pub fn prepend(conversation: &mut Conversation, bytes: u64) {
    let log = &mut conversation.publisher.log;
    let mut seeded = Vec::new();
    let mut size = 0u64;
    let mut k = 0u64;
    let at = now_ms();
    while size < bytes {
        k += 1;
        let turn_id = format!("turn_big_history_{k}");
        let base = |kind: &str, entity: String| json!({"kind": kind, "turnId": turn_id, "productTurnId": turn_id, "entityId": entity, "createdAt": at, "createdAtSeq": 0});
        let header = finished_header(base("turnHeader", format!("turn:{turn_id}")));
        let command_id = format!("big-history-{k}");
        let mut user = base("userInput", format!("input:{command_id}"));
        user["text"] = json!(format!("History message {k}"));
        user["origin"] = json!("realUser");
        user["sourceCommandId"] = json!(command_id);
        let mut reply = base("assistantText", format!("text:{turn_id}"));
        reply["assistantResponseId"] = json!(format!("resp_{turn_id}"));
        reply["text"] = json!(big_history_reply(k));
        reply["state"] = json!("complete");
        for mut row in [header, user, reply] {
            row["rowId"] = json!(seeded.len() as u64 + 1);
            size += row.to_string().len() as u64;
            seeded.push(row);
        }
    }
    let shift = seeded.len() as u64;
    for row in &mut log.rows {
        let id = row["rowId"].as_u64().unwrap_or(0);
        row["rowId"] = json!(id + shift);
    }
    seeded.append(&mut log.rows);
    log.rows = seeded;
    log.next_row_id += shift;
}

/// The header row of a turn the user started and ZCode finished, in no time, when it was made.
fn finished_header(mut header: Value) -> Value {
    let at = header["createdAt"].clone();
    header["origin"] = json!("userInput");
    header["executionKind"] = json!("agent");
    header["state"] = json!("completedSuccess");
    header["startedAt"] = at.clone();
    header["endedAt"] = at;
    header["activeMs"] = json!(0);
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_trigger() {
        assert_eq!(history_count("sim:history"), Some(DEFAULT_MESSAGES));
        assert_eq!(history_count("sim:history 25\nmore"), Some(25));
        assert_eq!(history_count("sim:history 99999999"), Some(MAX_MESSAGES));
        assert_eq!(history_count("sim:historyx"), None);
        assert_eq!(history_count("sim:history lots"), None);
        assert_eq!(history_count("hello"), None);
    }
}
