//! Session snapshots: their validation, the mode catalog, config options (model, thought
//! level), and the session metadata updates built from them (§5.5 of the protocol notes).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use zcode_contract::MapperError;

use crate::json::{Fields, invalid_params, protocol, text};
use crate::text::iso8601_from_epoch_ms;

pub const MODEL_OPTION: &str = "zcode.model";
pub const THOUGHT_LEVEL_OPTION: &str = "zcode.thought_level";
const TODOS_PLAN_ID: &str = "zcode-todos";

/// The fixed ZCode mode catalog: (id, name, description). Ids pass through unchanged.
pub const MODES: [(&str, &str, &str); 4] = [
    ("build", "Ask before changes", "Ask before each file changes."),
    (
        "edit",
        "Edit automatically",
        "Edit selected files or relevant workspace files automatically.",
    ),
    ("plan", "Plan mode", "Inspect the code and present a plan before editing."),
    ("yolo", "Full access", "Edit and run commands with fewer confirmations."),
];

pub fn is_known_mode(mode: &str) -> bool {
    MODES.iter().any(|(id, _, _)| *id == mode)
}

/// ACP `SessionModeState` for the current mode.
pub fn mode_state(current: &str) -> Value {
    let modes: Vec<Value> = MODES
        .iter()
        .map(|(id, name, description)| json!({"id": id, "name": name, "description": description}))
        .collect();
    json!({"currentModeId": current, "availableModes": modes})
}

