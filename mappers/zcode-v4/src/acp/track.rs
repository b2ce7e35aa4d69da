//! What the client has been told about each row, and the ACP updates a row's change makes.
//!
//! A row is self-contained and changes only by `row.upserted` (a whole new version) or
//! `row.delta` (text appended to a streaming row). Text already sent cannot be taken back, so
//! text rows keep a fingerprint of what was sent (FNV-1a, extended as text is appended) and
//! an upsert must extend it: ZCode's rows contract says streamed text only grows
//! (`rows.ts`: appends go to `streaming` rows; a new response gets a new row). Tool calls are
//! announced once their input is known, then move forward through their statuses.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{Value, json};
use zcode_contract::MapperError;

use crate::acp::tools::{
    self, completed_content, default_title, error_content, input_diff, locations, tool_kind,
};
use crate::acp::{text, with_fields};
use crate::rows::{HeaderState, Row, RowBody, TextState, ToolRow, ToolStatus};
use zcode_mapper_sdk::acp::update::{
    self, Chunk, ToolCall, ToolCallUpdate, ToolStatus as AcpStatus,
};
use zcode_mapper_sdk::elide::{Discontinued, FNV_EMPTY, Text, fnv};
use zcode_mapper_sdk::json::protocol;

/// Final rows tracked at most; older final rows are forgotten (streaming rows never are).
const MAX_FINAL_ROWS: usize = 4096;
const CANCELLED_TOOL: &str = "Tool call was cancelled";
const FAILED_TOOL: &str = "Tool execution failed";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TextKind {
    Message,
    Thought,
}

impl TextKind {
    fn chunk(self) -> Chunk {
        match self {
            TextKind::Message => Chunk::Agent,
            TextKind::Thought => Chunk::Thought,
        }
    }
}

#[derive(Clone, Debug)]
struct Tool {
    tool_call_id: String,
    name: String,
    announced: bool,
    status: ToolStatus,
    input: Option<Value>,
    input_text: String,
    output_text: String,
}

#[derive(Clone, Debug)]
enum Track {
    Text {
        kind: TextKind,
        sent: usize,
        fingerprint: u64,
        streaming: bool,
        message_id: Option<String>,
    },
    Tool(Box<Tool>),
    Header {
        state: HeaderState,
        source_command_id: Option<String>,
    },
    UserInput,
    Subagent {
        streaming: bool,
    },
    Other,
}

impl Track {
    fn is_final(&self) -> bool {
        match self {
            Track::Text { streaming, .. } | Track::Subagent { streaming } => !streaming,
            Track::Tool(tool) => tool.status.is_final(),
            Track::Header { state, .. } => *state != HeaderState::Running,
            Track::UserInput | Track::Other => true,
        }
    }
}

/// What a row change means for the running turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnSignal {
    /// A turn header appeared or changed.
    Header { row_id: u64, state: HeaderState, source_command_id: Option<String> },
    /// A user input row carries this source command id.
    Input { source_command_id: String },
}

/// An ACP update of one change.
#[derive(Clone, Debug)]
pub enum Update {
    /// Its JSON text.
    Text(String),
    /// A finished tool, which carries its output twice (megabytes): a tree, written as text
    /// ([`Update::into_text`]) once the row it came from is dropped, so that the row, the tree
    /// and the text are never held at once (F-20).
    Tree(Value),
}

impl Update {
    pub fn into_text(self) -> String {
        match self {
            Update::Text(text) => text,
            Update::Tree(tree) => text(&tree),
        }
    }
}

impl From<String> for Update {
    fn from(text: String) -> Self {
        Update::Text(text)
    }
}

/// Updates and turn signals of one change.
#[derive(Default, Debug)]
pub struct Emitted {
    pub updates: Vec<Update>,
    pub signals: Vec<TurnSignal>,
}

#[derive(Default)]
pub struct Tracker {
    rows: BTreeMap<u64, Track>,
    /// Tool call id → row id, for permission requests that name a tool.
    tools: BTreeMap<String, u64>,
    /// The highest row id the client knows (sent, replayed or taken as the baseline).
    watermark: Option<u64>,
    /// Command ids of this client's own prompts (most recent last): their input rows are not
    /// echoed back.
    own_inputs: Vec<String>,
}

/// Own prompts remembered (a prompt's input row appears within its turn).
const OWN_INPUTS: usize = 16;

fn chunk(kind: Chunk, text: &str, message_id: Option<&str>) -> String {
    update::text_chunk(kind, text, message_id)
}

fn raw_input(tool: &Tool) -> Option<Cow<'_, Value>> {
    raw_input_of(tool.input.as_ref(), &tool.input_text)
}

