//! ACP v1 → v2, for what the coordinator emits: session updates, permission and elicitation
//! requests (and the client's answers back), config options.
//!
//! The coordinator and the mappers speak v1 (already checked against the v1 schema); a v2
//! connection sees everything through here. What v2 changed, and how each change is met:
//! - **Messages are upserts by id.** v1 chunks carry a `messageId` only when ZCode named the
//!   message; otherwise a run of chunks of one kind is one message, with an id made here
//!   (unique per connection), and anything else shown in between (a tool call, a plan) starts
//!   a new message.
//! - **`tool_call` is gone**: a v1 `tool_call` and its `tool_call_update`s are all
//!   `tool_call_update` upserts. A v1 diff (`oldText`/`newText`) becomes a v2 diff: the
//!   changed path and its git patch.
//! - **Plans are `plan_update`s of entry lists, by plan id.** A markdown plan (ZCode's
//!   proposal) is one entry; a removed plan is an empty list. Only the stable v2 plan form is
//!   sent (markdown plans and `plan_removed` are unstable).
//! - **Modes are config options**: the v1 mode state becomes a `mode` select option; a
//!   `current_mode_update` becomes a `config_option_update` with the whole list.
//! - Everything is finally parsed as the v2 type: nothing unchecked reaches the client.

use std::collections::{BTreeMap, HashMap};

use agent_client_protocol::v1::schema as v1;
use agent_client_protocol::v2::schema as v2;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::patch::git_patch;

/// The v2 config id of the session mode (ZCode's own options are `model` and
/// `thought_level`-like ids; a mapper option with this id would take precedence).
pub const MODE_CONFIG_ID: &str = "mode";
/// The plan id of a v1 `plan` (a v1 session shows one plan).
const LEGACY_PLAN_ID: &str = "zcode-acp-plan";

/// Something v1 has that this translation cannot express in v2: a bug to report, never a
/// silent drop.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot express in ACP v2: {0}")]
pub struct TranslateError(pub String);

/// The kinds of message a chunk belongs to; message ids are unique within each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    User,
    Agent,
    Thought,
}

impl MessageKind {
    fn label(self) -> &'static str {
        match self {
            MessageKind::User => "user",
            MessageKind::Agent => "agent",
            MessageKind::Thought => "thought",
        }
    }
}

/// Makes message ids unique on this connection: `zcode-acp-<connection>-<kind>-<n>`.
pub struct MessageIds {
    connection: String,
    next: u64,
}

impl MessageIds {
    pub fn new(connection: &str) -> Self {
        Self { connection: connection.to_string(), next: 0 }
    }

    pub fn next(&mut self, kind: MessageKind) -> v2::MessageId {
        self.next += 1;
        v2::MessageId::new(format!("zcode-acp-{}-{}-{}", self.connection, kind.label(), self.next))
    }
}

/// The translation state of one session.
pub struct Translator {
    ids: MessageIds,
    /// The message the last chunk went to, while nothing else was shown after it.
    open: Option<(MessageKind, v2::MessageId)>,
    /// Tool call titles, for permission requests (v2 requires a title).
    tool_titles: HashMap<String, String>,
    modes: Option<v1::SessionModeState>,
    options: Vec<v1::SessionConfigOption>,
}

impl Translator {
    pub fn new(ids: MessageIds) -> Self {
        Self { ids, open: None, tool_titles: HashMap::new(), modes: None, options: Vec::new() }
    }

    /// A new message id of `kind` (a prompt's user message).
    pub fn new_message(&mut self, kind: MessageKind) -> v2::MessageId {
        self.ids.next(kind)
    }

    /// Ends the open message: the turn is over, the next chunk is a new message.
    pub fn end_message(&mut self) {
        self.open = None;
    }

    /// Records the mode and config options a session response carried.
    pub fn set_config(
        &mut self,
        modes: Option<v1::SessionModeState>,
        options: Option<Vec<v1::SessionConfigOption>>,
    ) {
        if modes.is_some() {
            self.modes = modes;
        }
        if let Some(options) = options {
            self.options = options;
        }
    }

