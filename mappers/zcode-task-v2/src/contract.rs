//! Which installs this mapper drives (ZCode 3.12.3 with CLI 0.16.5: the simulator's files, and
//! any real release listed in [`REAL_RELEASES`]), and how their host service is started.
//!
//! The launch differs from 3.11.2 in two ways: the bridge allowlists the `model-selection`
//! service, and the host needs the built-in provider config that ZCode bundles beside its host
//! archive (`<resources>/config/provider/zcode-builtin.json`, pinned like the host files), which
//! the bridge passes on in `init-local`.

use zcode_mapper_sdk::contract::{Contract, LaunchPlan, MapperError, VerifiedInstall};
use zcode_task::install::{
    self, CREDENTIALS_FILE, HostRelease, cli_version_probe, file_for_role, verified_release,
};
use zcode_task::launch::{self, Bridge};

mod simulator {
    include!(concat!(env!("OUT_DIR"), "/simulator_hashes.rs"));
}

pub const PROTOCOL_ID: &str = "zcode-task-v2";
pub const SIMULATED_RELEASE_ID: &str = "zcode-sim-3.12.3";

const APP_VERSION: &str = "3.12.3";
const CLI_VERSION: &str = "0.16.5";
/// The built-in provider config, relative to the folder that holds the host archive.
pub const PROVIDER_CONFIG_ROLE: &str = "provider-config";
pub const PROVIDER_CONFIG_PATH: &str = "config/provider/zcode-builtin.json";

/// What the 3.12.3 bridge differs in (put in front of the shared core).
pub const BRIDGE_RELEASE: &str = include_str!("../bridge/release.js");
const SERVICE_CHANNELS: [(&str, &str); 3] =
    [("agent", "zcode-agent"), ("task", "zcode-task"), ("modelSelection", "model-selection")];

/// Real ZCode 3.12.3 releases this mapper has been verified against. Empty: no public source
/// gives the RPC module's path and export names of a 3.12.3 build, and a release is never
/// guessed (an unpinned file would need an identity the host reports, and this protocol reports
/// none). `docs/mapper-zcode-task-v2.md` ("Adding the real release") says how a user with a
/// real install fills in an entry from `zcode-acp doctor --json`.
pub const REAL_RELEASES: &[HostRelease] = &[];

/// The simulator's files, hashed at build time.
pub const SIMULATED: HostRelease = HostRelease {
    id: SIMULATED_RELEASE_ID,
    app_version: APP_VERSION,
    cli_version: CLI_VERSION,
    cli: simulator::SIM_CLI_SHA256,
    index: simulator::SIM_HOST_INDEX_SHA256,
    rpc_path: "out/host/chunk-KGXW6KHC.js",
    rpc: simulator::SIM_HOST_RPC_MODULE_SHA256,
    rpc_exports: ["g", "i", "j"],
    extra: &[(PROVIDER_CONFIG_ROLE, PROVIDER_CONFIG_PATH, simulator::SIM_PROVIDER_CONFIG_SHA256)],
    simulated: true,
};

fn releases() -> Vec<&'static HostRelease> {
    REAL_RELEASES.iter().chain([&SIMULATED]).collect()
}

pub fn contract() -> Contract {
    Contract {
        facts: Default::default(),
        protocol_id: PROTOCOL_ID.to_string(),
        description: "ZCode 3.12.3 (CLI 0.16.5) host service: Electron run as Node, NDJSON \
                      bridge, zcode-agent, zcode-task and model-selection channels, plan as an \
                      independent flag"
            .to_string(),
        layouts: install::layouts(),
        releases: releases().into_iter().map(HostRelease::release).collect(),
        cli_version_probe: cli_version_probe(),
        credentials_file: CREDENTIALS_FILE.to_string(),
        credential_sources: Vec::new(),
        // The task protocol has no fork.
        offers: Vec::new(),
    }
}

