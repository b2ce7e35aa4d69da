//! Simulator profiles: what one ZCode release looks like from the outside.
//!
//! The profile is chosen by the app version in the install's `app.asar/package.json`, exactly
//! like discovery reads it. Everything that differs between releases (CLI version, which host
//! methods exist, which modes are published, how models and plan are represented, what the
//! bridge needs to start) lives in the profile, so the host and the turn runner branch on a
//! profile's features, never on a version string.

use std::path::{Path, PathBuf};

use crate::app_server::AppServerProfile;

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

const AGENT_METHODS_3_12: [&str; 16] = [
    "initialize",
    "readWorkspacePresentation",
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

/// Every release the simulator can play.
pub const PROFILES: &[&Profile] = &[&ZCODE_3_11_2, &ZCODE_3_12_3];

/// Where `package.json` may live inside an install root (Linux/Windows, then macOS layout).
const PACKAGE_JSON_CANDIDATES: &[&str] =
    &["resources/app.asar/package.json", "Contents/Resources/app.asar/package.json"];

/// The release an install root holds: a host-bridge release or an app-server one.
#[derive(Debug, Clone, Copy)]
pub enum Release {
    Host(&'static Profile),
    AppServer(&'static AppServerProfile),
}

impl Release {
    /// The release for the app version found in the install root.
    pub fn detect(install_root: &Path) -> Result<Release, String> {
        let version = read_app_version(install_root)?;
        if let Some(profile) =
            PROFILES.iter().copied().find(|profile| profile.app_version == version)
        {
            return Ok(Release::Host(profile));
        }
        if let Some(profile) = crate::app_server::for_app_version(&version) {
            return Ok(Release::AppServer(profile));
        }
        let host = PROFILES.iter().map(|profile| profile.app_version);
        let supported: Vec<&str> =
            host.chain(crate::app_server::PROFILES.iter().map(|p| p.app_version)).collect();
        Err(format!(
            "no simulator profile for ZCode {version} (supported: {})",
            supported.join(", ")
        ))
    }
}

impl Profile {
    /// Loads the host-bridge profile for the app version found in the install root.
    #[cfg(test)]
    pub fn detect(install_root: &Path) -> Result<&'static Profile, String> {
        match Release::detect(install_root)? {
            Release::Host(profile) => Ok(profile),
            Release::AppServer(profile) => Err(format!(
                "ZCode {} runs its Agent over app-server, not the host bridge",
                profile.app_version
            )),
        }
    }

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

fn read_app_version(install_root: &Path) -> Result<String, String> {
    let path = package_json_path(install_root).ok_or_else(|| {
        format!(
            "no app.asar/package.json under {} (asar archives are not supported; the simulator \
             needs an unpacked app.asar directory)",
            install_root.display()
        )
    })?;
    let text = std::fs::read_to_string(&path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let package: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| format!("invalid JSON in {}: {error}", path.display()))?;
    package
        .get("version")
        .and_then(|version| version.as_str())
        .map(str::to_owned)
        .ok_or_else(|| format!("{} has no string `version`", path.display()))
}

fn package_json_path(install_root: &Path) -> Option<PathBuf> {
    PACKAGE_JSON_CANDIDATES
        .iter()
        .map(|relative| install_root.join(relative))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn install_with(relative: &str, body: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
        root
    }

    #[test]
    fn detects_linux_and_macos_layouts() {
        let linux = install_with("resources/app.asar/package.json", r#"{"version":"3.11.2"}"#);
        assert_eq!(Profile::detect(linux.path()).unwrap().cli_version, "0.16.5");
        let mac =
            install_with("Contents/Resources/app.asar/package.json", r#"{"version":"3.11.2"}"#);
        assert_eq!(Profile::detect(mac.path()).unwrap().app_version, "3.11.2");
    }

    #[test]
    fn refuses_unknown_versions_and_missing_packages() {
        let unknown = install_with("resources/app.asar/package.json", r#"{"version":"3.13.0"}"#);
        let error = Profile::detect(unknown.path()).unwrap_err();
        assert!(error.contains("no simulator profile for ZCode 3.13.0"), "{error}");
        assert!(error.contains("(supported: 3.11.2, 3.12.3, 3.14.3, "), "{error}");
        assert!(error.ends_with("3.18.2, 4.0.0)"), "{error}");
        let empty = tempfile::tempdir().unwrap();
        assert!(Profile::detect(empty.path()).unwrap_err().contains("no app.asar/package.json"));
    }

    #[test]
    fn app_server_releases_are_told_apart_from_host_ones() {
        let desktop = install_with("resources/app.asar/package.json", r#"{"version":"3.18.2"}"#);
        let Ok(Release::AppServer(profile)) = Release::detect(desktop.path()) else {
            panic!("3.18.2 is an app-server release");
        };
        assert_eq!(profile.name, "desktop-3.18.2");
        assert!(Profile::detect(desktop.path()).unwrap_err().contains("app-server"));
        let mac =
            install_with("Contents/Resources/app.asar/package.json", r#"{"version":"4.0.0"}"#);
        assert!(matches!(Release::detect(mac.path()), Ok(Release::AppServer(_))));
        let host = install_with("resources/app.asar/package.json", r#"{"version":"3.12.3"}"#);
        assert!(matches!(Release::detect(host.path()), Ok(Release::Host(_))));
    }

    #[test]
    fn channel_tables_split_agent_and_task_methods() {
        assert!(ZCODE_3_11_2.serves(Channel::Agent, "readWorkspaceState"));
        assert!(!ZCODE_3_11_2.serves(Channel::Agent, "stopGeneration"));
        assert!(ZCODE_3_11_2.serves(Channel::Task, "stopGeneration"));
        assert!(!ZCODE_3_11_2.serves(Channel::ModelSelection, "getView"));
    }

    #[test]
    fn the_3_12_3_profile_replaces_the_workspace_state() {
        let linux = install_with("resources/app.asar/package.json", r#"{"version":"3.12.3"}"#);
        let profile = Profile::detect(linux.path()).unwrap();
        assert_eq!((profile.app_version, profile.cli_version), ("3.12.3", "0.16.5"));
        assert!(!profile.serves(Channel::Agent, "readWorkspaceState"));
        assert!(!profile.bridge_agent_methods.contains(&"readWorkspaceState"));
        assert!(profile.serves(Channel::Agent, "readWorkspacePresentation"));
        assert!(profile.serves(Channel::ModelSelection, "getView"));
        assert_eq!(
            (profile.plan, profile.models, profile.needs_provider_config),
            (PlanState::IndependentFlag, ModelShape::Selection, true)
        );
        assert_eq!(
            (ZCODE_3_11_2.plan, ZCODE_3_11_2.models, ZCODE_3_11_2.needs_provider_config),
            (PlanState::Mode, ModelShape::Refs, false)
        );
    }
}
