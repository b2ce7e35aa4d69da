//! The 3.11.2 publisher with the shared snapshot cache: metadata order, model and thought-level
//! options, todo lists and snapshot validation.

use serde_json::{Map, Value, json};
use zcode_contract::MapperError;
use zcode_host_common::acp_check;
use zcode_host_common::settings::Snapshot;

use crate::generation::{SNAPSHOT_RULES, TaskV1, is_known_mode, mode_state};

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

/// The shared snapshot cache with this generation's publisher, as a session holds them.
#[derive(Default)]
struct Settings {
    cache: zcode_host_common::settings::Settings,
    generation: TaskV1,
}

impl Settings {
    fn replace(&mut self, snapshot: Snapshot) {
        self.cache.replace(snapshot);
    }

    fn metadata_updates(&mut self, plan_operations: bool) -> Vec<String> {
        self.cache.metadata_updates(plan_operations, &mut self.generation)
    }

    fn publish_config_options(&mut self) -> Value {
        self.cache.config_options(&mut self.generation)
    }

    fn advertised_model(&self, value: &str) -> Result<&Map<String, Value>, MapperError> {
        self.generation.advertised_model(value)
    }

    fn check_advertised_thought_level(&self, value: &str) -> Result<(), MapperError> {
        self.generation.check_advertised_thought_level(value)
    }
}

/// Snapshots parsed with this generation's rules.
fn parse(value: &Value, source: &str) -> Result<Snapshot, MapperError> {
    Snapshot::parse(value, source, &SNAPSHOT_RULES)
}

fn settings_with(snapshot: Value) -> Settings {
    let mut settings = Settings::default();
    settings.replace(parse(&snapshot, "createSession").unwrap());
    settings
}

fn parsed(updates: &[String]) -> Vec<Value> {
    updates.iter().map(|u| serde_json::from_str(u).unwrap()).collect()
}

#[test]
fn emits_metadata_in_protocol_order() {
    let mut settings = settings_with(snapshot_json());
    let updates = parsed(&settings.metadata_updates(true));
    let kinds: Vec<&str> = updates.iter().map(|u| u["sessionUpdate"].as_str().unwrap()).collect();
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
        acp_check::session_update(update);
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
        settings.advertised_model("[\"builtin:zai-coding-plan\",\"GLM-4.6\",\"fast\"]").unwrap()["variant"],
        "fast"
    );
    assert_eq!(settings.advertised_model("x").unwrap_err().message, "Unknown ZCode model: x");
    assert!(settings.check_advertised_thought_level("high").is_ok());
    assert_eq!(
        settings.check_advertised_thought_level("max").unwrap_err().message,
        "Unknown thought level: max"
    );
    acp_check::config_options(&options);
}

#[test]
fn keeps_advertised_choices_until_republished() {
    let mut settings = settings_with(snapshot_json());
    settings.publish_config_options();
    let mut shrunk = snapshot_json();
    shrunk["settings"]["model"]["available"] = json!([]);
    shrunk["settings"]["thoughtLevel"]["enabled"] = json!(false);
    settings.replace(parse(&shrunk, "setMode").unwrap());
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
        settings.advertised_model("[\"builtin:zai-coding-plan\",\"GLM-4.6\",\"fast\"]").is_err()
    );
    assert!(settings.check_advertised_thought_level("high").is_err());
}

#[test]
fn clears_todos_only_after_showing_them() {
    let mut empty = snapshot_json();
    empty["todos"] = json!([]);
    let mut settings = settings_with(empty.clone());
    assert!(!settings.metadata_updates(true).iter().any(|u| u.contains("zcode-todos")));
    settings.replace(parse(&snapshot_json(), "snapshot event").unwrap());
    assert!(settings.metadata_updates(true).last().unwrap().contains("plan_update"));
    settings.replace(parse(&empty, "snapshot event").unwrap());
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
    settings.replace(parse(&empty, "snapshot event").unwrap());
    let last: Value =
        serde_json::from_str(settings.metadata_updates(false).last().unwrap()).unwrap();
    assert_eq!(last, json!({"sessionUpdate": "plan", "entries": []}));
    acp_check::session_update(&last);
}

#[test]
fn rejects_invalid_snapshots() {
    let mut future = snapshot_json();
    future["settings"]["mode"]["current"] = json!("future-mode");
    assert_eq!(
        parse(&future, "setMode").unwrap_err().message,
        "ZCode returned a mode outside the published catalog: future-mode"
    );
    let mut todo = snapshot_json();
    todo["todos"][0]["extra"] = json!(1);
    assert!(
        parse(&todo, "readSession")
            .unwrap_err()
            .message
            .starts_with("Native result validation failed: readSession: unknown field `extra`")
    );
    let mut role = snapshot_json();
    role["messages"] = json!([{"info": {"role": "system"}, "parts": []}]);
    assert!(parse(&role, "resumeSession").is_err());
    let mut size = snapshot_json();
    size["runtime"]["contextUsage"]["size"] = json!(0);
    assert_eq!(
        parse(&size, "readSession").unwrap_err().message,
        "Native result validation failed: readSession: runtime.contextUsage.size must be positive"
    );
    let mut model = snapshot_json();
    model["settings"]["model"]["current"] = json!({"providerId": "p"});
    assert_eq!(
        parse(&model, "setModel").unwrap_err().message,
        "Native result validation failed: setModel: model ref: missing field `modelId`"
    );
    let mut part = snapshot_json();
    part["messages"] = json!([{"info": {"role": "user"}, "parts": [{"text": "x"}]}]);
    assert!(
        parse(&part, "resumeSession").unwrap_err().message.ends_with("a message part has no type")
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
