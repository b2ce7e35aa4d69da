//! The rows a turn writes into its session's V4 log, the same on both servers (3.15.1
//! `packages/shared/src/zcode-protocol-v4/rows.ts`): streamed text and reasoning, and tool calls
//! from their streamed input to their end. Each function stages its deltas into the caller's
//! batch, so a server commits them with whatever else its frame carries.

use serde_json::{Value, json};

use super::publisher::{Batch, Publisher};
use super::rows::tool_output;
use crate::common::clock::now_ms;
use crate::common::scenario::split_chars;

/// Who a turn's rows belong to.
pub struct TurnRows {
    pub turn_id: String,
    /// The assistant response its text, reasoning and tool rows are part of.
    pub response_id: String,
}

impl TurnRows {
    /// The fields every row of the turn carries.
    pub fn row(&self, kind: &str, entity: String) -> Value {
        json!({"kind": kind, "turnId": self.turn_id, "productTurnId": self.turn_id, "entityId": entity})
    }

    /// An empty `assistantText` or `reasoning` row, grown by `Publisher::stream_row` on `text`;
    /// a text row names the model that writes it.
    pub fn open_text(
        &self,
        log: &mut Publisher,
        batch: &mut Batch,
        (kind, entity): (&str, String),
        model: Option<Value>,
    ) -> u64 {
        let mut row = self.row(kind, entity);
        row["assistantResponseId"] = json!(self.response_id);
        row["text"] = json!("");
        row["state"] = json!("streaming");
        if let Some(model) = model.filter(|_| kind == "assistantText") {
            row["model"] = model;
        }
        log.append_row(batch, row)
    }

    /// A tool call row: its input text streamed in `chunks` pieces, then the input whole.
    pub fn announce_tool(
        &self,
        log: &mut Publisher,
        batch: &mut Batch,
        call_id: &str,
        name: &str,
        input: &Value,
        chunks: usize,
    ) -> u64 {
        let mut row = self.row("toolCall", format!("tool:{call_id}"));
        row["assistantResponseId"] = json!(self.response_id);
        row["toolCallId"] = json!(call_id);
        row["toolName"] = json!(name);
        row["status"] = json!("inputStreaming");
        row["inputText"] = json!("");
        row["startedAt"] = json!(now_ms());
        let id = log.append_row(batch, row);
        let text = input.to_string();
        let piece = text.chars().count().div_ceil(chunks.max(1)).max(1);
        for delta in split_chars(&text, piece) {
            log.stream_row(batch, id, "inputText", &delta);
        }
        let input = input.clone();
        log.upsert_row(batch, id, |row| row["input"] = input);
        id
    }

    /// Closes the turn's header in its final `state`; a success also marks the turn's last
    /// answer as a fork target and sends it again (`fork.rs`).
    pub fn close(
        &self,
        log: &mut Publisher,
        batch: &mut Batch,
        header: u64,
        state: &str,
        (started_at, output_tokens): (u64, u64),
    ) {
        let now = now_ms();
        log.upsert_row(batch, header, |row| {
            row["state"] = json!(state);
            row["endedAt"] = json!(now);
            row["activeMs"] = json!(now.saturating_sub(started_at));
            row["outputTokens"] = json!(output_tokens);
        });
        if state == "completedSuccess" {
            log.mark_stable_answer(batch, &self.turn_id);
        }
    }
}

/// Settles a streamed row `complete`; a reasoning row keeps how long it took.
pub fn close_text(log: &mut Publisher, batch: &mut Batch, row: u64, started: u64) {
    log.upsert_row(batch, row, |row| {
        row["state"] = json!("complete");
        if row["kind"] == "reasoning" {
            row["durationMs"] = json!(now_ms().saturating_sub(started));
        }
    });
}

/// The tool waits on the permission `interaction`.
pub fn await_approval(log: &mut Publisher, batch: &mut Batch, row: u64, interaction: &str) {
    log.upsert_row(batch, row, |row| {
        row["status"] = json!("pendingApproval");
        row["approvalInteractionId"] = json!(interaction);
    });
}

/// The tool runs with `input` (a permission's answer may have changed it).
pub fn run_tool(log: &mut Publisher, batch: &mut Batch, row: u64, input: &Value) {
    let input = input.clone();
    log.upsert_row(batch, row, |row| {
        row["status"] = json!("running");
        row["input"] = input;
        remove(row, "approvalInteractionId");
    });
}

/// A running tool's latest progress.
pub fn tool_progress(log: &mut Publisher, batch: &mut Batch, row: u64, message: Option<&str>) {
    log.upsert_row(batch, row, |row| {
        let mut entry = json!({"updatedAt": now_ms()});
        if let Some(message) = message {
            entry["message"] = json!(message);
        }
        row["progress"] = entry;
    });
}

/// The tool's end: `success` with its output text (cut as ZCode cuts it), or `error` with a
/// code and message.
pub fn end_tool(
    log: &mut Publisher,
    batch: &mut Batch,
    row: u64,
    result: Result<&str, (&str, &str)>,
) {
    log.upsert_row(batch, row, |row| {
        remove(row, "progress");
        remove(row, "approvalInteractionId");
        row["endedAt"] = json!(now_ms());
        match result {
            Ok(text) => {
                row["status"] = json!("success");
                let call_id = row["toolCallId"].as_str().unwrap_or_default().to_owned();
                row["output"] = tool_output(text, &call_id);
            }
            Err((code, message)) => {
                row["status"] = json!("error");
                row["error"] = json!({"code": code, "message": message});
            }
        }
    });
}

