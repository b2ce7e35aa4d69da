//! Simulator profiles: what one ZCode release looks like from the outside.
//!
//! The profile is chosen by the app version in the install's `app.asar/package.json`, exactly
//! like discovery reads it. Everything that differs between releases (CLI version, which host
//! methods exist, which modes are published) lives in the profile so a later release is a new
//! table, not a new code path.

use std::path::{Path, PathBuf};

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
    /// Modes the host accepts and reports.
    pub modes: &'static [&'static str],
}

/// ZCode 3.11.2 (CLI 0.16.5), host protocol `zcode-task-v1`.
pub const ZCODE_3_11_2: Profile = Profile {
    app_version: "3.11.2",
    cli_version: "0.16.5",
    bridge_agent_methods: &AGENT_METHODS_3_11,
    agent_channel: &AGENT_METHODS_3_11,
    task_channel: &["stopGeneration", "respondPermission", "respondElicitation"],
    modes: &["build", "edit", "plan", "yolo"],
};

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

/// Every release the simulator can play. A 3.12.3 profile (no `readWorkspaceState`, models via
/// `model-selection`, plan as an independent flag) would be added here.
pub const PROFILES: &[&Profile] = &[&ZCODE_3_11_2];

/// Where `package.json` may live inside an install root (Linux/Windows, then macOS layout).
const PACKAGE_JSON_CANDIDATES: &[&str] =
    &["resources/app.asar/package.json", "Contents/Resources/app.asar/package.json"];

impl Profile {
    /// Loads the profile for the app version found in the install root.
    pub fn detect(install_root: &Path) -> Result<&'static Profile, String> {
        let version = read_app_version(install_root)?;
        PROFILES.iter().copied().find(|profile| profile.app_version == version).ok_or_else(|| {
            let supported: Vec<&str> = PROFILES.iter().map(|p| p.app_version).collect();
            format!(
                "no simulator profile for ZCode {version} (supported: {})",
                supported.join(", ")
            )
        })
    }

    pub fn serves(&self, channel: Channel, method: &str) -> bool {
        let table = match channel {
            Channel::Agent => self.agent_channel,
            Channel::Task => self.task_channel,
        };
        table.contains(&method)
    }
}

/// The host's IPC channels (the bridge maps service names to these via the protocol descriptor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Agent,
    Task,
}

impl Channel {
    pub fn from_name(name: &str) -> Option<Channel> {
        match name {
            "zcode-agent" => Some(Channel::Agent),
            "zcode-task" => Some(Channel::Task),
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
        let future = install_with("resources/app.asar/package.json", r#"{"version":"3.12.3"}"#);
        let error = Profile::detect(future.path()).unwrap_err();
        assert!(error.contains("no simulator profile for ZCode 3.12.3"), "{error}");
        let empty = tempfile::tempdir().unwrap();
        assert!(Profile::detect(empty.path()).unwrap_err().contains("no app.asar/package.json"));
    }

    #[test]
    fn channel_tables_split_agent_and_task_methods() {
        assert!(ZCODE_3_11_2.serves(Channel::Agent, "readWorkspaceState"));
        assert!(!ZCODE_3_11_2.serves(Channel::Agent, "stopGeneration"));
        assert!(ZCODE_3_11_2.serves(Channel::Task, "stopGeneration"));
    }
}
