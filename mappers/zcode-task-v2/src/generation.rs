//! What is particular to ZCode 3.12.3 in a session.
//!
//! - Opening reads `agent.readWorkspacePresentation` and the model catalogue
//!   (`modelSelection.getView`); `readWorkspaceState` is gone. A new session is created with
//!   the preferred model and its reasoning level, passed again as `thoughtLevel`, and ZCode
//!   must create it with exactly those.
//! - Models and their reasoning levels come from the catalogue, not from the snapshot (which
//!   lists only the current model). A change is first resolved with `getView({selection})`.
//! - Plan is a flag beside the editing mode (`build`, `edit`, `yolo`): native
//!   `setMode("plan")` turns it on and keeps the editing mode, any other mode turns it off. The
//!   snapshot does not show it, so the mapper keeps it from what the host acknowledged:
//!   on after `setMode("plan")`, off after another mode, an approved plan, or opening a
//!   session (a native resume does not keep it).
//!
//! For ACP, the modes are `build`, `edit`, `yolo` and `plan`; while the flag is on the current
//! mode is `plan`. The flag is also the boolean config option `zcode.plan`.

use serde_json::{Value, json};
use zcode_mapper_sdk::acp::params::ConfigChange;
use zcode_mapper_sdk::acp::update;
use zcode_mapper_sdk::contract::MapperError;
use zcode_mapper_sdk::json::{Fields, invalid_params, protocol, text};
use zcode_task::envelope::Service;
use zcode_task::ops::{self, Outbound};
use zcode_task::session::{GenStep, Generation, OpenKind, OpenRequest, done};
use zcode_task::settings::{Publisher, Snapshot, SnapshotRules};
use zcode_task::state::State;

use crate::catalogue::{self, Model, Selection, View};

pub const MODEL_OPTION: &str = "zcode.model";
pub const THOUGHT_LEVEL_OPTION: &str = "zcode.thought_level";
pub const PLAN_OPTION: &str = "zcode.plan";
/// The model option's value while the session has no model (never a selectable choice).
pub const UNSET_MODEL: &str = "none";
/// The native (and ACP) id that turns the plan flag on.
pub const PLAN_MODE: &str = "plan";

/// The editing modes ZCode 3.12.3 reports: (id, name, description).
pub const EDITING_MODES: [(&str, &str, &str); 3] = [
    ("build", "Ask before changes", "Ask before each file changes."),
    (
        "edit",
        "Edit automatically",
        "Edit selected files or relevant workspace files automatically.",
    ),
    ("yolo", "Full access", "Edit and run commands with fewer confirmations."),
];
const PLAN_DESCRIPTION: &str =
    "Inspect the code and present a plan before editing; the editing mode stays for afterwards.";

const EDITING_MODE_IDS: [&str; 3] = ["build", "edit", "yolo"];

pub static SNAPSHOT_RULES: SnapshotRules = SnapshotRules {
    modes: &EDITING_MODE_IDS,
    model_ref: check_model_ref,
    current_model_required: false,
};

fn check_model_ref(model_ref: &serde_json::Map<String, Value>) -> Result<(), String> {
    Selection::from_ref(model_ref).map(drop)
}

fn is_editing_mode(mode: &str) -> bool {
    EDITING_MODE_IDS.contains(&mode)
}

/// The ACP value of a model: JSON text of `[providerId, modelId]`.
fn model_value(provider_id: &str, model_id: &str) -> String {
    text(&json!([provider_id, model_id]))
}

/// The session's current model, with its level (from the model ref, else the thought level).
fn current_selection(snapshot: &Snapshot) -> Option<Selection> {
    let settings = &snapshot.settings;
    let mut selection = Selection::from_ref(settings.model.current.as_ref()?).ok()?;
    if selection.level.is_none() {
        selection.level = settings.thought_level.current.clone();
    }
    Some(selection)
}

fn apply_failed(what: &str) -> MapperError {
    protocol(format!("ZCode did not apply the requested {what}"))
}

