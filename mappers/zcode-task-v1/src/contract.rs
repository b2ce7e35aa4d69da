//! Which installs this mapper drives (ZCode 3.11.2 with CLI 0.16.5, and the simulator's files),
//! and how their host service, login and logout are started.

use serde_json::{Value, json};
use zcode_contract::{
    Artifact, AuthCommand, Contract, FileCheck, LaunchPlan, MapperError, VerifiedInstall,
};
use zcode_host_common::install::{
    self, CREDENTIALS_FILE, HOST_INDEX_PATH, HOST_INDEX_ROLE, HOST_RPC_ROLE, METADATA,
    METADATA_ENTRY_KEY, METADATA_PLATFORM_KEY, cli_version_probe, file_for_role, pairs,
    relative_executable,
};
use zcode_host_common::json::internal;

mod simulator {
    include!(concat!(env!("OUT_DIR"), "/simulator_hashes.rs"));
}

pub const PROTOCOL_ID: &str = "zcode-task-v1";
pub const REAL_ARTIFACT_ID: &str = "zcode-host-3.11.2";
pub const SIMULATED_ARTIFACT_ID: &str = "zcode-sim-3.11.2";

const APP_VERSION: &str = "3.11.2";
const CLI_VERSION: &str = "0.16.5";
const HOST_RPC_PATH: &str = "out/host/chunk-KGXW6KHC.js";
/// Export names of the RPC module: message-port protocol, channel client, service factory.
const RPC_EXPORTS: [(&str, &str); 3] = [("protocol", "g"), ("client", "i"), ("service", "j")];

/// The script the host executable runs (`-e`): it starts the host worker and speaks NDJSON.
pub const BRIDGE_SCRIPT: &str = include_str!("../bridge/bridge.js");

struct ArtifactHashes {
    id: &'static str,
    cli: &'static str,
    index: &'static str,
    rpc: &'static str,
    simulated: bool,
}

const REAL: ArtifactHashes = ArtifactHashes {
    id: REAL_ARTIFACT_ID,
    cli: "e9f1868c0fdb863537ed910ee3828b9be96b8c2fd805473f63b439e1113266b8",
    index: "30911a90dadc5c384959d00d95ccc70c8cf38c74a9cb99c3168b0897d046d215",
    rpc: "e66203598b60d8728260ad7631f295f9d6deb8276b06e8f0cab8776773c75b31",
    simulated: false,
};

const SIMULATED: ArtifactHashes = ArtifactHashes {
    id: SIMULATED_ARTIFACT_ID,
    cli: simulator::SIM_CLI_SHA256,
    index: simulator::SIM_HOST_INDEX_SHA256,
    rpc: simulator::SIM_HOST_RPC_MODULE_SHA256,
    simulated: true,
};

fn artifact_hashes(id: &str) -> Option<&'static ArtifactHashes> {
    [&REAL, &SIMULATED].into_iter().find(|hashes| hashes.id == id)
}

fn artifact(hashes: &ArtifactHashes) -> Artifact {
    let required_exports = RPC_EXPORTS.iter().map(|(_, name)| name.to_string()).collect();
    Artifact {
        id: hashes.id.to_string(),
        app_version: APP_VERSION.to_string(),
        cli_version: CLI_VERSION.to_string(),
        cli_sha256: hashes.cli.to_string(),
        files: vec![
            FileCheck {
                role: HOST_INDEX_ROLE.to_string(),
                path: HOST_INDEX_PATH.to_string(),
                sha256: hashes.index.to_string(),
                required_exports: Vec::new(),
            },
            FileCheck {
                role: HOST_RPC_ROLE.to_string(),
                path: HOST_RPC_PATH.to_string(),
                sha256: hashes.rpc.to_string(),
                required_exports,
            },
        ],
        simulated: hashes.simulated,
    }
}

pub fn contract() -> Contract {
    Contract {
        protocol_id: PROTOCOL_ID.to_string(),
        description:
            "ZCode 3.11.2 (CLI 0.16.5) host service: Electron run as Node, NDJSON bridge, \
                      zcode-agent and zcode-task channels"
                .to_string(),
        layouts: install::layouts(),
        metadata: pairs(&METADATA),
        metadata_platform_key: METADATA_PLATFORM_KEY.to_string(),
        metadata_entry_key: METADATA_ENTRY_KEY.to_string(),
        artifacts: vec![artifact(&REAL), artifact(&SIMULATED)],
        cli_version_probe: cli_version_probe(),
        credentials_file: CREDENTIALS_FILE.to_string(),
    }
}

