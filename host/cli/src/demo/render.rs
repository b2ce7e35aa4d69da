//! Session updates and interactions as terminal text.
//!
//! Writes to any `Write`, so tests see the exact output. With `ansi` (stdout is a terminal)
//! thoughts are dimmed, markers coloured, and a tool card is rewritten in place when nothing
//! was printed after it. Without it the text is plain and each change is a new line, skipping
//! the in-progress step, which the surrounding lines already imply.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    AvailableCommand, ContentBlock, Diff, NewSessionResponse, PermissionOption, PlanEntry,
    PlanEntryStatus, PlanUpdateContent, PromptResponse, RequestPermissionRequest,
    SessionConfigKind, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOptions, SessionUpdate, ToolCall, ToolCallContent, ToolCallId,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use serde::Serialize;

use super::answer::{Field, FieldKind};

/// Lines of tool output, diff side or plan text shown before "… N more lines".
const MAX_LINES: usize = 6;
/// Longest line shown; tool titles are cut shorter so a card stays one terminal line.
const MAX_LINE_CHARS: usize = 120;
const MAX_TITLE_CHARS: usize = 72;
const INDENT: &str = "    ";

#[derive(Clone, Copy)]
enum Paint {
    Dim,
    Bold,
    Red,
    Green,
    Yellow,
    Cyan,
}

impl Paint {
    fn code(self) -> &'static str {
        match self {
            Paint::Dim => "2",
            Paint::Bold => "1",
            Paint::Red => "31",
            Paint::Green => "32",
            Paint::Yellow => "33",
            Paint::Cyan => "36",
        }
    }
}

/// The streamed block the output is in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Block {
    None,
    Text,
    Thought,
    User,
}

struct ToolCard {
    title: String,
    kind: ToolKind,
    status: ToolCallStatus,
    /// The first location, shown when the title does not name it.
    location: Option<PathBuf>,
    content: Vec<ToolCallContent>,
}

impl ToolCard {
    fn new(title: String) -> Self {
        ToolCard {
            title,
            kind: ToolKind::Other,
            status: ToolCallStatus::Pending,
            location: None,
            content: Vec::new(),
        }
    }

    /// Takes the fields an update carries. Returns whether the card line would read
    /// differently apart from its status, and whether the status changed.
    fn apply(&mut self, fields: &ToolCallUpdateFields) -> (bool, bool) {
        let mut looks_changed = false;
        if let Some(title) = &fields.title
            && *title != self.title
        {
            self.title = title.clone();
            looks_changed = true;
        }
        if let Some(kind) = fields.kind
            && kind != self.kind
        {
            self.kind = kind;
            looks_changed = true;
        }
        if let Some(locations) = &fields.locations {
            let location = first_path(locations);
            looks_changed |= location != self.location;
            self.location = location;
        }
        let status_changed = fields.status.is_some_and(|status| status != self.status);
        if let Some(status) = fields.status {
            self.status = status;
        }
        (looks_changed, status_changed)
    }
}

fn first_path(locations: &[ToolCallLocation]) -> Option<PathBuf> {
    locations.first().map(|location| location.path.clone())
}

pub struct Renderer<W: Write> {
    out: W,
    ansi: bool,
    /// Paths inside it are shown relative to it.
    workspace: Option<PathBuf>,
    block: Block,
    /// The last character written was not a newline.
    mid_line: bool,
    tools: HashMap<ToolCallId, ToolCard>,
    /// The tool whose card is the last line written, so a terminal can rewrite it.
    last_card: Option<ToolCallId>,
    /// The latest `usage_update` of the current turn: tokens used and context size.
    context: Option<(u64, u64)>,
    /// The last value shown per status marker (`mode`, `config`, …): agents resend them.
    shown: HashMap<&'static str, String>,
    /// Mode names by id, from the session's setup.
    mode_names: HashMap<String, String>,
}

impl<W: Write> Renderer<W> {
    pub fn new(out: W, ansi: bool) -> Self {
        Renderer {
            out,
            ansi,
            workspace: None,
            block: Block::None,
            mid_line: false,
            tools: HashMap::new(),
            last_card: None,
            context: None,
            shown: HashMap::new(),
            mode_names: HashMap::new(),
        }
    }

    pub fn relative_to(mut self, workspace: &Path) -> Self {
        self.workspace = Some(workspace.to_path_buf());
        self
    }

    #[cfg(test)]
    pub fn into_inner(self) -> W {
        self.out
    }

    // ----- structure --------------------------------------------------------------------