/// The snapshot after `setModel` / `setThoughtLevel` becomes the session's; it must show the
/// requested model. Returns the session's selection.
fn applied(
    state: &mut State,
    result: Value,
    method: &str,
    requested: &Selection,
) -> Result<Selection, MapperError> {
    let snapshot = Snapshot::parse(&result, method, &SNAPSHOT_RULES)?;
    let current = current_selection(&snapshot).ok_or_else(|| apply_failed("model"))?;
    state.settings.replace(snapshot);
    if !current.same_model(requested) {
        return Err(apply_failed("model"));
    }
    Ok(current)
}

/// What a `setMode` answers: `session/set_mode` or `session/set_config_option zcode.plan`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeRequest {
    Mode,
    PlanOption,
}

/// Steps of the operations 3.12.3 drives itself.
pub enum Stage {
    Initialize(OpenRequest),
    Presentation(OpenRequest),
    Catalogue(OpenRequest),
    Session { request: OpenRequest, expected: Option<Selection> },
    SetMode { plan: bool, request: ModeRequest },
    ResolveModel(Selection),
    ResolveLevel(Selection),
    SetModel(Selection),
    SetThoughtLevel(Selection),
}

/// The catalogue, the choices last advertised, and the plan flag.
#[derive(Default)]
pub struct TaskV2 {
    catalogue: View,
    /// Model values last advertised, with the model they stand for.
    advertised_models: Vec<(String, Selection)>,
    /// Reasoning levels last advertised (those of the current model).
    advertised_levels: Vec<String>,
    plan_enabled: bool,
}

impl TaskV2 {
    fn catalogue_model(&self, selection: &Selection) -> Option<&Model> {
        self.catalogue.model(&selection.provider_id, &selection.model_id)
    }

    fn set_config_step(
        &self,
        state: &State,
        change: &ConfigChange,
    ) -> Result<GenStep<Stage>, MapperError> {
        let config_id = change.config_id.as_str();
        match config_id {
            PLAN_OPTION => {
                let Some(on) = change.boolean() else {
                    return Err(invalid_params("zcode.plan takes a boolean value"));
                };
                self.mode_step(state, on, None, ModeRequest::PlanOption)
            }
            MODEL_OPTION | THOUGHT_LEVEL_OPTION
                if change.kind.as_deref().is_none_or(|kind| kind == "value_id") =>
            {
                let Some(value) = change.value_id() else {
                    let shown = change.shown_value();
                    return Err(invalid_params(if config_id == MODEL_OPTION {
                        format!("Unknown ZCode model: {shown}")
                    } else {
                        format!("Unknown thought level: {shown}")
                    }));
                };
                state.session_id()?;
                let (selection, stage): (_, fn(Selection) -> Stage) = if config_id == MODEL_OPTION {
                    (self.model_choice(state, value)?, Stage::ResolveModel)
                } else {
                    (self.level_choice(state, value)?, Stage::ResolveLevel)
                };
                let outbound = catalogue::get_view(Some(&selection));
                Ok(GenStep::Send { stage: stage(selection), outbound })
            }
            _ => Err(invalid_params(format!("Unknown config option: {config_id}"))),
        }
    }

    /// An advertised model, at the session's level if it offers it, else at its default.
    fn model_choice(&self, state: &State, value: &str) -> Result<Selection, MapperError> {
        let chosen = self
            .advertised_models
            .iter()
            .find(|(advertised, _)| advertised == value)
            .map(|(_, selection)| selection.clone())
            .ok_or_else(|| invalid_params(format!("Unknown ZCode model: {value}")))?;
        let current_level =
            state.settings.snapshot().and_then(current_selection).and_then(|s| s.level);
        let level = match self.catalogue_model(&chosen) {
            Some(model) => model.level_or_default(current_level.as_deref()),
            None => None,
        };
        Ok(Selection { level, ..chosen })
    }

    /// An advertised level of the session's current model.
    fn level_choice(&self, state: &State, value: &str) -> Result<Selection, MapperError> {
        if !self.advertised_levels.iter().any(|level| level == value) {
            return Err(invalid_params(format!("Unknown thought level: {value}")));
        }
        let current = state
            .settings
            .snapshot()
            .and_then(current_selection)
            .ok_or_else(|| invalid_params(format!("Unknown thought level: {value}")))?;
        Ok(Selection { level: Some(value.to_string()), ..current })
    }

