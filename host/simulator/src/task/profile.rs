//! Simulator profiles: what one ZCode release looks like from the outside.
//!
//! The profile is chosen by the app version in the install's `app.asar/package.json`, exactly
//! like discovery reads it. Everything that differs between releases (CLI version, which host
//! methods exist, which modes are published, how models and plan are represented, what the
//! bridge needs to start) lives in the profile, so the host and the turn runner branch on a
//! profile's features, never on a version string.

/// One simulated ZCode release.
#[derive(Debug)]
pub struct Profile {
    pub app_version: &'static str,
    pub cli_version: &'static str,
    /// Methods the bridge script forwards on service `agent` (reference §2.4).
    pub bridge_agent_methods: &'static [&'static str],
    /// Methods the host serves on its `zcode-agent` channel.
    pub agent_channel: &'static [&'static str],
    /// Methods the host serves on its `zcode-task` channel.
    pub task_channel: &'static [&'static str],
    /// Modes the host accepts in `setMode`.
    pub modes: &'static [&'static str],
    /// Methods the bridge forwards on service `modelSelection` (reference: services-v4 §3.2).
    pub bridge_model_selection_methods: &'static [&'static str],
    /// Methods the host serves on its `model-selection` channel.
    pub model_selection_channel: &'static [&'static str],
    pub plan: PlanState,
    pub models: ModelShape,
    /// The bridge needs `ZCODE_ACP_HOST_PROVIDER_CONFIG` (the bundled
    /// `config/provider/zcode-builtin.json`), which it hands to the host in `init-local`.
    pub needs_provider_config: bool,
}

/// How a release represents planning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanState {
    /// `plan` is one of the modes (3.11.2).
    Mode,
    /// A flag beside the editing mode: `setMode("plan")` sets it and keeps the mode, any other
    /// mode clears it; approving a plan or resuming a session clears it (3.12.3).
    IndependentFlag,
}

/// How a release represents models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelShape {
    /// Refs `{providerId, modelId, variant?}`, one thought-level list for every model, the
    /// catalogue in `readWorkspaceState` (3.11.2).
    Refs,
    /// `ModelSelection {providerId, modelId, options: {reasoningLevel}}`, reasoning levels per
    /// model, the catalogue from `model-selection.getView`; a session snapshot lists only its
    /// current model (3.12.3).
    Selection,
}

/// ZCode 3.11.2 (CLI 0.16.5), host protocol `zcode-task-v1`.
pub const ZCODE_3_11_2: Profile = Profile {
    app_version: "3.11.2",
    cli_version: "0.16.5",
    bridge_agent_methods: &AGENT_METHODS_3_11,
    agent_channel: &AGENT_METHODS_3_11,
    task_channel: &TASK_METHODS,
    modes: &MODES,
    bridge_model_selection_methods: &[],
    model_selection_channel: &[],
    plan: PlanState::Mode,
    models: ModelShape::Refs,
    needs_provider_config: false,
};

/// ZCode 3.12.3 (CLI 0.16.5, build 3.12.3.7463), host protocol `zcode-host-3.12`:
/// `readWorkspaceState` removed, `readWorkspacePresentation` and the `model-selection` channel
/// added, plan independent of the editing mode, the bridge needs the built-in provider config.
pub const ZCODE_3_12_3: Profile = Profile {
    app_version: "3.12.3",
    cli_version: "0.16.5",
    bridge_agent_methods: &AGENT_METHODS_3_12,
    agent_channel: &AGENT_METHODS_3_12,
    task_channel: &TASK_METHODS,
    modes: &MODES,
    bridge_model_selection_methods: &["getView"],
    model_selection_channel: &["getView"],
    plan: PlanState::IndependentFlag,
    models: ModelShape::Selection,
    needs_provider_config: true,
};

const TASK_METHODS: [&str; 3] = ["stopGeneration", "respondPermission", "respondElicitation"];
const MODES: [&str; 4] = ["build", "edit", "plan", "yolo"];

const AGENT_METHODS_3_11: [&str; 16] = [
    "initialize",
    "readWorkspaceState",
    "createSession",
    "resumeSession",
    "listSessions",
    "readSession",
    "readSessionMessages",
    "readSessionEvents",
    "sendPrompt",
    "closeSession",
    "setModel",
    "setThoughtLevel",
    "setMode",
    "getTaskTokenUsage",
    "respondProviderRuntimeHeaders",
    "disposeWorkspace",
];

/// 3.12.3 replaced `readWorkspaceState` with `readWorkspacePresentation`.
const AGENT_METHODS_3_12: [&str; 16] = {
    let mut methods = AGENT_METHODS_3_11;
    methods[1] = "readWorkspacePresentation";
    methods
};

/// Every release the simulator can play.
pub const PROFILES: &[&Profile] = &[&ZCODE_3_11_2, &ZCODE_3_12_3];

impl Profile {
    pub fn serves(&self, channel: Channel, method: &str) -> bool {
        let table = match channel {
            Channel::Agent => self.agent_channel,
            Channel::Task => self.task_channel,
            Channel::ModelSelection => self.model_selection_channel,
        };
        table.contains(&method)
    }
}

/// The host's IPC channels (the bridge maps service names to these via the protocol descriptor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Agent,
    Task,
    ModelSelection,
}

impl Channel {
    pub fn from_name(name: &str) -> Option<Channel> {
        match name {
            "zcode-agent" => Some(Channel::Agent),
            "zcode-task" => Some(Channel::Task),
            "model-selection" => Some(Channel::ModelSelection),
            _ => None,
        }
    }
}