/// The tool's parsed input (borrowed: a write's input can be megabytes, F-20), else its input
/// text as JSON (or as a string).
fn raw_input_of<'a>(input: Option<&'a Value>, input_text: &str) -> Option<Cow<'a, Value>> {
    if let Some(input) = input {
        return Some(Cow::Borrowed(input));
    }
    if input_text.is_empty() {
        return None;
    }
    Some(Cow::Owned(serde_json::from_str(input_text).unwrap_or_else(|_| json!(input_text))))
}

fn acp_status(status: ToolStatus) -> AcpStatus {
    match status {
        ToolStatus::InputStreaming | ToolStatus::PendingApproval => AcpStatus::Pending,
        ToolStatus::Running => AcpStatus::InProgress,
        ToolStatus::Success => AcpStatus::Completed,
        ToolStatus::Error | ToolStatus::Cancelled => AcpStatus::Failed,
    }
}

/// `{text, truncated?}` of a tool's output: ZCode's `display` is decoration and may be large.
fn raw_output(text: &str, truncated: Option<&Value>) -> Value {
    let mut output = json!({"text": text});
    if let Some(truncated) = truncated {
        output["truncated"] = truncated.clone();
    }
    output
}

impl Tracker {
    pub fn watermark(&self) -> Option<u64> {
        self.watermark
    }

    /// Records the command id of a prompt this client sends.
    pub fn own_input(&mut self, command_id: &str) {
        if self.own_inputs.len() == OWN_INPUTS {
            self.own_inputs.remove(0);
        }
        self.own_inputs.push(command_id.to_string());
    }

    pub fn knows(&self, row_id: u64) -> bool {
        self.rows.contains_key(&row_id)
    }

    /// The tool call of `tool_call_id`: its name and input, if the row is known.
    pub fn tool(&self, tool_call_id: &str) -> Option<(&str, Option<Cow<'_, Value>>)> {
        let row = self.tools.get(tool_call_id)?;
        match self.rows.get(row)? {
            Track::Tool(tool) => Some((&tool.name, raw_input(tool))),
            _ => None,
        }
    }

    /// Announces a tool a permission is about, if its row is known and not yet announced.
    pub fn announce_for_permission(
        &mut self,
        tool_call_id: &str,
        workspace: &str,
    ) -> Option<String> {
        let row = *self.tools.get(tool_call_id)?;
        match self.rows.get_mut(&row)? {
            Track::Tool(tool) if !tool.announced => Some(announce(tool, workspace)),
            _ => None,
        }
    }

    fn raise(&mut self, row_id: u64) {
        self.watermark = Some(self.watermark.map_or(row_id, |w| w.max(row_id)));
    }

    /// `row.appended`, or a row the client has not seen in a snapshot or page: sent as new.
    pub fn appended(&mut self, row: &Row, workspace: &str) -> Result<Emitted, MapperError> {
        if self.rows.contains_key(&row.id) {
            return Err(protocol(format!("row.appended: row {} exists already", row.id)));
        }
        self.raise(row.id);
        let mut out = Emitted::default();
        let track = match &row.body {
            RowBody::AssistantText { text, state, response_id } => {
                let id = response_id.as_deref();
                text_track(TextKind::Message, text, *state, id, row.id, &mut out)?
            }
            RowBody::Reasoning { text, state, response_id } => {
                let id = response_id.as_deref();
                text_track(TextKind::Thought, text, *state, id, row.id, &mut out)?
            }
            RowBody::UserInput { origin, text, source_command_id, attachments } => {
                if let Some(id) = source_command_id {
                    out.signals.push(TurnSignal::Input { source_command_id: id.clone() });
                }
                // Another client's (or ZCode's own) message is shown; this client's own prompt
                // is not echoed back to it.
                let own = source_command_id.as_ref().is_some_and(|id| self.own_inputs.contains(id));
                if *origin == "realUser" && !own {
                    out.updates.push(user_message(text, attachments).into());
                }
                Track::UserInput
            }
            RowBody::TurnHeader { state, source_command_id, .. } => {
                out.signals.push(TurnSignal::Header {
                    row_id: row.id,
                    state: *state,
                    source_command_id: source_command_id.clone(),
                });
                Track::Header { state: *state, source_command_id: source_command_id.clone() }
            }
            RowBody::ToolCall(row_tool) => {
                let mut tool = new_tool(row_tool);
                self.tools.insert(tool.tool_call_id.clone(), row.id);
                if row_tool.status != ToolStatus::InputStreaming {
                    out.updates.push(announce(&mut tool, workspace).into());
                    out.updates.extend(transition(&mut tool, row_tool, workspace)?);
                }
                Track::Tool(Box::new(tool))
            }
            RowBody::Subagent { streaming } => Track::Subagent { streaming: *streaming },
            RowBody::Other(_) => Track::Other,
        };
        self.rows.insert(row.id, track);
        self.prune();
        Ok(out)
    }

