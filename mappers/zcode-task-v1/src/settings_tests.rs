//! The 3.11.2 publisher with the shared snapshot cache: model and thought-level options, the
//! mode catalog, and snapshots validated with this generation's rules.

use serde_json::{Map, Value, json};
use zcode_mapper_sdk::acp_check;
use zcode_mapper_sdk::contract::MapperError;
use zcode_task::settings::Snapshot;
use zcode_task::test_support::snapshot_json;

use crate::generation::{SNAPSHOT_RULES, TaskV1, is_known_mode, mode_state};

/// The shared snapshot cache with this generation's publisher, as a session holds them.
#[derive(Default)]
struct Settings {
    cache: zcode_task::settings::Settings,
    generation: TaskV1,
}

impl Settings {
    fn replace(&mut self, snapshot: Snapshot) {
        self.cache.replace(snapshot);
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
