//! Modes, config options and the session metadata the client is told about, with the same ids,
//! names and shapes as the ZCode 3.12 generation (`mappers/zcode-host-3-12/src/generation.rs`):
//! options `zcode.model`, `zcode.thought_level` and the boolean `zcode.plan`; modes `build`,
//! `edit`, `yolo`, plus `guarded` (ZCode 3.15.1 `switchCollaborationMode`), plus `plan` while the
//! independent plan flag is on.
//!
//! Where the values come from: the V4 snapshot's `config` (`provider`, `model`, `thought`,
//! `thoughtLevels`, `mode`, `planEnabled`) once subscribed; before that, the session snapshot
//! `createSession` / `resumeSession` return. The models to choose from are that snapshot's
//! `settings.model.available` (ids, labels and reasoning levels, no credentials: ZCode 3.15.1
//! builds its own model picker from it, `packages/shared/src/zcode-agent-model-state.ts`).
//! `model-selection.getView` is never called: it returns provider API keys and headers with
//! its list (V4S §3.2), and a secret never enters a mapper.

use serde_json::{Value, json};
use zcode_contract::MapperError;

use crate::acp::plan::todo_update;
use crate::acp::text;
use crate::state::{Config, Conversation};
use zcode_mapper_sdk::acp::update::{self, LastSent};
use zcode_mapper_sdk::json::protocol;

pub const MODEL_OPTION: &str = "zcode.model";
pub const THOUGHT_LEVEL_OPTION: &str = "zcode.thought_level";
pub const PLAN_OPTION: &str = "zcode.plan";
pub const UNSET_MODEL: &str = "none";
pub const PLAN_MODE: &str = "plan";

/// The editing modes: (id, name, description).
pub const EDITING_MODES: [(&str, &str, &str); 4] = [
    ("build", "Ask before changes", "Ask before each file changes."),
    (
        "edit",
        "Edit automatically",
        "Edit selected files or relevant workspace files automatically.",
    ),
    ("yolo", "Full access", "Edit and run commands with fewer confirmations."),
    (
        "guarded",
        "Guarded",
        "Ask before risky actions; a permission that cannot be answered fails the tool instead of denying it.",
    ),
];
const PLAN_DESCRIPTION: &str =
    "Inspect the code and present a plan before editing; the editing mode stays for afterwards.";

pub fn is_editing_mode(mode: &str) -> bool {
    EDITING_MODES.iter().any(|(id, _, _)| *id == mode)
}

/// The ACP value of a model: JSON text of `[providerId, modelId]`.
pub fn model_value(provider: &str, model: &str) -> String {
    text(&json!([provider, model]))
}

/// A model the session snapshot offers (`ZCodeModelOption`): its ref, labels and reasoning
/// levels (the last is the default when the snapshot names none, as ZCode's own projection).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelChoice {
    pub provider: String,
    pub model: String,
    pub label: String,
    pub provider_label: Option<String>,
    pub levels: Vec<(String, String)>,
    pub default_level: Option<String>,
}

impl ModelChoice {
    /// The thought level to switch to with this model: the current one if it offers it, else
    /// its default.
    pub fn thought_for(&self, current: &str) -> String {
        if self.levels.iter().any(|(level, _)| level == current) {
            return current.to_string();
        }
        self.default_level
            .clone()
            .filter(|default| self.levels.iter().any(|(level, _)| level == default))
            .or_else(|| self.levels.last().map(|(level, _)| level.clone()))
            .unwrap_or_default()
    }
}

#[derive(Default)]
pub struct Settings {
    pub config: Option<Config>,
    /// The models to choose from, from the session snapshot.
    pub models: Vec<ModelChoice>,
    /// Labels of thought levels (`value → label`), from the session snapshot.
    pub thought_labels: Vec<(String, String)>,
    /// ACP `availableCommands` entries.
    pub commands: Vec<Value>,
    last_sent: LastSent,
    todos_shown: bool,
    /// The revision at which ZCode accepted the last settings change. ZCode's state frames and
    /// its command answers travel apart, so a frame published before the change can arrive
    /// after the answer: its config is older than the one the answer set (F-38).
    decided_at: Option<u64>,
}