/// `ZCODE_ACP_HOST_ARTIFACT`: the file identity the bridge checks before importing anything.
fn artifact_descriptor(hashes: &ArtifactHashes) -> Value {
    let exports: serde_json::Map<String, Value> =
        RPC_EXPORTS.iter().map(|(role, name)| (role.to_string(), json!(name))).collect();
    json!({
        "id": hashes.id,
        "appVersion": APP_VERSION,
        "cliVersion": CLI_VERSION,
        "cliSha256": hashes.cli,
        "protocolId": PROTOCOL_ID,
        "hostIndexRelativePath": HOST_INDEX_PATH,
        "hostRpcModuleRelativePath": HOST_RPC_PATH,
        "hostIndexSha256": hashes.index,
        "hostRpcModuleSha256": hashes.rpc,
        "rpcExports": exports,
    })
}

/// `ZCODE_ACP_HOST_PROTOCOL`: service channels and the task operations the bridge allowlists.
fn protocol_descriptor() -> Value {
    let operation =
        |method: &str| json!({"method": method, "service": "task", "sessionParameter": "taskId"});
    json!({
        "id": PROTOCOL_ID,
        "serviceChannels": {"agent": "zcode-agent", "task": "zcode-task"},
        "operations": {
            "cancelGeneration": operation("stopGeneration"),
            "respondStructuredInput": operation("respondElicitation"),
            "respondPermission": operation("respondPermission"),
        },
    })
}

pub fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
    let hashes = artifact_hashes(&install.artifact_id).ok_or_else(|| {
        internal(format!("Artifact {} is not part of this mapper's contract", install.artifact_id))
    })?;
    let env = vec![
        ("ELECTRON_RUN_AS_NODE".to_string(), "1".to_string()),
        ("ZCODE_ACP_HOST_INDEX".to_string(), file_for_role(install, HOST_INDEX_ROLE)?.to_string()),
        (
            "ZCODE_ACP_HOST_RPC_MODULE".to_string(),
            file_for_role(install, HOST_RPC_ROLE)?.to_string(),
        ),
        ("ZCODE_ACP_HOST_ARTIFACT".to_string(), artifact_descriptor(hashes).to_string()),
        ("ZCODE_ACP_HOST_PROTOCOL".to_string(), protocol_descriptor().to_string()),
    ];
    Ok(LaunchPlan {
        program: relative_executable(install)?,
        args: vec!["-e".to_string(), BRIDGE_SCRIPT.to_string()],
        env,
        cwd: install.install_root.clone(),
        stdin_preamble: Vec::new(),
        needs_handshake: false,
    })
}