    /// The banner of one tour step.
    pub fn step(&mut self, number: usize, total: usize, caption: &str) -> io::Result<()> {
        self.end_block()?;
        if number > 1 {
            self.raw("\n")?;
        }
        let text = self.paint(Paint::Bold, &format!("── {number}/{total} {caption}"));
        self.line(&text)
    }

    pub fn prompt(&mut self, text: &str) -> io::Result<()> {
        let text = self.paint(Paint::Bold, &format!("> {}", one_line(text)));
        self.line(&text)
    }

    /// The session's id, mode and configuration, which later updates repeat only on change.
    pub fn session_started(&mut self, response: &NewSessionResponse) -> io::Result<()> {
        let mut parts = vec![response.session_id.to_string()];
        let options = response.config_options.as_deref().unwrap_or_default();
        let mode_is_an_option =
            options.iter().any(|o| o.category == Some(SessionConfigOptionCategory::Mode));
        if let Some(modes) = &response.modes {
            for mode in &modes.available_modes {
                self.mode_names.insert(mode.id.to_string(), mode.name.clone());
            }
            let current = self.mode_name(&modes.current_mode_id.to_string());
            self.shown.insert("mode", current.clone());
            if !mode_is_an_option {
                parts.push(format!("mode: {current}"));
            }
        }
        if !options.is_empty() {
            let summary = config_summary(options);
            parts.push(summary.clone());
            self.shown.insert("config", summary);
        }
        self.marked_line(Paint::Cyan, &format!("[session] {}", parts.join(" · ")))
    }

    /// Ends a line cut short (by an error, for instance).
    pub fn finish(&mut self) -> io::Result<()> {
        self.end_block()?;
        self.out.flush()
    }

    /// A remark of the demo itself (not the agent).
    pub fn note(&mut self, text: &str) -> io::Result<()> {
        let text = self.paint(Paint::Yellow, &format!("[demo] {text}"));
        self.line(&text)
    }

    pub fn stop(&mut self, response: &PromptResponse) -> io::Result<()> {
        self.end_block()?;
        let mut usage = Vec::new();
        if let Some((used, size)) = self.context.take() {
            usage.push(format!("context {used}/{size} tokens"));
        }
        if let Some(turn) = &response.usage {
            usage.push(format!("this turn {} in, {} out", turn.input_tokens, turn.output_tokens));
        }
        if !usage.is_empty() {
            self.marked_line(Paint::Dim, &format!("[usage] {}", usage.join(" · ")))?;
        }
        let text =
            self.paint(Paint::Bold, &format!("— stop: {}", wire_name(&response.stop_reason)));
        self.line(&text)
    }

    // ----- session updates --------------------------------------------------------------