    /// Records a mode set through `session/set_mode`.
    pub fn set_current_mode(&mut self, mode: &str) {
        if let Some(modes) = &mut self.modes {
            modes.current_mode_id = v1::SessionModeId::new(mode);
        }
    }

    /// Whether `config_id` is the mode this translation made an option of.
    pub fn is_mode_option(&self, config_id: &str) -> bool {
        config_id == MODE_CONFIG_ID
            && self.modes.is_some()
            && !self.options.iter().any(|o| o.id.0.as_ref() == MODE_CONFIG_ID)
    }

    /// The v2 config options: the mode (when the session has modes) then ZCode's options.
    pub fn config_options(&self) -> Result<Vec<v2::SessionConfigOption>, TranslateError> {
        let mut options = Vec::new();
        if let Some(modes) = self.modes.as_ref().filter(|_| self.is_mode_option(MODE_CONFIG_ID)) {
            options.push(mode_option(modes)?);
        }
        for option in &self.options {
            options.push(config_option(option)?);
        }
        Ok(options)
    }

    /// One v1 update as the v2 updates that show it.
    pub fn update(
        &mut self,
        update: v1::SessionUpdate,
    ) -> Result<Vec<v2::SessionUpdate>, TranslateError> {
        use v1::SessionUpdate as U;
        let translated = match update {
            U::UserMessageChunk(chunk) => {
                v2::SessionUpdate::UserMessageChunk(self.chunk(MessageKind::User, chunk)?)
            }
            U::AgentMessageChunk(chunk) => {
                v2::SessionUpdate::AgentMessageChunk(self.chunk(MessageKind::Agent, chunk)?)
            }
            U::AgentThoughtChunk(chunk) => {
                v2::SessionUpdate::AgentThoughtChunk(self.chunk(MessageKind::Thought, chunk)?)
            }
            U::ToolCall(call) => {
                self.open = None;
                self.tool_titles.insert(call.tool_call_id.0.to_string(), call.title.clone());
                v2::SessionUpdate::ToolCallUpdate(tool_call(to_value(&call))?)
            }
            U::ToolCallUpdate(update) => {
                self.open = None;
                if let Some(title) = &update.fields.title {
                    self.tool_titles.insert(update.tool_call_id.0.to_string(), title.clone());
                }
                v2::SessionUpdate::ToolCallUpdate(tool_call(to_value(&update))?)
            }
            U::Plan(plan) => {
                self.open = None;
                plan_items(LEGACY_PLAN_ID, to_value(&plan.entries))?
            }
            U::PlanUpdate(update) => {
                self.open = None;
                plan_update(update)?
            }
            U::PlanRemoved(removed) => {
                self.open = None;
                plan_items(&removed.plan_id.0, json!([]))?
            }
            U::AvailableCommandsUpdate(update) => {
                let mut value = to_value(&update);
                for command in value["availableCommands"].as_array_mut().into_iter().flatten() {
                    command["type"] = json!("command");
                    if let Some(input) = command.get_mut("input").filter(|i| i.is_object()) {
                        input["type"] = json!("text");
                    }
                }
                v2::SessionUpdate::AvailableCommandsUpdate(recast("available commands", value)?)
            }
            U::CurrentModeUpdate(update) => {
                self.set_current_mode(&update.current_mode_id.0);
                self.config_update()?
            }
            U::ConfigOptionUpdate(update) => {
                self.options = update.config_options;
                self.config_update()?
            }
            U::SessionInfoUpdate(update) => {
                v2::SessionUpdate::SessionInfoUpdate(recast("session info", to_value(&update))?)
            }
            U::UsageUpdate(update) => {
                v2::SessionUpdate::UsageUpdate(recast("usage", to_value(&update))?)
            }
            U::Notice(notice) => v2::SessionUpdate::Notice(recast("notice", to_value(&notice))?),
            U::CompactionUpdate(update) => {
                v2::SessionUpdate::CompactionUpdate(recast("compaction", to_value(&update))?)
            }
            U::CompactionSummaryChunk(chunk) => v2::SessionUpdate::CompactionSummaryChunk(recast(
                "compaction summary",
                to_value(&chunk),
            )?),
            other => return Err(TranslateError(format!("the v1 update {other:?}"))),
        };
        Ok(vec![translated])
    }