pub fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
    let release = verified_release(&releases(), install)?;
    let provider_config = file_for_role(install, PROVIDER_CONFIG_ROLE)?;
    let bridge = Bridge {
        protocol_id: PROTOCOL_ID,
        release_script: BRIDGE_RELEASE,
        service_channels: &SERVICE_CHANNELS,
        env: vec![("ZCODE_ACP_HOST_PROVIDER_CONFIG".to_string(), provider_config.to_string())],
    };
    launch::plan(install, release, bridge)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use serde_json::{Value, json};
    use zcode_mapper_sdk::contract::{LayoutKind, Os};

    use super::*;

    fn install(root: &str, resources: &str) -> VerifiedInstall {
        let archive = format!("{resources}/app.asar");
        VerifiedInstall {
            facts: Default::default(),
            install_root: root.to_string(),
            kind: LayoutKind::Desktop,
            executable: format!("{root}/zcode"),
            cli_entry: format!("{resources}/glm/zcode.cjs"),
            host_archive: archive.clone(),
            release_id: SIMULATED_RELEASE_ID.to_string(),
            app_version: "3.12.3".to_string(),
            cli_version: "0.16.5".to_string(),
            files: vec![
                ("cli".to_string(), format!("{resources}/glm/zcode.cjs")),
                ("host-index".to_string(), format!("{archive}/out/host/index.js")),
                ("host-rpc-module".to_string(), format!("{archive}/out/host/chunk-KGXW6KHC.js")),
                (
                    "provider-config".to_string(),
                    format!("{resources}/config/provider/zcode-builtin.json"),
                ),
            ],
            unpinned: Vec::new(),
            home: "/home/u".to_string(),
        }
    }

    fn sha256_hex(path: &Path) -> String {
        use sha2::{Digest, Sha256};
        let bytes = std::fs::read(path).unwrap();
        Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn accepts_zcode_3_12_3_with_cli_0_16_5_only() {
        let contract = contract();
        assert_eq!(contract.protocol_id, "zcode-task-v2");
        assert_eq!(contract.releases.len(), 1, "only the simulated release is shipped");
        let simulated = &contract.releases[0];
        assert_eq!(simulated.id, "zcode-sim-3.12.3");
        assert!(simulated.simulated && simulated.pinned());
        assert_eq!(
            (simulated.app_version.as_str(), simulated.cli_version.as_str()),
            ("3.12.3", "0.16.5")
        );
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let hash = |role: &str| {
            simulated.files.iter().find(|f| f.role == role).unwrap().sha256.clone().unwrap()
        };
        assert_eq!(hash("cli"), sha256_hex(&fixtures.join("fake-zcode-host/zcode.cjs")));
        assert_eq!(
            hash("host-index"),
            sha256_hex(&fixtures.join("fake-zcode-host/out/host/index.js"))
        );
        assert_eq!(
            hash("host-rpc-module"),
            sha256_hex(&fixtures.join("fake-zcode-host/out/host/chunk-KGXW6KHC.js"))
        );
        assert_eq!(
            hash("provider-config"),
            sha256_hex(&fixtures.join("fake-zcode-host-3.12/config/provider/zcode-builtin.json"))
        );
        let provider = simulated.files.iter().find(|f| f.role == "provider-config").unwrap();
        assert_eq!(provider.path, "config/provider/zcode-builtin.json");
        assert_eq!(simulated.files[2].required_exports, ["g", "i", "j"]);
        let linux = contract.desktop_layout(Os::Linux).unwrap();
        assert_eq!(
            (linux.executable.as_str(), linux.host_archive.as_str()),
            ("zcode", "resources/app.asar")
        );
        assert_eq!(contract.cli_version_probe.args, ["{cli-entry}", "version"]);
    }

    #[test]
    fn launches_the_3_12_bridge_with_the_provider_config() {
        let plan = launch_plan(&install("/opt/ZCode", "/opt/ZCode/resources")).unwrap();
        assert_eq!(plan.args, ["-e", &zcode_task::bridge::script(BRIDGE_RELEASE)]);
        assert!(BRIDGE_RELEASE.contains("zcodeBuiltinProviderConfigFilePath"));
        let env: HashMap<_, _> = plan.env.iter().cloned().collect();
        assert_eq!(
            env["ZCODE_ACP_HOST_PROVIDER_CONFIG"],
            "/opt/ZCode/resources/config/provider/zcode-builtin.json"
        );
        let protocol: Value = serde_json::from_str(&env["ZCODE_ACP_HOST_PROTOCOL"]).unwrap();
        assert_eq!(
            protocol["serviceChannels"],
            json!({"agent": "zcode-agent", "task": "zcode-task", "modelSelection": "model-selection"})
        );
        assert_eq!(protocol["operations"]["cancelGeneration"]["method"], "stopGeneration");
        let artifact: Value = serde_json::from_str(&env["ZCODE_ACP_HOST_ARTIFACT"]).unwrap();
        assert_eq!(artifact["id"], "zcode-sim-3.12.3");
        assert_eq!(artifact["protocolId"], "zcode-task-v2");
        assert_eq!(artifact["hostIndexSha256"], simulator::SIM_HOST_INDEX_SHA256);

        let mac = install("/Applications/ZCode.app", "/Applications/ZCode.app/Contents/Resources");
        let env: HashMap<_, _> = launch_plan(&mac).unwrap().env.into_iter().collect();
        assert_eq!(
            env["ZCODE_ACP_HOST_PROVIDER_CONFIG"],
            "/Applications/ZCode.app/Contents/Resources/config/provider/zcode-builtin.json"
        );
    }

    #[test]
    fn refuses_releases_of_other_generations_and_missing_files() {
        let mut other = install("/opt/ZCode", "/opt/ZCode/resources");
        other.release_id = "zcode-sim-3.11.2".to_string();
        assert_eq!(
            launch_plan(&other).unwrap_err().message,
            "Release zcode-sim-3.11.2 is not part of this mapper's contract"
        );
        let mut missing = install("/opt/ZCode", "/opt/ZCode/resources");
        missing.files.retain(|(role, _)| role != "provider-config");
        assert_eq!(
            launch_plan(&missing).unwrap_err().message,
            "The verified install has no `provider-config` file"
        );
    }
}