    /// `setMode`: `plan` turns the flag on, keeping the editing mode; `editing` (or, without
    /// one, the session's editing mode) turns it off.
    fn mode_step(
        &self,
        state: &State,
        plan: bool,
        editing: Option<&str>,
        request: ModeRequest,
    ) -> Result<GenStep<Stage>, MapperError> {
        let session_id = state.session_id()?;
        let native_mode = match (plan, editing) {
            (true, _) => PLAN_MODE.to_string(),
            (false, Some(mode)) => mode.to_string(),
            (false, None) => state
                .settings
                .snapshot()
                .map(|snapshot| snapshot.mode().to_string())
                .ok_or_else(|| protocol("The session has no editing mode yet"))?,
        };
        Ok(GenStep::Send {
            stage: Stage::SetMode { plan, request },
            outbound: ops::set_mode(&state.workspace, session_id, &native_mode),
        })
    }

    /// The mode update and the config options.
    fn mode_and_options(&mut self, state: &State) -> (String, Value) {
        let snapshot = state.settings.snapshot();
        let mode = snapshot.map(|s| self.current_mode(s)).unwrap_or_else(|| "build".into());
        let options = state.settings.config_options(self);
        (update::current_mode(&mode), options)
    }

    fn config_done(&mut self, state: &mut State) -> GenStep<Stage> {
        let options = state.settings.config_options(self);
        let updates = vec![update::config_options(&options)];
        state.settings.remember_sent(&updates);
        GenStep::Done(done(json!({"configOptions": options}), updates))
    }

    fn open_session(&mut self, state: &State, request: OpenRequest) -> GenStep<Stage> {
        let workspace = &state.workspace;
        let (outbound, expected) = match &request.session_id {
            None => {
                let expected = self.catalogue.default_selection();
                (create_session(workspace, &request.mcp_servers, expected.as_ref()), expected)
            }
            Some(id) => (ops::resume_session(workspace, id, &request.mcp_servers), None),
        };
        GenStep::Send { stage: Stage::Session { request, expected }, outbound }
    }
}

impl Publisher for TaskV2 {
    /// Model (from the catalogue), reasoning level (of the current model) and the plan flag;
    /// the model and level choices become the advertised ones.
    fn publish_config_options(&mut self, snapshot: &Snapshot) -> Value {
        let current = current_selection(snapshot);
        let mut models: Vec<(String, Selection, Value)> = Vec::new();
        for model in &self.catalogue.models {
            let value = model_value(&model.provider_id, &model.model_id);
            let mut option = json!({"value": value, "name": model.label});
            if let Some(provider) = &model.provider_label {
                option["description"] = json!(provider);
            }
            models.push((value, Selection::new(&model.provider_id, &model.model_id, None), option));
        }
        let current_value = match &current {
            Some(current) => {
                let value = model_value(&current.provider_id, &current.model_id);
                // The current model stays selectable even if the catalogue no longer lists it.
                if !models.iter().any(|(listed, _, _)| *listed == value) {
                    let option = json!({"value": value, "name": current.model_id});
                    let selection = Selection { level: None, ..current.clone() };
                    models.push((value.clone(), selection, option));
                }
                value
            }
            None => UNSET_MODEL.to_string(),
        };
        let mut choices: Vec<Value> = models.iter().map(|(_, _, option)| option.clone()).collect();
        if current.is_none() {
            // ZCode 3.12.3 may have no current model; prompts wait until one is chosen.
            choices.insert(0, json!({"value": UNSET_MODEL, "name": "No model selected"}));
        }
        let mut options = vec![json!({
            "id": MODEL_OPTION,
            "name": "Model",
            "category": "model",
            "type": "select",
            "currentValue": current_value,
            "options": choices,
        })];
        self.advertised_models =
            models.into_iter().map(|(value, selection, _)| (value, selection)).collect();

        self.advertised_levels.clear();
        let thought = &snapshot.settings.thought_level;
        let levels = current
            .as_ref()
            .and_then(|current| self.catalogue_model(current))
            .map(|model| model.levels.clone())
            .unwrap_or_default();
        if let Some(current) = current.as_ref().filter(|_| thought.enabled && !levels.is_empty()) {
            let label = |value: &str| {
                thought
                    .available
                    .iter()
                    .find(|choice| choice.value == value)
                    .map_or_else(|| value.to_string(), |choice| choice.label.clone())
            };
            let choices: Vec<Value> =
                levels.iter().map(|level| json!({"value": level, "name": label(level)})).collect();
            let level = current.level.clone().filter(|level| levels.contains(level));
            let default = levels.last().cloned().unwrap_or_default();
            options.push(json!({
                "id": THOUGHT_LEVEL_OPTION,
                "name": "Thought level",
                "category": "thought_level",
                "type": "select",
                "currentValue": level.unwrap_or(default),
                "options": choices,
            }));
            self.advertised_levels = levels;
        }
        options.push(json!({
            "id": PLAN_OPTION,
            "name": "Plan",
            "description": "Plan before editing, whatever the editing mode",
            "type": "boolean",
            "currentValue": self.plan_enabled,
        }));
        Value::Array(options)
    }