impl Settings {
    fn plan_on(config: &Config) -> bool {
        config.plan_enabled == Some(true) || config.mode == PLAN_MODE
    }

    /// The ACP mode: `plan` while planning, else the editing mode, which must be one this
    /// mapper publishes.
    pub fn current_mode(&self) -> Result<String, MapperError> {
        let Some(config) = &self.config else {
            return Ok("build".to_string());
        };
        if Self::plan_on(config) {
            return Ok(PLAN_MODE.to_string());
        }
        if !is_editing_mode(&config.mode) {
            return Err(protocol(format!(
                "ZCode returned a mode outside the published catalog: {}",
                config.mode
            )));
        }
        Ok(config.mode.clone())
    }

    /// The editing mode to keep when planning ends.
    pub fn editing_mode(&self) -> String {
        match &self.config {
            Some(config) if is_editing_mode(&config.mode) => config.mode.clone(),
            _ => "build".to_string(),
        }
    }

    pub fn plan_enabled(&self) -> bool {
        self.config.as_ref().is_some_and(Self::plan_on)
    }

    pub fn mode_state(&self) -> Result<Value, MapperError> {
        let mut modes: Vec<Value> = EDITING_MODES
            .iter()
            .map(|(id, name, description)| json!({"id": id, "name": name, "description": description}))
            .collect();
        modes.push(json!({"id": PLAN_MODE, "name": "Plan mode", "description": PLAN_DESCRIPTION}));
        Ok(json!({"currentModeId": self.current_mode()?, "availableModes": modes}))
    }

    pub fn config_options(&self) -> Value {
        let default = Config::default();
        let config = self.config.as_ref().unwrap_or(&default);
        let mut options = Vec::new();
        if config.provider.is_empty() || config.model.is_empty() {
            options.push(json!({
                "id": MODEL_OPTION, "name": "Model", "category": "model", "type": "select",
                "currentValue": UNSET_MODEL, "options": [{"value": UNSET_MODEL, "name": "No model selected"}],
            }));
        } else {
            let value = model_value(&config.provider, &config.model);
            let choice = |provider: &str, model: &str, name: &str, description: &str| json!({"value": model_value(provider, model), "name": name, "description": description});
            let mut choices: Vec<Value> = Vec::new();
            // The current model first when the catalogue does not list it (it may have left
            // the registry): what ZCode runs is always shown.
            if !self.models.iter().any(|m| m.provider == config.provider && m.model == config.model)
            {
                choices.push(choice(
                    &config.provider,
                    &config.model,
                    &config.model,
                    &config.provider,
                ));
            }
            for m in &self.models {
                let description = m.provider_label.as_deref().unwrap_or(&m.provider);
                choices.push(choice(&m.provider, &m.model, &m.label, description));
            }
            options.push(json!({
                "id": MODEL_OPTION, "name": "Model", "category": "model", "type": "select", "currentValue": value,
                "options": choices,
            }));
        }
        if !config.thought_levels.is_empty() {
            let label = |value: &str| {
                self.thought_labels
                    .iter()
                    .find(|(level, _)| level == value)
                    .map_or_else(|| value.to_string(), |(_, label)| label.clone())
            };
            let choices: Vec<Value> = config
                .thought_levels
                .iter()
                .map(|level| json!({"value": level, "name": label(level)}))
                .collect();
            let current = if config.thought_levels.contains(&config.thought) {
                config.thought.clone()
            } else {
                config.thought_levels.last().cloned().unwrap_or_default()
            };
            options.push(json!({
                "id": THOUGHT_LEVEL_OPTION, "name": "Thought level", "category": "thought_level", "type": "select",
                "currentValue": current, "options": choices,
            }));
        }
        options.push(json!({
            "id": PLAN_OPTION, "name": "Plan", "description": "Plan before editing, whatever the editing mode",
            "type": "boolean", "currentValue": Self::plan_on(config),
        }));
        Value::Array(options)
    }