    /// `row.upserted`: the row's new version.
    pub fn upserted(&mut self, row: &Row, workspace: &str) -> Result<Emitted, MapperError> {
        let Some(track) = self.rows.get_mut(&row.id) else {
            return self.unknown_upsert(row, workspace);
        };
        let mut out = Emitted::default();
        match (track, &row.body) {
            (
                Track::Text { kind, sent, fingerprint, streaming, message_id },
                RowBody::AssistantText { text, state, .. },
            ) if *kind == TextKind::Message => {
                extend_text(
                    *kind,
                    sent,
                    fingerprint,
                    message_id.as_deref(),
                    text,
                    row.id,
                    &mut out,
                )?;
                *streaming = *state == TextState::Streaming;
            }
            (
                Track::Text { kind, sent, fingerprint, streaming, message_id },
                RowBody::Reasoning { text, state, .. },
            ) if *kind == TextKind::Thought => {
                extend_text(
                    *kind,
                    sent,
                    fingerprint,
                    message_id.as_deref(),
                    text,
                    row.id,
                    &mut out,
                )?;
                *streaming = *state == TextState::Streaming;
            }
            (Track::Tool(tool), RowBody::ToolCall(row_tool)) => {
                if row_tool.tool_call_id != tool.tool_call_id {
                    return Err(protocol(format!(
                        "row.upserted: row {} changed its tool call id",
                        row.id
                    )));
                }
                tool.name = row_tool.tool_name.clone();
                if row_tool.input.is_some() {
                    tool.input = row_tool.input.clone();
                }
                // The text is only read while no parsed input is known (F-20: a written
                // file's text is not kept twice).
                tool.input_text =
                    if tool.input.is_none() { row_tool.input_text.clone() } else { String::new() };
                // A final row's output goes to the client from the row itself; only a running
                // tool's output is kept, for the deltas that extend it.
                if let Some(text) = &row_tool.output_text
                    && !row_tool.status.is_final()
                {
                    tool.output_text = text.clone();
                }
                if !tool.announced && row_tool.status != ToolStatus::InputStreaming {
                    out.updates.push(announce(tool, workspace).into());
                }
                if tool.announced {
                    out.updates.extend(transition(tool, row_tool, workspace)?);
                }
            }
            (
                Track::Header { state, source_command_id },
                RowBody::TurnHeader { state: new, source_command_id: new_source, .. },
            ) => {
                *state = *new;
                *source_command_id = new_source.clone();
                out.signals.push(TurnSignal::Header {
                    row_id: row.id,
                    state: *new,
                    source_command_id: new_source.clone(),
                });
            }
            (Track::UserInput, RowBody::UserInput { source_command_id, .. }) => {
                if let Some(id) = source_command_id {
                    out.signals.push(TurnSignal::Input { source_command_id: id.clone() });
                }
            }
            (Track::Subagent { streaming }, RowBody::Subagent { streaming: new }) => {
                *streaming = *new
            }
            (Track::Other, RowBody::Other(_)) => {}
            _ => {
                return Err(protocol(format!(
                    "row.upserted: row {} changed its kind to {}",
                    row.id,
                    row.kind()
                )));
            }
        }
        self.prune();
        Ok(out)
    }

    /// An upsert of a row older than anything tracked (a tool that finishes long after it
    /// started, after a resume): a tool's status is sent as an update; text the client saw in
    /// history is not repeated.
    fn unknown_upsert(&mut self, row: &Row, workspace: &str) -> Result<Emitted, MapperError> {
        if self.watermark.is_none_or(|w| row.id > w) {
            return self.appended(row, workspace);
        }
        let mut out = Emitted::default();
        let track = match &row.body {
            RowBody::ToolCall(row_tool) => {
                let mut tool = new_tool(row_tool);
                tool.announced = true;
                tool.status = ToolStatus::PendingApproval;
                self.tools.insert(tool.tool_call_id.clone(), row.id);
                out.updates.extend(transition(&mut tool, row_tool, workspace)?);
                Track::Tool(Box::new(tool))
            }
            _ => baseline_track(row),
        };
        if let RowBody::TurnHeader { state, source_command_id, .. } = &row.body {
            out.signals.push(TurnSignal::Header {
                row_id: row.id,
                state: *state,
                source_command_id: source_command_id.clone(),
            });
        }
        self.rows.insert(row.id, track);
        Ok(out)
    }