    fn current_mode(&self, snapshot: &Snapshot) -> String {
        if self.plan_enabled { PLAN_MODE.to_string() } else { snapshot.mode().to_string() }
    }
}

impl Generation for TaskV2 {
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
        if mode == PLAN_MODE {
            return self.mode_step(state, true, None, ModeRequest::Mode);
        }
        if !is_editing_mode(mode) {
            return Err(invalid_params(format!("Unknown ZCode mode: {mode}")));
        }
        self.mode_step(state, false, Some(mode), ModeRequest::Mode)
    }

    fn set_config_option(
        &mut self,
        state: &State,
        change: &ConfigChange,
    ) -> Result<GenStep<Stage>, MapperError> {
        self.set_config_step(state, change)
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
                    outbound: read_workspace_presentation(&workspace),
                    stage: Stage::Presentation(request),
                })
            }
            Stage::Presentation(request) => {
                check_presentation(&result, &workspace)?;
                Ok(GenStep::Send {
                    outbound: catalogue::get_view(None),
                    stage: Stage::Catalogue(request),
                })
            }
            Stage::Catalogue(request) => {
                let view = View::parse(&result)?;
                view.require_models()?;
                self.catalogue = view;
                Ok(self.open_session(state, request))
            }
            Stage::Session { request, expected } => {
                let snapshot = Snapshot::parse(&result, request.source(), &SNAPSHOT_RULES)?;
                if request.kind == OpenKind::Create
                    && let Some(expected) = expected
                {
                    let created = current_selection(&snapshot);
                    let same = created.as_ref().is_some_and(|created| {
                        created.same_model(&expected) && created.level == expected.level
                    });
                    if !same {
                        return Err(protocol(
                            "ZCode created the session with another model or reasoning level \
                             than requested",
                        ));
                    }
                }
                // A native resume does not keep the plan flag; a new session starts without it.
                self.plan_enabled = false;
                Ok(GenStep::Opened { request, snapshot })
            }
            Stage::SetMode { plan, request } => {
                let snapshot = Snapshot::parse(&result, "setMode", &SNAPSHOT_RULES)?;
                let flag_changed = self.plan_enabled != plan;
                self.plan_enabled = plan;
                state.settings.replace(snapshot);
                let (mode_update, options) = self.mode_and_options(state);
                let mut updates = vec![mode_update];
                if flag_changed || request == ModeRequest::PlanOption {
                    updates.push(update::config_options(&options));
                }
                let response = match request {
                    ModeRequest::Mode => json!({}),
                    ModeRequest::PlanOption => json!({"configOptions": options}),
                };
                state.settings.remember_sent(&updates);
                Ok(GenStep::Done(done(response, updates)))
            }
            Stage::ResolveModel(requested) => {
                let view = View::parse(&result)?;
                let resolved = view.resolved(&requested)?;
                self.catalogue = view;
                let outbound = ops::set_model(&workspace, state.session_id()?, &resolved.to_json());
                Ok(GenStep::Send { stage: Stage::SetModel(resolved), outbound })
            }
            Stage::ResolveLevel(requested) => {
                let view = View::parse(&result)?;
                let resolved = view.resolved(&requested)?;
                self.catalogue = view;
                let level = resolved.level.clone().unwrap_or_default();
                let outbound = ops::set_thought_level(&workspace, state.session_id()?, &level);
                Ok(GenStep::Send { stage: Stage::SetThoughtLevel(resolved), outbound })
            }
            Stage::SetModel(requested) => {
                let applied = applied(state, result, "setModel", &requested)?;
                match &requested.level {
                    // The host may apply the model without its level: set the level too.
                    Some(level) if applied.level.as_ref() != Some(level) => {
                        let outbound =
                            ops::set_thought_level(&workspace, state.session_id()?, level);
                        Ok(GenStep::Send { stage: Stage::SetThoughtLevel(requested), outbound })
                    }
                    _ => Ok(self.config_done(state)),
                }
            }
            Stage::SetThoughtLevel(requested) => {
                let applied = applied(state, result, "setThoughtLevel", &requested)?;
                if applied.level != requested.level {
                    return Err(apply_failed("reasoning level"));
                }
                Ok(self.config_done(state))
            }
        }
    }

    fn mode_state(&self, state: &State) -> Value {
        let current = state
            .settings
            .snapshot()
            .map(|snapshot| self.current_mode(snapshot))
            .unwrap_or_else(|| "build".to_string());
        let mut modes: Vec<Value> = EDITING_MODES
            .iter()
            .map(|(id, name, description)| json!({"id": id, "name": name, "description": description}))
            .collect();
        modes.push(json!({"id": PLAN_MODE, "name": "Plan mode", "description": PLAN_DESCRIPTION}));
        json!({"currentModeId": current, "availableModes": modes})
    }

    /// Without a model nothing could answer: ZCode 3.12.3 may have no current model yet.
    fn check_prompt(&self, state: &State) -> Result<(), MapperError> {
        let selected = state
            .settings
            .snapshot()
            .is_some_and(|snapshot| snapshot.settings.model.current.is_some());
        if selected {
            Ok(())
        } else {
            Err(invalid_params(
                "No ZCode model is selected: choose one with the config option zcode.model",
            ))
        }
    }

    /// An approved plan ends planning; the editing mode stays.
    fn plan_approved(&mut self, state: &mut State) -> Vec<String> {
        if !self.plan_enabled {
            return Vec::new();
        }
        self.plan_enabled = false;
        let (mode_update, options) = self.mode_and_options(state);
        let updates = vec![mode_update, update::config_options(&options)];
        state.settings.remember_sent(&updates);
        updates
    }
}

