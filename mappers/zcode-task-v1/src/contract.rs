//! Which installs this mapper drives (ZCode 3.11.2 with CLI 0.16.5, and the simulator's files),
//! and how their host service is started.

use zcode_mapper_sdk::contract::{Contract, LaunchPlan, MapperError, VerifiedInstall};
use zcode_task::install::{
    self, CREDENTIALS_FILE, HostRelease, cli_version_probe, verified_release,
};
use zcode_task::launch::{self, Bridge};

#[allow(dead_code)] // the provider config is a 3.12 file
mod simulator {
    include!(concat!(env!("OUT_DIR"), "/simulator_hashes.rs"));
}

pub const PROTOCOL_ID: &str = "zcode-task-v1";
pub const REAL_RELEASE_ID: &str = "zcode-host-3.11.2";
pub const SIMULATED_RELEASE_ID: &str = "zcode-sim-3.11.2";

const APP_VERSION: &str = "3.11.2";
const CLI_VERSION: &str = "0.16.5";
const RPC_PATH: &str = "out/host/chunk-KGXW6KHC.js";
/// Export names of the RPC module: message-port protocol, channel client, service factory.
const RPC_EXPORTS: [&str; 3] = ["g", "i", "j"];

/// What the 3.11.2 bridge differs in (put in front of the shared core).
pub const BRIDGE_RELEASE: &str = include_str!("../bridge/release.js");
const SERVICE_CHANNELS: [(&str, &str); 2] = [("agent", "zcode-agent"), ("task", "zcode-task")];

/// ZCode 3.11.2 as released (hashes: docs/mapper-zcode-task-v1.md §1).
pub const REAL: HostRelease = HostRelease {
    id: REAL_RELEASE_ID,
    app_version: APP_VERSION,
    cli_version: CLI_VERSION,
    cli: "e9f1868c0fdb863537ed910ee3828b9be96b8c2fd805473f63b439e1113266b8",
    index: "30911a90dadc5c384959d00d95ccc70c8cf38c74a9cb99c3168b0897d046d215",
    rpc_path: RPC_PATH,
    rpc: "e66203598b60d8728260ad7631f295f9d6deb8276b06e8f0cab8776773c75b31",
    rpc_exports: RPC_EXPORTS,
    extra: &[],
    simulated: false,
};

/// The simulator's files, hashed at build time.
pub const SIMULATED: HostRelease = HostRelease {
    id: SIMULATED_RELEASE_ID,
    app_version: APP_VERSION,
    cli_version: CLI_VERSION,
    cli: simulator::SIM_CLI_SHA256,
    index: simulator::SIM_HOST_INDEX_SHA256,
    rpc_path: RPC_PATH,
    rpc: simulator::SIM_HOST_RPC_MODULE_SHA256,
    rpc_exports: RPC_EXPORTS,
    extra: &[],
    simulated: true,
};

const RELEASES: [&HostRelease; 2] = [&REAL, &SIMULATED];

pub fn contract() -> Contract {
    Contract {
        facts: Default::default(),
        protocol_id: PROTOCOL_ID.to_string(),
        description: "ZCode 3.11.2 (CLI 0.16.5) host service: Electron run as Node, NDJSON \
                      bridge, zcode-agent and zcode-task channels"
            .to_string(),
        layouts: install::layouts(),
        releases: RELEASES.iter().map(|release| release.release()).collect(),
        cli_version_probe: cli_version_probe(),
        credentials_file: CREDENTIALS_FILE.to_string(),
        credential_sources: Vec::new(),
        // The task protocol has no fork.
        offers: Vec::new(),
    }
}