    pub fn update(&mut self, update: &SessionUpdate) -> io::Result<()> {
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => self.stream(Block::Text, &chunk.content),
            SessionUpdate::AgentThoughtChunk(chunk) => self.stream(Block::Thought, &chunk.content),
            SessionUpdate::UserMessageChunk(chunk) => self.stream(Block::User, &chunk.content),
            SessionUpdate::ToolCall(call) => self.tool_call(call),
            SessionUpdate::ToolCallUpdate(update) => self.tool_update(update),
            SessionUpdate::Plan(plan) => self.plan_entries(&plan.entries),
            SessionUpdate::PlanUpdate(update) => match &update.plan {
                PlanUpdateContent::Items(items) => self.plan_entries(&items.entries),
                PlanUpdateContent::Markdown(markdown) => {
                    self.marked_line(Paint::Cyan, "[plan]")?;
                    let lines: Vec<&str> =
                        markdown.content.lines().filter(|l| !l.trim().is_empty()).collect();
                    self.indented(&lines, None)
                }
                PlanUpdateContent::File(file) => {
                    self.marked_line(Paint::Cyan, &format!("[plan] {}", file.uri))
                }
                other => self.marked_line(Paint::Cyan, &format!("[plan] {}", tag(other))),
            },
            SessionUpdate::PlanRemoved(_) => self.marked_line(Paint::Cyan, "[plan] removed"),
            SessionUpdate::CurrentModeUpdate(mode) => {
                let name = self.mode_name(&mode.current_mode_id.to_string());
                self.status("mode", name)
            }
            SessionUpdate::ConfigOptionUpdate(update) => {
                self.status("config", config_summary(&update.config_options))
            }
            SessionUpdate::SessionInfoUpdate(info) => match info.title.clone().take() {
                Some(title) => self.status("title", one_line(&title)),
                None => Ok(()),
            },
            SessionUpdate::UsageUpdate(usage) => {
                // Kept for the end of the turn: one line instead of one per model call.
                self.context = Some((usage.used, usage.size));
                Ok(())
            }
            SessionUpdate::AvailableCommandsUpdate(update) => {
                self.status("commands", commands(&update.available_commands))
            }
            SessionUpdate::Notice(notice) => {
                let mut text = format!("[notice] {}", notice.title);
                if let Some(description) = &notice.description {
                    text.push_str(&format!(": {description}"));
                }
                self.marked_line(Paint::Yellow, &text)
            }
            SessionUpdate::CompactionUpdate(update) => self.marked_line(
                Paint::Cyan,
                &format!("[compaction] {}", wire_name(&update.status).replace('_', " ")),
            ),
            SessionUpdate::CompactionSummaryChunk(_) => Ok(()),
            other => self.marked_line(Paint::Dim, &format!("[update] {}", tag(other))),
        }
    }

    fn stream(&mut self, block: Block, content: &ContentBlock) -> io::Result<()> {
        let text = match content {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!("[image {}]", image.mime_type),
            ContentBlock::Audio(audio) => format!("[audio {}]", audio.mime_type),
            ContentBlock::ResourceLink(link) => format!("[link {}]", link.uri),
            ContentBlock::Resource(_) => "[resource]".to_string(),
            other => format!("[{}]", tag(other)),
        };
        if text.is_empty() {
            return Ok(());
        }
        if self.block != block {
            self.end_block()?;
            self.block = block;
            match block {
                Block::Thought => self.raw(&self.paint(Paint::Dim, "(thinking) "))?,
                Block::User => self.raw(&self.paint(Paint::Bold, "[user] "))?,
                Block::Text | Block::None => {}
            }
        }
        let shown =
            if block == Block::Thought { self.paint(Paint::Dim, &text) } else { text.clone() };
        self.raw(&shown)?;
        self.mid_line = !text.ends_with('\n');
        self.last_card = None;
        self.out.flush()
    }

    fn tool_call(&mut self, call: &ToolCall) -> io::Result<()> {
        let card = ToolCard {
            kind: call.kind,
            status: call.status,
            location: first_path(&call.locations),
            ..ToolCard::new(call.title.clone())
        };
        self.tools.insert(call.tool_call_id.clone(), card);
        self.card_line(&call.tool_call_id)?;
        self.tool_content(&call.tool_call_id, &call.content)
    }

    fn tool_update(&mut self, update: &ToolCallUpdate) -> io::Result<()> {
        let id = &update.tool_call_id;
        let known = self.tools.contains_key(id);
        let card = self.tools.entry(id.clone()).or_insert_with(|| ToolCard::new(id.to_string()));
        let (looks_changed, status_changed) = card.apply(&update.fields);
        let running = card.status == ToolCallStatus::InProgress;
        if !known || looks_changed || (status_changed && (self.ansi || !running)) {
            self.card_line(id)?;
        }
        match &update.fields.content {
            Some(content) => self.tool_content(id, content),
            None => Ok(()),
        }
    }

    fn card_line(&mut self, id: &ToolCallId) -> io::Result<()> {
        let Some(card) = self.tools.get(id) else { return Ok(()) };
        let status = wire_name(&card.status);
        let paint = match card.status {
            ToolCallStatus::Completed => Paint::Green,
            ToolCallStatus::Failed => Paint::Red,
            _ => Paint::Yellow,
        };
        let text = format!(
            "{} {} ({}) … {}",
            self.paint(Paint::Cyan, "[tool]"),
            cut(&self.tool_label(card), MAX_TITLE_CHARS),
            wire_name(&card.kind),
            self.paint(paint, &status.replace('_', " ")),
        );
        let rewrite = self.ansi && self.last_card.as_ref() == Some(id) && !self.mid_line;
        self.end_block()?;
        if rewrite {
            // Up one line, to its start, and clear it.
            self.raw("\x1b[1A\r\x1b[2K")?;
        }
        self.line(&text)?;
        self.last_card = Some(id.clone());
        Ok(())
    }

    /// Prints content that differs from what this card last showed (updates resend it whole).
    fn tool_content(&mut self, id: &ToolCallId, content: &[ToolCallContent]) -> io::Result<()> {
        let Some(card) = self.tools.get_mut(id) else { return Ok(()) };
        if content.is_empty() || card.content == content {
            return Ok(());
        }
        card.content = content.to_vec();
        for item in content {
            match item {
                ToolCallContent::Content(inner) => match &inner.content {
                    ContentBlock::Text(text) => {
                        let lines: Vec<&str> = text.text.trim_end().lines().collect();
                        self.indented(&lines, Some(Paint::Dim))?;
                    }
                    other => self.line(&format!("{INDENT}[{}]", tag(other)))?,
                },
                ToolCallContent::Diff(diff) => self.diff(diff)?,
                ToolCallContent::Terminal(terminal) => {
                    self.line(&format!("{INDENT}[terminal {}]", terminal.terminal_id))?
                }
                other => self.line(&format!("{INDENT}[{}]", tag(other)))?,
            }
        }
        Ok(())
    }

    /// The changed lines of a diff: the common head and tail are left out.
    fn diff(&mut self, diff: &Diff) -> io::Result<()> {
        let path = self.display_path(&diff.path);
        let old: Vec<&str> =
            diff.old_text.as_deref().map_or(Vec::new(), |t| t.trim_end().lines().collect());
        let new: Vec<&str> = diff.new_text.trim_end().lines().collect();
        let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
        let tail = old[head..]
            .iter()
            .rev()
            .zip(new[head..].iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let header = if diff.old_text.is_none() { format!("{path} (new file)") } else { path };
        self.line(&format!("{INDENT}{header}"))?;
        self.diff_side("-", Paint::Red, &old[head..old.len() - tail])?;
        self.diff_side("+", Paint::Green, &new[head..new.len() - tail])
    }

    fn diff_side(&mut self, sign: &str, paint: Paint, lines: &[&str]) -> io::Result<()> {
        for line in lines.iter().take(MAX_LINES) {
            let text = self.paint(paint, &format!("{sign} {}", cut(line, MAX_LINE_CHARS)));
            self.line(&format!("{INDENT}{text}"))?;
        }
        self.more(lines.len())
    }

    fn plan_entries(&mut self, entries: &[PlanEntry]) -> io::Result<()> {
        self.marked_line(Paint::Cyan, "[plan]")?;
        for entry in entries {
            let mark = match entry.status {
                PlanEntryStatus::Completed => "[x]",
                PlanEntryStatus::InProgress => "[~]",
                _ => "[ ]",
            };
            self.line(&format!("{INDENT}{mark} {}", one_line(&entry.content)))?;
        }
        Ok(())
    }

    // ----- interactions -----------------------------------------------------------------

    /// The tool and the options. The request's tool fields (often a better title) also
    /// update the tool's card, silently: the prompt shows them.
    pub fn permission(&mut self, request: &RequestPermissionRequest) -> io::Result<()> {
        let id = &request.tool_call.tool_call_id;
        let card = self.tools.entry(id.clone()).or_insert_with(|| ToolCard::new(id.to_string()));
        card.apply(&request.tool_call.fields);
        let card = &self.tools[id];
        let text = format!("[permission] {} ({})", self.tool_label(card), wire_name(&card.kind));
        self.marked_line(Paint::Yellow, &text)?;
        self.numbered(request.options.iter().map(|o: &PermissionOption| (o.name.clone(), None)))
    }

    pub fn form(&mut self, message: &str) -> io::Result<()> {
        self.marked_line(Paint::Yellow, &format!("[question] {}", one_line(message)))
    }

    /// One question of a form; a description that repeats the form's message is left out.
    pub fn field(&mut self, field: &Field, message: &str) -> io::Result<()> {
        let mut text = field.label.clone();
        if let Some(detail) = field.detail.as_deref().filter(|d| *d != message && *d != field.label)
        {
            text.push_str(&format!(" — {detail}"));
        }
        match &field.kind {
            FieldKind::AnyOf { .. } => text.push_str(" (one or more)"),
            FieldKind::Flag { .. } => text.push_str(" (yes/no)"),
            FieldKind::Unsupported(what) => text.push_str(&format!(" (unsupported: {what})")),
            _ => {}
        }
        if !field.required {
            text.push_str(" (optional)");
        }
        self.line(&format!("{INDENT}{}", one_line(&text)))?;
        match &field.kind {
            FieldKind::OneOf(choices) | FieldKind::AnyOf { choices, .. } => {
                let items = choices.iter().map(|c| (c.title.clone(), c.detail.clone()));
                self.numbered(items)
            }
            _ => Ok(()),
        }
    }

    /// A prompt for typed input: no newline, the terminal echoes the reply's.
    pub fn ask(&mut self, hint: &str) -> io::Result<()> {
        self.end_block()?;
        self.last_card = None;
        let text = self.paint(Paint::Bold, &format!("{INDENT}? [{hint}] "));
        self.raw(&text)?;
        self.mid_line = true;
        self.out.flush()
    }

    /// A reply was typed. A terminal echoed it with its newline; other output (a pipe or a
    /// file) gets it written, so the transcript still reads as a conversation.
    pub fn typed(&mut self, reply: &str) -> io::Result<()> {
        if !self.ansi {
            self.raw(reply)?;
            self.raw("\n")?;
        }
        self.mid_line = false;
        self.out.flush()
    }

    pub fn invalid(&mut self, problem: &str) -> io::Result<()> {
        let text = self.paint(Paint::Red, problem);
        self.line(&format!("{INDENT}  {text}"))
    }

    /// The answer given, and for an automatic one, why.
    pub fn answer(&mut self, answer: &str, reason: &str) -> io::Result<()> {
        let mut text = self.paint(Paint::Bold, &format!("→ {answer}"));
        if !reason.is_empty() {
            text.push_str(&format!(" ({reason})"));
        }
        self.line(&format!("{INDENT}{text}"))
    }

    // ----- helpers ----------------------------------------------------------------------

    fn numbered(
        &mut self,
        items: impl Iterator<Item = (String, Option<String>)>,
    ) -> io::Result<()> {
        for (index, (title, detail)) in items.enumerate() {
            let mut text = format!("{INDENT}  {}. {}", index + 1, one_line(&title));
            if let Some(detail) = detail {
                text.push_str(&format!(" — {}", one_line(&detail)));
            }
            self.line(&text)?;
        }
        Ok(())
    }

    fn indented(&mut self, lines: &[&str], paint: Option<Paint>) -> io::Result<()> {
        for line in lines.iter().take(MAX_LINES) {
            if line.trim().is_empty() {
                self.line("")?;
                continue;
            }
            let text = cut(line, MAX_LINE_CHARS);
            let text = match paint {
                Some(paint) => self.paint(paint, &text),
                None => text,
            };
            self.line(&format!("{INDENT}{text}"))?;
        }
        self.more(lines.len())
    }

    fn more(&mut self, total: usize) -> io::Result<()> {
        match total.saturating_sub(MAX_LINES) {
            0 => Ok(()),
            1 => self.line(&format!("{INDENT}… 1 more line")),
            hidden => self.line(&format!("{INDENT}… {hidden} more lines")),
        }
    }

    /// A `[marker] text` line with the marker painted.
    fn marked_line(&mut self, paint: Paint, text: &str) -> io::Result<()> {
        let text = match text.split_once(' ') {
            Some((marker, rest)) if marker.starts_with('[') => {
                format!("{} {rest}", self.paint(paint, marker))
            }
            _ => self.paint(paint, text),
        };
        self.line(&text)
    }

    /// A whole line, after closing any streamed block.
    fn line(&mut self, text: &str) -> io::Result<()> {
        self.end_block()?;
        self.raw(text)?;
        self.raw("\n")?;
        self.last_card = None;
        self.out.flush()
    }

    fn end_block(&mut self) -> io::Result<()> {
        if self.mid_line {
            self.raw("\n")?;
            self.mid_line = false;
        }
        self.block = Block::None;
        Ok(())
    }

    fn raw(&mut self, text: &str) -> io::Result<()> {
        self.out.write_all(text.as_bytes())
    }

    fn paint(&self, paint: Paint, text: &str) -> String {
        if self.ansi { format!("\x1b[{}m{text}\x1b[0m", paint.code()) } else { text.to_string() }
    }

    /// `[marker] value`, unless that value is already the one shown.
    fn status(&mut self, marker: &'static str, value: String) -> io::Result<()> {
        if self.shown.get(marker) == Some(&value) {
            return Ok(());
        }
        let text = format!("[{marker}] {value}");
        self.shown.insert(marker, value);
        self.marked_line(Paint::Cyan, &text)
    }

    fn mode_name(&self, id: &str) -> String {
        self.mode_names.get(id).cloned().unwrap_or_else(|| id.to_string())
    }

    /// The title, plus the tool's location when the title does not name it.
    fn tool_label(&self, card: &ToolCard) -> String {
        let title = one_line(&self.shorten_paths(&card.title));
        match card.location.as_deref().map(|path| self.display_path(path)) {
            Some(location) if !title.contains(&location) => format!("{title} {location}"),
            _ => title,
        }
    }

    fn display_path(&self, path: &Path) -> String {
        self.workspace
            .as_deref()
            .and_then(|root| path.strip_prefix(root).ok())
            .filter(|relative| !relative.as_os_str().is_empty())
            .unwrap_or(path)
            .display()
            .to_string()
    }

    /// Titles often name absolute paths inside the workspace; show them relative.
    fn shorten_paths(&self, text: &str) -> String {
        match &self.workspace {
            Some(root) => text.replace(&format!("{}/", root.display()), ""),
            None => text.to_string(),
        }
    }
}