    /// A v1 permission request as v2's: titled (v2 requires it) like its tool call, with
    /// the tool call as its subject, the same options.
    pub fn permission_request(
        &self,
        request: &v1::RequestPermissionRequest,
    ) -> Result<v2::RequestPermissionRequest, TranslateError> {
        let call = &request.tool_call;
        let title = call
            .fields
            .title
            .clone()
            .or_else(|| self.tool_titles.get(call.tool_call_id.0.as_ref()).cloned())
            .unwrap_or_else(|| "Allow this tool call?".to_string());
        let value = json!({
            "sessionId": request.session_id,
            "title": title,
            "subject": {"type": "tool_call", "toolCall": to_value(&tool_call(to_value(call))?)},
            "options": to_value(&request.options),
        });
        recast("permission request", value)
    }

    fn chunk(
        &mut self,
        kind: MessageKind,
        chunk: v1::ContentChunk,
    ) -> Result<v2::ContentChunk, TranslateError> {
        let id = match (chunk.message_id, &self.open) {
            (Some(named), _) => v2::MessageId::new(named.0.to_string()),
            (None, Some((open_kind, id))) if *open_kind == kind => id.clone(),
            (None, _) => self.ids.next(kind),
        };
        self.open = Some((kind, id.clone()));
        let content: v2::ContentBlock = recast("content block", to_value(&chunk.content))?;
        Ok(v2::ContentChunk::new(content, id))
    }

    fn config_update(&self) -> Result<v2::SessionUpdate, TranslateError> {
        Ok(v2::SessionUpdate::ConfigOptionUpdate(v2::ConfigOptionUpdate::new(
            self.config_options()?,
        )))
    }
}

/// The client's answer to a permission request, for the coordinator. An answer v1 cannot
/// express (a future outcome) is an error: the coordinator then denies.
pub fn permission_response(
    response: v2::RequestPermissionResponse,
) -> Result<v1::RequestPermissionResponse, TranslateError> {
    recast("permission response", to_value(&response))
}

/// A v1 form elicitation as v2's (the same shape).
pub fn elicitation_request(
    request: &v1::CreateElicitationRequest,
) -> Result<v2::CreateElicitationRequest, TranslateError> {
    recast("elicitation request", to_value(request))
}

pub fn elicitation_response(
    response: v2::CreateElicitationResponse,
) -> Result<v1::CreateElicitationResponse, TranslateError> {
    recast("elicitation response", to_value(&response))
}

/// A v1 `tool_call` or `tool_call_update` (as JSON) as a v2 `tool_call_update`.
fn tool_call(mut value: Value) -> Result<v2::ToolCallUpdate, TranslateError> {
    if let Some(content) = value.get_mut("content").and_then(Value::as_array_mut) {
        for item in content.iter_mut() {
            if item["type"] == "diff" {
                *item = diff(item)?;
            }
        }
    }
    recast("tool call", value)
}

/// v1 `{path, oldText?, newText}` → v2 `{changes: [add|modify {path}], patch}`.
fn diff(item: &Value) -> Result<Value, TranslateError> {
    let diff: v1::Diff = recast("diff", item.clone())?;
    let path = diff.path.to_string_lossy().into_owned();
    let change = match diff.old_text {
        None => v2::DiffChange::add(diff.path.clone()),
        Some(_) => v2::DiffChange::modify(diff.path.clone()),
    };
    let mut v2_diff = v2::Diff::new(vec![change.file_type(v2::DiffFileType::Text)]);
    if let Some(patch) = git_patch(&path, diff.old_text.as_deref(), &diff.new_text) {
        v2_diff = v2_diff.with_patch(v2::DiffPatch::new(patch));
    }
    Ok(to_value(&v2::ToolCallContent::Diff(v2_diff)))
}

fn plan_items(plan_id: &str, entries: Value) -> Result<v2::SessionUpdate, TranslateError> {
    let value = json!({"plan": {"type": "items", "planId": plan_id, "entries": entries}});
    Ok(v2::SessionUpdate::PlanUpdate(recast("plan", value)?))
}