    /// `row.removed{fromRowId}`: that row and every later one are gone (an edit or a retry).
    /// ACP cannot take back what was shown; the rows are forgotten.
    pub fn removed(&mut self, from_row_id: u64) {
        let gone: Vec<u64> = self.rows.range(from_row_id..).map(|(id, _)| *id).collect();
        for id in gone {
            if let Some(Track::Tool(tool)) = self.rows.remove(&id) {
                self.tools.remove(&tool.tool_call_id);
            }
        }
    }

    /// `row.delta`: text appended at `path` of a streaming row.
    pub fn delta(&mut self, row_id: u64, path: &str, append: &str) -> Result<Emitted, MapperError> {
        let mut out = Emitted::default();
        let Some(track) = self.rows.get_mut(&row_id) else {
            return Err(protocol(format!("row.delta: unknown row {row_id}")));
        };
        match (path, track) {
            ("text", Track::Text { kind, sent, fingerprint, streaming: true, message_id }) => {
                if !append.is_empty() {
                    *sent += append.len();
                    *fingerprint = fnv(*fingerprint, append.as_bytes());
                    out.updates.push(chunk(kind.chunk(), append, message_id.as_deref()).into());
                }
            }
            ("inputText", Track::Tool(tool)) if tool.status == ToolStatus::InputStreaming => {
                tool.input_text.push_str(append)
            }
            ("output.text", Track::Tool(tool)) if tool.status == ToolStatus::Running => {
                tool.output_text.push_str(append)
            }
            ("summaryText", Track::Subagent { streaming: true }) => {}
            (path @ ("text" | "inputText" | "output.text" | "summaryText"), _) => {
                return Err(protocol(format!(
                    "row.delta: `{path}` of row {row_id} is not streaming"
                )));
            }
            (path, _) => return Err(protocol(format!("row.delta: unknown path `{path}`"))),
        }
        Ok(out)
    }

    /// Takes `row` as known to the client without telling it anything (a resumed session's
    /// snapshot window; rows of a replayed history page are recorded by [`Tracker::history`]).
    pub fn baseline(&mut self, row: &Row) {
        self.raise(row.id);
        if let RowBody::ToolCall(tool) = &row.body {
            self.tools.insert(tool.tool_call_id.clone(), row.id);
        }
        self.rows.insert(row.id, baseline_track(row));
        self.prune();
    }

    /// A row of a replayed history: its updates (as a finished view) and its tracking.
    pub fn history(&mut self, row: &Row, workspace: &str) -> Vec<String> {
        self.baseline(row);
        history_updates(row, workspace)
    }

    /// Rows in `from..` that an authoritative set no longer has were removed while the stream
    /// was interrupted.
    pub fn forget_missing(&mut self, from: u64, present: &[u64]) {
        let gone: Vec<u64> =
            self.rows.range(from..).map(|(id, _)| *id).filter(|id| !present.contains(id)).collect();
        for id in gone {
            if let Some(Track::Tool(tool)) = self.rows.remove(&id) {
                self.tools.remove(&tool.tool_call_id);
            }
        }
    }

    /// Forgets the oldest final rows beyond [`MAX_FINAL_ROWS`]. Counting them walks every
    /// tracked row, so it waits until the map holds twice the bound: an append then costs a
    /// map insert, amortised (F-17: counting on every append made a long history quadratic).
    fn prune(&mut self) {
        if self.rows.len() <= 2 * MAX_FINAL_ROWS {
            return;
        }
        let finals = self.rows.values().filter(|track| track.is_final()).count();
        if finals <= MAX_FINAL_ROWS {
            return;
        }
        let excess: Vec<u64> = self
            .rows
            .iter()
            .filter(|(_, track)| track.is_final())
            .take(finals - MAX_FINAL_ROWS)
            .map(|(id, _)| *id)
            .collect();
        for id in excess {
            if let Some(Track::Tool(tool)) = self.rows.remove(&id) {
                self.tools.remove(&tool.tool_call_id);
            }
        }
    }
}

fn user_message(text: &str, attachments: &[String]) -> String {
    let mut shown = text.to_string();
    for attachment in attachments {
        if !shown.is_empty() {
            shown.push('\n');
        }
        shown.push_str(&format!("[Attachment: {attachment}]"));
    }
    chunk(Chunk::User, &shown, None)
}

