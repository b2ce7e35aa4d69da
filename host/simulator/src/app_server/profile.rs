//! App-server profiles: one per simulated Desktop release whose bundled Agent (`zcode.cjs`) is
//! driven over `app-server --stdio`.
//!
//! Releases differ only in the features listed here; the server and the turn runner branch on
//! these features, never on a version string. Where no public source says what changed in a
//! release, the profile repeats its predecessor and `docs/simulator.md` §12 says so.

/// The bundled Agent's CLI version family (all of them speak the app-server generation; the
/// glossary's "generation" is the protocol, not the CLI line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CliFamily {
    /// CLI 0.16.9 as bundled with Desktop 3.14.x (before the 3.15 deltas).
    Cli0169,
    /// CLI 0.16.9 with the Desktop 3.15 deltas (the public 3.15.1 source).
    Cli0169Desktop315,
    /// CLI 0.17.x (Desktop 3.16.2 and later): `session/list` no longer takes `includeArchived`.
    Cli017,
}

/// One simulated Desktop release.
#[derive(Debug)]
pub struct AppServerProfile {
    /// Stable profile name (`desktop-<app version>`), e.g. for `--simulate-version`.
    pub name: &'static str,
    pub app_version: &'static str,
    /// What `zcode.cjs --version` prints.
    pub cli_version: &'static str,
    pub cli_family: CliFamily,
}

impl AppServerProfile {
    /// Desktop 3.15 deltas are in (guarded mode, MCP elicitation, `session/list` `sessionIds`,
    /// start-up storage frames, the `version` subcommand, the legacy deletions...).
    pub fn has_315_deltas(&self) -> bool {
        self.cli_family != CliFamily::Cli0169
    }

    /// `session/list` still accepts `includeArchived` (removed in CLI 0.17.0).
    pub fn list_accepts_include_archived(&self) -> bool {
        self.cli_family != CliFamily::Cli017
    }

    /// `session/close` also deletes the persisted session: the 3.15.1 `server.ts` avoids the
    /// call at shutdown for that reason. Older builds were observed keeping the history
    /// (reference APP §4.1), so 3.14 profiles keep it.
    pub fn close_deletes_history(&self) -> bool {
        self.has_315_deltas()
    }

    /// Start Plan model requests need a captcha the Desktop renderer solves; 3.14.4 switched
    /// that off (releases §2: feed, cask and plugin notes).
    pub fn start_plan_needs_captcha(&self) -> bool {
        self.app_version == "3.14.3"
    }

    /// Modes `session/setMode` and `session/create` accept.
    pub fn session_modes(&self) -> &'static [&'static str] {
        if self.has_315_deltas() { &MODES_315 } else { &MODES_314 }
    }

    /// Modes V4 `switchCollaborationMode` accepts (never `auto`).
    pub fn collaboration_modes(&self) -> &'static [&'static str] {
        if self.has_315_deltas() { &COLLABORATION_MODES_315 } else { &COLLABORATION_MODES_314 }
    }

    /// Legacy methods the 3.15 source deleted: still served (as not simulated) before 3.15,
    /// `Method not found` from 3.15 on.
    pub fn serves_deleted_legacy(&self, method: &str) -> bool {
        !self.has_315_deltas() && DELETED_IN_315.contains(&method)
    }
}

const MODES_314: [&str; 5] = ["plan", "build", "edit", "yolo", "auto"];
const MODES_315: [&str; 6] = ["plan", "build", "edit", "yolo", "guarded", "auto"];
const COLLABORATION_MODES_314: [&str; 4] = ["build", "edit", "plan", "yolo"];
const COLLABORATION_MODES_315: [&str; 5] = ["build", "edit", "plan", "yolo", "guarded"];