pub fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
    let release = verified_release(&RELEASES, install)?;
    let bridge = Bridge {
        protocol_id: PROTOCOL_ID,
        release_script: BRIDGE_RELEASE,
        service_channels: &SERVICE_CHANNELS,
        env: Vec::new(),
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

    pub(crate) fn install(release_id: &str) -> VerifiedInstall {
        VerifiedInstall {
            facts: Default::default(),
            install_root: "/opt/ZCode".to_string(),
            kind: LayoutKind::Desktop,
            executable: "/opt/ZCode/zcode".to_string(),
            cli_entry: "/opt/ZCode/resources/glm/zcode.cjs".to_string(),
            host_archive: "/opt/ZCode/resources/app.asar".to_string(),
            release_id: release_id.to_string(),
            app_version: "3.11.2".to_string(),
            cli_version: "0.16.5".to_string(),
            files: vec![
                ("cli".to_string(), "/opt/ZCode/resources/glm/zcode.cjs".to_string()),
                (
                    "host-index".to_string(),
                    "/opt/ZCode/resources/app.asar/out/host/index.js".to_string(),
                ),
                (
                    "host-rpc-module".to_string(),
                    "/opt/ZCode/resources/app.asar/out/host/chunk-KGXW6KHC.js".to_string(),
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

    fn pins(contract: &Contract, release: usize) -> Vec<(String, String, String)> {
        contract.releases[release]
            .files
            .iter()
            .map(|f| (f.role.clone(), f.path.clone(), f.sha256.clone().unwrap()))
            .collect()
    }

    #[test]
    fn pins_the_real_and_simulated_releases() {
        let contract = contract();
        assert_eq!(contract.protocol_id, "zcode-task-v1");
        assert_eq!(contract.releases.len(), 2);
        let real = &contract.releases[0];
        assert_eq!(real.id, "zcode-host-3.11.2");
        assert!(!real.simulated && real.identity.is_none());
        assert_eq!(real.kind, LayoutKind::Desktop);
        assert_eq!((real.app_version.as_str(), real.cli_version.as_str()), ("3.11.2", "0.16.5"));
        let real_pins = pins(&contract, 0);
        assert_eq!(real_pins[0].0, "cli");
        assert_eq!(real_pins[0].1, "glm/zcode.cjs");
        assert!(real_pins[0].2.starts_with("e9f1868c"));
        assert_eq!(real_pins[1].1, "app.asar/out/host/index.js");
        assert!(real_pins[1].2.starts_with("30911a90"));
        assert_eq!(real_pins[2].0, "host-rpc-module");
        assert_eq!(real_pins[2].1, "app.asar/out/host/chunk-KGXW6KHC.js");
        assert!(real_pins[2].2.starts_with("e6620359"));
        assert_eq!(real.files[2].required_exports, ["g", "i", "j"]);

        let simulated = &contract.releases[1];
        assert_eq!(simulated.id, "zcode-sim-3.11.2");
        assert!(simulated.simulated);
        let fixtures =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fake-zcode-host");
        let sim_pins = pins(&contract, 1);
        assert_eq!(sim_pins[0].2, sha256_hex(&fixtures.join("zcode.cjs")));
        assert_eq!(sim_pins[1].2, sha256_hex(&fixtures.join("out/host/index.js")));
        assert_eq!(sim_pins[2].2, sha256_hex(&fixtures.join("out/host/chunk-KGXW6KHC.js")));
        assert_eq!(contract.cli_version_probe.args, ["{cli-entry}", "version"]);
        assert_eq!(contract.credentials_file, ".zcode/v2/credentials.json");
        assert!(contract.credential_sources.is_empty());
        assert!(
            contract.desktop_layout(Os::Linux).is_some() && contract.runtime_layout().is_none()
        );
    }

    #[test]
    fn launches_the_bridge_with_descriptors() {
        let plan = launch_plan(&install(REAL_RELEASE_ID)).unwrap();
        assert_eq!(plan.args, ["-e", &zcode_task::bridge::script(BRIDGE_RELEASE)]);
        assert!(plan.args[1].starts_with(BRIDGE_RELEASE));
        assert_eq!(plan.cwd, "/opt/ZCode");
        assert!(plan.stdin_preamble.is_empty() && !plan.needs_handshake);
        assert!(plan.env_remove.is_empty());
        let env: HashMap<_, _> = plan.env.iter().cloned().collect();
        assert_eq!(env["ELECTRON_RUN_AS_NODE"], "1");
        assert_eq!(env["ZCODE_ACP_HOST_INDEX"], "/opt/ZCode/resources/app.asar/out/host/index.js");
        assert!(env["ZCODE_ACP_HOST_RPC_MODULE"].ends_with("chunk-KGXW6KHC.js"));
        assert!(!env.contains_key("ZCODE_ACP_HOST_PROVIDER_CONFIG"));
        let artifact: Value = serde_json::from_str(&env["ZCODE_ACP_HOST_ARTIFACT"]).unwrap();
        assert_eq!(artifact["id"], "zcode-host-3.11.2");
        assert_eq!(artifact["protocolId"], "zcode-task-v1");
        assert_eq!(artifact["hostRpcModuleSha256"], REAL.rpc);
        assert_eq!(artifact["rpcExports"], json!({"protocol": "g", "client": "i", "service": "j"}));
        let protocol: Value = serde_json::from_str(&env["ZCODE_ACP_HOST_PROTOCOL"]).unwrap();
        assert_eq!(
            protocol["serviceChannels"],
            json!({"agent": "zcode-agent", "task": "zcode-task"})
        );
        assert_eq!(
            protocol["operations"]["respondPermission"],
            json!({"method": "respondPermission", "service": "task", "sessionParameter": "taskId"})
        );
        let simulated = launch_plan(&install(SIMULATED_RELEASE_ID)).unwrap();
        let env: HashMap<_, _> = simulated.env.into_iter().collect();
        let artifact: Value = serde_json::from_str(&env["ZCODE_ACP_HOST_ARTIFACT"]).unwrap();
        assert_eq!(artifact["hostIndexSha256"], simulator::SIM_HOST_INDEX_SHA256);
    }

    #[test]
    fn refuses_unknown_releases_and_missing_files() {
        let error = launch_plan(&install("zcode-host-9.9.9")).unwrap_err();
        assert_eq!(error.message, "Release zcode-host-9.9.9 is not part of this mapper's contract");
        let mut missing = install(REAL_RELEASE_ID);
        missing.files.pop();
        assert_eq!(
            launch_plan(&missing).unwrap_err().message,
            "The verified install has no `host-rpc-module` file"
        );
        let mut runtime = install(REAL_RELEASE_ID);
        runtime.kind = LayoutKind::Runtime;
        assert_eq!(
            launch_plan(&runtime).unwrap_err().message,
            "The task protocol runs only in a desktop install"
        );
    }
}
