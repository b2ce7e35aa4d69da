//! The V4 conversation topic → ACP: what Desktop itself renders from. The rows of the turn
//! zcode-acp started (assistant text, reasoning, tool calls and the turn header that says when
//! the turn's content is complete) and the session state ACP shows (plan, title, context usage).
//!
//! Rows are ZCode's own projection (3.15.1 `zcode-protocol-v4/rows.ts`, `delta.ts`, `apply.ts`):
//! a row is appended, replaced whole by `row.upserted`, and streams text only through
//! `row.delta` appends to a streaming row. The mapper keeps, per row of its turn, what it has
//! already shown, so a replayed or resynced row adds only what is new and nothing is sent twice.

use std::collections::BTreeMap;

use serde_json::Value;
use zcode_contract::{Action, MapperError};

use crate::subscription::Payload;
use crate::tools::{Outcome, Tools};
use zcode_mapper_sdk::acp::update::{self, EntryStatus, PlanEntry, Priority};
use zcode_mapper_sdk::elide::{Discontinued, FNV_EMPTY, Text, fnv};
use zcode_mapper_sdk::json::protocol;
use zcode_v4::stream::Delta;

/// Row kinds that belong to a turn but carry nothing ACP shows: the echo of the prompt, a
/// subagent summary (its Agent tool call carries the result), hooks, timeline markers and
/// shared artifacts.
const QUIET_ROWS: [&str; 5] =
    ["userInput", "subagent", "hookInvocation", "timelineMarker", "artifact"];

/// Delta ops that change nothing ACP shows: plugin UI mailboxes and the workflow-run table.
const QUIET_OPS: [&str; 6] = [
    "pluginUi.resourceUpdated",
    "pluginUi.resourceListChanged",
    "pluginUi.instanceClosed",
    "pluginUi.appToolCall",
    "workflowRun.updated",
    "workflowRun.removed",
];

/// The session the frames map into.
pub struct Context<'a> {
    pub tools: &'a mut Tools,
    pub workspace: &'a str,
    /// The mode the client was last told of, by these frames or by a switch's answer: a change
    /// ZCode reports is shown once, whichever tells it first.
    pub shown_mode: &'a mut Option<String>,
}

/// The turn zcode-acp started: found by the command id its prompt was sent with.
struct Watch {
    command_id: Option<String>,
    turn_id: Option<String>,
    /// The turn header left `running`: every row of the turn is final.
    closed: bool,
}

/// What has been shown of one row of the watched turn. A text row keeps the length of the text
/// shown and a fingerprint of it (FNV-1a, as `zcode_v4::acp::track` keeps its rows), not the
/// text: a 1 000 000-delta turn showed 12 MB, and linear memory never shrinks (issue 27). A
/// whole row must still extend exactly what was shown.
enum Row {
    Text { thought: bool, shown: Shown },
    Tool { id: String, status: String, preview: String },
}

/// The text shown of a row: its length in bytes and its fingerprint.
struct Shown {
    len: usize,
    fingerprint: u64,
}

impl Shown {
    fn new() -> Self {
        Self { len: 0, fingerprint: FNV_EMPTY }
    }

    fn push(&mut self, text: &str) {
        self.len += text.len();
        self.fingerprint = fnv(self.fingerprint, text.as_bytes());
    }

    /// What `full` adds to the text shown.
    fn new_in<'a>(&self, full: &'a Text<'_>, id: u64) -> Result<&'a str, MapperError> {
        full.continuing(self.len, self.fingerprint).map_err(|why| {
            protocol(match why {
                Discontinued::Rewritten => format!("V4 rewrote the text of row {id}"),
                Discontinued::NotKept { bytes } => format!(
                    "V4 row {id} brought {bytes} bytes of text it had not streamed, in a line \
                     too long to keep whole"
                ),
            })
        })
    }
}

#[derive(Default)]
pub struct Conversation {
    watch: Option<Watch>,
    rows: BTreeMap<u64, Row>,
    snapshot_seen: bool,
    title: Option<String>,
    /// The collaboration mode the session state last named (`config.mode`).
    mode: Option<String>,
    /// A plan with entries is on the client's screen (so a removed plan must be cleared).
    plan_shown: bool,
}

fn chunk(thought: bool, delta: &str) -> Action {
    Action::Update(if thought { update::agent_thought(delta) } else { update::agent_text(delta) })
}