/// A stop while the tool waited or ran.
pub fn cancel_tool(log: &mut Publisher, batch: &mut Batch, row: u64) {
    log.upsert_row(batch, row, |row| {
        row["status"] = json!("cancelled");
        row["endedAt"] = json!(now_ms());
        remove(row, "progress");
    });
}

fn remove(row: &mut Value, key: &str) {
    if let Some(fields) = row.as_object_mut() {
        fields.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v4::publisher::{Log, Subscriber};

    /// A log with one subscriber, and the rows of turn `t1`.
    fn log() -> (Publisher, TurnRows) {
        let mut log = Publisher::new("sess_a", Log::new("epoch_a".into(), Vec::new()), 100);
        log.subscribers.push(Subscriber::new("sub".into(), "conversation/sess_a", "conn"));
        (log, TurnRows { turn_id: "t1".into(), response_id: "resp_1".into() })
    }

    /// The ops of the frame `write` stages.
    fn ops(log: &mut Publisher, write: impl FnOnce(&mut Publisher, &mut Batch)) -> Vec<Value> {
        let mut batch = Batch::default();
        write(log, &mut batch);
        let frames = log.commit(batch);
        frames[0].logical_value()["payload"]["deltas"].as_array().unwrap().clone()
    }

    #[test]
    fn a_tool_row_streams_its_input_then_runs_and_ends_with_its_cut_output() {
        let (mut log, rows) = log();
        let input = json!({"path": "a.txt"});
        let mut row = 0;
        let announced = ops(&mut log, |log, batch| {
            row = rows.announce_tool(log, batch, "call_1", "Read", &input, 2);
        });
        let kinds: Vec<&str> = announced.iter().filter_map(|op| op["op"].as_str()).collect();
        assert_eq!(kinds, ["row.appended", "row.delta", "row.delta", "row.upserted"]);
        let appended = &announced[0]["row"];
        assert_eq!(
            (&appended["status"], &appended["entityId"]),
            (&json!("inputStreaming"), &json!("tool:call_1"))
        );
        let streamed: String =
            announced[1..3].iter().filter_map(|op| op["append"].as_str()).collect();
        assert_eq!(streamed, input.to_string());
        assert_eq!(announced[3]["row"]["input"], input);

        ops(&mut log, |log, batch| await_approval(log, batch, row, "perm_1"));
        let running = ops(&mut log, |log, batch| run_tool(log, batch, row, &input));
        assert_eq!(running[0]["row"]["status"], "running");
        assert!(running[0]["row"].get("approvalInteractionId").is_none());
        let long = "x".repeat(70 * 1024);
        let ended = ops(&mut log, |log, batch| end_tool(log, batch, row, Ok(&long)));
        let ended = &ended[0]["row"];
        assert_eq!(ended["status"], "success");
        assert!(ended["endedAt"].is_u64());
        assert_eq!(ended["output"], tool_output(&long, "call_1"));
        assert!(ended["output"]["truncated"].is_object());
    }

    #[test]
    fn a_failed_or_stopped_tool_says_so() {
        let (mut log, rows) = log();
        let mut batch = Batch::default();
        let failed = rows.announce_tool(&mut log, &mut batch, "call_1", "Bash", &json!({}), 1);
        let stopped = rows.announce_tool(&mut log, &mut batch, "call_2", "Bash", &json!({}), 1);
        log.commit(batch);
        let error =
            ops(&mut log, |log, batch| end_tool(log, batch, failed, Err(("toolError", "boom"))));
        assert_eq!(error[0]["row"]["error"], json!({"code": "toolError", "message": "boom"}));
        let cancelled = ops(&mut log, |log, batch| cancel_tool(log, batch, stopped));
        assert_eq!(cancelled[0]["row"]["status"], "cancelled");
    }

    #[test]
    fn a_turn_closes_its_header_and_marks_a_successful_answer() {
        let (mut log, rows) = log();
        let mut batch = Batch::default();
        let header = log.append_row(&mut batch, rows.row("turnHeader", "turn:t1".into()));
        let model = Some(json!("GLM-5.2"));
        let text = rows.open_text(&mut log, &mut batch, ("assistantText", "text:1".into()), model);
        let thought = rows.open_text(&mut log, &mut batch, ("reasoning", "r:1".into()), None);
        log.stream_row(&mut batch, text, "text", "Done.");
        close_text(&mut log, &mut batch, text, 0);
        close_text(&mut log, &mut batch, thought, 0);
        log.commit(batch);
        let closed =
            ops(&mut log, |log, batch| rows.close(log, batch, header, "completedSuccess", (0, 7)));
        assert_eq!(closed[0]["row"]["state"], "completedSuccess");
        assert_eq!(closed[0]["row"]["outputTokens"], 7);
        // The answer is sent again, marked as a fork target.
        assert_eq!(closed[1]["row"]["rowId"], text);
        assert_eq!(closed[1]["row"]["text"], "Done.");
        assert_eq!(closed[1]["row"]["model"], "GLM-5.2");
        let reasoning = log.rows().iter().find(|row| row["rowId"] == thought).unwrap();
        assert!(reasoning["durationMs"].is_u64() && reasoning.get("model").is_none());
    }
}
