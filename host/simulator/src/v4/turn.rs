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
