//! Runtime profiles: what one zcode-runtime archive (Services Server + Agent, run by plain
//! Node) looks like from the outside. The profile is chosen by `zcode/package.json`'s
//! `version`; the server branches on a profile's features, never on a version string.

/// One simulated runtime release.
#[derive(Debug)]
pub struct RuntimeProfile {
    /// The name `--simulate-version` takes, `runtime-<version>`.
    pub name: &'static str,
    /// `zcode/package.json` `version`, printed by `zcode-server.cjs --version` and the hello.
    pub server_version: &'static str,
    /// What `agent/zcode.cjs --version` prints.
    pub agent_version: &'static str,
    /// What `node --version` prints (without the `v`).
    pub node_version: &'static str,
    /// The public source commit the release was built from.
    pub source_commit: &'static str,
    /// Values `switchCollaborationMode` accepts.
    pub collaboration_modes: &'static [&'static str],
}

/// `switchCollaborationMode` before 3.15 (`guarded` did not exist yet).
const MODES_3_14: &[&str] = &["build", "edit", "plan", "yolo"];
/// From 3.15.1 on (`packages/shared/src/zcode-protocol-v4/command.ts`).
const MODES_WITH_GUARDED: &[&str] = &["build", "edit", "plan", "yolo", "guarded"];

/// The Node pin of the plugin's managed runtime (3.14.3); the later archives name no pin.
const NODE: &str = "24.21.0";

pub const RUNTIME_3_14_3: RuntimeProfile = RuntimeProfile {
    name: "runtime-3.14.3",
    server_version: "3.14.3",
    agent_version: "0.16.9",
    node_version: NODE,
    source_commit: "29628c9acdb81b703bbd4080c207a0e7ce5e276e",
    collaboration_modes: MODES_3_14,
};

pub const RUNTIME_3_16_2: RuntimeProfile = RuntimeProfile {
    name: "runtime-3.16.2",
    server_version: "3.16.2",
    agent_version: "0.17.0",
    node_version: NODE,
    source_commit: "3c5b227649371507ddc4eb46ac5133afe6db1cab",
    collaboration_modes: MODES_WITH_GUARDED,
};

pub const RUNTIME_3_17_2: RuntimeProfile = RuntimeProfile {
    name: "runtime-3.17.2",
    server_version: "3.17.2",
    agent_version: "0.17.1",
    node_version: NODE,
    source_commit: "a9fe401eede6e6e5e01be9048679c206fe6f02d9",
    collaboration_modes: MODES_WITH_GUARDED,
};

/// 4.0.0's bundled Agent version is not public; `0.18.0` is the simulator's choice.
pub const RUNTIME_4_0_0: RuntimeProfile = RuntimeProfile {
    name: "runtime-4.0.0",
    server_version: "4.0.0",
    agent_version: "0.18.0",
    node_version: NODE,
    source_commit: "a4b4445141eb7d3b3e99eada9292775383bfc44e",
    collaboration_modes: MODES_WITH_GUARDED,
};

/// Every runtime release the simulator can play, oldest first.
pub const RUNTIME_PROFILES: &[&RuntimeProfile] =
    &[&RUNTIME_3_14_3, &RUNTIME_3_16_2, &RUNTIME_3_17_2, &RUNTIME_4_0_0];

impl RuntimeProfile {
    /// The profile of a `zcode-runtime` package version.
    pub fn for_version(version: &str) -> Result<&'static RuntimeProfile, String> {
        RUNTIME_PROFILES
            .iter()
            .copied()
            .find(|profile| profile.server_version == version)
            .ok_or_else(|| {
                let supported: Vec<&str> =
                    RUNTIME_PROFILES.iter().map(|profile| profile.server_version).collect();
                format!(
                    "no simulator profile for zcode-runtime {version} (supported: {})",
                    supported.join(", ")
                )
            })
    }

    /// The profile `--simulate-version <name>` names.
    pub fn named(name: &str) -> Option<&'static RuntimeProfile> {
        RUNTIME_PROFILES.iter().copied().find(|profile| profile.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_found_by_version_and_name() {
        assert_eq!(RuntimeProfile::for_version("4.0.0").unwrap().name, "runtime-4.0.0");
        assert_eq!(RuntimeProfile::named("runtime-3.14.3").unwrap().agent_version, "0.16.9");
        let error = RuntimeProfile::for_version("3.15.1").unwrap_err();
        assert!(error.contains("supported: 3.14.3, 3.16.2, 3.17.2, 4.0.0"), "{error}");
        assert!(RuntimeProfile::named("4.0.0").is_none());
    }

    #[test]
    fn guarded_arrives_after_3_14() {
        assert!(!RUNTIME_3_14_3.collaboration_modes.contains(&"guarded"));
        assert!(RUNTIME_3_16_2.collaboration_modes.contains(&"guarded"));
        assert!(
            RUNTIME_PROFILES.iter().all(|profile| profile.collaboration_modes.contains(&"plan"))
        );
    }
}