// ----- the snapshot --------------------------------------------------------------------------

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub session: SnapshotSession,
    pub settings: SessionSettings,
    pub messages: Vec<Message>,
    pub runtime: Runtime,
    #[serde(default)]
    pub todos: Option<Vec<Todo>>,
    pub slash_commands: Vec<SlashCommand>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotSession {
    pub session_id: String,
    /// Required by the host schema; its value means nothing to ACP.
    #[allow(dead_code)]
    pub status: String,
    pub workspace: SnapshotWorkspace,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub updated_at: Option<f64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotWorkspace {
    pub workspace_path: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSettings {
    pub model: ModelSettings,
    pub thought_level: ThoughtLevelSettings,
    pub mode: ModeSettings,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ModelSettings {
    /// Model refs stay raw objects: `setModel` must get back exactly what was advertised.
    pub current: Map<String, Value>,
    pub available: Vec<ModelChoice>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelChoice {
    #[serde(rename = "ref")]
    pub model_ref: Map<String, Value>,
    #[serde(default)]
    pub provider_label: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ThoughtLevelSettings {
    pub enabled: bool,
    #[serde(default)]
    pub current: Option<String>,
    pub available: Vec<ThoughtLevelChoice>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ThoughtLevelChoice {
    pub value: String,
    pub label: String,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ModeSettings {
    pub current: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub info: MessageInfo,
    pub parts: Vec<Value>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageInfo {
    #[serde(default)]
    pub message_id: Option<String>,
    pub role: Role,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Runtime {
    #[serde(default)]
    pub context_usage: Option<ContextUsage>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ContextUsage {
    pub used: u64,
    pub size: u64,
    #[serde(default)]
    pub cost: Option<Cost>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Cost {
    pub amount: f64,
    pub currency: String,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Todo {
    pub content: String,
    pub status: TodoStatus,
    pub priority: TodoPriority,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TodoPriority {
    High,
    Medium,
    Low,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlashCommand {
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub input_hint: Option<String>,
}

impl Snapshot {
    /// Parses and validates a snapshot from `source` (a method name or `snapshot event`).
    pub fn parse(value: &Value, source: &str) -> Result<Self, MapperError> {
        let snapshot = Snapshot::deserialize(value)
            .map_err(|e| protocol(format!("Native result validation failed: {source}: {e}")))?;
        snapshot.validate().map_err(|problem| {
            if problem.starts_with("ZCode returned a mode") {
                protocol(problem)
            } else {
                protocol(format!("Native result validation failed: {source}: {problem}"))
            }
        })?;
        Ok(snapshot)
    }

    fn validate(&self) -> Result<(), String> {
        if self.session.session_id.is_empty() {
            return Err("session.sessionId is empty".to_string());
        }
        if !is_known_mode(&self.settings.mode.current) {
            return Err(format!(
                "ZCode returned a mode outside the published catalog: {}",
                self.settings.mode.current
            ));
        }
        model_value(&self.settings.model.current)?;
        for choice in &self.settings.model.available {
            model_value(&choice.model_ref)?;
        }
        if let Some(usage) = &self.runtime.context_usage {
            if usage.size == 0 {
                return Err("runtime.contextUsage.size must be positive".to_string());
            }
            if let Some(cost) = &usage.cost
                && (cost.amount < 0.0 || cost.currency.is_empty())
            {
                return Err("runtime.contextUsage.cost is invalid".to_string());
            }
        }
        if self.slash_commands.iter().any(|command| command.name.is_empty()) {
            return Err("a slash command has an empty name".to_string());
        }
        for message in &self.messages {
            for part in &message.parts {
                let part_type = part.get("type").and_then(Value::as_str).unwrap_or("");
                if part_type.is_empty() {
                    return Err("a message part has no type".to_string());
                }
            }
        }
        Ok(())
    }

    pub fn mode(&self) -> &str {
        &self.settings.mode.current
    }

    pub fn workspace(&self) -> &str {
        &self.session.workspace.workspace_path
    }
}

/// The ACP value of a model ref: JSON text of `[providerId, modelId, variant or null]`.
fn model_value(model_ref: &Map<String, Value>) -> Result<String, String> {
    let fields = Value::Object(model_ref.clone());
    let read = Fields::native(&fields, "model ref").map_err(|e| e.message)?;
    let provider = read.non_empty_str("providerId").map_err(|e| e.message)?;
    let model = read.non_empty_str("modelId").map_err(|e| e.message)?;
    let variant = read.opt_str("variant").map_err(|e| e.message)?;
    Ok(text(&json!([provider, model, variant])))
}

fn model_id(model_ref: &Map<String, Value>) -> &str {
    model_ref.get("modelId").and_then(Value::as_str).unwrap_or_default()
}

// ----- what the client was told ---------------------------------------------------------------

/// The cached snapshot and what has been advertised to the client from it.
#[derive(Default)]
pub struct Settings {
    snapshot: Option<Snapshot>,
    /// Model values last advertised, with the refs they stand for.
    advertised_models: Vec<(String, Map<String, Value>)>,
    /// Thought levels last advertised.
    advertised_thought_levels: Vec<String>,
    /// A todo list is currently shown, so an empty one must clear it.
    todos_shown: bool,
    /// The last metadata update of each kind sent to the client: snapshots repeat most of
    /// their content, and the client only needs to hear what changed.
    last_sent: BTreeMap<String, String>,
}

impl Settings {
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    pub fn replace(&mut self, snapshot: Snapshot) {
        self.snapshot = Some(snapshot);
    }

    pub fn mode_state(&self) -> Value {
        mode_state(self.snapshot.as_ref().map_or("build", Snapshot::mode))
    }

    /// ACP config options from the cached snapshot; they become the advertised choices.
    pub fn publish_config_options(&mut self) -> Value {
        let Some(snapshot) = &self.snapshot else {
            return json!([]);
        };
        let settings = &snapshot.settings;
        let mut models: Vec<(String, Map<String, Value>, Value)> = Vec::new();
        for choice in &settings.model.available {
            let value = model_value(&choice.model_ref).unwrap_or_default();
            let mut option = json!({"value": value, "name": model_id(&choice.model_ref)});
            if let Some(provider) = &choice.provider_label {
                option["description"] = json!(provider);
            }
            models.push((value, choice.model_ref.clone(), option));
        }
        let current_model = model_value(&settings.model.current).unwrap_or_default();
        // The current model is always selectable, even if the catalog no longer lists it.
        if !models.iter().any(|(value, _, _)| *value == current_model) {
            let option = json!({"value": current_model, "name": model_id(&settings.model.current)});
            models.push((current_model.clone(), settings.model.current.clone(), option));
        }
        let mut options = vec![json!({
            "id": MODEL_OPTION,
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": current_model,
            "options": models.iter().map(|(_, _, option)| option.clone()).collect::<Vec<_>>(),
        })];
        self.advertised_models =
            models.into_iter().map(|(value, model_ref, _)| (value, model_ref)).collect();

        let thought = &settings.thought_level;
        self.advertised_thought_levels.clear();
        if let Some(current) =
            thought.current.as_ref().filter(|_| thought.enabled && !thought.available.is_empty())
        {
            let choices: Vec<Value> = thought
                .available
                .iter()
                .map(|c| json!({"value": c.value, "name": c.label}))
                .collect();
            options.push(json!({
                "id": THOUGHT_LEVEL_OPTION,
                "name": "Thought level",
                "category": "thought_level",
                "type": "select",
                "currentValue": current,
                "options": choices,
            }));
            self.advertised_thought_levels =
                thought.available.iter().map(|c| c.value.clone()).collect();
        }
        Value::Array(options)
    }

    /// The model ref behind an advertised value.
    pub fn advertised_model(&self, value: &str) -> Result<&Map<String, Value>, MapperError> {
        self.advertised_models
            .iter()
            .find(|(advertised, _)| advertised == value)
            .map(|(_, model_ref)| model_ref)
            .ok_or_else(|| invalid_params(format!("Unknown ZCode model: {value}")))
    }

    pub fn check_advertised_thought_level(&self, value: &str) -> Result<(), MapperError> {
        if self.advertised_thought_levels.iter().any(|level| level == value) {
            Ok(())
        } else {
            Err(invalid_params(format!("Unknown thought level: {value}")))
        }
    }

    /// The session metadata updates for the cached snapshot, in protocol order: commands,
    /// config options, mode, session info, context usage, todos.
    pub fn metadata_updates(&mut self, plan_operations: bool) -> Vec<String> {
        let Some(snapshot) = self.snapshot.clone() else {
            return Vec::new();
        };
        let mut updates = Vec::new();
        let commands: Vec<Value> = snapshot
            .slash_commands
            .iter()
            .map(|command| {
                let mut entry = json!({"name": command.name, "description": command.description});
                if let Some(hint) = &command.input_hint {
                    entry["input"] = json!({"hint": hint});
                }
                entry
            })
            .collect();
        updates.push(
            json!({"sessionUpdate": "available_commands_update", "availableCommands": commands}),
        );
        let config_options = self.publish_config_options();
        updates.push(
            json!({"sessionUpdate": "config_option_update", "configOptions": config_options}),
        );
        updates.push(
            json!({"sessionUpdate": "current_mode_update", "currentModeId": snapshot.mode()}),
        );
        if let Some(info) =
            session_info_update(snapshot.session.title.as_deref(), snapshot.session.updated_at)
        {
            updates.push(info);
        }
        if let Some(usage) = &snapshot.runtime.context_usage {
            let mut update =
                json!({"sessionUpdate": "usage_update", "used": usage.used, "size": usage.size});
            if let Some(cost) = &usage.cost {
                update["cost"] = json!({"amount": cost.amount, "currency": cost.currency});
            }
            updates.push(update);
        }
        updates.extend(
            self.todo_update(snapshot.todos.as_deref().unwrap_or_default(), plan_operations),
        );
        updates.iter().map(text).filter(|update| self.changed(update)).collect()
    }

    /// Records `update` as sent, unless it repeats the last update of its kind.
    fn changed(&mut self, update: &String) -> bool {
        let kind = serde_json::from_str::<Value>(update)
            .ok()
            .and_then(|v| v.get("sessionUpdate").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        self.last_sent.insert(kind, update.clone()).as_ref() != Some(update)
    }

    fn todo_update(&mut self, todos: &[Todo], plan_operations: bool) -> Option<Value> {
        let entries: Vec<Value> = todos
            .iter()
            .map(|todo| json!({"content": todo.content, "status": todo.status.name(), "priority": todo.priority.name()}))
            .collect();
        let update = match (entries.is_empty(), plan_operations) {
            (true, _) if !self.todos_shown => return None,
            (true, true) => json!({"sessionUpdate": "plan_removed", "planId": TODOS_PLAN_ID}),
            (false, true) => json!({
                "sessionUpdate": "plan_update",
                "plan": {"type": "items", "planId": TODOS_PLAN_ID, "entries": entries},
            }),
            (_, false) => json!({"sessionUpdate": "plan", "entries": entries}),
        };
        self.todos_shown = !entries.is_empty();
        Some(update)
    }
}

/// ACP `session_info_update`, or nothing when there is neither a title nor a time.
pub fn session_info_update(title: Option<&str>, updated_at_ms: Option<f64>) -> Option<Value> {
    let updated_at = updated_at_ms.and_then(iso8601_from_epoch_ms);
    if title.is_none() && updated_at.is_none() {
        return None;
    }
    let mut update = json!({"sessionUpdate": "session_info_update"});
    if let Some(title) = title {
        update["title"] = json!(title);
    }
    if let Some(updated_at) = updated_at {
        update["updatedAt"] = json!(updated_at);
    }
    Some(update)
}

impl TodoStatus {
    fn name(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
        }
    }
}

impl TodoPriority {
    fn name(self) -> &'static str {
        match self {
            TodoPriority::High => "high",
            TodoPriority::Medium => "medium",
            TodoPriority::Low => "low",
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn snapshot_json() -> Value {
        json!({
            "session": {"sessionId": "session-1", "status": "idle", "workspace": {"workspacePath": "/w"}, "title": "Fix it", "updatedAt": 1_757_000_000_000_u64},
            "settings": {
                "model": {
                    "current": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-5.2"},
                    "available": [
                        {"ref": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-5.2"}, "label": "GLM-5.2", "providerLabel": "Z.ai - Coding Plan"},
                        {"ref": {"providerId": "builtin:zai-coding-plan", "modelId": "GLM-4.6", "variant": "fast"}, "label": "GLM-4.6"}
                    ]
                },
                "thoughtLevel": {"enabled": true, "current": "low", "available": [{"value": "low", "label": "Low"}, {"value": "high", "label": "High"}]},
                "mode": {"current": "build"}
            },
            "messages": [],
            "runtime": {"contextUsage": {"used": 1200, "size": 200_000, "cost": {"amount": 0.01, "currency": "USD"}}},
            "todos": [{"content": "First", "status": "pending", "priority": "high"}],
            "slashCommands": [{"name": "init", "description": "Create AGENTS.md", "inputHint": "path"}, {"name": "review", "description": "Review"}]
        })
    }

    fn settings_with(snapshot: Value) -> Settings {
        let mut settings = Settings::default();
        settings.replace(Snapshot::parse(&snapshot, "createSession").unwrap());
        settings
    }

    fn parsed(updates: &[String]) -> Vec<Value> {
        updates.iter().map(|u| serde_json::from_str(u).unwrap()).collect()
    }

    #[test]
    fn emits_metadata_in_protocol_order() {
        let mut settings = settings_with(snapshot_json());
        let updates = parsed(&settings.metadata_updates(true));
        let kinds: Vec<&str> =
            updates.iter().map(|u| u["sessionUpdate"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "available_commands_update",
                "config_option_update",
                "current_mode_update",
                "session_info_update",
                "usage_update",
                "plan_update"
            ]
        );
        assert_eq!(
            updates[0]["availableCommands"],
            json!([
                {"name": "init", "description": "Create AGENTS.md", "input": {"hint": "path"}},
                {"name": "review", "description": "Review"}
            ])
        );
        assert_eq!(
            updates[3],
            json!({"sessionUpdate": "session_info_update", "title": "Fix it", "updatedAt": "2025-09-04T15:33:20.000Z"})
        );
        assert_eq!(
            updates[4],
            json!({"sessionUpdate": "usage_update", "used": 1200, "size": 200_000, "cost": {"amount": 0.01, "currency": "USD"}})
        );
        assert_eq!(
            updates[5],
            json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "zcode-todos", "entries": [{"content": "First", "status": "pending", "priority": "high"}]}})
        );
        for update in &updates {
            crate::acp_check::session_update(update);
        }
    }

    #[test]
    fn encodes_models_and_thought_levels_as_config_options() {
        let mut settings = settings_with(snapshot_json());
        let options = settings.publish_config_options();
        assert_eq!(
            options[0],
            json!({
                "id": "zcode.model", "name": "Model", "category": "model", "type": "select",
                "currentValue": "[\"builtin:zai-coding-plan\",\"GLM-5.2\",null]",
                "options": [
                    {"value": "[\"builtin:zai-coding-plan\",\"GLM-5.2\",null]", "name": "GLM-5.2", "description": "Z.ai - Coding Plan"},
                    {"value": "[\"builtin:zai-coding-plan\",\"GLM-4.6\",\"fast\"]", "name": "GLM-4.6"}
                ]
            })
        );
        assert_eq!(
            options[1],
            json!({
                "id": "zcode.thought_level", "name": "Thought level", "category": "thought_level", "type": "select",
                "currentValue": "low", "options": [{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}]
            })
        );
        assert_eq!(
            settings
                .advertised_model("[\"builtin:zai-coding-plan\",\"GLM-4.6\",\"fast\"]")
                .unwrap()["variant"],
            "fast"
        );
        assert_eq!(settings.advertised_model("x").unwrap_err().message, "Unknown ZCode model: x");
        assert!(settings.check_advertised_thought_level("high").is_ok());
        assert_eq!(
            settings.check_advertised_thought_level("max").unwrap_err().message,
            "Unknown thought level: max"
        );
        crate::acp_check::config_options(&options);
    }

    #[test]
    fn keeps_advertised_choices_until_republished() {
        let mut settings = settings_with(snapshot_json());
        settings.publish_config_options();
        let mut shrunk = snapshot_json();
        shrunk["settings"]["model"]["available"] = json!([]);
        shrunk["settings"]["thoughtLevel"]["enabled"] = json!(false);
        settings.replace(Snapshot::parse(&shrunk, "setMode").unwrap());
        // Not yet published: the earlier choices stay selectable.
        assert!(
            settings.advertised_model("[\"builtin:zai-coding-plan\",\"GLM-4.6\",\"fast\"]").is_ok()
        );
        assert!(settings.check_advertised_thought_level("high").is_ok());
        let options = settings.publish_config_options();
        assert_eq!(options.as_array().unwrap().len(), 1, "thought level hidden when disabled");
        // The current model stays listed even when the catalog omits it.
        assert_eq!(
            options[0]["options"],
            json!([{"value": "[\"builtin:zai-coding-plan\",\"GLM-5.2\",null]", "name": "GLM-5.2"}])
        );
        assert!(
            settings
                .advertised_model("[\"builtin:zai-coding-plan\",\"GLM-4.6\",\"fast\"]")
                .is_err()
        );
        assert!(settings.check_advertised_thought_level("high").is_err());
    }

    #[test]
    fn clears_todos_only_after_showing_them() {
        let mut empty = snapshot_json();
        empty["todos"] = json!([]);
        let mut settings = settings_with(empty.clone());
        assert!(!settings.metadata_updates(true).iter().any(|u| u.contains("zcode-todos")));
        settings.replace(Snapshot::parse(&snapshot_json(), "snapshot event").unwrap());
        assert!(settings.metadata_updates(true).last().unwrap().contains("plan_update"));
        settings.replace(Snapshot::parse(&empty, "snapshot event").unwrap());
        let last: Value =
            serde_json::from_str(settings.metadata_updates(true).last().unwrap()).unwrap();
        assert_eq!(last, json!({"sessionUpdate": "plan_removed", "planId": "zcode-todos"}));
        assert!(!settings.metadata_updates(true).iter().any(|u| u.contains("zcode-todos")));
    }

    #[test]
    fn uses_legacy_plans_without_plan_operations() {
        let mut settings = settings_with(snapshot_json());
        let last: Value =
            serde_json::from_str(settings.metadata_updates(false).last().unwrap()).unwrap();
        assert_eq!(
            last,
            json!({"sessionUpdate": "plan", "entries": [{"content": "First", "status": "pending", "priority": "high"}]})
        );
        let mut empty = snapshot_json();
        empty.as_object_mut().unwrap().remove("todos");
        settings.replace(Snapshot::parse(&empty, "snapshot event").unwrap());
        let last: Value =
            serde_json::from_str(settings.metadata_updates(false).last().unwrap()).unwrap();
        assert_eq!(last, json!({"sessionUpdate": "plan", "entries": []}));
        crate::acp_check::session_update(&last);
    }

    #[test]
    fn rejects_invalid_snapshots() {
        let mut future = snapshot_json();
        future["settings"]["mode"]["current"] = json!("future-mode");
        assert_eq!(
            Snapshot::parse(&future, "setMode").unwrap_err().message,
            "ZCode returned a mode outside the published catalog: future-mode"
        );
        let mut todo = snapshot_json();
        todo["todos"][0]["extra"] = json!(1);
        assert!(
            Snapshot::parse(&todo, "readSession")
                .unwrap_err()
                .message
                .starts_with("Native result validation failed: readSession: unknown field `extra`")
        );
        let mut role = snapshot_json();
        role["messages"] = json!([{"info": {"role": "system"}, "parts": []}]);
        assert!(Snapshot::parse(&role, "resumeSession").is_err());
        let mut size = snapshot_json();
        size["runtime"]["contextUsage"]["size"] = json!(0);
        assert_eq!(
            Snapshot::parse(&size, "readSession").unwrap_err().message,
            "Native result validation failed: readSession: runtime.contextUsage.size must be positive"
        );
        let mut model = snapshot_json();
        model["settings"]["model"]["current"] = json!({"providerId": "p"});
        assert_eq!(
            Snapshot::parse(&model, "setModel").unwrap_err().message,
            "Native result validation failed: setModel: model ref: missing field `modelId`"
        );
        let mut part = snapshot_json();
        part["messages"] = json!([{"info": {"role": "user"}, "parts": [{"text": "x"}]}]);
        assert!(
            Snapshot::parse(&part, "resumeSession")
                .unwrap_err()
                .message
                .ends_with("a message part has no type")
        );
    }

    #[test]
    fn publishes_the_mode_catalog() {
        let state = mode_state("plan");
        assert_eq!(state["currentModeId"], "plan");
        assert_eq!(
            state["availableModes"][3],
            json!({"id": "yolo", "name": "Full access", "description": "Edit and run commands with fewer confirmations."})
        );
        assert!(is_known_mode("edit") && !is_known_mode("auto"));
    }
}