/// `createSession` with the model ZCode should start with. The level goes into the model and,
/// again, into `thoughtLevel`: creation hands only provider and model on to the session.
fn create_session(workspace: &str, mcp_servers: &Value, model: Option<&Selection>) -> Outbound {
    let mut params =
        json!({"workspacePath": workspace, "persistence": "immediate", "mcpServers": mcp_servers});
    if let Some(model) = model {
        params["model"] = model.to_json();
        if let Some(level) = &model.level {
            params["thoughtLevel"] = json!(level);
        }
    }
    ops::agent("createSession", params)
}

fn read_workspace_presentation(workspace: &str) -> Outbound {
    Outbound::long_call(
        Service::AGENT,
        "readWorkspacePresentation",
        json!({"workspacePath": workspace}),
    )
}

/// `readWorkspacePresentation`: `{workspace: {workspacePath}, mode}` of the requested workspace.
fn check_presentation(result: &Value, workspace: &str) -> Result<(), MapperError> {
    let read = || -> Result<(String, String), MapperError> {
        let fields = Fields::native(result, "workspace presentation")?;
        let presented =
            fields.object("workspace", "presented workspace")?.non_empty_str("workspacePath")?;
        Ok((presented.to_string(), fields.non_empty_str("mode")?.to_string()))
    };
    let (presented, mode) =
        read().map_err(|e| ops::validation_failed("readWorkspacePresentation", &e))?;
    if presented != workspace {
        return Err(protocol(format!("ZCode presented another workspace: {presented}")));
    }
    if !is_editing_mode(&mode) {
        return Err(protocol(format!(
            "ZCode returned a mode outside the published catalog: {mode}"
        )));
    }
    Ok(())
}
