//! Session modes and config options as ACP shows them: the `modes` of a session response
//! ([`mode_state`]) and the `configOptions` list ([`ConfigOption`]), which also goes into
//! `config_option_update` ([`super::update::config_options`]) and the
//! `session/set_config_option` response. The change a client asks for is read by
//! [`super::params::ConfigChange`].

use serde_json::{Value, json};

/// A session mode: (id, name, description).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub description: &'a str,
}

/// ACP `SessionModeState`: `{currentModeId, availableModes}`.
pub fn mode_state(current: &str, modes: &[Mode<'_>]) -> Value {
    let modes: Vec<Value> = modes
        .iter()
        .map(|mode| json!({"id": mode.id, "name": mode.name, "description": mode.description}))
        .collect();
    json!({"currentModeId": current, "availableModes": modes})
}

/// One value of a select option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub value: String,
    pub name: String,
    pub description: Option<String>,
}

impl Choice {
    pub fn new(value: impl Into<String>, name: impl Into<String>) -> Self {
        Self { value: value.into(), name: name.into(), description: None }
    }

    pub fn described(mut self, description: Option<&str>) -> Self {
        self.description = description.map(str::to_string);
        self
    }

    fn to_json(&self) -> Value {
        let mut choice = json!({"value": self.value, "name": self.name});
        if let Some(description) = &self.description {
            choice["description"] = json!(description);
        }
        choice
    }
}

/// What kind of value an option holds, and its current value.
#[derive(Clone, Debug, PartialEq)]
pub enum OptionValue {
    /// One of `choices`.
    Select {
        current: String,
        choices: Vec<Choice>,
    },
    Boolean(bool),
}

/// One ACP session config option.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigOption {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// ACP category (`mode`, `model`, `thought_level`), if it has one.
    pub category: Option<String>,
    pub value: OptionValue,
}

impl ConfigOption {
    pub fn select(
        id: &str,
        name: &str,
        category: Option<&str>,
        current: impl Into<String>,
        choices: Vec<Choice>,
    ) -> Self {
        Self {
            id: id.to_string(),
            name: name.to_string(),
            description: None,
            category: category.map(str::to_string),
            value: OptionValue::Select { current: current.into(), choices },
        }
    }

    pub fn boolean(id: &str, name: &str, description: Option<&str>, current: bool) -> Self {
        Self {
            id: id.to_string(),
            name: name.to_string(),
            description: description.map(str::to_string),
            category: None,
            value: OptionValue::Boolean(current),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut option = json!({"id": self.id, "name": self.name});
        if let Some(description) = &self.description {
            option["description"] = json!(description);
        }
        if let Some(category) = &self.category {
            option["category"] = json!(category);
        }
        match &self.value {
            OptionValue::Select { current, choices } => {
                option["type"] = json!("select");
                option["currentValue"] = json!(current);
                option["options"] = Value::Array(choices.iter().map(Choice::to_json).collect());
            }
            OptionValue::Boolean(current) => {
                option["type"] = json!("boolean");
                option["currentValue"] = json!(current);
            }
        }
        option
    }
}

/// The `configOptions` list.
pub fn options_json(options: &[ConfigOption]) -> Value {
    Value::Array(options.iter().map(ConfigOption::to_json).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp_check;

    #[test]
    fn writes_modes_and_options_as_acp_reads_them() {
        let modes = [
            Mode { id: "build", name: "Ask", description: "Ask first." },
            Mode { id: "plan", name: "Plan", description: "Plan first." },
        ];
        let state = mode_state("plan", &modes);
        assert_eq!(state["currentModeId"], "plan");
        assert_eq!(
            state["availableModes"][1],
            json!({"id": "plan", "name": "Plan", "description": "Plan first."})
        );
        let options = options_json(&[
            ConfigOption::select(
                "zcode.model",
                "Model",
                Some("model"),
                "a",
                vec![Choice::new("a", "A").described(Some("Z.ai")), Choice::new("b", "B")],
            ),
            ConfigOption::boolean("zcode.plan", "Plan", Some("Plan first"), true),
        ]);
        acp_check::config_options(&options);
        assert_eq!(
            options,
            json!([
                {"id": "zcode.model", "name": "Model", "category": "model", "type": "select", "currentValue": "a",
                 "options": [{"value": "a", "name": "A", "description": "Z.ai"}, {"value": "b", "name": "B"}]},
                {"id": "zcode.plan", "name": "Plan", "description": "Plan first", "type": "boolean", "currentValue": true},
            ])
        );
    }
}