/// The tracking of a new text row, whose text so far is shown.
fn text_track(
    kind: TextKind,
    text: &Text<'_>,
    state: TextState,
    message_id: Option<&str>,
    row_id: u64,
    out: &mut Emitted,
) -> Result<Track, MapperError> {
    let (mut sent, mut fingerprint) = (0, FNV_EMPTY);
    extend_text(kind, &mut sent, &mut fingerprint, message_id, text, row_id, out)?;
    Ok(Track::Text {
        kind,
        sent,
        fingerprint,
        streaming: state == TextState::Streaming,
        message_id: message_id.map(str::to_string),
    })
}

/// Shows what `text` adds to the text sent of a row, which it must begin with.
fn extend_text(
    kind: TextKind,
    sent: &mut usize,
    fingerprint: &mut u64,
    message_id: Option<&str>,
    text: &Text<'_>,
    row_id: u64,
    out: &mut Emitted,
) -> Result<(), MapperError> {
    let suffix = text.continuing(*sent, *fingerprint).map_err(|why| {
        protocol(match why {
            Discontinued::Rewritten => {
                format!("row.upserted: row {row_id} rewrote text that was already streamed")
            }
            Discontinued::NotKept { bytes } => format!(
                "row {row_id} brought {bytes} bytes of text it had not streamed, in a frame too \
                 long to keep whole"
            ),
        })
    })?;
    if !suffix.is_empty() {
        *fingerprint = fnv(*fingerprint, suffix.as_bytes());
        *sent = text.len();
        out.updates.push(chunk(kind.chunk(), suffix, message_id).into());
    }
    Ok(())
}

/// The tracking of a tool row: only what later changes need (F-20: a final row's output and
/// a known input's text are not copied; the updates read them from the row).
fn new_tool(row: &ToolRow) -> Tool {
    let output_text = match (&row.output_text, row.status) {
        (Some(text), ToolStatus::Running) => text.clone(),
        _ => String::new(),
    };
    Tool {
        tool_call_id: row.tool_call_id.clone(),
        name: row.tool_name.clone(),
        announced: false,
        status: ToolStatus::InputStreaming,
        input: row.input.clone(),
        input_text: if row.input.is_none() { row.input_text.clone() } else { String::new() },
        output_text,
    }
}

/// The `tool_call` announcement.
fn announce(tool: &mut Tool, workspace: &str) -> String {
    tool.announced = true;
    tool.status = ToolStatus::PendingApproval;
    let input = raw_input(tool);
    let title = default_title(&tool.name, input.as_deref(), workspace);
    let content: Vec<Value> =
        input_diff(&tool.name, input.as_deref(), workspace).into_iter().collect();
    let locations = locations(input.as_deref(), workspace);
    ToolCall {
        raw_input: input.as_deref(),
        content: &content,
        locations: &locations,
        ..ToolCall::new(&tool.tool_call_id, &title, tool_kind(&tool.name))
    }
    .to_json()
}

/// The updates moving an announced tool to the row's status.
fn transition(tool: &mut Tool, row: &ToolRow, workspace: &str) -> Result<Vec<Update>, MapperError> {
    let from = tool.status;
    let to = row.status;
    if from == to
        || to == ToolStatus::InputStreaming
        || to == ToolStatus::PendingApproval && !from.is_final()
    {
        return Ok(Vec::new());
    }
    if from.is_final() {
        return Err(protocol(format!(
            "Invalid tool transition for {}: {to:?} after {from:?}",
            tool.tool_call_id
        )));
    }
    tool.status = to;
    let input = raw_input(tool);
    let output = row.output_text.as_deref().unwrap_or(&tool.output_text);
    let id = &tool.tool_call_id;
    let update = match to {
        ToolStatus::Running => ToolCallUpdate::status(id, AcpStatus::InProgress).to_json().into(),
        ToolStatus::Success => {
            let mut tree: Value =
                serde_json::from_str(&ToolCallUpdate::status(id, AcpStatus::Completed).to_json())
                    .expect("the SDK writes JSON");
            tree["rawOutput"] = raw_output(output, row.truncated.as_ref());
            tree["content"] = Value::Array(completed_content(
                &tool.name,
                Some(output),
                input.as_deref(),
                workspace,
            ));
            Update::Tree(tree)
        }
        ToolStatus::Error => {
            let content = error_content(row.error.as_ref(), FAILED_TOOL);
            ToolCallUpdate {
                raw_output: row.error.as_ref(),
                content: Some(&content),
                ..ToolCallUpdate::status(id, AcpStatus::Failed)
            }
            .to_json()
            .into()
        }
        _ => ToolCallUpdate {
            content: Some(&[tools::text_content(CANCELLED_TOOL)]),
            ..ToolCallUpdate::status(id, AcpStatus::Failed)
        }
        .to_json()
        .into(),
    };
    if to.is_final() {
        // Nothing reads a finished tool's input or output again (F-20).
        tool.input = None;
        tool.input_text = String::new();
        tool.output_text = String::new();
    }
    Ok(vec![update])
}

