//! Session snapshots: their validation (with the rules of a generation), and the session
//! metadata updates built from them (§5.5 of the 3.11 protocol notes). What differs between
//! generations — the mode catalog, the shape of model refs, the config options — comes from the
//! generation through [`SnapshotRules`] and [`Publisher`].

use serde::Deserialize;
use serde_json::{Map, Value, json};
use zcode_mapper_sdk::contract::MapperError;

use zcode_mapper_sdk::acp::plan::Todos;
use zcode_mapper_sdk::acp::update::{self, Command, EntryStatus, LastSent, PlanEntry, Priority};
use zcode_mapper_sdk::json::protocol;
use zcode_mapper_sdk::time::iso8601_from_epoch_ms;

/// What a generation accepts in a snapshot besides the shared shape.
#[derive(Clone, Copy, Debug)]
pub struct SnapshotRules {
    /// Ids `settings.mode.current` may hold.
    pub modes: &'static [&'static str],
    /// Checks one model ref (the current model and each listed one).
    pub model_ref: fn(&Map<String, Value>) -> Result<(), String>,
    /// Whether a snapshot must name a current model.
    pub current_model_required: bool,
}

/// What a generation publishes from a snapshot: its ACP config options and the ACP mode the
/// client sees.
pub trait Publisher {
    /// ACP config options for `snapshot`; they become the choices `set_config_option` accepts.
    fn publish_config_options(&mut self, snapshot: &Snapshot) -> Value;
    /// The ACP mode id for `snapshot`.
    fn current_mode(&self, snapshot: &Snapshot) -> String;
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
    /// Model refs stay raw objects: `setModel` must get back exactly what was advertised. A
    /// generation's [`SnapshotRules`] say whether the current model may be absent.
    #[serde(default)]
    pub current: Option<Map<String, Value>>,
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
    /// Whole where a session is opened (history replays from them); only `{"type": ...}`
    /// after the turn's final read (`final_read`), the part the cache reads.
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
    pub fn parse(value: &Value, source: &str, rules: &SnapshotRules) -> Result<Self, MapperError> {
        let snapshot = Snapshot::deserialize(value)
            .map_err(|e| protocol(format!("Native result validation failed: {source}: {e}")))?;
        snapshot.validate(rules).map_err(|problem| {
            if problem.starts_with("ZCode returned a mode") {
                protocol(problem)
            } else {
                protocol(format!("Native result validation failed: {source}: {problem}"))
            }
        })?;
        Ok(snapshot)
    }

