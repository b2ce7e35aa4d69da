//! ACP `session/update` objects, written as JSON text field by field (no `Value` tree): a turn
//! streams text chunks by the thousand, and the other updates come from the same writer so
//! every mapper spells them one way. Each function returns the update's JSON text, as
//! `Action::Update`, `Outgoing::updates` and `OpResult::updates` carry it.
//!
//! | builder | `sessionUpdate` |
//! | --- | --- |
//! | [`text_chunk`] ([`agent_text`], [`agent_thought`], [`user_text`]), [`content_chunk`] | `*_chunk` |
//! | [`ToolCall`], [`ToolCallUpdate`] | `tool_call`, `tool_call_update` |
//! | [`plan`], [`plan_items`], [`plan_markdown`], [`plan_removed`] | `plan`, `plan_*` |
//! | [`available_commands`] | `available_commands_update` |
//! | [`current_mode`] | `current_mode_update` |
//! | [`config_options`] | `config_option_update` |
//! | [`session_info`] | `session_info_update` |
//! | [`usage`] | `usage_update` |
//!
//! [`LastSent`] remembers the last update of each kind, for mappers that republish session
//! metadata from every snapshot and tell the client only what changed.

use std::collections::BTreeMap;

use serde_json::Value;

use super::write::{self, Obj};

/// The update's tag.
const TAG: &str = "sessionUpdate";

fn tagged(kind: &str) -> Obj {
    Obj::new().str(TAG, kind)
}

// ----- message chunks --------------------------------------------------------------------------

/// Which stream a chunk belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunk {
    /// `user_message_chunk` (a replayed prompt).
    User,
    /// `agent_message_chunk`.
    Agent,
    /// `agent_thought_chunk`.
    Thought,
}

impl Chunk {
    pub fn tag(self) -> &'static str {
        match self {
            Chunk::User => "user_message_chunk",
            Chunk::Agent => "agent_message_chunk",
            Chunk::Thought => "agent_thought_chunk",
        }
    }
}