/// Deleted from the legacy vocabulary by the 3.15.1 source (`zcode-protocol/index.ts` header).
/// (`session/steer`, `session/rewind` and `session/rewindCascade` were gone already in 0.16,
/// reference APP §4.1, so no profile serves them.)
pub const DELETED_IN_315: [&str; 6] = [
    "session/previewFileRewind",
    "session/applyFileRewind",
    "prompt/enhance",
    "prompt/enhanceStream",
    "prompt/cancelEnhance",
    "plugins/marketplace/list",
];

const fn profile(
    name: &'static str,
    app_version: &'static str,
    cli_version: &'static str,
    cli_family: CliFamily,
) -> AppServerProfile {
    AppServerProfile { name, app_version, cli_version, cli_family }
}

/// Every app-server release the simulator plays, oldest first.
pub const PROFILES: &[AppServerProfile] = &[
    profile("desktop-3.14.3", "3.14.3", "0.16.9", CliFamily::Cli0169),
    profile("desktop-3.14.4", "3.14.4", "0.16.9", CliFamily::Cli0169),
    profile("desktop-3.14.5", "3.14.5", "0.16.9", CliFamily::Cli0169),
    profile("desktop-3.15.1", "3.15.1", "0.16.9", CliFamily::Cli0169Desktop315),
    profile("desktop-3.15.3", "3.15.3", "0.16.9", CliFamily::Cli0169Desktop315),
    profile("desktop-3.16.2", "3.16.2", "0.17.0", CliFamily::Cli017),
    profile("desktop-3.17.1", "3.17.1", "0.17.1", CliFamily::Cli017),
    profile("desktop-3.17.2", "3.17.2", "0.17.1", CliFamily::Cli017),
    // Not public: the CLI version of 3.18.x and 4.0.0 is the simulator's choice (§12).
    profile("desktop-3.18.2", "3.18.2", "0.17.2", CliFamily::Cli017),
    // Public only as a package of the official AppImage (gentoo-zh `dev-util/zcode-bin-3.19.1`);
    // its CLI version is not: the 0.17 line is assumed, 3.18.2's 0.17.2 (§12.1).
    profile("desktop-3.19.1", "3.19.1", "0.17.2", CliFamily::Cli017),
    profile("desktop-4.0.0", "4.0.0", "0.18.0", CliFamily::Cli017),
];

/// The profile whose Desktop app version is `app_version`.
pub fn for_app_version(app_version: &str) -> Option<&'static AppServerProfile> {
    PROFILES.iter().find(|profile| profile.app_version == app_version)
}

/// The profile named `name` (`desktop-3.18.2`).
pub fn by_name(name: &str) -> Option<&'static AppServerProfile> {
    PROFILES.iter().find(|profile| profile.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_versions_are_unique_and_stable() {
        for (index, profile) in PROFILES.iter().enumerate() {
            assert_eq!(profile.name, format!("desktop-{}", profile.app_version));
            assert!(PROFILES[index + 1..].iter().all(|other| other.name != profile.name));
            assert_eq!(for_app_version(profile.app_version).unwrap().name, profile.name);
            assert_eq!(by_name(profile.name).unwrap().app_version, profile.app_version);
        }
        assert!(for_app_version("3.11.2").is_none(), "host profiles stay in crate::task::profile");
    }

    #[test]
    fn deltas_follow_the_cli_family() {
        let old = by_name("desktop-3.14.5").unwrap();
        let mid = by_name("desktop-3.15.1").unwrap();
        let new = by_name("desktop-3.16.2").unwrap();
        assert!(!old.has_315_deltas() && mid.has_315_deltas() && new.has_315_deltas());
        assert!(old.list_accepts_include_archived() && mid.list_accepts_include_archived());
        assert!(!new.list_accepts_include_archived());
        assert!(!old.session_modes().contains(&"guarded"));
        assert!(new.collaboration_modes().contains(&"guarded"));
        assert!(!new.collaboration_modes().contains(&"auto"));
        assert!(old.serves_deleted_legacy("prompt/enhance"));
        assert!(!mid.serves_deleted_legacy("prompt/enhance"));
        assert!(!old.serves_deleted_legacy("session/steer"));
    }
}