fn plan_update(update: v1::PlanUpdate) -> Result<v2::SessionUpdate, TranslateError> {
    match update.plan {
        v1::PlanUpdateContent::Items(items) => {
            plan_items(&items.plan_id.0, to_value(&items.entries))
        }
        v1::PlanUpdateContent::Markdown(markdown) => plan_items(
            &markdown.plan_id.0,
            json!([{"content": markdown.content, "priority": "high", "status": "pending"}]),
        ),
        v1::PlanUpdateContent::File(file) => plan_items(
            &file.plan_id.0,
            json!([{"content": format!("Plan: {}", file.uri), "priority": "high", "status": "pending"}]),
        ),
        other => Err(TranslateError(format!("the plan content {other:?}"))),
    }
}

fn mode_option(modes: &v1::SessionModeState) -> Result<v2::SessionConfigOption, TranslateError> {
    let choices: Vec<Value> = modes
        .available_modes
        .iter()
        .map(|mode| {
            let mut choice = json!({"value": mode.id.0, "name": mode.name});
            if let Some(description) = &mode.description {
                choice["description"] = json!(description);
            }
            choice
        })
        .collect();
    recast(
        "mode option",
        json!({"configId": MODE_CONFIG_ID, "name": "Mode", "category": "mode", "type": "select",
               "currentValue": modes.current_mode_id.0, "options": choices}),
    )
}

/// v1 `{id, …, options: [… {group, …}]}` → v2 `{configId, …, options: [… {groupId, …}]}`.
fn config_option(
    option: &v1::SessionConfigOption,
) -> Result<v2::SessionConfigOption, TranslateError> {
    let mut value = to_value(option);
    rename(&mut value, "id", "configId");
    for entry in value["options"].as_array_mut().into_iter().flatten() {
        rename(entry, "group", "groupId");
    }
    recast("config option", value)
}

fn rename(value: &mut Value, from: &str, to: &str) {
    if let Some(object) = value.as_object_mut()
        && let Some(moved) = object.remove(from)
    {
        object.insert(to.to_string(), moved);
    }
}

/// `replay_complete`, which the SDK's schema (1.17) predates: sent as the open update kind
/// it is on the wire.
pub fn replay_complete() -> v2::SessionUpdate {
    v2::SessionUpdate::Other(v2::OtherSessionUpdate::new("replay_complete", BTreeMap::new()))
}

pub fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("ACP schema types always serialize")
}