pub fn auth_plan(
    install: &VerifiedInstall,
    command: AuthCommand,
) -> Result<LaunchPlan, MapperError> {
    install::auth_plan(install, command)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use zcode_contract::Os;

    use super::*;

    fn install(artifact_id: &str) -> VerifiedInstall {
        VerifiedInstall {
            install_root: "/opt/ZCode".to_string(),
            executable: "/opt/ZCode/zcode".to_string(),
            cli_entry: "/opt/ZCode/resources/glm/zcode.cjs".to_string(),
            host_archive: "/opt/ZCode/resources/app.asar".to_string(),
            artifact_id: artifact_id.to_string(),
            app_version: "3.11.2".to_string(),
            cli_version: "0.16.5".to_string(),
            files: vec![
                (
                    "host-index".to_string(),
                    "/opt/ZCode/resources/app.asar/out/host/index.js".to_string(),
                ),
                (
                    "host-rpc-module".to_string(),
                    "/opt/ZCode/resources/app.asar/out/host/chunk-KGXW6KHC.js".to_string(),
                ),
            ],
        }
    }

    fn sha256_hex(path: &Path) -> String {
        use sha2::{Digest, Sha256};
        let bytes = std::fs::read(path).unwrap();
        Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn describes_the_real_and_simulated_artifacts() {
        let contract = contract();
        assert_eq!(contract.protocol_id, "zcode-task-v1");
        assert_eq!(contract.artifacts.len(), 2);
        let real = &contract.artifacts[0];
        assert_eq!(real.id, "zcode-host-3.11.2");
        assert!(!real.simulated);
        assert_eq!((real.app_version.as_str(), real.cli_version.as_str()), ("3.11.2", "0.16.5"));
        assert!(real.cli_sha256.starts_with("e9f1868c"));
        assert!(real.files[0].sha256.starts_with("30911a90"));
        assert_eq!(real.files[1].role, "host-rpc-module");
        assert_eq!(real.files[1].path, "out/host/chunk-KGXW6KHC.js");
        assert!(real.files[1].sha256.starts_with("e6620359"));
        assert_eq!(real.files[1].required_exports, ["g", "i", "j"]);
        let simulated = &contract.artifacts[1];
        assert_eq!(simulated.id, "zcode-sim-3.11.2");
        assert!(simulated.simulated);
        let fixtures =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fake-zcode-host");
        assert_eq!(simulated.cli_sha256, sha256_hex(&fixtures.join("zcode.cjs")));
        assert_eq!(simulated.files[0].sha256, sha256_hex(&fixtures.join("out/host/index.js")));
        assert_eq!(
            simulated.files[1].sha256,
            sha256_hex(&fixtures.join("out/host/chunk-KGXW6KHC.js"))
        );
        assert_eq!(simulated.files[1].required_exports, ["g", "i", "j"]);
    }

    #[test]
    fn lays_out_each_os_as_zcode_ships_it() {
        let contract = contract();
        let mac = contract.layout(Os::Macos).unwrap();
        assert_eq!(
            mac.executable,
            "Contents/Frameworks/ZCode Helper.app/Contents/MacOS/ZCode Helper"
        );
        assert_eq!(mac.cli_entry, "Contents/Resources/glm/zcode.cjs");
        assert_eq!(mac.metadata, "Contents/Resources/glm/.node-bundle-meta.json");
        assert_eq!(mac.host_archive, "Contents/Resources/app.asar");
        let linux = contract.layout(Os::Linux).unwrap();
        assert_eq!(linux.executable, "zcode");
        assert_eq!(linux.cli_entry, "resources/glm/zcode.cjs");
        let windows = contract.layout(Os::Windows).unwrap();
        assert_eq!(windows.executable, "ZCode.exe");
        assert_eq!(windows.host_archive, "resources/app.asar");
        assert_eq!(
            contract.metadata,
            pairs(&[
                ("runtime", "electron-node"),
                ("entry", "zcode.cjs"),
                ("source", "apps/zcode-cli/packages/cli/dist/zcode.cjs")
            ])
        );
        assert_eq!(contract.cli_version_probe.args, ["{cli-entry}", "version"]);
        assert_eq!(contract.credentials_file, ".zcode/v2/credentials.json");
    }

    #[test]
    fn launches_the_bridge_with_descriptors() {
        let plan = launch_plan(&install(REAL_ARTIFACT_ID)).unwrap();
        assert_eq!(plan.program, "zcode");
        assert_eq!(plan.args, ["-e", BRIDGE_SCRIPT]);
        assert_eq!(plan.cwd, "/opt/ZCode");
        assert!(plan.stdin_preamble.is_empty() && !plan.needs_handshake);
        let env: std::collections::HashMap<_, _> = plan.env.iter().cloned().collect();
        assert_eq!(env["ELECTRON_RUN_AS_NODE"], "1");
        assert_eq!(env["ZCODE_ACP_HOST_INDEX"], "/opt/ZCode/resources/app.asar/out/host/index.js");
        assert!(env["ZCODE_ACP_HOST_RPC_MODULE"].ends_with("chunk-KGXW6KHC.js"));
        let artifact: Value = serde_json::from_str(&env["ZCODE_ACP_HOST_ARTIFACT"]).unwrap();
        assert_eq!(artifact["id"], "zcode-host-3.11.2");
        assert_eq!(artifact["protocolId"], "zcode-task-v1");
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
        let simulated = launch_plan(&install(SIMULATED_ARTIFACT_ID)).unwrap();
        let env: std::collections::HashMap<_, _> = simulated.env.into_iter().collect();
        let artifact: Value = serde_json::from_str(&env["ZCODE_ACP_HOST_ARTIFACT"]).unwrap();
        assert_eq!(artifact["hostIndexSha256"], simulator::SIM_HOST_INDEX_SHA256);
    }

    #[test]
    fn refuses_unknown_artifacts_and_missing_files() {
        let error = launch_plan(&install("zcode-host-9.9.9")).unwrap_err();
        assert_eq!(
            error.message,
            "Artifact zcode-host-9.9.9 is not part of this mapper's contract"
        );
        let mut missing = install(REAL_ARTIFACT_ID);
        missing.files.pop();
        assert_eq!(
            launch_plan(&missing).unwrap_err().message,
            "The verified install has no `host-rpc-module` file"
        );
        let mut outside = install(REAL_ARTIFACT_ID);
        outside.executable = "/usr/bin/node".to_string();
        assert_eq!(
            launch_plan(&outside).unwrap_err().message,
            "The verified executable is not inside the install root"
        );
    }

    #[test]
    fn runs_zcode_login_and_logout() {
        let mut mac = install(REAL_ARTIFACT_ID);
        mac.install_root = "/Applications/ZCode.app".to_string();
        mac.executable =
            "/Applications/ZCode.app/Contents/Frameworks/ZCode Helper.app/Contents/MacOS/ZCode Helper"
                .to_string();
        let login = auth_plan(&mac, AuthCommand::Login).unwrap();
        assert_eq!(
            login.program,
            "Contents/Frameworks/ZCode Helper.app/Contents/MacOS/ZCode Helper"
        );
        assert_eq!(login.args, ["/opt/ZCode/resources/glm/zcode.cjs", "login", "--no-browser"]);
        assert_eq!(login.env, pairs(&[("ELECTRON_RUN_AS_NODE", "1")]));
        assert_eq!(login.cwd, "/Applications/ZCode.app");
        let logout = auth_plan(&install(REAL_ARTIFACT_ID), AuthCommand::Logout).unwrap();
        assert_eq!(logout.args, ["/opt/ZCode/resources/glm/zcode.cjs", "logout"]);
    }
}