/// Tracking of a row the client knows as it is now.
fn baseline_track(row: &Row) -> Track {
    match &row.body {
        RowBody::AssistantText { text, state, response_id }
        | RowBody::Reasoning { text, state, response_id } => Track::Text {
            kind: if matches!(row.body, RowBody::AssistantText { .. }) {
                TextKind::Message
            } else {
                TextKind::Thought
            },
            sent: text.len(),
            fingerprint: text.fingerprint(),
            streaming: *state == TextState::Streaming,
            message_id: response_id.clone(),
        },
        RowBody::ToolCall(row_tool) => {
            let mut tool = new_tool(row_tool);
            tool.announced = row_tool.status != ToolStatus::InputStreaming;
            tool.status = row_tool.status;
            Track::Tool(Box::new(tool))
        }
        RowBody::TurnHeader { state, source_command_id, .. } => {
            Track::Header { state: *state, source_command_id: source_command_id.clone() }
        }
        RowBody::UserInput { .. } => Track::UserInput,
        RowBody::Subagent { streaming } => Track::Subagent { streaming: *streaming },
        RowBody::Other(_) => Track::Other,
    }
}

/// A row of history as ACP updates: messages and thoughts as chunks, tool calls as one
/// complete `tool_call` in their current state; turn headers, artifacts, hooks and markers
/// have no ACP form, and only real users' inputs are shown. (A row of history is parsed whole,
/// so its text is never elided: `rows::parse`.)
pub fn history_updates(row: &Row, workspace: &str) -> Vec<String> {
    match &row.body {
        RowBody::UserInput { origin: "realUser", text, attachments, .. } => {
            vec![user_message(text, attachments)]
        }
        RowBody::AssistantText { text: Text::Whole(text), response_id, .. } if !text.is_empty() => {
            vec![chunk(Chunk::Agent, text, response_id.as_deref())]
        }
        RowBody::Reasoning { text: Text::Whole(text), response_id, .. } if !text.is_empty() => {
            vec![chunk(Chunk::Thought, text, response_id.as_deref())]
        }
        RowBody::ToolCall(row_tool) => {
            let name = &row_tool.tool_name;
            let input = raw_input_of(row_tool.input.as_ref(), &row_tool.input_text);
            let title = default_title(name, input.as_deref(), workspace);
            let mut raw_output_value = None;
            let content = match row_tool.status {
                ToolStatus::Success => {
                    let output = row_tool.output_text.as_deref().unwrap_or_default();
                    raw_output_value = Some(raw_output(output, row_tool.truncated.as_ref()));
                    completed_content(name, Some(output), input.as_deref(), workspace)
                }
                ToolStatus::Error => {
                    raw_output_value = row_tool.error.clone();
                    error_content(row_tool.error.as_ref(), FAILED_TOOL)
                }
                ToolStatus::Cancelled => vec![tools::text_content(CANCELLED_TOOL)],
                _ => input_diff(name, input.as_deref(), workspace).into_iter().collect(),
            };
            let locations = locations(input.as_deref(), workspace);
            let call = ToolCall {
                status: acp_status(row_tool.status),
                raw_input: input.as_deref(),
                locations: &locations,
                ..ToolCall::new(&row_tool.tool_call_id, &title, tool_kind(name))
            };
            // A finished tool's output, twice: written at its exact size.
            let content = (!content.is_empty()).then_some(Value::Array(content));
            vec![with_fields(
                call.to_json(),
                &[("rawOutput", raw_output_value.as_ref()), ("content", content.as_ref())],
            )]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::rows;

    fn values(updates: &[String]) -> Vec<Value> {
        updates.iter().map(|update| serde_json::from_str(update).unwrap()).collect()
    }

    impl Emitted {
        /// The updates as trees, to read in assertions.
        fn values(&self) -> Vec<Value> {
            let texts: Vec<String> = self.updates.iter().cloned().map(Update::into_text).collect();
            values(&texts)
        }
    }

    fn row(value: Value) -> Row {
        let mut base = json!({"turnId": "t", "createdAt": 1, "createdAtSeq": 1});
        for (k, v) in value.as_object().unwrap() {
            base[k] = v.clone();
        }
        rows::parse(&base).unwrap()
    }

    fn text_row(id: u64, text: &str, state: &str) -> Row {
        row(
            json!({"rowId": id, "kind": "assistantText", "text": text, "state": state, "assistantResponseId": "r"}),
        )
    }

    fn tool_row(id: u64, status: &str, extra: Value) -> Row {
        let mut value = json!({"rowId": id, "kind": "toolCall", "toolCallId": "c1", "toolName": "Write", "status": status,
                               "inputText": "", "input": {"file_path": "/w/a.md", "content": "hi"}});
        for (k, v) in extra.as_object().unwrap() {
            value[k] = v.clone();
        }
        row(value)
    }

    #[test]
    fn streams_text_and_checks_upserts_extend_it() {
        let mut tracker = Tracker::default();
        let out = tracker.appended(&text_row(1, "Hel", "streaming"), "/w").unwrap();
        assert_eq!(
            out.values(),
            [
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}, "messageId": "r"})
            ]
        );
        assert_eq!(tracker.delta(1, "text", "lo").unwrap().values()[0]["content"]["text"], "lo");
        let done = tracker.upserted(&text_row(1, "Hello!", "complete"), "/w").unwrap();
        assert_eq!(done.values()[0]["content"]["text"], "!");
        assert!(
            tracker.upserted(&text_row(1, "Hello!", "complete"), "/w").unwrap().updates.is_empty()
        );
        assert_eq!(
            tracker.delta(1, "text", "more").unwrap_err().message,
            "row.delta: `text` of row 1 is not streaming"
        );
        assert_eq!(
            tracker.upserted(&text_row(1, "Jello!", "complete"), "/w").unwrap_err().message,
            "row.upserted: row 1 rewrote text that was already streamed"
        );
        assert!(tracker.appended(&text_row(1, "x", "complete"), "/w").is_err(), "appended twice");
        assert_eq!(tracker.delta(9, "text", "x").unwrap_err().message, "row.delta: unknown row 9");
    }

    #[test]
    fn the_fork_mark_a_success_sends_again_adds_nothing() {
        // On a turn's success ZCode sends its last answer again, whole, with
        // `actions.canFork` (`markStableForkAssistant`): no text is new, so nothing is shown.
        let mut tracker = Tracker::default();
        tracker.appended(&text_row(1, "Hello", "streaming"), "/w").unwrap();
        tracker.upserted(&text_row(1, "Hello", "complete"), "/w").unwrap();
        let marked = row(json!({"rowId": 1, "kind": "assistantText", "text": "Hello",
                                "state": "complete", "assistantResponseId": "r",
                                "actions": {"canFork": true}}));
        assert!(tracker.upserted(&marked, "/w").unwrap().updates.is_empty());
        // A mark on an answer streamed only in part still shows the rest, once.
        let mut partial = Tracker::default();
        partial.appended(&text_row(2, "Hel", "streaming"), "/w").unwrap();
        let marked = row(json!({"rowId": 2, "kind": "assistantText", "text": "Hello",
                                "state": "complete", "assistantResponseId": "r",
                                "actions": {"canFork": true}}));
        assert_eq!(partial.upserted(&marked, "/w").unwrap().values()[0]["content"]["text"], "lo");
        assert!(partial.upserted(&marked, "/w").unwrap().updates.is_empty());
    }

    #[test]
    fn announces_tools_when_their_input_is_known_and_moves_them_forward() {
        let mut tracker = Tracker::default();
        let streaming =
            tool_row(2, "inputStreaming", json!({"input": null, "inputText": "{\"file_"}));
        assert!(tracker.appended(&streaming, "/w").unwrap().updates.is_empty());
        tracker.delta(2, "inputText", "path\":\"/w/a.md\",\"content\":\"hi\"}").unwrap();
        let running = tracker.upserted(&tool_row(2, "running", json!({})), "/w").unwrap();
        assert_eq!(running.values()[0]["sessionUpdate"], "tool_call");
        assert_eq!(running.values()[0]["title"], "Write a.md");
        assert_eq!(running.values()[0]["kind"], "edit");
        assert_eq!(running.values()[0]["content"][0]["type"], "diff");
        assert_eq!(
            running.values()[1],
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"})
        );
        tracker.delta(2, "output.text", "Wrote ").unwrap();
        let done = tracker
            .upserted(&tool_row(2, "success", json!({"output": {"text": "Wrote 2 bytes"}})), "/w")
            .unwrap();
        assert_eq!(done.values()[0]["status"], "completed");
        assert_eq!(done.values()[0]["rawOutput"], json!({"text": "Wrote 2 bytes"}));
        assert_eq!(done.values()[0]["content"][1]["content"]["text"], "Wrote 2 bytes");
        assert!(
            tracker.upserted(&tool_row(2, "running", json!({})), "/w").is_err(),
            "no way back from success"
        );
        let mut other = Tracker::default();
        other.appended(&tool_row(3, "running", json!({})), "/w").unwrap();
        let cancelled = other.upserted(&tool_row(3, "cancelled", json!({})), "/w").unwrap();
        assert_eq!(cancelled.values()[0]["status"], "failed");
        let failed = Tracker::default()
            .appended(
                &tool_row(4, "error", json!({"error": {"code": "E", "message": "denied"}})),
                "/w",
            )
            .unwrap();
        assert_eq!(failed.values()[1]["content"][0]["content"]["text"], "denied");
    }

    #[test]
    fn signals_turn_headers_and_inputs_and_echoes_other_users() {
        let mut tracker = Tracker::default();
        let header = row(
            json!({"rowId": 1, "kind": "turnHeader", "origin": "userInput", "state": "running", "startedAt": 1, "sourceCommandId": "c"}),
        );
        assert_eq!(
            tracker.appended(&header, "/w").unwrap().signals,
            [TurnSignal::Header {
                row_id: 1,
                state: HeaderState::Running,
                source_command_id: Some("c".into())
            }]
        );
        tracker.own_input("mine");
        let own = row(
            json!({"rowId": 2, "kind": "userInput", "origin": "realUser", "text": "hi", "sourceCommandId": "mine"}),
        );
        let out = tracker.appended(&own, "/w").unwrap();
        assert!(out.updates.is_empty(), "own prompt is not echoed");
        assert_eq!(out.signals.len(), 1);
        let other = row(
            json!({"rowId": 3, "kind": "userInput", "origin": "realUser", "text": "from the phone", "sourceCommandId": "m1"}),
        );
        assert_eq!(
            tracker.appended(&other, "/w").unwrap().values()[0]["sessionUpdate"],
            "user_message_chunk"
        );
        let synthetic = row(
            json!({"rowId": 4, "kind": "userInput", "origin": "backgroundResult", "text": "done"}),
        );
        assert!(tracker.appended(&synthetic, "/w").unwrap().updates.is_empty());
    }

    #[test]
    fn replays_history_and_forgets_removed_rows() {
        let mut tracker = Tracker::default();
        let updates = values(&tracker.history(
            &tool_row(5, "error", json!({"error": {"code": "E", "message": "no"}})),
            "/w",
        ));
        assert_eq!(updates[0]["status"], "failed");
        assert_eq!(updates[0]["rawInput"]["file_path"], "/w/a.md");
        assert_eq!(tracker.watermark(), Some(5));
        assert!(tracker.history(&text_row(6, "", "complete"), "/w").is_empty());
        tracker.removed(6);
        assert!(!tracker.knows(6) && tracker.knows(5));
        tracker.forget_missing(0, &[]);
        assert!(!tracker.knows(5));
        assert!(tracker.tool("c1").is_none());
    }

    #[test]
    fn an_old_tool_finishing_is_an_update() {
        let mut tracker = Tracker::default();
        tracker.baseline(&text_row(10, "x", "complete"));
        let late = tracker
            .upserted(&tool_row(4, "success", json!({"output": {"text": "ok"}})), "/w")
            .unwrap();
        assert_eq!(late.updates.len(), 1);
        assert_eq!(late.values()[0]["sessionUpdate"], "tool_call_update");
        assert_eq!(late.values()[0]["status"], "completed");
        // A row newer than anything known is new.
        assert_eq!(
            tracker.upserted(&text_row(11, "y", "complete"), "/w").unwrap().values()[0]["content"]
                ["text"],
            "y"
        );
    }

    /// Finding F-17: every tracked row used to walk all tracked rows to count the final ones, so
    /// a long history cost quadratic time (and, in the sandbox, ran out of fuel; the cost is
    /// measured by `zcode-acp-bench history-load`). The bound still holds.
    #[test]
    fn many_rows_stay_bounded_and_cheap_to_track() {
        let mut tracker = Tracker::default();
        let rows = 6 * MAX_FINAL_ROWS as u64;
        for id in 1..=rows {
            tracker.history(&text_row(id, "x", "complete"), "/w");
            assert!(
                tracker.rows.len() <= 2 * MAX_FINAL_ROWS + 1,
                "{} rows at {id}",
                tracker.rows.len()
            );
        }
        assert!(tracker.knows(rows) && !tracker.knows(1), "the newest kept, the oldest forgotten");
        assert_eq!(tracker.watermark(), Some(rows));
    }
}