/// A text chunk: `{"sessionUpdate", "content": {"type": "text", "text"}, "messageId"?}`. The
/// keys come sorted, as a `serde_json` tree writes them (without `preserve_order`), so the text
/// is the same byte for byte as a tree of the chunk would give.
pub fn text_chunk(chunk: Chunk, text: &str, message_id: Option<&str>) -> String {
    // Written per streamed delta, so its fixed parts go in whole rather than key by key: one
    // string, sized once, and two escaped strings (issue 27).
    let mut out = String::with_capacity(text.len() + 80 + message_id.map_or(0, |id| id.len() + 16));
    out.push_str(r#"{"content":{"text":"#);
    write::string(&mut out, text);
    out.push_str(r#","type":"text"}"#);
    if let Some(id) = message_id {
        out.push_str(r#","messageId":"#);
        write::string(&mut out, id);
    }
    out.push_str(r#","sessionUpdate":""#);
    out.push_str(chunk.tag());
    out.push_str(r#""}"#);
    out
}

/// An agent message chunk without a message id.
pub fn agent_text(text: &str) -> String {
    text_chunk(Chunk::Agent, text, None)
}

/// An agent thought chunk without a message id.
pub fn agent_thought(text: &str) -> String {
    text_chunk(Chunk::Thought, text, None)
}

/// A user message chunk without a message id (replayed history).
pub fn user_text(text: &str) -> String {
    text_chunk(Chunk::User, text, None)
}

/// A chunk of any ACP content block (a `resource_link`, an image), given as a tree.
pub fn content_chunk(chunk: Chunk, content: &Value, message_id: Option<&str>) -> String {
    tagged(chunk.tag()).value("content", content).opt_str("messageId", message_id).end()
}

// ----- tool calls ------------------------------------------------------------------------------

/// ACP tool-call status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

impl ToolStatus {
    pub fn name(self) -> &'static str {
        match self {
            ToolStatus::Pending => "pending",
            ToolStatus::InProgress => "in_progress",
            ToolStatus::Completed => "completed",
            ToolStatus::Failed => "failed",
        }
    }

    /// Completed or failed: nothing follows.
    pub fn is_final(self) -> bool {
        matches!(self, ToolStatus::Completed | ToolStatus::Failed)
    }
}

/// A `tool_call`: a tool announced whole (or replayed from history). Empty `content` and
/// `locations` are left out.
#[derive(Clone, Copy, Debug)]
pub struct ToolCall<'a> {
    pub id: &'a str,
    pub title: &'a str,
    /// ACP tool kind (`read`, `edit`, ..., see [`crate::tool_view::tool_kind`]).
    pub kind: &'a str,
    pub status: ToolStatus,
    pub raw_input: Option<&'a Value>,
    pub raw_output: Option<&'a Value>,
    pub content: &'a [Value],
    pub locations: &'a [Value],
}

impl<'a> ToolCall<'a> {
    /// A pending call with nothing but its id, title and kind.
    pub fn new(id: &'a str, title: &'a str, kind: &'a str) -> Self {
        Self {
            id,
            title,
            kind,
            status: ToolStatus::Pending,
            raw_input: None,
            raw_output: None,
            content: &[],
            locations: &[],
        }
    }

    pub fn to_json(&self) -> String {
        let mut update = tagged("tool_call")
            .str("toolCallId", self.id)
            .str("title", self.title)
            .str("kind", self.kind)
            .str("status", self.status.name())
            .opt_value("rawInput", self.raw_input)
            .opt_value("rawOutput", self.raw_output);
        if !self.content.is_empty() {
            update = update.values("content", self.content);
        }
        if !self.locations.is_empty() {
            update = update.values("locations", self.locations);
        }
        update.end()
    }
}

/// A `tool_call_update`, or (as [`ToolCallUpdate::fields`]) the `toolCall` of a permission
/// request. Fields left `None` are left out; `Some(&[])` content is written as `[]`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ToolCallUpdate<'a> {
    pub id: &'a str,
    pub title: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub status: Option<ToolStatus>,
    pub raw_input: Option<&'a Value>,
    pub raw_output: Option<&'a Value>,
    pub content: Option<&'a [Value]>,
    pub locations: Option<&'a [Value]>,
}

impl<'a> ToolCallUpdate<'a> {
    pub fn new(id: &'a str) -> Self {
        Self { id, ..Self::default() }
    }

    /// The tool moved to `status`, nothing else changed.
    pub fn status(id: &'a str, status: ToolStatus) -> Self {
        Self { status: Some(status), ..Self::new(id) }
    }

    /// The fields, written into `object`.
    pub(crate) fn write(&self, object: Obj) -> Obj {
        let mut object = object
            .str("toolCallId", self.id)
            .opt_str("title", self.title)
            .opt_str("kind", self.kind)
            .opt_str("status", self.status.map(ToolStatus::name))
            .opt_value("rawInput", self.raw_input)
            .opt_value("rawOutput", self.raw_output);
        if let Some(content) = self.content {
            object = object.values("content", content);
        }
        if let Some(locations) = self.locations {
            object = object.values("locations", locations);
        }
        object
    }

    /// The `tool_call_update` object.
    pub fn to_json(&self) -> String {
        self.write(tagged("tool_call_update")).end()
    }

    /// The fields alone (ACP `ToolCallUpdate` without the tag), as a permission request's
    /// `toolCall`.
    pub fn fields(&self) -> String {
        self.write(Obj::new()).end()
    }
}

// ----- plans -----------------------------------------------------------------------------------

/// Status of a plan entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryStatus {
    Pending,
    InProgress,
    Completed,
}

impl EntryStatus {
    pub fn name(self) -> &'static str {
        match self {
            EntryStatus::Pending => "pending",
            EntryStatus::InProgress => "in_progress",
            EntryStatus::Completed => "completed",
        }
    }
}

/// Priority of a plan entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    High,
    Medium,
    Low,
}

impl Priority {
    pub fn name(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Medium => "medium",
            Priority::Low => "low",
        }
    }
}

/// One entry of a plan (a todo list, or a proposal shown as a single entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanEntry<'a> {
    pub content: &'a str,
    pub priority: Priority,
    pub status: EntryStatus,
}

impl PlanEntry<'_> {
    fn to_json(self) -> String {
        Obj::new()
            .str("content", self.content)
            .str("priority", self.priority.name())
            .str("status", self.status.name())
            .end()
    }
}