fn required<'a>(value: &'a Value, key: &str, what: &str) -> Result<&'a Value, MapperError> {
    value.get(key).ok_or_else(|| protocol(format!("V4 {what} without `{key}`")))
}

fn required_str<'a>(value: &'a Value, key: &str, what: &str) -> Result<&'a str, MapperError> {
    required(value, key, what)?
        .as_str()
        .ok_or_else(|| protocol(format!("V4 {what} whose `{key}` is not a string")))
}

fn row_id(value: &Value, key: &str, what: &str) -> Result<u64, MapperError> {
    required(value, key, what)?
        .as_u64()
        .ok_or_else(|| protocol(format!("V4 {what} whose `{key}` is not a row id")))
}

impl Conversation {
    /// A prompt was sent with `command_id`: the turn ZCode starts for it is the one to show.
    pub fn watch(&mut self, command_id: Option<String>) {
        self.watch = Some(Watch { command_id, turn_id: None, closed: false });
        self.rows.clear();
    }

    /// The turn is over (or its prompt was refused).
    pub fn unwatch(&mut self) {
        self.watch = None;
        self.rows.clear();
    }

    /// Every frame of the watched turn's content has been applied.
    pub fn turn_closed(&self) -> bool {
        self.watch.as_ref().is_some_and(|w| w.closed)
    }

    /// A V4 frame's payload applied: what it shows is added to `out`, the batch's actions. After
    /// an error `out` may hold part of it, which the caller takes back.
    pub fn apply(
        &mut self,
        payload: Payload,
        cx: &mut Context<'_>,
        out: &mut Vec<Action>,
    ) -> Result<(), MapperError> {
        match payload {
            Payload::Snapshot(snapshot) => {
                let initial = !self.snapshot_seen;
                self.snapshot_seen = true;
                self.state(&snapshot, initial, cx, out);
                let window = snapshot
                    .pointer("/rows/window")
                    .and_then(Value::as_array)
                    .ok_or_else(|| protocol("V4 snapshot without rows"))?;
                // A snapshot replaces state: each row is taken as an upsert, so what the mapper
                // already showed is skipped and what it missed is shown.
                for row in window {
                    self.row(row, cx, out)?;
                }
            }
            Payload::Deltas(deltas) => {
                for delta in &deltas {
                    self.delta(delta, cx, out)?;
                }
            }
        }
        Ok(())
    }

    fn delta(
        &mut self,
        delta: &Value,
        cx: &mut Context<'_>,
        out: &mut Vec<Action>,
    ) -> Result<(), MapperError> {
        match required_str(delta, "op", "delta")? {
            "row.appended" | "row.upserted" => {
                self.row(required(delta, "row", "row delta")?, cx, out)
            }
            "row.delta" => self.append(delta, out),
            "row.removed" => {
                // An edit or retry cut the branch: those rows are gone, nothing ACP can retract.
                let from = row_id(delta, "fromRowId", "row removal")?;
                self.rows.retain(|id, _| *id < from);
                Ok(())
            }
            "state.updated" => {
                self.state(required(delta, "patch", "state delta")?, false, cx, out);
                Ok(())
            }
            op if QUIET_OPS.contains(&op) => Ok(()),
            op => Err(protocol(format!("ZCode sent a V4 delta zcode-acp does not know: {op}"))),
        }
    }