    /// The session metadata updates, in protocol order, that differ from the last ones sent:
    /// commands, config options, mode, session info, context usage, todos.
    pub fn metadata(
        &mut self,
        conversation: Option<&Conversation>,
        plan_operations: bool,
    ) -> Result<Vec<String>, MapperError> {
        let commands: Vec<update::Command<'_>> = self
            .commands
            .iter()
            .map(|command| update::Command {
                name: command["name"].as_str().unwrap_or_default(),
                description: command["description"].as_str().unwrap_or_default(),
                input_hint: command.pointer("/input/hint").and_then(Value::as_str),
            })
            .collect();
        let mut updates = vec![
            update::available_commands(&commands),
            update::config_options(&self.config_options()),
            update::current_mode(&self.current_mode()?),
        ];
        if let Some(conversation) = conversation {
            if !conversation.title.is_empty() {
                updates.extend(update::session_info(Some(&conversation.title), None));
            }
            if let Some((used, size)) = conversation.usage.context.filter(|(_, size)| *size > 0) {
                updates.push(update::usage(used, size, None));
            }
            if let Some(todos) = todo_update(
                conversation.plan.as_deref().unwrap_or_default(),
                &mut self.todos_shown,
                plan_operations,
            ) {
                updates.push(todos);
            }
        }
        // The todo list and plan proposals share `plan_update`; only the todo list is deduped
        // here.
        Ok(self.last_sent.filter(updates))
    }

    /// ZCode accepted a settings change at `revision` (its `revisionAtDecision`): until a state
    /// newer than that arrives, the config the change set stands.
    pub fn decided(&mut self, revision: u64) {
        self.decided_at = Some(revision);
    }

    /// Takes ZCode's config from its state at `revision`, unless that state predates a change
    /// ZCode has already accepted.
    pub fn adopt(&mut self, config: &Config, revision: u64) {
        if self.decided_at.is_some_and(|decided| revision <= decided) {
            return;
        }
        self.decided_at = None;
        self.config = Some(config.clone());
    }

    /// Records updates sent outside [`Settings::metadata`] (answers to the client's requests).
    pub fn remember(&mut self, updates: &[String]) {
        self.last_sent.remember(updates);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(mode: &str, plan: Option<bool>) -> Config {
        Config {
            provider: "p".into(),
            model: "m".into(),
            thought: "high".into(),
            thought_levels: vec!["low".into(), "high".into()],
            mode: mode.into(),
            plan_enabled: plan,
        }
    }

    #[test]
    fn publishes_the_3_12_options_and_modes() {
        let mut settings =
            Settings { config: Some(config("edit", Some(false))), ..Settings::default() };
        settings.thought_labels = vec![("high".into(), "High".into())];
        let options = settings.config_options();
        assert_eq!(options[0]["id"], "zcode.model");
        assert_eq!(options[0]["currentValue"], "[\"p\",\"m\"]");
        assert_eq!(
            options[1]["options"],
            json!([{"value": "low", "name": "low"}, {"value": "high", "name": "High"}])
        );
        assert_eq!(
            options[2],
            json!({"id": "zcode.plan", "name": "Plan", "description": "Plan before editing, whatever the editing mode", "type": "boolean", "currentValue": false})
        );
        let modes = settings.mode_state().unwrap();
        assert_eq!(modes["currentModeId"], "edit");
        let ids: Vec<_> = modes["availableModes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["build", "edit", "yolo", "guarded", "plan"]);
        settings.config = Some(config("edit", Some(true)));
        assert_eq!(settings.current_mode().unwrap(), "plan");
        assert_eq!(settings.editing_mode(), "edit");
        settings.config = Some(config("auto", None));
        assert_eq!(
            settings.current_mode().unwrap_err().message,
            "ZCode returned a mode outside the published catalog: auto"
        );
        settings.config = Some(Config::default());
        assert_eq!(settings.config_options()[0]["currentValue"], "none");
    }

    #[test]
    fn sends_only_changed_metadata() {
        let mut settings = Settings { config: Some(config("build", None)), ..Settings::default() };
        assert_eq!(settings.metadata(None, true).unwrap().len(), 3);
        assert!(settings.metadata(None, true).unwrap().is_empty());
        settings.config = Some(config("yolo", None));
        let changed = settings.metadata(None, true).unwrap();
        assert_eq!(changed.len(), 1);
        assert!(changed[0].contains("current_mode_update"));
    }
}