/// Parses `value` as the v2 (or v1) type `T`.
pub fn recast<T: DeserializeOwned>(what: &str, value: Value) -> Result<T, TranslateError> {
    serde_json::from_value(value).map_err(|e| TranslateError(format!("{what}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn translator() -> Translator {
        Translator::new(MessageIds::new("c1"))
    }

    fn v1_update(value: Value) -> v1::SessionUpdate {
        serde_json::from_value(value).unwrap()
    }

    fn translated(t: &mut Translator, value: Value) -> Vec<Value> {
        t.update(v1_update(value)).unwrap().iter().map(to_value).collect()
    }

    #[test]
    fn chunks_of_one_run_share_a_message_and_anything_between_starts_another() {
        let mut t = translator();
        let text = |s: &str| json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": s}});
        let a = translated(&mut t, text("Hel"));
        let b = translated(&mut t, text("lo"));
        assert_eq!(a[0]["messageId"], b[0]["messageId"]);
        assert_eq!(a[0]["messageId"], "zcode-acp-c1-agent-1");
        // A thought in between is its own message; the text after it a new one.
        let thought = translated(
            &mut t,
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}}),
        );
        let c = translated(&mut t, text("again"));
        assert_ne!(thought[0]["messageId"], a[0]["messageId"]);
        assert_ne!(c[0]["messageId"], a[0]["messageId"]);
        // An id ZCode gave is kept.
        let mut named = text("x");
        named["messageId"] = json!("native-7");
        assert_eq!(translated(&mut t, named)[0]["messageId"], "native-7");
        t.end_message();
        assert_ne!(translated(&mut t, text("next turn"))[0]["messageId"], "native-7");
    }

    #[test]
    fn tool_calls_become_upserts_and_diffs_become_patches() {
        let mut t = translator();
        let call = translated(
            &mut t,
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Write /w/a.txt",
                   "kind": "edit", "status": "pending",
                   "content": [{"type": "diff", "path": "/w/a.txt", "newText": "hi\n"}],
                   "locations": [{"path": "/w/a.txt"}]}),
        );
        assert_eq!(call[0]["sessionUpdate"], "tool_call_update");
        assert_eq!(call[0]["title"], "Write /w/a.txt");
        let diff = &call[0]["content"][0];
        assert_eq!(diff["type"], "diff");
        assert_eq!(diff["changes"][0]["operation"], "add", "{diff}");
        assert_eq!(diff["changes"][0]["path"], "/w/a.txt", "{diff}");
        assert!(diff["patch"]["text"].as_str().unwrap().contains("+hi\n"), "{diff}");
        assert_eq!(diff["patch"]["format"], "git_patch");
        let done = translated(
            &mut t,
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
        );
        assert_eq!(
            done[0],
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
        );
        // The permission for it carries its title.
        let request: v1::RequestPermissionRequest = serde_json::from_value(json!({
            "sessionId": "s", "toolCall": {"toolCallId": "t1"},
            "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}))
        .unwrap();
        let asked = to_value(&t.permission_request(&request).unwrap());
        assert_eq!(asked["title"], "Write /w/a.txt");
        assert_eq!(asked["subject"]["type"], "tool_call");
        assert_eq!(asked["subject"]["toolCall"]["toolCallId"], "t1");
        assert_eq!(asked["options"][0]["optionId"], "allow");
    }

    #[test]
    fn plans_become_entry_lists_by_id() {
        let mut t = translator();
        let legacy = translated(
            &mut t,
            json!({"sessionUpdate": "plan", "entries": [{"content": "a", "priority": "high", "status": "pending"}]}),
        );
        assert_eq!(legacy[0]["plan"]["type"], "items");
        assert_eq!(legacy[0]["plan"]["planId"], LEGACY_PLAN_ID);
        let markdown = translated(
            &mut t,
            json!({"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p", "content": "# Plan"}}),
        );
        assert_eq!(
            markdown[0]["plan"],
            json!({"type": "items", "planId": "p", "entries": [{"content": "# Plan", "priority": "high", "status": "pending"}]})
        );
        let removed = translated(&mut t, json!({"sessionUpdate": "plan_removed", "planId": "p"}));
        assert_eq!(removed[0]["plan"], json!({"type": "items", "planId": "p", "entries": []}));
    }

    #[test]
    fn modes_become_a_config_option_and_mode_updates_config_updates() {
        let mut t = translator();
        let modes: v1::SessionModeState = serde_json::from_value(json!({"currentModeId": "build",
            "availableModes": [{"id": "build", "name": "Build"}, {"id": "plan", "name": "Plan"}]}))
        .unwrap();
        let options: Vec<v1::SessionConfigOption> = serde_json::from_value(json!([{"id": "model",
            "name": "Model", "category": "model", "type": "select", "currentValue": "m1",
            "options": [{"value": "m1", "name": "M1"}]}]))
        .unwrap();
        t.set_config(Some(modes), Some(options));
        let update = translated(
            &mut t,
            json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"}),
        );
        let list = &update[0]["configOptions"];
        assert_eq!(update[0]["sessionUpdate"], "config_option_update");
        assert_eq!(list[0]["configId"], "mode");
        assert_eq!(list[0]["category"], "mode");
        assert_eq!(list[0]["currentValue"], "plan");
        assert_eq!(list[1]["configId"], "model");
        assert!(t.is_mode_option("mode") && !t.is_mode_option("model"));
    }

    #[test]
    fn commands_are_tagged_and_replay_complete_is_its_own_kind() {
        let mut t = translator();
        let commands = translated(
            &mut t,
            json!({"sessionUpdate": "available_commands_update", "availableCommands": [
                {"name": "init", "description": "Init", "input": {"hint": "args"}}]}),
        );
        assert_eq!(
            commands[0]["availableCommands"][0],
            json!({"type": "command", "name": "init", "description": "Init", "input": {"type": "text", "hint": "args"}})
        );
        assert_eq!(to_value(&replay_complete()), json!({"sessionUpdate": "replay_complete"}));
    }
}