    /// The parts of a snapshot or a state patch that ACP shows (a patch replaces whole keys).
    fn state(&mut self, state: &Value, initial: bool, cx: &mut Context<'_>, out: &mut Vec<Action>) {
        if let Some(plan) = state.get("plan") {
            let entries: Vec<PlanEntry<'_>> = plan
                .get("items")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|item| PlanEntry {
                    content: item.get("content").and_then(Value::as_str).unwrap_or(""),
                    priority: Priority::Medium,
                    status: match item.get("status").and_then(Value::as_str) {
                        Some("inProgress") => EntryStatus::InProgress,
                        Some("completed") => EntryStatus::Completed,
                        _ => EntryStatus::Pending,
                    },
                })
                .collect();
            // No plan, and none shown: nothing to clear.
            if !entries.is_empty() || self.plan_shown {
                self.plan_shown = !entries.is_empty();
                out.push(Action::Update(update::plan(&entries)));
            }
        }
        if let Some(title) =
            state.pointer("/meta/title").and_then(Value::as_str).filter(|t| !t.is_empty())
            && self.title.as_deref() != Some(title)
        {
            // The first snapshot only tells the mapper what the client already has.
            if !initial {
                out.extend(update::session_info(Some(title), None).map(Action::Update));
            }
            self.title = Some(title.to_string());
        }
        // ZCode changes the mode itself too (an approved plan leaves `plan`).
        if let Some(mode) = state.pointer("/config/mode").and_then(Value::as_str)
            && self.mode.as_deref() != Some(mode)
        {
            if !initial && cx.shown_mode.as_deref() != Some(mode) {
                out.push(Action::Update(update::current_mode(mode)));
                *cx.shown_mode = Some(mode.to_string());
            }
            self.mode = Some(mode.to_string());
        }
        if let Some(window) = state.pointer("/usage/contextWindow")
            && let (Some(used), Some(size)) = (
                window.get("usedTokens").and_then(Value::as_f64),
                window.get("maxTokens").and_then(Value::as_f64),
            )
        {
            out.push(Action::Update(update::usage(used as u64, size as u64, None)));
        }
    }

    /// One whole row (appended, upserted, or out of a snapshot).
    fn row(
        &mut self,
        row: &Value,
        cx: &mut Context<'_>,
        out: &mut Vec<Action>,
    ) -> Result<(), MapperError> {
        let id = row_id(row, "rowId", "row")?;
        let kind = required_str(row, "kind", "row")?;
        let turn = required_str(row, "turnId", "row")?;
        let Some(watch) = self.watch.as_mut() else { return Ok(()) };
        if kind == "turnHeader" {
            let state = required_str(row, "state", "turn header")?;
            let ours = match &watch.turn_id {
                Some(current) => current == turn,
                // The turn the prompt's command started; a header naming no command (older
                // projections) is taken only while none was adopted.
                None => {
                    let source = row.get("sourceCommandId").and_then(Value::as_str);
                    let ours = state == "running"
                        && match (source, &watch.command_id) {
                            (Some(source), Some(command)) => source == command,
                            (Some(_), None) => false,
                            (None, _) => true,
                        };
                    if ours {
                        watch.turn_id = Some(turn.to_string());
                    }
                    ours
                }
            };
            if ours {
                match state {
                    "running" => {}
                    "completedSuccess" | "completedInterrupted" | "failed" => watch.closed = true,
                    other => {
                        return Err(protocol(format!("V4 turn header of unknown state {other}")));
                    }
                }
            }
            return Ok(());
        }
        if watch.turn_id.as_deref() != Some(turn) {
            return Ok(());
        }
        match kind {
            "assistantText" | "reasoning" => {
                let full = Text::of(required(row, "text", "text row")?).ok_or_else(|| {
                    protocol("V4 text row whose `text` is not a string".to_string())
                })?;
                self.text_row(id, kind == "reasoning", &full, out)
            }
            "toolCall" => self.tool(id, row, cx, out),
            quiet if QUIET_ROWS.contains(&quiet) => Ok(()),
            other => Err(protocol(format!("ZCode sent a V4 row zcode-acp does not know: {other}"))),
        }
    }

    /// The deltas of a frame read by `Subscription::deltas`: what [`Conversation::apply`]
    /// does with them, without a tree of the typed ones.
    pub fn apply_deltas(
        &mut self,
        deltas: &[Delta<'_>],
        cx: &mut Context<'_>,
        out: &mut Vec<Action>,
    ) -> Result<(), MapperError> {
        for delta in deltas {
            match delta {
                Delta::Append(append) => {
                    self.append_text(append.row_id, &append.path, &append.append, out)?
                }
                Delta::TextRow(row) => {
                    // As `row` reads a text row: only the watched turn's rows are shown.
                    let watched = self.watch.as_ref().and_then(|w| w.turn_id.as_deref());
                    if watched == Some(&*row.turn_id) {
                        self.text_row(row.row_id, row.kind == "reasoning", &row.text, out)?;
                    }
                }
                Delta::Tree(delta) => self.delta(delta, cx, out)?,
            }
        }
        Ok(())
    }

    /// A text row of the watched turn, whole: what is new in it is shown.
    fn text_row(
        &mut self,
        id: u64,
        thought: bool,
        full: &Text<'_>,
        out: &mut Vec<Action>,
    ) -> Result<(), MapperError> {
        let Row::Text { shown, .. } =
            self.rows.entry(id).or_insert_with(|| Row::Text { thought, shown: Shown::new() })
        else {
            return Err(protocol(format!("V4 row {id} changed its kind")));
        };
        // Text only grows (appends go to streaming rows); a rewrite cannot be shown.
        let new = shown.new_in(full, id)?;
        if !new.is_empty() {
            out.push(chunk(thought, new));
            shown.push(new);
        }
        Ok(())
    }

    /// `row.delta`: text appended to a streaming row of the watched turn.
    fn append(&mut self, delta: &Value, out: &mut Vec<Action>) -> Result<(), MapperError> {
        let id = row_id(delta, "rowId", "row delta")?;
        let path = required_str(delta, "path", "row delta")?;
        let append = required_str(delta, "append", "row delta")?;
        self.append_text(id, path, append, out)
    }

    fn append_text(
        &mut self,
        id: u64,
        path: &str,
        append: &str,
        out: &mut Vec<Action>,
    ) -> Result<(), MapperError> {
        match (self.rows.get_mut(&id), path) {
            (Some(Row::Text { thought, shown }), "text") => {
                if !append.is_empty() {
                    out.push(chunk(*thought, append));
                    shown.push(append);
                }
                Ok(())
            }
            // Tool input streams until the row carries it whole; a tool's output is shown when
            // the call ends. A delta to a row of another turn changes nothing shown.
            (_, "text" | "inputText" | "output.text" | "summaryText") => Ok(()),
            (_, other) => Err(protocol(format!("V4 row delta of unknown path {other}"))),
        }
    }

    fn tool(
        &mut self,
        id: u64,
        row: &Value,
        cx: &mut Context<'_>,
        out: &mut Vec<Action>,
    ) -> Result<(), MapperError> {
        let call = required_str(row, "toolCallId", "tool row")?.to_string();
        let status = required_str(row, "status", "tool row")?;
        let name = row.get("toolName").and_then(Value::as_str);
        // The input whole once the model finished it; before that only its streamed text.
        let input = row.get("input").filter(|i| !i.is_null()).cloned().or_else(|| {
            (status != "inputStreaming")
                .then(|| row.get("inputText").and_then(Value::as_str))
                .flatten()
                .and_then(|text| serde_json::from_str(text).ok())
        });
        cx.tools.set(&call, name, input.as_ref());
        let entry = self.rows.entry(id).or_insert_with(|| Row::Tool {
            id: call.clone(),
            status: String::new(),
            preview: String::new(),
        });
        let Row::Tool { id: known, status: last, preview } = entry else {
            return Err(protocol(format!("V4 row {id} changed its kind")));
        };
        if *known != call {
            return Err(protocol(format!("V4 row {id} changed its tool call")));
        }
        if status == "inputStreaming" && input.is_none() {
            *last = status.to_string();
            return Ok(());
        }
        // Announced once (a permission question may have announced it already).
        if let Some(announce) = cx.tools.announce(&call, cx.workspace) {
            out.push(Action::Update(announce));
        }
        if status != last.as_str() {
            match status {
                "inputStreaming" | "pendingApproval" => {}
                "running" => out.push(Action::Update(cx.tools.started(&call))),
                "success" => {
                    let output = row.get("output").cloned().unwrap_or(Value::Null);
                    let text = output.get("text").and_then(Value::as_str).unwrap_or("").to_string();
                    out.extend(
                        cx.tools
                            .finished(&call, Outcome::Done { text, raw: &output }, cx.workspace)
                            .map(Action::Update),
                    );
                }
                "error" => {
                    let message =
                        row.pointer("/error/message").and_then(Value::as_str).unwrap_or("");
                    out.extend(
                        cx.tools
                            .finished(&call, Outcome::Failed(message), cx.workspace)
                            .map(Action::Update),
                    );
                }
                "cancelled" => out.extend(
                    cx.tools
                        .finished(
                            &call,
                            Outcome::Failed("The tool call was cancelled"),
                            cx.workspace,
                        )
                        .map(Action::Update),
                ),
                other => return Err(protocol(format!("V4 tool row of unknown status {other}"))),
            }
            *last = status.to_string();
        }
        // A running Bash shows its bounded, cumulative output preview: the content is replaced.
        if status == "running"
            && let Some(tail) = row.pointer("/outputPreview/text").and_then(Value::as_str)
            && !tail.is_empty()
            && tail != preview.as_str()
        {
            out.push(Action::Update(cx.tools.progress(&call, tail)));
            *preview = tail.to_string();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