    fn validate(&self, rules: &SnapshotRules) -> Result<(), String> {
        if self.session.session_id.is_empty() {
            return Err("session.sessionId is empty".to_string());
        }
        if !rules.modes.contains(&self.settings.mode.current.as_str()) {
            return Err(format!(
                "ZCode returned a mode outside the published catalog: {}",
                self.settings.mode.current
            ));
        }
        match &self.settings.model.current {
            Some(current) => (rules.model_ref)(current)?,
            None if rules.current_model_required => return Err("missing field `current`".into()),
            None => {}
        }
        for choice in &self.settings.model.available {
            (rules.model_ref)(&choice.model_ref)?;
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

// ----- what the client was told ---------------------------------------------------------------

/// The cached snapshot and what has been shown to the client from it.
#[derive(Default)]
pub struct Settings {
    snapshot: Option<Snapshot>,
    /// The todo list as the client sees it.
    todos: Todos,
    /// The last metadata update of each kind sent to the client: snapshots repeat most of
    /// their content, and the client only needs to hear what changed.
    last_sent: LastSent,
}

impl Settings {
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    pub fn replace(&mut self, snapshot: Snapshot) {
        self.snapshot = Some(snapshot);
    }

    /// The generation's config options for the cached snapshot (`[]` before there is one).
    pub fn config_options(&self, publisher: &mut dyn Publisher) -> Value {
        match &self.snapshot {
            Some(snapshot) => publisher.publish_config_options(snapshot),
            None => json!([]),
        }
    }

    /// The session metadata updates for the cached snapshot, in protocol order: commands,
    /// config options, mode, session info, context usage, todos.
    pub fn metadata_updates(
        &mut self,
        plan_operations: bool,
        publisher: &mut dyn Publisher,
    ) -> Vec<String> {
        let Some(snapshot) = self.snapshot.clone() else {
            return Vec::new();
        };
        let commands: Vec<Command<'_>> = snapshot
            .slash_commands
            .iter()
            .map(|command| Command {
                name: &command.name,
                description: &command.description,
                input_hint: command.input_hint.as_deref(),
            })
            .collect();
        let mut updates = vec![
            update::available_commands(&commands),
            update::config_options(&publisher.publish_config_options(&snapshot)),
            update::current_mode(&publisher.current_mode(&snapshot)),
        ];
        let session = &snapshot.session;
        updates.extend(session_info_update(session.title.as_deref(), session.updated_at));
        if let Some(usage) = &snapshot.runtime.context_usage {
            let cost = usage
                .cost
                .as_ref()
                .map(|c| update::Cost { amount: c.amount, currency: &c.currency });
            updates.push(update::usage(usage.used, usage.size, cost));
        }
        let todos: Vec<PlanEntry<'_>> = snapshot.todos.iter().flatten().map(Todo::entry).collect();
        updates.extend(self.todos.update(&todos, plan_operations));
        self.last_sent.filter(updates)
    }

    /// Records metadata updates sent outside [`Settings::metadata_updates`] (answers to the
    /// client's own requests), so that the next metadata does not repeat them.
    pub fn remember_sent(&mut self, updates: &[String]) {
        self.last_sent.remember(updates);
    }
}

/// ACP `session_info_update`, or nothing when there is neither a title nor a time.
pub fn session_info_update(title: Option<&str>, updated_at_ms: Option<f64>) -> Option<String> {
    let updated_at = updated_at_ms.and_then(iso8601_from_epoch_ms);
    update::session_info(title, updated_at.as_deref())
}

impl Todo {
    /// The todo as an ACP plan entry.
    fn entry(&self) -> PlanEntry<'_> {
        let status = match self.status {
            TodoStatus::Pending => EntryStatus::Pending,
            TodoStatus::InProgress => EntryStatus::InProgress,
            TodoStatus::Completed => EntryStatus::Completed,
        };
        let priority = match self.priority {
            TodoPriority::High => Priority::High,
            TodoPriority::Medium => Priority::Medium,
            TodoPriority::Low => Priority::Low,
        };
        PlanEntry { content: &self.content, priority, status }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::session::Generation;
    use crate::test_support::{Plain, snapshot_json};

    fn parse(value: &Value, source: &str) -> Snapshot {
        Snapshot::parse(value, source, Plain.snapshot_rules()).unwrap()
    }

    /// The snapshot cache with a generation's publisher, as a session holds them.
    #[derive(Default)]
    struct Cached {
        cache: Settings,
        generation: Plain,
    }

    impl Cached {
        fn replace(&mut self, snapshot: Snapshot) {
            self.cache.replace(snapshot);
        }

        fn metadata_updates(&mut self, plan_operations: bool) -> Vec<String> {
            self.cache.metadata_updates(plan_operations, &mut self.generation)
        }
    }

    fn settings_with(snapshot: Value) -> Cached {
        let mut settings = Cached::default();
        settings.replace(parse(&snapshot, "createSession"));
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
            zcode_mapper_sdk::acp_check::session_update(update);
        }
    }

    #[test]
    fn clears_todos_only_after_showing_them() {
        let mut empty = snapshot_json();
        empty["todos"] = json!([]);
        let mut settings = settings_with(empty.clone());
        assert!(!settings.metadata_updates(true).iter().any(|u| u.contains("zcode-todos")));
        settings.replace(parse(&snapshot_json(), "snapshot event"));
        assert!(settings.metadata_updates(true).last().unwrap().contains("plan_update"));
        settings.replace(parse(&empty, "snapshot event"));
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
        settings.replace(parse(&empty, "snapshot event"));
        let last: Value =
            serde_json::from_str(settings.metadata_updates(false).last().unwrap()).unwrap();
        assert_eq!(last, json!({"sessionUpdate": "plan", "entries": []}));
        zcode_mapper_sdk::acp_check::session_update(&last);
    }
}
