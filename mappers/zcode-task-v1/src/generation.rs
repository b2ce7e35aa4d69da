//! What is particular to ZCode 3.11.2 in a session: it is opened after `readWorkspaceState`;
//! the mode catalog has four modes, `plan` among them; models are the snapshot's own list,
//! with refs `{providerId, modelId, variant?}`; the thought level is a session setting.

use serde_json::{Map, Value, json};
use zcode_mapper_sdk::acp::params::ConfigChange;
use zcode_mapper_sdk::acp::update;
use zcode_mapper_sdk::contract::MapperError;
use zcode_mapper_sdk::json::{Fields, invalid_params, text};
use zcode_task::ops;
use zcode_task::session::{GenStep, Generation, OpenRequest, done};
use zcode_task::settings::{Publisher, Snapshot, SnapshotRules};
use zcode_task::state::State;

use crate::workspace_state;

pub const MODEL_OPTION: &str = "zcode.model";
pub const THOUGHT_LEVEL_OPTION: &str = "zcode.thought_level";

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

const MODE_IDS: [&str; 4] = ["build", "edit", "plan", "yolo"];

pub static SNAPSHOT_RULES: SnapshotRules =
    SnapshotRules { modes: &MODE_IDS, model_ref: check_model_ref, current_model_required: true };

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

/// The ACP value of a model ref: JSON text of `[providerId, modelId, variant or null]`.
fn model_value(model_ref: &Map<String, Value>) -> Result<String, String> {
    let fields = Value::Object(model_ref.clone());
    let read = Fields::native(&fields, "model ref").map_err(|e| e.message)?;
    let provider = read.non_empty_str("providerId").map_err(|e| e.message)?;
    let model = read.non_empty_str("modelId").map_err(|e| e.message)?;
    let variant = read.opt_str("variant").map_err(|e| e.message)?;
    Ok(text(&json!([provider, model, variant])))
}

fn check_model_ref(model_ref: &Map<String, Value>) -> Result<(), String> {
    model_value(model_ref).map(drop)
}

fn model_id(model_ref: &Map<String, Value>) -> &str {
    model_ref.get("modelId").and_then(Value::as_str).unwrap_or_default()
}

/// Steps of the operations 3.11.2 drives itself.
pub enum Stage {
    Initialize(OpenRequest),
    WorkspaceState(OpenRequest),
    Session(OpenRequest),
    SetMode,
    SetConfig { method: &'static str },
}

/// The choices last advertised to the client.
#[derive(Default)]
pub struct TaskV1 {
    /// Model values last advertised, with the refs they stand for.
    advertised_models: Vec<(String, Map<String, Value>)>,
    /// Thought levels last advertised.
    advertised_thought_levels: Vec<String>,
}

impl TaskV1 {
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
}

impl Publisher for TaskV1 {
    /// Model and thought level; they become the advertised choices.
    fn publish_config_options(&mut self, snapshot: &Snapshot) -> Value {
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
        // Required by this generation's snapshot rules.
        let current = settings.model.current.clone().unwrap_or_default();
        let current_model = model_value(&current).unwrap_or_default();
        // The current model is always selectable, even if the catalog no longer lists it.
        if !models.iter().any(|(value, _, _)| *value == current_model) {
            let option = json!({"value": current_model, "name": model_id(&current)});
            models.push((current_model.clone(), current.clone(), option));
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

    fn current_mode(&self, snapshot: &Snapshot) -> String {
        snapshot.mode().to_string()
    }
}

impl Generation for TaskV1 {
    type Stage = Stage;

    fn snapshot_rules(&self) -> &'static SnapshotRules {
        &SNAPSHOT_RULES
    }

    fn open(&mut self, state: &State, request: OpenRequest) -> Result<GenStep<Stage>, MapperError> {
        Ok(GenStep::Send {
            outbound: ops::initialize(&state.workspace),
            stage: Stage::Initialize(request),
        })
    }

    fn set_mode(&mut self, state: &State, mode: &str) -> Result<GenStep<Stage>, MapperError> {
        if !is_known_mode(mode) {
            return Err(invalid_params(format!("Unknown ZCode mode: {mode}")));
        }
        let session_id = state.session_id()?;
        Ok(GenStep::Send {
            stage: Stage::SetMode,
            outbound: ops::set_mode(&state.workspace, session_id, mode),
        })
    }

    fn set_config_option(
        &mut self,
        state: &State,
        change: &ConfigChange,
    ) -> Result<GenStep<Stage>, MapperError> {
        let config_id = change.config_id.as_str();
        let known = config_id == MODEL_OPTION || config_id == THOUGHT_LEVEL_OPTION;
        if !known || change.kind.as_deref().is_some_and(|kind| kind != "value_id") {
            return Err(invalid_params(format!("Unknown config option: {config_id}")));
        }
        let Some(Value::String(value)) = &change.value else {
            let shown = change.shown_value();
            return Err(invalid_params(if config_id == MODEL_OPTION {
                format!("Unknown ZCode model: {shown}")
            } else {
                format!("Unknown thought level: {shown}")
            }));
        };
        let session_id = state.session_id()?;
        let workspace = &state.workspace;
        if config_id == MODEL_OPTION {
            let model_ref = Value::Object(self.advertised_model(value)?.clone());
            Ok(GenStep::Send {
                stage: Stage::SetConfig { method: "setModel" },
                outbound: ops::set_model(workspace, session_id, &model_ref),
            })
        } else {
            self.check_advertised_thought_level(value)?;
            Ok(GenStep::Send {
                stage: Stage::SetConfig { method: "setThoughtLevel" },
                outbound: ops::set_thought_level(workspace, session_id, value),
            })
        }
    }

    fn advance(
        &mut self,
        state: &mut State,
        stage: Stage,
        result: Result<Value, MapperError>,
    ) -> Result<GenStep<Stage>, MapperError> {
        let result = result?;
        let workspace = state.workspace.clone();
        match stage {
            Stage::Initialize(request) => {
                ops::check_initialized(&result)?;
                Ok(GenStep::Send {
                    outbound: workspace_state::read(&workspace),
                    stage: Stage::WorkspaceState(request),
                })
            }
            Stage::WorkspaceState(request) => {
                workspace_state::check(&result)?;
                let outbound = match &request.session_id {
                    None => ops::create_session(&workspace, &request.mcp_servers),
                    Some(id) => ops::resume_session(&workspace, id, &request.mcp_servers),
                };
                Ok(GenStep::Send { outbound, stage: Stage::Session(request) })
            }
            Stage::Session(request) => {
                let source = request.source();
                let snapshot = Snapshot::parse(&result, source, &SNAPSHOT_RULES)?;
                Ok(GenStep::Opened { request, snapshot })
            }
            Stage::SetMode => {
                let snapshot = Snapshot::parse(&result, "setMode", &SNAPSHOT_RULES)?;
                let update = update::current_mode(snapshot.mode());
                state.settings.replace(snapshot);
                Ok(GenStep::Done(done(json!({}), vec![update])))
            }
            Stage::SetConfig { method } => {
                let snapshot = Snapshot::parse(&result, method, &SNAPSHOT_RULES)?;
                state.settings.replace(snapshot);
                let options = state.settings.config_options(self);
                let update = update::config_options(&options);
                Ok(GenStep::Done(done(json!({"configOptions": options}), vec![update])))
            }
        }
    }

    fn mode_state(&self, state: &State) -> Value {
        mode_state(state.settings.snapshot().map_or("build", Snapshot::mode))
    }
}