fn entries(entries: &[PlanEntry<'_>]) -> Vec<String> {
    entries.iter().map(|entry| entry.to_json()).collect()
}

/// The legacy `plan`: the whole list (empty clears it).
pub fn plan(list: &[PlanEntry<'_>]) -> String {
    tagged("plan").raw_list("entries", entries(list).iter().map(String::as_str)).end()
}

/// `plan_update` with an `items` plan (clients that declared plan operations).
pub fn plan_items(plan_id: &str, list: &[PlanEntry<'_>]) -> String {
    let items = entries(list);
    let plan = Obj::new()
        .str("type", "items")
        .str("planId", plan_id)
        .raw_list("entries", items.iter().map(String::as_str))
        .end();
    tagged("plan_update").raw("plan", &plan).end()
}

/// `plan_update` with a `markdown` plan.
pub fn plan_markdown(plan_id: &str, content: &str) -> String {
    let plan =
        Obj::new().str("type", "markdown").str("planId", plan_id).str("content", content).end();
    tagged("plan_update").raw("plan", &plan).end()
}

/// `plan_removed`.
pub fn plan_removed(plan_id: &str) -> String {
    tagged("plan_removed").str("planId", plan_id).end()
}

// ----- session metadata ------------------------------------------------------------------------

/// A slash command the client may offer.
#[derive(Clone, Copy, Debug)]
pub struct Command<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// Shown while the user types the command's input.
    pub input_hint: Option<&'a str>,
}

/// `available_commands_update`.
pub fn available_commands(commands: &[Command<'_>]) -> String {
    let commands: Vec<String> = commands
        .iter()
        .map(|command| {
            let entry =
                Obj::new().str("name", command.name).str("description", command.description);
            match command.input_hint {
                Some(hint) => entry.raw("input", &Obj::new().str("hint", hint).end()).end(),
                None => entry.end(),
            }
        })
        .collect();
    tagged("available_commands_update")
        .raw_list("availableCommands", commands.iter().map(String::as_str))
        .end()
}

/// `current_mode_update`.
pub fn current_mode(mode_id: &str) -> String {
    tagged("current_mode_update").str("currentModeId", mode_id).end()
}

/// `config_option_update` with every option (see [`super::config`]).
pub fn config_options(options: &Value) -> String {
    tagged("config_option_update").value("configOptions", options).end()
}

/// `session_info_update`, or nothing when there is neither a title nor a time. `updated_at`
/// is ISO 8601 ([`crate::time::iso8601_from_epoch_ms`]).
pub fn session_info(title: Option<&str>, updated_at: Option<&str>) -> Option<String> {
    if title.is_none() && updated_at.is_none() {
        return None;
    }
    Some(
        tagged("session_info_update")
            .opt_str("title", title)
            .opt_str("updatedAt", updated_at)
            .end(),
    )
}

/// What the session's context costs so far.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost<'a> {
    pub amount: f64,
    pub currency: &'a str,
}

/// `usage_update`: context tokens used of `size`, and the cost if known.
pub fn usage(used: u64, size: u64, cost: Option<Cost<'_>>) -> String {
    let update = tagged("usage_update").u64("used", used).u64("size", size);
    match cost {
        Some(cost) => {
            let cost = serde_json::json!({"amount": cost.amount, "currency": cost.currency});
            update.value("cost", &cost).end()
        }
        None => update.end(),
    }
}

// ----- reading back ----------------------------------------------------------------------------

/// The `sessionUpdate` tag of an update's JSON text (`None` if it has none).
pub fn kind(update: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Tag {
        #[serde(rename = "sessionUpdate")]
        kind: String,
    }
    serde_json::from_str::<Tag>(update).ok().map(|tag| tag.kind)
}

/// The last update of each kind sent to the client. Snapshots repeat most of what they say;
/// a mapper that publishes metadata from each one sends only updates that changed.
#[derive(Clone, Debug, Default)]
pub struct LastSent {
    by_kind: BTreeMap<String, String>,
}

impl LastSent {
    /// Records `update` as sent; false if it repeats the last update of its kind.
    pub fn changed(&mut self, update: &str) -> bool {
        let kind = kind(update).unwrap_or_default();
        self.by_kind.insert(kind, update.to_string()).as_deref() != Some(update)
    }

    /// Records `updates` sent outside the metadata (answers to the client's own requests).
    pub fn remember(&mut self, updates: &[String]) {
        for update in updates {
            self.changed(update);
        }
    }

    /// The updates that changed, recorded as sent.
    pub fn filter(&mut self, updates: Vec<String>) -> Vec<String> {
        updates.into_iter().filter(|update| self.changed(update)).collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::acp_check;

    fn checked(update: &str) -> Value {
        acp_check::session_update_text(update);
        serde_json::from_str(update).unwrap()
    }

    #[test]
    fn writes_chunks_as_a_sorted_tree_would() {
        let text = "a \"q\" \\ line\nnext \u{e9}\u{1F600} </x> \u{7}\t";
        for chunk in [Chunk::Agent, Chunk::Thought, Chunk::User] {
            for message_id in [Some("m \"1\""), None] {
                let mut tree = json!({"sessionUpdate": chunk.tag(), "content": {"type": "text", "text": text}});
                if let Some(id) = message_id {
                    tree["messageId"] = json!(id);
                }
                assert_eq!(text_chunk(chunk, text, message_id), crate::json::canonical(&tree));
            }
        }
    }

    #[test]
    fn writes_chunks() {
        assert_eq!(
            checked(&text_chunk(Chunk::Agent, "a \"b\"\n", Some("m1"))),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a \"b\"\n"}, "messageId": "m1"})
        );
        assert_eq!(
            checked(&agent_thought("hmm")),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})
        );
        assert_eq!(checked(&user_text("hi"))["sessionUpdate"], "user_message_chunk");
        assert_eq!(checked(&agent_text("x"))["sessionUpdate"], "agent_message_chunk");
        let link = json!({"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs"});
        assert_eq!(
            checked(&content_chunk(Chunk::User, &link, None)),
            json!({"sessionUpdate": "user_message_chunk", "content": link})
        );
    }

    #[test]
    fn writes_tool_calls_and_their_updates() {
        let input = json!({"command": "ls"});
        let content = [json!({"type": "content", "content": {"type": "text", "text": "a.rs"}})];
        let call = ToolCall {
            raw_input: Some(&input),
            locations: &[json!({"path": "/w"})],
            ..ToolCall::new("t1", "Bash: ls", "execute")
        };
        assert_eq!(
            checked(&call.to_json()),
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Bash: ls", "kind": "execute",
                   "status": "pending", "rawInput": {"command": "ls"}, "locations": [{"path": "/w"}]})
        );
        let done = ToolCallUpdate {
            raw_output: Some(&input),
            content: Some(&content),
            ..ToolCallUpdate::status("t1", ToolStatus::Completed)
        };
        assert_eq!(
            checked(&done.to_json()),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
                   "rawOutput": {"command": "ls"}, "content": content})
        );
        let empty = ToolCallUpdate { content: Some(&[]), ..ToolCallUpdate::new("t2") };
        assert_eq!(
            serde_json::from_str::<Value>(&empty.fields()).unwrap(),
            json!({"toolCallId": "t2", "content": []})
        );
        assert!(ToolStatus::Failed.is_final() && !ToolStatus::InProgress.is_final());
    }

    #[test]
    fn writes_plans() {
        let list = [PlanEntry {
            content: "First",
            priority: Priority::High,
            status: EntryStatus::InProgress,
        }];
        let entry = json!({"content": "First", "priority": "high", "status": "in_progress"});
        assert_eq!(checked(&plan(&list)), json!({"sessionUpdate": "plan", "entries": [entry]}));
        assert_eq!(checked(&plan(&[])), json!({"sessionUpdate": "plan", "entries": []}));
        assert_eq!(
            checked(&plan_items("todos", &list)),
            json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "todos", "entries": [entry]}})
        );
        assert_eq!(
            checked(&plan_markdown("p", "# Plan")),
            json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p", "content": "# Plan"}})
        );
        assert_eq!(
            checked(&plan_removed("p")),
            json!({"sessionUpdate": "plan_removed", "planId": "p"})
        );
    }

    #[test]
    fn writes_session_metadata() {
        let commands = [
            Command { name: "init", description: "Set up", input_hint: None },
            Command { name: "review", description: "Review", input_hint: Some("what") },
        ];
        assert_eq!(
            checked(&available_commands(&commands)),
            json!({"sessionUpdate": "available_commands_update", "availableCommands": [
                {"name": "init", "description": "Set up"},
                {"name": "review", "description": "Review", "input": {"hint": "what"}}]})
        );
        assert_eq!(
            checked(&current_mode("plan")),
            json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"})
        );
        let options = json!([{"id": "m", "name": "Model", "type": "select", "currentValue": "a",
                              "options": [{"value": "a", "name": "A"}]}]);
        assert_eq!(
            checked(&config_options(&options)),
            json!({"sessionUpdate": "config_option_update", "configOptions": options})
        );
        assert_eq!(session_info(None, None), None);
        assert_eq!(
            checked(&session_info(Some("T"), Some("2025-09-04T15:33:20.000Z")).unwrap()),
            json!({"sessionUpdate": "session_info_update", "title": "T", "updatedAt": "2025-09-04T15:33:20.000Z"})
        );
        assert_eq!(
            checked(&usage(1200, 200_000, Some(Cost { amount: 0.01, currency: "USD" }))),
            json!({"sessionUpdate": "usage_update", "used": 1200, "size": 200_000, "cost": {"amount": 0.01, "currency": "USD"}})
        );
        assert_eq!(
            checked(&usage(1, 2, None)),
            json!({"sessionUpdate": "usage_update", "used": 1, "size": 2})
        );
    }

    #[test]
    fn sends_only_what_changed() {
        let mut sent = LastSent::default();
        let mode = current_mode("edit");
        assert_eq!(kind(&mode).as_deref(), Some("current_mode_update"));
        assert_eq!(kind("[]"), None);
        assert!(sent.changed(&mode));
        assert!(!sent.changed(&mode));
        sent.remember(&[current_mode("plan")]);
        assert_eq!(sent.filter(vec![current_mode("plan"), user_text("x")]), [user_text("x")]);
        assert!(sent.changed(&mode), "changed back");
    }
}