/// `end_turn`, `in_progress`, `read`: the protocol's own name of a value.
fn wire_name(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => "unknown".to_string(),
    }
}

/// The tag (`sessionUpdate`, `type`, `mode`) of a value this client does not render.
fn tag(value: &impl Serialize) -> String {
    let json = serde_json::to_value(value).unwrap_or_default();
    ["sessionUpdate", "type", "mode"]
        .iter()
        .find_map(|key| json.get(key).and_then(|v| v.as_str()).map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

fn config_summary(options: &[SessionConfigOption]) -> String {
    const SHOWN: usize = 4;
    let mut parts: Vec<String> = options
        .iter()
        .take(SHOWN)
        .map(|option| {
            let value = match &option.kind {
                SessionConfigKind::Select(select) => {
                    let flat: Vec<_> = match &select.options {
                        SessionConfigSelectOptions::Ungrouped(options) => options.iter().collect(),
                        SessionConfigSelectOptions::Grouped(groups) => {
                            groups.iter().flat_map(|g| g.options.iter()).collect()
                        }
                        _ => Vec::new(),
                    };
                    flat.iter()
                        .find(|o| o.value == select.current_value)
                        .map_or_else(|| select.current_value.to_string(), |o| o.name.clone())
                }
                SessionConfigKind::Boolean(flag) => {
                    if flag.current_value { "on" } else { "off" }.to_string()
                }
                _ => "?".to_string(),
            };
            format!("{}: {value}", option.name.to_lowercase())
        })
        .collect();
    if options.len() > SHOWN {
        parts.push(format!("+{} more", options.len() - SHOWN));
    }
    if parts.is_empty() { "no options".to_string() } else { parts.join(" · ") }
}

fn commands(commands: &[AvailableCommand]) -> String {
    const SHOWN: usize = 6;
    let mut names: Vec<String> =
        commands.iter().take(SHOWN).map(|c| format!("/{}", c.name)).collect();
    if commands.len() > SHOWN {
        names.push(format!("+{} more", commands.len() - SHOWN));
    }
    if names.is_empty() { "none".to_string() } else { names.join(" ") }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max - 1).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::demo::answer::fields;

    fn plain() -> Renderer<Vec<u8>> {
        Renderer::new(Vec::new(), false).relative_to(Path::new("/w"))
    }

    fn ansi() -> Renderer<Vec<u8>> {
        Renderer::new(Vec::new(), true)
    }

    fn feed(renderer: &mut Renderer<Vec<u8>>, updates: &[Value]) {
        for update in updates {
            let update: SessionUpdate = serde_json::from_value(update.clone()).unwrap();
            renderer.update(&update).unwrap();
        }
    }

    fn stop(renderer: &mut Renderer<Vec<u8>>, response: Value) {
        renderer.stop(&serde_json::from_value(response).unwrap()).unwrap();
    }

    fn text(renderer: Renderer<Vec<u8>>) -> String {
        String::from_utf8(renderer.into_inner()).unwrap()
    }

    fn chunk(kind: &str, text: &str) -> Value {
        json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
    }

    #[test]
    fn streams_thoughts_then_text_and_the_stop_reason_in_plain_text() {
        let mut r = plain();
        feed(
            &mut r,
            &[
                chunk("agent_thought_chunk", "Let me "),
                chunk("agent_thought_chunk", "think."),
                chunk("agent_message_chunk", "Hello"),
                chunk("agent_message_chunk", ""),
                chunk("agent_message_chunk", " world."),
            ],
        );
        stop(&mut r, json!({"stopReason": "end_turn"}));
        assert_eq!(text(r), "(thinking) Let me think.\nHello world.\n— stop: end_turn\n");
    }

    #[test]
    fn dims_thoughts_only_on_a_terminal() {
        let mut r = ansi();
        feed(&mut r, &[chunk("agent_thought_chunk", "hmm"), chunk("agent_message_chunk", "ok")]);
        let out = text(r);
        assert!(out.starts_with("\x1b[2m(thinking) \x1b[0m\x1b[2mhmm\x1b[0m\n"), "{out:?}");
        assert!(out.ends_with("ok"), "{out:?}");

        let mut r = plain();
        feed(&mut r, &[chunk("agent_thought_chunk", "hmm")]);
        assert!(!text(r).contains('\x1b'));
    }

    #[test]
    fn a_tool_card_follows_its_updates_with_the_diff() {
        let mut r = plain();
        feed(
            &mut r,
            &[
                chunk("agent_message_chunk", "I will write it."),
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Write /w/notes.txt",
                       "kind": "edit", "status": "pending"}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
                       "content": [{"type": "diff", "path": "/w/notes.txt",
                                    "oldText": "one\ntwo\nthree\n", "newText": "one\n2\nthree\n"}]}),
                chunk("agent_message_chunk", "Done."),
            ],
        );
        assert_eq!(
            text(r),
            "I will write it.\n\
             [tool] Write notes.txt (edit) … pending\n\
             [tool] Write notes.txt (edit) … completed\n    notes.txt\n    - two\n    + 2\n\
             Done."
        );
    }

    #[test]
    fn a_terminal_rewrites_the_card_in_place_until_something_follows_it() {
        let mut r = ansi();
        feed(
            &mut r,
            &[
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a", "kind": "read"}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"}),
                chunk("agent_message_chunk", "between"),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
            ],
        );
        let out = text(r);
        assert_eq!(out.matches("\x1b[1A\r\x1b[2K").count(), 1, "{out:?}");
        let rewrite = out.find("\x1b[1A").unwrap();
        assert!(
            rewrite < out.find("between").unwrap(),
            "only the card before the text is rewritten"
        );
        assert!(out.contains("\x1b[32mcompleted\x1b[0m"), "{out:?}");
    }

    #[test]
    fn tool_output_is_trimmed_and_only_shown_when_it_changes() {
        let lines: Vec<String> = (1..=9).map(|n| format!("line {n}")).collect();
        let content =
            json!([{"type": "content", "content": {"type": "text", "text": lines.join("\n")}}]);
        let mut r = plain();
        feed(
            &mut r,
            &[
                json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read README.md",
                       "kind": "read", "status": "in_progress", "content": content}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed",
                       "content": content}),
            ],
        );
        assert_eq!(
            text(r),
            "[tool] Read README.md (read) … in progress\n    line 1\n    line 2\n    line 3\n    \
             line 4\n    line 5\n    line 6\n    … 3 more lines\n\
             [tool] Read README.md (read) … completed\n"
        );
    }

    #[test]
    fn a_new_file_diff_shows_only_added_lines() {
        let mut r = plain();
        feed(
            &mut r,
            &[json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Write",
                     "kind": "edit", "status": "completed",
                     "content": [{"type": "diff", "path": "/elsewhere/x.txt", "newText": "hello\n"}]})],
        );
        assert!(text(r).ends_with("    /elsewhere/x.txt (new file)\n    + hello\n"));
    }

    #[test]
    fn plans_show_entries_markdown_and_removal() {
        let mut r = plain();
        feed(
            &mut r,
            &[
                json!({"sessionUpdate": "plan", "entries": [
                    {"content": "Read the code", "priority": "high", "status": "completed"},
                    {"content": "Make the change", "priority": "medium", "status": "in_progress"},
                    {"content": "Run the tests", "priority": "low", "status": "pending"}]}),
                json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p1",
                       "content": "# Proposed plan\n\n1. Read\n2. Change"}}),
                json!({"sessionUpdate": "plan_removed", "planId": "p1"}),
            ],
        );
        assert_eq!(
            text(r),
            "[plan]\n    [x] Read the code\n    [~] Make the change\n    [ ] Run the tests\n\
             [plan]\n    # Proposed plan\n    1. Read\n    2. Change\n[plan] removed\n"
        );
    }

    #[test]
    fn mode_config_and_usage_are_brief() {
        let mut r = plain();
        feed(
            &mut r,
            &[
                json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"}),
                json!({"sessionUpdate": "config_option_update", "configOptions": [
                    {"id": "model", "name": "Model", "type": "select", "currentValue": "glm",
                     "options": [{"value": "glm", "name": "GLM-4.6"}]},
                    {"id": "fast", "name": "Fast", "type": "boolean", "currentValue": false}]}),
                json!({"sessionUpdate": "usage_update", "used": 100, "size": 1000}),
                json!({"sessionUpdate": "usage_update", "used": 120, "size": 1000}),
            ],
        );
        stop(
            &mut r,
            json!({"stopReason": "cancelled",
                   "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}}),
        );
        assert_eq!(
            text(r),
            "[mode] plan\n[config] model: GLM-4.6 · fast: off\n\
             [usage] context 120/1000 tokens · this turn 20 in, 10 out\n— stop: cancelled\n"
        );
    }

    #[test]
    fn a_permission_lists_its_options_and_the_answer() {
        let mut r = plain();
        feed(
            &mut r,
            &[json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Write notes.txt",
                     "kind": "edit", "status": "pending"})],
        );
        let request: RequestPermissionRequest = serde_json::from_value(json!({
            "sessionId": "s", "toolCall": {"toolCallId": "t"},
            "options": [{"optionId": "a", "name": "Allow once", "kind": "allow_once"},
                        {"optionId": "r", "name": "Reject", "kind": "reject_once"}]
        }))
        .unwrap();
        r.permission(&request).unwrap();
        r.answer("Reject", "stdin is not a terminal; pass --yes or --no").unwrap();
        assert_eq!(
            text(r),
            "[tool] Write notes.txt (edit) … pending\n[permission] Write notes.txt (edit)\n      \
             1. Allow once\n      2. Reject\n    → Reject (stdin is not a terminal; pass --yes or --no)\n"
        );
    }

    #[test]
    fn a_plan_approval_form_does_not_repeat_its_message() {
        let schema = serde_json::from_value(json!({
            "type": "object",
            "properties": {"optionId": {"type": "string", "title": "Plan approval",
                "description": "Approve the plan?",
                "oneOf": [{"const": "yes", "title": "Yes, start"}, {"const": "no", "title": "No"}]}},
            "required": ["optionId"]
        }))
        .unwrap();
        let mut r = plain();
        r.form("Approve the plan?").unwrap();
        for field in fields(&schema) {
            r.field(&field, "Approve the plan?").unwrap();
        }
        assert_eq!(
            text(r),
            "[question] Approve the plan?\n    Plan approval\n      1. Yes, start\n      2. No\n"
        );
    }

    #[test]
    fn a_typed_reply_is_written_out_when_stdout_is_not_the_terminal() {
        let mut r = plain();
        r.ask("1-2").unwrap();
        r.typed("2").unwrap();
        r.answer("Thorough", "").unwrap();
        assert_eq!(text(r), "    ? [1-2] 2\n    → Thorough\n");

        let mut r = ansi();
        r.ask("1-2").unwrap();
        r.typed("2").unwrap();
        assert!(!text(r).contains("2\n"), "the terminal already echoed the reply");
    }

    #[test]
    fn repeated_status_updates_are_shown_once() {
        let response: NewSessionResponse = serde_json::from_value(json!({
            "sessionId": "s1",
            "modes": {"currentModeId": "build", "availableModes": [
                {"id": "build", "name": "Ask before changes"}, {"id": "plan", "name": "Plan mode"}]},
            "configOptions": [{"id": "model", "name": "Model", "type": "select", "currentValue": "m",
                               "options": [{"value": "m", "name": "GLM-5.2"}]}]
        }))
        .unwrap();
        let mut r = plain();
        r.session_started(&response).unwrap();
        let title = json!({"sessionUpdate": "session_info_update", "title": "Hello"});
        feed(
            &mut r,
            &[
                json!({"sessionUpdate": "current_mode_update", "currentModeId": "build"}),
                json!({"sessionUpdate": "config_option_update", "configOptions": [
                    {"id": "model", "name": "Model", "type": "select", "currentValue": "m",
                     "options": [{"value": "m", "name": "GLM-5.2"}]}]}),
                title.clone(),
                json!({"sessionUpdate": "session_info_update", "updatedAt": "2026-01-01T00:00:00Z"}),
                title,
                json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"}),
            ],
        );
        assert_eq!(
            text(r),
            "[session] s1 · mode: Ask before changes · model: GLM-5.2\n[title] Hello\n\
             [mode] Plan mode\n"
        );
    }

    #[test]
    fn a_card_names_its_location_and_takes_the_permission_title() {
        let mut r = plain();
        feed(
            &mut r,
            &[
                json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Write", "kind": "edit",
                     "locations": [{"path": "/w/notes.txt"}]}),
            ],
        );
        let request: RequestPermissionRequest = serde_json::from_value(json!({
            "sessionId": "s", "toolCall": {"toolCallId": "t", "title": "Write notes.txt"},
            "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]
        }))
        .unwrap();
        r.permission(&request).unwrap();
        feed(
            &mut r,
            &[
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"}),
            ],
        );
        assert_eq!(
            text(r),
            "[tool] Write notes.txt (edit) … pending\n[permission] Write notes.txt (edit)\n      \
             1. Allow\n[tool] Write notes.txt (edit) … completed\n"
        );
    }

    #[test]
    fn steps_are_separated_and_unknown_updates_named_not_dumped() {
        let mut r = plain();
        r.step(1, 2, "a plain reply").unwrap();
        r.prompt("Hello\nthere").unwrap();
        feed(&mut r, &[chunk("agent_message_chunk", "Hi")]);
        r.step(2, 2, "a read").unwrap();
        feed(
            &mut r,
            &[json!({"sessionUpdate": "available_commands_update", "availableCommands": [
                {"name": "init", "description": "Set up"}]})],
        );
        assert_eq!(
            text(r),
            "── 1/2 a plain reply\n> Hello there\nHi\n\n── 2/2 a read\n[commands] /init\n"
        );
    }
}
